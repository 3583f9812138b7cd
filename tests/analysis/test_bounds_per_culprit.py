"""Bounds mode (no GPU activity), issue 34 item 6: each culprit gets a lower bound of its own (the repeated steps'
bound with only its delays taken out), and no culprit's upper bound is over the GPU's active span, not even in a
trace without its switch table (a woken thread never runs again there: two such threads printed 0-200.54%).

Hand-built traces whose every number is set below; the answers are worked out by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from launchgap.analysis.records import GpuTimeBounds
from launchgap.analysis.report import build_report
from launchgap.views.verdict_words import verdict_text
from tests.analysis.builder import IDLE, TraceBuilder

APP = (100, 100, "decode")  # the launching thread, CPU 1
HOG = (200, 200, "hog")
CC1 = (300, 300, "cc1")
RECORDER = (999, 999, "trace-writer")  # meta.json's recorder_pid

# One step of the decode loop, from the drain sync's return at x (nothing delayed): launch 1 at x+100, launch 2 at
# x+600, the drain sync entered at x+700 (the thread blocks). On the GPU (which the host does not see): kernel 1 from
# its launch + 50 for 1000 ns, kernel 2 after it, or from its launch + 50, for 100 ns. So kernel 1 runs
# [x+150, x+1150), kernel 2 [x+1150, x+1250): the GPU is done at x+1250, the thread is woken then, runs at x+1300
# (its CPU idled: wake-up latency, 50 ns), and the sync returns at x+1350, where the next step starts.
#
# Eight steps; the delays (each a preemption of the launching thread, the culprit blocking after its turn):
#   step 3: the hog, 700 ns between the launches [x+200, x+900): launch 2 at x+1300, kernel 2 [x+1350, x+1450),
#           the GPU done at x+1450: 500 of the 700 were hidden behind kernel 1, 200 cost the GPU; step 1550 ns
#   step 5: cc1, 300 ns between the launches: launch 2 at x+900, kernel 2 still [x+1150, x+1250): all hidden
#   step 6: the hog, 100 ns in the drained window before launch 1 [x+20, x+120): everything 100 later, all of it
#           cost; step 1450 ns
#   step 7: the recorder, 700 ns between the launches, as in step 3 (200 of it would cost): measuring, not
#           interference
# Steps 0, 1, 2, 4 and 5 take 1350 ns each. From x = 10 000 the steps start at 10 000, 11 350, 12 700, 14 050,
# 15 600, 16 950, 18 300, 19 750; the first launch is at 10 100, the last (step 7's second) at 19 750 + 1300 =
# 21 050: the active span is 10 950 ns.
PLAN = [
    None,
    None,
    None,
    ("between", HOG, 700),
    None,
    ("between", CC1, 300),
    ("window", HOG, 100),
    ("between", RECORDER, 700),
]


def decode_beside_culprits() -> TraceBuilder:
    b = TraceBuilder(start_ns=1000, end_ns=40_000, meta_extra={"recorder_pid": 999})
    b.switch(5000, 1, IDLE, APP)

    def preempt(start: int, who, ns: int) -> None:
        b.switch(start, 1, APP, who)
        b.switch(start + ns, 1, who, APP, voluntary=True)

    x = 10_000
    for delay in PLAN:
        where, who, ns = delay or (None, None, 0)
        before = ns if where == "window" else 0
        between = ns if where == "between" else 0
        if before:
            preempt(x + 20, who, ns)
        a1 = x + 100 + before
        if between:
            preempt(a1 + 100, who, ns)
        a2 = a1 + 500 + between
        b.launch(a1, 1, APP)
        b.launch(a2, 1, APP)
        entry = a2 + 100
        done = max(a1 + 50 + 1000, a2 + 50) + 100  # kernel 2's end
        b.switch(entry, 1, APP, IDLE, voluntary=True)
        b.wakeup(done, APP, 1)
        b.switch(done + 50, 1, IDLE, APP)
        b.sync(entry, 1, APP, done + 100 - entry)
        x = done + 100
    assert x == 21_300  # the last step's return: 19 750 + 1550
    b.switch(x + 500, 1, APP, IDLE, dead=True)
    return b


# The repeated steps' bound (docs/gpu-time.md), over steps 2..7 (the first two are the start-up): the work left
# after launch 1 is R1 = min over steps of (end - a1) = 1150 (a plain step: 1250 - 100), after launch 2
# R2 = min(end - a2) = 150 (step 3 or 7: 1450 - 1300). Without its delays a step would end by
# max(a1 - D1 + R1, a2 - D2 + R2, sync entry - D): step 3 (D1 = 0, D2 = D = 700): max(x+1250, x+750, x+700) = x+1250
# against x+1450: 200. Step 5 (D2 = 300): max(x+1250, x+750, x+700) against x+1250: 0. Step 6 (D1 = D2 = D = 100):
# max(x+1250, x+750, x+700) against x+1350: 100. Step 7's delay is the recorder's: not taken out, 0.
# Lower bound 300; upper bound, the delays' length: 700 + 300 + 100 = 1100.
# Each culprit's own: the hog 200 + 100 = 300 of its 800 (the drained window alone gave it 100); cc1 0 of its 300.


def test_each_culprit_has_its_own_lower_bound(tmp_path):
    g = build_report(decode_beside_culprits().write(tmp_path / "t.lg")).gpu_time
    assert isinstance(g, GpuTimeBounds)
    assert g.note == "the lower bound from 6 steps that repeat launch for launch"
    assert (g.active_ns, g.interference_low_ns, g.interference_high_ns) == (10_950, 300, 1100)
    for rows in (g.culprits, g.culprits_by_process):
        assert [(c.name, c.pids, c.low_ns, c.high_ns, c.causes) for c in rows] == [
            ("hog", [200], 300, 800, {"preempted": 800}),
            ("cc1", [300], 0, 300, {"preempted": 300}),
        ]
        # nobody else waited for CPU 1: taking a culprit away gives the thread all of it, in the same bounds
        assert [(c.recoverable_low_ns, c.recoverable_high_ns) for c in rows] == [(300, 800), (0, 300)]
        assert [c.share_percent for c in rows] == [pytest.approx(100 * 800 / 1100), pytest.approx(100 * 300 / 1100)]


def test_measurement_and_wakeup_latency_stay_out_of_the_bounds_and_the_prediction(tmp_path):
    report = build_report(decode_beside_culprits().write(tmp_path / "t.lg"))
    g = report.gpu_time
    # the recorder's 700 ns are measuring's; the 50 ns the thread waited for idle CPU 1 after each of 8 wakeups,
    # wake-up latency: neither a culprit
    assert [(t.name, t.pid, t.ns) for t in g.measurement.tasks] == [("trace-writer", 999, 700)]
    assert (g.measurement.tasks_low_ns, g.measurement.tasks_high_ns) == (0, 700)
    assert (g.wakeup_latency_low_ns, g.wakeup_latency_high_ns) == (0, 400)
    assert {c.name for c in g.culprits} == {"hog", "cc1"}
    # 8 steps (each drain ends the step's two launches) over 10 950 ns; without the interference's 300 to 1100 ns,
    # over 10 650 to 9 850 ns
    p = g.prediction
    assert (p.basis, p.steps) == ("steps", 8)
    assert p.measured_per_s == pytest.approx(8 / 10_950e-9)
    assert (p.predicted_low_per_s, p.predicted_high_per_s) == (
        pytest.approx(8 / 10_650e-9),
        pytest.approx(8 / 9_850e-9),
    )
    assert (p.gain_low_percent, p.gain_high_percent) == (
        pytest.approx(100 * (10_950 / 10_650 - 1)),
        pytest.approx(100 * (10_950 / 9_850 - 1)),
    )
    # 300 and 1100 of 10 950: 2.74% (light) to 10.05% (heavy), so uncertain
    assert report.verdict.level == "uncertain"
    assert (report.verdict.gpu_idle_low_percent, report.verdict.gpu_idle_high_percent) == (
        pytest.approx(100 * 300 / 10_950),
        pytest.approx(100 * 1100 / 10_950),
    )
    text = verdict_text(report.verdict)
    assert "between 300 ns and 1 us of its 11 us of work" in text
    assert "Most of it was hog (pid 200): 300 ns to 800 ns" in text
    assert "trace-writer" not in text and "swapper" not in text


# ---- a trace without its switch table ----------------------------------------------------------------------


def without_switches() -> TraceBuilder:
    """Two launching threads of one process, woken at 1200 and never seen to run (no switch rows): each is taken to
    wait in the run queue from its wakeup to the end, 98 800 ns, with nobody known running. They launch every
    10 000 ns, A at 2000 .. 82 000, B 500 after: the active span is [2000, 82 500], 80 500 ns, and each thread's
    delays inside its launches' span are 80 000 ns, 160 000 together: twice the span."""
    a, b_ = (100, 100, "a"), (100, 101, "b")
    b = TraceBuilder(start_ns=1000, end_ns=100_000)
    b.fork(1100, 0, a, b_)
    b.wakeup(1200, a, 0)
    b.wakeup(1200, b_, 1)
    for t in range(2000, 90_000, 10_000):
        b.launch(t, 0, a)
        b.launch(t + 500, 1, b_)
    b.cgroup(1000, "v2", 5, "/system.slice/app.service")
    b.task_cgroup(1000, 0, a, 5)
    b.task_cgroup(1000, 0, b_, 5)
    return b


def test_no_culprits_bound_is_over_the_span(tmp_path):
    report = build_report(without_switches().write(tmp_path / "t.lg"))
    g = report.gpu_time
    assert isinstance(g, GpuTimeBounds) and g.active_ns == 80_500
    assert (g.interference_low_ns, g.interference_high_ns) == (0, 80_500)
    # one culprit (nobody known), its 160 000 ns of delays at most the span: 80 500, all the interference
    for rows in (g.culprits, g.culprits_by_process):
        assert [
            (
                c.name,
                c.pids,
                c.low_ns,
                c.high_ns,
                c.share_percent,
                c.causes,
                c.recoverable_low_ns,
                c.recoverable_high_ns,
            )
            for c in rows
        ] == [(None, [], 0, 80_500, 100.0, {"runqueue": 80_500}, 0, 80_500)]
    assert [(c.name, c.low_ns, c.high_ns, c.recoverable_high_ns) for c in g.culprits_by_cgroup] == [
        ("no task known", 0, 80_500, 80_500)
    ]
    assert (report.verdict.gpu_idle_low_percent, report.verdict.gpu_idle_high_percent) == (0.0, 100.0)
    assert "Most of it was an unnamed task: 0 ns to 80 us, 100% of it." in verdict_text(report.verdict)


def test_bounds_that_meet_are_said_as_one_figure():
    """Estimated from the host, a lower bound equal to the upper is the figure: never "between 6 us and 6 us
    (13.19%-13.19%)"."""
    from launchgap.analysis.records import Verdict
    from launchgap.analysis.verdict import gpu_verdict

    cpu = Verdict(
        level="light",
        taken_percent=2.0,
        taken_ns=6_000,
        main_cause="preemption",
        recoverable_ns=0,
        grounds=None,  # the GPU-time verdict rests on grounds of its own
    )
    g = GpuTimeBounds(
        why="attached with -p",
        interference_low_ns=6_000,
        interference_high_ns=6_000,
        culprits=[],
        cpu_interference_ns=6_000,
        hidden_low_ns=0,
        hidden_high_ns=0,
        active_ns=45_500,
        prediction=None,
        note=None,
        culprits_by_cgroup=None,
        culprits_by_process=[],
        measurement=None,
        wakeup_latency_low_ns=0,
        wakeup_latency_high_ns=0,
    )
    text = verdict_text(gpu_verdict(cpu, g))
    assert text.startswith(
        "The GPU lost 6 us of its 46 us of work to interference (13.19%; estimated from the "
        "host, whose bounds meet: attached with -p): heavy"
    ), text
    # as they are printed: 5.6 us and 6 us both read "6 us"
    close = verdict_text(gpu_verdict(cpu, dataclasses.replace(g, interference_low_ns=5_600)))
    assert close.startswith(
        "The GPU lost 6 us of its 46 us of work to interference (13.19%; estimated from the host, whose bounds meet"
    ), close
    apart = verdict_text(gpu_verdict(cpu, dataclasses.replace(g, interference_low_ns=5_000)))
    assert apart.startswith(
        "The GPU lost between 5 us and 6 us of its 46 us of work to interference "
        "(10.99%-13.19%; estimated from the host: attached with -p)"
    ), apart
