"""Which threads are the workload: the traced command or processes and
everything they forked, from the trace's own fork events."""

from __future__ import annotations

import polars as pl

from launchgap.trace import Event, Trace
from launchgap.trace.model import collect_streamed
from launchgap.trace.schema import HOST_KINDS, MetaKey

# kinds whose `comm` is the thread's own name (a fork's is the child's)
NAMED_BY = (Event.SWITCH, Event.EXEC, Event.COMM, Event.WAKEUP, Event.WAKEUP_NEW, Event.LAUNCH, Event.SYNC)


def target_pids(trace: Trace) -> set[int]:
    """The command's (or the -p) processes, closed over forks recorded in the trace."""
    meta = trace.meta
    roots = set(meta.get(MetaKey.PIDS) or [])
    if meta.get(MetaKey.COMMAND_PID):
        roots.add(int(meta[MetaKey.COMMAND_PID]))
    if not roots:
        # --system alone: the workload is whatever used CUDA, if anything did
        cuda = pl.concat([trace.scan(kind).select("pid") for kind in (Event.LAUNCH, Event.SYNC)])
        return set(collect_streamed(cuda.unique())["pid"].to_list())
    forks = trace.of(Event.FORK, "pid", "child_pid").unique()
    pids = set(roots)
    while True:
        grown = pids | set(forks.filter(pl.col("pid").is_in(list(pids)))["child_pid"].to_list())
        if grown == pids:
            return pids
        pids = grown


def target_threads(trace: Trace, pids: set[int] | None = None) -> pl.DataFrame:
    """One row per target thread: pid, tid, its last name, when it was first and last seen."""
    pids = target_pids(trace) if pids is None else pids
    wanted = list(pids)
    # when each thread was seen: a numeric pass over every event of the targets
    # (streamed: on a launch-bound trace this is every launch)
    seen = collect_streamed(
        pl.concat([trace.scan(kind).select("pid", "tid", "ts_ns") for kind in HOST_KINDS])
        .filter(pl.col("pid").is_in(wanted))
        .group_by("pid", "tid")
        .agg(pl.col("ts_ns").min().alias("first_ns"), pl.col("ts_ns").max().alias("last_ns"))
    ).lazy()
    switched_in = (
        trace.scan(Event.SWITCH)
        .filter(pl.col("next_pid").is_in(wanted))
        .group_by(pl.col("next_pid").alias("pid"), pl.col("next_tid").alias("tid"))
        .agg(pl.col("ts_ns").min().alias("first_ns"), pl.col("ts_ns").max().alias("last_ns"))
    )
    # names only from the few kinds that carry the thread's own (recorded launches and syncs carry
    # none; the study's CSV names the thread on every row, and many threads there have no other row)
    named = (
        pl.concat([trace.scan(kind).select("pid", "tid", "ts_ns", "comm") for kind in NAMED_BY])
        .filter(pl.col("pid").is_in(wanted) & pl.col("comm").is_not_null())
        .group_by("pid", "tid")
        .agg(pl.col("comm").sort_by("ts_ns").last())
    )
    both = pl.concat([seen, switched_in]).group_by("pid", "tid").agg(pl.col("first_ns").min(), pl.col("last_ns").max())
    return (
        both.join(named, on=["pid", "tid"], how="left")
        .filter(pl.col("tid") != 0)
        .select("pid", "tid", "comm", "first_ns", "last_ns")
        .sort("pid", "tid")
        .collect()
    )
