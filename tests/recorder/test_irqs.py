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

# One interrupt may straddle each edge of the window, per CPU and kind.
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


def in_window(frame: pl.DataFrame, counters: dict) -> pl.DataFrame:
    return frame.filter(pl.col("ts_ns").is_between(counters["start"]["monotonic_ns"], counters["end"]["monotonic_ns"]))


def test_softirqs_per_vector_and_cpu_equal_proc_softirqs(system_recording):
    counters = system_recording.end["proc_counters"]
    recorded = dict(((name, cpu), n) for name, cpu, n in
                    in_window(system_recording.of("softirq"), counters).group_by("irq_name", "cpu").len().iter_rows())
    expected = deltas(counters, "softirqs")
    for key, delta in expected.items():
        assert abs(recorded.get(key, 0) - delta) <= EDGE_TOLERANCE, (key, delta, recorded.get(key, 0))
    # the load made disk completions and loopback receives
    assert sum(v for (name, _), v in expected.items() if name == "BLOCK") > 100
    assert sum(v for (name, _), v in expected.items() if name == "NET_RX") > 10


def test_hard_irqs_of_numbered_lines_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    hard = in_window(system_recording.of("hardirq"), counters)
    recorded = {(str(irq), cpu): n for irq, cpu, n in hard.group_by("irq", "cpu").len().iter_rows()}
    expected = {k: v for k, v in deltas(counters, "interrupts").items() if k[0].isdigit()}
    for key, delta in expected.items():
        assert abs(recorded.get(key, 0) - delta) <= EDGE_TOLERANCE, (key, delta, recorded.get(key, 0))
    busiest = max(expected, key=expected.get)
    assert expected[busiest] > 100, "the direct I/O should have raised the disk's interrupt line"
    assert hard.filter(pl.col("irq") == int(busiest[0]))["irq_name"].unique().len() == 1


def test_system_vectors_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    vectors = in_window(system_recording.of("irq_vector"), counters)
    expected = deltas(counters, "interrupts")
    for row, names in VECTOR_ROWS.items():
        for cpu in counters["end"]["interrupts"]["cpus"]:
            got = vectors.filter(pl.col("irq_name").is_in(names) & (pl.col("cpu") == cpu)).height
            assert abs(got - expected[(row, cpu)]) <= EDGE_TOLERANCE, (row, cpu, expected[(row, cpu)], got)


def test_target_mode_records_irqs_only_on_cpus_the_target_used(record):
    cpu = sorted(os.sched_getaffinity(0))[0]
    run = record(cudasim_command("--tokens", "60"), preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    irqs = pl.concat([run.trace.of(kind) for kind in ("hardirq", "softirq", "irq_vector")])
    assert irqs.height > 0
    assert set(irqs["cpu"].to_list()) == {cpu}
    # including interrupts that landed while something else (or the idle task) was current
    targets = {t["tid"] for p in run.truth["processes"] for t in p["threads"]}
    assert irqs.filter(~pl.col("tid").is_in(list(targets))).height > 0
