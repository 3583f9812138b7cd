"""Running and runnable task counts over time, and work-conservation
failures: the data behind `launchgap running-waiting` (docs/views.md).

- running(t): CPUs running a (selected) task.
- waiting(t): selected tasks runnable but not running. A task waits from
  its wakeup (sched_wakeup / wakeup_new) after it blocked, or from being
  switched out while still runnable (preempted, yielded), until it is
  switched in. A wakeup of a task that is still running (it had not yet
  switched out, or its first switch in the trace is a switch-out) starts no
  wait.
- A switch-out that follows a wait with no switch-in between (its
  switch-in was never recorded: the sandbox agent's threads, whose
  switch-outs never fire sched_switch, docs/metrics.md) ends the wait
  there, on that CPU: the task waits until its next recorded switch, as
  its thread segments show it preempted until then. The wait, and any
  failure it makes, is then an upper bound: the task ran from the unseen
  switch-in on.
- Tasks already runnable when the trace starts: a task whose first event
  is being switched in, with no wakeup before it, was woken before the
  trace began, so it waits from the start of the trace. A task whose first
  event is a switch-out was running from the start.
- Work-conservation failure: some task waits on the run queue of a busy
  CPU (the CPU it is finally switched in on, which is running another
  task meanwhile) while at least one CPU is idle. A task woken onto an idle
  CPU that takes a while to switch it in is wake-up latency, not a failure.
  Busy and idle count every task, selected or not.

Every count needs every task's switches: a target-mode trace holds another
task's only where it met a target (one preempted by a target waits, as far
as the trace shows, until it next meets one), so on a 2-CPU machine it gave
"peak 76 runnable" and failures over 35-95% of the time. Such a trace is
refused (why_not_countable).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from launchgap.analysis.core_map import Window, clip, records_every_switch, run_slices
from launchgap.analysis.intervals import overlaps
from launchgap.trace import Event, Trace
from launchgap.trace.model import collect_streamed


@dataclass(frozen=True)
class RunningWaiting:
    steps: pl.DataFrame  # ts_ns (step start), running, runnable: counts hold until the next row
    failures: pl.DataFrame  # start_ns, end_ns: merged work-conservation failure intervals
    waits: pl.DataFrame  # tid, cpu, start_ns, end_ns: every wait, clipped to the window
    n_cpus: int

    @property
    def failure_ns(self) -> int:
        return int((self.failures["end_ns"] - self.failures["start_ns"]).sum()) if not self.failures.is_empty() else 0


# later than any event: the bound of a task with no switch-in after the window
NO_END = 1 << 62


def _per_task(tasks: pl.DataFrame, column: str, default: int | None) -> pl.Expr:
    """Each row's task's value in TASKS (tid, COLUMN), else DEFAULT."""
    known = tasks.drop_nulls(column)
    if known.is_empty():
        return pl.lit(default, pl.Int64)
    return pl.col("tid").replace_strict(known["tid"], known[column], default=default, return_dtype=pl.Int64)


def _task_edges(switches: pl.LazyFrame, window: Window) -> pl.DataFrame:
    """Per task: its last switch (in or out) before the window (from_ns) and its first switch-in at or
    after the window's end (in_after_ns)."""
    ts = pl.col("ts_ns")
    outs = switches.filter(pl.col("tid") != 0).select("tid", ts, pl.lit(False).alias("is_in"))
    ins = switches.filter(pl.col("next_tid") != 0).select(
        pl.col("next_tid").alias("tid"), ts, pl.lit(True).alias("is_in")
    )
    return collect_streamed(
        pl.concat([outs, ins])
        .filter((ts < window.lo_ns) | ((ts >= window.hi_ns) & pl.col("is_in")))
        .group_by("tid")
        .agg(
            ts.filter(ts < window.lo_ns).max().alias("from_ns"),
            ts.filter(ts >= window.hi_ns).min().alias("in_after_ns"),
        )
    )


def _switches_and_wakeups(trace: Trace, window: Window | None) -> pl.DataFrame:
    """Every task's switches and wakeups (those wait_intervals needs for WINDOW, where given), by task and time,
    a switch-out before a wakeup before a switch-in at equal times: ts_ns, tid, cpu, kind (out_blocked,
    out_runnable, wake, in), rank."""
    switches = trace.scan(Event.SWITCH).select(
        pl.col("ts_ns").cast(pl.Int64), "cpu", "tid", "next_tid", "voluntary", "prev_state"
    )
    wakes = pl.concat([trace.scan(kind) for kind in (Event.WAKEUP, Event.WAKEUP_NEW)]).select(
        pl.col("ts_ns").cast(pl.Int64), "tid", "target_cpu"
    )
    kept = pl.lit(True)
    if window is not None:
        # every event of a task in that range, none left out between: a switch-in is then taken for the
        # task's first event only where it is the range's first, whose stretch ends before the window
        edges = _task_edges(switches, window)
        kept = pl.col("ts_ns").is_between(_per_task(edges, "from_ns", -1), _per_task(edges, "in_after_ns", NO_END))
    still_runnable = (
        pl.when(pl.col("voluntary").is_not_null())
        .then(~pl.col("voluntary"))
        .otherwise(pl.col("prev_state").fill_null(0) == 0)
    )
    outs = (
        switches.filter(pl.col("tid") != 0)
        .filter(kept)
        .select(
            "ts_ns",
            "tid",
            "cpu",
            pl.when(still_runnable).then(pl.lit("out_runnable")).otherwise(pl.lit("out_blocked")).alias("kind"),
        )
    )
    ins = (
        switches.filter(pl.col("next_tid") != 0)
        .with_columns(pl.col("next_tid").alias("tid"))
        .filter(kept)
        .select("ts_ns", "tid", "cpu", pl.lit("in").alias("kind"))
    )
    wakes = (
        wakes.filter(pl.col("tid") != 0)
        .filter(kept)
        .select("ts_ns", "tid", pl.col("target_cpu").alias("cpu"), pl.lit("wake").alias("kind"))
    )
    rows = collect_streamed(
        pl.concat([outs, ins, wakes]).with_columns(pl.col("tid").cast(pl.UInt32), pl.col("cpu").cast(pl.UInt32))
    )
    order = {"out_blocked": 0, "out_runnable": 0, "wake": 1, "in": 2}
    return rows.with_columns(pl.col("kind").replace_strict(order, return_dtype=pl.Int8).alias("rank")).sort(
        "tid", "ts_ns", "rank"
    )


def wait_intervals(trace: Trace, start_ns: int, window: Window | None = None) -> pl.DataFrame:
    """tid, cpu, start_ns, end_ns of every runnable-but-not-running stretch that ended at a recorded
    switch of its task.

    With WINDOW: those that overlap it (not cut), and some that end before it, read from each task's
    events from its last switch before the window to its first switch-in after it. A wait that overlaps
    the window starts at or after that last switch (an earlier one ended by that switch, the task's
    next after it) and ends by that first switch-in."""
    rows = _switches_and_wakeups(trace, window)
    is_in = pl.col("kind") == "in"
    switch_kind = pl.when(pl.col("kind") != "wake").then(pl.col("kind"))

    def next_switch(column: str) -> pl.Expr:
        """COLUMN of the task's first switch after the row."""
        return pl.when(switch_kind.is_not_null()).then(pl.col(column)).shift(-1).backward_fill().over("tid")

    # each wait ends at the task's next recorded switch after it (a switch-in, or a switch-out whose
    # switch-in went unrecorded) on that switch's CPU; a second start before it (waking + wakeup) changes
    # nothing. A wait begun by a switch-in (runnable since the trace's start) ends at that switch-in.
    rows = rows.with_columns(
        switch_kind.forward_fill().shift(1).over("tid").alias("before"),
        pl.col("kind").shift(1).over("tid").alias("prev_kind"),
        pl.when(is_in).then(pl.col("ts_ns")).otherwise(next_switch("ts_ns")).alias("end_ns"),
        pl.when(is_in).then(pl.col("cpu")).otherwise(next_switch("cpu")).alias("end_cpu"),
        next_switch("kind").alias("next_switch_kind"),
    )
    # a wakeup before the task's first switch starts a wait only if that switch is a switch-in: a first
    # switch-out shows it was running since the trace's start, so it was woken while still running
    woken_from_blocked = (pl.col("before") == "out_blocked") | (
        pl.col("before").is_null() & (pl.col("next_switch_kind") == "in")
    )
    starts_wait = (
        (pl.col("kind") == "out_runnable")
        | ((pl.col("kind") == "wake") & woken_from_blocked)
        | (is_in & pl.col("prev_kind").is_null())
    )
    rows = rows.with_columns(
        pl.when(is_in & pl.col("prev_kind").is_null())
        .then(pl.lit(start_ns))
        .otherwise(pl.col("ts_ns"))
        .alias("wait_from"),
        starts_wait.alias("starts"),
    )
    waits = (
        rows.filter(pl.col("starts") & pl.col("end_ns").is_not_null())
        .group_by("tid", "end_ns")
        .agg(pl.col("wait_from").min(), pl.col("end_cpu").first())
    )
    return (
        waits.select("tid", pl.col("end_cpu").alias("cpu"), pl.col("wait_from").alias("start_ns"), "end_ns")
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .sort("start_ns", "tid")
    )


def _step_counts(deltas: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sweep: every array of (times, +1/-1) is summed into a step function
    sampled at the union of change times."""
    times = np.unique(np.concatenate([t for t, _ in deltas])) if deltas else np.zeros(0, np.int64)
    counts = []
    for t, d in deltas:
        acc = np.zeros(times.size, np.int64)
        np.add.at(acc, np.searchsorted(times, t), d)
        counts.append(np.cumsum(acc))
    return times, counts


def _edges(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    starts = frame["start_ns"].to_numpy().astype(np.int64)
    ends = frame["end_ns"].to_numpy().astype(np.int64)
    return (
        np.concatenate([starts, ends]),
        np.concatenate([np.ones(starts.size, np.int64), -np.ones(ends.size, np.int64)]),
    )


def _first_run_ns(trace: Trace) -> int | None:
    """When the trace's first run slice starts, read from its switches up to the first that switches a
    task in (every run starts at the trace's start or at such a switch), else from every switch."""
    first_in = collect_streamed(
        trace.scan(Event.SWITCH).filter(pl.col("next_tid") != 0).select(pl.col("ts_ns").cast(pl.Int64).min())
    )["ts_ns"][0]
    if first_in is None:
        return None
    # from time 0: a run that starts before the trace's recorded start is not cut
    early = run_slices(trace, Window(0, 0, int(first_in) + 1))
    if early.is_empty():
        # that switch's run lasted no time: rare enough to read every switch
        early = run_slices(trace)
    return int(early["start_ns"].min()) if not early.is_empty() else None


def why_not_countable(trace: Trace) -> str | None:
    """Why TRACE cannot give running and waiting counts (one line), or None."""
    if records_every_switch(trace):
        return None
    return (
        f"{trace.path}: recorded in target mode, which holds other tasks' switches only where they met a "
        f"target; running-waiting counts every task's (who runs, who waits), so it needs a recording made "
        f"with --system, or a trace-cmd import"
    )


def running_waiting(
    trace: Trace, window: Window, n_cpus: int, tids: set[int] | None = None, whole: bool = False
) -> RunningWaiting:
    """The counts in WINDOW, read from the events that bear on it (memory follows the window, not the
    trace); WHOLE reads every switch and wakeup of the trace, the reference the tests compare with.
    The counts are those of a trace that records every switch (why_not_countable says when it does not)."""
    if whole:
        all_runs = run_slices(trace)
        since = int(all_runs["start_ns"].min()) if not all_runs.is_empty() else window.lo_ns
        waits = wait_intervals(trace, since)
    else:
        all_runs = run_slices(trace, window)
        first = _first_run_ns(trace)
        waits = wait_intervals(trace, window.lo_ns if first is None else first, window)
    # waits on a busy run queue: the part of each wait while its CPU ran something else
    busy = all_runs.select("cpu", "start_ns", "end_ns")
    # the waits' bounds renamed only to stand apart from the runs' (both are start_ns, end_ns)
    pairs = overlaps(
        waits.select("cpu", pl.col("start_ns").alias("wait_start"), pl.col("end_ns").alias("wait_end")),
        busy,
        "cpu",
        ("wait_start", "wait_end"),
        ("start_ns", "end_ns"),
    )
    blocked = pairs.select(
        "cpu",
        pl.max_horizontal("wait_start", "start_ns").alias("start_ns"),
        pl.min_horizontal("wait_end", "end_ns").alias("end_ns"),
    )
    runs = all_runs if tids is None else all_runs.filter(pl.col("tid").is_in(sorted(tids)))
    mine = waits if tids is None else waits.filter(pl.col("tid").is_in(sorted(tids)))
    runs, mine, busy, blocked = (clip(f, window) for f in (runs, mine, busy, blocked))
    times, (running, waiting, busy_n, blocked_n) = _step_counts(
        [_edges(runs), _edges(mine), _edges(busy), _edges(blocked)]
    )
    steps = pl.DataFrame({"ts_ns": times, "running": running, "runnable": running + waiting})
    failing = (blocked_n > 0) & (busy_n < n_cpus)
    failures = _runs_of_true(times, failing, window.hi_ns)
    return RunningWaiting(steps, failures, mine, n_cpus)


def _runs_of_true(times: np.ndarray, flag: np.ndarray, end_ns: int) -> pl.DataFrame:
    if times.size == 0:
        return pl.DataFrame(schema={"start_ns": pl.Int64, "end_ns": pl.Int64})
    change = np.diff(np.concatenate([[0], flag.astype(np.int8), [0]]))
    bounds = np.append(times, end_ns)
    starts = bounds[np.flatnonzero(change == 1)]
    ends = bounds[np.flatnonzero(change == -1)]
    return pl.DataFrame({"start_ns": starts, "end_ns": ends}).filter(pl.col("end_ns") > pl.col("start_ns"))
