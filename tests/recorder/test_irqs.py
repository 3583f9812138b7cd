"""IRQ counts agree with the kernel's own counters (/proc/softirqs and
/proc/interrupts, snapshot by the recorder at the window's edges)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event
from tests.conftest import REPO
from tests.recorder import irq_load
from tests.recorder.conftest import cudasim_command, needs_bpf

pytestmark = needs_bpf

# One interrupt may straddle each edge of a read, per CPU and kind.
EDGE_TOLERANCE = 2
# /proc/interrupts row -> the irq_vectors events that count it
VECTOR_ROWS = {
    "LOC": ["LOCAL_TIMER"],
    "RES": ["RESCHEDULE"],
    "CAL": ["CALL_FUNCTION", "CALL_FUNCTION_SINGLE"],
    "IWI": ["IRQ_WORK"],
}


@pytest.fixture(scope="module")
def system_recording(tmp_path_factory):
    import subprocess

    from launchgap.trace import read_trace
    from tests.recorder.conftest import RECORDER

    out = tmp_path_factory.mktemp("irq") / "system.lg"
    # a real block device, not tmpfs: the workload's own directory tree
    load = [sys.executable, str(REPO / "tests" / "recorder" / "irq_load.py"), str(REPO)]
    proc = subprocess.run(
        [str(RECORDER), "-q", "--system", "-o", str(out), "--", *load], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return read_trace(out)


def disk_irq_lines(path: Path) -> set[str]:
    """The interrupt lines of the block device holding PATH, from sysfs: /sys/dev/block/MAJ:MIN (its disk, if a
    partition), up its device's parents to the one that owns interrupts (a PCI function's msi_irqs, or its irq)."""
    dev = os.stat(path).st_dev
    block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    assert block.exists(), f"{path} is not on a block device (st_dev {os.major(dev)}:{os.minor(dev)})"
    if (block / "partition").exists():
        block = block.parent
    device = (block / "device").resolve()
    for node in (device, *device.parents):
        if (node / "msi_irqs").is_dir():
            return {entry.name for entry in (node / "msi_irqs").iterdir()}
        if (node / "irq").is_file() and (node / "irq").read_text().strip() not in ("", "0"):
            return {(node / "irq").read_text().strip()}
    raise AssertionError(f"sysfs names no interrupt line for {block.name} ({device})")


def proc_interrupt_names() -> dict[str, str]:
    """Each numbered line of /proc/interrupts and its action's name (the last column)."""
    names = {}
    for line in Path("/proc/interrupts").read_text().splitlines()[1:]:
        number, _, rest = line.partition(":")
        if number.strip().isdigit() and rest.split():
            names[number.strip()] = rest.split()[-1]
    return names


def deltas(counters: dict, table: str) -> dict[tuple[str, int], int]:
    start, end = counters["start"][table], counters["end"][table]
    return {
        (row, cpu): end["rows"][row][i] - start["rows"][row][i]
        for row in end["rows"]
        if row in start["rows"]
        for i, cpu in enumerate(end["cpus"])
    }


def lost(recording, kind: Event, counter: str | None = None) -> dict[int, int]:
    """Events of one kind the recorder says it lost, per CPU: they are in
    /proc's counts but cannot be in the trace, and the file says so. Ring-buffer
    drops and program skips of that kind count for every row of the table (skips
    have no CPU: they count on every CPU); interrupts the kernel counted but no
    probe saw count for their own /proc row (`counter`)."""
    rows = recording.of(Event.LOST).filter(pl.col("lost_event") == kind)
    cause = pl.col("detail").str.json_path_match("$.cause")
    audited = rows.filter(cause == "not_seen_by_probe")
    general = rows.filter(cause.is_null() | (cause != "not_seen_by_probe"))
    per_cpu = dict(
        general.filter(pl.col("cpu").is_not_null()).group_by("cpu").agg(pl.col("lost_count").sum()).iter_rows()
    )
    anywhere = int(general.filter(pl.col("cpu").is_null())["lost_count"].sum())
    if counter is not None:
        mine = audited.filter(pl.col("detail").str.json_path_match("$.counter") == counter)
        for cpu, count in mine.group_by("cpu").agg(pl.col("lost_count").sum()).iter_rows():
            per_cpu[cpu] = per_cpu.get(cpu, 0) + count
    cpus = recording.meta["topology"]["count"]
    return {cpu: per_cpu.get(cpu, 0) + anywhere for cpu in range(max(cpus, max(per_cpu, default=0) + 1))}


def counted(frame: pl.DataFrame, counters: dict, table: str, keys: list[str]) -> tuple[dict, dict]:
    """Events per key surely inside the kernel's counting window (after the
    start read of `table` finished, before the end read began) and possibly
    inside it (from the start read's beginning to the end read's end)."""
    (start_before, start_after), (end_before, end_after) = (
        counters["start"]["read_ns"][table],
        counters["end"]["read_ns"][table],
    )

    def per_key(lo, hi):
        rows = frame.filter(pl.col("ts_ns").is_between(lo, hi)).group_by(keys).len()
        return {tuple(r[:-1]): r[-1] for r in rows.iter_rows()}

    return per_key(start_after, end_before), per_key(start_before, end_after)


def assert_within(delta: int, surely: int, possibly: int, slack: int, what) -> None:
    assert surely - slack <= delta <= possibly + slack, (what, "kernel", delta, "recorded", surely, possibly)


def test_softirqs_per_vector_and_cpu_equal_proc_softirqs(system_recording):
    counters = system_recording.end["proc_counters"]
    surely, possibly = counted(system_recording.of(Event.SOFTIRQ), counters, "softirqs", ["irq_name", "cpu"])
    expected = deltas(counters, "softirqs")
    for key, delta in expected.items():
        dropped = lost(system_recording, Event.SOFTIRQ, f"/proc/softirqs {key[0]}")
        assert_within(delta, surely.get(key, 0), possibly.get(key, 0), EDGE_TOLERANCE + dropped.get(key[1], 0), key)
    # the load made disk completions and loopback receives
    assert sum(v for (name, _), v in expected.items() if name == "BLOCK") > 100
    assert sum(v for (name, _), v in expected.items() if name == "NET_RX") > 10


def test_hard_irqs_of_numbered_lines_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    hard = system_recording.of(Event.HARDIRQ).with_columns(pl.col("irq").cast(pl.Utf8))
    surely, possibly = counted(hard, counters, "interrupts", ["irq", "cpu"])
    expected = {k: v for k, v in deltas(counters, "interrupts").items() if k[0].isdigit()}
    for key, delta in expected.items():
        dropped = lost(system_recording, Event.HARDIRQ, f"/proc/interrupts {key[0]}")
        assert_within(delta, surely.get(key, 0), possibly.get(key, 0), EDGE_TOLERANCE + dropped.get(key[1], 0), key)
    # the disk's lines, as sysfs names them (not the busiest line: on another host a NIC or a neighbour's
    # device may be busier): each of irq_load's synchronous direct-I/O writes waits for its completion
    # interrupt, so the kernel counted at least that many there; each line's recorded name is its
    # /proc/interrupts name
    disk = disk_irq_lines(REPO)
    on_disk = sum(v for (line, _), v in expected.items() if line in disk)
    assert on_disk >= irq_load.WRITES, (disk, on_disk)
    names = proc_interrupt_names()
    for line in disk:
        recorded = set(hard.filter(pl.col("irq") == line)["irq_name"].unique().to_list())
        kernel = sum(v for (number, _), v in expected.items() if number == line)
        assert recorded == (
            {names[line]}
            if kernel > EDGE_TOLERANCE * len(counters["end"]["interrupts"]["cpus"])
            else recorded & {names[line]}
        ), (line, kernel, recorded, names[line])


def test_system_vectors_equal_proc_interrupts(system_recording):
    counters = system_recording.end["proc_counters"]
    expected = deltas(counters, "interrupts")
    for row, names in VECTOR_ROWS.items():
        dropped = lost(system_recording, Event.IRQ_VECTOR, f"/proc/interrupts {row}")
        vectors = system_recording.of(Event.IRQ_VECTOR).filter(pl.col("irq_name").is_in(names))
        surely, possibly = counted(vectors, counters, "interrupts", ["cpu"])
        for cpu in counters["end"]["interrupts"]["cpus"]:
            assert_within(
                expected[(row, cpu)],
                surely.get((cpu,), 0),
                possibly.get((cpu,), 0),
                EDGE_TOLERANCE + dropped.get(cpu, 0),
                (row, cpu),
            )


def test_target_mode_records_irqs_only_on_cpus_the_target_used(record):
    cpu = sorted(os.sched_getaffinity(0))[0]
    run = record(cudasim_command("--tokens", "60"), preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    irqs = pl.concat([run.trace.of(kind) for kind in (Event.HARDIRQ, Event.SOFTIRQ, Event.IRQ_VECTOR)])
    assert set(irqs["cpu"].to_list()) == {cpu}
    # against the kernel's counters for that CPU over the recording (the recorder's reads at its edges): never
    # more of any kind than the kernel counted; and the timer ticks nearly all there, for the target ran on that
    # CPU from its start (only the moments before its first switch-in, the recorder starting it, are not
    # recorded: a few ms of a run of about 400)
    counters = run.trace.end["proc_counters"]
    softirqs, interrupts = deltas(counters, "softirqs"), deltas(counters, "interrupts")
    for name, delta in ((name, d) for (name, c), d in softirqs.items() if c == cpu):
        _, possibly = counted(
            run.trace.of(Event.SOFTIRQ).filter(pl.col("irq_name") == name), counters, "softirqs", ["cpu"]
        )
        assert possibly.get((cpu,), 0) <= delta + EDGE_TOLERANCE, (name, delta, possibly)
    for row, names in VECTOR_ROWS.items():
        vectors = run.trace.of(Event.IRQ_VECTOR).filter(pl.col("irq_name").is_in(names))
        _, possibly = counted(vectors, counters, "interrupts", ["cpu"])
        assert possibly.get((cpu,), 0) <= interrupts[(row, cpu)] + EDGE_TOLERANCE, (row, interrupts[(row, cpu)])
    ticks = run.trace.of(Event.IRQ_VECTOR).filter(pl.col("irq_name") == "LOCAL_TIMER").height
    assert interrupts[("LOC", cpu)] - EDGE_TOLERANCE <= 2 * ticks, (ticks, interrupts[("LOC", cpu)])
    # including interrupts that landed while something else (or the idle task) was current
    targets = {t["tid"] for p in run.truth["processes"] for t in p["threads"]}
    assert irqs.filter(~pl.col("tid").is_in(list(targets))).height > 0


def test_interrupts_no_probe_saw_are_recorded_and_not_overcounted(system_recording):
    """The recorder's audit: a `lost` row (cause not_seen_by_probe) for what the
    kernel counted beyond what reached the probes. Never more than the kernel's
    count less what the trace holds in the kernel's window. Checked for every
    counter the kernel has (so the check runs whether or not this recording
    lost any: most do not), and every audit row names one of them."""
    counters = system_recording.end["proc_counters"]
    audit = system_recording.of(Event.LOST).filter(
        pl.col("detail").str.json_path_match("$.cause") == "not_seen_by_probe"
    )
    assert audit["since_ns"].max() is None or audit["since_ns"].max() <= counters["start"]["read_ns"]["softirqs"][0]
    claimed: dict[tuple[str, int], int] = {}
    for row in audit.iter_rows(named=True):
        key = (json.loads(row["detail"])["counter"], row["cpu"])
        claimed[key] = claimed.get(key, 0) + row["lost_count"]
    hard = system_recording.of(Event.HARDIRQ).with_columns(pl.col("irq").cast(pl.Utf8))
    checked = 0
    for table, frame, keys in (
        ("softirqs", system_recording.of(Event.SOFTIRQ), ["irq_name", "cpu"]),
        ("interrupts", hard, ["irq", "cpu"]),
    ):
        surely, _ = counted(frame, counters, table, keys)
        for (name, cpu), kernel in deltas(counters, table).items():
            if table == "interrupts" and not name.isdigit():
                continue
            lost_here = claimed.pop((f"/proc/{table} {name}", cpu), 0)
            assert surely.get((name, cpu), 0) + lost_here <= kernel + EDGE_TOLERANCE, (table, name, cpu)
            checked += 1
    expected = deltas(counters, "interrupts")
    for row, names in VECTOR_ROWS.items():
        surely, _ = counted(
            system_recording.of(Event.IRQ_VECTOR).filter(pl.col("irq_name").is_in(names)),
            counters,
            "interrupts",
            ["cpu"],
        )
        for cpu in counters["end"]["interrupts"]["cpus"]:
            lost_here = claimed.pop((f"/proc/interrupts {row}", cpu), 0)
            assert surely.get((cpu,), 0) + lost_here <= expected[(row, cpu)] + EDGE_TOLERANCE, (row, cpu)
            checked += 1
    assert claimed == {}, "audit rows naming no counter the kernel has"
    softirq_rows = len(counters["end"]["softirqs"]["rows"]) * len(counters["end"]["softirqs"]["cpus"])
    assert checked >= softirq_rows + len(VECTOR_ROWS) * len(counters["end"]["interrupts"]["cpus"])


def test_a_longer_recording_accounts_for_every_interrupt_the_kernel_counted(tmp_path):
    """Three seconds of everything: every interrupt /proc counted on every CPU is in the trace
    or in a lost row that says why. (Here the sandbox's agent, PID 1, makes a few a second
    invisible to every tracer, which once vanished without a word.)"""
    import subprocess

    from launchgap.trace import read_trace
    from tests.recorder.conftest import RECORDER

    out = tmp_path / "system.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "--system", "-o", str(out), "--", "sleep", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    counters = trace.end["proc_counters"]
    checked = 0
    for table, frame, keys in (
        ("softirqs", trace.of(Event.SOFTIRQ), ["irq_name", "cpu"]),
        ("interrupts", trace.of(Event.HARDIRQ).with_columns(pl.col("irq").cast(pl.Utf8)), ["irq", "cpu"]),
    ):
        surely, possibly = counted(frame, counters, table, keys)
        for (row, cpu), delta in deltas(counters, table).items():
            if table == "interrupts" and not row.isdigit():
                continue
            kind = Event.SOFTIRQ if table == "softirqs" else Event.HARDIRQ
            slack = EDGE_TOLERANCE + lost(trace, kind, f"/proc/{table} {row}").get(cpu, 0)
            assert_within(delta, surely.get((row, cpu), 0), possibly.get((row, cpu), 0), slack, (row, cpu))
            checked += 1
    expected = deltas(counters, "interrupts")
    for row, names in VECTOR_ROWS.items():
        vectors = trace.of(Event.IRQ_VECTOR).filter(pl.col("irq_name").is_in(names))
        surely, possibly = counted(vectors, counters, "interrupts", ["cpu"])
        for cpu in counters["end"]["interrupts"]["cpus"]:
            slack = EDGE_TOLERANCE + lost(trace, Event.IRQ_VECTOR, f"/proc/interrupts {row}").get(cpu, 0)
            assert_within(expected[(row, cpu)], surely.get((cpu,), 0), possibly.get((cpu,), 0), slack, (row, cpu))
            checked += 1
    assert checked > 20
