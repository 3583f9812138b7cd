"""Output that is not a terminal (a pipe, a log, CI) is fitted to 100 columns
(or more, where COLUMNS asks): no table cell collapsed to "…", no note wrapped
at 80 columns mid-sentence, whatever COLUMNS says."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.analysis.builder import IDLE, TraceBuilder

LONG = (100, 101, "a-thread-with-a-long-name")
HOG = (200, 200, "another-rather-long-command-name")


def launchgap(*args: str, columns: str = "40") -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": columns},
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc


def test_the_report_in_a_pipe_is_whole(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, LONG)
    for i in range(30):
        b.launch(3_000 + i * 1_000, 0, LONG)
    b.switch(40_000, 0, LONG, HOG)
    b.switch(80_000, 0, HOG, LONG)
    trace = b.write(tmp_path / "t.lg")
    proc = launchgap("report", str(trace.path))
    assert "…" not in proc.stdout
    verdict = json.loads(launchgap("report", str(trace.path), "--json").stdout)["verdict"]
    # the verdict, hundreds of characters, is a heading and a plain paragraph of lines of at most 100
    # characters (not a box drawn as one line), every word kept
    lines = proc.stdout.splitlines()
    start = lines.index(f"Verdict: {verdict['level']}") + 1
    paragraph = []
    while len(" ".join(paragraph)) < len(verdict["text"]):
        paragraph.append(lines[start + len(paragraph)])
    assert " ".join(paragraph) == verdict["text"]
    assert len(verdict["text"]) > 300 and len(paragraph) >= 4 and all(len(line) <= 100 for line in paragraph)
    # at 100 columns a long name folds inside its cell (above: never cut); where the pipe asks for more
    # columns, it is on one line
    wide = launchgap("report", str(trace.path), columns="1000").stdout
    assert any("a-thread-with-a-long-name 100/101" in line for line in wide.splitlines())
    assert any("another-rather-long-command-name (200)" in line for line in wide.splitlines())


def test_a_note_on_stderr_is_one_line(tmp_path):
    b = TraceBuilder()  # target mode: the views add a note
    b.switch(2_000, 0, IDLE, LONG)
    b.switch(9_000, 0, LONG, HOG)
    trace = b.write(tmp_path / "t.lg")
    proc = launchgap("timeline", str(trace.path), "-o", str(tmp_path / "t.png"))
    note = next(line for line in proc.stderr.splitlines() if "recorded in target mode" in line)
    assert note.endswith("record with --system for the whole machine")


def test_the_experiment_table_in_a_log_is_whole(tmp_path):
    from tests.experiments.test_failures import results_with, run_row

    (tmp_path / "results.json").write_text(
        json.dumps(
            results_with(
                [
                    run_row("baseline", 10.0, warmup=True),
                    run_row("baseline", 10.0),
                    run_row("baseline", 11.0),
                    run_row("cpu", 7.0),
                    run_row("cpu", 7.5),
                ]
            )
        )
    )
    proc = launchgap("experiment", "show", str(tmp_path))
    assert "…" not in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if "scenario" in line)
    assert "vs baseline 95% CI" in header and "p (Welch / MWU)" in header and "top culprit" in header
