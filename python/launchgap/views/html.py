"""Self-contained interactive HTML for the timeline and running/waiting views.

The page carries every slice (not a picture): numeric columns as typed
arrays, gzip-compressed and base64-encoded, drawn by assets/viewer.js on a
canvas, which decimates by pixel at whatever zoom the user picks. No server
and no network: the file opens from disk. (Charting libraries serialise
each point as JSON and slow to a crawl long before a million slices.)
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import polars as pl

from launchgap.analysis.running_waiting import RunningWaiting
from launchgap.views.timeline import MARK_KINDS, UNKNOWN_COLOUR, UNKNOWN_LABEL, TimelineData

TYPED_ARRAYS = {
    np.dtype(np.float64): "Float64Array",
    np.dtype(np.uint32): "Uint32Array",
    np.dtype(np.uint16): "Uint16Array",
    np.dtype(np.uint8): "Uint8Array",
}


@dataclass
class Panel:
    spec: dict
    columns: dict[str, np.ndarray] = field(default_factory=dict)


def cores_panel(data: TimelineData) -> Panel:
    row_of = {cpu: i for i, cpu in enumerate(data.cpus)}
    slices = data.slices
    if data.unknown is not None and not data.unknown.is_empty():
        # where a CPU's switches do not chain: a grey slice of its own, in place of the run cpu_runs gave the
        # task last switched in (the same stretch exactly), so that a row's slices stay disjoint for the viewer
        slices = pl.concat(
            [
                slices.join(
                    data.unknown.select("cpu", "start_ns", "end_ns"), on=["cpu", "start_ns", "end_ns"], how="anti"
                ),
                data.unknown.select(
                    "cpu",
                    "start_ns",
                    "end_ns",
                    pl.lit(None, pl.UInt32).alias("tid"),
                    pl.lit(None, pl.UInt32).alias("pid"),
                    pl.lit(UNKNOWN_LABEL).alias("comm"),
                    pl.lit(UNKNOWN_COLOUR).alias("color"),
                ),
            ],
            how="diagonal_relaxed",
        )
    slices = slices.with_columns(pl.col("cpu").replace_strict(row_of).cast(pl.UInt16).alias("row"))
    tasks = slices.select("tid", "pid", "comm", "color").unique(maintain_order=True).with_row_index("task")
    slices = slices.join(tasks, on=["tid", "pid", "comm", "color"], how="left", nulls_equal=True).sort(
        "row", "start_ns"
    )
    counts = (
        np.bincount(slices["row"].to_numpy(), minlength=len(data.cpus))
        if slices.height
        else np.zeros(len(data.cpus), np.int64)
    )
    origin = data.window.origin_ns
    marks = data.marks.with_columns(pl.col("cpu").replace_strict(row_of, default=None).alias("row")).drop_nulls("row")
    kind_index = {k: i for i, k in enumerate(MARK_KINDS)}
    spec = {
        "kind": "cores",
        "title": data.name,
        "cpus": data.cpus,
        "row_offsets": [0, *np.cumsum(counts).tolist()],
        "tasks": [{"tid": t, "pid": p, "comm": c, "color": col} for _, t, p, c, col in tasks.iter_rows()],
        "mark_kinds": list(MARK_KINDS),
    }
    return Panel(
        spec,
        {
            "start": ((slices["start_ns"] - origin) / 1e9).to_numpy().astype(np.float64),
            "end": ((slices["end_ns"] - origin) / 1e9).to_numpy().astype(np.float64),
            "task": slices["task"].to_numpy().astype(np.uint32),
            "mark_t": ((marks["ts_ns"] - origin) / 1e9).to_numpy().astype(np.float64),
            "mark_row": marks["row"].to_numpy().astype(np.uint16),
            "mark_kind": marks["kind"].replace_strict(kind_index).to_numpy().astype(np.uint8),
        },
    )


def steps_panel(rw: RunningWaiting, origin_ns: int, title: str) -> Panel:
    spec = {"kind": "steps", "title": title, "n_cpus": rw.n_cpus, "max_runnable": int(rw.steps["runnable"].max() or 0)}
    return Panel(
        spec,
        {
            "t": ((rw.steps["ts_ns"] - origin_ns) / 1e9).to_numpy().astype(np.float64),
            "running": rw.steps["running"].to_numpy().astype(np.uint16),
            "runnable": rw.steps["runnable"].to_numpy().astype(np.uint16),
            "fail_start": ((rw.failures["start_ns"] - origin_ns) / 1e9).to_numpy().astype(np.float64),
            "fail_end": ((rw.failures["end_ns"] - origin_ns) / 1e9).to_numpy().astype(np.float64),
        },
    )


def _pack(panels: list[Panel]) -> bytes:
    """One buffer for every column, each at an offset aligned to 8 bytes
    (typed arrays need their element size's alignment)."""
    chunks, offset = [], 0
    for panel in panels:
        layout = []
        for name, column in panel.columns.items():
            column = np.ascontiguousarray(column)
            layout.append([name, TYPED_ARRAYS[column.dtype], offset, int(column.size)])
            raw = column.tobytes()
            pad = (-len(raw)) % 8
            chunks.append(raw + b"\0" * pad)
            offset += len(raw) + pad
        panel.spec["layout"] = layout
    return b"".join(chunks)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 12px; }}
.lg-canvas {{ width: 100%; display: block; cursor: crosshair; border: 1px solid #eee; }}
.lg-title {{ font-size: 13px; margin: 10px 0 2px 0; }}
.lg-title label {{ font-size: 11px; margin-left: 10px; }}
#lg-tip {{ font: 12px monospace; min-height: 1.2em; }}
#lg-help {{ font-size: 11px; color: #666; }}
#lg-legend span {{ font-size: 11px; margin-right: 12px; }}
#lg-legend i {{ display: inline-block; width: 14px; height: 8px; margin-right: 4px; }}
</style></head>
<body>
<div><b>{title}</b> <span id="lg-range"></span></div>
<div id="lg-help">wheel: zoom the time axis at the pointer; drag: pan; double-click: reset.</div>
<div id="lg-legend"></div>
<div id="lg-tip"></div>
<div id="lg-panels"></div>
<script id="lg-meta" type="application/json">{meta}</script>
<script id="lg-data" type="application/octet-stream">{data}</script>
<script>{script}</script>
</body></html>
"""


def write_html(
    path: Path, panels: list[Panel], span: tuple[float, float], title: str, legend: dict[str, str] | None = None
) -> None:
    """legend: label -> colour, shown as swatches above the panels."""
    data = base64.b64encode(gzip.compress(_pack(panels), compresslevel=6)).decode()
    meta = json.dumps(
        {"span": list(span), "panels": [p.spec for p in panels], "legend": list((legend or {}).items())}
    ).replace("</", "<\\/")
    script = resources.files("launchgap.views").joinpath("assets/viewer.js").read_text()
    Path(path).write_text(PAGE.format(title=html.escape(title), meta=meta, data=data, script=script))
