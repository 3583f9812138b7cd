"""`record --gpu-activity`: CUPTI's records of what the GPU ran, from the collector the
recorder injects, checked against cudasim's ground truth (every launch's gpu_start_ns and
gpu_end_ns on CLOCK_MONOTONIC, its stream as passed, its thread), on every API path, from
several threads and forked children, through cudasim's stand-in libcupti (CUPTI 12.9's
layouts: tests/cudasim/test_cupti_standin.py) and its older-CUPTI build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from launchgap.analysis.gpu_activity import collector_states, executions, join_launches
from launchgap.trace import Event, read_trace
from tests.conftest import (
    CUDASIM,
    CUDASIM_BUILD,
    CUDASIM_STATIC,
    LIBCUDA,
    LIBCUDA_THUNK,
    LIBCUDART,
    REAL_CUDA,
    needs_real,
)
from tests.recorder.conftest import RECORDER, cudasim_command, needs_bpf

pytestmark = needs_bpf

OLD_CUPTI = CUDASIM_BUILD / "lib-cupti-old" / "libcupti.so.12"
REAL_CUPTI = REAL_CUDA / "cupti-12" / "libcupti.so.12"

PATHS = {
    "runtime-shared": ([], None, {}),
    "runtime-static": ([], CUDASIM_STATIC, {}),
    "driver-only": (["--api", "driver"], None, {}),
    "ex": (["--launch", "ex"], None, {}),
    "cooperative": (["--launch", "coop"], None, {}),
    "graph": (["--api", "driver", "--launch", "graph"], None, {}),
    "ptsz-mixed": (["--ptsz", "--launch", "mixed", "--sync", "mixed"], None, {}),
    "thunk-driver": (["--launch", "mixed"], None, {"LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent)}),
}


def truth_launches(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")


def truth_syncs(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(truth["syncs"], schema=truth["sync_columns"], orient="row")


def stated_error_ns(trace) -> dict[int, int]:
    """Each process's clock alignment error bound, as its collector stated it."""
    return {s.pid: s.detail["clock"]["error_ns"] for s in collector_states(trace) if s.state == "started"}


def check_against_truth(trace, truth: dict) -> None:
    """Kernel and graph rows equal the truth's launches: count, order, start and end within the stated
    error, stream; each joined to its launch row; copies and syncs as the truth logged them."""
    expected = truth_launches(truth)
    errors = stated_error_ns(trace)
    launching = set(expected["pid"].unique().to_list())
    assert launching <= set(errors), (launching, errors)

    execs = executions(trace)
    assert execs.height == truth["totals"]["launches"]
    for pid in launching:
        ours = execs.filter(pl.col("pid") == pid).sort("gpu_start_ns")
        theirs = expected.filter(pl.col("pid") == pid).sort("gpu_start_ns")
        assert ours.height == theirs.height
        # one engine per process runs everything back to back: start order is the execution order
        assert (ours["what"] == pl.Series(["graph" if n else "kernel" for n in theirs["graph_nodes"]])).all()
        for ns in ("gpu_start_ns", "gpu_end_ns"):
            off = (ours[ns].cast(pl.Int64) - theirs[ns].cast(pl.Int64)).abs().max()
            assert off <= errors[pid], (pid, ns, off, errors[pid])
        # streams: CUPTI's numbering is one-to-one with the truth's (thread, handle as passed)
        pairs = pl.DataFrame(
            {"stream_id": ours["stream_id"], "tid": theirs["tid"], "handle": theirs["stream"]}
        ).unique()
        assert pairs.height == pairs.select("stream_id").n_unique() == pairs.select("tid", "handle").n_unique()

    joined = join_launches(trace)
    assert joined.height == truth["totals"]["launches"]
    assert joined["api_matches"].all()
    assert joined["gpu_start_ns"].null_count() == 0
    # per thread, the n-th launch row got the n-th launch's GPU execution in the truth
    for (pid, tid), group in joined.sort("ts_ns").group_by(["pid", "tid"], maintain_order=True):
        truth_rows = expected.filter((pl.col("pid") == pid) & (pl.col("tid") == tid)).sort("seq")
        assert group.height == truth_rows.height
        assert (group["api"] == truth_rows["api"]).all()
        off = (group["gpu_start_ns"].cast(pl.Int64) - truth_rows["gpu_start_ns"].cast(pl.Int64)).abs().max()
        assert off <= errors[pid]

    syncs = truth_syncs(truth)
    copies = syncs.filter(pl.col("api").str.starts_with("cuMemcpy"))
    memcpy = trace.of(Event.GPU_MEMCPY)
    assert memcpy.height == copies.height
    assert sorted(memcpy["bytes"].to_list()) == sorted(copies["bytes"].to_list())
    waits = syncs.filter(~pl.col("api").str.starts_with("cuMemcpy"))
    assert trace.count(Event.GPU_SYNC) == waits.height
    # (host-side losses, such as interrupts no probe sees in this sandbox, are not GPU activity's)
    assert trace.of(Event.LOST).filter(pl.col("lost_event").str.starts_with("gpu_")).height == 0


def gpu_lost(trace) -> pl.DataFrame:
    return trace.of(Event.LOST).filter(pl.col("lost_event").str.starts_with("gpu_"))


@pytest.mark.parametrize("path", list(PATHS))
def test_gpu_activity_equals_the_truth_on_every_api_path(record, path):
    args, binary, env = PATHS[path]
    command = cudasim_command(
        "--tokens", "3", "--threads", "2", "--procs", "2", *args, **({"binary": binary} if binary else {})
    )
    run = record(command, "--gpu-activity", env={**os.environ, **env})
    check_against_truth(run.trace, run.truth)
    meta = run.trace.meta["gpu_activity"]
    assert meta["recorded"] is True and meta["cupti"]["version"] == 28
    # the parent, which launched nothing, and both children: each started and stopped
    states = [(s.pid, s.state) for s in collector_states(run.trace)]
    children = {p["pid"] for p in run.truth["processes"]}
    assert sorted(states) == sorted(
        [(p, s) for p in children | {run.trace.meta["command_pid"]} for s in ("started", "stopped")]
    )
    assert run.trace.end["gpu_activity"]["gpu_executions"] == run.truth["totals"]["launches"]
    # the channel is the collectors', never part of the trace
    assert not (Path(run.trace.path) / ".gpu-channel").exists()


def test_an_older_cupti_is_aligned_by_a_measured_offset(record):
    """No timestamp callback: CUPTI's clock (CLOCK_REALTIME) is brought to the trace's by an
    offset measured between monotonic reads, within the half-width it states."""
    run = record(
        cudasim_command("--tokens", "3", "--threads", "2", "--launch", "mixed"),
        "--gpu-activity",
        "--cupti",
        str(OLD_CUPTI),
    )
    started = [s for s in collector_states(run.trace) if s.state == "started"]
    assert [s.detail["clock"]["method"] for s in started] == ["measured_offset"]
    # the realtime clock is decades ahead of the monotonic one: the offset is really applied
    assert started[0].detail["clock"]["offset_ns"] > 10**18
    assert "api_by_kind" in started[0].detail["kinds"]
    check_against_truth(run.trace, run.truth)


def test_every_kernel_has_its_launch_at_the_api_call_that_made_it(record):
    run = record(cudasim_command("--tokens", "2", "--threads", "2"), "--gpu-activity")
    api = run.trace.of(Event.GPU_API)
    launches = run.trace.of(Event.LAUNCH)
    # one driver launch call and one runtime launch call per launch row
    assert api.filter(pl.col("api") == "cuLaunchKernel").height == launches.height
    assert api.filter(pl.col("api") == "cudaLaunchKernel").height == launches.height
    # and their threads are the launch rows' threads
    assert sorted(api.filter(pl.col("api") == "cuLaunchKernel")["tid"].unique().to_list()) == sorted(
        launches["tid"].unique().to_list()
    )


def run_recorder(tmp_path: Path, *args: str, command: list[str], env: dict | None = None):
    out = tmp_path / "run.lg"
    return subprocess.run(
        [str(RECORDER), "-o", str(out), *args, "--", *command], capture_output=True, text=True, timeout=300, env=env
    ), out


def test_no_cupti_found_is_one_line_before_the_command_starts(tmp_path):
    """cudasim copied somewhere with its driver and runtime but no CUPTI anywhere."""
    lib, bin_ = tmp_path / "lib", tmp_path / "bin"
    lib.mkdir()
    bin_.mkdir()
    for path in (LIBCUDA, LIBCUDART):
        shutil.copy2(path, lib / path.name)
    shutil.copy2(CUDASIM, bin_ / "cudasim")
    truth = tmp_path / "truth.json"
    proc, out = run_recorder(
        tmp_path, "--gpu-activity", command=[str(bin_ / "cudasim"), "decode", "--tokens", "2", "--truth", str(truth)]
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("launchgap-record: --gpu-activity: no CUPTI library found"), lines
    assert not truth.exists() and not out.exists()


# Where CUPTI is found when it is not beside the CUDA libraries (discover::discover_cupti): each layout
# as it is on a node, made in the test with the stand-in as the library: (where the cudasim copy's lib
# and bin folders go, where CUPTI goes, the environment the workload runs in, how the trace says it was found)
CUPTI_PLACES = {
    "pip": ("site/nvidia/cuda_runtime", "site/nvidia/cuda_cupti/lib", {}, "pip nvidia-cuda-cupti package"),
    "toolkit": ("job", "toolkit/extras/CUPTI/lib64", {"CUDA_HOME": "toolkit"}, "CUDA toolkit"),
    "ld-library-path": ("job", "ld", {"LD_LIBRARY_PATH": "ld"}, "LD_LIBRARY_PATH"),
}


@pytest.mark.parametrize("place", list(CUPTI_PLACES))
def test_cupti_is_found_where_a_node_keeps_it(tmp_path, place):
    """cudasim copied with its driver and runtime (no CUPTI beside them), CUPTI where PLACE keeps it: the
    recording finds it there, says so in its metadata, and records every kernel."""
    job, cupti_dir, env, found_via = CUPTI_PLACES[place]
    lib, bin_, cupti = tmp_path / job / "lib", tmp_path / job / "bin", tmp_path / cupti_dir
    for folder in (lib, bin_, cupti):
        folder.mkdir(parents=True)
    for path in (LIBCUDA, LIBCUDART):
        shutil.copy2(path, lib / path.name)
    shutil.copy2(CUDASIM, bin_ / "cudasim")
    shutil.copy2(CUDASIM_BUILD / "lib" / "libcupti.so.12", cupti / "libcupti.so.12")
    truth = tmp_path / "truth.json"
    proc, out = run_recorder(
        tmp_path,
        "-q",
        "--gpu-activity",
        command=[str(bin_ / "cudasim"), "decode", "--quiet", "--tokens", "2", "--truth", str(truth)],
        env={**os.environ, **{k: str(tmp_path / v) for k, v in env.items()}},
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    assert trace.meta["gpu_activity"]["cupti"]["found_via"] == found_via
    assert trace.meta["gpu_activity"]["cupti"]["path"] == str(cupti / "libcupti.so.12")
    assert executions(trace).height == json.loads(truth.read_text())["totals"]["launches"]


@pytest.mark.parametrize("what", ["missing", "not-cupti"])
def test_a_cupti_that_is_not_one_is_refused_before_the_command_starts(tmp_path, what):
    cupti = tmp_path / "nothing.so" if what == "missing" else LIBCUDA
    truth = tmp_path / "truth.json"
    proc, out = run_recorder(
        tmp_path,
        "--gpu-activity",
        "--cupti",
        str(cupti),
        command=cudasim_command("--tokens", "2", "--truth", str(truth)),
    )
    assert proc.returncode == 1
    why = "no such file" if what == "missing" else "not a CUPTI library (it does not define cuptiActivityEnable)"
    assert proc.stderr.strip() == f"launchgap-record: --cupti {cupti}: {why}"
    assert not truth.exists() and not out.exists()


@needs_real(REAL_CUPTI)
def test_nvidias_cupti_beside_a_driver_it_cannot_use_is_refused_before_the_command_starts(tmp_path):
    """NVIDIA's own libcupti.so.12 loads here but cannot enable kernel records beside cudasim's
    driver (CUPTI_ERROR_NOT_INITIALIZED): found by the check, not by the workload."""
    truth = tmp_path / "truth.json"
    proc, out = run_recorder(
        tmp_path,
        "--gpu-activity",
        "--cupti",
        str(REAL_CUPTI),
        command=cudasim_command("--tokens", "2", "--truth", str(truth)),
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == (
        f"launchgap-record: --gpu-activity: the CUPTI library {REAL_CUPTI.resolve()} cannot be used: it "
        f"cannot record kernels beside the CUDA driver {LIBCUDA} (cuptiActivityEnable: "
        "CUPTI_ERROR_NOT_INITIALIZED)"
    )
    assert not truth.exists() and not out.exists()


def test_a_collector_that_fails_in_the_workload_loses_its_kernels_as_lost_rows(record):
    """CUPTI that fails only inside the workload (the check passed): a `failed` row with the
    reason, every launch's GPU work a lost row, the rest of the trace whole."""
    command = [
        "bash",
        "-c",
        'CUDASIM_CUPTI_FAIL=1 exec "$@"',
        "bash",
        *cudasim_command("--tokens", "2", "--threads", "2"),
    ]
    run = record(command, "--gpu-activity", truth=False)
    pid = run.trace.meta["command_pid"]
    assert [(s.pid, s.state, s.detail) for s in collector_states(run.trace)] == [
        (pid, "failed", {"reason": "cuptiActivityEnable(concurrent_kernel) failed: CUPTI_ERROR_NOT_INITIALIZED"})
    ]
    launches = run.trace.count(Event.LAUNCH)
    assert launches == 2 * 2 * (2 + 28 * 17)
    lost = gpu_lost(run.trace)
    assert lost.select("lost_event", "lost_count").rows() == [("gpu_kernel", launches)]
    assert json.loads(lost["detail"][0]) == {
        "cause": "collector_failed",
        "pid": pid,
        "reason": "cuptiActivityEnable(concurrent_kernel) failed: CUPTI_ERROR_NOT_INITIALIZED",
    }
    assert f"warning: GPU activity was not recorded in pid {pid}: cuptiActivityEnable" in run.proc.stderr
    assert run.trace.end["lost_events"] == int(run.trace.of(Event.LOST)["lost_count"].sum())
    # the report says it, by the process and CUPTI's own reason
    from launchgap.analysis.report import build_report

    gpu = build_report(run.trace).gpu_activity
    assert (gpu.recorded, gpu.collectors_started) == (True, 0)
    assert [(f.pid, f.reason) for f in gpu.collectors_failed] == [
        (pid, "cuptiActivityEnable(concurrent_kernel) failed: CUPTI_ERROR_NOT_INITIALIZED")
    ]


def test_records_cupti_dropped_are_one_lost_row_of_exactly_their_count(record):
    """CUPTI counts the records it had no buffer for (cuptiActivityGetNumDroppedRecords); the stand-in drops
    every 7th kernel record so: the collector's lost row holds exactly that many, each a launch whose GPU
    work never came, and the recorder counts none of them twice."""
    command = [
        "bash",
        "-c",
        'CUDASIM_CUPTI_DROP_KERNELS=7 exec "$@"',
        "bash",
        *cudasim_command("--tokens", "2", "--threads", "2", "--launch", "kernel"),
    ]
    run = record(command, "--gpu-activity", truth=False)
    launches = run.trace.count(Event.LAUNCH)
    assert launches == 2 * 2 * (2 + 28 * 17)
    dropped = launches // 7
    lost = gpu_lost(run.trace)
    # a row each time the collector asked CUPTI (at each full buffer, every 500 ms at least), none of GPU
    # work missing besides
    assert set(lost["lost_event"]) == {"gpu_activity"} and int(lost["lost_count"].sum()) == dropped
    assert {json.dumps(json.loads(d), sort_keys=True) for d in lost["detail"]} == {
        json.dumps({"cause": "cupti_dropped", "pid": run.trace.meta["command_pid"]}, sort_keys=True)
    }
    joined = join_launches(run.trace)
    assert joined.filter(pl.col("gpu_start_ns").is_null()).height == dropped
    assert run.trace.end["lost_events"] == int(run.trace.of(Event.LOST)["lost_count"].sum())


def test_a_killed_workload_loses_only_its_unflushed_gpu_activity(record, tmp_path):
    """The workload (and its collector) killed by SIGKILL mid-run: the GPU work CUPTI never handed
    back is one lost row of exactly the launches without it; everything else is in the trace."""
    script = tmp_path / "kill.sh"
    script.write_text('"$@" & child=$!\nsleep 1.5\nkill -KILL $child\nwait $child\nexit 0\n')
    run = record(["bash", str(script), *cudasim_command("--tokens", "100000")], "--gpu-activity", truth=False)
    trace = run.trace
    states = collector_states(trace)
    assert [s.state for s in states] == ["started"]
    pid = states[0].pid
    launches = trace.of(Event.LAUNCH).filter(pl.col("pid") == pid).height
    arrived = executions(trace).filter(pl.col("pid") == pid).height
    assert launches > arrived > 0  # the collector flushed every 500 ms before it died
    lost = gpu_lost(trace)
    assert lost.select("lost_event", "lost_count").rows() == [("gpu_kernel", launches - arrived)]
    assert json.loads(lost["detail"][0]) == {"cause": "not_flushed", "pid": pid}
    # the host side is whole: a clean end, and the workload's switches
    assert trace.end is not None and trace.end["stop_reason"] == "the command exited"
    assert trace.of(Event.SWITCH).filter(pl.col("pid") == pid).height > 0


def test_attaching_with_p_records_no_gpu_activity_and_says_why(tmp_path):
    workload = subprocess.Popen(cudasim_command("--tokens", "400"), stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        refused, _ = run_recorder(tmp_path, "--gpu-activity", "-p", str(workload.pid), "--duration", "1", command=[])
        assert refused.returncode != 0
        out = tmp_path / "p.lg"
        proc = subprocess.run(
            [str(RECORDER), "-o", str(out), "-p", str(workload.pid), "--duration", "0.5"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    finally:
        workload.kill()
        workload.wait()
    trace = read_trace(out)
    assert trace.meta["gpu_activity"] == {
        "recorded": False,
        "why": "attached with -p: CUPTI can only be injected into processes the recorder starts",
    }
    assert trace.count(Event.GPU_KERNEL) == 0


def test_gpu_activity_with_p_is_refused_in_one_line(tmp_path):
    proc = subprocess.run(
        [str(RECORDER), "-o", str(tmp_path / "x.lg"), "--gpu-activity", "-p", str(os.getpid())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "launchgap-record: --gpu-activity needs a command to start (`-- COMMAND`): CUDA loads the collector "
        "(CUDA_INJECTION64_PATH) only into processes started with it, so a process attached with -p, or --system "
        "alone, cannot get one"
    )


def test_an_injection_already_set_is_refused_rather_than_replaced(tmp_path):
    env = {**os.environ, "CUDA_INJECTION64_PATH": "/opt/nsight/libToolsInjection64.so"}
    truth = tmp_path / "truth.json"
    proc, _ = run_recorder(
        tmp_path, "--gpu-activity", env=env, command=cudasim_command("--tokens", "2", "--truth", str(truth))
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "launchgap-record: --gpu-activity: CUDA_INJECTION64_PATH is already set "
        "(/opt/nsight/libToolsInjection64.so): another tool injects into CUDA (Nsight Systems?); unset it to "
        "record GPU activity"
    )
    assert not truth.exists()
