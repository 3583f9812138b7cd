"""Time taken from the workload, by cause, with the culprits: who ran while a
target thread waited, and which interrupts ran on its CPU while it ran."""

from __future__ import annotations

import numpy as np
import polars as pl

from launchgap.analysis.interval_tables import RUNS, SEGMENTS
from launchgap.trace.checks import Bounds
from launchgap.trace.schema import WAITING_STATES, ThreadState

# the states of a thread waiting for a CPU another task holds (whoever ran is the culprit)
WAITING = WAITING_STATES
# culprit name codes for the idle task and a task with no name (categorical codes are never negative)
IDLE_NAME, NO_NAME = -1, -2


def _is_waiting(state: pl.Expr) -> pl.Expr:
    # two comparisons of short strings (held inline) cost less than a hashed set lookup a row
    return (state == WAITING[0]) | (state == WAITING[1])


# each state's column in state_time, and its type
STATE_TIME_SCHEMA = {
    "tid": pl.UInt32,
    "running_ns": pl.Int64,
    "preempted_ns": pl.Int64,
    "runqueue_ns": pl.Int64,
    "blocked_ns": pl.Int64,
    "offcpu_ns": pl.Int64,
    "unknown_ns": pl.Int64,
    "lifetime_ns": pl.Int64,
}


def state_time(segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: ns in each state (running_ns, preempted_ns, runqueue_ns, blocked_ns, offcpu_ns, unknown_ns)
    and lifetime_ns."""
    if segments.is_empty():
        return pl.DataFrame(schema=STATE_TIME_SCHEMA)
    base = segments.with_columns((pl.col("segment_end") - pl.col("segment_start")).alias("ns"))
    # summed first: the pivot then has a row a thread and state, not a segment
    wide = (
        base.group_by("tid", "state")
        .agg(pl.col("ns").sum())
        .pivot(on="state", index="tid", values="ns", aggregate_function="sum")
    )
    column_of = {
        ThreadState.RUNNING: "running_ns",
        ThreadState.PREEMPTED: "preempted_ns",
        ThreadState.RUNQUEUE: "runqueue_ns",
        ThreadState.BLOCKED: "blocked_ns",
        ThreadState.OFFCPU: "offcpu_ns",
        ThreadState.UNKNOWN: "unknown_ns",
    }
    for state in column_of:
        if state not in wide.columns:
            wide = wide.with_columns(pl.lit(0, pl.Int64).alias(state))
    wide = wide.select("tid", *column_of).rename(column_of)
    lifetime = base.group_by("tid").agg(
        (pl.col("segment_end").max() - pl.col("segment_start").min()).alias("lifetime_ns")
    )
    return wide.fill_null(0).join(lifetime, on="tid")


def _overlap_indices(
    queries: pl.DataFrame, runs: pl.DataFrame, key: str, query: tuple[str, str], run: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query row, run row, overlap ns) of every pair that overlaps by more than nothing.

    queries: key and QUERY's (start, end) columns; runs: key and RUN's (start, end) columns, sorted by
    (key, start) and disjoint per key. The runs a query overlaps are one index range of its key's runs:
    binary search finds its ends (the last run starting at or before the query's start, the last starting
    before its end), and only those pairs are made. Cost: n log n plus the number of overlaps."""
    if queries.is_empty() or runs.is_empty():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    q_key, q_start, q_end = (queries[c].to_numpy() for c in (key, *query))
    r_key, r_start = runs[key].to_numpy(), runs[run[0]].to_numpy()
    # the queries by key (a stable radix sort for small keys such as CPUs), so each key's are one slice
    by_key = np.argsort(q_key.astype(np.uint16) if q_key.size and q_key.max() < 1 << 16 else q_key, kind="stable")
    sorted_keys = q_key[by_key]
    key_starts = np.flatnonzero(np.append(True, sorted_keys[1:] != sorted_keys[:-1]))
    keys = sorted_keys[key_starts]
    lo = np.empty(q_key.size, np.int64)
    hi = np.empty(q_key.size, np.int64)
    for value, a, b in zip(keys, key_starts, np.append(key_starts[1:], q_key.size)):
        mine = by_key[a:b]
        first, last = np.searchsorted(r_key, value, "left"), np.searchsorted(r_key, value, "right")
        starts = r_start[first:last]
        lo[mine] = first + np.maximum(np.searchsorted(starts, q_start[mine], "right") - 1, 0)
        hi[mine] = first + np.searchsorted(starts, q_end[mine], "left") - 1
    counts = np.maximum(hi - lo + 1, 0)
    query_rows = np.repeat(np.arange(q_key.size), counts)
    run_rows = lo[query_rows] + np.arange(query_rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    r_end = runs[run[1]].to_numpy()
    overlap = np.minimum(q_end[query_rows], r_end[run_rows]) - np.maximum(q_start[query_rows], r_start[run_rows])
    kept = overlap > 0
    return query_rows[kept], run_rows[kept], overlap[kept]


def _sorted_by(frame: pl.DataFrame, key: str, start: str) -> pl.DataFrame:
    """FRAME sorted by (KEY, START): as it is already when it comes from cpu_runs (checked, not assumed)."""
    k, s = frame[key].to_numpy(), frame[start].to_numpy()
    # compared, not differenced: no unsigned wrap-around, no wider copy
    if np.all((k[1:] > k[:-1]) | ((k[1:] == k[:-1]) & (s[1:] >= s[:-1]))):
        return frame
    return frame.sort(key, start)


def taken_where_unknown(segments: pl.DataFrame, breaks: pl.DataFrame) -> pl.DataFrame:
    """tid, cpu, ns: the part of each thread's waits (preempted, run queue) on a CPU that lies where that
    CPU's switches do not chain (timeline.switch_chain_breaks): who ran there is unknown, so the wait may
    not have been one."""
    waiting = segments.filter(_is_waiting(pl.col("state"))).select("tid", "cpu", *SEGMENTS.bounds).drop_nulls("cpu")
    unknown = _sorted_by(breaks.select("cpu", "start_ns", "end_ns"), "cpu", "start_ns")
    query_rows, _, overlap = _overlap_indices(waiting, unknown, "cpu", SEGMENTS.bounds, ("start_ns", "end_ns"))
    pairs = waiting.select("tid", "cpu")[query_rows].with_columns(pl.Series("ns", overlap.astype(np.int64)))
    return pairs.group_by("tid", "cpu").agg(pl.col("ns").sum()).sort("tid", "cpu")


def culprits(segments: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Who ran on a waiting thread's CPU while it waited: tid, cause, run_pid, run_comm, ns, and where RUNS
    carry it (analysis/cgroups.py) run_cgroup: a task that changed cgroups has a row for each."""
    by_cgroup = ["run_cgroup"] if "run_cgroup" in runs.columns else []
    waiting = (
        segments.filter(_is_waiting(pl.col("state")))
        .select("tid", "cpu", pl.col("state").alias("cause"), *SEGMENTS.bounds)
        .drop_nulls("cpu")
    )  # a wait on no known CPU (an imported trace's) overlaps nothing
    # the runs of CPUs no thread waited on are never looked at: the search is per CPU
    runs = _sorted_by(runs.drop_nulls("cpu"), "cpu", RUNS.start)
    query_rows, run_rows, overlap = _overlap_indices(waiting, runs, "cpu", SEGMENTS.bounds, RUNS.bounds)
    if overlap.size == 0:
        return pl.DataFrame(
            schema={
                "tid": pl.UInt32,
                "cause": pl.Utf8,
                "run_pid": pl.UInt32,
                "run_comm": pl.Utf8,
                "ns": pl.Int64,
                **{c: pl.Int32 for c in by_cgroup},
            }
        )
    # grouped on numbers (a code for each name), the names put back on the groups only: a string a pair
    # costs a gather and a hash each
    name_code = runs["run_comm"].cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(NO_NAME)
    # the idle task has one name per CPU (swapper/N); as a culprit it is one thing
    name_code = pl.when(runs["run_pid"] == 0).then(pl.lit(IDLE_NAME, pl.Int64)).otherwise(name_code)
    # the cause as a flag, not a string a pair (WAITING has two)
    queued = (pl.col("cause") == WAITING[1]).alias("queued")
    pairs = pl.concat(
        [
            waiting.select("tid", queued)[query_rows],
            runs.select("run_pid", "run_tid", name_code.alias("name"), *by_cgroup).with_row_index("run_row")[run_rows],
            pl.DataFrame({"overlap_ns": overlap.astype(np.int64)}),
        ],
        how="horizontal",
    )
    groups = (
        pairs.filter(pl.col("run_tid") != pl.col("tid"))
        .group_by("tid", "queued", "run_pid", "name", *by_cgroup)
        .agg(pl.col("overlap_ns").sum().alias("ns"), pl.col("run_row").first())
    )
    names = runs["run_comm"].gather(groups["run_row"])
    return (
        groups.with_columns(
            pl.when(pl.col("queued")).then(pl.lit(WAITING[1])).otherwise(pl.lit(WAITING[0])).alias("cause"),
            pl.when(pl.col("run_pid") == 0).then(pl.lit("swapper")).otherwise(names).alias("run_comm"),
        )
        .select("tid", "cause", "run_pid", "run_comm", "ns", *by_cgroup)
        # equal times in a fixed order, whatever order the rows came in
        .sort(
            ["ns", "tid", "cause", "run_pid", "run_comm", *by_cgroup],
            descending=[True, False, False, False, False, *[False for _ in by_cgroup]],
        )
    )


def irq_time(irqs: pl.DataFrame, tids: list[int]) -> pl.DataFrame:
    """Interrupt time that interrupted each target thread while it ran: tid, kind, name, count, ns."""
    return (
        irqs.filter(pl.col("tid").is_in(tids))
        .group_by("tid", "kind", "name")
        .agg(pl.len().alias("count"), pl.col("exclusive_ns").sum().alias("ns"))
        .sort(["ns", "tid", "kind", "name"], descending=[True, False, False, False])
    )


def migration_time(trace_migrations: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: migrations, and the runnable time of the waits that contained one.

    A wait is a run of consecutive runnable segments (preempted / runqueue)
    ended by running; a migration while runnable splits it into segments.
    SEGMENTS are sorted by (tid, segment_start), as thread_segments returns them.
    """
    moves = trace_migrations.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("m_ts"))
    counts = moves.group_by("tid").agg(pl.len().alias("migrations"))
    if segments.is_empty() or moves.is_empty():
        return counts.with_columns(pl.lit(0, pl.Int64).alias("runnable_around_ns"))
    segments = _sorted_by(segments, "tid", "segment_start")
    tid = segments["tid"].to_numpy()
    waiting = segments.select(_is_waiting(pl.col("state")))["state"].to_numpy()
    changed = np.ones(tid.size, bool)
    changed[1:] = (tid[1:] != tid[:-1]) | (waiting[1:] != waiting[:-1])
    # a wait: consecutive waiting segments of one thread. A thread's segments are disjoint and in time
    # order, so its waits are too: a migration lies in at most one, the last starting at or before it
    starts = np.flatnonzero(changed)
    # the runs that wait: their first segment, and their last (the one before the next run's first)
    waits = np.flatnonzero(waiting[starts])
    first = starts[waits]
    last = np.append(starts[1:], tid.size)[waits] - 1
    if first.size == 0:
        return counts.with_columns(pl.lit(0, pl.Int64).alias("runnable_around_ns"))
    e_tid, e_start = tid[first], segments["segment_start"].to_numpy()[first]
    e_end = segments["segment_end"].to_numpy()[last]
    m_tid, m_ts = moves["tid"].to_numpy(), moves["m_ts"].to_numpy()
    wait_of_move = np.full(m_ts.size, -1, np.int64)
    for thread in np.unique(m_tid):
        lo, hi = np.searchsorted(e_tid, thread, "left"), np.searchsorted(e_tid, thread, "right")
        mine = m_tid == thread
        found = lo + np.searchsorted(e_start[lo:hi], m_ts[mine], "right") - 1
        inside = (found >= lo) & (m_ts[mine] <= e_end[np.maximum(found, 0)])
        wait_of_move[mine] = np.where(inside, found, -1)
    hit = np.unique(wait_of_move[wait_of_move >= 0])
    around = (
        pl.DataFrame(
            {
                "tid": pl.Series(e_tid[hit], dtype=segments["tid"].dtype),
                "runnable_around_ns": (e_end[hit] - e_start[hit]).astype(np.int64),
            }
        )
        .group_by("tid")
        .agg(pl.col("runnable_around_ns").sum())
    )
    return counts.join(around, on="tid", how="left").fill_null(0)


def percent(ns: int | float, bounds_or_ns: Bounds | int | float) -> float:
    denominator = bounds_or_ns.end_ns - bounds_or_ns.start_ns if isinstance(bounds_or_ns, Bounds) else bounds_or_ns
    return 100.0 * ns / denominator if denominator else 0.0
