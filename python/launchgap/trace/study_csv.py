"""Reading the original study tool's CSV (gpu_ext's cuda_sched_trace) so its
users can re-analyse old data, and saying plainly what it cannot support.

The tool's known faults (shared/PRODUCT.md, "Lessons") and what we do:
- a runtime launch also fired the driver probe, so most launches appear
  twice: a cuLaunchKernel row right after a cudaLaunchKernel row of the same
  thread with the same geometry is merged into one launch;
- switches were looked up in a map keyed by process id, so only the main
  thread's switches were seen: other threads' off-CPU time is unknown;
- a switch was not marked preempted or blocked: off-CPU time stays
  unclassified ("offcpu"), never called preemption;
- IRQs were only seen while a GPU thread was current.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from launchgap.trace.reader import Trace

HEADER = ("timestamp_ns,event_type,pid,tid,comm,cpu,grid_x,grid_y,grid_z,block_x,block_y,block_z,shared_mem,stream,"
          "last_offcpu_ns,last_oncpu_ns,irq_num,irq_name,duration_ns")
GEOMETRY = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem"]


def looks_like_study_csv(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HEADER)).decode(errors="replace") == HEADER
    except OSError:
        return False


def read_study_csv(path: str | Path) -> Trace:
    text_columns = {"event_type", "comm", "irq_name"}
    types = {c: (pl.Utf8 if c in text_columns else pl.UInt64 if c == "stream" else pl.Int64)
             for c in HEADER.split(",")}
    raw = pl.read_csv(path, schema=types)
    raw = raw.with_columns(pl.col("timestamp_ns").cast(pl.Int64))
    launches = (raw.filter(pl.col("event_type").is_in(["cuLaunchKernel", "cudaLaunchKernel"]))
                .sort("tid", "timestamp_ns"))
    previous = [pl.col(c).shift(1).over("tid") for c in ["event_type", *GEOMETRY]]
    launches = launches.with_columns(
        ((pl.col("event_type") == "cuLaunchKernel") & (previous[0] == "cudaLaunchKernel")
         & pl.all_horizontal(*[pl.col(c).eq_missing(p) for c, p in zip(GEOMETRY, previous[1:])]))
        .alias("echo_of_runtime"))
    echoes = int(launches["echo_of_runtime"].sum())
    rows_before = launches.height
    # the runtime row stands for the launch; its driver echo is dropped
    launches = launches.filter(~pl.col("echo_of_runtime")).select(
        pl.col("timestamp_ns").alias("ts_ns"), pl.lit("launch").alias("event"), "cpu", "pid", "tid",
        pl.when(pl.col("event_type") == "cudaLaunchKernel").then(pl.lit("cuLaunchKernel"))
        .otherwise(pl.col("event_type")).alias("api"),
        pl.when(pl.col("event_type") == "cudaLaunchKernel").then(pl.lit("cudaLaunchKernel")).alias("runtime_api"),
        *GEOMETRY, "stream")

    enters = raw.filter(pl.col("event_type") == "syncEnter").sort("tid", "timestamp_ns")
    exits = raw.filter(pl.col("event_type") == "syncExit").sort("tid", "timestamp_ns")
    syncs = (enters.with_columns(pl.int_range(pl.len()).over("tid").alias("n"))
             .join(exits.with_columns(pl.int_range(pl.len()).over("tid").alias("n"))
                   .select("tid", "n", pl.col("timestamp_ns").alias("exit_ns")), on=["tid", "n"])
             .select(pl.col("timestamp_ns").alias("ts_ns"), pl.lit("sync").alias("event"), "cpu", "pid", "tid",
                     pl.lit("unknown").alias("api"), (pl.col("exit_ns") - pl.col("timestamp_ns")).alias("duration_ns")))

    switch_rows = raw.filter(pl.col("event_type") == "schedSwitch")
    # switched out (last_offcpu_ns set): voluntary unknown; switched in (last_oncpu_ns set): next_* is the thread
    outs = switch_rows.filter(pl.col("last_offcpu_ns").is_not_null()).select(
        pl.col("timestamp_ns").alias("ts_ns"), pl.lit("switch").alias("event"), "cpu", "pid", "tid", "comm",
        pl.lit(None, pl.Boolean).alias("voluntary"), pl.lit(0).alias("prev_state"),
        pl.lit(0).alias("next_pid"), pl.lit(0).alias("next_tid"), pl.lit("?").alias("next_comm"))
    ins = switch_rows.filter(pl.col("last_oncpu_ns").is_not_null()).select(
        pl.col("timestamp_ns").alias("ts_ns"), pl.lit("switch").alias("event"), "cpu", pl.lit(0).alias("pid"),
        pl.lit(0).alias("tid"), pl.lit("?").alias("comm"), pl.lit(False).alias("voluntary"),
        pl.lit(0).alias("prev_state"), pl.col("pid").alias("next_pid"), pl.col("tid").alias("next_tid"),
        pl.col("comm").alias("next_comm"))
    irq_rows = raw.filter(pl.col("event_type").is_in(["hardirqExit", "softirqExit"])).select(
        (pl.col("timestamp_ns") - pl.col("duration_ns")).alias("ts_ns"),
        pl.when(pl.col("event_type") == "hardirqExit").then(pl.lit("hardirq")).otherwise(pl.lit("softirq")).alias("event"),
        "cpu", "pid", "tid", pl.col("irq_num").alias("irq"), "irq_name", "duration_ns")

    from launchgap.trace.schema import COLUMNS

    frames = [launches, syncs, outs, ins, irq_rows]
    schema = {name: pl.from_arrow(__import__("pyarrow").array([], type=t)).dtype for name, t in COLUMNS}
    aligned = [f.with_columns(*[pl.lit(None).alias(c) for c in schema if c not in f.columns])
               .select([pl.col(c).cast(schema[c]) for c in schema]) for f in frames]
    events = pl.concat(aligned).sort("ts_ns").with_columns(pl.col("event").cast(pl.Categorical))
    threads_with_switches = switch_rows["tid"].n_unique()
    launching_threads = launches["tid"].n_unique()
    caveats = [
        f"launches: {rows_before:,} rows in the CSV, {echoes:,} of them a driver row echoing the runtime launch just "
        f"before it (the tool probed both); counted once each: {launches.height:,} launches",
        "preempted vs blocked: the tool did not record why a thread left the CPU, so off-CPU time is shown "
        "unclassified, never as preemption (a sync's block is not interference)",
        f"switches: the tool only saw the main thread's (a map keyed by process id); {threads_with_switches} "
        f"thread(s) have switches here, {launching_threads} launched kernels: other threads' off-CPU time is unknown",
        "IRQs: the tool saw interrupts only while a GPU thread was current; IRQs on its CPU while it waited are missing",
        "run-queue wait: no wakeups were recorded, so it cannot be measured",
    ]
    start = int(events["ts_ns"].min() or 0)
    end = int(events["ts_ns"].max() or 0)
    meta = {"format": "study-csv", "version": 0, "start_ns": start, "mode": "study-csv", "command": [str(path)],
            "pids": [], "host": {"hostname": "?", "kernel_release": "?"}, "topology": {},
            "caveats": caveats}
    return Trace(Path(path), meta, events, truncated=False, end_ns=end)
