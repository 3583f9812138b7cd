"""The interval tables the analysis hands from stage to stage: each frame's columns and types, declared once.

Naming: a table's rows are intervals of one kind, and their bounds are named after that kind, `<row>_start`
and `<row>_end` (a thread's segment: segment_start, segment_end; a CPU's run: run_start, run_end; ...). Both
are nanoseconds on the trace's clock (CLOCK_MONOTONIC), Int64, the start inside the interval and the end not.
Two tables joined or overlapped (intervals.overlaps) so keep their bounds apart without a rename, and a column
says what it bounds wherever it travels. Columns that describe the row's task take the row's noun too where
they would meet another task's (a run's run_pid, run_tid, run_comm, beside the waiting thread's tid). Times
that are instants or that come straight from a trace's rows keep the trace's `_ns` names (ts_ns,
call_start_ns, call_end_ns); lengths are `<what>_ns` (overlap_ns, exclusive_ns).

| table      | made by                              | one row                                                   |
|------------|--------------------------------------|-----------------------------------------------------------|
| SEGMENTS   | timeline.thread_segments             | a target thread in one state on one CPU                   |
| RUNS       | timeline.cpu_runs (+ cgroups)        | a task running on a CPU                                   |
| IRQS       | irqs.irq_intervals                   | an interrupt, on the thread it interrupted                |
| GAPS       | gpu_time.idle_gaps                   | a process's device running nothing                        |
| PIECES     | gpu_time._host_pieces                | the part of a gap's host time one state of its thread held |
| WAITS      | gpu_time.competitors                 | a task waiting in a CPU's queue (a fair share's rivals)   |
| DELAYS     | gpu_time.delay_pieces                | a launching thread delayed by one culprit                 |
| WINDOWS    | gpu_time._drained_windows            | a process whose GPU provably had nothing to do            |

`check(frame)` says whether a frame is what its table declares: the tests call it on the stages' outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from launchgap.trace.schema import THREAD_STATES

# a segment's state: the thread states' Enum (timeline.STATE)
THREAD_STATE = pl.Enum(THREAD_STATES)


class IntervalTableError(ValueError):
    """A frame is not what its interval table declares."""


@dataclass(frozen=True)
class IntervalTable:
    """One interval table: ROW names its rows (and so its bounds, ROW_start and ROW_end); COLUMNS are the
    columns every such frame has, with their types; OPTIONAL those some have (a run's cgroup)."""

    row: str
    columns: Mapping[str, pl.DataType]
    optional: Mapping[str, pl.DataType] = field(default_factory=dict)

    @property
    def start(self) -> str:
        return f"{self.row}_start"

    @property
    def end(self) -> str:
        return f"{self.row}_end"

    @property
    def bounds(self) -> tuple[str, str]:
        """The start and end columns' names, as intervals.overlaps takes them."""
        return self.start, self.end

    def empty(self) -> pl.DataFrame:
        """A frame of the table with no rows."""
        return pl.DataFrame(schema=dict(self.columns))

    def problems(self, frame: pl.DataFrame) -> list[str]:
        """What in FRAME differs from the table: a declared column missing or of another type, a row that
        ends before it starts. Columns beyond those declared are a stage's own and allowed."""
        found = []
        for name, dtype in {**self.columns, **self.optional}.items():
            if name not in frame.columns:
                if name in self.columns:
                    found.append(f"no column {name}")
            elif frame.schema[name] != dtype:
                found.append(f"{name} is {frame.schema[name]}, not {dtype}")
        if not found and frame.filter(pl.col(self.end) < pl.col(self.start)).height:
            found.append(f"a row's {self.end} is before its {self.start}")
        return found

    def check(self, frame: pl.DataFrame) -> pl.DataFrame:
        """FRAME, where it is what the table declares; else IntervalTableError, naming each difference."""
        found = self.problems(frame)
        if found:
            raise IntervalTableError(f"{self.row} table: " + "; ".join(found))
        return frame


SEGMENTS = IntervalTable(
    "segment",
    {"tid": pl.UInt32, "cpu": pl.UInt32, "state": THREAD_STATE, "segment_start": pl.Int64, "segment_end": pl.Int64},
)

RUNS = IntervalTable(
    "run",
    {
        "cpu": pl.UInt32,
        "run_start": pl.Int64,
        "run_end": pl.Int64,
        "run_pid": pl.UInt32,
        "run_tid": pl.UInt32,
        "run_comm": pl.String,
    },
    # the running task's cgroup code, where the trace records cgroups (cgroups.with_run_cgroups)
    optional={"run_cgroup": pl.Int32},
)

IRQS = IntervalTable(
    "irq",
    {
        "cpu": pl.UInt32,
        "pid": pl.UInt32,
        "tid": pl.UInt32,
        "kind": pl.String,
        "name": pl.String,
        "irq_start": pl.Int64,
        "irq_end": pl.Int64,
        "duration_ns": pl.Int64,
        # the interrupt's time less the interrupts nested in it (a hard IRQ inside a softirq)
        "exclusive_ns": pl.Int64,
    },
)

GAPS = IntervalTable(
    "gap",
    {
        "pid": pl.UInt32,
        "device_id": pl.UInt32,
        "gap_start": pl.Int64,
        "gap_end": pl.Int64,
        # before_first, between, after_last
        "kind": pl.String,
        # a `between` gap's ending work: the thread whose call made it, and that call (null where not known)
        "tid": pl.UInt32,
        "call_start_ns": pl.Int64,
        "call_end_ns": pl.Int64,
    },
)

PIECES = IntervalTable(
    "piece",
    {
        "gap": pl.UInt32,
        "pid": pl.UInt32,
        "device_id": pl.UInt32,
        "tid": pl.UInt32,
        "cpu": pl.UInt32,
        # the thread's state (a String: the causes it becomes are strings)
        "state": pl.String,
        "piece_start": pl.Int64,
        "piece_end": pl.Int64,
        "call_start_ns": pl.Int64,
        "call_end_ns": pl.Int64,
    },
)

WAITS = IntervalTable(
    "wait",
    {
        "cpu": pl.UInt32,
        "tid": pl.UInt32,
        "wait_start": pl.Int64,
        "wait_end": pl.Int64,
        # the task's weight (its nice level's) and its scheduler group's, with_share's terms
        "weight": pl.Int64,
        "group": pl.String,
        "group_weight": pl.Int64,
    },
)

DELAYS = IntervalTable(
    "delay",
    {
        "pid": pl.UInt32,
        "tid": pl.UInt32,
        "delay_start": pl.Int64,
        "delay_end": pl.Int64,
        # preempted, runqueue, irq, wakeup_latency, measurement
        "cause": pl.String,
        "culprit_pid": pl.UInt32,
        "culprit": pl.String,
        "culprit_cgroup": pl.Int32,
        # the part of it the thread would have had without its culprit (gpu_time.with_share)
        "share": pl.Float64,
    },
)

WINDOWS = IntervalTable(
    "window",
    {
        "pid": pl.UInt32,
        "window_start": pl.Int64,
        "window_end": pl.Int64,
        # the thread whose launch ended the window
        "tid": pl.UInt32,
    },
)
