"""The original study's 19-column CSV (cuda_sched_trace), for existing
scripts, written correctly: one row per logical launch (its most specific
recorded API name), pid = process id and tid = thread id, one schedSwitch
row per switch-out (last_offcpu_ns set) and per switch-in (last_oncpu_ns
set) of a workload thread, syncEnter/syncExit rows, and IRQ exit rows with
their duration for interrupts that hit a workload thread. Timestamps are
relative to the start of the trace, as the study's were; `stream` is hex
(`0x7efd90000c40`), as the study's tool printed it.

Where the tool's output was ambiguous, this differs on purpose, and that
is how launchgap tells its own export from the tool's file when reading one
back (trace/study_csv.py): a field a row does not use is empty, never `0`
(the tool wrote `0` in the unused one of last_offcpu_ns/last_oncpu_ns and in
both on launch rows); every row has all 19 fields; IRQs have their Exit row
only. Every row carries its thread's name as the workload knew it (its last
name in the trace): the first rows of a traced command otherwise carry the
recorder's name, which the command had until its exec."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from launchgap.analysis.targets import target_pids, target_threads
from launchgap.trace import Event, Trace

COLUMNS = ["timestamp_ns", "event_type", "pid", "tid", "comm", "cpu", "grid_x", "grid_y", "grid_z", "block_x",
           "block_y", "block_z", "shared_mem", "stream", "last_offcpu_ns", "last_oncpu_ns", "irq_num", "irq_name",
           "duration_ns"]
IRQ_EXIT = {Event.HARDIRQ: "hardirqExit", Event.IRQ_VECTOR: "hardirqExit", Event.SOFTIRQ: "softirqExit"}


def study_rows(trace: Trace) -> pl.DataFrame:
    start = int(trace.meta.get("start_ns") or 0)
    pids = target_pids(trace)
    threads = target_threads(trace, pids)
    tids = threads["tid"].to_list()
    names = threads.select("tid", pl.col("comm").alias("thread_comm"))
    def rows_of(kind: Event) -> pl.DataFrame:
        return trace.scan(kind).with_columns((pl.col("ts_ns").cast(pl.Int64) - start).alias("timestamp_ns")).collect()

    empty = {c: pl.lit(None) for c in COLUMNS}

    def shape(frame: pl.DataFrame, **exprs) -> pl.DataFrame:
        cols = {**empty, **exprs}
        return frame.select(*[cols[c].alias(c) if not isinstance(cols[c], str) else pl.col(cols[c]).alias(c)
                              for c in COLUMNS])

    launches = rows_of(Event.LAUNCH).filter(pl.col("pid").is_in(list(pids)))
    launch_rows = shape(launches, timestamp_ns="timestamp_ns", event_type=pl.coalesce("runtime_api", "api"),
                        pid="pid", tid="tid", comm=pl.lit(None, pl.Utf8), cpu="cpu", grid_x="grid_x",
                        grid_y="grid_y", grid_z="grid_z", block_x="block_x", block_y="block_y", block_z="block_z",
                        shared_mem="shared_mem", stream="stream")
    syncs = rows_of(Event.SYNC).filter(pl.col("pid").is_in(list(pids)))
    sync_enter = shape(syncs, timestamp_ns="timestamp_ns", event_type=pl.lit("syncEnter"), pid="pid", tid="tid",
                       cpu="cpu", stream="stream")
    sync_exit = shape(syncs, timestamp_ns=pl.col("timestamp_ns") + pl.col("duration_ns").cast(pl.Int64),
                      event_type=pl.lit("syncExit"), pid="pid", tid="tid", cpu="cpu", stream="stream",
                      duration_ns="duration_ns")
    switches = rows_of(Event.SWITCH)
    outs = shape(switches.filter(pl.col("tid").is_in(tids)), timestamp_ns="timestamp_ns",
                 event_type=pl.lit("schedSwitch"), pid="pid", tid="tid", comm="comm", cpu="cpu",
                 last_offcpu_ns="timestamp_ns")
    ins = shape(switches.filter(pl.col("next_tid").is_in(tids)), timestamp_ns="timestamp_ns",
                event_type=pl.lit("schedSwitch"), pid="next_pid", tid="next_tid", comm="next_comm", cpu="cpu",
                last_oncpu_ns="timestamp_ns")
    irq_rows = [shape(rows_of(kind).filter(pl.col("tid").is_in(tids)),
                      timestamp_ns=pl.col("timestamp_ns") + pl.col("duration_ns").cast(pl.Int64),
                      event_type=pl.lit(exit_row), pid="pid", tid="tid", cpu="cpu", irq_num="irq", irq_name="irq_name",
                      duration_ns="duration_ns") for kind, exit_row in IRQ_EXIT.items()]
    parts = [launch_rows, sync_enter, sync_exit, outs, ins, *irq_rows]
    casts = {"timestamp_ns": pl.Int64, "event_type": pl.Utf8, "pid": pl.UInt32, "tid": pl.UInt32, "comm": pl.Utf8,
             "cpu": pl.UInt32, "grid_x": pl.UInt32, "grid_y": pl.UInt32, "grid_z": pl.UInt32, "block_x": pl.UInt32,
             "block_y": pl.UInt32, "block_z": pl.UInt32, "shared_mem": pl.UInt32, "stream": pl.UInt64,
             "last_offcpu_ns": pl.Int64, "last_oncpu_ns": pl.Int64, "irq_num": pl.Int32, "irq_name": pl.Utf8,
             "duration_ns": pl.UInt64}
    rows = pl.concat([p.cast(casts) for p in parts])
    # every row names its thread, as the study's did, by the name the workload gave it
    rows = rows.join(names, on="tid", how="left").with_columns(pl.coalesce("thread_comm", "comm").alias("comm"))
    # few distinct streams: a pointer formatted in Python once each, then mapped
    streams = {int(v): f"0x{int(v):x}" for v in rows["stream"].drop_nulls().unique().to_list()}
    rows = rows.with_columns(pl.col("stream").replace_strict(streams, default=None, return_dtype=pl.Utf8))
    return rows.select(COLUMNS).sort("timestamp_ns", maintain_order=True)


def write_study_csv(trace: Trace, out: Path | str) -> int:
    rows = study_rows(trace)
    rows.write_csv(out, quote_style="necessary")
    return rows.height
