"""From an experiment's runs to its per-scenario statistics and plots."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import median

from launchgap.experiments.results import ExperimentResults, GpuTimeOfRun, Run, TraceMeasures
from launchgap.experiments.stats import compare, summarize
from launchgap.output import atomic_output
from launchgap.views.words import speed


class SummaryError(ValueError):
    """The results' numbers cannot be summarised (a baseline of zero, say): the message says why."""


def summarize_results(results: ExperimentResults) -> dict:
    try:
        return _summarize(results)
    except (ArithmeticError, ValueError) as err:
        raise SummaryError(f"{type(err).__name__}: {err}") from None


def failures(results: ExperimentResults, summary: dict) -> list[str]:
    """One line per problem a user must not miss: failed runs, scenarios with no run that worked."""
    lines = []
    total = sum(entry.get("failed", 0) for entry in summary.values())
    measured_runs = [r for r in results.runs if not r.warmup]
    if total:
        kept = any(r.stderr for r in measured_runs)
        lines.append(
            f"{total} of {len(measured_runs)} measured runs failed; their errors are in results.json"
            + (", each one's whole stderr in stderr/" if kept else "")
        )
    for name, entry in summary.items():
        if entry.get("failed") and not entry.get("runs"):
            first = next((r.error for r in results.failed(name) if r.error), "no value")
            lines.append(f"error: scenario {name}: every run failed (e.g. {first})")
    return lines


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6


def trace_medians(runs: list[Run]) -> dict:
    """What summary.json keeps per scenario of its runs' traces: the medians of the scheduling and
    interrupt rates and of the time taken by cause (in ms: summary.json is shown as it is), and the
    most frequent top culprit."""
    measures: list[TraceMeasures] = [r.measures for r in runs if r.measures is not None]
    culprits = Counter(m.top_culprit for m in measures if m.top_culprit)
    return {
        "sched_per_1k": _median([m.sched_per_1k for m in measures]),
        "softirq_per_1k": _median([m.softirq_per_1k for m in measures]),
        "hardirq_per_1k": _median([m.hardirq_per_1k for m in measures]),
        "preempted_ms": _median([_ms(m.preempted_ns) for m in measures]),
        "runqueue_ms": _median([_ms(m.runqueue_ns) for m in measures]),
        "irq_ms": _median([_ms(m.irq_ns) for m in measures]),
        "top_culprit": culprits.most_common(1)[0][0] if culprits else None,
    }


def _summarize(results: ExperimentResults) -> dict:
    baseline = [r.metric for r in results.measured("baseline")]
    out = {}
    for name in (s.name for s in results.scenarios):
        runs = results.measured(name)
        broken = len(results.failed(name))
        if not runs:
            out[name] = {"runs": 0, "failed": broken}
            continue
        values = [float(r.metric) for r in runs]
        entry = {"runs": len(runs), "failed": broken, "metric": summarize(values).as_dict()}
        if name != "baseline" and baseline:
            entry["vs_baseline"] = compare(baseline, values, results.higher_is_better).as_dict()
        entry.update(trace_medians(runs))
        entry["wall_s"] = _median([r.wall_s for r in runs])
        entry["gpu_idle_caused"] = gpu_idle_summary(runs)
        entry["gain"] = gain_summary(runs, entry.get("vs_baseline"), results.higher_is_better)
        out[name] = entry
    if "baseline" in out and out["baseline"].get("runs"):
        for name, entry in out.items():
            if name != "baseline" and entry.get("runs"):
                entry["explained_percent"] = explained_percent(out["baseline"], entry)
    return out


def _gpu_runs(runs: list[Run]) -> list[GpuTimeOfRun]:
    """The runs' GPU time (runner.gpu_time_of_run) where their trace gave one (exact or bounds)."""
    return [
        r.measures.gpu_time
        for r in runs
        if r.measures is not None and r.measures.gpu_time is not None and r.measures.gpu_time.estimated
    ]


def gpu_idle_summary(runs: list[Run]) -> dict | None:
    """The GPU idle the scenario's interference caused (preemption, run-queue waits, interrupts), in ms,
    over its runs: the statistics of the lower and of the upper bound (the same numbers when every run is
    exact). mode: exact, bounds, or mixed (some runs each). None when no run's trace gave GPU time."""
    gpu = _gpu_runs(runs)
    if not gpu:
        return None
    modes = {g.mode for g in gpu}
    return {
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "runs": len(gpu),
        "low_ms": summarize([g.idle_caused_low_ns / 1e6 for g in gpu]).as_dict(),
        "high_ms": summarize([g.idle_caused_high_ns / 1e6 for g in gpu]).as_dict(),
    }


def measured_gain(slowdown_percent: float | None, higher_is_better: bool) -> float | None:
    """The throughput gain (%) going from the scenario to the baseline, from its slowdown (stats.compare):
    for a throughput baseline / scenario - 1 = s / (100 - s); for a time, scenario / baseline - 1 = s."""
    if slowdown_percent is None:
        return None
    if not higher_is_better:
        return slowdown_percent
    return None if slowdown_percent >= 100 else 100.0 * slowdown_percent / (100.0 - slowdown_percent)


def gain_summary(runs: list[Run], vs_baseline: dict | None, higher_is_better: bool) -> dict | None:
    """Predicted against measured gain without the scenario's load: predicted from each run's trace (the GPU
    idle the load's processes caused, taken out, the rest of the interference at its rate:
    analysis.gpu_time.gain_without), medians of the lower and
    upper predictions and their range over the runs; measured from the slowdown against the baseline (of the
    medians, and Welch's 95% interval of the means'). None for a scenario with no load (nothing to remove)
    or without a trace's prediction."""
    gpu = [g for g in _gpu_runs(runs) if g.load_pids and g.predicted_gain_low_percent is not None]
    if not gpu:
        return None
    lows = [g.predicted_gain_low_percent for g in gpu]
    # a run whose upper bound of GPU idle covers its whole span sets no upper bound (None): then neither do they
    highs = [g.predicted_gain_high_percent for g in gpu]
    unbounded = any(h is None for h in highs)
    v = vs_baseline or {}
    modes = {g.mode for g in gpu}
    return {
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "runs": len(gpu),
        "predicted_low_percent": median(lows),
        "predicted_high_percent": None if unbounded else median(highs),
        "predicted_min_percent": min(lows),
        "predicted_max_percent": None if unbounded else max(highs),
        "measured_percent": measured_gain(v.get("slowdown_percent"), higher_is_better),
        "measured_ci_low_percent": measured_gain(v.get("slowdown_ci_low"), higher_is_better),
        "measured_ci_high_percent": measured_gain(v.get("slowdown_ci_high"), higher_is_better),
    }


def taken_s(entry: dict) -> float | None:
    parts = [entry.get(k) for k in ("preempted_ms", "runqueue_ms", "irq_ms")]
    return None if any(p is None for p in parts) else sum(parts) / 1e3


def explained_percent(baseline: dict, entry: dict) -> float | None:
    """How much of a scenario's extra wall time (median, vs baseline) the
    extra time taken by the scheduler and interrupts (preempted + run-queue
    wait + IRQ, medians) accounts for. The rest is interference no scheduler
    or interrupt event shows (a shared core, caches, memory bandwidth), or
    the workload's own waiting. With several launching threads the time
    taken is summed over them and can exceed the wall time."""
    base_taken, taken = taken_s(baseline), taken_s(entry)
    if None in (base_taken, taken, baseline.get("wall_s"), entry.get("wall_s")):
        return None
    extra_wall = entry["wall_s"] - baseline["wall_s"]
    if extra_wall <= 0:
        return None
    return 100.0 * (taken - base_taken) / extra_wall


def pyplot_agg():
    import matplotlib

    matplotlib.use("Agg")
    # labels are text: a scenario name or metric holding two $ signs would otherwise be read as TeX
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def slowdown_figure(results: ExperimentResults, summary: dict):
    """Each scenario against the baseline: the median's slowdown (up: slower, down: faster), Welch's 95%
    interval of the means' as the error bar, each bar said in words."""
    plt = pyplot_agg()
    names = [n for n in summary if summary[n].get("runs")]
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    vs = [summary[n].get("vs_baseline") or {} for n in names]
    slow = [v.get("slowdown_percent", 0.0) for v in vs]
    lows = [v.get("slowdown_ci_low") for v in vs]
    highs = [v.get("slowdown_ci_high") for v in vs]
    errors = [
        [max(0.0, s - lo) if lo is not None else 0 for s, lo in zip(slow, lows)],
        [max(0.0, hi - s) if hi is not None else 0 for s, hi in zip(slow, highs)],
    ]
    bars = ax.bar(names, slow, yerr=errors, capsize=4, color="#4c72b0")
    ax.bar_label(
        bars,
        labels=[
            speed(v["slowdown_percent"]) if v else "baseline" if n == "baseline" else "-" for n, v in zip(names, vs)
        ],
        padding=3,
        fontsize=8,
    )
    ax.axhline(0, color="black", linewidth=0.8)
    ax.margins(y=0.15)
    ax.set_ylabel("% slower than the baseline\n(below 0: faster)")
    ax.set_title(f"{results.metric_label}: median vs baseline, with the 95% interval of the mean")
    return fig


def taken_figure(summary: dict):
    """The median time taken from the launching threads, by cause, per scenario."""
    plt = pyplot_agg()
    names = [n for n in summary if summary[n].get("runs")]
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    bottom = [0.0] * len(names)
    for key, label, color in (
        ("preempted_ms", "preempted", "#c44e52"),
        ("runqueue_ms", "run-queue wait", "#dd8452"),
        ("irq_ms", "interrupts", "#8172b3"),
    ):
        values = [summary[n].get(key) or 0.0 for n in names]
        ax.bar(names, values, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_title("time taken from the launching threads, by cause")
    ax.set_ylabel("ms (median of the runs)")
    ax.legend()
    return fig


def save_figure(fig, path: Path, dpi: int = 120) -> Path:
    plt = pyplot_agg()
    try:
        with atomic_output(path) as partial:
            fig.savefig(partial, dpi=dpi)
    finally:
        plt.close(fig)
    return path


def plot(results: ExperimentResults, summary: dict, outdir: Path) -> list[Path]:
    return [
        save_figure(slowdown_figure(results, summary), outdir / "slowdown.png"),
        save_figure(taken_figure(summary), outdir / "taken.png"),
    ]


def summarize_grid(results: ExperimentResults) -> dict:
    """A lever grid's cells: each one's statistics, and its difference from its class's SCHED_OTHER cell."""
    try:
        return _summarize_grid(results)
    except (ArithmeticError, ValueError) as err:
        raise SummaryError(f"{type(err).__name__}: {err}") from None


def _summarize_grid(results: ExperimentResults) -> dict:
    out = {}
    for info in results.scenarios:
        runs = results.measured(info.name)
        entry = {
            "class": info.klass,
            "variant": info.variant,
            "runs": len(runs),
            "failed": len(results.failed(info.name)),
            "verified": sum(1 for r in runs if r.trace_verified),
        }
        out[info.name] = entry
        if not runs:
            continue
        values = [float(r.metric) for r in runs]
        entry["metric"] = summarize(values).as_dict()
        base = info.baseline
        base_values = [float(r.metric) for r in results.measured(base)] if base and base != info.name else []
        if base_values:
            entry["vs_baseline"] = compare(base_values, values, results.higher_is_better).as_dict() | {"baseline": base}
        entry.update(trace_medians(runs))
    return out


def grid_figure(results: ExperimentResults, summary: dict):
    """Each class's cells: the mean with its 95% interval."""
    plt = pyplot_agg()
    classes = list(dict.fromkeys(e["class"] for e in summary.values()))
    variants = list(dict.fromkeys(e["variant"] for e in summary.values()))
    fig, axes = plt.subplots(1, len(classes), figsize=(3.2 * len(classes) + 1, 4), squeeze=False, layout="constrained")
    for ax, cls in zip(axes[0], classes):
        cells = [(v, summary.get(f"{cls}/{v}")) for v in variants]
        cells = [(v, e) for v, e in cells if e and e.get("runs")]
        means = [e["metric"]["mean"] for _, e in cells]
        errors = [
            (e["metric"]["ci_high"] - e["metric"]["mean"]) if e["metric"]["ci_high"] is not None else 0
            for _, e in cells
        ]
        ax.bar([v for v, _ in cells], means, yerr=errors, capsize=4, color="#4c72b0")
        ax.set_title(cls)
        ax.tick_params(axis="x", rotation=30)
    axes[0][0].set_ylabel(f"{results.metric_label}\n(mean, 95% interval)")
    return fig


def plot_grid(results: ExperimentResults, summary: dict, outdir: Path) -> list[Path]:
    return [save_figure(grid_figure(results, summary), outdir / "levers.png", dpi=110)]
