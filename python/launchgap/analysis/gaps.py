"""Launch-gap analysis, done right: every gap between consecutive launches
of a thread is classified by what took the most time inside it, using the
thread's own states (so a sync is never mistaken for preemption)."""

from __future__ import annotations

import polars as pl

from launchgap.analysis.intervals import overlaps

CAUSES = ("preempted", "runqueue", "irq", "sync", "blocked")
CLASSES = ("clean", *CAUSES)
# A gap this many times the median clean gap ends a burst even without a sync.
BURST_BREAK_FACTOR = 20


def launch_gaps(launches: pl.DataFrame, segments: pl.DataFrame, irqs: pl.DataFrame,
                syncs: pl.DataFrame) -> pl.DataFrame:
    """tid, g_start, g_end, gap_ns, ns per cause inside it, syncs, and `class`."""
    gaps = (launches.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("q_start")).sort("tid", "q_start")
            .with_columns(pl.col("q_start").shift(-1).over("tid").alias("q_end"))
            .filter(pl.col("q_end").is_not_null())
            .with_row_index("gap_id"))
    if gaps.is_empty():
        return pl.DataFrame(schema={"tid": pl.UInt32, "g_start": pl.Int64, "g_end": pl.Int64, "gap_ns": pl.Int64,
                                    "class": pl.Utf8})
    runs = segments.select("tid", pl.col("s_start").alias("r_start"), pl.col("s_end").alias("r_end"), "state")
    by_state = (overlaps(gaps.select("gap_id", "tid", "q_start", "q_end"), runs, key="tid")
                .group_by("gap_id").agg(
                    *[pl.col("overlap_ns").filter(pl.col("state") == s).sum().alias(f"{s}_ns")
                      for s in ("preempted", "runqueue", "blocked")]))
    target_irqs = irqs.select("tid", pl.col("i_start").alias("ts"), "exclusive_ns").sort("ts")
    irq_in_gap = (target_irqs.join_asof(gaps.select("gap_id", "tid", "q_start", "q_end").sort("q_start"),
                                        left_on="ts", right_on="q_start", by="tid", strategy="backward", check_sortedness=False)
                  .filter(pl.col("gap_id").is_not_null() & (pl.col("ts") < pl.col("q_end")))
                  .group_by("gap_id").agg(pl.col("exclusive_ns").sum().alias("irq_ns")))
    sync_in_gap = (syncs.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("ts")).sort("ts")
                   .join_asof(gaps.select("gap_id", "tid", "q_start", "q_end").sort("q_start"),
                              left_on="ts", right_on="q_start", by="tid", strategy="backward", check_sortedness=False)
                   .filter(pl.col("gap_id").is_not_null() & (pl.col("ts") < pl.col("q_end")))
                   .group_by("gap_id").agg(pl.len().alias("syncs")))
    out = (gaps.join(by_state, on="gap_id", how="left").join(irq_in_gap, on="gap_id", how="left")
           .join(sync_in_gap, on="gap_id", how="left").fill_null(0)
           .rename({"q_start": "g_start", "q_end": "g_end"})
           .with_columns((pl.col("g_end") - pl.col("g_start")).alias("gap_ns")))
    # the voluntary block of a gap that holds a sync is the sync's
    out = out.with_columns(
        pl.when(pl.col("syncs") > 0).then(pl.col("blocked_ns")).otherwise(0).alias("sync_ns"),
        pl.when(pl.col("syncs") > 0).then(0).otherwise(pl.col("blocked_ns")).alias("blocked_ns"))
    largest = pl.max_horizontal(*[pl.col(f"{c}_ns") for c in CAUSES])
    klass = pl.when(largest <= 0).then(pl.lit("clean"))
    for cause in CAUSES:
        klass = klass.when(pl.col(f"{cause}_ns") == largest).then(pl.lit(cause))
    return out.with_columns(klass.otherwise(pl.lit("clean")).alias("class")).drop("gap_id")


def class_table(gaps: pl.DataFrame) -> list[dict]:
    """Per class: count, share, p50/p90/p99 of the gap, penalty vs the median clean gap."""
    if gaps.is_empty():
        return []
    clean = gaps.filter(pl.col("class") == "clean")["gap_ns"]
    clean_median = float(clean.median()) if clean.len() else None
    stats = (gaps.group_by("class")
             .agg(pl.len().alias("count"), pl.col("gap_ns").median().alias("p50"),
                  pl.col("gap_ns").quantile(0.9, "nearest").alias("p90"),
                  pl.col("gap_ns").quantile(0.99, "nearest").alias("p99"),
                  pl.col("gap_ns").sum().alias("total_ns")))
    rows = []
    for klass in CLASSES:
        row = stats.filter(pl.col("class") == klass)
        if row.is_empty():
            continue
        r = row.row(0, named=True)
        rows.append({
            "class": klass, "count": r["count"], "share": r["count"] / gaps.height,
            "p50_ns": r["p50"], "p90_ns": r["p90"], "p99_ns": r["p99"], "total_ns": r["total_ns"],
            "penalty_ns": (r["p50"] - clean_median) if clean_median is not None else None,
        })
    return rows


def tail_attribution(gaps: pl.DataFrame) -> list[dict]:
    """Of the gaps at or above p95 and p99: what share each class explains (by count and time)."""
    out = []
    if gaps.is_empty():
        return out
    for q in (0.95, 0.99):
        threshold = float(gaps["gap_ns"].quantile(q, "nearest"))
        tail = gaps.filter(pl.col("gap_ns") >= threshold)
        total_time = float(tail["gap_ns"].sum()) or 1.0
        shares = {k: {"count": 0, "share": 0.0, "time_share": 0.0} for k in CLASSES}
        for klass, n, t in tail.group_by("class").agg(pl.len(), pl.col("gap_ns").sum()).iter_rows():
            shares[klass] = {"count": n, "share": n / tail.height, "time_share": t / total_time}
        out.append({"percentile": int(q * 100), "threshold_ns": threshold, "gaps": tail.height, "by_class": shares})
    return out


def bursts(gaps: pl.DataFrame) -> dict:
    """Launch bursts: separated by a gap holding a sync or block, or one far above a clean gap."""
    if gaps.is_empty():
        return {"bursts": 0}
    clean = gaps.filter(pl.col("class") == "clean")["gap_ns"]
    limit = float(clean.median()) * BURST_BREAK_FACTOR if clean.len() else float("inf")
    breaks = gaps.with_columns(
        (pl.col("class").is_in(["sync", "blocked"]) | (pl.col("gap_ns") > limit)).alias("breaks"))
    # a breaking gap separates two bursts and belongs to neither
    sizes = (breaks.sort("tid", "g_start")
             .with_columns(pl.col("breaks").cum_sum().over("tid").alias("burst"))
             .filter(~pl.col("breaks"))
             .group_by("tid", "burst").agg(pl.len().alias("gaps")))
    launches_per_burst = sizes["gaps"] + 1  # a burst of n gaps holds n + 1 launches
    idle = breaks.filter(pl.col("breaks"))["gap_ns"]
    return {
        "bursts": sizes.height,
        "launches_per_burst_p50": float(launches_per_burst.median()),
        "launches_per_burst_p90": float(launches_per_burst.quantile(0.9, "nearest")),
        "idle_between_bursts_p50_ns": float(idle.median()) if idle.len() else None,
        "idle_between_bursts_p90_ns": float(idle.quantile(0.9, "nearest")) if idle.len() else None,
        "break_rule": f"a gap holding a sync or block, or longer than {BURST_BREAK_FACTOR}x the median clean gap",
    }
