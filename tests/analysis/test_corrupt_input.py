"""Damaged input gives one clear line in every reader, never a traceback, a
crash or quietly wrong numbers; a trace cut short is said by every command.
Both formats: format 2 (a directory of Parquet segments, what the recorder
writes) and format 1 (the legacy Arrow stream, still read)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from launchgap.cli import main
from launchgap.trace import Event, TraceError, read_trace
from launchgap.trace.columns import format1_arrow_fields
from launchgap.trace.schema import END_FILE, META_FILE
from launchgap.views.report_json import report_json
from tests.analysis.builder import IDLE, TraceBuilder
from tests.conftest import CUDASIM
from tests.recorder.conftest import RECORDER, needs_bpf

T = (100, 101, "launcher")
HOG = (200, 200, "hog")


def run(*args: str) -> tuple[int, str, str]:
    """The CLI in this process (hundreds of runs: a fresh interpreter each would take minutes)."""
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(
            f"launchgap {' '.join(args)} raised {result.exception!r}\n{result.output}"
        ) from result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return code == 2 and len(lines) == 1 and lines[0].startswith("launchgap: ") and "Traceback" not in stderr


def record_small(out: Path, *formats: str) -> Path:
    """A real recording, small, in several segments or batches (the recorder closes one at least once a
    second): two launching threads, slow host steps."""
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
            *formats,
            "-o",
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "12",
            "--layers",
            "2",
            "--kernels-per-layer",
            "4",
            "--host-us",
            "150000",
            "--threads",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def small_real_trace(tmp_path_factory) -> Path:
    if not RECORDER.exists():
        pytest.skip("the recorder is not built")
    return record_small(tmp_path_factory.mktemp("real") / "small.lg")


@pytest.fixture(scope="module")
def small_real_format1_trace(tmp_path_factory) -> Path:
    if not RECORDER.exists():
        pytest.skip("the recorder is not built")
    return record_small(tmp_path_factory.mktemp("real1") / "small1.lg", "--format", "1")


def damaged(data: bytes, seed: int) -> bytes:
    """Seeded damage: a cut at a random point, random bytes over a stretch or everywhere, or bit flips."""
    rng = random.Random(seed)
    kind = seed % 6
    if kind == 0:
        return data[: rng.randrange(len(data))]
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.choice([16, 4096, 65536])))
    b = bytearray(data)
    if kind == 2:
        at = rng.randrange(max(1, len(b) - 64))
        b[at : at + 64] = bytes(rng.randrange(256) for _ in range(64))
        return bytes(b)
    for _ in range({3: 1, 4: 3, 5: 40}[kind]):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def damaged_directory(source: Path, target: Path, seed: int) -> str:
    """A copy of a format-2 trace with seeded damage to one of its files (a segment, most often; its metadata
    or closing summary; or a file gone): what was done, for the failure message."""
    shutil.copytree(source, target)
    rng = random.Random(seed)
    files = sorted(p for p in target.rglob("*") if p.is_file())
    segments = [p for p in files if p.suffix == ".parquet"]
    # most segments are small kinds' few rows: the launch and switch segments hold nearly every byte
    heavy = [p for p in segments if p.parent.name in (Event.LAUNCH.value, Event.SWITCH.value)]
    choice = rng.random()
    victim = (
        rng.choice(heavy)
        if choice < 0.5
        else rng.choice(segments)
        if choice < 0.8
        else rng.choice([target / META_FILE, target / END_FILE])
    )
    if seed % 7 == 6:
        victim.unlink()
        return f"removed {victim.relative_to(target)}"
    victim.write_bytes(damaged(victim.read_bytes(), seed))
    return f"damage {seed % 6} to {victim.relative_to(target)}"


COMMANDS = [
    ["report", "{t}"],
    ["report", "{t}", "--json"],
    ["diff", "{good}", "{t}", "--json"],
    ["export", "--csv", "{t}", "-o", "{o}.csv"],
    ["export", "--perfetto", "{t}", "-o", "{o}.pftrace"],
    ["timeline", "{t}", "-o", "{o}.t.html"],
    ["running-waiting", "{t}", "-o", "{o}.rw.html"],
]


def run_every_command(path: Path, good: Path, out: Path, what: str, outcomes: dict) -> None:
    for command in COMMANDS:
        argv = [a.format(t=path, good=good, o=out) for a in command]
        code, _, stderr = run(*argv)
        assert code in (0, 2), (what, argv, code, stderr)
        if code == 2:
            assert one_line_error(code, stderr), (what, argv, stderr)
            outcomes["refused"] += 1
        else:
            outcomes["read"] += 1


@needs_bpf
def test_seeded_damage_to_a_real_trace_never_breaks_a_command(small_real_trace, tmp_path):
    """Format 2: damage to any file of the directory (a segment, meta.json, end.json) or a file gone."""
    outcomes = {"refused": 0, "read": 0}
    for seed in range(60):
        path = tmp_path / f"d{seed}.lg"
        what = damaged_directory(small_real_trace, path, seed)
        run_every_command(path, small_real_trace, tmp_path / f"out{seed}", f"seed {seed}: {what}", outcomes)
    # the damage really reached both paths: some traces are refused, some read (an unlucky flip changes a value
    # no check can tell, or lands where nothing reads it; a damaged segment is left out and said)
    assert outcomes["refused"] and outcomes["read"], outcomes


@needs_bpf
def test_seeded_damage_to_a_real_format_1_trace_never_breaks_a_command(small_real_format1_trace, tmp_path):
    data = small_real_format1_trace.read_bytes()
    outcomes = {"refused": 0, "read": 0}
    for seed in range(30):
        path = tmp_path / f"d{seed}.lg"
        path.write_bytes(damaged(data, seed))
        run_every_command(path, small_real_format1_trace, tmp_path / f"out{seed}", f"seed {seed}", outcomes)
    assert outcomes["refused"] and outcomes["read"], outcomes


@needs_bpf
def test_a_damaged_segment_is_left_out_and_said(small_real_trace, tmp_path):
    copy = tmp_path / "copy.lg"
    shutil.copytree(small_real_trace, copy)
    whole = read_trace(small_real_trace)
    segment = sorted((copy / Event.SWITCH.value).glob("*.parquet"))[0]
    lost = pq.read_metadata(segment).num_rows
    segment.write_bytes(segment.read_bytes()[:-20])  # its footer gone
    trace = read_trace(copy)
    assert trace.count(Event.SWITCH) == whole.count(Event.SWITCH) - lost
    assert trace.count(Event.LAUNCH) == whole.count(Event.LAUNCH)
    # the segment said, and the rows it held against the recorder's own count of switches written
    written = json.loads((copy / END_FILE).read_text())["rows"][Event.SWITCH.value]
    assert len(trace.damage) == 2 and f"segment switch/{segment.name} is damaged" in trace.damage[0]
    assert trace.damage[1] == (
        f"switch: end.json counts {written:,} rows written, its segments hold {written - lost:,}: {lost:,} are missing"
    )
    code, stdout, stderr = run("report", str(copy))
    assert code == 0 and f"segment switch/{segment.name} is damaged" in " ".join(stdout.split())
    # the JSON says it too, beside the metrics, and the verdict rests on part of the trace and says so
    code, stdout, stderr = run("report", "--json", str(copy))
    report = json.loads(stdout)
    assert f"segment switch/{segment.name} is damaged" in report["warnings"]["trace"]
    assert report["verdict"]["text"].startswith("This trace is incomplete (segment switch/")
    assert run("report", "--strict", str(copy))[0] == 3


@needs_bpf  # root, for tracefs
def test_seeded_damage_to_a_real_dat_is_one_line(tmp_path):
    """Each damaged .dat is refused in one line naming it, or imported: then the trace holds exactly the
    events `trace-cmd report` itself lists in that damaged file (trace-cmd is the truth of what it holds)."""
    from tests.views.dat_maker import make_dat, report_counts
    from tests.views.test_tracecmd_import import IMPORTED_AS

    dat = make_dat(tmp_path / "real.dat", ["sleep", "0.1"])
    data = dat.read_bytes()
    outcomes = {"refused": 0, "read": 0}
    for seed in range(10):
        path, out = tmp_path / f"d{seed}.dat", tmp_path / f"d{seed}.lg"
        path.write_bytes(damaged(data, seed))
        code, _, stderr = run("import", str(path), "-o", str(out))
        assert code in (0, 2), (seed, code, stderr)
        if code == 2:
            assert one_line_error(code, stderr) and str(path) in stderr, (seed, stderr)  # which file, always
            outcomes["refused"] += 1
            continue
        listed, trace = report_counts(path), read_trace(out)
        assert {name: trace.count(kind) for name, kind in IMPORTED_AS.items()} == {
            name: listed.get(name, 0) for name in IMPORTED_AS
        }, (seed, stderr)
        outcomes["read"] += 1
    # the damage reached both paths (a cut or a flip in the event pages is refused; one in a page's unused tail,
    # or in a field nothing reads, is imported)
    assert outcomes["refused"] and outcomes["read"], outcomes


def test_an_impossible_duration_is_left_out_and_said(tmp_path):
    """A flipped bit gave an IRQ lasting 2.6 s in a 0.38 s trace: its p99 was 2.6 s. Such rows are left
    out, counted, and every command says so."""
    b = TraceBuilder(start_ns=1_000, end_ns=380_000_000)
    b.switch(2_000, 0, IDLE, T)
    for i in range(50):
        b.irq(10_000 + i * 1_000_000, 0, T, Event.HARDIRQ, "virtio0", 3_000, number=24)
    b.irq(60_000_000, 0, T, Event.HARDIRQ, "virtio0", 2_600_000_000, number=24)  # the flipped one
    b.rows.append(
        {"ts_ns": 70_000_000, "event": Event.LAUNCH, "cpu": 7, "pid": 100, "tid": 101, "api": "cuLaunchKernel"}
    )
    trace = b.write(tmp_path / "t.lg")
    assert trace.of(Event.HARDIRQ).height == 50 and trace.of(Event.LAUNCH).height == 0
    # 53 rows: the switch, 50 interrupts, the flipped one and the launch on a CPU the trace has not
    assert len(trace.damage) == 1 and trace.damage[0].startswith("2 of 53 rows hold values the trace rules out")
    assert trace.damage[0].endswith("they were left out")
    report = report_json(trace)
    assert report["trace"]["damage"] == list(trace.damage)
    assert report["warnings"]["trace"] == f"incomplete: {trace.damage[0]}"
    assert report["verdict"]["text"].startswith(f"This trace is incomplete ({trace.damage[0]})")
    assert next(i for i in report["overview"]["irqs"] if i["name"] == "virtio0")["ns"] == 50 * 3_000
    code, stdout, stderr = run("report", str(trace.path), "--strict")
    assert code == 3 and trace.damage[0] in " ".join(stdout.split())
    for argv in (
        ["export", "--csv", str(trace.path), "-o", str(tmp_path / "t.csv")],
        ["diff", str(trace.path), str(trace.path)],
    ):
        code, _, stderr = run(*argv)
        assert code == 0 and "is damaged: 2 of" in " ".join(stderr.split())


def test_a_cpu_the_recorder_could_not_read_is_unknown_not_impossible(tmp_path):
    """On a kernel whose task_struct has no CPU field launchgap knows, the recorder writes TASK_CPU_UNKNOWN
    as a wakeup's target_cpu and a migration's orig_cpu (core_fixes.bpf.h): those rows are kept; a CPU
    number beyond the topology's in the same columns is still damage."""
    from launchgap.trace.schema import TASK_CPU_UNKNOWN

    b = TraceBuilder(start_ns=1_000, end_ns=380_000_000)
    b.switch(2_000, 0, IDLE, T)
    b.rows.append(
        {
            "ts_ns": 3_000,
            "event": Event.WAKEUP,
            "cpu": 0,
            "pid": 100,
            "tid": 102,
            "comm": "w",
            "target_cpu": TASK_CPU_UNKNOWN,
        }
    )
    b.rows.append(
        {
            "ts_ns": 4_000,
            "event": Event.MIGRATE,
            "cpu": 0,
            "pid": 100,
            "tid": 102,
            "orig_cpu": TASK_CPU_UNKNOWN,
            "dest_cpu": 0,
        }
    )
    b.rows.append(
        {"ts_ns": 5_000, "event": Event.WAKEUP, "cpu": 0, "pid": 100, "tid": 103, "comm": "w", "target_cpu": 9}
    )
    trace = b.write(tmp_path / "t.lg")
    assert trace.of(Event.WAKEUP)["tid"].to_list() == [102] and trace.of(Event.MIGRATE).height == 1
    # the switch and three rows: only the wakeup to CPU 9 is out of the trace's 2 CPUs
    assert len(trace.damage) == 1 and trace.damage[0].startswith("1 of 4 rows hold values the trace rules out")


def test_a_trace_whose_bounds_are_damaged_is_refused(tmp_path):
    b = TraceBuilder(start_ns=1_000, end_ns=5_000)  # say the end row's end_ns lost a high bit
    for i in range(2000):
        b.launch(2_000 + i * 1_000_000, 0, T)
    with pytest.raises(TraceError, match="its start, end or topology must be damaged"):
        b.write(tmp_path / "t.lg")


def _meta_bytes(path: Path, old: bytes, new: bytes) -> Path:
    where = path / META_FILE if path.is_dir() else path
    data = where.read_bytes()
    assert data.count(old) == 1
    where.write_bytes(data.replace(old, new))
    return path


@pytest.mark.parametrize("version", [2, 1])
def test_damaged_metadata_is_called_that_not_a_csv_problem(tmp_path, version):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    path = _meta_bytes(b.write(tmp_path / "t.lg", version=version).path, b'"start_ns": 1000', b'"start_ns"! 1000')
    code, _, stderr = run("report", str(path))
    assert one_line_error(code, stderr)
    assert "damaged trace: its metadata" in stderr and "CSV" not in stderr


@pytest.mark.parametrize(
    "text, message",
    [
        (None, None),  # a BOM before the study's header: read
        ("100,cuLaunchKernel,1,1,x,0,1,1,1,1,1,1,0,0x7,0,0\n", "a CSV without a header row"),
        ("timestamp_ns,event_type,pid,tid,comm,cpu\n1,schedSwitch,1,1,x,0\n", "no column grid_x, grid_y"),
        (
            "timestamp_ns,event_type,pid,tid,comm,cpu,grid_x,grid_y,grid_z,block_x,block_y,block_z,shared_mem,stream,"
            "last_offcpu_ns,last_oncpu_ns\n1,cuLaunchKernel,1,1,x,0,1,1,1,1,1,abc,0,0x7,0,0\n",
            "line 2: column block_z holds 'abc', not a number",
        ),
    ],
)
def test_csv_problems_are_named(tmp_path, text, message):
    from tests.analysis.study_tool import HEADER

    path = tmp_path / "s.csv"
    if text is None:
        path.write_bytes(b"\xef\xbb\xbf" + f"{HEADER}\n0,cuLaunchKernel,1,1,x,0,1,1,1,1,1,1,0,0x7,0,0\n".encode())
        code, stdout, stderr = run("report", str(path), "--json")
        assert code == 0 and json.loads(stdout)["overview"]["launches"] == 1, stderr
        return
    path.write_text(text)
    code, _, stderr = run("report", str(path))
    assert one_line_error(code, stderr) and message in stderr, stderr
    assert "Arrow" not in stderr


def test_a_single_batch_trace_cut_short_says_truncated(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.launch(3_000, 0, T)
    data = b.write(tmp_path / "t.lg", version=1).path.read_bytes()
    cut = tmp_path / "cut.lg"
    cut.write_bytes(data[:-200])
    code, _, stderr = run("report", str(cut))
    assert one_line_error(code, stderr)
    assert "truncated before its first complete batch" in stderr and "holds no events" not in stderr


def test_every_column_checked(tmp_path):
    """A column of the wrong type (a damaged schema, or another tool's stream) is named."""
    schema = pa.schema(
        [pa.field(f.name, pa.string()) if f.name == "cpu" else f for f in format1_arrow_fields()],
        metadata={"format": "launchgap-trace/1", "launchgap": json.dumps({"start_ns": 0})},
    )
    path = tmp_path / "t.lg"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema):
        pass
    with pytest.raises(TraceError, match="column 'cpu' is string, not uint32"):
        read_trace(path)


def test_a_segment_with_a_column_of_the_wrong_type_is_left_out_and_said(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    for i in range(10):
        b.launch(3_000 + i, 0, T)
    path = b.write(tmp_path / "t.lg").path
    segment = path / Event.LAUNCH.value / "000001.parquet"
    table = pq.read_table(segment)
    pq.write_table(
        table.set_column(table.schema.get_field_index("cpu"), "cpu", table["cpu"].cast(pa.string())), segment
    )
    trace = read_trace(path)
    assert trace.count(Event.LAUNCH) == 0 and trace.count(Event.SWITCH) == 1
    assert trace.damage == (
        "segment launch/000001.parquet is damaged (column 'cpu' is String, not uint32) and was left out",
    )


def cut_trace(tmp_path: Path, version: int, every_switch: bool = False) -> Path:
    """A trace cut short: format 1, a stream whose end is cut off; format 2, as a killed recorder leaves it (no
    end.json, the last segment still under its partial name). EVERY_SWITCH: recorded --system."""
    b = TraceBuilder(meta_extra={"mode": "system"} if every_switch else {})
    b.switch(2_000, 0, IDLE, T)
    for i in range(2000):
        b.launch(3_000 + i * 10, 0, T)
        if i % 100 == 0:
            b.switch(3_001 + i * 10, 0, T, HOG)
            b.switch(3_002 + i * 10, 0, HOG, T)
    whole = b.write(tmp_path / "whole.lg", batch_rows=500, version=version).path
    cut = tmp_path / "cut.lg"
    if version == 1:
        cut.write_bytes(whole.read_bytes()[:-3_000])
    else:
        shutil.copytree(whole, cut)
        (cut / END_FILE).unlink()
        last = sorted((cut / Event.LAUNCH.value).glob("*.parquet"))[-1]
        last.rename(last.with_name(f".{last.name}.partial"))
    return cut


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize(
    "command",
    [
        ["export", "--csv", "{cut}", "-o", "{tmp}/x.csv"],
        ["export", "--perfetto", "{cut}", "-o", "{tmp}/x.pftrace"],
        ["timeline", "{cut}", "-o", "{tmp}/x.png"],
        ["running-waiting", "{cut}", "-o", "{tmp}/x.png"],
        ["diff", "{cut}", "{cut}"],
    ],
)
def test_every_command_says_a_trace_was_cut_short(tmp_path, command, version):
    # running-waiting counts only a trace that records every switch (it refuses a target-mode one)
    cut = cut_trace(tmp_path, version, every_switch=command[0] == "running-waiting")
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *[a.format(cut=cut, tmp=tmp_path) for a in command]],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {cut} was cut short (the recorder did not stop cleanly)" in " ".join(proc.stderr.split())


@pytest.mark.parametrize("version", [2, 1])
def test_diff_json_carries_the_cut(tmp_path, version):
    cut = cut_trace(tmp_path, version)
    whole = tmp_path / "whole.lg"
    code, stdout, _ = run("diff", str(whole), str(cut), "--json")
    assert code == 0
    traces = json.loads(stdout)["traces"]
    assert (traces["a"]["truncated"], traces["a"]["clean_end"]) == (False, True)
    assert (traces["b"]["truncated"], traces["b"]["clean_end"]) == (True, False)


def test_a_column_added_to_the_format_later_reads_as_nulls_from_older_traces(tmp_path):
    """Columns may be added without a new format version: an older trace lacks them, and is not damaged
    (format 1 gained `return_code`; a format-2 kind may gain a nullable column the same way)."""
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.sync(3_000, 0, T, 500)
    b.rows.append(
        {
            "ts_ns": 4_000,
            "event": Event.RUNTIME_ONLY,
            "cpu": 0,
            "pid": 100,
            "tid": 101,
            "runtime_api": "cudaLaunchKernel",
            "return_code": 100,
            "duration_ns": 50,
        }
    )
    path = b.write(tmp_path / "t2.lg").path
    segment = path / Event.SYNC.value / "000001.parquet"
    pq.write_table(pq.read_table(segment).drop_columns(["bytes"]), segment)
    trace = read_trace(path)
    assert trace.of(Event.SYNC, "bytes")["bytes"].to_list() == [None] and trace.damage == ()

    table = pa.ipc.open_stream(str(b.write(tmp_path / "t1.lg", version=1).path)).read_all()
    older = tmp_path / "older.lg"
    with pa.OSFile(str(older), "wb") as sink, pa.ipc.new_stream(sink, table.drop_columns(["return_code"]).schema) as w:
        w.write_table(table.drop_columns(["return_code"]))
    trace = read_trace(older)
    assert trace.of(Event.RUNTIME_ONLY, "return_code")["return_code"].to_list() == [None] and trace.damage == ()


def test_a_truncated_dat_names_its_file(tmp_path):
    from tests.views.dat_maker import make_dat

    if os.geteuid() != 0:
        pytest.skip("needs root to make a .dat with tracefs (CI runs as root)")
    data = make_dat(tmp_path / "real.dat", ["sleep", "0.05"]).read_bytes()
    cut = tmp_path / "cut.dat"
    cut.write_bytes(data[: len(data) // 10])  # trace-cmd reads such a file without complaint, and finds nothing
    code, _, stderr = run("import", str(cut), "-o", str(tmp_path / "cut.lg"))
    assert one_line_error(code, stderr)
    assert stderr.strip() == (
        f"launchgap: {cut}: trace-cmd decoded no events from it (a .dat cut short loses its "
        f"event pages: is the file complete?)"
    )
    assert not (tmp_path / "cut.lg").exists()


def test_a_task_id_no_kernel_gives_is_left_out(tmp_path):
    """Seed 14 of the fuzz above flipped a pid to 2,889,753,349: the Perfetto export raised a traceback."""
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.switch(3_000, 0, T, (2_889_753_349, 2_889_753_349, "hog"))
    trace = b.write(tmp_path / "t.lg")
    assert trace.of(Event.SWITCH).height == 1 and "task ids above the kernel's limit" in trace.damage[0]
    code, _, stderr = run("export", "--perfetto", str(trace.path), "-o", str(tmp_path / "t.pftrace"))
    assert code == 0 and "is damaged: 1 of" in " ".join(stderr.split())
