"""`launchgap diff`: two traces' metrics side by side with the change, whether each is a whole trace, the
launch rate in words, then the GPU time (gpu_diff.py) and, asked for, the culprits by cgroup. It shows what
analysis/diff.py `diff_reports` returns."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from launchgap.analysis.diff import ReportDiff
from launchgap.console import literal, shown
from launchgap.views import words
from launchgap.views.gpu_diff import render_gpu_diff
from launchgap.views.terminal import render_cgroup_diff

# significant figures a value under 1 is shown to (and a change said as a difference): 0.0002 ms of IRQ time is
# not "0", and a change beside it is said to the same figures
SMALL_FIGURES = 3


def _figures(value: float, sign: str = "") -> str:
    """VALUE under 1 to SMALL_FIGURES significant figures, in decimals (never 1e-05); SIGN "+" signs it."""
    places = SMALL_FIGURES - 1 - math.floor(math.log10(abs(value)))
    return f"{value:{sign}.{places}f}".rstrip("0").rstrip(".")


def _value(value: float | None) -> str:
    if value is None:
        return "-"
    if 0 < abs(value) < 1:
        return _figures(value)
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def render_diff(result: ReportDiff, a: str, b: str, console: Console) -> None:
    """RESULT: the comparison of trace A with trace B (their paths as given)."""
    # the paths on lines of their own, never folded (a reader copies them; a script greps them)
    console.print(Text(shown(f"A = {a}")), soft_wrap=True)
    console.print(Text(shown(f"B = {b}")), soft_wrap=True)
    table = Table()
    for col in ("metric", "A", "B", "B vs A"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for row in result.metrics:
        table.add_row(literal(row.metric), _value(row.a), _value(row.b), _metric_change(row))
    console.print(table)
    for side, state in (("a", result.traces.a), ("b", result.traces.b)):
        if state.truncated or not state.clean_end or state.damage:
            console.print(
                f"note: {side.upper()} ({shown(state.path)}) is not a whole trace (cut short or damaged): its "
                f"counts are lower bounds",
                highlight=False,
                markup=False,
            )
    slowdown = result.launch_rate_slowdown_percent
    if slowdown is not None:
        pace = "as fast as" if words.speed(slowdown) == "no change" else f"{words.speed(slowdown)} than"
        console.print(
            f"launch rate: B is {pace} A; verdicts A {literal(result.verdicts.a)}, B {literal(result.verdicts.b)}",
            highlight=False,
        )
    render_gpu_diff(result.gpu_time, console)
    if result.culprits_by_cgroup is not None:
        render_cgroup_diff(result.culprits_by_cgroup, console)


def _metric_change(row) -> str:
    """B vs A in words: a share, or where both sides are under the metric's floor a difference (a share of a
    few microseconds or a handful of events is noise: "+0.088" rather than "4410.0% higher")."""
    if row.a is not None and row.b is not None and max(abs(row.a), abs(row.b)) < row.floor:
        delta = row.b - row.a
        if delta == 0:
            return "no change"
        said = _figures(delta, "+") if abs(delta) < 1 else f"{delta:+,.{SMALL_FIGURES}g}"
        return f"{said} (both under {row.floor:g})"
    return words.change(row.change_percent)
