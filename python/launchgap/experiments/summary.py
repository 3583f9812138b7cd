"""From an experiment's runs to its per-scenario statistics and plots."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import median

from launchgap.experiments.stats import compare, summarize
from launchgap.output import atomic_output
from launchgap.views.words import speed

try:
    from re import _parser as _regex_parser   # Python 3.11+: the re module's own parser
except ImportError:  # Python 3.10
    import sre_parse as _regex_parser  # type: ignore[no-redef]

TRACE_METRICS = ("sched_per_1k", "softirq_per_1k", "hardirq_per_1k", "preempted_ms", "runqueue_ms", "irq_ms")
# the measure when no pattern is given (runner.Metric)
WALL_METRIC = "wall time (s)"
# trimmed from the text around a metric's number to name it ("tok/s: " -> "tok/s")
NAME_TRIM = " \t:="


def _holds_group(item) -> bool:
    """Whether a parsed regex item is, or holds, a capturing group."""
    op, av = item
    if op is _regex_parser.SUBPATTERN and av[0] is not None:
        return True
    stack = [av]
    while stack:
        value = stack.pop()
        if isinstance(value, _regex_parser.SubPattern):
            if any(_holds_group(inner) for inner in value):
                return True
        elif isinstance(value, (tuple, list)):
            stack.extend(value)
    return False


def metric_name(pattern: str) -> str:
    """A metric's name from its regex: the literal text just before the group that captures the number
    (after it when none comes before), trimmed of spaces, ':' and '=': "tok/s: ([0-9.]+)" -> "tok/s",
    "elapsed_s=([0-9.]+)" -> "elapsed_s", "([0-9.]+) tok/s" -> "tok/s". The pattern itself when no literal
    text is next to the number (give --metric-name then)."""
    try:
        items = list(_regex_parser.parse(pattern))
    except Exception:   # noqa: BLE001 - not a regex the parser knows: the pattern is its own name
        return pattern
    runs: list[list[str]] = [[]]
    group = None
    for op, av in items:
        if op is _regex_parser.LITERAL:
            runs[-1].append(chr(av))
        elif group is None and _holds_group((op, av)):
            group = len(runs)
            runs.append([])
        else:
            runs.append([])
    names = ["".join(run).strip(NAME_TRIM) for run in runs]
    before = [n for n in names[:group] if n] if group is not None else []
    after = [n for n in names[group:] if n] if group is not None else [n for n in names if n]
    return before[-1] if before else after[0] if after else pattern


def metric_label(results: dict) -> str:
    """The name an experiment's metric is shown by: the one it recorded (--metric-name, or derived from the
    pattern), else derived from the pattern (results from before names were recorded)."""
    name = results.get("metric_name")
    if isinstance(name, str) and name.strip():
        return name
    pattern = str(results.get("metric"))
    return pattern if pattern == WALL_METRIC else metric_name(pattern)


class SummaryError(ValueError):
    """The results cannot be summarised (message says what is malformed)."""


def measured(results: dict, scenario: str) -> list[dict]:
    return [r for r in results["runs"] if r["scenario"] == scenario and not r["warmup"] and r.get("metric") is not None
            and not r.get("error")]


def failed(results: dict, scenario: str) -> list[dict]:
    """Measured (not warm-up) runs of SCENARIO that gave no value: the command failed, or the metric was absent."""
    return [r for r in results["runs"] if r["scenario"] == scenario and not r["warmup"]
            and (r.get("error") or r.get("metric") is None)]


def summarize_results(results: dict) -> dict:
    try:
        return _summarize(results)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise SummaryError(f"{type(err).__name__}: {err}") from None


def failures(results: dict, summary: dict) -> list[str]:
    """One line per problem a user must not miss: failed runs, scenarios with no run that worked."""
    lines = []
    total = sum(entry.get("failed", 0) for entry in summary.values())
    measured_runs = sum(1 for r in results["runs"] if not r.get("warmup"))
    if total:
        kept = any(r.get("stderr") for r in results["runs"] if not r.get("warmup"))
        lines.append(f"{total} of {measured_runs} measured runs failed; their errors are in results.json"
                     + (", each one's whole stderr in stderr/" if kept else ""))
    for name, entry in summary.items():
        if entry.get("failed") and not entry.get("runs"):
            first = next((r.get("error") for r in failed(results, name) if r.get("error")), "no value")
            lines.append(f"error: scenario {name}: every run failed (e.g. {first})")
    return lines


def _summarize(results: dict) -> dict:
    names = [s["name"] for s in results["scenarios"]]
    baseline = [r["metric"] for r in measured(results, "baseline")]
    out = {}
    for name in names:
        runs = measured(results, name)
        broken = len(failed(results, name))
        if not runs:
            out[name] = {"runs": 0, "failed": broken}
            continue
        values = [float(r["metric"]) for r in runs]
        entry = {"runs": len(runs), "failed": broken, "metric": summarize(values).as_dict()}
        if name != "baseline" and baseline:
            entry["vs_baseline"] = compare(baseline, values, bool(results["higher_is_better"])).as_dict()
        for key in TRACE_METRICS:
            got = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = median(got) if got else None
        culprits = Counter(r.get("top_culprit") for r in runs if r.get("top_culprit"))
        entry["top_culprit"] = culprits.most_common(1)[0][0] if culprits else None
        walls = [r["wall_s"] for r in runs if r.get("wall_s") is not None]
        entry["wall_s"] = median(walls) if walls else None
        entry["gpu_idle_caused"] = gpu_idle_summary(runs)
        entry["gain"] = gain_summary(runs, entry.get("vs_baseline"), bool(results["higher_is_better"]))
        out[name] = entry
    if "baseline" in out and out["baseline"].get("runs"):
        for name, entry in out.items():
            if name != "baseline" and entry.get("runs"):
                entry["explained_percent"] = explained_percent(out["baseline"], entry)
    return out


def _gpu_runs(runs: list[dict]) -> list[dict]:
    """The runs' GPU time (runner.gpu_time_metrics) where their trace gave one (exact or bounds)."""
    return [r["gpu_time"] for r in runs if isinstance(r.get("gpu_time"), dict)
            and r["gpu_time"].get("mode") in ("exact", "bounds")]


def gpu_idle_summary(runs: list[dict]) -> dict | None:
    """The GPU idle the scenario's interference caused (preemption, run-queue waits, interrupts), in ms,
    over its runs: the statistics of the lower and of the upper bound (the same numbers when every run is
    exact). mode: exact, bounds, or mixed (some runs each). None when no run's trace gave GPU time."""
    gpu = _gpu_runs(runs)
    if not gpu:
        return None
    modes = {g["mode"] for g in gpu}
    return {"mode": modes.pop() if len(modes) == 1 else "mixed", "runs": len(gpu),
            "low_ms": summarize([g["idle_caused_low_ns"] / 1e6 for g in gpu]).as_dict(),
            "high_ms": summarize([g["idle_caused_high_ns"] / 1e6 for g in gpu]).as_dict()}


def measured_gain(slowdown_percent: float | None, higher_is_better: bool) -> float | None:
    """The throughput gain (%) going from the scenario to the baseline, from its slowdown (stats.compare):
    for a throughput baseline / scenario - 1 = s / (100 - s); for a time, scenario / baseline - 1 = s."""
    if slowdown_percent is None:
        return None
    if not higher_is_better:
        return slowdown_percent
    return None if slowdown_percent >= 100 else 100.0 * slowdown_percent / (100.0 - slowdown_percent)


def gain_summary(runs: list[dict], vs_baseline: dict | None, higher_is_better: bool) -> dict | None:
    """Predicted against measured gain without the scenario's load: predicted from each run's trace (the GPU
    idle the load's processes caused, taken out: analysis.gpu_time.gain_without), medians of the lower and
    upper predictions and their range over the runs; measured from the slowdown against the baseline (of the
    medians, and Welch's 95% interval of the means'). None for a scenario with no load (nothing to remove)
    or without a trace's prediction."""
    gpu = [g for g in _gpu_runs(runs) if g.get("load_pids") and g.get("predicted_gain_low_percent") is not None]
    if not gpu:
        return None
    lows = [g["predicted_gain_low_percent"] for g in gpu]
    # a run whose upper bound of GPU idle covers its whole span sets no upper bound (None): then neither do they
    highs = [g["predicted_gain_high_percent"] for g in gpu]
    unbounded = any(h is None for h in highs)
    v = vs_baseline or {}
    modes = {g["mode"] for g in gpu}
    return {"mode": modes.pop() if len(modes) == 1 else "mixed", "runs": len(gpu),
            "predicted_low_percent": median(lows), "predicted_high_percent": None if unbounded else median(highs),
            "predicted_min_percent": min(lows), "predicted_max_percent": None if unbounded else max(highs),
            "measured_percent": measured_gain(v.get("slowdown_percent"), higher_is_better),
            "measured_ci_low_percent": measured_gain(v.get("slowdown_ci_low"), higher_is_better),
            "measured_ci_high_percent": measured_gain(v.get("slowdown_ci_high"), higher_is_better)}


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


def slowdown_figure(results: dict, summary: dict):
    """Each scenario against the baseline: the median's slowdown (up: slower, down: faster), Welch's 95%
    interval of the means' as the error bar, each bar said in words."""
    plt = pyplot_agg()
    names = [n for n in summary if summary[n].get("runs")]
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    vs = [summary[n].get("vs_baseline") or {} for n in names]
    slow = [v.get("slowdown_percent", 0.0) for v in vs]
    lows = [v.get("slowdown_ci_low") for v in vs]
    highs = [v.get("slowdown_ci_high") for v in vs]
    errors = [[max(0.0, s - lo) if lo is not None else 0 for s, lo in zip(slow, lows)],
              [max(0.0, hi - s) if hi is not None else 0 for s, hi in zip(slow, highs)]]
    bars = ax.bar(names, slow, yerr=errors, capsize=4, color="#4c72b0")
    ax.bar_label(bars, labels=[speed(v["slowdown_percent"]) if v else "baseline" if n == "baseline" else "-"
                               for n, v in zip(names, vs)], padding=3, fontsize=8)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.margins(y=0.15)
    ax.set_ylabel("% slower than the baseline\n(below 0: faster)")
    ax.set_title(f"{metric_label(results)}: median vs baseline, with the 95% interval of the mean")
    return fig


def taken_figure(summary: dict):
    """The median time taken from the launching threads, by cause, per scenario."""
    plt = pyplot_agg()
    names = [n for n in summary if summary[n].get("runs")]
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    bottom = [0.0] * len(names)
    for key, label, color in (("preempted_ms", "preempted", "#c44e52"), ("runqueue_ms", "run-queue wait", "#dd8452"),
                              ("irq_ms", "interrupts", "#8172b3")):
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


def plot(results: dict, summary: dict, outdir: Path) -> list[Path]:
    return [save_figure(slowdown_figure(results, summary), outdir / "slowdown.png"),
            save_figure(taken_figure(summary), outdir / "taken.png")]


def is_grid(results: dict) -> bool:
    return bool(results.get("grid"))


def summarize_grid(results: dict) -> dict:
    """A lever grid's cells: each one's statistics, and its difference from its class's SCHED_OTHER cell."""
    try:
        return _summarize_grid(results)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as err:
        raise SummaryError(f"{type(err).__name__}: {err}") from None


def _summarize_grid(results: dict) -> dict:
    higher = bool(results["higher_is_better"])
    out = {}
    for info in results["scenarios"]:
        name = info["name"]
        runs = measured(results, name)
        entry = {"class": info.get("class"), "variant": info.get("variant"), "runs": len(runs),
                 "failed": len(failed(results, name)),
                 "verified": sum(1 for r in runs if ((r.get("verified") or {}).get("trace") or {}).get("verified"))}
        out[name] = entry
        if not runs:
            continue
        values = [float(r["metric"]) for r in runs]
        entry["metric"] = summarize(values).as_dict()
        base = info.get("baseline")
        base_values = [float(r["metric"]) for r in measured(results, base)] if base and base != name else []
        if base_values:
            entry["vs_baseline"] = compare(base_values, values, higher).as_dict() | {"baseline": base}
        for key in TRACE_METRICS:
            got = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = median(got) if got else None
        culprits = Counter(r.get("top_culprit") for r in runs if r.get("top_culprit"))
        entry["top_culprit"] = culprits.most_common(1)[0][0] if culprits else None
    return out

