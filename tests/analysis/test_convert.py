"""Format 1 is still read, and `launchgap convert` turns either format into the
other: every row, the metadata and the closing summary carry over, the report
is the same, and a bad request is one line that writes nothing.

tests/data/format1-cudasim.lg was recorded by the legacy writer
(`launchgap-record --format 1 -- cudasim decode --tokens 2 --layers 2
--kernels-per-layer 4 --threads 2 --host-us 500`), so it is the format as the
recorder wrote it, not as a Python writer imagines it. It is a format fixture only
(tests/data/README.md): its switch and IRQ rows were never checked against a
truth, so what is compared here is the format and the conversion (the same
report before and after), never its numbers as right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.trace import Event, read_trace
from launchgap.trace.schema import END_FILE, META_FILE
from tests.conftest import REPO

FORMAT1 = REPO / "tests" / "data" / "format1-cudasim.lg"
# cudasim decode --tokens 2 --layers 2 --kernels-per-layer 4 --threads 2: per thread and token, 2 + 2 x 4
# launches; one sync a token and one at the end
LAUNCHES = 2 * 2 * (2 + 2 * 4)
SYNCS = 2 * (2 + 1)


def launchgap(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def report(path: Path) -> dict:
    proc = launchgap("report", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    result["trace"]["path"] = None
    return result


def rows(trace) -> dict[Event, list[tuple]]:
    return {kind: sorted(trace.of(kind).rows(), key=repr) for kind in Event if trace.count(kind)}


def test_the_legacy_writers_trace_still_reads():
    trace = read_trace(FORMAT1)
    assert trace.format == 1 and trace.truncated is False and trace.damage == ()
    assert (trace.count(Event.LAUNCH), trace.count(Event.SYNC)) == (LAUNCHES, SYNCS)
    assert trace.end["stop_reason"] == "the command exited" and trace.end["command_exit_code"] == 0
    assert report(FORMAT1)["overview"]["launches"] == LAUNCHES


def test_convert_both_ways_keeps_every_row_the_summary_and_the_report(tmp_path):
    two = tmp_path / "two.lg"
    proc = launchgap("convert", str(FORMAT1), str(two))
    assert proc.returncode == 0, proc.stderr
    total = sum(read_trace(FORMAT1).count(k) for k in Event)
    assert proc.stderr.strip() == f"launchgap: wrote {two}: format 2, {total:,} rows"
    assert two.is_dir() and (two / META_FILE).is_file() and (two / END_FILE).is_file()
    one, converted = read_trace(FORMAT1), read_trace(two)
    assert converted.format == 2 and rows(converted) == rows(one)
    assert converted.end == one.end
    assert converted.meta["converted_from"] == {"format": 1, "path": str(FORMAT1)}
    assert report(two) == report(FORMAT1)

    back = tmp_path / "back.lg"
    proc = launchgap("convert", str(two), str(back))  # the other format by default
    assert proc.returncode == 0, proc.stderr
    again = read_trace(back)
    assert again.format == 1 and back.is_file() and rows(again) == rows(one) and again.end == one.end
    assert report(back) == report(FORMAT1)
    # the converted format-1 stream is one an Arrow reader takes as the recorder's
    import pyarrow as pa

    table = pa.ipc.open_stream(str(back)).read_all()
    assert table.num_rows == total + 1 and table["event"][-1].as_py() == "trace_end"


def test_convert_replaces_an_earlier_trace_only_when_complete(tmp_path):
    out = tmp_path / "out.lg"
    assert launchgap("convert", str(FORMAT1), str(out)).returncode == 0
    earlier = sorted(p.relative_to(out) for p in out.rglob("*"))
    # over an earlier format-2 trace, in format 1: swapped in, the earlier one gone, nothing left beside
    assert launchgap("convert", str(out), str(tmp_path / "one.lg")).returncode == 0
    assert launchgap("convert", str(tmp_path / "one.lg"), str(out), "--format", "1").returncode == 0
    assert out.is_file() and read_trace(out).format == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.lg", "out.lg"]
    # and back over the file, as a directory
    assert launchgap("convert", str(tmp_path / "one.lg"), str(out)).returncode == 0
    assert out.is_dir() and sorted(p.relative_to(out) for p in out.rglob("*")) == earlier
    modes = {p.stat().st_mode & 0o777 for p in [out, *out.rglob("*")]}
    assert modes == {0o700, 0o600}


@pytest.mark.parametrize("case", ["same", "not-a-trace-dir", "missing", "no-dir", "csv"])
def test_a_bad_conversion_is_one_line_and_writes_nothing(tmp_path, case):
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(b"x")
    csv = REPO / "tests" / "data" / "cuda_sched_trace-cudasim.csv"
    source, target, message = {
        "same": (FORMAT1, FORMAT1, "this is the input; refusing to write over it"),
        "not-a-trace-dir": (FORMAT1, photos, "is a directory (and not a launchgap trace); refusing to replace it"),
        "missing": (tmp_path / "absent.lg", tmp_path / "x.lg", "no such file or trace"),
        "no-dir": (FORMAT1, tmp_path / "nowhere" / "x.lg", "no such directory"),
        "csv": (csv, tmp_path / "x.lg", "a study CSV, not a launchgap trace"),
    }[case]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = launchgap("convert", str(source), str(target))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("launchgap: "), proc.stderr
    assert message in lines[0] and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (photos / "a.jpg").read_bytes() == b"x"


def test_a_trace_cut_short_converts_what_is_readable_and_says_so(tmp_path):
    from tests.analysis.builder import IDLE, TraceBuilder

    task = (100, 101, "launcher")
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, task)
    for i in range(3000):
        b.launch(3_000 + i * 10, 0, task)
    whole = b.write(tmp_path / "whole.lg", batch_rows=1000, version=1).path
    cut = tmp_path / "cut.lg"
    cut.write_bytes(whole.read_bytes()[:-5_000])  # inside the third batch
    proc = launchgap("convert", str(cut), str(tmp_path / "cut2.lg"))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {cut} was cut short" in " ".join(proc.stderr.split())
    converted = read_trace(tmp_path / "cut2.lg")
    assert converted.end is None and converted.truncated is True
    assert converted.count(Event.LAUNCH) == read_trace(cut).count(Event.LAUNCH) == 1999
    assert converted.of(Event.LAUNCH).equals(read_trace(cut).of(Event.LAUNCH))


def test_an_output_that_holds_the_input_is_refused_and_the_input_kept(tmp_path):
    """`cp m1.lg1 m.lg/inner.lg1; launchgap convert m.lg/inner.lg1 m.lg --format 2` exited 0 and deleted
    inner.lg1 with the directory it replaced."""
    (tmp_path / "m1.lg1").write_bytes(FORMAT1.read_bytes())
    assert launchgap("convert", "m1.lg1", "m.lg", "--format", "2", cwd=tmp_path).returncode == 0
    inner = tmp_path / "m.lg" / "inner.lg1"
    inner.write_bytes(FORMAT1.read_bytes())
    before = {p: p.read_bytes() for p in (tmp_path / "m.lg").rglob("*") if p.is_file()}
    (tmp_path / "via-link.lg").symlink_to("m.lg")
    for output, version in (("m.lg", "2"), ("m.lg", "1"), ("via-link.lg", "2")):
        proc = launchgap("convert", "m.lg/inner.lg1", output, "--format", version, cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr == (
            f"launchgap: {output}: holds the input m.lg/inner.lg1; refusing to replace it (choose another output)\n"
        )
    assert inner.read_bytes() == FORMAT1.read_bytes()
    assert {p: p.read_bytes() for p in (tmp_path / "m.lg").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.lg", "m1.lg1", "via-link.lg"]


@pytest.mark.parametrize("version", ["2", "1"])
def test_a_file_that_is_not_a_trace_is_refused_and_kept(tmp_path, version):
    """`echo precious > notes.txt; launchgap convert base.lg notes.txt --format 2` replaced the notes."""
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    proc = launchgap("convert", str(FORMAT1), str(notes), "--format", version)
    assert proc.returncode == 2
    assert proc.stderr == f"launchgap: {notes}: is a file (and not a launchgap trace); refusing to replace it\n"
    assert notes.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_format_1_trace_or_an_empty_file_is_replaced(tmp_path):
    two = tmp_path / "two.lg"
    assert launchgap("convert", str(FORMAT1), str(two)).returncode == 0
    earlier = tmp_path / "earlier.lg"
    earlier.write_bytes(FORMAT1.read_bytes())
    proc = launchgap("convert", str(two), str(earlier), "--format", "1")
    assert proc.returncode == 0, proc.stderr
    assert read_trace(earlier).meta["converted_from"] == {"format": 2, "path": str(two)}
    empty = tmp_path / "empty.lg"
    empty.write_bytes(b"")
    proc = launchgap("convert", str(FORMAT1), str(empty), "--format", "2")
    assert proc.returncode == 0, proc.stderr
    assert empty.is_dir() and read_trace(empty).count(Event.LAUNCH) == LAUNCHES


# a `launchgap convert` that stops inside the write, its partial directory made: it says where, then waits
CONVERT_THAT_WAITS = """
import sys, time
import launchgap.trace.convert as convert

def waiting(trace, out, version):
    print(out, flush=True)
    time.sleep(600)

convert.convert = waiting
from launchgap.cli import main
main(sys.argv[1:])
"""


def convert_that_waits(source: Path, output: Path) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CONVERT_THAT_WAITS, "convert", str(source), str(output)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_converts_partial_is_removed_by_the_next_and_a_live_ones_kept(tmp_path):
    """A convert killed by SIGKILL left an empty .NAME.XXXXXXXX.partial/ that no later convert removed."""
    out = tmp_path / "out.lg"
    started = []
    try:
        killed, stale = convert_that_waits(FORMAT1, out)
        started.append(killed)
        assert stale.is_dir() and stale.parent == tmp_path and stale.name.startswith(".out.lg.")
        killed.kill()
        killed.wait(timeout=60)
        assert stale.is_dir()  # what SIGKILL leaves behind
        live, writing = convert_that_waits(FORMAT1, out)
        started.append(live)
        assert writing.is_dir() and writing != stale
        proc = launchgap("convert", str(FORMAT1), str(out))
        assert proc.returncode == 0, proc.stderr
        assert not stale.exists()
        assert writing.is_dir(), "a live convert's partial was removed"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.lg", writing.name])
        assert read_trace(out).count(Event.LAUNCH) == LAUNCHES
    finally:
        for proc in started:
            proc.kill()
            proc.wait(timeout=60)
