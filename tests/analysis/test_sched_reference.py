"""The fast scheduling analysis (thread segments, run slices, culprits, migration waits, silent tasks:
numpy over one stable sort) against two kinds of reference:

- truths: a trace built to hold every thread-state rule, each thread's states, switches and migration
  waits worked out by hand below; and a real recording of cudasim, each thread's switches against the
  kernel's own counters (cudasim's truth.json, `kernel_switches`);
- regression checks, not truths: exactly the frames and report JSON of the polars implementation it
  replaced (tests/analysis/reference_sched.py, the product's earlier code kept verbatim), on those traces
  and on seeded busy ones. The same regression check on a real --system recording of workloads/storm is
  tests/recorder/test_storm_reference.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from tests.analysis.builder import IDLE, TraceBuilder
from tests.analysis.reference_sched import assert_same_as_reference
from tests.analysis.test_bounded_report import HOG, busy_trace
from tests.recorder.conftest import RECORDER, assert_switches_as_the_kernel_counted, cudasim_command, needs_bpf

REPO = Path(__file__).resolve().parents[2]
A, B, CHILD = (100, 101, "launcher-a"), (100, 102, "launcher-b"), (100, 103, "worker")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regression_busy_traces_match_the_earlier_implementation(tmp_path, seed, monkeypatch):
    report = assert_same_as_reference(busy_trace(seed).write(tmp_path / "t.lg", batch_rows=53), monkeypatch)
    # the comparison had culprits to compare: the busy trace's hog preempts each launcher
    assert {c["pid"] for c in report["taken"]["culprits"]} >= {HOG[0]}


def every_rule_trace() -> TraceBuilder:
    """Preemption, blocking and wakeups, migrations while waiting (one inside a wait, one while running),
    a thread born by fork, one that dies, one seen first by a wakeup and one by a switch-in, and several
    events of one thread at the same nanosecond."""
    b = TraceBuilder(start_ns=1_000, end_ns=10_000_000)
    b.switch(2_000, 0, A, HOG)  # A seen first switched out: running before
    b.wakeup(3_000, B, 1)  # B seen first woken: blocked before
    b.switch(4_000, 1, IDLE, B)
    b.migrate(5_000, A, 0, 1)  # A waits (preempted) and moves: a wait with a migration
    b.switch(6_000, 1, B, A)
    b.switch(6_000, 0, HOG, IDLE)
    b.wakeup(7_000, B, 0)  # woken while still runnable: stays preempted
    b.switch(8_000, 0, IDLE, B)
    b.migrate(9_000, B, 0, 1)  # while running: no wait
    b.fork(10_000, 1, A, CHILD)
    b.wakeup(10_000, CHILD, 0, new=True)
    b.switch(10_000, 0, B, CHILD)  # B preempted at the child's wakeup time
    b.switch(12_000, 0, CHILD, B, voluntary=True)
    b.switch(13_000, 1, A, HOG, voluntary=True)  # A blocks
    b.wakeup(15_000, A, 1)  # and waits on the run queue behind the hog
    b.migrate(16_000, A, 1, 0)
    b.switch(17_000, 0, B, A)
    b.switch(18_000, 0, A, IDLE, dead=True)  # A dies
    b.switch(20_000, 1, HOG, IDLE)
    b.launch(21_000, 0, B)
    return b


# Worked out by hand from every_rule_trace (the trace runs from 1,000 to 10,000,000 ns):
# A  running 1,000-2,000; preempted by the hog 2,000-6,000 (moved 0->1 at 5,000); running 6,000-13,000;
#    blocked 13,000-15,000; on the run queue 15,000-17,000 (moved 1->0 at 16,000); running 17,000-18,000;
#    dead at 18,000. Waits holding a migration: 4,000 + 2,000.
# B  blocked 1,000-3,000 (seen first woken); run queue 3,000-4,000; running 4,000-6,000; preempted 6,000-8,000
#    (the wakeup at 7,000 changes nothing); running 8,000-10,000 (moved at 9,000, while running: no wait);
#    preempted by the child 10,000-12,000; running 12,000-17,000; preempted 17,000 to the end.
# CHILD  born 10,000; running 10,000-12,000; blocked 12,000 to the end.
EVERY_RULE_THREADS = {
    A[1]: {
        "lifetime_ns": 17_000,
        "running_ns": 9_000,
        "blocked_ns": 2_000,
        "preempted_ns": 4_000,
        "runqueue_ns": 2_000,
        "preempted_switches": 1,
        "blocked_switches": 2,
        "migrations": 2,
        "runnable_around_migrations_ns": 6_000,
    },
    B[1]: {
        "lifetime_ns": 9_999_000,
        "running_ns": 9_000,
        "blocked_ns": 2_000,
        "preempted_ns": 9_987_000,
        "runqueue_ns": 1_000,
        "preempted_switches": 3,
        "blocked_switches": 0,
        "migrations": 1,
        "runnable_around_migrations_ns": 0,
    },
    CHILD[1]: {
        "lifetime_ns": 9_990_000,
        "running_ns": 2_000,
        "blocked_ns": 9_988_000,
        "preempted_ns": 0,
        "runqueue_ns": 0,
        "preempted_switches": 0,
        "blocked_switches": 1,
        "migrations": 0,
        "runnable_around_migrations_ns": 0,
    },
}


def test_every_rule_gives_the_states_worked_out_by_hand(tmp_path, monkeypatch):
    report = assert_same_as_reference(every_rule_trace().write(tmp_path / "t.lg"), monkeypatch)
    threads = {t["tid"]: {k: t[k] for k in EVERY_RULE_THREADS[A[1]]} for t in report["taken"]["threads"]}
    assert threads == EVERY_RULE_THREADS
    # the targets' switch-outs: A at 2,000, 13,000, 18,000; B at 6,000, 10,000, 17,000; the child at 12,000
    assert report["overview"]["switches"] == 7


@needs_bpf
def test_a_real_recording_matches_the_kernels_counters_and_the_earlier_implementation(tmp_path, monkeypatch):
    """cudasim, two launching threads sharing one CPU: each thread's switches in the report, preempted and
    blocked, as the kernel counted them (nonvoluntary and voluntary, read as the thread finished); and the
    regression check against the earlier implementation on a trace as the recorder writes it."""
    import json
    import os

    out, truth_path = tmp_path / "run.lg", tmp_path / "truth.json"
    cpu = sorted(os.sched_getaffinity(0))[0]
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
            "-o",
            str(out),
            "--",
            *cudasim_command("--tokens", "10", "--threads", "2", "--host-us", "800", "--truth", str(truth_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    report = assert_same_as_reference(trace, monkeypatch)
    threads = {t["tid"]: t for p in json.loads(truth_path.read_text())["processes"] for t in p["threads"]}
    reported = {t["tid"]: t for t in report["taken"]["threads"]}
    switches = trace.of(Event.SWITCH)
    assert len(threads) == 2
    for tid, thread in threads.items():
        mine = switches.filter(pl.col("tid") == tid)
        assert_switches_as_the_kernel_counted(mine, thread["kernel_switches"])
        assert (reported[tid]["preempted_switches"], reported[tid]["blocked_switches"]) == (
            mine.filter(~pl.col("voluntary")).height,
            mine.filter(pl.col("voluntary")).height,
        )
