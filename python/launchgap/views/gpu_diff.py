"""`launchgap diff`'s GPU time: both traces' GPU time and the change (docs/gpu-time.md, "In diff")."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from launchgap.analysis.diff import GpuTimeDiff, GpuTimeSide
from launchgap.console import literal
from launchgap.views import words
from launchgap.views.terminal import CAUSE_WORDS, _s


def _signed(ns: int) -> str:
    return ("+" if ns > 0 else "-" if ns < 0 else "") + _s(abs(ns))


def _range(low: int | None, high: int | None, signed: bool = False) -> str:
    if low is None or high is None:
        return "-"  # not among that side's culprits (the report's top ten)
    said = _signed if signed else _s
    return said(low) if low == high else f"{said(low)} to {said(high)}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f} points"


def _mode(side: GpuTimeSide) -> str:
    if side.mode == "exact":
        return "exact, from GPU activity"
    if side.mode == "bounds":
        return f"bounds, from the host ({literal(side.why or '')})"
    return f"not estimated ({literal(side.why or '')})"


def _caused(side: GpuTimeSide) -> str:
    if side.mode == "none":
        return "-"
    share = ""
    if side.interference_high_percent is not None:
        low, high = side.interference_low_percent, side.interference_high_percent
        share = f" ({high:.2f}%" if low == high else f" ({low:.2f} to {high:.2f}%"
        share += f" of {_s(side.active_ns)})"
    return _range(side.interference_low_ns, side.interference_high_ns) + share


def render_gpu_diff(gpu: GpuTimeDiff, console: Console) -> None:
    """The GPU time table (both sides, B - A) and the culprits in GPU time."""
    a, b, change = gpu.a, gpu.b, gpu.change
    if a.mode == "none" and b.mode == "none":
        console.print(f"GPU time: not estimated for either trace ({literal(a.why or '')})", highlight=False)
        return
    table = Table(title="GPU time (A: " + _mode(a) + "; B: " + _mode(b) + ")", title_justify="left")
    for col in ("", "A", "B", "B - A"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("GPU busy", _percent(a.busy_percent), _percent(b.busy_percent), _points(change.busy_points))
    table.add_row("GPU idle", _percent(a.idle_percent), _percent(b.idle_percent), _points(change.idle_points))
    either_none = "none" in (a.mode, b.mode)
    table.add_row(
        "idle caused by interference (preemption, run-queue waits, interrupts)"
        + ("" if a.interference_exact and b.interference_exact else ", bounds where not exact"),
        _caused(a),
        _caused(b),
        "-" if either_none else _range(change.interference_low_ns, change.interference_high_ns, True),
    )
    if change.interference_by_cause_ns is not None:
        for cause, delta in change.interference_by_cause_ns.items():
            table.add_row(
                f"  of which {CAUSE_WORDS[cause]}",
                _s(a.interference_by_cause_ns[cause]),
                _s(b.interference_by_cause_ns[cause]),
                _signed(delta),
            )
    table.add_row(
        "idle for the app's own host work (host work, launch calls, its own waits)",
        _s(a.own_ns),
        _s(b.own_ns),
        "-" if change.own_ns is None else _signed(change.own_ns),
    )
    if a.steps_per_s is not None or b.steps_per_s is not None:
        rate = lambda v: "-" if v is None else f"{v:,.1f}"  # noqa: E731
        ratio = (
            100.0 * (b.steps_per_s - a.steps_per_s) / a.steps_per_s
            if a.steps_per_s and b.steps_per_s is not None
            else None
        )
        table.add_row("steps/s (one a drain sync)", rate(a.steps_per_s), rate(b.steps_per_s), words.change(ratio))
    console.print(table)
    if gpu.culprits:
        culprits = Table(
            title="Who cost the GPU time, A and B (by name, the largest change first)", title_justify="left"
        )
        culprits.add_column("culprit", overflow="fold")
        for col in ("A", "B", "B - A"):
            culprits.add_column(col, justify="right")
        for row in gpu.culprits:
            culprits.add_row(
                ("irq " if row.is_interrupt else "") + literal(row.culprit or "-"),
                _range(row.a_low_ns, row.a_high_ns),
                _range(row.b_low_ns, row.b_high_ns),
                _range(row.change_low_ns, row.change_high_ns, True),
            )
        console.print(culprits)
