"""The report on hand-built traces whose every metric is worked out here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from launchgap.trace import Event
from launchgap.views.report_json import report_json
from tests.analysis.builder import IDLE, TraceBuilder

T = (100, 101, "gpu-launcher")  # the workload's launching thread
HOG = (200, 200, "hog")
OTHER = (300, 300, "other")
BUSY = (400, 400, "busy")
CHILD = (100, 102, "gpu-helper")  # a thread the workload starts mid-trace


def thread(report: dict, tid: int) -> dict:
    return next(t for t in report["taken"]["threads"] if t["tid"] == tid)


def test_preempted_and_blocked_are_told_apart(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.switch(10_000, 0, T, IDLE, voluntary=True)  # blocks: the app's own time
    b.wakeup(30_000, T, 0)
    b.switch(30_000, 0, IDLE, T)
    b.switch(50_000, 0, T, HOG)  # preempted by the hog for 30 us
    b.switch(80_000, 0, HOG, T)
    b.switch(100_000, 0, T, IDLE, dead=True)
    report = report_json(b.write(tmp_path / "t.lg"))
    t = thread(report, 101)
    assert t["running_ns"] == 8_000 + 20_000 + 20_000
    assert t["blocked_ns"] == 20_000
    assert t["preempted_ns"] == 30_000
    assert t["runqueue_ns"] == 0
    assert t["unknown_ns"] == 1_000  # trace start to its first switch-in
    assert t["lifetime_ns"] == 99_000
    assert (t["preempted_switches"], t["blocked_switches"]) == (1, 2)  # the exit switch is voluntary
    assert t["culprits"] == [{"cause": "preempted", "pid": 200, "comm": "hog", "ns": 30_000}]
    assert report["overview"]["wall_ns"] == 119_000
    assert report["study_metrics"]["off_cpu_ns"] == 50_000
    assert report["taken"]["total"]["preempted_ns"] == 30_000


def test_runqueue_wait_that_spans_a_migration_names_both_cpus_culprits(tmp_path):
    b = TraceBuilder()
    b.switch(3_000, 0, IDLE, T)
    b.switch(5_000, 1, IDLE, OTHER)  # OTHER runs on CPU 1 from 5 us
    b.switch(10_000, 0, T, IDLE, voluntary=True)
    b.switch(15_000, 0, IDLE, BUSY)  # BUSY takes CPU 0
    b.wakeup(20_000, T, 0)  # T woken onto CPU 0's queue ...
    b.migrate(25_000, T, 0, 1)  # ... moved to CPU 1's
    b.switch(40_000, 1, OTHER, T)  # and runs there at 40 us
    b.switch(60_000, 0, BUSY, IDLE, voluntary=True)
    report = report_json(b.write(tmp_path / "t.lg"))
    t = thread(report, 101)
    assert t["runqueue_ns"] == 20_000
    assert t["migrations"] == 1
    assert t["runnable_around_migrations_ns"] == 20_000
    culprits = {(c["comm"], c["cause"]): c["ns"] for c in t["culprits"]}
    assert culprits == {("other", "runqueue"): 15_000, ("busy", "runqueue"): 5_000}
    assert t["running_ns"] == 7_000 + (120_000 - 40_000)


def test_nested_interrupts_are_counted_once(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.irq(40_000, 0, T, Event.SOFTIRQ, "NET_RX", 10_000, number=3)
    b.irq(42_000, 0, T, Event.HARDIRQ, "virtio1-req.0", 1_000, number=36)  # inside the softirq
    b.irq(60_000, 0, T, Event.IRQ_VECTOR, "LOCAL_TIMER", 500)
    b.irq(70_000, 1, HOG, Event.SOFTIRQ, "TIMER", 2_000, number=1)  # another task's, not ours
    for ts in (3_000, 4_000, 5_000, 6_000):
        b.launch(ts, 0, T)
    report = report_json(b.write(tmp_path / "t.lg"))
    t = thread(report, 101)
    assert t["irq_ns"] == 9_000 + 1_000 + 500
    assert {(i["name"], i["ns"]) for i in t["irqs"]} == {
        ("NET_RX", 9_000),
        ("virtio1-req.0", 1_000),
        ("LOCAL_TIMER", 500),
    }
    m = report["study_metrics"]
    assert m["softirq_per_1k_launches"] == 1 / 4 * 1000
    assert m["hardirq_per_1k_launches"] == 2 / 4 * 1000
    assert m["irq_ns"] == 10_500
    irqs = {(i["name"], i["on_workload"]) for i in report["overview"]["irqs"]}
    assert ("TIMER", 0) in irqs and ("NET_RX", 1) in irqs


def test_a_thread_started_mid_trace_lives_from_its_fork(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.fork(50_000, 0, T, CHILD)
    b.wakeup(50_000, CHILD, 1, new=True)
    b.switch(55_000, 1, IDLE, CHILD)
    report = report_json(b.write(tmp_path / "t.lg"))
    child = thread(report, 102)
    assert child["lifetime_ns"] == 120_000 - 50_000
    assert child["runqueue_ns"] == 5_000
    assert child["running_ns"] == 65_000
    assert child["unknown_ns"] == 0
    assert report["overview"]["threads"] == 2


def test_zero_launches_leaves_per_launch_metrics_undefined(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.switch(10_000, 0, T, HOG)
    report = report_json(b.write(tmp_path / "t.lg"))
    m = report["study_metrics"]
    assert (m["sched_per_1k_launches"], m["softirq_per_1k_launches"], m["hardirq_per_1k_launches"]) == (None,) * 3
    assert report["gaps"]["classes"] == [] and report["gaps"]["count"] == 0
    assert report["overview"]["launches"] == 0


def test_launch_gaps_are_classified_by_what_filled_them(tmp_path):
    b = TraceBuilder()
    b.switch(500, 0, IDLE, T)
    for ts in (1_000, 2_000, 3_000):
        b.launch(ts, 0, T)
    b.switch(3_500, 0, T, HOG)  # preempted 10 us
    b.switch(13_500, 0, HOG, T)
    for ts in (14_000, 15_000, 16_000):
        b.launch(ts, 0, T)
    b.sync(16_500, 0, T, 20_000)  # a sync that blocks 20 us
    b.switch(16_600, 0, T, IDLE, voluntary=True)
    b.wakeup(36_600, T, 0)
    b.switch(36_600, 0, IDLE, T)
    b.launch(37_000, 0, T)
    b.irq(38_000, 0, T, Event.HARDIRQ, "nic", 500, number=30)
    b.launch(39_000, 0, T)
    b.launch(40_000, 0, T)
    report = report_json(b.write(tmp_path / "t.lg"))
    classes = {c["class"]: c for c in report["gaps"]["classes"]}
    assert {k: c["count"] for k, c in classes.items()} == {"clean": 5, "preempted": 1, "irq": 1, "sync": 1}
    assert classes["clean"]["p50_ns"] == 1_000
    assert classes["preempted"]["p50_ns"] == 11_000 and classes["preempted"]["penalty_ns"] == 10_000
    assert classes["sync"]["p50_ns"] == 21_000 and classes["sync"]["penalty_ns"] == 20_000
    assert classes["irq"]["p50_ns"] == 2_000 and classes["irq"]["penalty_ns"] == 1_000
    p95 = report["gaps"]["tail"][0]
    assert p95["threshold_ns"] == 21_000 and p95["gaps"] == 1 and p95["by_class"]["sync"]["share"] == 1.0
    bursts = report["gaps"]["bursts"]
    assert bursts["bursts"] == 2  # the sync splits the launches 6 + 3
    assert (bursts["launches_per_burst_p50"], bursts["launches_per_burst_p90"]) == (4.5, 6.0)
    assert bursts["idle_between_bursts_p50_ns"] == 21_000
    # interference inside launch gaps: the 10 us preemption and the 0.5 us IRQ
    assert report["verdict"]["recoverable_ns"] == 10_000 + 500


def test_lost_events_are_flagged_beside_the_metrics_they_affect(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.launch(3_000, 0, T)
    b.lost(5_000, 0, Event.SWITCH, 5)
    path = tmp_path / "t.lg"
    report = report_json(b.write(path))
    assert report["overview"]["lost_events"] == {"switch": 5}
    assert set(report["warnings"]) == {"switches", "off_cpu", "runqueue", "gaps"}
    assert report["warnings"]["switches"] == "lower bound: 5 switch events were lost"
    strict = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(path), "--strict"], capture_output=True, text=True
    )
    assert strict.returncode == 3
    assert "lower bound: 5 switch events were lost" in " ".join(strict.stdout.split())
    relaxed = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(path)], capture_output=True, text=True
    )
    assert relaxed.returncode == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "the file is empty"),
        (b"timestamp_ns,event_type\n1,x\n", "a CSV, but not the study's layout: no column pid, tid, comm"),
        (
            b"\x00\x01binary",
            "not a launchgap trace (neither a trace directory, an Arrow IPC stream nor the study's CSV)",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path, content, message):
    path = tmp_path / "bad.lg"
    path.write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "launchgap.cli", "report", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert "Traceback" not in proc.stderr


def report_error(path) -> str:
    proc = subprocess.run([sys.executable, "-m", "launchgap.cli", "report", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2, (path, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    return proc.stderr


def test_empty_cut_and_future_traces_in_format_1(tmp_path):
    import json

    import pyarrow as pa

    from launchgap.trace.columns import format1_arrow_fields
    from launchgap.trace.writer import write_trace

    empty = write_trace(tmp_path / "empty.lg", {}, {"start_ns": 0}, version=1)
    b = TraceBuilder()
    for i in range(2000):
        b.launch(2_000 + i, 0, T)
    whole = tmp_path / "whole.lg"
    b.write(whole, batch_rows=1000, version=1)
    data = whole.read_bytes()
    in_schema = tmp_path / "in_schema.lg"
    in_schema.write_bytes(data[:100])
    future = tmp_path / "future.lg"
    schema = pa.schema(format1_arrow_fields(), metadata={"format": "launchgap-trace/9", "launchgap": json.dumps({})})
    with pa.OSFile(str(future), "wb") as sink, pa.ipc.new_stream(sink, schema):
        pass
    expected = {
        empty: "the trace holds no events",
        in_schema: "truncated inside its schema",
        future: "trace format version 9 is not supported",
    }
    for path, message in expected.items():
        assert message in report_error(path)

    # cut inside its second batch: the first batch is kept and the report says so
    cut = tmp_path / "cut.lg"
    cut.write_bytes(data[: len(data) - 5_000])
    from launchgap.trace import read_trace

    trace = read_trace(cut)
    assert trace.truncated is True and trace.of(Event.LAUNCH).height == 1000 and trace.end is None
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(cut)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "trace cut short" in " ".join(proc.stdout.split())


def test_empty_killed_and_future_traces_in_format_2(tmp_path):
    import json

    from launchgap.trace import read_trace
    from launchgap.trace.schema import END_FILE, META_FILE
    from launchgap.trace.writer import write_trace

    empty = write_trace(tmp_path / "empty.lg", {}, {"start_ns": 0}, {"end_ns": 1})
    assert "the trace holds no events" in report_error(empty)
    future = write_trace(tmp_path / "future.lg", {}, {"start_ns": 0})
    (future / META_FILE).write_text(json.dumps({"format": "launchgap-trace", "version": 9, "start_ns": 0}))
    assert "trace format version 9 is not supported" in report_error(future)
    not_a_trace = tmp_path / "photos"
    not_a_trace.mkdir()
    assert f"{not_a_trace}: is a directory, not a launchgap trace (no meta.json)" in report_error(not_a_trace)
    killed_at_once = write_trace(tmp_path / "killed_at_once.lg", {}, {"start_ns": 0})
    assert "truncated before its first complete segment" in report_error(killed_at_once)

    # as a killed recorder leaves it: complete segments, one partial, no end.json
    b = TraceBuilder()
    for i in range(2000):
        b.launch(2_000 + i, 0, T)
    killed = tmp_path / "killed.lg"
    b.write(killed, batch_rows=1000)
    (killed / END_FILE).unlink()
    (killed / "launch" / "000002.parquet").rename(killed / "launch" / ".000002.parquet.partial")
    trace = read_trace(killed)
    assert trace.truncated is True and trace.of(Event.LAUNCH).height == 1000 and trace.end is None
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(killed)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "trace cut short" in " ".join(proc.stdout.split())


def test_tasks_whose_switch_outs_are_never_traced_are_named(tmp_path):
    silent = (74, 74, "agent")
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.switch(10_000, 0, T, silent)  # the agent runs; its switch back to T is never traced
    b.switch(40_000, 0, T, HOG)
    b.switch(50_000, 0, HOG, T)  # T runs to the end: not a silent task
    report = report_json(b.write(tmp_path / "t.lg"))
    caveats = report["trace"]["caveats"]
    # it bears on 30 us of the 40 us taken from the workload: far more than the 1% that hides a caveat
    assert caveats == [
        "agent (74/74) was switched in once but its switch-outs were never traced by this kernel: a thread it "
        "preempted looks preempted until its next recorded switch-out. The workload waited 30.000 us while it "
        "ran, 75.00% of the 40.000 us taken from the workload: at most that much is counted as preemption wrongly"
    ]
    assert report["trace"]["minor_caveats"] == []
    assert thread(report, 101)["preempted_ns"] == 30_000 + 10_000  # the unseen run counts as preempted


def report_text(path, *args: str) -> str:
    """The terminal report in a pipe, its whitespace runs made single spaces (no assertion on wrapping)."""
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(path), *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())


def test_a_caveat_bearing_on_little_is_kept_out_of_the_default_report(tmp_path):
    """A silent task that bears on at most 1% of the time taken is a minor caveat: in the JSON and
    --verbose, not in the default terminal report."""
    silent = (74, 74, "agent")
    b = TraceBuilder(end_ns=1_100_000)
    b.switch(2_000, 0, IDLE, T)
    b.switch(10_000, 0, T, silent)  # the agent runs 1 us; its switch back to T is never traced
    b.switch(11_000, 0, T, HOG)  # T preempted by the hog for 1 ms
    b.switch(1_011_000, 0, HOG, T)
    trace = b.write(tmp_path / "t.lg")
    report = report_json(trace)
    assert thread(report, 101)["preempted_ns"] == 1_001_000
    minor = (
        "agent (74/74) was switched in once but its switch-outs were never traced by this kernel: a thread it "
        "preempted looks preempted until its next recorded switch-out. The workload waited 1.000 us while it "
        "ran, 0.10% of the 1.001 ms taken from the workload: at most that much is counted as preemption "
        "wrongly"
    )
    assert report["trace"]["caveats"] == [] and report["trace"]["minor_caveats"] == [minor]
    assert "agent (74/74)" not in report_text(trace.path)
    assert f"minor caveat: {minor}" in report_text(trace.path, "--verbose")


def test_the_first_line_names_the_processes_attached_to(tmp_path):
    b = TraceBuilder(meta_extra={"mode": "pids", "pids": [100, 4242], "command": None, "command_pid": None})
    b.switch(2_000, 0, IDLE, T)
    b.launch(3_000, 0, T)
    trace = b.write(tmp_path / "t.lg")
    assert report_json(trace)["trace"]["pids"] == [100, 4242]
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "report", str(trace.path)], capture_output=True, text=True, timeout=300
    )
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"{trace.path}: pids 100, 4242"), first
