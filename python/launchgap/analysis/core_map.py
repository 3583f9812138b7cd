"""What ran on which CPU when: the data behind `launchgap timeline` and
`launchgap running-waiting` (docs/views.md).

A run slice starts when a task is switched in and ends when it is switched
out (it slept, was preempted or died). Idle (task id 0) is not a slice: it is
the gap between slices. The slice a CPU's first switch ends was running since
the trace began (in target-mode traces only when its task is a target: see
run_slices).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from launchgap.analysis.targets import target_pids
from launchgap.analysis.timeline import BREAK_SCHEMA, RUN_COLUMNS, cpu_runs, switch_chain_breaks, trace_bounds
from launchgap.trace import Event, Trace
from launchgap.trace.model import collect_streamed
from launchgap.trace.schema import HOST_KINDS, TASK_DEAD, MetaKey

IDLE_TID = 0
# the kinds drawn as marks, and the mark each is (views/timeline.py styles them)
MARK_EVENTS = {
    Event.HARDIRQ: "irq",
    Event.SOFTIRQ: "irq",
    Event.IRQ_VECTOR: "irq",
    Event.LAUNCH: "launch",
    Event.SYNC: "sync",
    Event.MIGRATE: "migrate",
}


class ViewError(ValueError):
    """The trace cannot give what the options ask (e.g. --after-sleep with no sleep)."""


@dataclass(frozen=True)
class Window:
    """The time shown: origin is time zero on the axis; [lo, hi] what is drawn (absolute ns)."""

    origin_ns: int
    lo_ns: int
    hi_ns: int


def run_slices(trace: Trace, window: Window | None = None, switches: pl.DataFrame | None = None) -> pl.DataFrame:
    """cpu, start_ns, end_ns, tid, pid, comm, switched_in of every non-idle
    run on every CPU (switched_in is false for the run a CPU was in when the
    trace began). With WINDOW: the runs that overlap it, cut to it (the rows
    of clip(run_slices(trace), window)), read from the window's switches and
    each CPU's last before it and first after it: memory follows the window, not the trace.

    A trace that records every switch (--system, trace-cmd imports) shows
    who ran on each CPU from its start. A target-mode trace records a CPU's
    switches only from the first time a target ran there: the task switched
    out then was not necessarily running since the start, so that run is
    kept only when the task is a target (whose own events say it was). SWITCHES: window_switches(trace,
    window), where the caller has them already."""
    bounds = view_bounds(trace)
    if window is None:
        switches = None
    elif switches is None:
        switches = window_switches(trace, window)
    runs = (
        cpu_runs(trace, bounds, switches)
        .filter(pl.col("run_tid") != IDLE_TID)
        .select(
            "cpu",
            pl.col("run_start").alias("start_ns"),
            pl.col("run_end").alias("end_ns"),
            pl.col("run_tid").alias("tid"),
            pl.col("run_pid").alias("pid"),
            pl.col("run_comm").alias("comm"),
            # cpu_runs starts the run a CPU was in at exactly the trace's start
            (pl.col("run_start") != bounds.start_ns).alias("switched_in"),
        )
    )
    if not records_every_switch(trace):
        runs = runs.filter(pl.col("switched_in") | pl.col("pid").is_in(sorted(target_pids(trace))))
    return runs if window is None else clip(runs, window)


def view_bounds(trace: Trace):
    """The analysis' bounds, begun at the trace's first row where that comes first: rows recorded while the
    recorder attached, before the start it stamps. The views draw from there (choose_window's origin), so the
    run a CPU was in at its first switch is known from there too: every CPU's switches are recorded from the
    same moment, so none came before its first."""
    from dataclasses import replace

    bounds = trace_bounds(trace)
    first, _ = trace.span_ns()
    return replace(bounds, start_ns=int(first)) if first is not None and int(first) < bounds.start_ns else bounds


def window_switches(trace: Trace, window: Window) -> pl.DataFrame:
    """The switches in WINDOW and, of each CPU, its last before it and its first after it (every one at
    those times), in the trace's order: all cpu_runs needs for the runs in the window. A run in progress
    when the window opens began at that last switch; one in progress when it closes ends at that first
    switch (the run from the trace's start, on a CPU with no switch before the window's end, ends there)."""
    switches = trace.scan(Event.SWITCH).select(RUN_COLUMNS)
    ts = pl.col("ts_ns").cast(pl.Int64)
    inside = (ts >= window.lo_ns) & (ts < window.hi_ns)
    edges = collect_streamed(
        switches.filter(~inside)
        .group_by("cpu")
        .agg(
            ts.filter(ts < window.lo_ns).max().alias("last_before"),
            ts.filter(ts >= window.hi_ns).min().alias("first_after"),
        )
    )
    for edge in ("last_before", "first_after"):
        known = edges.drop_nulls(edge)
        if not known.is_empty():
            inside = inside | (ts == pl.col("cpu").replace_strict(known["cpu"], known[edge], default=None))
    return collect_streamed(switches.filter(inside))


def unknown_stretches(trace: Trace, window: Window, switches: pl.DataFrame | None = None) -> pl.DataFrame:
    """cpu, start_ns, end_ns, in_tid, in_comm, out_tid where a CPU's switches do not chain in WINDOW
    (timeline.switch_chain_breaks), cut to it: who ran there is not known. None in a target-mode trace,
    whose switches never chain. SWITCHES: window_switches(trace, window), where the caller has them."""
    if not records_every_switch(trace):
        return pl.DataFrame(schema=BREAK_SCHEMA)
    return clip(switch_chain_breaks(trace, window_switches(trace, window) if switches is None else switches), window)


def records_every_switch(trace: Trace) -> bool:
    return trace.meta.get(MetaKey.MODE) == "system" or bool(trace.meta.get(MetaKey.EVERY_SWITCH))


def forked_tids(trace: Trace) -> set[int]:
    """Tasks created while the trace ran (fork or wakeup_new seen)."""
    children = trace.of(Event.FORK, "child_tid")["child_tid"].drop_nulls().to_list()
    new = trace.of(Event.WAKEUP_NEW, "tid")["tid"].drop_nulls().to_list()
    return set(children) | set(new)


def sleep_end_ns(trace: Trace) -> int:
    """The end of the first `sleep` task: the paper's `sleep 1; app` trick."""

    def named_sleep(kinds: tuple[Event, ...]) -> pl.DataFrame:
        return (
            pl.concat([trace.scan(k).select("ts_ns", "tid", "comm") for k in kinds])
            .filter(pl.col("comm") == "sleep")
            .collect()
        )

    sleeps = named_sleep((Event.EXEC,))
    if sleeps.is_empty():
        sleeps = named_sleep((Event.SWITCH, Event.EXIT))
    if sleeps.is_empty():
        raise ViewError("--after-sleep: no task named `sleep` in the trace (record `sh -c 'sleep 1; COMMAND'`)")
    tid = sleeps.sort("ts_ns")["tid"][0]
    switches = trace.of(Event.SWITCH, "ts_ns", "tid", "prev_state").filter(pl.col("tid") == tid)
    exits = trace.of(Event.EXIT, "ts_ns", "tid").filter(pl.col("tid") == tid)
    dead = pl.concat([exits["ts_ns"], switches.filter((pl.col("prev_state").fill_null(0) & TASK_DEAD) != 0)["ts_ns"]])
    own = pl.concat([exits["ts_ns"], switches["ts_ns"]])
    return int((dead if not dead.is_empty() else own).max())


def workload_start_ns(trace: Trace) -> int:
    """When the traced command started: its exec, else its first event."""
    pid = trace.meta.get(MetaKey.COMMAND_PID)
    if not pid:
        raise ViewError(
            "--from-workload: the trace names no traced command (recorded with -p, --system "
            "without a command, or imported)"
        )
    execs = trace.of(Event.EXEC, "ts_ns", "pid").filter(pl.col("pid") == pid)
    if not execs.is_empty():
        return int(execs["ts_ns"].min())
    # streamed: on a launch-bound trace this is every launch
    own = collect_streamed(
        pl.concat(
            [trace.scan(k).filter(pl.col("pid") == pid).select("ts_ns") for k in HOST_KINDS]
            + [trace.scan(Event.FORK).filter(pl.col("child_pid") == pid).select("ts_ns")]
        ).select(pl.col("ts_ns").min())
    )
    if own["ts_ns"][0] is None:
        raise ViewError(f"--from-workload: no event of the traced command (pid {pid}) in the trace")
    return int(own["ts_ns"][0])


def choose_window(
    trace: Trace,
    after_sleep: bool = False,
    from_workload: bool = False,
    min_s: float | None = None,
    max_s: float | None = None,
) -> Window:
    bounds = trace_bounds(trace)
    first, _ = trace.span_ns()
    origin = min(bounds.start_ns, int(first)) if first is not None else bounds.start_ns
    if after_sleep:
        origin = sleep_end_ns(trace)
    elif from_workload:
        origin = workload_start_ns(trace)
    if (min_s is not None and min_s < 0) or (max_s is not None and max_s <= 0):
        raise ViewError("--min and --max are seconds after the start and must not be negative")
    lo = origin + int((min_s or 0.0) * 1e9)
    hi = origin + int(max_s * 1e9) if max_s is not None else bounds.end_ns
    if hi <= lo:
        if max_s is not None:
            raise ViewError(
                f"the window is empty: --min {min_s:g} s is not before --max {max_s:g} s; give a "
                f"--min smaller than --max"
            )
        start = f"--min {min_s:g} s" if min_s is not None else "the axis' origin"
        raise ViewError(
            f"the window is empty: {start} is at or after the end of the trace, "
            f"{(bounds.end_ns - origin) / 1e9:.6f} s from the axis' origin; give a --min before it"
        )
    return Window(origin, lo, hi)


def clip(frame: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Slices overlapping the window, cut to it."""
    return frame.filter((pl.col("end_ns") > window.lo_ns) & (pl.col("start_ns") < window.hi_ns)).with_columns(
        pl.col("start_ns").clip(lower_bound=window.lo_ns), pl.col("end_ns").clip(upper_bound=window.hi_ns)
    )


def shared_span_s(windows: list[Window]) -> tuple[float, float]:
    """Several traces on one time scale, the slowest run's: seconds from each origin."""
    return (min((w.lo_ns - w.origin_ns) / 1e9 for w in windows), max((w.hi_ns - w.origin_ns) / 1e9 for w in windows))


def command_stats(slices: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Per command, as in dat2graph's colour-by-command legend: first and last
    time seen (seconds on the axis), total run time, switches to it, task count."""
    return (
        slices.group_by("comm")
        .agg(
            ((pl.col("start_ns").min() - window.origin_ns) / 1e9).alias("first_s"),
            ((pl.col("end_ns").max() - window.origin_ns) / 1e9).alias("last_s"),
            ((pl.col("end_ns") - pl.col("start_ns")).sum() / 1e9).alias("run_s"),
            pl.col("switched_in").sum().alias("switches_in"),
            pl.col("tid").n_unique().alias("tasks"),
        )
        .sort("run_s", descending=True)
    )


# Marks a window keeps whole, at most. Past it (an hour of a launch-bound job is ~200M launches) the
# window keeps the earliest mark per kind, CPU and column of the window, the columns as many as keep the
# total under MARKS_KEPT_WHOLE, at most MARK_COLUMNS (more than any picture or zoom of the HTML page can
# tell apart at the whole window's scale): memory follows the picture, not the trace.
MARKS_KEPT_WHOLE = 2_000_000
MARK_COLUMNS = 200_000


@dataclass(frozen=True)
class Marks:
    frame: pl.DataFrame  # kind, ts_ns, cpu, tid, in time order
    in_window: int  # the marks in the window before any thinning


def marks(
    trace: Trace,
    window: Window,
    tids: set[int] | None = None,
    kinds: tuple[str, ...] = tuple(dict.fromkeys(MARK_EVENTS.values())),
) -> Marks:
    """Overlay marks of KINDS: kind (irq, launch, sync, migrate), ts_ns, cpu (a migration's destination),
    tid. Read streamed; thinned (see MARKS_KEPT_WHOLE) when the window holds too many."""
    inside = (pl.col("ts_ns") >= window.lo_ns) & (pl.col("ts_ns") < window.hi_ns)
    asked = [kind for kind, mark in MARK_EVENTS.items() if mark in kinds]
    frame = pl.concat(
        [
            trace.scan(kind)
            .filter(inside)
            .select(
                pl.lit(MARK_EVENTS[kind]).alias("kind"),
                pl.col("ts_ns").cast(pl.Int64),
                # a migration is marked where the task went
                pl.col("dest_cpu" if kind is Event.MIGRATE else "cpu").cast(pl.Int64).alias("cpu"),
                pl.col("tid").cast(pl.Int64),
            )
            for kind in asked
        ]
        or [EMPTY_MARKS.lazy()]
    ).drop_nulls("cpu")
    if tids is not None:
        # launches, syncs and migrations belong to a task; IRQs to the CPU
        frame = frame.filter((pl.col("kind") == "irq") | pl.col("tid").is_in(sorted(tids)))
    in_window = None
    # a trace with few enough in all is read once, with no count first
    if sum(trace.count(kind) for kind in asked) > MARKS_KEPT_WHOLE:
        per_row = collect_streamed(frame.group_by("kind", "cpu").len())
        in_window = int(per_row["len"].sum())
        if in_window > MARKS_KEPT_WHOLE:
            columns = max(1, min(MARK_COLUMNS, MARKS_KEPT_WHOLE // max(1, per_row.height)))
            # ns a column, rounded up: integer division, no product that could overflow on a long window
            column_ns = max(1, -(-(window.hi_ns - window.lo_ns) // columns))
            frame = (
                frame.with_columns(((pl.col("ts_ns") - window.lo_ns) // column_ns).alias("column"))
                .group_by("kind", "cpu", "column")
                .agg(pl.col("ts_ns").min(), pl.col("tid").sort_by("ts_ns").first())
                .select(EMPTY_MARKS.columns)
            )
    kept = collect_streamed(frame).sort("ts_ns", "kind", "cpu")
    return Marks(kept, kept.height if in_window is None else in_window)


EMPTY_MARKS = pl.DataFrame(schema={"kind": pl.Utf8, "ts_ns": pl.Int64, "cpu": pl.Int64, "tid": pl.Int64})


def cpu_order(trace: Trace, cpus: list[int], socket_order: bool) -> list[int]:
    """CPUs bottom to top. --socket-order: by package, then core, then CPU
    number, from the trace's own topology (never a built-in table)."""
    if not socket_order:
        return sorted(cpus)
    topo = {c["cpu"]: c for c in (trace.meta.get(MetaKey.TOPOLOGY) or {}).get("cpus", []) if "cpu" in c}
    missing = [c for c in cpus if c not in topo]
    if missing:
        raise ViewError(
            f"--socket-order: the trace has no topology for CPU(s) {missing[:8]} (imported traces carry none)"
        )
    return sorted(cpus, key=lambda c: (topo[c].get("package", 0), topo[c].get("die", 0), topo[c].get("core", c), c))


def trace_cpus(trace: Trace) -> list[int]:
    """Every CPU the trace knows: its topology, else the CPUs events happened on."""
    topo = (trace.meta.get(MetaKey.TOPOLOGY) or {}).get("cpus") or []
    known = {int(c["cpu"]) for c in topo if "cpu" in c}
    seen = trace.cpus_seen()
    count = (trace.meta.get(MetaKey.TOPOLOGY) or {}).get("count")
    if not known and count:
        known = set(range(int(count)))
    return sorted(known | {int(c) for c in seen})
