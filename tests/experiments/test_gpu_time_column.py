"""Experiments carry the GPU time (issue 24, items 3 and 4): per run, the GPU idle interference caused
(exact when recorded with --gpu-activity) and the gain its trace predicts without the scenario's load;
`experiment show` a column of GPU idle caused per scenario with its statistics, and the predicted gain
against the measured one.

The real experiment: cudasim pinned to CPU 1, a baseline and a scenario with one stress-ng worker pinned
there, recorded with GPU activity; each run's cudasim writes its truth (named by its pid, which the run's
`verified.enter.pid` gives). The GPU idle of each run is checked against the truth computed from that
run's truth.json and its trace's thread states (tests/analysis/test_gpu_time_diff.py). The hand-made
results check the statistics and the table against numbers worked by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

import pytest

from tests.analysis.test_gpu_time import Run, truth_caused
from tests.conftest import CUDASIM, REPO
from tests.experiments.test_wording import BASE, SLOWER, cells, column, experiment

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")

SCENARIOS = """
[scenarios.baseline]
mitigations = { cpus = [1] }
[scenarios.hog]
loads = [{ type = "cpu", workers = 1, cpus = [1] }]
mitigations = { cpus = [1] }
"""
# exec keeps the shell's pid: the truth is named by the pid the run's enter report gives
WITH_TRUTH = 'exec "$@" --truth "$0/truth-$$.json"'


def launchgap(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=1200
    )


def table_rows(stdout: str, title: str) -> dict[str, dict[str, str]]:
    """The rows of the table whose title starts with TITLE, by first cell, each cell by its column's name."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    header = next(cells(line) for line in lines[start:] if "┃" in line)
    rows = {}
    for line in lines[start + 1 :]:
        if line.startswith("└"):  # the table's bottom edge
            break
        if line.startswith("│"):
            row = cells(line)
            rows[row[0]] = dict(zip(header, row))
    return rows


@needs_root
def test_each_runs_gpu_idle_is_the_truth_and_show_gives_its_statistics_and_the_gains(tmp_path):
    truths = tmp_path / "truths"
    truths.mkdir()
    scenarios = tmp_path / "s.toml"
    scenarios.write_text(SCENARIOS)
    out = tmp_path / "out"
    proc = launchgap(
        "experiment",
        "run",
        str(scenarios),
        "--gpu-activity",
        "--repeat",
        "2",
        "--seed",
        "3",
        "-o",
        str(out),
        "--",
        "sh",
        "-c",
        WITH_TRUTH,
        str(truths),
        str(CUDASIM),
        "decode",
        "--quiet",
        "--kernel-us",
        "2:4",
        "--tokens",
        "40",
        "--seed",
        "7",
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["gpu_activity"] is True
    from launchgap.analysis.report import build_report
    from launchgap.trace import read_trace

    # per run, from its truth.json (and its trace's thread states): the GPU idle caused, and tokens/s
    truth_of: dict[int, tuple[int, int, float]] = {}
    for i, run in enumerate(results["runs"]):
        g = run["gpu_time"]
        assert g["mode"] == "exact", g
        pid = run["verified"]["enter"]["pid"]
        truth = json.loads((truths / f"truth-{pid}.json").read_text())
        trace = read_trace(out / run["trace"])
        caused, tolerance = truth_caused(Run(trace, [truth], ""))
        truth_of[i] = (caused, tolerance, truth["tokens_per_s"])
        # the run's measure is cudasim's tokens/s (printed to 2 decimals)
        assert run["metric"] == pytest.approx(truth["tokens_per_s"], abs=0.006)
        assert g["idle_caused_low_ns"] == g["idle_caused_high_ns"]
        # what a failure needs to be understood: the trace's losses and the report's causes beside the numbers
        assert abs(g["idle_caused_high_ns"] - caused) <= tolerance, (
            run["scenario"],
            g,
            caused,
            tolerance,
            trace.lost.rows(),
            [(c.cause, c.ns) for c in build_report(trace).gpu_time.causes],
        )
        if run["scenario"] == "hog":
            # the load's processes: the leash, stress-ng and its worker; the prediction made without them
            assert len(g["load_pids"]) >= 3
            assert g["predicted_gain_high_percent"] is not None
        else:
            assert g["load_pids"] == [] and g["predicted_gain_high_percent"] is None
    summary = json.loads((out / "summary.json").read_text())
    measured = {
        name: [i for i, r in enumerate(results["runs"]) if r["scenario"] == name and not r["warmup"]]
        for name in ("baseline", "hog")
    }
    for name, runs in measured.items():
        idle = summary[name]["gpu_idle_caused"]
        assert idle["mode"] == "exact" and idle["runs"] == 2
        # the median of two runs is their mean: of the truths, within the runs' tolerances
        truth_ms = median(truth_of[i][0] for i in runs) / 1e6
        assert abs(idle["high_ms"]["median"] - truth_ms) <= max(truth_of[i][1] for i in runs) / 1e6
        assert column(proc.stdout, name, "GPU idle caused") == f"{idle['high_ms']['median']:.2f} ms"
    gain = summary["hog"]["gain"]
    assert summary["baseline"]["gain"] is None
    hog = [results["runs"][i] for i in measured["hog"]]
    # the summary carries the runs' predictions (their statistics are worked by hand in the next test; the
    # prediction itself is held to a measurement in tests/analysis/test_gpu_time.py)
    assert gain["predicted_high_percent"] == median(r["gpu_time"]["predicted_gain_high_percent"] for r in hog)
    assert gain["predicted_low_percent"] == median(r["gpu_time"]["predicted_gain_low_percent"] for r in hog)
    # measured: the baseline's median tokens a second over the loaded scenario's, from the runs' truths
    base = median(truth_of[i][2] for i in measured["baseline"])
    loaded = median(truth_of[i][2] for i in measured["hog"])
    assert gain["measured_percent"] == pytest.approx(100 * (base / loaded - 1), abs=0.01)
    rows = table_rows(proc.stdout, "without each scenario's load")
    assert list(rows) == ["hog"]
    assert rows["hog"]["predicted gain"] == f"{gain['predicted_high_percent']:.1f}%"
    assert rows["hog"]["measured gain"] == f"{gain['measured_percent']:.1f}%"
    assert rows["hog"]["GPU time"] == "exact"


def gpu(mode: str, low_ms: float, high_ms: float, gain: tuple[float, float] | None = None) -> dict:
    return {
        "mode": mode,
        "why": None,
        "idle_caused_low_ns": int(low_ms * 1e6),
        "idle_caused_high_ns": int(high_ms * 1e6),
        "active_ns": 2_000_000_000,
        "load_pids": [11, 12] if gain else [],
        "predicted_gain_low_percent": gain[0] if gain else None,
        "predicted_gain_high_percent": gain[1] if gain else None,
    }


def with_gpu(directory: Path, per_scenario: dict[str, list[dict]]) -> None:
    path = directory / "results.json"
    results = json.loads(path.read_text())
    seen: dict[str, int] = {}
    for run in results["runs"]:
        if run["warmup"]:
            continue
        i = seen.get(run["scenario"], 0)
        seen[run["scenario"]] = i + 1
        run["gpu_time"] = per_scenario[run["scenario"]][i]
    path.write_text(json.dumps(results))


def test_show_gives_the_gpu_idle_statistics_and_the_gains_worked_by_hand(tmp_path):
    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER, "net": SLOWER})
    with_gpu(
        out,
        {
            "baseline": [gpu("exact", 1, 1), gpu("exact", 2, 2), gpu("exact", 3, 3)],
            "cpu": [gpu("exact", 10, 10, (30, 30)), gpu("exact", 12, 12, (34, 34)), gpu("exact", 14, 14, (32, 32))],
            "net": [gpu("bounds", 4, 20, (5, 40)), gpu("bounds", 6, 30, (7, 50)), gpu("bounds", 5, 25, (6, 45))],
        },
    )
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    cpu = summary["cpu"]["gpu_idle_caused"]
    assert cpu["mode"] == "exact" and cpu["high_ms"]["median"] == 12.0
    # 12 +- t(0.975, 2) * 2 / sqrt(3) = 12 +- 4.9683
    assert (cpu["high_ms"]["ci_low"], cpu["high_ms"]["ci_high"]) == (
        pytest.approx(7.0317, abs=1e-4),
        pytest.approx(16.9683, abs=1e-4),
    )
    assert column(proc.stdout, "cpu", "GPU idle caused") == "12.00 ms"
    assert column(proc.stdout, "cpu", "GPU idle 95% CI") == "7.03..16.97 ms"
    assert column(proc.stdout, "baseline", "GPU idle caused") == "2.00 ms"
    # bounds: the medians of the lower and upper bounds; the interval from the lower's low to the upper's high
    # (5 +- 4.3027 * 1 / sqrt(3) = 2.516..; 25 +- 4.3027 * 5 / sqrt(3) = ..37.42)
    assert column(proc.stdout, "net", "GPU idle caused") == "5.00..25.00 ms (bounds)"
    assert column(proc.stdout, "net", "GPU idle 95% CI") == "2.52..37.42 ms"
    # measured: medians 100 and 75: 100 / 75 - 1 = 33.3% more; Welch's 22.73..27.27% slower -> 29.4..37.5% more
    gain = summary["cpu"]["gain"]
    assert (gain["predicted_low_percent"], gain["predicted_high_percent"]) == (32, 32)
    assert (gain["predicted_min_percent"], gain["predicted_max_percent"]) == (30, 34)
    assert gain["measured_percent"] == pytest.approx(100 / 3)
    assert gain["measured_ci_low_percent"] == pytest.approx(100 * 22.733 / 77.267, abs=1e-2)
    assert summary["baseline"]["gain"] is None
    rows = table_rows(proc.stdout, "without each scenario's load")
    assert list(rows) == ["cpu", "net"]
    assert [
        rows["cpu"][c]
        for c in (
            "traces",
            "GPU time",
            "predicted gain",
            "predicted, over the runs",
            "measured gain",
            "measured 95% CI",
        )
    ] == ["3", "exact", "32.0%", "30.0%..34.0%", "33.3%", "29.4%..37.5%"]
    assert [rows["net"][c] for c in ("GPU time", "predicted gain", "predicted, over the runs")] == [
        "bounds",
        "6.0% to 45.0%",
        "5.0%..50.0%",
    ]


def test_results_from_before_gpu_time_show_dashes_and_no_gain_table(tmp_path):
    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER})
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    assert column(proc.stdout, "cpu", "GPU idle caused") == "-"
    assert "without each scenario's load" not in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cpu"]["gpu_idle_caused"] is None and summary["cpu"]["gain"] is None


def test_a_scenario_name_with_markup_is_shown_as_it_is_in_the_gain_table(tmp_path):
    name = "[bold]cpu\x1b[31m"
    out = experiment(tmp_path / "e", {"baseline": BASE, name: SLOWER})
    with_gpu(out, {"baseline": [gpu("exact", 1, 1)] * 3, name: [gpu("exact", 10, 10, (30, 30))] * 3})
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout, "without each scenario's load")
    assert list(rows) == ["[bold]cpu\\x1b[31m"]
