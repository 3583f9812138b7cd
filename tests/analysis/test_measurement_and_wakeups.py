"""What is no interference in GPU time (issue 34, item 1): launchgap's own tasks (the recorder's process, the thread
the collector names) are the cost of measuring, and a wait while the CPU ran its idle task is wake-up latency; neither
is a culprit, nor counts in the verdict's level, advice or prediction. A hand-built trace whose every nanosecond of GPU
idle is worked out below, in exact mode (GPU activity) and in bounds mode (the same trace without it)."""

from __future__ import annotations

import json

import pytest

from launchgap.analysis.records import GpuTimeBounds, GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.trace import Event
from launchgap.trace.model import FrameTables, Trace
from launchgap.views.verdict_words import verdict_text
from tests.analysis.builder import GPU_ACTIVITY, IDLE, TraceBuilder

RECORDER = (999, 999, "trace-writer")  # meta.json's recorder_pid
APP = (100, 100, "decode")  # the launching thread, CPU 1
COLLECTOR = (100, 105, "cupti-worker")  # the thread the collector names
HOG = (200, 200, "hog")
IMPOSTOR = (300, 300, "trace-writer")  # any task can take the recorder's threads' names


def gap_trace() -> TraceBuilder:
    """One GPU gap, [3000, 10000), ended by kernel 2, whose launch call is [9000, 9100). Until then the thread:
    host work [3000, 4000); preempted by the recorder [4000, 5000); host work [5000, 6000); blocked [6000, 6500);
    woken while CPU 1 idled, runs at 7000 (wake-up latency [6500, 7000)); host work [7000, 7500); preempted by the
    collector's thread [7500, 8000); host work [8000, 8500); preempted by an impostor named as the recorder's thread
    [8500, 8800) and by the hog [8800, 9000); the launch call [9000, 9100); then the GPU's [9100, 10000)."""
    b = TraceBuilder(start_ns=1000, end_ns=12_000, meta_extra={**GPU_ACTIVITY, "recorder_pid": 999})
    b.switch(1200, 1, IDLE, APP)
    b.launch(1500, 1, APP)
    b.gpu_api(1500, 1600, APP, 1)
    b.gpu_kernel(2000, 3000, 100, 1)
    b.switch(4000, 1, APP, RECORDER)
    b.switch(5000, 1, RECORDER, APP)
    b.switch(6000, 1, APP, IDLE, voluntary=True)
    b.wakeup(6500, APP, 1)
    b.switch(7000, 1, IDLE, APP)
    b.switch(7500, 1, APP, COLLECTOR)
    b.switch(8000, 1, COLLECTOR, APP)
    b.switch(8500, 1, APP, IMPOSTOR)
    b.switch(8800, 1, IMPOSTOR, HOG)
    b.switch(9000, 1, HOG, APP)
    b.launch(9000, 1, APP)
    b.gpu_api(9000, 9100, APP, 2)
    b.gpu_kernel(10_000, 11_000, 100, 2)
    b.switch(11_500, 1, APP, IDLE, dead=True)
    b.gpu_collector_thread(1300, 100, 105)
    # a workload naming another process's task as launchgap's: the trace shows tid 200 in pid 200, not 100
    b.gpu_collector_thread(1300, 100, 200)
    return b


def test_exact_gpu_idle_keeps_measurement_and_wakeup_latency_apart(tmp_path):
    g = build_report(gap_trace().write(tmp_path / "t.lg")).gpu_time
    assert isinstance(g, GpuTimeExact)
    assert {c.cause: c.ns for c in g.causes} == {
        "before_first": 1000,
        "host_work": 3000,
        "measurement": 1500,
        "blocked": 500,
        "wakeup_latency": 500,
        "preempted": 500,
        "launch_call": 100,
        "gpu_side": 900,
        "after_last": 1000,
    }
    assert g.interference_ns == 500
    assert [(c.name, c.pids, c.high_ns, c.causes) for c in g.culprits] == [
        ("trace-writer", [300], 300, {"preempted": 300}),
        ("hog", [200], 200, {"preempted": 200}),
    ]
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [
        ("trace-writer", 999, 1000),
        ("cupti-worker", 100, 500),
    ]
    assert (g.measurement.tasks_low_ns, g.measurement.tasks_high_ns) == (1500, 1500)
    assert g.wakeup_latency_ns == 500
    # the JSON says exact figures as bounds that meet, as bounds mode's
    as_json = json.loads(json.dumps(g.to_json()))
    assert (as_json["mode"], as_json["interference_low_ns"], as_json["interference_high_ns"]) == ("exact", 500, 500)
    assert (as_json["wakeup_latency_low_ns"], as_json["wakeup_latency_high_ns"]) == (500, 500)
    # busy over the process's active span, [2000, 11000): 2000 of 9000
    assert g.busy_percent == 100 * 2000 / 9000
    assert g.window_busy_percent == 100 * 2000 / 11_000


def test_the_verdict_names_no_launchgap_task_and_counts_only_the_interference(tmp_path):
    report = build_report(gap_trace().write(tmp_path / "t.lg"))
    text = verdict_text(report.verdict)
    assert "The GPU lost 500 ns of its 9 us of work to interference (5.56%)" in text
    assert "cupti-worker" not in text and "999" not in text
    assert report.gpu_time.to_json()["measurement"]["tasks"][0] == {"name": "trace-writer", "pid": 999, "ns": 1000}


def test_the_cpu_sides_culprits_mark_launchgaps_own_the_collectors_thread_too(tmp_path):
    """Who ran while the workload waited (the CPU side's table, by process and name): the recorder (by its pid)
    and the collector's thread (in the workload's own process, by the name it ran under there) are launchgap's
    own; the impostor that took the recorder's thread's name, the hog and the idle task are not."""
    taken = build_report(gap_trace().write(tmp_path / "t.lg")).taken
    # (the collector's thread is a thread of the workload's process, so its own waits are listed too: behind the
    # launching thread, decode, which is no more launchgap's for that)
    assert {(c.comm, c.pid): c.is_recorder for c in taken.culprits} == {
        ("trace-writer", 999): True,
        ("cupti-worker", 100): True,
        ("trace-writer", 300): False,
        ("hog", 200): False,
        ("decode", 100): False,
        ("swapper", 0): False,
    }


def test_a_name_the_collectors_thread_shares_with_a_thread_of_the_workload_marks_neither(tmp_path):
    """The mark goes by name within the process, so a name is the collector's only where no other thread of its
    process ran under it: a workload thread that names itself as the collector's (tid 106, "cupti-worker") takes
    the mark from both, and the collector's thread, while it still carried its creator's name ("decode", before it
    named itself), does not lend the mark to that name."""
    from launchgap.analysis.measurement import collector_names, measurement_of

    b = gap_trace()
    b.switch(2500, 0, IDLE, (100, 105, "decode"))  # the collector's thread, still named as its creator
    b.switch(2600, 0, (100, 105, "decode"), IDLE)
    trace = b.write(tmp_path / "creator.lg")
    assert collector_names(trace, measurement_of(trace)) == {(100, "cupti-worker")}
    b.switch(2700, 0, IDLE, (100, 106, "cupti-worker"))  # a workload thread taking the collector's name
    b.switch(2800, 0, (100, 106, "cupti-worker"), IDLE)
    trace = b.write(tmp_path / "namesake.lg")
    assert collector_names(trace, measurement_of(trace)) == frozenset()
    marked = {(c.comm, c.pid): c.is_recorder for c in build_report(trace).taken.culprits}
    assert marked[("cupti-worker", 100)] is False and marked[("trace-writer", 999)] is True


def test_bounds_keep_them_apart_too(tmp_path):
    trace = gap_trace().write(tmp_path / "t.lg")
    kept = {k: trace.of(k) for k in Event if trace.count(k) and k not in (Event.GPU_KERNEL, Event.GPU_API)}
    meta = {**trace.meta, "gpu_activity": {"recorded": False, "why": "attached with -p"}}
    g = build_report(
        Trace(path=trace.path, meta=meta, tables=FrameTables(kept), truncated=False, summary=trace.summary)
    ).gpu_time
    assert isinstance(g, GpuTimeBounds)
    # every delay of the launching thread from its first launch to its last, [1500, 9000], by cause
    assert {(c.name, tuple(c.pids)) for c in g.culprits} == {("trace-writer", (300,)), ("hog", (200,))}
    assert g.interference_high_ns == 500
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [
        ("trace-writer", 999, 1000),
        ("cupti-worker", 100, 500),
    ]
    assert (g.measurement.tasks_low_ns, g.measurement.tasks_high_ns) == (0, 1500)
    assert (g.wakeup_latency_low_ns, g.wakeup_latency_high_ns) == (0, 500)
    assert json.loads(json.dumps(g.to_json()))["wakeup_latency_high_ns"] == 500


# ---- a quiet run: what measuring cost is most of what the GPU waited for --------------------------------------
# (the quiet --gpu-activity run: launchgap's own threads were 78% of what the verdict called interference)


def uprobe(function: str, layer: str, cost: str, attached: bool = True) -> dict:
    """A probe report as meta.json's probes[] holds it (docs/trace-format.md)."""
    return {
        "kind": "uprobe",
        "function": function,
        "file": "/lib/libcuda.so.1",
        "layer": layer,
        "probe_cost": cost,
        "attached": attached,
        "error": None,
    }


# the launch entry point's probe is emulated (1 us a hit); the sync's, single-stepped (11 us), is no launch's
PROBES = [
    uprobe("cuLaunchKernel", "driver", "emulated"),
    uprobe("cuStreamSynchronize", "driver", "single-stepped"),
    uprobe("cuMemcpyHtoD_v2", "driver", "single-stepped"),
    {"kind": "tracepoint", "name": "sched_switch", "attached": True, "error": None},
]


def quiet_trace(probes: list[dict] | None = None, options: dict | None = None) -> TraceBuilder:
    """The GPU's active span [2000, 102000): 100 us. Its two gaps between work, each ended by a launch:
    - [3000, 20000), kernel 2 (call [17500, 19500)): host work [3000, 5000); the recorder [5000, 15000); host work
      [15000, 17500); the launch call, 2000; the GPU's [19500, 20000).
    - [30000, 60000), kernel 3 (call [59000, 59800)): host work [30000, 33000); blocked [33000, 35000); woken while
      CPU 1 idled, runs at 38000 (wake-up latency 3000); host work [38000, 40000); the collector's thread [40000,
      45000); host work [45000, 50000); the hog [50000, 50500); host work [50500, 59000); the launch call, 800; the
      GPU's [59800, 60000).
    Interference: the hog's 500 (0.5% of the span: negligible). Measuring: 10000 + 5000 (15%). Wake-up latency
    3000 (3%). Together they would be 18.5%: heavy."""
    meta = {**GPU_ACTIVITY, "recorder_pid": 999}
    if probes is not None:
        meta["probes"] = probes
    if options is not None:
        meta["options"] = options
    b = TraceBuilder(start_ns=1000, end_ns=200_000, meta_extra=meta)
    b.switch(1200, 1, IDLE, APP)
    b.launch(1500, 1, APP)
    b.gpu_api(1500, 1600, APP, 1)
    b.gpu_kernel(2000, 3000, 100, 1)
    b.switch(5000, 1, APP, RECORDER)
    b.switch(15_000, 1, RECORDER, APP)
    b.launch(17_500, 1, APP)
    b.gpu_api(17_500, 19_500, APP, 2)
    b.gpu_kernel(20_000, 30_000, 100, 2)
    b.switch(33_000, 1, APP, IDLE, voluntary=True)
    b.wakeup(35_000, APP, 1)
    b.switch(38_000, 1, IDLE, APP)
    b.switch(40_000, 1, APP, COLLECTOR)
    b.switch(45_000, 1, COLLECTOR, APP)
    b.switch(50_000, 1, APP, HOG)
    b.switch(50_500, 1, HOG, APP, voluntary=True)
    b.launch(59_000, 1, APP)
    b.gpu_api(59_000, 59_800, APP, 3)
    b.gpu_kernel(60_000, 102_000, 100, 3)
    b.switch(150_000, 1, APP, IDLE, dead=True)
    b.gpu_collector_thread(1300, 100, 105)
    return b


def test_a_quiet_run_is_negligible_whatever_measuring_cost(tmp_path):
    report = build_report(quiet_trace(PROBES).write(tmp_path / "t.lg"))
    g = report.gpu_time
    assert {c.cause: c.ns for c in g.causes} == {
        "before_first": 1000,
        "host_work": 23_000,
        "measurement": 15_000,
        "launch_call": 2800,
        "gpu_side": 700,
        "blocked": 2000,
        "wakeup_latency": 3000,
        "preempted": 500,
        "after_last": 98_000,
    }
    assert (g.active_ns, g.interference_ns) == (100_000, 500)
    assert [(c.name, c.pids, c.high_ns, c.share_percent) for c in g.culprits] == [("hog", [200], 500, 100.0)]
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [
        ("trace-writer", 999, 10_000),
        ("cupti-worker", 100, 5000),
    ]
    # the level, the advice and the words: the hog's 0.5% alone
    assert report.verdict.level == "negligible"
    assert report.verdict.gpu_idle_low_percent == report.verdict.gpu_idle_high_percent == 0.5
    assert verdict_text(report.verdict).startswith(
        "The GPU lost 500 ns of its 100 us of work to interference (0.50%): negligible: no action needed"
    )
    for ours in ("trace-writer", "cupti-worker", "swapper", "999"):
        assert ours not in verdict_text(report.verdict)
    # without the interference: one span of 100 000 - 500 ns instead of 100 000 (no drain syncs: no steps)
    p = g.prediction
    assert (p.basis, p.steps, p.measured_per_s) == ("gpu_span", None, 1e9 / 100_000)
    assert p.predicted_low_per_s == p.predicted_high_per_s == pytest.approx(1e9 / 99_500)
    assert p.gain_low_percent == p.gain_high_percent == pytest.approx(100 * (100_000 / 99_500 - 1))


def test_taking_launchgap_away_is_predicted_to_buy_nothing(tmp_path):
    from launchgap.analysis.gpu_time import gain_without

    g = build_report(quiet_trace(PROBES).write(tmp_path / "t.lg")).gpu_time
    # the recorder's process and the collector's (the workload's own, 100) are no culprits: nothing to remove
    assert gain_without(g, {999}) == (0.0, 0.0)
    assert gain_without(g, {100}) == (0.0, 0.0)
    # the hog's 500 ns over the workload's own time, the span less the interference alone: 500 / 99 500
    assert gain_without(g, {200}) == (pytest.approx(100 * 500 / 99_500), pytest.approx(100 * 500 / 99_500))


def test_the_probes_cost_is_estimated_inside_the_launch_calls(tmp_path):
    # a launch's probe costs 1000 (its sync's and copy's 11 000 are no launch's): of the launch calls ending
    # the gaps, 2000 and 800 ns, min(2000, 1000) + min(800, 1000) = 1800
    g = build_report(quiet_trace(PROBES).write(tmp_path / "a.lg")).gpu_time
    assert (g.measurement.probes_estimated_ns, g.measurement.probe_ns_per_launch) == (1800, 1000)
    # part of the launch calls (the app's own), never interference
    assert {c.cause: c.ns for c in g.causes}["launch_call"] == 2800 and g.interference_ns == 500
    # with --api-names the runtime launch entry point's entry and return probes too, 2 x 1000 (its sync's are no
    # launch's): 3000 a launch, so the whole of both calls
    runtime = [
        uprobe("cudaLaunchKernel", "runtime", "emulated"),
        uprobe("cudaStreamSynchronize", "runtime", "single-stepped"),
    ]
    g = build_report(quiet_trace(PROBES + runtime, {"api_names": True}).write(tmp_path / "b.lg")).gpu_time
    assert (g.measurement.probes_estimated_ns, g.measurement.probe_ns_per_launch) == (2800, 3000)
    # a trace that reports no probes has no estimate
    g = build_report(quiet_trace().write(tmp_path / "c.lg")).gpu_time
    assert (g.measurement.probes_estimated_ns, g.measurement.probe_ns_per_launch) == (None, None)


def test_what_a_launchs_probes_cost_by_entry_point(tmp_path):
    from launchgap.analysis.measurement import probe_ns_per_launch

    probes = [
        uprobe("cuLaunchKernel", "driver", "emulated"),
        uprobe("cuLaunchKernel_ptsz", "driver", "single-stepped"),
        uprobe("cuGraphLaunch", "driver", "never-fires"),
        uprobe("cuLaunchKernelEx", "driver", "single-stepped", attached=False),
        uprobe("cuStreamSynchronize", "driver", "single-stepped"),
        uprobe("cuCtxSynchronize", "driver", "emulated"),
        uprobe("cudaLaunchKernel", "runtime", "emulated"),
        uprobe("cudaGraphLaunch", "runtime", "emulated"),
        uprobe("cudaMemcpy", "runtime", "single-stepped"),
        {"kind": "tracepoint", "name": "sched_switch", "attached": True, "error": None},
    ]
    # a hit: 1 us emulated, 11 us single-stepped, nothing where it never fires; a probe not attached costs nothing
    trace = quiet_trace(probes).write(tmp_path / "a.lg")
    assert probe_ns_per_launch(trace) == {"cuLaunchKernel": 1000, "cuLaunchKernel_ptsz": 11_000, "cuGraphLaunch": 0}
    # with --api-names each launch also goes through a runtime launch entry point's entry and return probes: 2 x 1000
    trace = quiet_trace(probes, {"api_names": True}).write(tmp_path / "b.lg")
    assert probe_ns_per_launch(trace) == {"cuLaunchKernel": 3000, "cuLaunchKernel_ptsz": 13_000, "cuGraphLaunch": 2000}
