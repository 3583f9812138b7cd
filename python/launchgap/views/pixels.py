"""Decimation by pixel: at a given width, a CPU row can show one colour per
pixel column, so a million slices need at most rows x columns segments.

Rules (docs/views.md): a slice at least one pixel wide is kept whole;
slices that begin and end inside one pixel column compete for it and the
longest wins, drawn one pixel wide on top, so a brief preemption by a kernel
thread stays visible however far out the view is; then neighbouring segments
of the same colour less than a pixel apart are merged.
"""

from __future__ import annotations

import polars as pl


def decimate(slices: pl.DataFrame, lo_ns: int, hi_ns: int, width_px: int, key: str = "color") -> pl.DataFrame:
    """slices: cpu, start_ns, end_ns, KEY (clipped to [lo, hi]). Returns cpu,
    start_ns, end_ns, KEY, narrow (drawn one pixel wide), sorted by cpu and start."""
    ns_per_px = max(1.0, (hi_ns - lo_ns) / max(1, width_px))
    if slices.is_empty():
        return slices.select("cpu", "start_ns", "end_ns", key).with_columns(pl.lit(False).alias("narrow"))
    frame = slices.select("cpu", "start_ns", "end_ns", key).with_columns(
        ((pl.col("start_ns") - lo_ns) / ns_per_px).floor().cast(pl.Int64).alias("px0"),
        ((pl.col("end_ns") - lo_ns) / ns_per_px).floor().cast(pl.Int64).alias("px1"),
    )
    wide = frame.filter(pl.col("px1") > pl.col("px0"))
    narrow = (
        frame.filter(pl.col("px1") == pl.col("px0"))
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur"))
        .sort("dur", descending=True)
        .unique(subset=["cpu", "px0"], keep="first", maintain_order=True)
        .drop("dur")
    )
    wide = _merge_same_colour(wide.drop("px0", "px1"), ns_per_px, key).with_columns(pl.lit(False).alias("narrow"))
    narrow = narrow.drop("px0", "px1").with_columns(pl.lit(True).alias("narrow"))
    return pl.concat([wide, narrow]).sort("cpu", "start_ns")


def _merge_same_colour(frame: pl.DataFrame, ns_per_px: float, key: str) -> pl.DataFrame:
    if frame.is_empty():
        return frame
    frame = frame.sort("cpu", "start_ns")
    breaks = (
        (pl.col("cpu") != pl.col("cpu").shift(1))
        | (pl.col(key) != pl.col(key).shift(1))
        | ((pl.col("start_ns") - pl.col("end_ns").shift(1)) >= ns_per_px)
    ).fill_null(True)
    return (
        frame.with_columns(breaks.cum_sum().alias("run"))
        .group_by("run", maintain_order=True)
        .agg(pl.col("cpu").first(), pl.col("start_ns").min(), pl.col("end_ns").max(), pl.col(key).first())
        .drop("run")
    )
