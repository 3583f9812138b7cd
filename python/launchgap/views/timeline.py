"""`launchgap timeline`: which task ran on which CPU over time (dat2graph's
picture), with IRQ, launch, sync and migration marks. This module builds the
figure's data; `draw_static` draws it with matplotlib (PNG/PDF/SVG) and
views/html.py writes the interactive page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# labels are text: a name holding two $ signs would otherwise be read as TeX, and fail the drawing
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from rich.table import Table  # noqa: E402

from launchgap.analysis.core_map import (  # noqa: E402
    Window,
    choose_window,
    command_stats,
    cpu_order,
    forked_tids,
    marks,
    run_slices,
    shared_span_s,
    trace_cpus,
    unknown_stretches,
    window_switches,
)
from launchgap.analysis.gpu_activity import busy_intervals  # noqa: E402
from launchgap.console import literal, shown  # noqa: E402
from launchgap.trace import Event, Trace  # noqa: E402
from launchgap.views.pixels import decimate  # noqa: E402

OTHER_COLOUR = "#000000"  # --target: tasks that do not match are black, as in dat2graph
GPU_BUSY_COLOUR = "#37474f"  # the GPU band: busy; idle is left blank
MARK_STYLE = {
    "irq": ("#d62728", "|"),
    "migrate": ("#7f7f7f", "x"),
    "launch": ("#2ca02c", "."),
    "sync": ("#9467bd", "s"),
}
MARK_KINDS = tuple(MARK_STYLE)
# where a CPU's switches do not chain (a switch was never recorded): who ran there is unknown
UNKNOWN_COLOUR, UNKNOWN_HATCH = "#7f7f7f", "////"
UNKNOWN_LABEL = "unknown: a switch was not recorded"


@dataclass(frozen=True)
class TimelineOptions:
    min_s: float | None = None
    max_s: float | None = None
    target: str | None = None
    # command: one colour per command, named in the legend with its statistics (readable at any task
    # count); pid: a colour per task from 20 that repeat, no legend (dat2graph's default)
    color_by: str = "command"
    forked: bool = False
    socket_order: bool = False
    after_sleep: bool = False
    from_workload: bool = False
    show_marks: tuple[str, ...] = MARK_KINDS
    # the GPU busy/idle band under the cores: None draws it when the trace has GPU activity
    gpu: bool | None = None


@dataclass(frozen=True)
class TimelineData:
    name: str
    window: Window
    cpus: list[int]  # bottom to top
    slices: pl.DataFrame  # cpu, start_ns, end_ns, tid, pid, comm, color
    marks: pl.DataFrame  # kind, ts_ns, cpu, tid
    stats: pl.DataFrame  # per command: first_s, last_s, run_s, switches_in, tasks
    legend: dict[str, str]  # label -> colour, for the colours that name something
    marks_in_window: int = 0  # before thinning: more than marks.height when the window held too many
    unknown: pl.DataFrame | None = None  # cpu, start_ns, end_ns, ...: where a CPU's switches do not chain
    # the GPU band: lane (label, top to bottom), start_ns, end_ns, when the GPU ran anything
    gpu: pl.DataFrame | None = None

    @property
    def gpu_lanes(self) -> list[str]:
        return [] if self.gpu is None else self.gpu["lane"].unique(maintain_order=True).to_list()


def _palette(n: int) -> list[str]:
    """tab20's strong colours first, then their light twins, so that the
    first ten tasks or commands are easy to tell apart."""
    cmap = plt.get_cmap("tab20")
    order = [*range(0, 20, 2), *range(1, 20, 2)]
    return [to_hex(cmap(order[i % 20])) for i in range(n)]


def colour_slices(slices: pl.DataFrame, options: TimelineOptions) -> tuple[pl.DataFrame, dict[str, str]]:
    """Adds `color`. By pid: tasks cycle through 20 colours in order of first
    run (colours repeat, as in dat2graph); by command: one colour per command,
    the busiest first; --target: only commands starting with TARGET get colours."""
    key = "comm" if options.color_by == "command" else "tid"
    targeted = pl.col("comm").str.starts_with(options.target) if options.target else pl.lit(True)
    coloured = slices.filter(targeted)
    if key == "comm":
        order = (
            coloured.group_by("comm")
            .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("t"))
            .sort("t", "comm", descending=[True, False])["comm"]
            .to_list()
        )
    else:
        order = coloured.sort("start_ns").unique("tid", keep="first", maintain_order=True)["tid"].to_list()
    colours = _palette(len(order))
    mapping = pl.DataFrame({key: order, "color": colours}, schema={key: slices.schema[key], "color": pl.Utf8})
    out = slices.join(mapping, on=key, how="left").with_columns(pl.col("color").fill_null(OTHER_COLOUR))
    if key == "comm":
        legend = dict(zip(order, colours))
    else:
        legend = {}
        if options.target:
            legend[f"{options.target}* (coloured by task)"] = colours[0] if colours else OTHER_COLOUR
    if options.target:
        legend["other tasks"] = OTHER_COLOUR
    return out.sort("cpu", "start_ns"), legend


def build_timeline(trace: Trace, options: TimelineOptions) -> TimelineData:
    window = choose_window(trace, options.after_sleep, options.from_workload, options.min_s, options.max_s)
    switches = window_switches(trace, window)
    slices = run_slices(trace, window, switches)
    unknown = unknown_stretches(trace, window, switches)
    tids = forked_tids(trace) if options.forked else None
    if tids is not None:
        slices = slices.filter(pl.col("tid").is_in(sorted(tids)))
    slices, legend = colour_slices(slices, options)
    cpus = cpu_order(trace, trace_cpus(trace), options.socket_order)
    drawn_marks = marks(trace, window, tids, options.show_marks)
    return TimelineData(
        str(trace.path),
        window,
        cpus,
        slices,
        drawn_marks.frame,
        command_stats(slices, window),
        legend,
        drawn_marks.in_window,
        unknown=unknown,
        gpu=gpu_band(trace, window) if _wants_gpu(trace, options) else None,
    )


def _wants_gpu(trace: Trace, options: TimelineOptions) -> bool:
    return options.gpu if options.gpu is not None else trace.count(Event.GPU_API) > 0


def gpu_band(trace: Trace, window: Window) -> pl.DataFrame:
    """When each process's GPU was busy inside the window, one lane per process and device."""
    busy = busy_intervals(trace).filter((pl.col("end_ns") > window.lo_ns) & (pl.col("start_ns") < window.hi_ns))
    return (
        busy.with_columns(
            pl.col("start_ns").clip(window.lo_ns, window.hi_ns),
            pl.col("end_ns").clip(window.lo_ns, window.hi_ns),
            (
                pl.lit("GPU ") + pl.col("device_id").cast(pl.String) + pl.lit(" pid ") + pl.col("pid").cast(pl.String)
            ).alias("lane"),
        )
        .sort("pid", "device_id", "start_ns")
        .select("lane", "start_ns", "end_ns")
    )


PLOT_WIDTH_IN = 14.0
DPI = 150


def plot_width_px() -> int:
    """The axes' width in pixels, about: the legend takes the rest of the figure."""
    return int(PLOT_WIDTH_IN * DPI * 0.8)


def static_segments(data: TimelineData, span: tuple[float, float], width_px: int) -> pl.DataFrame:
    """The segments draw_static draws for one graph (the data behind the figure)."""
    lo = data.window.origin_ns + int(span[0] * 1e9)
    hi = data.window.origin_ns + int(span[1] * 1e9)
    return decimate(data.slices, lo, hi, width_px)


def unknown_segments(data: TimelineData, span: tuple[float, float], width_px: int) -> pl.DataFrame:
    """The hatched stretches draw_static draws for one graph (cpu, start_ns, end_ns, narrow): those closer
    than a pixel merged."""
    if data.unknown is None or data.unknown.is_empty():
        return pl.DataFrame(schema={"cpu": pl.UInt32, "start_ns": pl.Int64, "end_ns": pl.Int64, "narrow": pl.Boolean})
    lo = data.window.origin_ns + int(span[0] * 1e9)
    hi = data.window.origin_ns + int(span[1] * 1e9)
    return decimate(data.unknown.with_columns(pl.lit(UNKNOWN_COLOUR).alias("color")), lo, hi, width_px).drop("color")


def _mark_points(frame: pl.DataFrame, origin: int, lo: int, hi: int, width_px: int) -> pl.DataFrame:
    """One mark per kind, CPU and pixel column: more would draw on top of each other."""
    ns_per_px = max(1.0, (hi - lo) / width_px)
    return (
        frame.with_columns(((pl.col("ts_ns") - lo) / ns_per_px).floor().alias("px"))
        .unique(["kind", "cpu", "px"], keep="first", maintain_order=True)
        .with_columns(((pl.col("ts_ns") - origin) / 1e9).alias("t"))
    )


def _draw_gpu_band(ax, data: TimelineData, span: tuple[float, float], width_px: int, line_width: float) -> None:
    """The GPU lanes below the cores, top to bottom: busy drawn, idle left blank."""
    lanes = data.gpu_lanes
    if not lanes:
        return
    lane_row = {lane: -1 - i for i, lane in enumerate(lanes)}
    band = decimate(
        data.gpu.rename({"lane": "cpu"}).with_columns(pl.lit(GPU_BUSY_COLOUR).alias("color")),
        data.window.origin_ns + int(span[0] * 1e9),
        data.window.origin_ns + int(span[1] * 1e9),
        width_px,
    )
    if not band.is_empty():
        y = band["cpu"].replace_strict(lane_row, default=None).cast(pl.Float64).to_numpy()
        x0 = ((band["start_ns"] - data.window.origin_ns) / 1e9).to_numpy()
        x1 = ((band["end_ns"] - data.window.origin_ns) / 1e9).to_numpy()
        x1 = np.where(band["narrow"].to_numpy(), x0 + (span[1] - span[0]) / width_px, x1)
        ax.add_collection(
            LineCollection(
                np.stack([np.column_stack([x0, y]), np.column_stack([x1, y])], axis=1),
                colors=GPU_BUSY_COLOUR,
                linewidths=line_width,
                capstyle="butt",
            )
        )


def _draw_unknown(ax, data: TimelineData, span: tuple[float, float], width_px: int, row_of: dict) -> pl.DataFrame:
    """The stretches whose task is unknown, hatched over whatever the slices say ran there, each at least a
    pixel wide; returns them (the legend names them where any)."""
    hatched = unknown_segments(data, span, width_px)
    if not hatched.is_empty():
        px = (span[1] - span[0]) / width_px
        ys = hatched["cpu"].replace_strict(row_of, default=None).cast(pl.Float64).to_numpy()
        x0 = ((hatched["start_ns"] - data.window.origin_ns) / 1e9).to_numpy()
        x1 = np.maximum(((hatched["end_ns"] - data.window.origin_ns) / 1e9).to_numpy(), x0 + px)
        ax.add_collection(
            PatchCollection(
                [Rectangle((a, y - 0.4), b - a, 0.8) for a, b, y in zip(x0, x1, ys)],
                facecolor="none",
                edgecolor=UNKNOWN_COLOUR,
                hatch=UNKNOWN_HATCH,
                linewidth=0,
                zorder=2,
            )
        )
    return hatched


def _legend(ax, data: TimelineData, hatched: pl.DataFrame) -> None:
    """The legend beside the graph: the commands' colours (the first 14), the marks drawn, the hatching."""
    handles = [
        plt.Line2D([], [], color=c, lw=4, label=shown(_legend_label(label, data.stats)))
        for label, c in list(data.legend.items())[:14]
    ]
    handles += [
        plt.Line2D([], [], color=MARK_STYLE[k][0], marker=MARK_STYLE[k][1], lw=0, label=k)
        for k in MARK_STYLE
        if not data.marks.filter(pl.col("kind") == k).is_empty()
    ]
    if not hatched.is_empty():
        handles.append(Patch(facecolor="none", edgecolor=UNKNOWN_COLOUR, hatch=UNKNOWN_HATCH, label=UNKNOWN_LABEL))
    if handles:
        ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


def draw_static(datas: list[TimelineData], path: Path) -> list[pl.DataFrame]:
    """Draws one graph per trace, stacked, on one time scale. Returns the
    segments drawn for each (what tests check instead of pixels)."""
    span = shared_span_s([d.window for d in datas])
    rows = [max(1, len(d.cpus)) + len(d.gpu_lanes) for d in datas]
    height = sum(min(0.25 * r + 1.4, 16) for r in rows) + 0.6 * len(datas)
    fig, axes = plt.subplots(len(datas), 1, figsize=(PLOT_WIDTH_IN, height), dpi=DPI, squeeze=False, height_ratios=rows)
    width_px = plot_width_px()
    drawn = []
    for ax, data in zip(axes[:, 0], datas):
        row_of = {cpu: i for i, cpu in enumerate(data.cpus)}
        segs = static_segments(data, span, width_px)
        drawn.append(segs)
        line_width = max(0.4, min(6.0, 0.6 * 72 * (height / max(sum(rows), 1))))
        if not segs.is_empty():
            y = segs["cpu"].replace_strict(row_of, default=None).cast(pl.Float64).to_numpy()
            x0 = ((segs["start_ns"] - data.window.origin_ns) / 1e9).to_numpy()
            x1 = ((segs["end_ns"] - data.window.origin_ns) / 1e9).to_numpy()
            narrow = segs["narrow"].to_numpy()
            px = (span[1] - span[0]) / width_px
            x1 = x1.copy()
            x1[narrow] = x0[narrow] + px
            lines = np.stack([np.column_stack([x0, y]), np.column_stack([x1, y])], axis=1)
            ax.add_collection(
                LineCollection(lines, colors=segs["color"].to_list(), linewidths=line_width, capstyle="butt")
            )
        lanes = data.gpu_lanes
        _draw_gpu_band(ax, data, span, width_px, line_width)
        lo_abs = data.window.origin_ns + int(span[0] * 1e9)
        hi_abs = data.window.origin_ns + int(span[1] * 1e9)
        hatched = _draw_unknown(ax, data, span, width_px, row_of)
        points = _mark_points(data.marks, data.window.origin_ns, lo_abs, hi_abs, width_px)
        for kind, (colour, marker) in MARK_STYLE.items():
            sel = points.filter(pl.col("kind") == kind)
            if sel.is_empty():
                continue
            ys = sel["cpu"].replace_strict(row_of, default=None).cast(pl.Float64).to_numpy() + 0.38
            ax.scatter(sel["t"].to_numpy(), ys, s=4, c=colour, marker=marker, linewidths=0.6, label=kind, zorder=3)
        ax.set_xlim(*span)
        ax.set_ylim(-0.7 - len(lanes), len(data.cpus) - 0.3)
        step = max(1, len(data.cpus) // 32)
        ticks = [*range(0, len(data.cpus), step), *[-1 - i for i in range(len(lanes))]]
        ax.set_yticks(ticks, [str(c) for c in data.cpus[::step]] + [f"{lane} busy" for lane in lanes], fontsize=7)
        ax.set_ylabel("CPU" + (" / GPU" if lanes else ""))
        ax.set_title(shown(Path(data.name).name), fontsize=9, loc="left")
        _legend(ax, data, hatched)
    axes[-1, 0].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return drawn


def _legend_label(label: str, stats: pl.DataFrame) -> str:
    row = stats.filter(pl.col("comm") == label)
    if row.is_empty():
        return label
    r = row.row(0, named=True)
    return (
        f"{label}: {r['first_s']:.4f}-{r['last_s']:.4f} s, ran {r['run_s']:.3f} s, "
        f"{r['switches_in']} switches, {r['tasks']} pids"
    )


# the commands the table beside the picture lists, busiest first; the rest are counted in its caption
COMMANDS_LISTED = 20


def command_table(data: TimelineData) -> Table:
    """Each command's statistics in the trace's window, as the timeline command prints them."""
    table = Table(title=f"{literal(data.name)}: per command", title_justify="left")
    for col in ("command", "first seen (s)", "last seen (s)", "run time (s)", "switches in", "pids"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for r in data.stats.head(COMMANDS_LISTED).iter_rows(named=True):
        table.add_row(
            literal(r["comm"]),
            f"{r['first_s']:.4f}",
            f"{r['last_s']:.4f}",
            f"{r['run_s']:.4f}",
            str(r["switches_in"]),
            str(r["tasks"]),
        )
    if data.stats.height > COMMANDS_LISTED:
        table.caption = f"and {data.stats.height - COMMANDS_LISTED} more commands"
    return table
