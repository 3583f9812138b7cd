"""How the experiment tables show measured values: a value and its spread rounded to one place, set by the
spread, in words ("227.3 (sd 10.0)", never "227.26 +- 9.9872"), and outliers named by the round they ran
in, never as an index into a list the reader cannot see ("outliers: runs 0")."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from io import StringIO

from rich.console import Console

from launchgap.experiments.compare import render


def cells(stdout: str, first: str) -> list[str]:
    row = next(line for line in stdout.splitlines() if "│" in line and line.strip("│ ").startswith(first))
    return [c.strip() for c in row.strip("│ ").split("│")]


def test_a_value_and_its_spread_are_rounded_alike_by_the_spread():
    from launchgap.views.numbers import places, with_sd

    # the numbers: the sd's first two figures set the place
    assert with_sd(227.26, 9.9872, places([9.9872])) == "227.3 (sd 10.0)"
    assert with_sd(0.012341, 0.000437, places([0.000437])) == "0.01234 (sd 0.00044)"
    assert with_sd(1843.0, 121.0, places([121.0])) == "1843 (sd 121)"
    assert with_sd(227.26, None, places([None], [227.26])) == "227.3"  # one run: four figures


def test_experiment_show_rounds_by_the_spread_and_names_outliers_by_round(tmp_path):
    baseline = [10.0, 10.1, 10.0, 10.1, 14.0]  # round 5 lies far off: an outlier (MAD z-score > 3.5)
    cpu = [7.0, 7.5, 7.2, 7.4, 7.3]
    runs = [{"scenario": "baseline", "metric": 10.0, "round": 0, "warmup": True, "wall_s": 1.0}]
    runs += [
        {"scenario": name, "metric": value, "round": i + 1, "warmup": False, "wall_s": 1.0}
        for name, values in (("baseline", baseline), ("cpu", cpu))
        for i, value in enumerate(values)
    ]
    (tmp_path / "results.json").write_text(
        json.dumps(
            {
                "schema": "launchgap-experiment/1",
                "status": "complete",
                "metric": "tok/s: ([0-9.]+)",
                "higher_is_better": True,
                "scenarios": [{"name": "baseline"}, {"name": "cpu"}],
                "runs": runs,
            }
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "experiment", "show", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # the smaller sd (cpu's, 0.19) has its first two figures at the second decimal: every value shows two
    assert round(statistics.stdev(cpu), 3) == 0.192
    base = cells(proc.stdout, "baseline")
    assert base[3:6] == [
        "10.10 (1 outlier: round 5)",
        f"{statistics.mean(baseline):.2f} (sd {statistics.stdev(baseline):.2f})",
        "10.00..14.00",
    ]
    assert base[3:6] == ["10.10 (1 outlier: round 5)", "10.84 (sd 1.77)", "10.00..14.00"]
    assert cells(proc.stdout, "cpu")[3:6] == ["7.30", "7.28 (sd 0.19)", "7.00..7.50"]
    assert "+-" not in proc.stdout


def test_experiment_compare_rounds_mean_and_sd_alike():
    comparison = {
        "experiments": [
            {"label": label, "path": label, "boot_id": "b", "host": "h", "kernel": "k", "status": "complete"}
            for label in ("a", "b")
        ],
        "settings_missing": [],
        "settings_differ": {},
        "environment_differ": {},
        "pooled": False,
        "metric": "tok/s",
        "higher_is_better": True,
        "scenarios": [
            {
                "name": "baseline",
                "per_experiment": {
                    "a": {"runs": 5, "metric": {"mean": 227.26, "sd": 9.9872}},
                    "b": {
                        "runs": 1,
                        "metric": {"mean": 231.04, "sd": None},
                        "vs_first": {"mean_slowdown_percent": -1.66, "welch_p": None},
                    },
                },
            }
        ],
    }
    out = StringIO()
    render(comparison, Console(file=out, width=1000))
    assert cells(out.getvalue(), "baseline")[:3] == ["baseline", "227.3 (sd 10.0, 5 runs)", "231.0 (1 run)"]
