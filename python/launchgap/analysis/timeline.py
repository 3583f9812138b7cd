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

import functools

import numpy as np
import polars as pl

from launchgap.analysis import taken
from launchgap.analysis.interval_tables import RUNS, SEGMENTS, THREAD_STATE
from launchgap.analysis.records import InconsistentCpu
from launchgap.trace import Event, Trace
from launchgap.trace.checks import Bounds, topology_cpus
from launchgap.trace.schema import TASK_DEAD, THREAD_STATES, MetaKey, ThreadState


def trace_bounds(trace: Trace) -> Bounds:
    """The span the analysis measures over: from the recorder's start (else the first row) to its closing
    row's end (else the last row); both ends known."""
    end_row = trace.end
    known_end = end_row.get("end_ns") if end_row else None
    first, last = (None, None) if trace.meta.get(MetaKey.START_NS) and known_end else trace.span_ns()
    start = int(trace.meta.get(MetaKey.START_NS) or first or 0)
    end = int(known_end) if known_end else int(last or start)
    return Bounds(start, max(start, end), topology_cpus(trace.meta))


def grouped_time_order(group: np.ndarray, ts: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
    """The row order by (GROUP, TS), equal pairs kept in their given order (as np.lexsort gives it).
    Two stable sorts, by time (often nothing to do: switches are usually written in time order) and
    then by group, a radix sort when the groups fit 16 bits (CPUs; threads ranked in KNOWN, sorted)."""
    if known is not None and known.size < 1 << 16:
        # a byte a rank where they fit: the radix sort then takes one pass, not two
        rank_type = np.uint8 if known.size < 1 << 8 else np.uint16
        highest = int(group.max()) if group.size else 0
        if highest < group.size:
            # each id's rank looked up in a table of every id up to the highest (task ids are small): one
            # gather, not a binary search a row
            group = np.searchsorted(known, np.arange(highest + 1)).astype(rank_type)[group]
        else:
            group = np.searchsorted(known, group).astype(rank_type)
    elif group.size and group.max() < 1 << 16:
        group = group.astype(np.uint16)
    if ts.size < 2 or np.all(ts[1:] >= ts[:-1]):
        return np.argsort(group, kind="stable")
    by_time = np.argsort(ts, kind="stable")
    return by_time[np.argsort(group[by_time], kind="stable")]


RUN_COLUMNS = ("ts_ns", "cpu", "pid", "tid", "comm", "next_pid", "next_tid", "next_comm")


def cpu_runs(trace: Trace, bounds: Bounds, switches: pl.DataFrame | None = None) -> pl.DataFrame:
    """Who ran on each CPU when: cpu, run_start, run_end, run_pid, run_tid, run_comm (interval_tables.RUNS).

    Each switch starts a slice of the next task; the task switched out by a
    CPU's first switch is taken to have run since the trace began.
    SWITCHES (RUN_COLUMNS, in the trace's order): the switches to read, if not every one.
    """
    sw = trace.of(Event.SWITCH, *RUN_COLUMNS) if switches is None else switches
    if sw.is_empty():
        return RUNS.empty()
    ts, cpu = sw["ts_ns"].cast(pl.Int64).to_numpy(), sw["cpu"].to_numpy()
    order = grouped_time_order(cpu, ts)
    ts, cpu = ts[order], cpu[order]
    first_of_cpu = np.ones(ts.size, bool)
    first_of_cpu[1:] = cpu[1:] != cpu[:-1]
    # a slice ends at the CPU's next switch; its last at the end of the trace
    ends = np.empty(ts.size, np.int64)
    ends[:-1] = ts[1:]
    ends[np.append(first_of_cpu[1:], True)] = bounds.end_ns
    # each CPU's first slice (from the trace's start, of the task its first switch switched out) goes
    # before its others, as the sort by (cpu, run_start) puts it
    firsts = np.flatnonzero(first_of_cpu)
    at = firsts
    starts = np.insert(ts, at, bounds.start_ns)
    ends = np.insert(ends, at, ts[firsts])
    # each slice's task as a row of the switches: the next task of its switch, or for a CPU's first
    # slice the previous task of its first switch (rows n.. of the previous-task columns below)
    switch_row = np.insert(order, at, order[firsts] + ts.size)
    kept = np.flatnonzero(ends > starts)
    switch_row = switch_row[kept]

    def task(prev: str, nxt: str) -> pl.Series:
        return pl.concat([sw[nxt], sw[prev]]).gather(switch_row)

    return pl.DataFrame(
        {"cpu": np.insert(cpu, at, cpu[firsts])[kept], "run_start": starts[kept], "run_end": ends[kept]},
        schema={"cpu": sw["cpu"].dtype, "run_start": pl.Int64, "run_end": pl.Int64},
    ).with_columns(
        task("pid", "next_pid").alias("run_pid"),
        task("tid", "next_tid").alias("run_tid"),
        task("comm", "next_comm").alias("run_comm"),
    )


BREAK_SCHEMA = {
    "cpu": pl.UInt32,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "in_tid": pl.UInt32,
    "in_comm": pl.Utf8,
    "out_tid": pl.UInt32,
}


def switch_chain_breaks(trace: Trace, switches: pl.DataFrame | None = None) -> pl.DataFrame:
    """Where a CPU's switches do not chain: cpu, start_ns, end_ns, in_tid, in_comm, out_tid for each switch
    (at end_ns) whose task switched out (out_tid) is not the one the CPU's previous switch (at start_ns)
    switched in (in_tid). A switch-out of in_tid or a switch-in of out_tid there was never recorded, so who
    ran on the CPU from start_ns to end_ns is not known: cpu_runs gives it all to in_tid. This is how a task
    switched in twice with no switch-out between, and a run seen with no switch-in, show; a .dat whose
    kernel wrote none of the idle task's switch-outs breaks at every wake-up of an idle CPU (in_tid 0).
    Only a trace that records every switch chains (a target-mode trace holds a CPU's switches only where
    they involve a target). SWITCHES (RUN_COLUMNS, in the trace's order): the switches to read, if not
    every one (those of a window and each CPU's last before and first after it give the window's breaks)."""
    sw = trace.of(Event.SWITCH, *RUN_COLUMNS) if switches is None else switches
    if sw.height < 2:
        return pl.DataFrame(schema=BREAK_SCHEMA)
    ts, cpu = sw["ts_ns"].cast(pl.Int64).to_numpy(), sw["cpu"].to_numpy()
    order = grouped_time_order(cpu, ts)
    ts, cpu = ts[order], cpu[order]
    out_tid, in_tid = sw["tid"].to_numpy()[order], sw["next_tid"].to_numpy()[order]
    # a switch (row i + 1) against the CPU's previous one (row i)
    broken = np.flatnonzero((cpu[1:] == cpu[:-1]) & (out_tid[1:] != in_tid[:-1]))
    return pl.DataFrame(
        {
            "cpu": cpu[broken + 1],
            "start_ns": ts[broken],
            "end_ns": ts[broken + 1],
            "in_tid": in_tid[broken],
            "in_comm": sw["next_comm"].gather(order[broken]),
            "out_tid": out_tid[broken + 1],
        },
        schema=BREAK_SCHEMA,
    )


def inconsistent_cpus(
    trace: Trace, breaks: pl.DataFrame, segments: pl.DataFrame
) -> tuple[list[InconsistentCpu], dict[int, int]]:
    """The CPUs whose switches do not chain (BREAKS: switch_chain_breaks), and per target thread the part of
    its waits (SEGMENTS) that lies where they do not."""
    if breaks.is_empty():
        return [], {}
    where_unknown = (
        taken.taken_where_unknown(segments, breaks)
        if not segments.is_empty()
        else pl.DataFrame(schema={"tid": pl.UInt32, "cpu": pl.UInt32, "ns": pl.Int64})
    )
    per_cpu = (
        breaks.group_by("cpu")
        .agg(
            pl.len().alias("unmatched"),
            (pl.col("in_tid") == 0).sum().alias("after_idle"),
            (pl.col("end_ns") - pl.col("start_ns")).sum().alias("unknown_ns"),
        )
        .join(trace.of(Event.SWITCH, "cpu").group_by("cpu").len("switches"), on="cpu", how="left")
        .join(where_unknown.group_by("cpu").agg(pl.col("ns").sum().alias("taken_ns")), on="cpu", how="left")
        .fill_null(0)
        .sort("cpu")
    )
    cpus = [
        InconsistentCpu(
            cpu=r["cpu"],
            switches=r["switches"],
            unmatched=r["unmatched"],
            after_idle=r["after_idle"],
            unknown_ns=r["unknown_ns"],
            taken_ns=r["taken_ns"],
        )
        for r in per_cpu.iter_rows(named=True)
    ]
    by_tid = dict(where_unknown.group_by("tid").agg(pl.col("ns").sum()).iter_rows())
    return cpus, by_tid


# thread states (schema/trace.toml), numbered while the segments are built (a string a row costs sorts and
# fills dearly): each by its position in the schema's order
STATES = THREAD_STATES
RUNNING, PREEMPTED, RUNQUEUE, BLOCKED, OFFCPU, UNKNOWN, DEAD = (
    STATES.index(state)
    for state in (
        ThreadState.RUNNING,
        ThreadState.PREEMPTED,
        ThreadState.RUNQUEUE,
        ThreadState.BLOCKED,
        ThreadState.OFFCPU,
        ThreadState.UNKNOWN,
        ThreadState.DEAD,
    )
)
NO_STATE = -1
SWITCHED, WOKEN, MIGRATED = range(3)
# the segments' state column: an Enum, a byte a row held and compared, where a string is 16 bytes and a
# string comparison; it reads, filters, groups and prints as the state's name
STATE = THREAD_STATE
STATE_NAMES = pl.Series("state", STATES, STATE)


def _last_of_thread(mask: np.ndarray, rows: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """For each of ROWS (ascending indices into rows sorted by thread, then time), the index of the last row
    before it, of the same thread, where MASK, else -1. A binary search of the MASK rows, in ROWS' order (so
    it walks them forward): no running count over every row, which cost as much for the 62 migrations of a
    storm as for its million wakeups."""
    where = np.flatnonzero(mask)
    if where.size == 0 or rows.size == 0:
        return np.full(rows.size, -1, np.int64)
    before = np.searchsorted(where, rows, "left") - 1
    found = where[np.maximum(before, 0)]
    return np.where((before >= 0) & (tid[found] == tid[rows]), found, -1)


def _with_firsts(values: np.ndarray, kept: np.ndarray, at: np.ndarray, firsts: np.ndarray) -> np.ndarray:
    """VALUES[KEPT] with FIRSTS[i] put before position AT[i] (AT ascending, one a thread): each row gathered
    straight to its place, where np.insert would gather, then copy again through a mask."""
    out = np.empty(kept.size + at.size, values.dtype)
    firsts = firsts.astype(values.dtype, copy=False)  # np.take writes only its own type into OUT
    done = 0
    for i, place in enumerate(at.tolist()):
        np.take(values, kept[done:place], out=out[done + i : place + i])
        out[place + i] = firsts[i]
        done = place
    np.take(values, kept[done:], out=out[done + at.size :])
    return out


def _state_events(trace: Trace, tids: list[int]) -> pl.DataFrame:
    """The rows that change the threads TIDS' states (ts_ns, tid, cpu, state, kind): their switches out and
    in, their wakeups and their migrations, in that order at equal times."""
    sw = trace.scan(Event.SWITCH).select("ts_ns", "cpu", "tid", "next_tid", "prev_state", "voluntary")
    code = functools.partial(pl.lit, dtype=pl.Int8)
    outs = sw.filter(pl.col("tid").is_in(tids)).select(
        "ts_ns",
        "tid",
        "cpu",
        pl.when((pl.col("prev_state") & TASK_DEAD) != 0)
        .then(code(DEAD))
        .when(pl.col("voluntary").is_null())
        .then(code(OFFCPU))
        .when(pl.col("voluntary"))
        .then(code(BLOCKED))
        .otherwise(code(PREEMPTED))
        .alias("state"),
        code(SWITCHED).alias("kind"),
    )
    ins = sw.filter(pl.col("next_tid").is_in(tids)).select(
        "ts_ns", pl.col("next_tid").alias("tid"), "cpu", code(RUNNING).alias("state"), code(SWITCHED).alias("kind")
    )
    wakes = (
        pl.concat([trace.scan(kind) for kind in (Event.WAKEUP, Event.WAKEUP_NEW)])
        .filter(pl.col("tid").is_in(tids))
        .select(
            "ts_ns", "tid", pl.col("target_cpu").alias("cpu"), code(NO_STATE).alias("state"), code(WOKEN).alias("kind")
        )
    )
    moves = (
        trace.scan(Event.MIGRATE)
        .filter(pl.col("tid").is_in(tids))
        .select(
            "ts_ns", "tid", pl.col("dest_cpu").alias("cpu"), code(NO_STATE).alias("state"), code(MIGRATED).alias("kind")
        )
    )
    return pl.concat([outs, ins, wakes, moves]).with_columns(pl.col("ts_ns").cast(pl.Int64)).collect()


def _first_segments(
    trace: Trace,
    tids: list[int],
    bounds: Bounds,
    tid: np.ndarray,
    ts: np.ndarray,
    kind: np.ndarray,
    state: np.ndarray,
    new_thread: np.ndarray,
) -> pl.DataFrame:
    """Each thread's segment before its first event (rows sorted by thread, then time; NEW_THREAD marks each
    thread's first row), inferred from that event, from the trace's start or the thread's birth: tid, first_row,
    state, segment_start, segment_end, by thread."""
    # before the first event: inferred from it
    firsts = np.flatnonzero(new_thread)
    first_kind, first_state = kind[firsts], state[firsts]
    inferred = np.where(
        (first_kind == SWITCHED) & (first_state != RUNNING), RUNNING, np.where(first_kind == WOKEN, BLOCKED, UNKNOWN)
    ).astype(np.int8)
    # first_row: the thread's first row in the sorted arrays, where its first segment's CPU is read
    first = pl.DataFrame(
        {
            "tid": tid[firsts],
            "first_row": firsts.astype(np.int64),
            "state": inferred,
            "segment_start": np.full(firsts.size, bounds.start_ns, np.int64),
            "segment_end": ts[firsts],
        }
    )
    born = (
        trace.of(Event.FORK, "ts_ns", "child_tid")
        .filter(pl.col("child_tid").is_in(tids))
        .select(pl.col("child_tid").cast(pl.UInt32).alias("tid"), pl.col("ts_ns").cast(pl.Int64).alias("born_ns"))
    )
    first = (
        first.join(born, on="tid", how="left")
        .with_columns(
            pl.max_horizontal("segment_start", pl.col("born_ns").fill_null(bounds.start_ns)).alias("segment_start")
        )
        .drop("born_ns")
        .filter(pl.col("segment_end") > pl.col("segment_start"))
        .sort("tid", "segment_start")
    )
    return first


def thread_segments(trace: Trace, tids: list[int], bounds: Bounds) -> pl.DataFrame:
    """tid, cpu, state, segment_start, segment_end for every target thread, end to end (interval_tables.SEGMENTS)."""
    rows = _state_events(trace, tids)
    if rows.is_empty():
        return SEGMENTS.empty()
    # by thread, then time; a stable sort keeps equal times in the order above (out, in, wakeup, migrate)
    ts, tid = rows["ts_ns"].to_numpy(), rows["tid"].cast(pl.UInt32).to_numpy()
    order = grouped_time_order(tid, ts, np.unique(np.asarray(tids, np.int64)))
    ts, tid = ts[order], tid[order]
    state, kind = rows["state"].to_numpy()[order], rows["kind"].to_numpy()[order]
    cpu = rows["cpu"].cast(pl.UInt32)
    # nulls (an imported trace's unknown CPUs) only survive polars' gather, at the end; else numpy's, now,
    # several times faster, and the rows can go: what is held at once is what bounds the peak
    cpu = cpu if cpu.has_nulls() else cpu.to_numpy()[order]
    del rows
    new_thread = np.ones(ts.size, bool)
    new_thread[1:] = tid[1:] != tid[:-1]
    # a wakeup makes a thread that its last switch before it left blocked (or that has no switch before
    # it) runnable; any other stays in the state that switch left it in
    woken = np.flatnonzero(kind == WOKEN)
    last_switch = _last_of_thread(kind == SWITCHED, woken, tid)
    before = np.where(last_switch >= 0, state[np.maximum(last_switch, 0)], NO_STATE)
    state[woken] = np.where((before == NO_STATE) | (before == BLOCKED) | (before == OFFCPU), RUNQUEUE, before)
    del woken, last_switch, before
    # a migration keeps the state the thread was in (only migrations are left without one)
    moved = np.flatnonzero(state == NO_STATE)
    if moved.size:
        last_state = _last_of_thread(state != NO_STATE, moved, tid)
        state[moved] = np.where(last_state >= 0, state[np.maximum(last_state, 0)], UNKNOWN)
    ends = np.empty(ts.size, np.int64)
    ends[:-1] = ts[1:]
    ends[np.append(new_thread[1:], True)] = bounds.end_ns
    # a thread's end: its death switch, else the end of the trace
    kept = np.flatnonzero((state != DEAD) & (ends > ts))
    first = _first_segments(trace, tids, bounds, tid, ts, kind, state, new_thread)
    # a thread's segments are in time order, and its inferred first one ends where they start: each goes
    # first (one pass a column, each row taken once; the CPU from the rows as read, nulls kept)
    at = np.searchsorted(tid[kept], first["tid"].to_numpy(), "left")

    def with_firsts(values: np.ndarray, column: str) -> np.ndarray:
        return _with_firsts(values, kept, at, first[column].to_numpy())

    first_rows = first["first_row"].to_numpy()
    if isinstance(cpu, pl.Series):  # in the rows' order, nulls and all
        cpu = cpu.gather(_with_firsts(order, kept, at, order[first_rows]))
    else:
        cpu = pl.Series("cpu", _with_firsts(cpu, kept, at, cpu[first_rows]))
    del order
    # each column built and its source let go before the next
    segments = pl.DataFrame({"tid": with_firsts(tid, "tid"), "cpu": cpu})
    del tid, cpu
    segments = segments.with_columns(STATE_NAMES.gather(with_firsts(state, "state")))
    del state
    segments = segments.with_columns(pl.Series("segment_start", with_firsts(ts, "segment_start")))
    del ts
    return segments.with_columns(pl.Series("segment_end", with_firsts(ends, "segment_end")))
