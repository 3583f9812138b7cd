"""Per-thread state segments and per-CPU run slices, from switch, wakeup and
migrate events. Rules (docs/metrics.md, "Thread states"):

- switched out, counted voluntary by the kernel  -> blocked (the app's own time)
- switched out, voluntary unknown (imported data) -> offcpu (unclassified)
- switched out, not voluntary                    -> preempted (runnable, on that CPU's queue)
- switched out for the last time (TASK_DEAD)     -> dead
- woken (sched_wakeup / wakeup_new) after a block -> runqueue (runnable, not yet running)
- switched in                                    -> running
- migrated                                       -> same state, the new CPU
- before a thread's first event: running if that event switches it out,
  runqueue if it is its first wakeup, else unknown (not counted anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from launchgap.trace import Event, Trace
from launchgap.trace.schema import TASK_DEAD


@dataclass(frozen=True)
class Bounds:
    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9


def trace_bounds(trace: Trace) -> Bounds:
    end_row = trace.end
    known_end = end_row.get("end_ns") if end_row else None
    first, last = (None, None) if trace.meta.get("start_ns") and known_end else trace.span_ns()
    start = int(trace.meta.get("start_ns") or first or 0)
    end = int(known_end) if known_end else int(last or start)
    return Bounds(start, max(start, end))


def cpu_runs(trace: Trace, bounds: Bounds) -> pl.DataFrame:
    """Who ran on each CPU when: cpu, r_start, r_end, run_pid, run_tid, run_comm.

    Each switch starts a slice of the next task; the task switched out by a
    CPU's first switch is taken to have run since the trace began.
    """
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "pid", "tid", "comm", "next_pid", "next_tid", "next_comm")
    if sw.is_empty():
        return pl.DataFrame(schema={"cpu": pl.UInt32, "r_start": pl.Int64, "r_end": pl.Int64, "run_pid": pl.UInt32,
                                    "run_tid": pl.UInt32, "run_comm": pl.Utf8})
    sw = sw.sort("cpu", "ts_ns")
    slices = sw.select(
        "cpu",
        pl.col("ts_ns").cast(pl.Int64).alias("r_start"),
        pl.col("ts_ns").cast(pl.Int64).shift(-1).over("cpu").fill_null(bounds.end_ns).alias("r_end"),
        pl.col("next_pid").alias("run_pid"), pl.col("next_tid").alias("run_tid"), pl.col("next_comm").alias("run_comm"))
    first = sw.group_by("cpu").first().select(
        "cpu", pl.lit(bounds.start_ns, pl.Int64).alias("r_start"), pl.col("ts_ns").cast(pl.Int64).alias("r_end"),
        pl.col("pid").alias("run_pid"), pl.col("tid").alias("run_tid"), pl.col("comm").alias("run_comm"))
    return pl.concat([first, slices]).filter(pl.col("r_end") > pl.col("r_start")).sort("cpu", "r_start")


def thread_segments(trace: Trace, tids: list[int], bounds: Bounds) -> pl.DataFrame:
    """tid, cpu, state, s_start, s_end for every target thread, end to end."""
    sw = trace.scan(Event.SWITCH).select("ts_ns", "cpu", "tid", "next_tid", "prev_state", "voluntary")
    outs = sw.filter(pl.col("tid").is_in(tids)).select(
        "ts_ns", "tid", "cpu",
        pl.when((pl.col("prev_state") & TASK_DEAD) != 0).then(pl.lit("dead"))
        .when(pl.col("voluntary").is_null()).then(pl.lit("offcpu"))
        .when(pl.col("voluntary")).then(pl.lit("blocked")).otherwise(pl.lit("preempted")).alias("state"),
        pl.lit(Event.SWITCH.value).alias("kind"))
    ins = sw.filter(pl.col("next_tid").is_in(tids)).select(
        "ts_ns", pl.col("next_tid").alias("tid"), "cpu", pl.lit("running").alias("state"),
        pl.lit(Event.SWITCH.value).alias("kind"))
    wakes = pl.concat([trace.scan(kind) for kind in (Event.WAKEUP, Event.WAKEUP_NEW)]).filter(
        pl.col("tid").is_in(tids)).select(
        "ts_ns", "tid", pl.col("target_cpu").alias("cpu"), pl.lit(None, pl.Utf8).alias("state"),
        pl.lit(Event.WAKEUP.value).alias("kind"))
    moves = trace.scan(Event.MIGRATE).filter(pl.col("tid").is_in(tids)).select(
        "ts_ns", "tid", pl.col("dest_cpu").alias("cpu"), pl.lit(None, pl.Utf8).alias("state"),
        pl.lit(Event.MIGRATE.value).alias("kind"))
    rows = pl.concat([outs, ins, wakes, moves]).with_columns(pl.col("ts_ns").cast(pl.Int64)).collect()
    if rows.is_empty():
        return pl.DataFrame(schema={"tid": pl.UInt32, "cpu": pl.UInt32, "state": pl.Utf8, "s_start": pl.Int64,
                                    "s_end": pl.Int64})
    rows = rows.sort("tid", "ts_ns")
    switch_state = pl.when(pl.col("kind") == Event.SWITCH).then(pl.col("state"))
    rows = rows.with_columns(switch_state.forward_fill().shift(1).over("tid").alias("switched_before"))
    woken = (pl.when(pl.col("switched_before").is_null() | pl.col("switched_before").is_in(["blocked", "offcpu"]))
             .then(pl.lit("runqueue")).otherwise(pl.col("switched_before")))
    rows = rows.with_columns(pl.when(pl.col("kind") == Event.WAKEUP).then(woken).otherwise(pl.col("state")).alias("state"))
    rows = rows.with_columns(pl.col("state").forward_fill().over("tid"))
    # a thread's end: its death switch, else the end of the trace
    segments = rows.select(
        "tid", "cpu", pl.col("state").fill_null("unknown"), pl.col("ts_ns").alias("s_start"),
        pl.col("ts_ns").shift(-1).over("tid").fill_null(bounds.end_ns).alias("s_end"))
    segments = segments.filter(pl.col("state") != "dead")
    # before the first event: inferred from it
    first = rows.group_by("tid").first().select(
        "tid", "cpu",
        pl.when((pl.col("kind") == Event.SWITCH) & (pl.col("state") != "running")).then(pl.lit("running"))
        .when(pl.col("kind") == Event.WAKEUP).then(pl.lit("blocked"))
        .otherwise(pl.lit("unknown")).alias("state"),
        pl.lit(bounds.start_ns, pl.Int64).alias("s_start"), pl.col("ts_ns").alias("s_end"))
    born = trace.of(Event.FORK, "ts_ns", "child_tid").filter(pl.col("child_tid").is_in(tids)).select(
        pl.col("child_tid").alias("tid"), pl.col("ts_ns").cast(pl.Int64).alias("born_ns"))
    first = (first.join(born, on="tid", how="left")
             .with_columns(pl.max_horizontal("s_start", pl.col("born_ns").fill_null(bounds.start_ns)).alias("s_start"))
             .drop("born_ns"))
    out = pl.concat([first, segments]).filter(pl.col("s_end") > pl.col("s_start"))
    return out.with_columns(pl.col("tid").cast(pl.UInt32), pl.col("cpu").cast(pl.UInt32)).sort("tid", "s_start")
