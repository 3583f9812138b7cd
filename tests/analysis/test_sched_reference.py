"""The fast scheduling analysis (thread segments, run slices, culprits, migration waits, silent tasks:
numpy over one stable sort) gives exactly the frames and report JSON of the polars implementation it
replaced (tests/analysis/reference_sched.py), on seeded busy traces, a trace built to hold every
thread-state rule, and a real recording (tests/data/format1-cudasim.lg). The same check on a real
--system recording of workloads/storm is tests/recorder/test_storm_reference.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchgap.trace import read_trace
from tests.analysis.builder import IDLE, TraceBuilder
from tests.analysis.reference_sched import assert_same_as_reference
from tests.analysis.test_bounded_report import HOG, busy_trace

REPO = Path(__file__).resolve().parents[2]
A, B, CHILD = (100, 101, "launcher-a"), (100, 102, "launcher-b"), (100, 103, "worker")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_busy_traces_match_the_reference(tmp_path, seed, monkeypatch):
    report = assert_same_as_reference(busy_trace(seed).write(tmp_path / "t.lg", batch_rows=53), monkeypatch)
    assert report["taken"]["culprits"], "the busy trace's hog preempts the launchers: culprits to compare"


def every_rule_trace() -> TraceBuilder:
    """Preemption, blocking and wakeups, migrations while waiting (one inside a wait, one while running),
    a thread born by fork, one that dies, one seen first by a wakeup and one by a switch-in, and several
    events of one thread at the same nanosecond."""
    b = TraceBuilder(start_ns=1_000, end_ns=10_000_000)
    b.switch(2_000, 0, A, HOG)                      # A seen first switched out: running before
    b.wakeup(3_000, B, 1)                           # B seen first woken: blocked before
    b.switch(4_000, 1, IDLE, B)
    b.migrate(5_000, A, 0, 1)                       # A waits (preempted) and moves: a wait with a migration
    b.switch(6_000, 1, B, A)
    b.switch(6_000, 0, HOG, IDLE)
    b.wakeup(7_000, B, 0)                           # woken while still runnable: stays preempted
    b.switch(8_000, 0, IDLE, B)
    b.migrate(9_000, B, 0, 1)                       # while running: no wait
    b.fork(10_000, 1, A, CHILD)
    b.wakeup(10_000, CHILD, 0, new=True)
    b.switch(10_000, 0, B, CHILD)                   # B preempted at the child's wakeup time
    b.switch(12_000, 0, CHILD, B, voluntary=True)
    b.switch(13_000, 1, A, HOG, voluntary=True)     # A blocks
    b.wakeup(15_000, A, 1)                          # and waits on the run queue behind the hog
    b.migrate(16_000, A, 1, 0)
    b.switch(17_000, 0, B, A)
    b.switch(18_000, 0, A, IDLE, dead=True)         # A dies
    b.switch(20_000, 1, HOG, IDLE)
    b.launch(21_000, 0, B)
    return b


def test_every_rule_matches_the_reference(tmp_path, monkeypatch):
    report = assert_same_as_reference(every_rule_trace().write(tmp_path / "t.lg"), monkeypatch)
    threads = {t["tid"]: t for t in report["taken"]["threads"]}
    assert threads[A[1]]["migrations"] == 2
    assert threads[A[1]]["runnable_around_migrations_ns"] > 0


def test_a_real_recording_matches_the_reference(monkeypatch):
    report = assert_same_as_reference(read_trace(REPO / "tests" / "data" / "format1-cudasim.lg"), monkeypatch)
    assert report["overview"]["switches"] > 0
