"""Every user error found by the audit is one clear line (`launchgap: ...`),
never a traceback; and every scenario error comes before the warm-up run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchgap.cli import main
from tests.analysis.builder import IDLE, TraceBuilder
from tests.conftest import CUDASIM

T = (100, 101, "launcher")


def launchgap(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def assert_one_line(proc: subprocess.CompletedProcess, message: str, code: int = 2) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and len(lines) == 1 and lines[0].startswith("launchgap: "), proc.stderr
    assert message in lines[0], lines[0]


@pytest.fixture
def trace(tmp_path) -> Path:
    b = TraceBuilder(meta_extra={"mode": "system"})
    b.switch(2_000, 0, IDLE, T)
    b.launch(3_000, 0, T)
    b.switch(9_000, 0, T, IDLE)
    return b.write(tmp_path / "run.lg").path


TOML_CASES = [
    ("loads = [5]", "no [scenarios.NAME] tables (unknown top-level key(s): loads)"),
    ("scenarios = 5", "scenarios: 5 is not of type 'object'"),
    ("[scenarios.x]\nloads = [5]", "scenarios.x.loads[0]: 5: a load is a name (cpu, network, disk) or a table"),
    ('[scenarios.x]\nloads = [{type = "cpu", foo = 1}]', "scenarios.x.loads[0]: unknown key(s) ('foo' was unexpected)"),
    ('[scenarios.x]\nmitigations = {nice = "abc"}', "scenarios.x.mitigations.nice: 'abc' is not of type 'integer'"),
    ('[scenarios.x]\nlaods = ["cpu"]', "scenarios.x: unknown key(s) ('laods' was unexpected)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a TOML file (not UTF-8 text)"),
]


@pytest.mark.parametrize("text, message", TOML_CASES)
def test_scenario_files(tmp_path, text, message):
    path = tmp_path / "s.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    proc = launchgap("experiment", "run", str(path), "-o", str(tmp_path / "out"), "--", "true")
    assert_one_line(proc, f"{path}: {message}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "(["], "--metric '([': not a regular expression (unterminated character set"),
        (["--scenarios", ","], "no scenario named (built in: baseline, cpu, network, disk, heavy, pinned)"),
        (
            ["--scenarios", "disk", "--disk-dir", "/nonexistent"],
            "scenario disk: disk: /nonexistent: no such directory (--disk-dir names where fio writes)",
        ),
    ],
)
def test_experiment_options(tmp_path, args, message):
    proc = launchgap(
        "experiment",
        "noisy-neighbor",
        "--repeat",
        "2",
        "-o",
        str(tmp_path / "out"),
        *args,
        "--",
        str(CUDASIM),
        "decode",
    )
    assert_one_line(proc, message)
    assert not (tmp_path / "out").exists()


def test_an_experiment_as_a_normal_user(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = CliRunner().invoke(
        main,
        [
            "experiment",
            "noisy-neighbor",
            "--scenarios",
            "baseline",
            "--repeat",
            "2",
            "-o",
            str(tmp_path / "out"),
            "--",
            str(CUDASIM),
            "decode",
        ],
    )
    # CliRunner turns the CLI's sys.exit(2) into exit_code 2 and keeps the SystemExit; any other exception
    # would be a crash, not the one-line refusal
    assert result.exit_code == 2, (result.exit_code, result.exception, result.output)
    assert type(result.exception) is SystemExit and result.exception.code == 2, repr(result.exception)
    assert result.stderr.strip() == (
        "launchgap: experiments record with eBPF and may change host settings: run as root (sudo)"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="a scenario's checks come after the root check")
@pytest.mark.parametrize(
    "scenario, env, message",
    [
        (
            '[scenarios.shm]\nloads = [{type = "disk", directory = "/dev/shm"}]',
            {},
            "scenario shm: disk: /dev/shm is on tmpfs, not a block device",
        ),
        (
            '[scenarios.hog]\nloads = ["cpu"]',
            {"PATH": "/nonexistent"},
            "scenario hog: stress-ng not found: install the stress-ng package",
        ),
    ],
)
def test_every_scenario_error_comes_before_the_warm_up(tmp_path, scenario, env, message):
    """These were found only when the scenario's turn came, after the warm-up and maybe hours of runs."""
    path = tmp_path / "s.toml"
    path.write_text(scenario)
    proc = launchgap(
        "experiment",
        "run",
        str(path),
        "--repeat",
        "2",
        "-o",
        str(tmp_path / "out"),
        "--",
        str(CUDASIM),
        "decode",
        env=env,
    )
    assert_one_line(proc, message)
    assert proc.stdout == "" and not (tmp_path / "out").exists()  # nothing ran, not even the warm-up


@pytest.mark.parametrize(
    "content, message",
    [
        ("{}", "not an experiment's results (no schema launchgap-experiment/1)"),
        ("[]", "not an experiment's results (no schema launchgap-experiment/1)"),
        (b"\x00\xff\x00binary", "not an experiment's results (not JSON"),
        (
            '{"schema": "launchgap-experiment/1", "runs": []}',
            "damaged experiment results (missing or malformed: status",
        ),
    ],
)
def test_experiment_show_on_what_is_not_results(tmp_path, content, message):
    (tmp_path / "results.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_one_line(launchgap("experiment", "show", str(tmp_path)), message)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only filesystem (root writes anywhere else)")
def test_experiment_show_in_a_read_only_directory_still_shows(tmp_path):
    import json

    from tests.experiments.test_failures import results_with, run_row

    place = tmp_path / "ro"
    place.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(place)], check=True)
    try:
        (place / "results.json").write_text(
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
        subprocess.run(["mount", "-o", "remount,ro", str(place)], check=True)
        proc = launchgap("experiment", "show", str(place))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
        assert proc.stderr.strip() == (
            f"launchgap: note: {place}: summary.json and the plots were not written (Read-only file system)"
        )
        assert "31.0% slower" in proc.stdout  # the cpu scenario, 10.5 -> 7.25 tok/s
    finally:
        subprocess.run(["umount", str(place)], check=False)


@pytest.mark.parametrize(
    "args, message",
    [
        (["timeline"], "name at least one trace"),
        (["running-waiting"], "name at least one trace"),
        (["timeline", "{trace}", "--min", "nan"], "--min: nan is not a finite number of seconds"),
        (["running-waiting", "{trace}", "--max", "inf"], "--max: inf is not a finite number of seconds"),
        (["cudasim-truth", "{trace}"], "not cudasim ground truth (a directory, not a JSON file: a trace?)"),
    ],
)
def test_view_and_truth_arguments(tmp_path, trace, args, message):
    assert_one_line(launchgap(*[a.format(trace=trace) for a in args], cwd=tmp_path), message)


def test_a_recorder_that_is_not_a_program(tmp_path):
    proc = launchgap("record", "-o", str(tmp_path / "x.lg"), "--", "true", env={"LAUNCHGAP_RECORDER": "/etc/passwd"})
    assert_one_line(proc, "/etc/passwd: not an executable recorder binary")


@pytest.mark.parametrize(
    "monitor, message",
    [
        ("/etc/passwd", "/etc/passwd: not an executable monitor binary"),
        ("/etc", "/etc: not an executable monitor binary"),
    ],
)
def test_a_monitor_that_is_not_a_program(tmp_path, monitor, message):
    # once a traceback (os.execv's PermissionError): the monitor's binary is checked as the recorder's is
    assert_one_line(launchgap("monitor", "--help", env={"LAUNCHGAP_MONITOR": monitor}), message)
