"""How comparisons and metrics are said (issue 25, items 4 and 5): one sign convention everywhere (a
slowdown: positive slower), said in words ("25.0% slower", "10.0% faster") in the experiment table, the
grid's, `experiment compare`, `diff` and the plots; the metric called by its name, not its regex; no
text of a plot cut off at its edge. Every expected number is worked by hand from the values the test
writes (base mean 100; Welch's interval of two samples of 3 with sd 1: 25 +- t(0.975, 4) sqrt(2/3))."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analysis.builder import TraceBuilder
from tests.conftest import CUDASIM, REPO

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")

THROUGHPUT = r"tok/s: ([0-9.]+)"
BASE = [99.0, 100.0, 101.0]  # median and mean 100, sd 1
SLOWER = [74.0, 75.0, 76.0]  # 25% below it: 25.0% slower; Welch: 22.73..27.27
FASTER = [109.0, 110.0, 111.0]  # 10% above it: 10.0% faster; Welch: 7.73..12.27


def launchgap(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    # a pipe: the project writes whole lines there, never wrapped to a console's width
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("│┃ ").replace("┃", "│").split("│")]


def row_of(stdout: str, first: str) -> list[str]:
    return next(cells(line) for line in stdout.splitlines() if "│" in line and cells(line)[0] == first)


def column(stdout: str, first: str, name: str) -> str:
    header = next(cells(line) for line in stdout.splitlines() if "┃" in line)
    return row_of(stdout, first)[header.index(name)]


def run(scenario: str, metric: float, warmup: bool = False) -> dict:
    return {
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


def experiment(
    directory: Path, samples: dict[str, list[float]], metric: str = THROUGHPUT, higher: bool = True, **extra
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    runs = [run(next(iter(samples)), 1.0, warmup=True)]
    runs += [run(name, value) for name, values in samples.items() for value in values]
    results = {
        "schema": "launchgap-experiment/1",
        "status": "complete",
        "metric": metric,
        "higher_is_better": higher,
        "command": ["cudasim", "decode"],
        "doctor": {"checks": []},
        "scenarios": [{"name": name, "description": f"{name}; mitigations: none"} for name in samples],
        "runs": runs,
        **extra,
    }
    (directory / "results.json").write_text(json.dumps(results))
    return directory


# ---- item 4: one sign convention, said in words ----------------------------------------------------


def test_the_experiment_table_says_slower_and_faster_in_words(tmp_path):
    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER, "quiet": FASTER})
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    assert column(proc.stdout, "cpu", "vs baseline") == "25.0% slower"
    assert column(proc.stdout, "cpu", "vs baseline 95% CI") == "22.7 to 27.3% slower"
    assert column(proc.stdout, "quiet", "vs baseline") == "10.0% faster"
    assert column(proc.stdout, "quiet", "vs baseline 95% CI") == "7.7 to 12.3% faster"
    summary = json.loads((out / "summary.json").read_text())
    # the JSON: the same convention, positive slower, for every signed number
    vs = summary["cpu"]["vs_baseline"]
    assert (vs["slowdown_percent"], vs["mean_slowdown_percent"]) == (pytest.approx(25.0), pytest.approx(25.0))
    assert (vs["slowdown_ci_low"], vs["slowdown_ci_high"]) == (
        pytest.approx(22.733, abs=1e-3),
        pytest.approx(27.267, abs=1e-3),
    )
    # Welch's t, positive slower: (100 - 75) / sqrt(1/3 + 1/3)
    assert vs["welch_t"] == pytest.approx(25 / (2 / 3) ** 0.5)
    assert summary["quiet"]["vs_baseline"]["mean_slowdown_percent"] == pytest.approx(-10.0)


def test_a_longer_time_is_slower_in_words(tmp_path):
    out = experiment(
        tmp_path / "e", {"baseline": [1.9, 2.0, 2.1], "cpu": [2.9, 3.0, 3.1]}, metric="wall time (s)", higher=False
    )
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    # medians 2.0 and 3.0 s; Welch: (1.0 +- 2.7764 * sqrt(0.02 / 3)) / 2.0
    assert column(proc.stdout, "cpu", "vs baseline") == "50.0% slower"
    assert column(proc.stdout, "cpu", "vs baseline 95% CI") == "38.7 to 61.3% slower"
    assert proc.stdout.splitlines()[0].startswith("wall time (s) (lower is better)")


def test_the_grid_table_and_its_json_say_a_lower_throughput_is_slower(tmp_path):
    cells_of = {"workload/other": BASE, "workload/fifo:10": SLOWER}
    out = experiment(tmp_path / "g", cells_of, grid={"classes": ["workload"], "variants": ["other", "fifo:10"]})
    results = json.loads((out / "results.json").read_text())
    for info in results["scenarios"]:
        info.update({"class": "workload", "variant": info["name"].split("/")[1], "baseline": "workload/other"})
    (out / "results.json").write_text(json.dumps(results))
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    fifo = next(cells(line) for line in proc.stdout.splitlines() if "│" in line and "fifo:10" in line)
    header = next(cells(line) for line in proc.stdout.splitlines() if "┃" in line)
    assert fifo[header.index("vs other")] == "25.0% slower"
    assert fifo[header.index("vs other 95% CI")] == "22.7 to 27.3% slower"
    vs = json.loads((out / "summary.json").read_text())["workload/fifo:10"]["vs_baseline"]
    assert vs["mean_slowdown_percent"] == pytest.approx(25.0)
    assert "difference_percent" not in vs


def test_compare_side_by_side_and_pooled_say_it_in_words(tmp_path):
    first = experiment(tmp_path / "first", {"baseline": BASE, "cpu": SLOWER})
    second = experiment(tmp_path / "second", {"baseline": BASE, "cpu": [79.0, 80.0, 81.0]})
    side = launchgap("experiment", "compare", str(first), str(second))
    assert side.returncode == 0, side.stderr
    # cpu: mean 75 in the first, 80 in the second: (80 - 75) / 75 = 6.67% more tokens a second
    assert column(side.stdout, "cpu", "vs first").startswith("6.7% faster, p ")
    assert column(side.stdout, "baseline", "vs first").startswith("no change")
    pooled = launchgap("experiment", "compare", "--pool", str(first), str(second))
    assert pooled.returncode == 0, pooled.stderr
    # pooled cpu: 74 75 76 79 80 81, mean 77.5 against 100
    assert column(pooled.stdout, "cpu", "vs baseline") == "22.5% slower"
    data = json.loads(launchgap("experiment", "compare", "--pool", "--json", str(first), str(second)).stdout)
    vs = next(r for r in data["scenarios"] if r["name"] == "cpu")["vs_baseline"]
    assert vs["mean_slowdown_percent"] == pytest.approx(22.5)
    # Welch's interval of the pooled means' difference, against the baseline's mean of 100: scipy's
    import scipy.stats as sps

    ci = sps.ttest_ind(BASE + BASE, [74.0, 75.0, 76.0, 79.0, 80.0, 81.0], equal_var=False).confidence_interval(0.95)
    assert (vs["slowdown_ci_low"], vs["slowdown_ci_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))


def launch_trace(path: Path, end_ns: int):
    """Ten launches between 1000 and END_NS: a launch rate of 10 / (END_NS - 1000) ns."""
    b = TraceBuilder(end_ns=end_ns)
    task = (100, 100, "decode")
    for i in range(10):
        b.launch(2_000 + i * 1_000, 0, task)
    return b.write(path)


def test_diff_says_how_much_slower_in_words(tmp_path):
    a = launch_trace(tmp_path / "a.lg", 101_000)  # 100 us: 100,000 launches a second
    b = launch_trace(tmp_path / "b.lg", 126_000)  # 125 us: 80,000, 20% fewer
    proc = launchgap("diff", str(a.path), str(b.path))
    assert proc.returncode == 0, proc.stderr
    assert "launch rate: B is 20.0% slower than A; verdicts" in proc.stdout
    assert "negative" not in proc.stdout
    assert column(proc.stdout, "launch rate (/s)", "B vs A") == "20.0% lower"
    assert column(proc.stdout, "wall time (s)", "B vs A") == "25.0% higher"
    assert column(proc.stdout, "launches", "B vs A") == "no change"
    back = launchgap("diff", str(b.path), str(a.path))
    assert "launch rate: B is 25.0% faster than A; verdicts" in back.stdout
    data = json.loads(launchgap("diff", str(a.path), str(b.path), "--json").stdout)
    assert data["launch_rate_slowdown_percent"] == pytest.approx(20.0)


def test_the_slowdown_plot_says_each_bar_in_words(tmp_path):
    from launchgap.experiments.results import read_results
    from launchgap.experiments.summary import slowdown_figure, summarize_results

    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER, "quiet": FASTER})
    results = read_results(out)
    fig = slowdown_figure(results, summarize_results(results))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]  # the bars' labels
    assert {"25.0% slower", "10.0% faster"} <= set(labels)
    assert ax.get_title().startswith("tok/s: ") and "[0-9" not in ax.get_title()
    assert "slower" in ax.get_ylabel()


# ---- item 5: the metric's name, and plots that fit ---------------------------------------------------


@pytest.mark.parametrize(
    "pattern, name",
    [
        (r"tok/s: ([0-9.]+)", "tok/s"),
        (r"elapsed_s=([0-9.]+)", "elapsed_s"),
        (r"^throughput:\s*([0-9.]+)", "throughput"),
        (r"([0-9.]+) tokens/s", "tokens/s"),
        (r"latency \(ms\): (?P<v>[0-9.]+)", "latency (ms)"),
        (r"[0-9.]+", "[0-9.]+"),
    ],
)
def test_a_metric_is_named_after_the_text_beside_its_number(pattern, name):
    from launchgap.experiments.plan import Metric

    assert Metric(pattern).shown_name == name
    assert Metric(pattern, label="tokens per second").shown_name == "tokens per second"
    assert Metric(None).shown_name == "wall time (s)"


def test_tables_and_plot_titles_show_the_name_not_the_regex(tmp_path):
    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER})
    proc = launchgap("experiment", "show", str(out))
    assert proc.returncode == 0, proc.stderr
    title = proc.stdout.splitlines()[0]
    assert title.startswith("tok/s (higher is better), status: complete")
    assert "[0-9" not in proc.stdout
    grid = experiment(
        tmp_path / "g",
        {"compute/other": [2.0, 2.1, 2.2]},
        metric=r"elapsed_s=([0-9.]+)",
        higher=False,
        grid={"classes": ["compute"]},
        metric_name="work time (s)",
    )
    results = json.loads((grid / "results.json").read_text())
    results["scenarios"][0].update({"class": "compute", "variant": "other", "baseline": "compute/other"})
    (grid / "results.json").write_text(json.dumps(results))
    proc = launchgap("experiment", "show", str(grid))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("work time (s) (lower is better), each cell vs SCHED_OTHER")


def edge_pixels(png: Path, width: int = 3):
    """The pixels within WIDTH of the picture's edge."""
    import matplotlib.image
    import numpy as np

    image = matplotlib.image.imread(str(png))[..., :3]
    return np.concatenate(
        [
            image[:width].reshape(-1, 3),
            image[-width:].reshape(-1, 3),
            image[:, :width].reshape(-1, 3),
            image[:, -width:].reshape(-1, 3),
        ]
    )


def test_no_plot_has_text_cut_off_at_its_edge(tmp_path):
    """taken.png's y label ran off the picture's left edge: every pixel at the edge must be background."""
    out = experiment(tmp_path / "e", {"baseline": BASE, "cpu": SLOWER, "quiet": FASTER})
    assert launchgap("experiment", "show", str(out)).returncode == 0
    grid = experiment(
        tmp_path / "g",
        {"compute/other": [2.0, 2.1, 2.2], "compute/fifo:10": [2.5, 2.6, 2.7]},
        metric=r"elapsed_s=([0-9.]+)",
        higher=False,
        grid={"classes": ["compute"]},
    )
    results = json.loads((grid / "results.json").read_text())
    for info in results["scenarios"]:
        info.update({"class": "compute", "variant": info["name"].split("/")[1], "baseline": "compute/other"})
    (grid / "results.json").write_text(json.dumps(results))
    assert launchgap("experiment", "show", str(grid)).returncode == 0
    for png in (out / "taken.png", out / "slowdown.png", grid / "levers.png"):
        assert (edge_pixels(png) > 0.99).all(), f"{png.name}: something is drawn at the picture's edge"


@needs_root
def test_metric_name_is_recorded_and_shown(tmp_path):
    out = tmp_path / "out"
    proc = launchgap(
        "experiment",
        "noisy-neighbor",
        "--scenarios",
        "baseline",
        "--repeat",
        "2",
        "--metric-name",
        "tokens a second",
        "-o",
        str(out),
        "--",
        str(CUDASIM),
        "decode",
        "--tokens",
        "3",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert (results["metric"], results["metric_name"]) == (THROUGHPUT, "tokens a second")
    assert any(
        line.startswith("tokens a second (higher is better), status: complete") for line in proc.stdout.splitlines()
    )


@needs_root
@pytest.mark.parametrize(
    "name, problem",
    [
        ("", "empty; give the measure's name (e.g. tok/s)"),
        ("two\nlines", "holds a control character or a line break; give one line of text"),
    ],
)
def test_a_bad_metric_name_is_refused_before_anything_runs(tmp_path, name, problem):
    out = tmp_path / "out"
    proc = launchgap(
        "experiment",
        "noisy-neighbor",
        "--scenarios",
        "baseline",
        "--repeat",
        "2",
        "--metric-name",
        name,
        "-o",
        str(out),
        "--",
        str(CUDASIM),
        "decode",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr == f"launchgap: --metric-name {name!r}: {problem}\n"
    assert not out.exists()
