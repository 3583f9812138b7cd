"""Time taken from the workload, by cause, with the culprits: who ran while a
target thread waited, and which interrupts ran on its CPU while it ran."""

from __future__ import annotations

import polars as pl

from launchgap.analysis.intervals import overlaps
from launchgap.analysis.timeline import Bounds

WAITING = ("preempted", "runqueue")


def state_time(segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: ns in each state (columns running_ns, preempted_ns, ...) and lifetime_ns."""
    base = segments.with_columns((pl.col("s_end") - pl.col("s_start")).alias("ns"))
    wide = base.pivot(on="state", index="tid", values="ns", aggregate_function="sum")
    states = ("running", "preempted", "runqueue", "blocked", "offcpu", "unknown")
    for state in states:
        if state not in wide.columns:
            wide = wide.with_columns(pl.lit(0, pl.Int64).alias(state))
    wide = wide.select("tid", *states).rename({s: f"{s}_ns" for s in states})
    lifetime = base.group_by("tid").agg((pl.col("s_end").max() - pl.col("s_start").min()).alias("lifetime_ns"))
    return wide.fill_null(0).join(lifetime, on="tid")


def culprits(segments: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Who ran on a waiting thread's CPU while it waited: tid, cause, run_pid, run_comm, ns."""
    waiting = segments.filter(pl.col("state").is_in(WAITING)).select(
        "tid", "cpu", pl.col("state").alias("cause"), pl.col("s_start").alias("q_start"), pl.col("s_end").alias("q_end"))
    pairs = overlaps(waiting, runs, key="cpu")
    if pairs.is_empty():
        return pl.DataFrame(schema={"tid": pl.UInt32, "cause": pl.Utf8, "run_pid": pl.UInt32, "run_comm": pl.Utf8,
                                    "ns": pl.Int64})
    # the idle task has one name per CPU (swapper/N); as a culprit it is one thing
    idle_as_one = pl.when(pl.col("run_pid") == 0).then(pl.lit("swapper")).otherwise(pl.col("run_comm"))
    return (pairs.filter(pl.col("run_tid") != pl.col("tid"))
            .with_columns(idle_as_one.alias("run_comm"))
            .group_by("tid", "cause", "run_pid", "run_comm")
            .agg(pl.col("overlap_ns").sum().alias("ns"))
            # equal times in a fixed order, whatever order the rows came in
            .sort(["ns", "tid", "cause", "run_pid", "run_comm"], descending=[True, False, False, False, False]))


def irq_time(irqs: pl.DataFrame, tids: list[int]) -> pl.DataFrame:
    """Interrupt time that interrupted each target thread while it ran: tid, kind, name, count, ns."""
    return (irqs.filter(pl.col("tid").is_in(tids))
            .group_by("tid", "kind", "name")
            .agg(pl.len().alias("count"), pl.col("exclusive_ns").sum().alias("ns"))
            .sort(["ns", "tid", "kind", "name"], descending=[True, False, False, False]))


def migration_time(trace_migrations: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: migrations, and the runnable time of the waits that contained one.

    A wait is a run of consecutive runnable segments (preempted / runqueue)
    ended by running; a migration while runnable splits it into segments.
    """
    waits = segments.sort("tid", "s_start").with_columns(
        pl.col("state").is_in(WAITING).alias("waiting"))
    waits = waits.with_columns(
        (pl.col("waiting") != pl.col("waiting").shift(1).over("tid")).fill_null(True).cum_sum().over("tid").alias("episode"))
    episodes = (waits.filter(pl.col("waiting")).group_by("tid", "episode")
                .agg(pl.col("s_start").min().alias("e_start"), pl.col("s_end").max().alias("e_end")))
    moves = trace_migrations.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("m_ts"))
    counts = moves.group_by("tid").agg(pl.len().alias("migrations"))
    if episodes.is_empty() or moves.is_empty():
        return counts.with_columns(pl.lit(0, pl.Int64).alias("runnable_around_ns"))
    hit = (episodes.join(moves, on="tid")
           .filter((pl.col("m_ts") >= pl.col("e_start")) & (pl.col("m_ts") <= pl.col("e_end")))
           .select("tid", "episode", "e_start", "e_end").unique())
    around = hit.group_by("tid").agg((pl.col("e_end") - pl.col("e_start")).sum().alias("runnable_around_ns"))
    return counts.join(around, on="tid", how="left").fill_null(0)


def percent(ns: int | float, bounds_or_ns: Bounds | int | float) -> float:
    denominator = bounds_or_ns.end_ns - bounds_or_ns.start_ns if isinstance(bounds_or_ns, Bounds) else bounds_or_ns
    return 100.0 * ns / denominator if denominator else 0.0
