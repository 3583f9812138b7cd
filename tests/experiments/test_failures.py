"""An experiment that did not measure what it should never reports success:
failed runs are shown and counted and make the exit non-zero, a scenario
whose every run failed is an error, and a host setting left changed is said
loudly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchgap.cli import main
from tests.conftest import CUDASIM

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")


def experiment(tmp_path: Path, *args: str, command: tuple[str, ...]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "launchgap.cli",
            "experiment",
            "noisy-neighbor",
            "--scenarios",
            "baseline",
            "--repeat",
            "2",
            "-o",
            str(tmp_path / "out"),
            *args,
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_command_that_does_not_exist_is_refused_before_anything_runs(tmp_path):
    proc = experiment(tmp_path, command=("/nonexistent/cmd",))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "launchgap: cannot run the workload: /nonexistent/cmd: no such file"
    assert not (tmp_path / "out").exists() and proc.stdout == ""


@needs_root
@pytest.mark.parametrize(
    "command, args, error",
    [
        (("false",), (), "the command exited with status 1"),
        (
            (str(CUDASIM), "decode", "--tokens", "3"),
            ("--metric", r"tokens per second: ([0-9.]+)"),
            "the metric 'tokens per second: ([0-9.]+)' was not in the output (its last line: 'tok/s: ",
        ),
    ],
)
def test_a_warm_up_that_fails_stops_the_experiment_with_an_error(tmp_path, command, args, error):
    proc = experiment(tmp_path, *args, command=command)
    assert proc.returncode == 1, proc.stderr
    text = flat(proc.stderr)
    assert text.startswith("launchgap: the warm-up run (baseline, no load) failed: " + error), text
    assert "every run would, so none was measured" in text
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["status"] == "failed" and results["runs"][0]["error"].startswith(error)


def results_with(runs: list[dict]) -> dict:
    return {
        "schema": "launchgap-experiment/1",
        "status": "complete",
        "metric": "tok/s: ([0-9.]+)",
        "higher_is_better": True,
        "scenarios": [{"name": "baseline"}, {"name": "cpu"}],
        "runs": runs,
    }


def run_row(scenario: str, metric: float | None, error: str | None = None, warmup: bool = False) -> dict:
    row = {
        "scenario": scenario,
        "metric": metric,
        "wall_s": 1.0,
        "warmup": warmup,
        "preempted_ms": 1.0,
        "runqueue_ms": 1.0,
        "irq_ms": 1.0,
        "sched_per_1k": 1.0,
        "top_culprit": None,
    }
    if error:
        row["error"] = error
    return row


def test_failed_runs_are_shown_counted_and_make_the_exit_non_zero(tmp_path):
    (tmp_path / "results.json").write_text(
        json.dumps(
            results_with(
                [
                    run_row("baseline", 10.0, warmup=True),
                    run_row("baseline", 10.0),
                    run_row("baseline", None, "the command exited with status 1"),
                    run_row("baseline", 11.0),
                    run_row("cpu", 7.0),
                    run_row("cpu", 7.5),
                ]
            )
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "experiment", "show", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "launchgap: 1 of 5 measured runs failed; their errors are in results.json" in flat(proc.stderr)
    header = next(line for line in proc.stdout.splitlines() if "scenario" in line)
    assert [c.strip() for c in header.strip("┃│ ").split("┃")][:3] == ["scenario", "runs", "failed"]
    baseline = next(line for line in proc.stdout.splitlines() if line.strip("│ ").startswith("baseline"))
    assert [c.strip() for c in baseline.strip("│ ").split("│")][:3] == ["baseline", "2", "1"]


@needs_root
def test_a_live_experiment_with_a_failed_run_shows_it_and_exits_non_zero(tmp_path):
    """Not only `experiment show` on a hand-made file: `experiment run` itself, whose second measured run
    fails (the command counts its runs in a file: the warm-up is 0, the measured ones 1 and 2)."""
    count = tmp_path / "count"
    proc = experiment(
        tmp_path,
        command=(
            "sh",
            "-c",
            f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; echo tok/s: 5; [ "$n" -ne 2 ]',
        ),
    )
    assert proc.returncode == 1, proc.stderr
    assert count.read_text() == "3\n"
    assert "launchgap: 1 of 2 measured runs failed; their errors are in results.json" in flat(proc.stderr)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    measured = [run for run in results["runs"] if not run["warmup"]]
    assert [run.get("error") for run in measured] == [None, "the command exited with status 1"]
    baseline = next(
        line for line in proc.stdout.splitlines() if "│" in line and line.strip("│ ").startswith("baseline")
    )
    assert [c.strip() for c in baseline.strip("│ ").split("│")][:3] == ["baseline", "1", "1"]


def test_a_scenario_whose_every_run_failed_is_an_error(tmp_path):
    (tmp_path / "results.json").write_text(
        json.dumps(
            results_with(
                [
                    run_row("baseline", 10.0, warmup=True),
                    run_row("baseline", 10.0),
                    run_row("baseline", 11.0),
                    run_row("cpu", None, "cpu: not loading (0.40 CPUs busy)"),
                    run_row("cpu", None, "the metric was absent"),
                ]
            )
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "experiment", "show", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    text = flat(proc.stderr)
    assert "launchgap: 2 of 4 measured runs failed" in text
    assert "launchgap: error: scenario cpu: every run failed (e.g. cpu: not loading (0.40 CPUs busy))" in text


@needs_root
def test_a_host_setting_left_changed_is_said_loudly_and_fails(tmp_path, monkeypatch):
    """runner.py passed on_event=lambda t: None where a mitigation could not be restored: never again."""
    from launchgap.experiments import mitigations

    problem = "/proc/irq/24/smp_affinity_list: Operation not permitted (was '0-1')"
    real_restore = mitigations.HostChanges.restore
    monkeypatch.setattr(
        mitigations.HostChanges, "restore", lambda self, retry_s=0.0: [*real_restore(self, retry_s), problem]
    )
    out = tmp_path / "out"
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
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--tokens",
            "3",
        ],
    )
    assert result.exit_code == 1, result.output
    text = flat(result.stderr)
    assert f"WARNING: HOST SETTINGS LEFT CHANGED: could not put back {problem}" in text
    assert "host settings could not be restored" in text
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "failed" and results["host_not_restored"] == [problem]


# ---- what a failed run's error quotes (issue 25, item 6) ---------------------------------------------


def stderr_of(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_a_failed_run_quotes_the_workloads_error_not_the_end_of_its_usage_text():
    from launchgap.experiments.runner import failed_run_error

    bogus = stderr_of(str(CUDASIM), "decode", "--bogus")
    first = bogus.stderr.splitlines()[0]
    assert bogus.returncode == 2 and first == f"{CUDASIM}: unrecognized option '--bogus'"
    assert failed_run_error(2, bogus.stderr, True) == f"the command exited with status 2: {first}"


def test_a_python_workload_that_raised_is_quoted_by_its_exception():
    from launchgap.experiments.runner import failed_run_error

    # a framework's shutdown message printed after the traceback (atexit) is not why it failed
    raised = stderr_of(
        sys.executable,
        "-c",
        "import atexit, sys; print('loading weights', file=sys.stderr); "
        "atexit.register(lambda: print('shutting down', file=sys.stderr)); "
        "raise ValueError('no model at /models/x')",
    )
    assert raised.stderr.splitlines()[-1] == "shutting down"
    assert raised.returncode == 1
    assert failed_run_error(1, raised.stderr, True) == (
        "the command exited with status 1: ValueError: no model at /models/x"
    )


def test_without_an_error_like_line_the_first_and_last_lines_are_quoted():
    from launchgap.experiments.runner import failed_run_error

    quiet = stderr_of("sh", "-c", "echo starting >&2; echo halfway >&2; echo stopped >&2; exit 3")
    assert failed_run_error(quiet.returncode, quiet.stderr, True) == (
        "the command exited with status 3: starting ... stopped"
    )


@needs_root
def test_a_failed_runs_whole_stderr_is_kept_and_named(tmp_path):
    direct = subprocess.run([str(CUDASIM), "decode", "--bogus"], capture_output=True, timeout=60)
    proc = experiment(tmp_path, command=(str(CUDASIM), "decode", "--bogus"))
    assert proc.returncode == 1
    out = tmp_path / "out"
    kept = out / "stderr" / "000-baseline-r0.txt"
    first = direct.stderr.decode().splitlines()[0]
    assert proc.stderr == (
        f"launchgap: the warm-up run (baseline, no load) failed: the command exited with status 2: "
        f"{first} (its whole stderr: {kept}); every run would, so none was measured (partial "
        f"results in {out})\n"
    )
    # byte for byte what cudasim wrote (and nothing of the recorder's, which was quiet)
    assert kept.read_bytes() == direct.stderr
    run = json.loads((out / "results.json").read_text())["runs"][0]
    assert run["stderr"] == "stderr/000-baseline-r0.txt" and run["error"].endswith(f"(its whole stderr: {kept})")


@needs_root
def test_a_workload_writing_bytes_that_are_not_utf8_fails_with_its_words_and_keeps_its_bytes(tmp_path):
    """Its output was read as the locale's text: an invalid byte raised UnicodeDecodeError in the experiment."""
    script = "import sys; sys.stderr.buffer.write(bytes([255]) + b' cannot open weights\\n'); sys.exit(3)"
    proc = experiment(tmp_path, command=(sys.executable, "-c", script))
    assert proc.returncode == 1, proc.stderr
    kept = tmp_path / "out" / "stderr" / "000-baseline-r0.txt"
    assert flat(proc.stderr).startswith(
        "launchgap: the warm-up run (baseline, no load) failed: the command exited "
        "with status 3: \\xff cannot open weights (its whole stderr: "
    )
    assert kept.read_bytes() == b"\xff cannot open weights\n"
