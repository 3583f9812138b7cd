"""The report in bounded memory (launches streamed a few segments at a time:
analysis/gap_stream.py): its gap classes against traces built so that each
gap's class and length are known by construction (the truth); and, as a
regression check, exactly the JSON of the in-memory analysis it replaced
(tests/analysis/reference_gaps.py, which shares the product's classify,
interference_ns and report_from: it can tell a chunking fault, not a
classification one). The typed report and docs/report-schema.md name the
same fields; a trace that names no workload gets no verdict; an incomplete
trace says so in its warnings and its verdict."""

from __future__ import annotations

import json
import random
import re
import sys
import typing
from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchgap.analysis import records
from launchgap.analysis.records import Report, json_key
from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import Event, model, read_trace
from launchgap.views.report_json import document, report_json
from tests.analysis.builder import IDLE, TraceBuilder
from tests.analysis.reference_gaps import in_memory_report

REPO = Path(__file__).resolve().parents[2]
A, B = (100, 101, "launcher-a"), (100, 102, "launcher-b")
HOG = (300, 300, "hog")


def busy_trace(seed: int) -> TraceBuilder:
    """Two launching threads, one a CPU, each running, launching, interrupted, preempted by a hog and
    blocking on syncs at random: every kind of thing a launch gap can hold, at seeded times."""
    rng = random.Random(seed)
    b = TraceBuilder(start_ns=1_000, end_ns=50_000_000)
    for cpu, task in ((0, A), (1, B)):
        t = 2_000 + cpu * 300
        b.switch(t, cpu, IDLE, task)
        for _ in range(400):
            t += rng.randrange(500, 20_000)
            action = rng.random()
            if action < 0.7:
                b.launch(t, cpu, task, api=rng.choice(["cuLaunchKernel", "cuLaunchKernelEx"]))
            elif action < 0.8:
                b.irq(
                    t,
                    cpu,
                    task,
                    rng.choice([Event.HARDIRQ, Event.SOFTIRQ]),
                    "virtio0",
                    rng.randrange(200, 3_000),
                    number=24,
                )
                t += 3_000
            elif action < 0.9:
                wait = rng.randrange(10_000, 200_000)
                b.sync(t, cpu, task, wait)
                b.switch(t + 100, cpu, task, IDLE, voluntary=True)
                b.wakeup(t + wait - 5_000, task, cpu)
                b.switch(t + wait, cpu, IDLE, task)
                t += wait + 100
            else:
                b.switch(t, cpu, task, HOG)
                t += rng.randrange(5_000, 500_000)
                b.switch(t, cpu, HOG, task)
    return b


def one_cause_trace(seed: int) -> tuple[TraceBuilder, dict[str, list[int]]]:
    """Two launching threads, each gap between two launches holding nothing, or one interrupt, one preemption
    by the hog, or one sync its thread blocks in (far longer than the wait to run again after it): each gap's
    class is its one cause, known by construction, and its length the time between the two launches. Returns
    the trace and, per class, the launch each of its gaps starts at."""
    rng = random.Random(seed)
    b = TraceBuilder(start_ns=1_000, end_ns=80_000_000)
    gaps: dict[str, list[int]] = {"clean": [], "irq": [], "preempted": [], "sync": []}
    for cpu, task in ((0, A), (1, B)):
        t = 2_000 + cpu * 300
        b.switch(t, cpu, IDLE, task)
        for i in range(300):
            t += rng.randrange(500, 5_000)
            b.launch(t, cpu, task)
            if i == 299:
                break
            launched = t
            cause = rng.choice(list(gaps))
            if cause == "irq":
                t += rng.randrange(100, 1_000)
                b.irq(
                    t,
                    cpu,
                    task,
                    rng.choice([Event.HARDIRQ, Event.SOFTIRQ]),
                    "virtio0",
                    rng.randrange(500, 3_000),
                    number=24,
                )
                t += 3_000
            elif cause == "preempted":
                t += rng.randrange(100, 1_000)
                b.switch(t, cpu, task, HOG)
                t += rng.randrange(5_000, 200_000)
                b.switch(t, cpu, HOG, task)
            elif cause == "sync":
                t += rng.randrange(100, 1_000)
                wait = rng.randrange(50_000, 200_000)
                b.sync(t, cpu, task, wait)
                b.switch(t + 100, cpu, task, IDLE, voluntary=True)
                b.wakeup(t + wait - 2_000, task, cpu)
                b.switch(t + wait, cpu, IDLE, task)
                t += wait + 100
            gaps[cause].append(launched)  # the gap starts here and ends at the thread's next launch
    return b, gaps


def gap_lengths(b: TraceBuilder, gaps: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
    """Per class, (count, total length) of the gaps ONE_CAUSE_TRACE built."""
    launches = {}
    for row in b.rows:
        if row["event"] == Event.LAUNCH:
            launches.setdefault(row["tid"], []).append(row["ts_ns"])
    next_launch = {ts: nxt for times in launches.values() for ts, nxt in zip(sorted(times), sorted(times)[1:])}
    return {cause: (len(starts), sum(next_launch[start] - start for start in starts)) for cause, starts in gaps.items()}


@pytest.mark.parametrize("seed", range(3))
def test_streamed_gap_classes_are_those_built(tmp_path, monkeypatch, seed):
    """Each class's gap count and total length in the streamed report (segments of 37 rows, handed out ~100 at
    a time) against the trace's construction: the truth, not another implementation."""
    monkeypatch.setattr(model, "ORDERED_CHUNK_ROWS", 100)
    b, gaps = one_cause_trace(seed)
    trace = b.write(tmp_path / "t.lg", batch_rows=37)
    classes = {c["class"]: (c["count"], c["total_ns"]) for c in report_json(trace)["gaps"]["classes"]}
    assert classes == gap_lengths(b, gaps)


@pytest.mark.parametrize("seed", range(3))
def test_regression_streamed_report_is_the_in_memory_report(tmp_path, monkeypatch, seed):
    """A regression check, not a truth: the streamed report equals the in-memory analysis it replaced, whole
    report to whole report (both classify with the product's own rules). Launches in segments of 37 rows,
    handed out ~100 at a time: gaps span chunks, and so do the off-CPU stretches, interrupts and syncs placed
    into them."""
    monkeypatch.setattr(model, "ORDERED_CHUNK_ROWS", 100)
    trace = busy_trace(seed).write(tmp_path / "t.lg", batch_rows=37)
    assert len(trace.tables.files(Event.LAUNCH)) > 10
    streamed, in_memory = report_json(trace), document(in_memory_report(trace))
    assert streamed["overview"]["launches"] == trace.count(Event.LAUNCH) > 500
    assert {c["class"] for c in streamed["gaps"]["classes"]} >= {"clean", "preempted", "irq", "sync"}
    assert json.dumps(streamed, sort_keys=True) == json.dumps(in_memory, sort_keys=True)


@pytest.mark.parametrize("budget", [0, 20_000, 1 << 30])
def test_kinds_held_from_the_opening_check_stay_within_their_budget(tmp_path, monkeypatch, budget):
    """The opening check keeps every kind but launches decoded while they fit in HELD_BYTES, all kinds or
    none: past it what was held is let go, and the report is the same either way."""
    from launchgap.trace import format2

    written = busy_trace(0).write(tmp_path / "t.lg", batch_rows=37)
    reference = document(in_memory_report(written))
    monkeypatch.setattr(format2, "HELD_BYTES", budget)
    trace = read_trace(tmp_path / "t.lg")
    held = trace.tables._held
    assert Event.LAUNCH not in held
    assert sum(frame.estimated_size() for frame in held.values()) <= budget
    kinds = {kind for kind in Event if kind is not Event.LAUNCH and trace.count(kind)}
    assert set(held) == (kinds if budget == 1 << 30 else set())
    assert json.dumps(report_json(trace), sort_keys=True) == json.dumps(reference, sort_keys=True)


def test_streamed_report_of_a_synthetic_trace_is_the_in_memory_report(tmp_path, monkeypatch):
    """bench/synthetic_trace.py's shape, written a chunk of tokens a segment as for the 100M-event bench."""
    sys.path.insert(0, str(REPO / "bench"))
    import synthetic_trace

    monkeypatch.setattr(synthetic_trace, "CHUNK_TOKENS", 40)
    monkeypatch.setattr(model, "ORDERED_CHUNK_ROWS", 30_000)
    rows = synthetic_trace.write(tmp_path / "s.lg", 200_000)
    trace = read_trace(tmp_path / "s.lg")
    assert sum(trace.count(k) for k in Event) == rows
    streamed, in_memory = report_json(trace), document(in_memory_report(trace))
    assert streamed["gaps"]["count"] == streamed["overview"]["launches"] - 1
    assert json.dumps(streamed, sort_keys=True) == json.dumps(in_memory, sort_keys=True)


def test_segments_out_of_order_are_still_read_in_time_order(tmp_path, monkeypatch):
    """A segment whose rows start before the end of the one written before it (the recorder drains
    per-CPU buffers; a segment closes on time or size) is merged in, not handed out of order."""
    monkeypatch.setattr(model, "ORDERED_CHUNK_ROWS", 1)
    b = TraceBuilder()
    for ts in (5_000, 6_000, 7_000, 8_000):
        b.launch(ts, 0, A)
    trace = b.write(tmp_path / "t.lg", batch_rows=2)
    # swap the two segments' contents: the second file now holds the earliest launches
    first, second = trace.tables.files(Event.LAUNCH)
    a, c = first.read_bytes(), second.read_bytes()
    first.write_bytes(c)
    second.write_bytes(a)
    out = [chunk["ts_ns"].to_list() for chunk in read_trace(tmp_path / "t.lg").in_time_order(Event.LAUNCH, "ts_ns")]
    assert sum(out, []) == [5_000, 6_000, 7_000, 8_000]


# --- the typed report and docs/report-schema.md ---------------------------------

# placeholders in the doc's layout (a map's keys, a list's element type), not keys of the JSON
DOC_PLACEHOLDERS = {
    "api",
    "n",
    "event",
    "int",
    "str",
    "metric",
    "null",
    "true",
    "false",
    "doctor",
    "check",
    "negligible",
    "light",
    "heavy",
    "not",
    "given",
    "launchgap",
    "report",
    "lower",
    "bound",
    "were",
    "lost",
    "events",
    "the",
    "incomplete",
    "uncertain",
}
# keys of host_checks.counts, the doctor's statuses (docs/doctor.md): a map's keys, not fields of a record
DOCTOR_KEYS = {"ok", "warn", "fail", "unknown"}


def record_keys(cls) -> set[str]:
    """Every JSON key a record and the records inside it can have: its fields', or the keys it writes whatever
    its fields (JSON_KEYS: GPU time's kinds, one layout for the three)."""
    keys = set(getattr(cls, "JSON_KEYS", ()))
    hints = typing.get_type_hints(cls, vars(records))
    for f in fields(cls):
        if not hasattr(cls, "JSON_KEYS"):
            keys.add(json_key(f))
        for inner in _record_types(hints[f.name]):
            keys |= record_keys(inner)
    return keys


def _record_types(hint) -> list[type]:
    # the report's records only: a doctor check in host_checks is the doctor's (docs/doctor.md)
    if isinstance(hint, type) and issubclass(hint, records.Record):
        return [hint]
    return [t for arg in typing.get_args(hint) for t in _record_types(arg)]


def doc_keys() -> set[str]:
    text = (REPO / "docs" / "report-schema.md").read_text()
    layout = text.split("```")[1]
    layout = re.sub(r"#[^\n]*", "", layout)  # comments
    layout = re.sub(r'"[^"\n]*"', "", layout)  # literal values
    return set(re.findall(r"[a-z_][a-z0-9_]*", layout)) - DOC_PLACEHOLDERS


def test_report_schema_doc_names_every_record_field_and_no_other():
    """Adding a field to a record without the doc, or to the doc without a record, fails here."""
    ours = record_keys(Report)
    documented = doc_keys() - DOCTOR_KEYS
    assert ours - documented == set(), "fields of the records the doc does not describe"
    assert documented - ours == set(), "keys in the doc no record has"


def test_the_json_has_exactly_the_record_fields(tmp_path):
    report = build_report(busy_trace(0).write(tmp_path / "t.lg"))
    as_json = document(report)
    # a section only some traces have (collectives) is left out while it is None: this trace has none
    assert report.collectives is None
    assert list(as_json) == [json_key(f) for f in fields(Report) if not records.omitted(f, getattr(report, f.name))]
    assert "collectives" not in as_json
    assert as_json["gaps"]["classes"][0]["class"] == report.gaps.classes[0].klass
    assert as_json["taken"]["threads"][0]["culprits"] == [c.to_json() for c in report.taken.threads[0].culprits]
    json.dumps(as_json)  # plain JSON all the way down


# --- verdicts that cannot be given, or rest on part of a trace -------------------


def test_no_target_no_verdict(tmp_path):
    """A trace-cmd import without --target (mode system, no pids, nothing used CUDA): the threads in it
    are whatever ran, so no verdict, and the text says how to name the workload."""
    b = TraceBuilder(
        meta_extra={"mode": "system", "command": None, "command_pid": None, "pids": [], "source": "/tmp/x.dat"}
    )
    b.switch(2_000, 0, IDLE, HOG)
    b.switch(50_000, 0, HOG, IDLE)
    report = report_json(b.write(tmp_path / "t.lg"))
    verdict = report["verdict"]
    assert verdict["level"] == "not given" and verdict["taken_percent"] is None
    assert "no target was named" in verdict["text"] and "--target NAME" in verdict["text"]
    assert report["overview"]["processes"] == [] and report["taken"]["threads"] == []


def test_an_incomplete_trace_says_so_in_warnings_and_verdict(tmp_path):
    b = busy_trace(1)
    trace = b.write(tmp_path / "t.lg", clean_end=False)  # the recorder was killed: no closing summary
    report = report_json(trace)
    assert report["trace"]["truncated"] is True
    assert report["warnings"]["trace"].startswith("incomplete: the recorder did not stop cleanly")
    assert report["verdict"]["text"].startswith("This trace is incomplete (")
    result = CliRunner().invoke(main, ["report", "--strict", "--json", str(trace.path)])
    assert result.exit_code == 3 and json.loads(result.stdout)["warnings"]["trace"]
    whole = b.write(tmp_path / "whole.lg")
    assert "trace" not in report_json(whole)["warnings"]
    assert CliRunner().invoke(main, ["report", "--strict", "--json", str(whole.path)]).exit_code == 0


def test_study_csv_streamed_is_the_csv_written_at_once(tmp_path, monkeypatch):
    """`export --csv` streams launches too: in chunks of ~50 launches the file is byte for byte the one
    written with every launch in one chunk (syncs, switches and IRQs merged into each chunk's stretch)."""
    from launchgap.exports.study_csv import write_study_csv

    trace = busy_trace(2).write(tmp_path / "t.lg", batch_rows=37)
    rows = write_study_csv(trace, tmp_path / "whole.csv")
    monkeypatch.setattr(model, "ORDERED_CHUNK_ROWS", 50)
    assert write_study_csv(trace, tmp_path / "chunked.csv") == rows > trace.count(Event.LAUNCH)
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
