"""A trace's parts checked against what the recorder wrote (issue 22, items 6-8): every kind's rows against
the closing summary's count of rows written, segment names against the recorder's sequence, and nothing
opened that is not a regular file of bounded size. A mismatch is damage: in `trace.damage`, warned by every
command, and `report --strict` exits 3. The expected counts come from the trace's own end.json (what the
recorder counted as it wrote), or from the hand-built trace's summary, never from the reader."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from launchgap.trace import Event, read_trace
from launchgap.trace.schema import END_FILE, META_FILE
from launchgap.trace.writer import frames_from_rows, write_trace
from tests.analysis.builder import IDLE, TraceBuilder
from tests.analysis.test_corrupt_input import record_small, run
from tests.recorder.conftest import RECORDER, needs_bpf

T = (100, 101, "launcher")
HOG = (200, 200, "hog")
FIFO_LEFT_OUT = "segment launch/000002.parquet is a FIFO, not a regular file, and was left out"


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A real recording of two launching threads over ~2 s: every kind in 2 segments or so."""
    if not RECORDER.exists():
        pytest.skip("the recorder is not built")
    return record_small(tmp_path_factory.mktemp("integrity") / "small.lg")


def copy_of(recording: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.lg"
    shutil.copytree(recording, copy)
    return copy


def written(trace: Path) -> dict[str, int]:
    """The recorder's count of rows written, by kind, as its end.json holds it."""
    return json.loads((trace / END_FILE).read_text())["rows"]


def numbers(trace: Path) -> set[int]:
    return {int(p.stem) for p in trace.glob("*/*.parquet")}


def launchgap(*args: str, timeout: int = 120, preexec_fn=None) -> subprocess.CompletedProcess:
    """A command in its own process, with a deadline: one that blocks on a FIFO fails the test instead of
    hanging it."""
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def hand_built(path: Path, summary: dict | None, version: int = 2, batch_rows: int | None = None) -> Path:
    """A trace of 1 switch and 20 launches, its closing summary as given."""
    b = TraceBuilder(meta_extra={"mode": "system"})
    b.switch(2_000, 0, IDLE, T)
    for i in range(20):
        b.launch(3_000 + i * 1_000, 0, T)
    b.switch(30_000, 0, T, HOG)
    b.switch(40_000, 0, HOG, T)
    meta = {
        "format": "launchgap-trace",
        "version": version,
        "start_ns": b.start_ns,
        "mode": "system",
        "command": ["test"],
        "command_pid": 100,
        "pids": [],
        "recorder_pid": 1,
        "host": {},
        "topology": {"count": 2},
    }
    return write_trace(
        path,
        frames_from_rows(sorted(b.rows, key=lambda r: r["ts_ns"])),
        meta,
        summary,
        version=version,
        segment_rows=batch_rows,
    )


# ---- 6. rows against end.json, segments against the recorder's sequence -------------------------------


@needs_bpf
def test_a_whole_recording_holds_every_row_the_recorder_counted(recording):
    trace = read_trace(recording)
    assert trace.damage == ()
    assert {k.value: trace.count(k) for k in Event if trace.count(k)} == written(recording)


@needs_bpf
def test_a_kind_removed_is_damage_in_the_report_and_its_json(recording, tmp_path):
    """The audit: with switch/ gone the report said 'context switches 0' and gave a verdict, trace.damage []."""
    copy = copy_of(recording, tmp_path)
    switches = written(copy)["switch"]
    shutil.rmtree(copy / Event.SWITCH.value)
    line = f"switch: end.json counts {switches:,} rows written, its segments hold 0: {switches:,} are missing"
    code, stdout, _ = run("report", str(copy), "--json")
    report = json.loads(stdout)
    assert code == 0
    assert report["trace"]["damage"] == [line]
    assert report["warnings"]["trace"] == f"incomplete: {line}"
    assert report["verdict"]["text"].startswith(f"This trace is incomplete ({line})")
    assert run("report", str(copy), "--strict")[0] == 3


@needs_bpf
@pytest.mark.parametrize(
    "command",
    [
        ["diff", "{whole}", "{t}"],
        ["diff", "{whole}", "{t}", "--json"],
        ["export", "--csv", "{t}", "-o", "{o}.csv"],
        ["export", "--perfetto", "{t}", "-o", "{o}.pftrace"],
        ["convert", "{t}", "{o}.lg1"],
    ],
)
def test_every_command_says_a_kind_is_missing(recording, tmp_path, command):
    """diff, the exports and convert exited 0 without a word."""
    copy = copy_of(recording, tmp_path)
    switches = written(copy)["switch"]
    shutil.rmtree(copy / Event.SWITCH.value)
    line = f"switch: end.json counts {switches:,} rows written, its segments hold 0: {switches:,} are missing"
    code, stdout, stderr = run(*[a.format(whole=recording, t=copy, o=tmp_path / "out") for a in command])
    assert code == 0, stderr
    assert stderr.splitlines().count(f"launchgap: warning: {copy} is damaged: {line}") == 1, stderr
    if "--json" in command:
        assert json.loads(stdout)["traces"]["b"]["damage"] == [line]


@needs_bpf
def test_a_removed_launch_segment_is_counted(recording, tmp_path):
    """The audit: 278,786 launches against end.json's 382,400, and nothing said."""
    copy = copy_of(recording, tmp_path)
    launches = written(copy)["launch"]
    segment = copy / Event.LAUNCH.value / "000002.parquet"
    removed = pq.read_metadata(segment).num_rows
    segment.unlink()
    expected = [
        f"launch: end.json counts {launches:,} rows written, its segments hold {launches - removed:,}: "
        f"{removed:,} are missing"
    ]
    if 2 not in numbers(copy):  # no other kind had rows in that flush: the sequence shows the gap too
        expected.insert(
            0,
            "segment number 000002 is in no kind's directory, though "
            f"{max(numbers(copy)):06d} is: the recorder numbers its flushes 1, 2, 3, ... over all "
            "kinds, so segments were removed (or one added out of sequence)",
        )
    trace = read_trace(copy)
    assert trace.count(Event.LAUNCH) == launches - removed
    assert list(trace.damage) == expected


@needs_bpf
def test_a_copied_segment_is_left_out(recording, tmp_path):
    copy = copy_of(recording, tmp_path)
    launches = written(copy)["launch"]
    later = max(numbers(copy)) + 1
    shutil.copyfile(copy / "launch" / "000001.parquet", copy / "launch" / f"{later:06d}.parquet")
    trace = read_trace(copy)
    assert trace.damage == (
        f"segment launch/{later:06d}.parquet holds the very bytes of launch/000001.parquet (a copy) and was left out",
    )
    assert trace.count(Event.LAUNCH) == launches


@needs_bpf
def test_stray_parquet_files_are_left_out(recording, tmp_path):
    """Any *.parquet in a kind's directory is read by a glob; only the recorder's own names are segments."""
    copy = copy_of(recording, tmp_path)
    launches = written(copy)["launch"]
    shutil.copyfile(copy / "launch" / "000001.parquet", copy / "launch" / "000001 (copy).parquet")
    shutil.copyfile(copy / "switch" / "000001.parquet", copy / "launch" / "1.parquet")
    (copy / "launch" / "\x1b[31mred.parquet").write_bytes(b"PAR1")
    (copy / "launch" / "notes.txt").write_text("not a segment: not read, nothing said")
    trace = read_trace(copy)
    assert trace.damage == tuple(
        f"launch/{name} is not a segment the recorder writes (they are named NNNNNN.parquet) and was left out"
        for name in ("\\x1b[31mred.parquet", "000001 (copy).parquet", "1.parquet")
    )  # in the order of their names
    assert trace.count(Event.LAUNCH) == launches


@needs_bpf
def test_rows_added_under_a_segment_name_are_counted(recording, tmp_path):
    """Rows the recorder did not write, under the next number in its sequence (not a copy byte for byte)."""
    copy = copy_of(recording, tmp_path)
    launches = written(copy)["launch"]
    first = copy / "launch" / "000001.parquet"
    added = pq.read_table(first).slice(1)
    pq.write_table(added, copy / "launch" / f"{max(numbers(copy)) + 1:06d}.parquet")
    trace = read_trace(copy)
    assert trace.damage == (
        f"launch: end.json counts {launches:,} rows written, its segments hold "
        f"{launches + added.num_rows:,}: {added.num_rows:,} were added that the recorder did "
        f"not write",
    )
    assert run("report", str(copy), "--strict")[0] == 3


def test_a_killed_recording_is_checked_against_the_sequence(tmp_path):
    """No end.json (a killed recorder): no counts to check, but a flush missing from every kind is said."""
    path = hand_built(tmp_path / "t.lg", None, batch_rows=5)  # launch 000001..000004, switch 000001
    assert sorted(numbers(path)) == [1, 2, 3, 4]
    assert read_trace(path).damage == ()  # cut short is not damage
    (path / "launch" / "000002.parquet").unlink()
    (path / "launch" / "000003.parquet").unlink()
    trace = read_trace(path)
    assert trace.truncated is True
    assert trace.damage == (
        "segment numbers 000002..000003 are in no kind's directory, though 000004 is: the "
        "recorder numbers its flushes 1, 2, 3, ... over all kinds, so segments were removed "
        "(or one added out of sequence)",
    )
    assert trace.count(Event.LAUNCH) == 10


@pytest.mark.parametrize(
    "version, written_by, held_in", [(2, "end.json", "its segments"), (1, "the closing row", "its batches")]
)
def test_rows_against_the_closing_summary_in_either_format(tmp_path, version, written_by, held_in):
    summary = {"end_ns": 120_000, "lost_events": 0, "rows": {"launch": 25, "switch": 3, "sync": 2}}
    trace = read_trace(hand_built(tmp_path / "t.lg", summary, version=version, batch_rows=5))
    assert trace.damage == (
        f"launch: {written_by} counts 25 rows written, {held_in} hold 20: 5 are missing",
        f"sync: {written_by} counts 2 rows written, {held_in} hold 0: 2 are missing",
    )
    # as the recorder counts them: whole
    summary["rows"] = {"launch": 20, "switch": 3}
    assert read_trace(hand_built(tmp_path / "u.lg", summary, version=version)).damage == ()
    # imported traces and older recorders count nothing: nothing to check
    del summary["rows"]
    assert read_trace(hand_built(tmp_path / "v.lg", summary, version=version)).damage == ()
    summary["rows"] = {"launch": "many"}
    assert read_trace(hand_built(tmp_path / "w.lg", summary, version=version)).damage == (
        "its closing summary's row counts are damaged ({'launch': 'many'}): the rows read were not checked against "
        "them",
    )


@needs_bpf
def test_convert_carries_the_count_and_says_it(recording, tmp_path):
    """A trace missing rows, converted to format 1: convert warns, and the copy still says what is missing."""
    copy = copy_of(recording, tmp_path)
    syncs = written(copy)["sync"]
    segment = sorted((copy / "sync").glob("*.parquet"))[-1]
    removed = pq.read_metadata(segment).num_rows
    segment.unlink()
    code, _, stderr = run("convert", str(copy), str(tmp_path / "t.lg1"))
    assert code == 0
    line = (
        f"sync: end.json counts {syncs:,} rows written, its segments hold {syncs - removed:,}: {removed:,} are missing"
    )
    assert f"launchgap: warning: {copy} is damaged: {line}" in stderr.splitlines()
    assert read_trace(tmp_path / "t.lg1").damage[-1] == (
        f"sync: the closing row counts {syncs:,} rows written, its batches hold {syncs - removed:,}: {removed:,} are "
        f"missing"
    )


# ---- 7. FIFOs: nothing opened that is not a regular file ---------------------------------------------


@pytest.fixture
def with_fifo_segment(tmp_path) -> Path:
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0}, batch_rows=5)
    (path / "launch" / "000002.parquet").unlink()
    os.mkfifo(path / "launch" / "000002.parquet")
    return path


def test_a_fifo_segment_is_left_out_without_blocking(with_fifo_segment, tmp_path):
    """The audit: every command blocked in open for ever, and Ctrl-C did not stop it."""
    proc = launchgap("report", str(with_fifo_segment), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["trace"]["damage"] == [FIFO_LEFT_OUT]
    out = tmp_path / "t.csv"
    proc = launchgap("export", "--csv", str(with_fifo_segment), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"launchgap: warning: {with_fifo_segment} is damaged: {FIFO_LEFT_OUT}",
        f"launchgap: wrote 18 rows to {out}",
    ]  # 15 launches and 3 switches


def test_a_fifo_segment_is_left_out_by_the_views(with_fifo_segment, tmp_path):
    proc = launchgap("timeline", str(with_fifo_segment), "-o", str(tmp_path / "t.png"))
    assert proc.returncode == 0, proc.stderr
    assert f"launchgap: warning: {with_fifo_segment} is damaged: {FIFO_LEFT_OUT}" in proc.stderr.splitlines()


def test_a_fifo_closing_summary_is_left_out_without_blocking(tmp_path):
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0})
    (path / END_FILE).unlink()
    os.mkfifo(path / END_FILE)
    proc = launchgap("report", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["trace"]["damage"] == [
        "its closing summary (end.json) is a FIFO, not a regular file, and was left out: the trace has no clean end"
    ]
    assert report["trace"]["clean_end"] is False


def test_a_fifo_metadata_is_one_line_without_blocking(tmp_path):
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0})
    (path / META_FILE).unlink()
    os.mkfifo(path / META_FILE)
    proc = launchgap("report", str(path))
    assert (proc.returncode, proc.stderr) == (
        2,
        f"launchgap: {path}: damaged trace: its metadata (meta.json) is a FIFO, not a regular file\n",
    )


# ---- 8. meta.json and end.json: bounded, regular files only ------------------------------------------


def _address_space(limit_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def test_metadata_linked_to_dev_zero_is_one_line(tmp_path):
    """The audit: a MemoryError traceback at 1.9 GB (here under a 3 GiB cap, so a regression cannot take the
    machine's memory)."""
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0})
    (path / META_FILE).unlink()
    (path / META_FILE).symlink_to("/dev/zero")
    proc = launchgap("report", str(path), preexec_fn=_address_space(3 << 30))
    assert (proc.returncode, proc.stderr) == (
        2,
        f"launchgap: {path}: damaged trace: its metadata (meta.json) is a character device, not a regular file\n",
    )


def test_a_closing_summary_linked_to_dev_zero_is_left_out(tmp_path):
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0})
    (path / END_FILE).unlink()
    (path / END_FILE).symlink_to("/dev/zero")
    proc = launchgap("report", str(path), "--json", preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["trace"]["damage"] == [
        "its closing summary (end.json) is a character device, not a regular file, and was left out: the trace has "
        "no clean end"
    ]


def test_a_huge_metadata_file_is_refused_before_it_is_read(tmp_path):
    """The audit: a 300 MB meta.json took the report to 1.1 GB. A sparse file: nothing is written to disk."""
    path = hand_built(tmp_path / "t.lg", {"end_ns": 120_000, "lost_events": 0})
    size = (64 << 20) + 1
    with open(path / META_FILE, "r+b") as meta:
        meta.truncate(size)
    proc = launchgap("report", str(path))
    assert (proc.returncode, proc.stderr) == (
        2,
        f"launchgap: {path}: damaged trace: its metadata (meta.json) is {size:,} bytes, more than the "
        f"67,108,864 such a file may hold\n",
    )


READ = """
import sys
from launchgap.trace import TraceError, read_trace
try:
    read_trace(sys.argv[1])
except TraceError as err:
    print(err)
"""


def test_a_fifo_or_device_as_a_format_1_trace_is_refused_by_the_reader(tmp_path):
    """The reader itself (not only the command line's check before it) opens nothing but a regular file: in
    its own process, as an open blocked on a FIFO ignores every signal but SIGKILL."""
    fifo = tmp_path / "t.lg"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/null"), "a character device")):
        proc = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, timeout=120)
        assert (proc.returncode, proc.stdout) == (0, f"{path}: {kind}, not a trace (a file or a trace directory)\n")
    # a regular one still reads, through its mapping
    good = hand_built(tmp_path / "good.lg1", {"end_ns": 120_000, "lost_events": 0}, version=1)
    assert read_trace(good).of(Event.LAUNCH, "ts_ns")["ts_ns"].to_list() == [3_000 + i * 1_000 for i in range(20)]
    assert read_trace(good).damage == ()
