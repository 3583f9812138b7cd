"""Collective kernels (analysis/collectives.py, docs/gpu-time.md "Collectives"): recognised by the names NCCL's
builds give them (from NCCL's own sources and the real traces' raw JSON) or a pattern of the user's; counted and
named per rank in the report, on the real PyTorch profiler traces (their raw JSON read here with the standard
library is the truth); and, across the ranks of one recording of cudasim --ranks, each rank's collective kernel
split into its wait for the last rank and its transfer, held to cudasim's truth (its `collectives` table) within
the clock error each rank's collector states."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import Decimal

import polars as pl
import pytest
from click.testing import CliRunner
from rich.console import Console

from launchgap.analysis import collectives as coll
from launchgap.analysis.gpu_activity import collector_states
from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import open_trace
from launchgap.trace.kineto_join import join_profiler_traces
from launchgap.views.report_json import document
from launchgap.views.terminal import render
from tests.conftest import CUDASIM
from tests.kineto.conftest import REAL_KINETO, real_trace
from tests.recorder.conftest import RECORDER, cudasim_command, needs_bpf, record  # noqa: F401 (a fixture)

# NCCL's kernel names, each as CUPTI gives it (mangled) or as Kineto and Nsight show it (demangled), and its
# function's name: NCCL 2.19+ (src/device/generate.py: `ncclDevKernel_Generic`, `_Generic_4`, specialised
# ones), 2.8 to 2.18 (`ncclKernel_<coll>_<algo>_<proto>_<op>_<type>`, shared/real-traces/kineto/cuda_graphs),
# and before 2.8 (`nccl<Coll><Algo><Proto>Kernel_<op>_<type>`)
NCCL_NAMES = {
    "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE": "ncclDevKernel_Generic",
    "_Z23ncclDevKernel_Generic_424ncclDevKernelArgsStorageILm4096EE": "ncclDevKernel_Generic_4",
    "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE": (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
    ),
    "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)": "ncclDevKernel_Generic",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)": (
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    ),
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)": (
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"
    ),
    "void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)": "ncclKernel_AllGather_RING_LL_Sum_int8_t",
    "ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)": "ncclAllReduceRingLLKernel_sum_f32",
}
OTHER_NAMES = [
    "_Z6kernelv",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)",
    "ampere_sgemm_128x64_nn",
    "Memcpy HtoD (Pageable -> Device)",
    "_Z21rcclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE",
    "my_all_reduce_kernel(float*, int)",
]


def _recognised(names: list[str], pattern: str | None = None) -> list[bool]:
    frame = pl.DataFrame({"kernel_name": names})
    return frame.select(coll.is_collective(pl.col("kernel_name"), pattern))["kernel_name"].to_list()


def test_nccls_kernel_names_are_recognised_and_named_by_their_function():
    names = list(NCCL_NAMES)
    assert _recognised(names) == [True] * len(names)
    assert _recognised(OTHER_NAMES) == [False] * len(OTHER_NAMES)
    functions = pl.DataFrame({"n": names}).select(coll.function_name(pl.col("n")))["n"].to_list()
    assert functions == list(NCCL_NAMES.values())
    # a template's name: its parentheses cannot be paired by a regular expression, so it is kept whole
    others = pl.DataFrame({"n": OTHER_NAMES[:2]}).select(coll.function_name(pl.col("n")))["n"].to_list()
    assert others == ["kernel", OTHER_NAMES[1].removeprefix("void ")]


def test_a_pattern_adds_other_libraries_kernels_beside_nccls():
    pattern = r"^_Z\d+rccl|all_reduce"
    assert coll.pattern_error(pattern) is None
    assert _recognised(OTHER_NAMES, pattern) == [False, False, False, False, True, True]
    assert _recognised(list(NCCL_NAMES), pattern) == [True] * len(NCCL_NAMES)


def test_a_bad_pattern_is_refused_in_one_line_before_the_trace_is_read(tmp_path):
    """The engine that matches the names (polars' regex) says why; the trace, absent here, is never read."""
    assert coll.pattern_error("nccl(") == "unclosed group"
    result = CliRunner().invoke(main, ["report", "--collective-pattern", "nccl(", str(tmp_path / "none.lg")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == ["launchgap: --collective-pattern 'nccl(' is not a regular expression: unclosed group"]
    # look-around is Python's, not the engine's: refused too, rather than failing later
    assert "not supported" in (coll.pattern_error("a(?=b)") or "")


# --- matching across ranks, on frames worked out by hand --------------------------------------------------


def _kernels(rows: list[tuple[int, int, int, str, int, int]]) -> pl.DataFrame:
    """(pid, device, stream, name, start, end) rows as collective_kernels gives them."""
    frame = pl.DataFrame(
        rows,
        schema={
            "pid": pl.UInt32,
            "device_id": pl.UInt32,
            "stream_id": pl.UInt32,
            "kernel_name": pl.String,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
        },
        orient="row",
    )
    return frame.with_columns(coll.function_name(pl.col("kernel_name")).alias("name"))


def test_each_ranks_kth_collective_waits_from_its_start_to_the_last_ranks_start():
    # two collectives, three ranks; the second collective's rank 7 starts last. Rank 5's first kernel starts
    # at 100 and rank 6's at 160, the last: rank 5 waits 60 and transfers 40 (ends at 200), rank 6 waits 0.
    kernels = _kernels(
        [
            (5, 0, 3, "ncclDevKernel_Generic()", 100, 200),
            (6, 1, 3, "ncclDevKernel_Generic()", 160, 200),
            (7, 2, 3, "ncclDevKernel_Generic()", 120, 200),
            (5, 0, 3, "ncclDevKernel_AllReduce()", 300, 420),
            (6, 1, 3, "ncclDevKernel_AllReduce()", 310, 420),
            (7, 2, 3, "ncclDevKernel_AllReduce()", 400, 420),
        ]
    )
    assert coll.unmatchable(kernels) is None
    waits = coll.split_waits(kernels).sort("k", "pid")
    assert waits["wait_ns"].to_list() == [60, 0, 40, 100, 90, 0]
    assert waits["transfer_ns"].to_list() == [40, 40, 40, 20, 20, 20]
    assert waits["is_last"].to_list() == [False, True, False, False, False, True]
    ranks = coll.per_rank(kernels, waits)
    assert ranks.select(
        "pid", "kernels", "gpu_ns", "wait_ns", "transfer_ns", "last_arrivals", "longest_wait_ns"
    ).rows() == [(5, 2, 220, 160, 60, 0, 100), (6, 2, 150, 90, 60, 1, 90), (7, 2, 100, 40, 60, 1, 40)]


@pytest.mark.parametrize(
    "rows, why",
    [
        ([(5, 0, 3, "ncclKernel_A()", 1, 2)], coll.ONE_RANK),
        ([(5, 0, 3, "ncclKernel_A()", 1, 2), (5, 0, 4, "ncclKernel_A()", 3, 4), (6, 0, 3, "ncclKernel_A()", 1, 2)],
         coll.SEVERAL_STREAMS),
        ([(5, 0, 3, "ncclKernel_A()", 1, 2), (5, 0, 3, "ncclKernel_A()", 3, 4), (6, 0, 3, "ncclKernel_A()", 1, 2)],
         coll.COUNTS_DIFFER),
        ([(5, 0, 3, "ncclKernel_A()", 1, 2), (6, 0, 3, "ncclKernel_B()", 1, 2)], coll.KERNELS_DIFFER),
    ],
)  # fmt: skip
def test_collectives_that_order_cannot_match_are_not_matched(rows, why):
    assert coll.unmatchable(_kernels(rows)) == why


# --- the real PyTorch profiler traces ---------------------------------------------------------------------


def _raw_nccl_kernels(path) -> tuple[list[dict], dict[str, int], int]:
    """The file's kernel events whose name says NCCL (any case, anywhere: wider than the analysis' rule), each
    correlation id's calling process, and the process with the most calls (the file's: a kernel whose call lies
    before the profiler's window is its), read with the standard library."""
    with gzip.open(path, "rt") as f:
        document = json.load(f)
    events = document["traceEvents"] if isinstance(document, dict) else document
    owners = {
        str(e["args"]["correlation"]): e["pid"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    nccl = [e for e in events if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()]
    calls = Counter(owners.values())
    return nccl, owners, calls.most_common(1)[0][0] if calls else 0


REAL = ["cuda_graphs.json.gz", "ns_resolution.json.gz", "simple_add.json.gz"]


@pytest.mark.parametrize("name", REAL)
def test_real_profiler_traces_nccl_kernels_are_counted_and_named(name):
    """cuda_graphs holds 80 NCCL send/recv kernels of NCCL 2.8-2.18's form (rank 0 of 16); ns_resolution's
    `nccl:all_reduce` annotations launched no kernel (a world of one), and simple_add has none."""
    path = real_trace(name)
    nccl, owners, main_pid = _raw_nccl_kernels(path)
    report = build_report(open_trace(path))
    if not nccl:
        assert name != "cuda_graphs.json.gz"
        assert report.collectives is None
        assert "collectives" not in document(report)
        return
    c = report.collectives
    assert c is not None and c.not_matched == coll.ONE_RANK and c.matched == 0
    expected: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in nccl:
        pid = owners.get(str(e["args"]["correlation"]), main_pid)
        function = re.match(r"(?:void )?([^(]*)", e["name"]).group(1)
        expected[(pid, function)][0] += 1
        # microseconds written as decimals: nanoseconds exactly
        expected[(pid, function)][1] += int(Decimal(str(e["dur"])) * 1000)
    got = {(r.pid, n.name): [n.kernels, n.gpu_ns] for r in c.ranks for n in r.names}
    assert got == dict(expected)
    assert sum(r.kernels for r in c.ranks) == len(nccl)
    if name == "cuda_graphs.json.gz":
        assert [(r.pid, r.device_id, r.rank, r.kernels) for r in c.ranks] == [(4515, 0, 0, 80)]
        assert [n.name for n in c.ranks[0].names] == ["ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"]
        assert c.ranks[0].wait_ns is None


def test_a_pattern_counts_another_librarys_kernels_beside_nccls():
    """`report --json --collective-pattern`, end to end on cuda_graphs: PyTorch's reduce kernels stand for
    another library's collectives; counted beside NCCL's 80, named whole (a template's name), their GPU time
    that of the raw JSON's events."""
    path = real_trace("cuda_graphs.json.gz")
    nccl, _, _ = _raw_nccl_kernels(path)
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    reduces = [e for e in events if e.get("cat") == "kernel" and "reduce_kernel<" in e["name"]]
    assert reduces and not set(map(id, reduces)) & set(map(id, nccl))
    result = CliRunner().invoke(main, ["report", "--json", "--collective-pattern", "reduce_kernel<", str(path)])
    assert result.exit_code == 0, result.output
    c = json.loads(result.output)["collectives"]
    assert c["pattern"] == "reduce_kernel<"
    [rank] = c["ranks"]
    assert rank["kernels"] == len(nccl) + len(reduces) == 80 + len(reduces)
    names = {n["name"]: (n["kernels"], n["gpu_ns"]) for n in rank["names"]}
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in reduces:
        expected[e["name"].removeprefix("void ")][0] += 1
        expected[e["name"].removeprefix("void ")][1] += int(Decimal(str(e["dur"])) * 1000)
    assert {n: names[n] for n in expected} == {n: tuple(v) for n, v in expected.items()}
    assert names["ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"][0] == 80


def test_every_real_trace_with_nccl_kernels_is_among_those_checked():
    """A real trace added beside the others is checked above too, or this fails."""
    if not REAL_KINETO.is_dir():
        real_trace(REAL[0])  # skips, saying where they were looked for
    assert sorted(p.name for p in REAL_KINETO.glob("*.json.gz")) == sorted(REAL)


# --- one recording of a job: cudasim's ranks against its truth --------------------------------------------

TOKENS, LAYERS = 6, 8


@needs_bpf
@pytest.mark.skipif(not RECORDER.exists() or not CUDASIM.exists(), reason="the recorder or cudasim is not built")
@pytest.mark.parametrize("stream", ["same", "own"])
def test_each_ranks_wait_inside_its_collectives_is_the_truths(record, stream):  # noqa: F811 (the fixture)
    """2 ranks under one recorder with GPU activity, rank 1 sleeping 3 ms after every 60th of its kernels: each
    collective's wait on each rank is the truth's wait_ns (its start to the last rank's start) within the two
    ranks' clock errors (each collector states its own), and each rank's total within the sum of those."""
    run = record(
        cudasim_command(
            "--ranks", "2", "--tokens", str(TOKENS), "--layers", str(LAYERS), "--collective-us", "50",
            "--collective-stream", stream, "--stall-rank", "1", "--stall-us", "3000", "--stall-every", "60",
        ),
        "--gpu-activity",
    )  # fmt: skip
    truth, trace = run.truth, run.trace
    errors = {s.pid: s.detail["clock"]["error_ns"] for s in collector_states(trace) if s.state == "started"}
    rank_of = {p["pid"]: p["proc_index"] for p in truth["processes"]}
    rows = [dict(zip(truth["collective_columns"], row)) for row in truth["collectives"]]
    theirs = {rank: sorted((r for r in rows if r["rank"] == rank), key=lambda r: r["launch_seq"]) for rank in (0, 1)}

    report = build_report(trace)
    c = report.collectives
    assert c is not None and c.not_matched is None and c.matched_by == coll.MATCHED_BY_ORDER
    assert c.matched == TOKENS * LAYERS == len(theirs[0]) == len(theirs[1])
    assert {rank_of[r.pid]: r.device_id for r in c.ranks} == {0: 0, 1: 1}

    kernels = coll.collective_kernels(trace, set(rank_of))
    waits = coll.split_waits(kernels).sort("pid", "k")
    both = sum(errors[pid] for pid in rank_of)  # a wait is two ranks' starts apart: each rank's error counts
    for r in c.ranks:
        rank = rank_of[r.pid]
        mine = waits.filter(pl.col("pid") == r.pid)
        assert mine["name"].to_list() == [NCCL_NAMES[t["name"]] for t in theirs[rank]]
        off = [abs(ours - t["wait_ns"]) for ours, t in zip(mine["wait_ns"].to_list(), theirs[rank], strict=True)]
        assert max(off) <= both, (rank, max(off), both)
        truth_total = sum(t["wait_ns"] for t in theirs[rank])
        assert abs(r.wait_ns - truth_total) <= both * len(theirs[rank]), (rank, r.wait_ns, truth_total)
        # the kernel's time is its wait and its transfer, and its transfer the truth's within the errors
        assert r.wait_ns + r.transfer_ns == r.gpu_ns
        truth_transfer = sum(t["transfer_ns"] for t in theirs[rank])
        assert abs(r.transfer_ns - truth_transfer) <= both * len(theirs[rank])
    # not vacuous: rank 1's sleeps made rank 0 wait, milliseconds at a time
    waited = {rank_of[r.pid]: r.wait_ns for r in c.ranks}
    assert waited[0] >= 1_500_000 and waited[1] < waited[0], waited
    # the report's words and JSON say the same figures
    console = Console(record=True, width=200, color_system=None)
    render(report, console)
    text = console.export_text()
    assert "Collective kernels (NCCL)" in text and f"{c.matched:,} collectives matched across the ranks" in text
    for r in c.ranks:
        assert f"pid {r.pid}, device {r.device_id}" in text
    assert document(report)["collectives"] == c.to_json()


@needs_bpf
@pytest.mark.skipif(not RECORDER.exists() or not CUDASIM.exists(), reason="the recorder or cudasim is not built")
def test_profiler_files_of_each_rank_joined_give_each_ranks_wait(record, tmp_path):  # noqa: F811 (the fixture)
    """The same job recorded without CUPTI (--no-cuda-probes) and joined to each rank's PyTorch profiler file
    (cudasim --kineto): the ranks are named by their files' distributedInfo, and each collective's wait is
    the truth's within the profiler clock's error as cudasim wrote it (each reading off by up to its jitter,
    the clock drifting at its rate from the truth's over the run) twice over, plus the recording's own
    clock readings' uncertainty, twice."""
    run = record(
        cudasim_command(
            "--ranks", "2", "--tokens", str(TOKENS), "--layers", str(LAYERS), "--collective-us", "50",
            "--stall-rank", "1", "--stall-us", "3000", "--stall-every", "60", "--kineto", str(tmp_path / "k.json"),
        ),
        "--no-cuda-probes",
    )  # fmt: skip
    truth = run.truth
    files = sorted(str(path) for path in tmp_path.glob("k-rank*.json"))
    assert len(files) == 2
    joined = join_profiler_traces(run.trace, files)
    report = build_report(joined)
    c = report.collectives
    assert c is not None and c.not_matched is None and c.matched == TOKENS * LAYERS
    rank_of = {p["pid"]: p["proc_index"] for p in truth["processes"]}
    assert [(rank_of[r.pid], r.rank, r.device_id) for r in c.ranks] == [(0, 0, 0), (1, 1, 1)]

    kineto = truth["kineto"]
    span = truth["end_ns"] - truth["start_ns"]
    uncertainty = max(f.clock.recorded_uncertainty_ns or 0 for f in report.profiler)
    one = kineto["jitter_ns"] + kineto["drift_ppm"] * span / 1e6 + uncertainty  # one start's error, at most
    rows = [dict(zip(truth["collective_columns"], row)) for row in truth["collectives"]]
    waits = coll.split_waits(coll.collective_kernels(joined, set(rank_of))).sort("pid", "k")
    for r in c.ranks:
        theirs = sorted((t for t in rows if t["rank"] == rank_of[r.pid]), key=lambda t: t["launch_seq"])
        ours = waits.filter(pl.col("pid") == r.pid)["wait_ns"].to_list()
        off = max(abs(a - t["wait_ns"]) for a, t in zip(ours, theirs, strict=True))
        assert off <= 2 * one, (r.pid, off, one)
        assert abs(r.wait_ns - sum(t["wait_ns"] for t in theirs)) <= 2 * one * len(theirs)
