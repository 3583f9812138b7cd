"""IRQ counts agree with the kernel's own counters (/proc/softirqs and
/proc/interrupts, snapshot by the recorder at the window's edges)."""

from __future__ import annotations

import os
import sys

import polars as pl
import pytest

from tests.conftest import REPO
from tests.recorder.conftest import cudasim_command, needs_bpf

pytestmark = needs_bpf

# One interrupt may straddle each edge of a read, per CPU and kind.
EDGE_TOLERANCE = 2
# /proc/interrupts row -> the irq_vectors events that count it
VECTOR_ROWS = {"LOC": ["LOCAL_TIMER"], "RES": ["RESCHEDULE"], "CAL": ["CALL_FUNCTION", "CALL_FUNCTION_SINGLE"],
               "IWI": ["IRQ_WORK"]}


@pytest.fixture(scope="module")
def system_recording(tmp_path_factory):
    from tests.recorder.conftest import RECORDER
    import subprocess
    from launchgap.trace import read_trace

    out = tmp_path_factory.mktemp("irq") / "system.lg"
    # a real block device, not tmpfs: the workload's own directory tree
    load = [sys.executable, str(REPO / "tests" / "recorder" / "irq_load.py"), str(REPO)]
    proc = subprocess.run([str(RECORDER), "-q", "--system", "-o", str(out), "--", *load],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return read_trace(out)


def deltas(counters: dict, table: str) -> dict[tuple[str, int], int]:
    start, end = counters["start"][table], counters["end"][table]
    return {(row, cpu): end["rows"][row][i] - start["rows"][row][i]
            for row in end["rows"] if row in start["rows"] for i, cpu in enumerate(end["cpus"])}


def lost(recording, kind: str) -> dict[int, int]:
    """Events of one kind the recorder says it lost, per CPU: they are in
    /proc's counts but cannot be in the trace, and the file says so."""
    rows = recording.lost.filter(pl.col("lost_event") == kind).group_by("cpu").agg(pl.col("lost_count").sum())
    return dict(rows.iter_rows())


def counted(frame: pl.DataFrame, counters: dict, table: str, keys: list[str]) -> tuple[dict, dict]:
    """Events per key surely inside the kernel's counting window (after the
    start read of `table` finished, before the end read began) and possibly
    inside it (from the start read's beginning to the end read's end)."""
    (start_before, start_after), (end_before, end_after) = (counters["start"]["read_ns"][table],
                                                            counters["end"]["read_ns"][table])
    def per_key(lo, hi):
        rows = frame.filter(pl.col("ts_ns").is_between(lo, hi)).group_by(keys).len()
        return {tuple(r[:-1]): r[-1] for r in rows.iter_rows()}
    return per_key(start_after, end_before), per_key(start_before, end_after)


def assert_within(delta: int, surely: int, possibly: int, slack: int, what) -> None:
    assert surely - slack <= delta <= possibly + slack, (what, "kernel", delta, "recorded", surely, possibly)


def test_softirqs_per_vector_and_cpu_equal_proc_softirqs(system_recording):
    counters = system_recording.end["proc_counters"]
    surely, possibly = counted(system_recording.of("softirq"), counters, "softirqs", ["irq_name", "cpu"])
    expected = deltas(counters, "softirqs")
    dropped = lost(system_recording, "softirq")
    for key, delta in expected.items():
        assert_within(delta, surely.get(key, 0), possibly.get(key, 0), EDGE_TOLERANCE + dropped.get(key[1], 0), key)
    # the load made disk completions and loopback receives
    assert sum(v for (name, _), v in expected.items() if name == "BLOCK") > 100
    assert sum(v for (name, _), v in expected.items() if name == "NET_RX") > 10


def test_hard_irqs_of_numbered_lines_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    hard = system_recording.of("hardirq").with_columns(pl.col("irq").cast(pl.Utf8))
    surely, possibly = counted(hard, counters, "interrupts", ["irq", "cpu"])
    expected = {k: v for k, v in deltas(counters, "interrupts").items() if k[0].isdigit()}
    dropped = lost(system_recording, "hardirq")
    for key, delta in expected.items():
        assert_within(delta, surely.get(key, 0), possibly.get(key, 0), EDGE_TOLERANCE + dropped.get(key[1], 0), key)
    busiest = max(expected, key=expected.get)
    assert expected[busiest] > 100, "the direct I/O should have raised the disk's interrupt line"
    assert hard.filter(pl.col("irq") == busiest[0])["irq_name"].unique().len() == 1


def test_system_vectors_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    expected = deltas(counters, "interrupts")
    dropped = lost(system_recording, "irq_vector")
    for row, names in VECTOR_ROWS.items():
        vectors = system_recording.of("irq_vector").filter(pl.col("irq_name").is_in(names))
        surely, possibly = counted(vectors, counters, "interrupts", ["cpu"])
        for cpu in counters["end"]["interrupts"]["cpus"]:
            assert_within(expected[(row, cpu)], surely.get((cpu,), 0), possibly.get((cpu,), 0),
                          EDGE_TOLERANCE + dropped.get(cpu, 0), (row, cpu))


def test_target_mode_records_irqs_only_on_cpus_the_target_used(record):
    cpu = sorted(os.sched_getaffinity(0))[0]
    run = record(cudasim_command("--tokens", "60"), preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    irqs = pl.concat([run.trace.of(kind) for kind in ("hardirq", "softirq", "irq_vector")])
    assert irqs.height > 0
    assert set(irqs["cpu"].to_list()) == {cpu}
    # including interrupts that landed while something else (or the idle task) was current
    targets = {t["tid"] for p in run.truth["processes"] for t in p["threads"]}
    assert irqs.filter(~pl.col("tid").is_in(list(targets))).height > 0
