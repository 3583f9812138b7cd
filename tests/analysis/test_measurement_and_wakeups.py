"""What is no interference in GPU time (issue 34, item 1): launchgap's own tasks (the recorder's process, the thread
the collector names) are the cost of measuring, and a wait while the CPU ran its idle task is wake-up latency; neither
is a culprit, nor counts in the verdict's level, advice or prediction. A hand-built trace whose every nanosecond of GPU
idle is worked out below, in exact mode (GPU activity) and in bounds mode (the same trace without it)."""

from __future__ import annotations

import json

from launchgap.analysis.report import build_report
from launchgap.trace.model import FrameTables, Trace
from launchgap.trace import Event
from tests.analysis.builder import GPU_ACTIVITY, IDLE, TraceBuilder

RECORDER = (999, 999, "trace-writer")      # meta.json's recorder_pid
APP = (100, 100, "decode")                  # the launching thread, CPU 1
COLLECTOR = (100, 105, "cupti-worker")      # the thread the collector names
HOG = (200, 200, "hog")
IMPOSTOR = (300, 300, "trace-writer")       # any task can take the recorder's threads' names


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
    assert g.mode == "exact"
    assert {c.cause: c.ns for c in g.causes} == {
        "before_first": 1000, "host_work": 3000, "measurement": 1500, "blocked": 500, "wakeup_latency": 500,
        "preempted": 500, "launch_call": 100, "gpu_side": 900, "after_last": 1000}
    assert (g.interference_low_ns, g.interference_high_ns) == (500, 500)
    assert [(c.name, c.pids, c.high_ns, c.causes) for c in g.culprits] == [
        ("trace-writer", [300], 300, {"preempted": 300}), ("hog", [200], 200, {"preempted": 200})]
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [("trace-writer", 999, 1000),
                                                                     ("cupti-worker", 100, 500)]
    assert (g.measurement.tasks_low_ns, g.measurement.tasks_high_ns) == (1500, 1500)
    assert (g.wakeup_latency_low_ns, g.wakeup_latency_high_ns) == (500, 500)
    # busy over the process's active span, [2000, 11000): 2000 of 9000
    assert g.busy_percent == 100 * 2000 / 9000
    assert g.window_busy_percent == 100 * 2000 / 11_000


def test_the_verdict_names_no_launchgap_task_and_counts_only_the_interference(tmp_path):
    report = build_report(gap_trace().write(tmp_path / "t.lg"))
    text = report.verdict.text
    assert "The GPU lost 500 ns of its 9 us of work to interference (5.56%)" in text
    assert "cupti-worker" not in text and "999" not in text
    assert report.to_json()["gpu_time"]["measurement"]["tasks"][0] == {"name": "trace-writer", "pid": 999, "ns": 1000}


def test_bounds_keep_them_apart_too(tmp_path):
    trace = gap_trace().write(tmp_path / "t.lg")
    kept = {k: trace.of(k) for k in Event if trace.count(k) and k not in (Event.GPU_KERNEL, Event.GPU_API)}
    meta = {**trace.meta, "gpu_activity": {"recorded": False, "why": "attached with -p"}}
    g = build_report(Trace(path=trace.path, meta=meta, tables=FrameTables(kept), truncated=False,
                           summary=trace.summary)).gpu_time
    assert g.mode == "bounds"
    # every delay of the launching thread from its first launch to its last, [1500, 9000], by cause
    assert {(c.name, tuple(c.pids)) for c in g.culprits} == {("trace-writer", (300,)), ("hog", (200,))}
    assert g.interference_high_ns == 500
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [("trace-writer", 999, 1000),
                                                                     ("cupti-worker", 100, 500)]
    assert (g.measurement.tasks_low_ns, g.measurement.tasks_high_ns) == (0, 1500)
    assert (g.wakeup_latency_low_ns, g.wakeup_latency_high_ns) == (0, 500)
    assert json.loads(json.dumps(g.to_json()))["wakeup_latency_high_ns"] == 500
