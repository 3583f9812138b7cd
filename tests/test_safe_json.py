"""JSON launchgap did not write itself (a trace's meta.json and end.json, an experiment's results.json) is read
by one reader (launchgap.inputs.read_json): regular files only, at most MAX_JSON_BYTES, nesting and text
checked. The audit (issue 22, item 9): '{"deep": ' + '[' * 100000 + ... gave a RecursionError traceback in
every command, and a sibling directory's damaged results.json stopped every experiment beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from launchgap.trace.schema import END_FILE, META_FILE
from tests.analysis.test_corrupt_input import run
from tests.test_hostile_input import results_of
from tests.test_output_safety import small_trace

DEEP = '{"deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
MAX_JSON_DEPTH = 100  # as docs/trace-format.md says
NESTING = f"nested deeper than {MAX_JSON_DEPTH} levels"


def nested(depth: int) -> str:
    """A JSON object DEPTH levels deep, counting the object itself."""
    return '{"x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_the_reader_takes_what_launchgap_writes_and_refuses_the_rest(tmp_path):
    from launchgap.inputs import InputError, JsonError, parse_json, read_json

    assert parse_json(nested(MAX_JSON_DEPTH), "f") == {"x": json.loads("[" * 99 + "]" * 99)}
    for text, problem in [
        (nested(MAX_JSON_DEPTH + 1), NESTING),
        (DEEP, NESTING),  # RecursionError in the parser
        (b'{"a": "\xff"}', "not UTF-8 text"),
        ('{"a": "\\ud800"}', "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), not text"),
        ('["\\udc80", 1]', "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), not text"),
        ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ]:
        with pytest.raises(JsonError) as refused:
            parse_json(text, "f.json")
        assert (refused.value.problem, str(refused.value)) == (problem, f"f.json: {problem}")
    assert parse_json('{"a": "\\ud83d\\ude00"}', "f") == {"a": "\U0001f600"}  # a pair is text
    # brackets in strings, after escaped quotes and backslashes, are text, not nesting
    tricky = '{"a": "' + "[" * 300 + '\\" \\\\", "b": ["\\\\", "]]]{", "\\\\\\""], "c": "{{"}'
    assert parse_json(tricky, "f") == json.loads(tricky) and json.loads(tricky)["b"][2] == '\\"'
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as refused:
        read_json(fifo)
    assert refused.value.problem == "a FIFO, not a regular file"
    with pytest.raises(InputError) as refused:
        read_json("/dev/zero")
    assert refused.value.problem == "a character device, not a regular file"
    big = tmp_path / "big.json"
    big.write_text("[" + " " * 100 + "]")
    with pytest.raises(InputError) as refused:
        read_json(big, limit=100)
    assert refused.value.problem == "102 bytes, more than the 100 such a file may hold"


TRACE_COMMANDS = [
    ["report", "{t}"],
    ["report", "{t}", "--json"],
    ["diff", "{good}", "{t}"],
    ["timeline", "{t}", "-o", "{o}.png"],
    ["running-waiting", "{t}", "-o", "{o}.png"],
    ["export", "--csv", "{t}", "-o", "{o}.csv"],
    ["export", "--perfetto", "{t}", "-o", "{o}.pftrace"],
    ["convert", "{t}", "{o}.lg1"],
    ["doctor", "--trace", "{t}"],
]


@pytest.fixture
def traces(tmp_path) -> tuple[Path, Path]:
    return small_trace(tmp_path / "good.lg"), small_trace(tmp_path / "t.lg")


@pytest.mark.parametrize("command", TRACE_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_deep_metadata_is_one_line_in_every_command(traces, tmp_path, command):
    good, path = traces
    (path / META_FILE).write_text(DEEP)
    code, stdout, stderr = run(*[a.format(t=path, good=good, o=tmp_path / "out") for a in command])
    assert (code, stderr) == (
        2,
        f"launchgap: {path}: damaged trace: its metadata (meta.json) cannot be read ({NESTING})\n",
    )
    assert not list(tmp_path.glob("out*"))


# doctor --trace reads no rows (and these traces keep no host files)
@pytest.mark.parametrize("command", TRACE_COMMANDS[:-1], ids=lambda c: " ".join(c[:2]))
def test_a_deep_closing_summary_is_left_out_and_said_in_every_command(traces, tmp_path, command):
    good, path = traces
    (path / END_FILE).write_text(DEEP)
    line = f"its closing summary is damaged ({NESTING}) and was left out: the trace has no clean end"
    code, stdout, stderr = run(*[a.format(t=path, good=good, o=tmp_path / "out") for a in command])
    assert code == 0 and "Traceback" not in stderr + stdout, stderr
    if command[0] == "report":  # the report says it itself
        shown = json.loads(stdout)["trace"]["damage"] if "--json" in command else " ".join(stdout.split())
        assert line in shown
    else:
        assert stderr.splitlines().count(f"launchgap: warning: {path} is damaged: {line}") == 1, stderr


def test_deep_format_1_metadata_and_closing_row_are_one_line(tmp_path):
    """Format 1 keeps its metadata in the stream's schema and its summary in the closing row's detail."""
    source = small_trace(tmp_path / "t.lg1", version=1)
    table = pa.ipc.open_stream(str(source)).read_all()
    deep_meta = tmp_path / "meta.lg1"
    schema = table.schema.with_metadata({**table.schema.metadata, b"launchgap": DEEP.encode()})
    with pa.OSFile(str(deep_meta), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table.replace_schema_metadata(schema.metadata))
    code, _, stderr = run("report", str(deep_meta))
    assert (code, stderr) == (
        2,
        f"launchgap: {deep_meta}: damaged trace: its metadata (the `launchgap` JSON in the "
        f"schema) cannot be read ({NESTING})\n",
    )
    detail = table.column("detail").to_pylist()
    end = next(i for i, e in enumerate(table.column("event").to_pylist()) if e == "trace_end")
    detail[end] = DEEP
    deep_end = tmp_path / "end.lg1"
    with pa.OSFile(str(deep_end), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(
            table.set_column(table.schema.get_field_index("detail"), "detail", pa.array(detail, pa.string()))
        )
    code, stdout, _ = run("report", str(deep_end), "--json")
    assert code == 0
    assert json.loads(stdout)["trace"]["damage"] == [
        f"its closing summary is damaged ({NESTING}) and was left out: the trace has no clean end"
    ]


@pytest.mark.parametrize("command", [["experiment", "show", "{a}"], ["experiment", "compare", "{b}", "{a}"]])
@pytest.mark.parametrize(
    "content, problem", [(DEEP, f"not JSON: {NESTING}"), (nested(MAX_JSON_DEPTH + 1), f"not JSON: {NESTING}")]
)
def test_deep_results_are_one_line(tmp_path, command, content, problem):
    good = results_of(tmp_path, "b")
    damaged = tmp_path / "a"
    damaged.mkdir()
    (damaged / "results.json").write_text(content)
    code, _, stderr = run(*[a.format(a=damaged, b=good) for a in command])
    assert (code, stderr) == (2, f"launchgap: {damaged / 'results.json'}: not an experiment's results ({problem})\n")


def test_results_that_are_a_fifo_are_one_line(tmp_path):
    (tmp_path / "results.json").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "results.json")
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "experiment", "show", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        f"launchgap: {tmp_path / 'results.json'}: not an experiment's results (a FIFO, not a regular file)\n",
    )


STALE = """
import sys
from pathlib import Path
from launchgap.experiments.custodian import stale_results
from tests.experiments.lever_hosts import PrivateRunHost
print("\\n".join(stale_results(PrivateRunHost(Path(sys.argv[1])))))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the journal registry is root's (0700)")
def test_damaged_files_in_the_journal_registry_are_skipped_with_one_line_each(tmp_path):
    """An experiment reads every journal registered under /run/launchgap (to report experiments that died):
    one nested too deep, a FIFO or a link to /dev/zero must neither stop nor hang the experiment."""
    from launchgap.experiments import journal as journals
    from tests.experiments.lever_hosts import PrivateRunHost

    host_root = tmp_path / "host"
    registry = journals.registry(PrivateRunHost(host_root))
    (registry / "deep.json").write_text(DEEP)
    os.mkfifo(registry / "fifo.json", 0o600)
    (registry / "zero.json").symlink_to("/dev/zero")
    proc = subprocess.run(
        [sys.executable, "-c", STALE, str(host_root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{registry / 'deep.json'}: not a journal launchgap wrote (nested too deeply); left alone",
        f"{registry / 'fifo.json'}: is not a regular file; refusing to use it (remove it); left alone",
        f"{registry / 'zero.json'}: is a symbolic link; refusing to follow it (remove it); left alone",
    ]


def test_deep_cudasim_truth_is_one_line(tmp_path):
    path = tmp_path / "truth.json"
    path.write_text(DEEP)
    code, _, stderr = run("cudasim-truth", str(path))
    assert (code, stderr) == (2, f"launchgap: {path}: not cudasim ground truth (not a JSON file: {NESTING})\n")
