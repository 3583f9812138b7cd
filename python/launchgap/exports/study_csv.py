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

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from launchgap.analysis.targets import target_pids, target_threads
from launchgap.trace import Event, Trace
from launchgap.trace.columns import columns_of
from launchgap.trace.schema import MetaKey
from launchgap.trace.study_csv import COLUMN_TYPES, COLUMNS

IRQ_EXIT = {Event.HARDIRQ: "hardirqExit", Event.IRQ_VECTOR: "hardirqExit", Event.SOFTIRQ: "softirqExit"}
EMPTY = {c: pl.lit(None) for c in COLUMNS}


def _shape(frame: pl.DataFrame, **exprs) -> pl.DataFrame:
    cols = {**EMPTY, **exprs}
    return frame.select(
        *[cols[c].alias(c) if not isinstance(cols[c], str) else pl.col(cols[c]).alias(c) for c in COLUMNS]
    ).cast(COLUMN_TYPES)


def _other_rows(trace: Trace, start: int, wanted: list[int], tids: list[int]) -> pl.DataFrame:
    """The rows besides the launches, in time order (held in memory: few beside a launch-bound trace's
    launches): the syncs of the processes WANTED (enter and exit), the switches and IRQ exits of their
    threads TIDS, timed from START."""

    def rows_of(kind: Event) -> pl.DataFrame:
        return trace.scan(kind).with_columns((pl.col("ts_ns").cast(pl.Int64) - start).alias("timestamp_ns")).collect()

    syncs = rows_of(Event.SYNC).filter(pl.col("pid").is_in(wanted))
    sync_enter = _shape(
        syncs,
        timestamp_ns="timestamp_ns",
        event_type=pl.lit("syncEnter"),
        pid="pid",
        tid="tid",
        cpu="cpu",
        stream="stream",
    )
    sync_exit = _shape(
        syncs,
        timestamp_ns=pl.col("timestamp_ns") + pl.col("duration_ns").cast(pl.Int64),
        event_type=pl.lit("syncExit"),
        pid="pid",
        tid="tid",
        cpu="cpu",
        stream="stream",
        duration_ns="duration_ns",
    )
    switches = rows_of(Event.SWITCH)
    outs = _shape(
        switches.filter(pl.col("tid").is_in(tids)),
        timestamp_ns="timestamp_ns",
        event_type=pl.lit("schedSwitch"),
        pid="pid",
        tid="tid",
        comm="comm",
        cpu="cpu",
        last_offcpu_ns="timestamp_ns",
    )
    ins = _shape(
        switches.filter(pl.col("next_tid").is_in(tids)),
        timestamp_ns="timestamp_ns",
        event_type=pl.lit("schedSwitch"),
        pid="next_pid",
        tid="next_tid",
        comm="next_comm",
        cpu="cpu",
        last_oncpu_ns="timestamp_ns",
    )
    del switches
    irq_rows = [
        _shape(
            rows_of(kind).filter(pl.col("tid").is_in(tids)),
            timestamp_ns=pl.col("timestamp_ns") + pl.col("duration_ns").cast(pl.Int64),
            event_type=pl.lit(exit_row),
            pid="pid",
            tid="tid",
            cpu="cpu",
            irq_num="irq",
            irq_name="irq_name",
            duration_ns="duration_ns",
        )
        for kind, exit_row in IRQ_EXIT.items()
    ]
    return pl.concat([sync_enter, sync_exit, outs, ins, *irq_rows]).sort("timestamp_ns", maintain_order=True)


def study_row_chunks(trace: Trace) -> Iterator[pl.DataFrame]:
    """The rows in time order, a chunk at a time: launches (most of a launch-bound trace) streamed a few
    segments at a time (Trace.in_time_order), each chunk merged with the other rows (syncs, switches,
    IRQs of the workload: held in memory) that fall in its stretch of time. The same rows, in the same
    order, as one stable sort by timestamp of launches, then sync enters, sync exits, switch-outs,
    switch-ins and IRQ exits."""
    start = int(trace.meta.get(MetaKey.START_NS) or 0)
    pids = target_pids(trace)
    wanted = list(pids)
    threads = target_threads(trace, pids)
    tids = threads["tid"].to_list()
    names = threads.select("tid", pl.col("comm").alias("thread_comm"))

    others = _other_rows(trace, start, wanted, tids)
    # few distinct streams: a pointer formatted in Python once each, then mapped
    streams: dict[int, str] = {}

    def finish(rows: pl.DataFrame) -> pl.DataFrame:
        # every row names its thread, as the study's did, by the name the workload gave it
        rows = rows.join(names, on="tid", how="left", maintain_order="left").with_columns(
            pl.coalesce("thread_comm", "comm").alias("comm")
        )
        for v in rows["stream"].drop_nulls().unique().to_list():
            streams.setdefault(int(v), f"0x{int(v):x}")
        rows = rows.with_columns(pl.col("stream").replace_strict(streams, default=None, return_dtype=pl.Utf8))
        return rows.select(COLUMNS)

    taken = 0
    for chunk in trace.in_time_order(Event.LAUNCH, *columns_of(Event.LAUNCH)):
        launches = chunk.filter(pl.col("pid").is_in(wanted)).with_columns(
            (pl.col("ts_ns").cast(pl.Int64) - start).alias("timestamp_ns")
        )
        if launches.is_empty():
            continue
        launch_rows = _shape(
            launches,
            timestamp_ns="timestamp_ns",
            event_type=pl.coalesce("runtime_api", "api"),
            pid="pid",
            tid="tid",
            comm=pl.lit(None, pl.Utf8),
            cpu="cpu",
            grid_x="grid_x",
            grid_y="grid_y",
            grid_z="grid_z",
            block_x="block_x",
            block_y="block_y",
            block_z="block_z",
            shared_mem="shared_mem",
            stream="stream",
        )
        # no later launch is earlier than this chunk's last: the other rows up to it go with it
        upto = int(others["timestamp_ns"].search_sorted(launch_rows["timestamp_ns"].max(), side="right"))
        merged = pl.concat([launch_rows, others.slice(taken, upto - taken)]) if upto > taken else launch_rows
        taken = max(taken, upto)
        yield finish(merged.sort("timestamp_ns", maintain_order=True))
    if taken < others.height:
        yield finish(others.slice(taken))


def study_rows(trace: Trace) -> pl.DataFrame:
    """Every row, in memory (small traces, tests)."""
    parts = list(study_row_chunks(trace))
    return pl.concat(parts) if parts else _shape(pl.DataFrame({"timestamp_ns": []}, schema={"timestamp_ns": pl.Int64}))


def write_study_csv(trace: Trace, out: Path | str) -> int:
    """Writes the CSV a chunk at a time; returns its rows."""
    rows = 0
    with open(out, "wb") as f:
        for chunk in study_row_chunks(trace):
            chunk.write_csv(f, include_header=rows == 0, quote_style="necessary")
            rows += chunk.height
        if rows == 0:
            pl.DataFrame(schema=COLUMN_TYPES).write_csv(f, quote_style="necessary")
    return rows
