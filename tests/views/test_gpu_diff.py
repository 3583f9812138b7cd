"""diff's GPU time from hand-made GPU time sections (issue 24, item 3): one side exact, the other bounds;
the change is the range the bounds allow, worked by hand; names from outside are shown as they are."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from launchgap.analysis.diff import diff_gpu_time
from launchgap.analysis.records import GpuCulprit, GpuIdleCause, GpuTimeBounds, GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.console import UNBOUNDED_WIDTH
from launchgap.views.gpu_diff import render_gpu_diff
from tests.analysis.test_bounded_report import busy_trace

HOSTILE = "[bold]hog\x1b[31m"
MS = 1_000_000


def culprit(cause, pid, comm, low, high):
    return GpuCulprit(
        name=comm,
        pids=[] if pid is None else [pid],
        is_interrupt=cause == "irq",
        low_ns=low,
        high_ns=high,
        share_percent=None,
        causes={cause: high},
        recoverable_low_ns=low,
        recoverable_high_ns=high,
    )


EXACT = GpuTimeExact(
    span_ns=1000 * MS,
    busy_ns=800 * MS,
    idle_ns=200 * MS,
    busy_percent=80.0,
    causes=[
        GpuIdleCause("preempted", 30 * MS, 15.0),
        GpuIdleCause("runqueue", 10 * MS, 5.0),
        GpuIdleCause("irq", 2 * MS, 1.0),
        GpuIdleCause("host_work", 100 * MS, 50.0),
    ],
    interference_ns=42 * MS,
    own_ns=120 * MS,
    culprits=[culprit("preempted", 7, HOSTILE, 30 * MS, 30 * MS)],
    cpu_interference_ns=60 * MS,
    hidden_ns=18 * MS,
    hidden_percent=30.0,
    processes=[],
    active_ns=900 * MS,
    prediction=None,
    culprits_by_cgroup=None,
    culprits_by_process=[],
    measurement=None,
    wakeup_latency_ns=0,
    window_busy_percent=None,
)
BOUNDS = GpuTimeBounds(
    why="attached with -p",
    interference_low_ns=50 * MS,
    interference_high_ns=90 * MS,
    culprits=[culprit("preempted", 8, HOSTILE, 40 * MS, 70 * MS), culprit("irq", None, "eth0", 1 * MS, 5 * MS)],
    cpu_interference_ns=100 * MS,
    hidden_low_ns=10 * MS,
    hidden_high_ns=50 * MS,
    active_ns=1000 * MS,
    prediction=None,
    note=None,
    culprits_by_cgroup=None,
    culprits_by_process=[],
    measurement=None,
    wakeup_latency_low_ns=0,
    wakeup_latency_high_ns=0,
)


def test_an_exact_side_against_a_bounds_side(tmp_path):
    report = build_report(busy_trace(0).write(tmp_path / "t.lg"))
    a, b = dataclasses.replace(report, gpu_time=EXACT), dataclasses.replace(report, gpu_time=BOUNDS)
    diffed = diff_gpu_time(a, b)
    gpu = diffed.to_json()
    assert gpu["a"]["interference_by_cause_ns"] == {"preempted": 30 * MS, "runqueue": 10 * MS, "irq": 2 * MS}
    assert gpu["a"]["idle_percent"] == 20.0 and gpu["b"]["idle_percent"] is None
    assert (
        gpu["a"]["interference_high_percent"],
        gpu["b"]["interference_low_percent"],
        gpu["b"]["interference_high_percent"],
    ) == (42 / 9, 5.0, 9.0)
    # 50 - 42 .. 90 - 42 ms
    assert (gpu["change"]["interference_low_ns"], gpu["change"]["interference_high_ns"]) == (8 * MS, 48 * MS)
    assert gpu["change"]["busy_points"] is None and gpu["change"]["interference_by_cause_ns"] is None
    hog, irq = gpu["culprits"]
    assert (hog["culprit"], hog["a_high_ns"], hog["b_low_ns"], hog["b_high_ns"]) == (HOSTILE, 30 * MS, 40 * MS, 70 * MS)
    assert (hog["change_low_ns"], hog["change_high_ns"]) == (10 * MS, 40 * MS)
    assert (hog["a_pids"], hog["b_pids"]) == ([7], [8])
    assert (irq["a_low_ns"], irq["b_pids"], irq["change_high_ns"]) == (None, [], 5 * MS)
    console = Console(record=True, width=UNBOUNDED_WIDTH, soft_wrap=True, emoji=False)
    render_gpu_diff(diffed, console)
    text = console.export_text()
    assert "GPU time (A: exact, from GPU activity; B: bounds, from the host (attached with -p))" in text
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in text.splitlines()
        if line.startswith("│")
    }
    assert rows["[bold]hog\\x1b[31m"] == ["30.00 ms", "40.00 ms to 70.00 ms", "+10.00 ms to +40.00 ms"]
    assert rows["irq eth0"] == ["-", "1.00 ms to 5.00 ms", "+1.00 ms to +5.00 ms"]
    assert rows["GPU busy"] == ["80.00%", "-", "-"]
    assert rows["idle caused by interference (preemption, run-queue waits, interrupts), bounds where not exact"] == [
        "42.00 ms (4.67% of 900.00 ms)",
        "50.00 ms to 90.00 ms (5.00 to 9.00% of 1.000 s)",
        "+8.00 ms to +48.00 ms",
    ]
