"""Real PyTorch profiler traces from real GPUs (shared/real-traces/kineto, from Holistic Trace Analysis'
test data), read by `launchgap report TRACE.json.gz`. The truth is the README's figures there, computed
independently from the raw JSON (device-level: the union of every stream's kernels, copies and memsets,
from the first GPU work to the last), and the raw JSON's own text."""

from __future__ import annotations

import gzip
import json
import re

import polars as pl
import pytest
from click.testing import CliRunner

from launchgap.analysis.gpu_time import gpu_work, idle_gaps
from launchgap.analysis.records import GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import Event, open_trace
from launchgap.trace.checks import PID_MAX_LIMIT
from launchgap.trace.kineto import read_profiler_trace
from launchgap.views.verdict_words import verdict_text
from tests.kineto.conftest import real_trace

# the README's known figures, in ms
KNOWN = {
    "simple_add.json.gz": {"idle": 15_975.8},
    "cuda_graphs.json.gz": {"idle": 793.037, "busy": 438.424, "active": 1_231.461},
    "ns_resolution.json.gz": {"idle": 7.575},
}


def _within(ours_ns: int, known_ms: float, share: float = 0.005) -> bool:
    return abs(ours_ns / 1e6 - known_ms) <= share * known_ms


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_device_idle_inside_the_active_span_is_the_readme_figure(name):
    report = build_report(open_trace(real_trace(name)))
    g = report.gpu_time
    assert isinstance(g, GpuTimeExact)
    idle = sum(p.idle_ns for p in g.processes)
    known = KNOWN[name]
    assert _within(idle, known["idle"]), (idle, known)
    if "busy" in known:
        # graph nodes counted one by one: the GPU is idle between two nodes of a graph
        assert _within(sum(p.busy_ns for p in g.processes), known["busy"])
        assert _within(g.active_ns, known["active"])


def test_cuda_graphs_gaps_end_at_work_whose_launch_precedes_the_trace():
    """689 gaps end at work whose launch call lies before the trace (README): their host part is unknown."""
    trace = open_trace(real_trace("cuda_graphs.json.gz"))
    gaps = idle_gaps(gpu_work(trace), *trace.span_ns()).filter(pl.col("kind") == "between")
    assert gaps.filter(pl.col("call_start_ns").is_null()).height == 689


def test_simple_add_idle_is_all_waiting_for_the_next_call():
    """99.999% of simple_add's idle has the next work's call starting after the gap began (README)."""
    trace = open_trace(real_trace("simple_add.json.gz"))
    gaps = idle_gaps(gpu_work(trace), *trace.span_ns()).filter(pl.col("kind") == "between")
    length = pl.col("gap_end") - pl.col("gap_start")
    after = gaps.filter(pl.col("call_start_ns") > pl.col("gap_start")).select(length.sum()).item()
    assert round(100 * after / gaps.select(length.sum()).item(), 3) == 99.999


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_the_verdict_on_a_profiler_trace_alone_is_unknown_and_says_how_to_learn_more(name):
    report = build_report(open_trace(real_trace(name)))
    assert report.verdict.level == "unknown"
    assert "--kineto" in verdict_text(report.verdict) and "launchgap record" in verdict_text(report.verdict)
    assert "negligible interference" not in verdict_text(report.verdict)


def test_nanosecond_decimals_are_read_exactly():
    """ns_resolution writes ts with nanosecond decimals (1712195495505543.140): a float64 would keep it to
    0.25 us only. Every call's start is the raw text's decimal, to the nanosecond."""
    path = real_trace("ns_resolution.json.gz")
    raw = gzip.open(path).read().decode()
    texts = re.findall(r'"cat": "cuda_runtime", "name": "(\w+)", "pid": (\d+), "tid": (\d+),\s*"ts": ([0-9.]+)', raw)
    assert len(texts) > 10_000
    expected = sorted(
        int(ts.split(".")[0]) * 1000 + int((ts.split(".") + [""])[1].ljust(3, "0")[:3])
        for _, _, tid, ts in texts
        if 1 <= int(tid) <= PID_MAX_LIMIT
    )
    ours = sorted(read_profiler_trace(path).calls["ts_ns"].to_list())
    assert ours == expected
    assert 1712195495505543140 in ours  # the cudaLaunchKernel the README's example shows


def test_thread_ids_that_are_not_the_kernels_are_counted_not_put_on_a_thread():
    path = real_trace("cuda_graphs.json.gz")
    events = json.load(gzip.open(path))["traceEvents"]
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    foreign = [e for e in calls if not 1 <= e["tid"] <= PID_MAX_LIMIT]
    run = read_profiler_trace(path)
    assert len(foreign) == 309 and run.foreign_thread_calls == len(foreign)
    assert run.calls.height == len(calls) - len(foreign)
    assert set(run.calls["tid"].unique().to_list()) == {4515, 25556}
    # runtime calls Kineto could not name (INVALID) are calls too, no launch among them
    invalid = [e for e in calls if e["name"] == "INVALID" and 1 <= e["tid"] <= PID_MAX_LIMIT]
    assert run.calls.filter(pl.col("api") == "INVALID").height == len(invalid) > 0
    # their GPU work is kept: every kernel, copy and memset of the file is GPU work in the trace
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert run.gpu.height == len(gpu)


def test_nccl_kernels_graph_nodes_and_devices_as_the_file_names_them():
    path = real_trace("cuda_graphs.json.gz")
    events = json.load(gzip.open(path))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    graphs = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    report = build_report(open_trace(path))
    (f,) = report.profiler
    assert f.nccl_kernels == sum(1 for k in kernels if k["name"].startswith("ncclKernel")) == 80
    assert f.graph_nodes == sum(1 for k in kernels if k["args"]["correlation"] in graphs)
    assert f.devices == sorted({k["args"]["device"] for k in kernels})
    # the window: the profiler's span to its Record Window End mark
    span = next(e for e in events if e.get("cat") == "Trace")
    end = next(e for e in events if e.get("name") == "Record Window End")
    assert (f.window_start_ns, f.window_end_ns) == (span["ts"] * 1000, end["ts"] * 1000)
    # user annotations drawn over GPU work are not work: ns_resolution has 15, none counted
    ns = read_profiler_trace(real_trace("ns_resolution.json.gz"))
    assert "gpu_user_annotation" not in set(ns.gpu["work"].to_list())


def test_report_and_json_on_the_command_line():
    path = real_trace("simple_add.json.gz")
    result = CliRunner().invoke(main, ["report", "--json", str(path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["verdict"]["level"] == "unknown"
    assert report["profiler"][0]["layout"] == "absolute" and report["profiler"][0]["pid"] == 493459
    text = CliRunner().invoke(main, ["report", str(path)])
    assert text.exit_code == 0 and "Traceback" not in text.output
    assert "PyTorch profiler trace alone" in text.output


def test_import_makes_a_trace_that_reports_the_same(tmp_path):
    path = real_trace("cuda_graphs.json.gz")
    out = tmp_path / "graphs.lg"
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    imported, direct = build_report(open_trace(out)), build_report(open_trace(path))
    assert imported.gpu_time.to_json() == direct.gpu_time.to_json()
    assert imported.verdict.level == "unknown"
    assert open_trace(out).count(Event.GPU_KERNEL) == 6080
