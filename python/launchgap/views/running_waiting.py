"""`launchgap running-waiting` drawn with matplotlib: running tasks (green),
runnable tasks (red: running + waiting), the CPU count (dotted) and
work-conservation failures shaded, one graph per trace on one time scale."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# labels are text: a name holding two $ signs would otherwise be read as TeX, and fail the drawing
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from launchgap.analysis.running_waiting import RunningWaiting  # noqa: E402
from launchgap.console import shown  # noqa: E402
from launchgap.views.timeline import DPI, PLOT_WIDTH_IN, plot_width_px  # noqa: E402

FAILURE_COLOUR = "#ffa500"


@dataclass(frozen=True)
class RunningWaitingGraph:
    name: str
    origin_ns: int
    rw: RunningWaiting


def peak_per_pixel(
    t: np.ndarray, values: np.ndarray, lo: float, hi: float, width_px: int
) -> tuple[np.ndarray, np.ndarray]:
    """Steps too dense to draw become one step per pixel column at the column's
    highest count: an overload lasting a microsecond stays visible."""
    if t.size <= 4 * width_px:
        return t, values
    column = np.clip(((t - lo) / max(hi - lo, 1e-12) * width_px).astype(np.int64), 0, width_px - 1)
    starts = np.flatnonzero(np.diff(np.concatenate([[-1], column])) != 0)
    return t[starts], np.maximum.reduceat(values, starts)


def draw_static(graphs: list[RunningWaitingGraph], path: Path, span: tuple[float, float]) -> None:
    fig, axes = plt.subplots(len(graphs), 1, figsize=(PLOT_WIDTH_IN, 3.2 * len(graphs) + 0.6), dpi=DPI, squeeze=False)
    width_px = plot_width_px()
    for ax, g in zip(axes[:, 0], graphs):
        steps = g.rw.steps
        t = (steps["ts_ns"].to_numpy() - g.origin_ns) / 1e9
        for column, colour, label in (
            ("runnable", "#d62728", "runnable (running + waiting)"),
            ("running", "#2ca02c", "running"),
        ):
            x, y = peak_per_pixel(t, steps[column].to_numpy(), span[0], span[1], width_px)
            ax.step(x, y, where="post", color=colour, lw=0.9, label=label, zorder=3)
        ax.axhline(g.rw.n_cpus, color="black", ls=":", lw=1, label=f"{g.rw.n_cpus} CPUs", zorder=2)
        fails = g.rw.failures
        if not fails.is_empty():
            starts = (fails["start_ns"].to_numpy() - g.origin_ns) / 1e9
            widths = (fails["end_ns"].to_numpy() - fails["start_ns"].to_numpy()) / 1e9
            # at least a pixel wide, or a short failure would vanish
            widths = np.maximum(widths, (span[1] - span[0]) / width_px)
            top = max(g.rw.n_cpus + 1, int(steps["runnable"].max() or 0) + 1)
            ax.broken_barh(
                list(zip(starts, widths)),
                (0, top),
                facecolors=FAILURE_COLOUR,
                alpha=0.35,
                label=f"work-conservation failure: {g.rw.failure_ns / 1e6:.3f} ms",
            )
        ax.set_xlim(*span)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("tasks")
        ax.set_title(shown(Path(g.name).name), fontsize=9, loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
