"""`experiment show`'s GPU time (docs/gpu-time.md, "In experiments"): the GPU idle each scenario's
interference caused, and the gain without its load, predicted from its traces against measured."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from launchgap.console import literal


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def gpu_idle_cells(entry: dict) -> tuple[str, str]:
    """The scenario's "GPU idle caused" (median of its runs) and its 95% interval of the mean: one number
    each when every run is exact; bounds (the lower's and the upper's) otherwise, said so."""
    g = entry.get("gpu_idle_caused")
    if not g:
        return "-", "-"
    low, high = g["low_ms"], g["high_ms"]
    if g["mode"] == "exact":
        ci = "-" if low["ci_low"] is None else f"{_ms(low['ci_low'])}..{_ms(high['ci_high'])} ms"
        return f"{_ms(high['median'])} ms", ci
    ci = "-" if low["ci_low"] is None else f"{_ms(low['ci_low'])}..{_ms(high['ci_high'])} ms"
    return f"{_ms(low['median'])}..{_ms(high['median'])} ms ({literal(g['mode'])})", ci


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _between(low: float | None, high: float | None) -> str:
    if low is None:
        return "-"
    if high is None:
        return f"at least {_percent(low)}"  # the upper bound of the GPU idle covered a run's whole span
    return _percent(low) if low == high else f"{_percent(low)} to {_percent(high)}"


def _measured_interval(low: float | None, high: float | None) -> str:
    """Welch's interval as a gain; an interval reaching a slowdown of 100% or more (a scenario that may have
    measured nothing) has no upper bound as a gain."""
    if low is None:
        return "-"
    return f"{_percent(low)}..{_percent(high) if high is not None else 'no upper bound'}"


def render_gains(summary: dict, console: Console) -> None:
    """Predicted against measured gain, one row per scenario with a load and a prediction."""
    rows = [(name, e["gain"]) for name, e in summary.items() if e.get("runs") and e.get("gain")]
    if not rows:
        return
    table = Table(
        title="without each scenario's load: the gain its traces predict (the GPU idle the load's "
        "processes caused, taken out; median of the runs) against the gain measured (baseline vs "
        "scenario: medians; 95% CI: Welch's, of the means)",
        title_justify="left",
    )
    for col in (
        "scenario",
        "traces",
        "GPU time",
        "predicted gain",
        "predicted, over the runs",
        "measured gain",
        "measured 95% CI",
    ):
        table.add_column(col, justify="left" if col in ("scenario", "GPU time") else "right")
    for name, g in rows:
        table.add_row(
            literal(name),
            str(g["runs"]),
            literal(g["mode"]),
            _between(g["predicted_low_percent"], g["predicted_high_percent"]),
            f"{_percent(g['predicted_min_percent'])}.."
            f"{_percent(g['predicted_max_percent']) if g['predicted_max_percent'] is not None else 'no bound'}",
            _percent(g["measured_percent"]),
            _measured_interval(g["measured_ci_low_percent"], g["measured_ci_high_percent"]),
        )
    console.print(table)
