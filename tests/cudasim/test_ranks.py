"""cudasim's ranks (--ranks, docs/cudasim.md): N processes, one virtual device each, a collective per layer
whose kernel ends a transfer time after the last rank's kernel of it started. Rank 1 sleeps inside its
bursts (--stall-rank 1), so rank 0's collective kernels start early and wait inside themselves; every
check is against the truth's own rows: a collective's end is the last arrival plus the transfer on every
rank, the waits are exactly start to last arrival, the GPU runs each rank's work in order behind its
collectives, and the CUPTI activity records the recorder's collector gets carry the ends resolved late.
Every process a test starts is its own session's and is killed with it on any way out; the forked ranks'
job region is an anonymous shared mapping, gone with its processes, and a named one (--job) is unlinked
on the way out whatever the run left."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import jsonschema
import polars as pl
import pytest

from launchgap.analysis.gpu_activity import collector_states, executions
from launchgap.trace import read_trace
from tests.conftest import CUDASIM, REPO
from tests.recorder.conftest import RECORDER, cudasim_command, needs_bpf, record  # noqa: F401 (a fixture)

SCHEMA = json.loads((REPO / "docs" / "cudasim-truth.schema.json").read_text())

TRANSFER_NS = 50_000
TOKENS, LAYERS, KERNELS = 6, 8, 17
STALL_US, STALL_EVERY = 3000, 60
# rank 1 sleeps 3 ms after every 60th of its layer kernels
RANK_ARGS = [
    "--ranks", "2", "--tokens", str(TOKENS), "--layers", str(LAYERS), "--collective-us", str(TRANSFER_NS // 1000),
    "--stall-rank", "1", "--stall-us", str(STALL_US), "--stall-every", str(STALL_EVERY),
]  # fmt: skip
GENERIC = "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE"
ALLREDUCE_LL = "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE"


def stop_session(proc: subprocess.Popen) -> None:
    """Kills every process of PROC's session (its ranks too) and reaps PROC."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


@contextlib.contextmanager
def cudasim_session(*args: str):
    """cudasim in a session of its own, every process of which (its ranks too) is killed on the way out."""
    proc = subprocess.Popen(
        [str(CUDASIM), "decode", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield proc
    finally:
        stop_session(proc)


def run_ranks(tmp_path: Path, *args: str, ok: bool = True, timeout: float = 120) -> tuple[int, str, dict | None]:
    truth_path = tmp_path / "truth.json"
    with cudasim_session(*args, "--truth", str(truth_path)) as proc:
        _, stderr = proc.communicate(timeout=timeout)
    if ok:
        assert proc.returncode == 0, stderr
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else None
    return proc.returncode, stderr, truth


def table(truth: dict, name: str) -> list[dict]:
    columns = truth[{"launches": "launch_columns", "syncs": "sync_columns", "collectives": "collective_columns"}[name]]
    return [dict(zip(columns, row)) for row in truth[name]]


def by_collective(truth: dict) -> dict[tuple[int, int], dict[int, dict]]:
    """(communicator, number) -> rank -> its row."""
    out: dict[tuple[int, int], dict[int, dict]] = defaultdict(dict)
    for row in table(truth, "collectives"):
        assert row["rank"] not in out[(row["comm_id"], row["seq"])], row
        out[(row["comm_id"], row["seq"])][row["rank"]] = row
    return out


@pytest.fixture(scope="module")
def stalled_run(tmp_path_factory) -> dict:
    _, _, truth = run_ranks(tmp_path_factory.mktemp("ranks"), *RANK_ARGS)
    return truth


def test_rank_0s_collectives_end_only_after_rank_1s_start_plus_the_transfer(stalled_run):
    truth = stalled_run
    jsonschema.validate(truth, SCHEMA)
    collectives = by_collective(truth)
    assert len(collectives) == TOKENS * LAYERS
    for (comm, seq), ranks in collectives.items():
        assert set(ranks) == {0, 1}, (comm, seq)
        r0, r1 = ranks[0], ranks[1]
        last = max(r0["gpu_start_ns"], r1["gpu_start_ns"])
        # the brief's own statement, then the rule: a transfer after the last start, on both ranks
        assert r0["gpu_end_ns"] >= r1["gpu_start_ns"] + TRANSFER_NS
        for row in (r0, r1):
            assert row["last_arrival_ns"] == last
            assert row["gpu_end_ns"] == last + TRANSFER_NS
            assert row["transfer_ns"] == TRANSFER_NS
            # the wait inside the kernel, exactly: its start to the last arrival
            assert row["wait_ns"] == row["last_arrival_ns"] - row["gpu_start_ns"]
        # the last rank is the one that started last (a tie: the lower)
        assert r1["last_rank"] == r0["last_rank"] == (1 if r1["gpu_start_ns"] > r0["gpu_start_ns"] else 0)
        # both ranks ran the same kernel; NCCL's specialised LL kernel every fourth layer, else Generic
        assert r0["name"] == r1["name"] == (ALLREDUCE_LL if seq % LAYERS % 4 == 3 else GENERIC)
        assert comm == 1


def test_rank_0_waits_inside_its_collectives_while_rank_1_sleeps(stalled_run):
    rows = table(stalled_run, "collectives")
    waits = {rank: sum(r["wait_ns"] for r in rows if r["rank"] == rank) for rank in (0, 1)}
    stalls = TOKENS * LAYERS * KERNELS // STALL_EVERY
    # each of rank 1's sleeps holds its next collective back by about the sleep: rank 0 waits that out
    # inside its kernel (half of it at least, on a loaded machine that may delay rank 0 too)
    assert waits[0] >= stalls * STALL_US * 1000 // 2, (waits, stalls)
    assert waits[1] < waits[0]
    late = [r for r in rows if r["rank"] == 0 and r["wait_ns"] >= STALL_US * 1000 // 2]
    assert len(late) >= stalls // 2
    assert all(r["last_rank"] == 1 for r in late)


def test_the_launches_and_syncs_carry_the_deferred_times(stalled_run):
    truth = stalled_run
    launches = {r["seq"]: r for r in table(truth, "launches")}
    for row in table(truth, "collectives"):
        launch = launches[row["launch_seq"]]
        # NCCL launches through the driver, whatever API the program uses
        assert (launch["api"], launch["runtime_api"]) == ("cuLaunchKernelEx", None)
        assert (launch["pid"], launch["tid"]) == (row["pid"], row["tid"])
        assert (launch["gpu_start_ns"], launch["gpu_end_ns"]) == (row["gpu_start_ns"], row["gpu_end_ns"])
        assert launch["grid_x"] == (2 if row["name"] == ALLREDUCE_LL else 16)
    pids = {p["proc_index"]: p["pid"] for p in truth["processes"]}
    assert sorted(pids) == [0, 1]
    per_token = 2 + LAYERS * (KERNELS + 1)
    assert truth["config"]["launches_per_token"] == per_token
    assert truth["totals"]["launches"] == 2 * TOKENS * per_token
    syncs = table(truth, "syncs")
    for rank, pid in pids.items():
        # one engine a rank: its work runs in launch order, each piece after the one before has ended
        work = sorted(
            [(r["seq"], r["gpu_start_ns"], r["gpu_end_ns"]) for r in launches.values() if r["pid"] == pid]
            + [(s["seq"], s["copy_start_ns"], s["waited_for_ns"]) for s in syncs if s["pid"] == pid]
        )
        assert all(start > 0 and end >= start for _, start, end in work)
        assert all(b[1] >= a[2] for a, b in zip(work, work[1:])), rank
        # a copy (the end-of-token logits) returns once it is done, its collectives ended before it
        for s in syncs:
            if s["pid"] == pid:
                assert s["t_exit_ns"] >= s["waited_for_ns"]


def check_collective_rule(truth: dict, transfer_ns: int) -> None:
    for ranks in by_collective(truth).values():
        assert set(ranks) == set(range(truth["config"]["ranks"]))
        last = max(r["gpu_start_ns"] for r in ranks.values())
        for row in ranks.values():
            assert row["last_arrival_ns"] == last and row["gpu_end_ns"] == last + transfer_ns
            assert row["wait_ns"] == last - row["gpu_start_ns"]


@pytest.mark.parametrize(
    "args",
    [
        ["--sync", "stream"],
        ["--sync", "event"],
        ["--ptsz", "--sync", "event"],
        ["--sync", "device"],
        ["--api", "driver", "--launch", "graph"],
        ["--ptsz", "--launch", "mixed", "--sync", "mixed"],
    ],
    ids=lambda a: "-".join(x.strip("-") for x in a),
)
def test_every_sync_waits_for_its_ranks_collectives(tmp_path, args):
    """Each sync's wait ends when the last collective before it does (resolved once the other ranks
    arrived), on every API path and sync: a rank's syncs return no earlier than its GPU finished. With
    --ptsz an event is recorded on the legacy stream (the stand-in runtime passes the NULL stream on, as
    without ranks), which has no work: its sync waits for nothing, the ranks run ahead of their GPUs, and
    each still has every launch's times, its GPU finishing its queue before the process ends."""
    _, _, truth = run_ranks(tmp_path, "--ranks", "3", "--tokens", "5", "--layers", "4", *args)
    jsonschema.validate(truth, SCHEMA)
    check_collective_rule(truth, 30_000)
    launches = table(truth, "launches")
    assert all(r["gpu_start_ns"] > 0 and r["gpu_end_ns"] > r["gpu_start_ns"] for r in launches)
    for sync in table(truth, "syncs"):
        before = [r["gpu_end_ns"] for r in launches if r["pid"] == sync["pid"] and r["seq"] < sync["seq"]]
        if sync["api"] == "cuEventSynchronize" and "--ptsz" in args:
            assert sync["waited_for_ns"] == 0
        elif sync["copy_start_ns"] is None:
            # a stream, event or device sync waits for everything its one stream has queued
            assert sync["waited_for_ns"] == max(before), sync
        else:
            assert sync["copy_start_ns"] >= max(before, default=0)
        assert sync["t_exit_ns"] >= sync["waited_for_ns"]


def test_the_profiler_view_shows_each_ranks_nccl_kernels(tmp_path):
    """--kineto with ranks: one file a rank, its distributedInfo naming the rank and world, its collectives'
    kernels demangled as Kineto shows NCCL's, each under a user_annotation "nccl:all_reduce" on the
    launching thread, their spans the truth's (on the profiler's clock, within its jitter and drift)."""
    _, _, truth = run_ranks(
        tmp_path, "--ranks", "2", "--tokens", "2", "--layers", "4", "--kineto", str(tmp_path / "k.json"),
        "--kineto-jitter-ns", "0", "--kineto-drift-ppm", "0",
    )  # fmt: skip
    offset = truth["kineto"]["offset_ns"]
    for rank, pid in {p["proc_index"]: p["pid"] for p in truth["processes"]}.items():
        trace = json.loads((tmp_path / f"k-rank{rank}.json").read_text())
        assert trace["distributedInfo"] == {"backend": "nccl", "rank": rank, "world_size": 2}
        base = trace["baseTimeNanoseconds"]
        events = trace["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel_")]
        mine = sorted((r for r in table(truth, "collectives") if r["rank"] == rank), key=lambda r: r["launch_seq"])
        assert [k["name"] for k in kernels] == [
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            if r["name"] == ALLREDUCE_LL
            else "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
            for r in mine
        ]
        for kernel, row in zip(kernels, mine):
            assert kernel["pid"] == rank and kernel["args"]["device"] == rank
            # three decimals of a microsecond: the nanosecond, exactly
            assert round(kernel["ts"] * 1000) + base - offset == row["gpu_start_ns"]
            assert round((kernel["ts"] + kernel["dur"]) * 1000) + base - offset == row["gpu_end_ns"]
        annotations = [e for e in events if e["name"] == "nccl:all_reduce"]
        assert len(annotations) == len(mine)
        assert {(a["pid"], a["cat"]) for a in annotations} == {(pid, "user_annotation")}
        assert [a["args"]["External id"] for a in annotations] == [k["args"]["External id"] for k in kernels]


def test_a_rank_far_ahead_blocks_in_its_launches_as_on_a_full_push_buffer(tmp_path):
    """300 layers a token, rank 1 sleeping 1 ms a layer: rank 0 launches a whole token (5,402 launches)
    ahead of what the job can resolve, more than a rank's queue holds (4,096), so some of its launches
    block until rank 1 catches up; nothing is lost and the rule holds for every collective."""
    _, _, truth = run_ranks(
        tmp_path, "--ranks", "2", "--tokens", "2", "--layers", "300", "--stall-rank", "1", "--stall-us", "1000",
        "--stall-every", "17",
    )  # fmt: skip
    check_collective_rule(truth, 30_000)
    assert len(by_collective(truth)) == 2 * 300
    pids = {p["proc_index"]: p["pid"] for p in truth["processes"]}
    launches = table(truth, "launches")
    assert all(r["gpu_start_ns"] > 0 for r in launches)
    blocked = [r for r in launches if r["pid"] == pids[0] and r["t_exit_ns"] - r["t_enter_ns"] > 500_000]
    assert blocked, "rank 0 never had to wait for room"


@pytest.mark.parametrize("mode", ["own", "overlap"])
def test_collectives_on_an_nccl_stream_are_ordered_as_pytorch_orders_them(tmp_path, mode):
    """--collective-stream own/overlap: each collective on a stream of its own, made to wait for its layer's
    compute (ProcessGroupNCCL's NCCL stream after the current stream); with own the next layer waits for
    it, with overlap it runs beside the next layers (DDP), so rank 0's compute runs while its collective
    waits for rank 1; the end-of-token copy waits for everything."""
    _, _, truth = run_ranks(
        tmp_path, "--ranks", "2", "--tokens", "4", "--layers", "6", "--collective-stream", mode,
        "--stall-rank", "1", "--stall-us", "2000", "--stall-every", "40",
    )  # fmt: skip
    jsonschema.validate(truth, SCHEMA)
    assert truth["config"]["collective_stream"] == mode
    check_collective_rule(truth, 30_000)
    launches = table(truth, "launches")
    syncs = table(truth, "syncs")
    overlapped = 0
    for p in truth["processes"]:
        mine = sorted((r for r in launches if r["pid"] == p["pid"]), key=lambda r: r["seq"])
        compute = [r for r in mine if r["api"] != "cuLaunchKernelEx"]
        collectives = [r for r in mine if r["api"] == "cuLaunchKernelEx"]
        assert {r["stream"] for r in compute}.isdisjoint({r["stream"] for r in collectives})
        for c in collectives:
            before = [k["gpu_end_ns"] for k in compute if k["seq"] < c["seq"]]
            after = [k for k in compute if k["seq"] > c["seq"]]
            assert c["gpu_start_ns"] >= max(before)
            if mode == "own" and after:
                assert after[0]["gpu_start_ns"] >= c["gpu_end_ns"]
            overlapped += sum(1 for k in after if k["gpu_start_ns"] < c["gpu_end_ns"])
        for sync in (s for s in syncs if s["pid"] == p["pid"] and s["copy_start_ns"] is not None):
            assert sync["copy_start_ns"] >= max((r["gpu_end_ns"] for r in mine if r["seq"] < sync["seq"]), default=0)
    assert (overlapped > 0) == (mode == "overlap")


def test_communicators_number_their_collectives_apart(tmp_path):
    _, _, truth = run_ranks(tmp_path, "--ranks", "2", "--tokens", "2", "--layers", "4", "--comm-id", "0x10,0x20")
    assert truth["config"]["comm_ids"] == [0x10, 0x20]
    collectives = by_collective(truth)
    # layers take the communicators in turn: two each a token, each numbered from 0 on its own
    assert sorted(collectives) == [(c, s) for c in (0x10, 0x20) for s in range(4)]
    for ranks in collectives.values():
        assert ranks[0]["gpu_end_ns"] == ranks[1]["gpu_end_ns"]


def test_ranks_whose_collectives_differ_fail_at_once(tmp_path):
    """Rank 1 leaves out its fourth collective (layer 3's, the LL kernel): its next, token 1's first
    (Generic), takes number 3, where rank 0's is LL."""
    started = time.monotonic()
    code, stderr, _ = run_ranks(
        tmp_path, "--ranks", "2", "--tokens", "2", "--layers", "4", "--skip-collective", "1:3", ok=False, timeout=60
    )
    assert code == 1
    assert "the ranks' sequences of collectives disagree: collective 3 of communicator 0x1" in stderr, stderr
    assert "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" in stderr and "ncclDevKernel_Generic" in stderr
    assert time.monotonic() - started < 30


def test_a_collective_a_rank_never_launches_times_out_naming_it(tmp_path):
    """Rank 1 leaves out its last collective: rank 0's waits, nothing in the job moves, and after the timeout
    (0.3 s) rank 0 fails saying which collective waited for which rank."""
    started = time.monotonic()
    code, stderr, _ = run_ranks(
        tmp_path, "--ranks", "2", "--tokens", "2", "--layers", "4", "--skip-collective", "1:7",
        "--collective-timeout-ms", "300", ok=False, timeout=60,
    )  # fmt: skip
    assert code == 1
    assert "rank 0: collective 7 of communicator 0x1 (ncclDevKernel_AllReduce_Sum_bf16_RING_LL" in stderr, stderr
    assert "for rank(s) 1 to launch it: the ranks' sequences of collectives disagree, or a rank stopped" in stderr
    assert 0.3 <= time.monotonic() - started < 30


def test_each_rank_is_pinned_to_its_cpus(tmp_path):
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    truth_path = tmp_path / "truth.json"
    seen: dict[int, str] = {}
    with cudasim_session(
        "--ranks", "2", "--tokens", "100", "--rank-cpus", "1:0", "--quiet", "--truth", str(truth_path)
    ) as proc:
        deadline = time.monotonic() + 30
        while len(seen) < 2 or set(seen.values()) != {"0", "1"}:
            assert time.monotonic() < deadline, seen
            with contextlib.suppress(OSError):
                for child in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split():
                    for line in Path(f"/proc/{child}/status").read_text().splitlines():
                        if line.startswith("Cpus_allowed_list:"):
                            seen[int(child)] = line.split()[1]
            time.sleep(0.01)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
    truth = json.loads(truth_path.read_text())
    assert truth["config"]["rank_cpus"] == ["1", "0"]
    assert {p["proc_index"]: seen[p["pid"]] for p in truth["processes"]} == {0: "1", 1: "0"}


@contextlib.contextmanager
def job_name():
    """A fresh job name; its /dev/shm segment is removed on the way out, whatever the run left."""
    name = f"lgtest-{os.getpid()}-{time.monotonic_ns()}"
    try:
        yield name
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"/dev/shm/cudasim-{name}")


def test_ranks_started_one_by_one_share_a_named_job(tmp_path):
    """--rank I --job NAME: each rank a command of its own (as one launcher a node, or one recorder a rank,
    starts them), meeting in /dev/shm/cudasim-NAME, which is gone once they have all joined."""
    args = ["--ranks", "2", "--tokens", "3", "--layers", "4", "--stall-rank", "0", "--stall-us", "2000",
            "--stall-every", "20"]  # fmt: skip
    with job_name() as name, contextlib.ExitStack() as stack:
        procs = [
            stack.enter_context(cudasim_session(*args, "--rank", str(r), "--job", name, "--truth", str(tmp_path / f"{r}.json")))
            for r in (0, 1)
        ]  # fmt: skip
        for proc in procs:
            _, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr
        assert not Path(f"/dev/shm/cudasim-{name}").exists()
    truths = [json.loads((tmp_path / f"{r}.json").read_text()) for r in (0, 1)]
    for rank, truth in enumerate(truths):
        jsonschema.validate(truth, SCHEMA)
        assert (truth["config"]["rank"], truth["config"]["job"]) == (rank, name)
        assert [p["proc_index"] for p in truth["processes"]] == [rank]
    both = {**truths[0], "collectives": truths[0]["collectives"] + truths[1]["collectives"]}
    check_collective_rule(both, 30_000)
    assert len(by_collective(both)) == 3 * 4
    # rank 0 sleeps this time: rank 1 waits
    assert sum(r["wait_ns"] for r in table(both, "collectives") if r["rank"] == 1) > 0


def test_ranks_of_a_job_must_agree_on_its_shape(tmp_path):
    """A rank started with other options than the job's maker fails at once, saying so; the maker, left
    alone, gives up after the timeout; nothing stays in /dev/shm."""
    with job_name() as name:
        with cudasim_session(
            "--ranks", "2", "--rank", "0", "--job", name, "--layers", "4", "--collective-timeout-ms", "2000"
        ) as maker:
            deadline = time.monotonic() + 30
            while not Path(f"/dev/shm/cudasim-{name}").exists():
                assert time.monotonic() < deadline and maker.poll() is None
                time.sleep(0.01)
            code, stderr, _ = run_ranks(
                tmp_path, "--ranks", "2", "--rank", "1", "--job", name, "--layers", "8", ok=False, timeout=60
            )
            assert code == 2 and "is a job made with other options" in stderr, stderr
            _, maker_stderr = maker.communicate(timeout=60)
            assert maker.returncode == 1
            assert re.search(r"rank 0 waited 2\.\d{3} s for rank\(s\) 1 to join the job", maker_stderr), maker_stderr
        assert not Path(f"/dev/shm/cudasim-{name}").exists()


def test_rank_options_are_refused_where_they_cannot_apply(tmp_path):
    for args, said in [
        (["--ranks", "2", "--threads", "2"], "--ranks needs --threads 1"),
        (["--ranks", "2", "--procs", "3"], "--procs, if given, must be N too"),
        (["--ranks", "2", "--rank-cpus", "0"], "--rank-cpus expects one CPU list a rank"),
        (["--stall-rank", "1"], "need --ranks"),
        (["--collective-stream", "own"], "need --ranks"),
        (["--ranks", "2", "--collective-stream", "sideways"], "--collective-stream does not accept"),
        (["--ranks", "2", "--rank", "1"], "--rank I and --job NAME go together"),
        (["--ranks", "2", "--rank", "0", "--job", "a/b"], "--job expects a name of letters"),
        (["--ranks", "2", "--comm-id", "x"], "--comm-id expects integers"),
    ]:
        code, stderr, _ = run_ranks(tmp_path, "--tokens", "1", *args, ok=False, timeout=30)
        assert code == 2 and said in stderr, (args, stderr)


@needs_bpf
@pytest.mark.skipif(not RECORDER.exists(), reason="the recorder is not built")
def test_cupti_records_carry_the_deferred_ends(record):  # noqa: F811 (the fixture imported above)
    """`record --gpu-activity`: each rank's collector gets its collective kernels' records, on the rank's
    device, with the ends the job resolved after the other rank arrived (within the clock error each
    collector states), rank 0's never before rank 1's start plus the transfer."""
    run = record(cudasim_command(*RANK_ARGS), "--gpu-activity")
    truth, trace = run.truth, run.trace
    errors = {s.pid: s.detail["clock"]["error_ns"] for s in collector_states(trace) if s.state == "started"}
    pids = {p["proc_index"]: p["pid"] for p in truth["processes"]}
    execs = executions(trace)
    ours = execs.filter(pl.col("kernel_name").str.contains("ncclDevKernel_"))
    rows = table(truth, "collectives")
    assert ours.height == len(rows)
    for rank, pid in pids.items():
        assert execs.filter(pl.col("pid") == pid)["device_id"].unique().to_list() == [rank]
        mine = ours.filter(pl.col("pid") == pid).sort("gpu_start_ns")
        theirs = sorted((r for r in rows if r["rank"] == rank), key=lambda r: r["launch_seq"])
        assert mine["kernel_name"].to_list() == [r["name"] for r in theirs]
        for column in ("gpu_start_ns", "gpu_end_ns"):
            off = max(abs(a - r[column]) for a, r in zip(mine[column].to_list(), theirs))
            assert off <= errors[pid], (rank, column, off, errors[pid])
    # the deferred end itself, as CUPTI gave it: rank 0's kernel of a collective ends when rank 1's start
    # plus the transfer says, however early rank 0's started
    starts_1 = {(r["comm_id"], r["seq"]): r["gpu_start_ns"] for r in rows if r["rank"] == 1}
    rank_0 = sorted((r for r in rows if r["rank"] == 0), key=lambda r: r["launch_seq"])
    ends_0 = ours.filter(pl.col("pid") == pids[0]).sort("gpu_start_ns")["gpu_end_ns"].to_list()
    for row, end in zip(rank_0, ends_0, strict=True):
        assert end >= starts_1[(row["comm_id"], row["seq"])] + TRANSFER_NS - errors[pids[0]]
    assert sum(r["wait_ns"] for r in rank_0) > 0


@needs_bpf
@pytest.mark.skipif(not RECORDER.exists(), reason="the recorder is not built")
def test_two_recorders_each_record_one_rank_of_a_job(tmp_path):
    """A job split between recorders (one a node, in a multi-node job): each records one rank started as
    `--rank I --job NAME`; each trace holds its rank's launches and GPU activity, on its rank's device,
    and the ranks' collectives end together."""
    with job_name() as name, contextlib.ExitStack() as stack:
        recorders = []
        for rank in (0, 1):
            command = cudasim_command(
                "--ranks", "2", "--rank", str(rank), "--job", name, "--tokens", "3", "--layers", "4",
                "--truth", str(tmp_path / f"t{rank}.json"),
            )  # fmt: skip
            proc = subprocess.Popen(
                [str(RECORDER), "-o", str(tmp_path / f"r{rank}.lg"), "--gpu-activity", "--", *command],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
            )  # fmt: skip
            stack.callback(stop_session, proc)
            recorders.append(proc)
        for proc in recorders:
            _, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr
    truths = [json.loads((tmp_path / f"t{rank}.json").read_text()) for rank in (0, 1)]
    check_collective_rule({**truths[0], "collectives": truths[0]["collectives"] + truths[1]["collectives"]}, 30_000)
    for rank, truth in enumerate(truths):
        trace = read_trace(tmp_path / f"r{rank}.lg")
        execs = executions(trace)
        assert execs.height == truth["totals"]["launches"]
        assert execs["device_id"].unique().to_list() == [rank]
        nccl = execs.filter(pl.col("kernel_name").str.contains("ncclDevKernel_")).sort("gpu_start_ns")
        rows = table(truth, "collectives")
        pid = truth["processes"][0]["pid"]
        error = {c.pid: c.detail["clock"]["error_ns"] for c in collector_states(trace) if c.state == "started"}[pid]
        assert nccl.height == len(rows)
        assert max(abs(a - r["gpu_end_ns"]) for a, r in zip(nccl["gpu_end_ns"].to_list(), rows)) <= error
