"""`experiment show`'s tables: an experiment's scenarios against its baseline, and a lever grid's cells
against SCHED_OTHER. They read the results (experiments/results.py) and the summary made of them
(experiments/summary.py, as summary.json holds it); the command around them writes the files and says
what failed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from launchgap.console import literal, shown
from launchgap.views import words
from launchgap.views.experiment_gpu import gpu_idle_cells, render_gains
from launchgap.views.numbers import fixed, places, rounds, span, with_sd

if TYPE_CHECKING:  # the records only: views import nothing from experiments when run
    from launchgap.experiments.results import ExperimentResults

SCENARIO_COLUMNS = (
    "scenario",
    "runs",
    "failed",
    "median",
    "mean (sd)",
    "min..max",
    "95% CI",
    "vs baseline",
    "vs baseline 95% CI",
    "p (Welch / MWU)",
    "GPU idle caused",
    "GPU idle 95% CI",
    "preempted",
    "run-queue",
    "IRQ",
    "explained",
    "Sched/1K",
    "top culprit",
)
GRID_COLUMNS = (
    "class",
    "variant",
    "runs",
    "failed",
    "verified",
    "mean",
    "sd",
    "p95",
    "95% CI",
    "vs other",
    "vs other 95% CI",
    "p (Welch)",
    "preempted",
    "run-queue",
    "IRQ",
    "top culprit",
)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _direction(results: ExperimentResults) -> str:
    return "higher" if results.higher_is_better else "lower"


def render_scenarios(results: ExperimentResults, summary: dict, console: Console) -> None:
    """Each scenario's statistics against the baseline's, then the gains its traces predict."""
    table = Table(
        title=Text(
            shown(
                f"{results.metric_label} ({_direction(results)} is better), status: "
                f"{results.status}; vs baseline: medians, 95% CI: Welch's, of the means"
            )
        ),
        title_justify="left",
    )
    # one rounding for the whole table, set by the runs' scatter
    decimals = places(
        [e["metric"]["sd"] for e in summary.values() if e.get("runs")],
        [e["metric"]["median"] for e in summary.values() if e.get("runs")],
    )
    for col in SCENARIO_COLUMNS:
        table.add_column(col, justify="left" if col in ("scenario", "top culprit") else "right")
    for name, e in summary.items():
        failed = str(e.get("failed", 0))
        if not e.get("runs"):
            table.add_row(literal(name), "0", failed, *[""] * 15)
            continue
        m, v = e["metric"], e.get("vs_baseline")
        # the outliers are indices into the scenario's measured runs: said as the rounds they ran in
        runs = results.measured(name)
        outlying = sorted(runs[i].round if runs[i].round is not None else i + 1 for i in m["outliers"] if i < len(runs))
        flags = f" ({len(outlying)} outlier{'s' if len(outlying) > 1 else ''}: {rounds(outlying)})" if outlying else ""
        table.add_row(
            literal(name),
            str(e["runs"]),
            failed,
            f"{fixed(m['median'], decimals)}{flags}",
            with_sd(m["mean"], m["sd"], decimals),
            span(m["min"], m["max"], decimals),
            span(m["ci_low"], m["ci_high"], decimals),
            words.speed(v["slowdown_percent"]) if v else "-",
            words.speed_interval(v["slowdown_ci_low"], v["slowdown_ci_high"]) if v else "-",
            f"{v['welch_p']:.3f} / {v['mannwhitney_p']:.2f}" if v and v["welch_p"] is not None else "-",
            *gpu_idle_cells(e),
            _ms(e["preempted_ms"]),
            _ms(e["runqueue_ms"]),
            _ms(e["irq_ms"]),
            f"{e['explained_percent']:.0f}%" if e.get("explained_percent") is not None else "-",
            f"{e['sched_per_1k']:.1f}" if e["sched_per_1k"] is not None else "-",
            literal(e["top_culprit"] or "-"),
        )
    console.print(table)
    render_gains(summary, console)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


def render_grid(results: ExperimentResults, summary: dict, console: Console) -> None:
    """A lever grid: each cell against SCHED_OTHER of its class."""
    table = Table(
        title=Text(
            shown(
                f"{results.metric_label} ({_direction(results)} is better), each cell vs "
                f"SCHED_OTHER of its class (means, Welch's 95% CI); status: {results.status}"
            )
        ),
        title_justify="left",
    )
    for col in GRID_COLUMNS:
        table.add_column(col, justify="left" if col in ("class", "variant", "top culprit") else "right")
    for name, e in summary.items():
        if not e.get("runs"):
            table.add_row(
                literal(e["class"] or name), literal(e["variant"] or ""), "0", literal(e["failed"]), "", *[""] * 11
            )
            continue
        m, v = e["metric"], e.get("vs_baseline")
        table.add_row(
            literal(e["class"]),
            literal(e["variant"]),
            str(e["runs"]),
            literal(e["failed"]),
            literal(f"{e['verified']}/{e['runs']}"),
            _num(m["mean"]),
            _num(m["sd"]),
            _num(m["p95"]),
            f"{_num(m['ci_low'])}..{_num(m['ci_high'])}" if m["ci_low"] is not None else "-",
            words.speed(v["mean_slowdown_percent"]) if v else "-",
            words.speed_interval(v["slowdown_ci_low"], v["slowdown_ci_high"]) if v else "-",
            f"{v['welch_p']:.3f}" if v and v["welch_p"] is not None else "-",
            _ms(e.get("preempted_ms")),
            _ms(e.get("runqueue_ms")),
            _ms(e.get("irq_ms")),
            literal(e.get("top_culprit") or "-"),
        )
    console.print(table)
