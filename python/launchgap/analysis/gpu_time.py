"""GPU time: every interval a process's GPU ran nothing, and why (docs/gpu-time.md).

With GPU activity (record --gpu-activity) the answer is exact. Each idle gap of a
process's device (between the union of its kernels, graphs, copies and memsets) ends
when some piece of work starts; that work was made by an API call on some thread. Until
that call returned the GPU waited for the host: the gap's time up to then is the thread's,
and what the thread was doing at each instant is its state in the trace: preempted (by
whom), in the run queue (behind whom), in an interrupt (which), running its own code, in
the launch call itself, or blocked in a wait of its own. After the call returned the GPU
had the work and had not started it: gpu_side. Before the process's first GPU work and
after its last: outside it. Every nanosecond of idle gets exactly one cause, so the causes
sum to the idle time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from launchgap.analysis import cgroups
from launchgap.analysis.gpu_activity import executions, join_launches, merge_intervals
from launchgap.analysis.interval_tables import DELAYS, GAPS, PIECES, RUNS, SEGMENTS, WAITS, WINDOWS
from launchgap.analysis.intervals import overlaps
from launchgap.analysis.measurement import HIT_NS_SOURCE, NOTHING, Measurement, probe_ns_per_launch
from launchgap.analysis.records import (
    GpuCgroupCulprit,
    GpuCulprit,
    GpuIdleCause,
    GpuMeasurement,
    GpuMeasurementTask,
    GpuPrediction,
    GpuProcess,
    GpuTime,
    GpuTimeBounds,
    GpuTimeExact,
    GpuTimeNotEstimated,
)
from launchgap.trace import Event, Trace
from launchgap.trace.schema import DRAIN_API_NAMES, GPU_IDLE_CAUSE_NAMES, ThreadState

(
    PREEMPTED,
    RUNQUEUE,
    IRQ,
    HOST_WORK,
    LAUNCH_CALL,
    BLOCKED,
    GPU_SIDE,
    BEFORE_FIRST,
    AFTER_LAST,
    UNKNOWN,
    MEASUREMENT,
    WAKEUP_LATENCY,
) = GPU_IDLE_CAUSE_NAMES
# the causes that are another task's or an interrupt's doing: what isolating the workload would remove
INTERFERENCE = (PREEMPTED, RUNQUEUE, IRQ)
# the app's own doing: its host code, the driver's launch cost, its own waits
OWN = (HOST_WORK, LAUNCH_CALL, BLOCKED)
BY_DESIGN = (BEFORE_FIRST, AFTER_LAST)

IDLE_COLUMNS = {
    "pid": pl.UInt32,
    "device_id": pl.UInt32,
    "cause": pl.String,
    "culprit_pid": pl.UInt32,
    "culprit": pl.String,
    "culprit_cgroup": pl.Int32,
    "tid": pl.UInt32,
    "ns": pl.Int64,
}


def gpu_work(trace: Trace) -> pl.DataFrame:
    """Every piece of GPU work with the API call that made it: pid, device_id, start_ns, end_ns,
    tid, call_start_ns, call_end_ns (null where the call is not in the trace)."""
    launched = join_launches(trace).filter(pl.col("gpu_start_ns").is_not_null())
    # the launch's driver call: from its launch row (entry) to its gpu_api row's return
    api = trace.of(Event.GPU_API, "pid", "tid", "correlation_id", "ts_ns", "end_ns")
    calls = launched.join(
        api.select("pid", "correlation_id", pl.col("end_ns").alias("call_end_ns")),
        on=["pid", "correlation_id"],
        how="left",
    )
    kernels = calls.select(
        "pid",
        "device_id",
        pl.col("gpu_start_ns").alias("start_ns"),
        pl.col("gpu_end_ns").alias("end_ns"),
        "tid",
        pl.col("ts_ns").cast(pl.Int64).alias("call_start_ns"),
        pl.col("call_end_ns").cast(pl.Int64),
    )
    # executions the launch rows did not account for (no launch row: a process not probed) keep no call
    orphans = executions(trace).join(launched.select("pid", "correlation_id"), on=["pid", "correlation_id"], how="anti")
    others = [
        _graph_nodes(
            trace,
            orphans.select(
                "pid",
                "device_id",
                pl.col("gpu_start_ns").alias("start_ns"),
                pl.col("gpu_end_ns").alias("end_ns"),
                "correlation_id",
            ),
        )
    ]
    for kind in (Event.GPU_MEMCPY, Event.GPU_MEMSET):
        others.append(
            trace.of(kind, "pid", "device_id", "ts_ns", "end_ns", "correlation_id").rename({"ts_ns": "start_ns"})
        )
    rest = (
        pl.concat(others, how="vertical_relaxed")
        .join(
            api.select(
                "pid",
                "correlation_id",
                "tid",
                pl.col("ts_ns").cast(pl.Int64).alias("call_start_ns"),
                pl.col("end_ns").cast(pl.Int64).alias("call_end_ns"),
            ),
            on=["pid", "correlation_id"],
            how="left",
        )
        .drop("correlation_id")
    )
    kernels = _graph_nodes(trace, kernels)
    work = pl.concat([kernels, rest.select(kernels.columns)], how="vertical_relaxed")
    return work.with_columns(pl.col("start_ns").cast(pl.Int64), pl.col("end_ns").cast(pl.Int64)).sort(
        "pid", "device_id", "start_ns"
    )


def _graph_nodes(trace: Trace, work: pl.DataFrame) -> pl.DataFrame:
    """WORK (pid, start_ns, end_ns, ...; executions as gpu_activity.executions folds them) with each graph
    traced node by node back as its nodes: the GPU is busy while a node runs, not between two of them. A
    folded graph is the one interval from its first node's start to its last node's end."""
    nodes = trace.of(Event.GPU_KERNEL, "pid", "correlation_id", "ts_ns", "end_ns", "graph_id").filter(
        pl.col("graph_id").is_not_null()
    )
    if nodes.is_empty() or work.is_empty():
        return work
    nodes = nodes.select(
        "pid",
        "correlation_id",
        pl.col("ts_ns").cast(pl.Int64).alias("node_start"),
        pl.col("end_ns").cast(pl.Int64).alias("node_end"),
    )
    folded = nodes.group_by("pid", "correlation_id").agg(
        pl.col("node_start").min().alias("start_ns"), pl.col("node_end").max().alias("end_ns")
    )
    each = nodes.join(folded, on=["pid", "correlation_id"]).select(
        "pid", "start_ns", "end_ns", "node_start", "node_end"
    )
    columns = work.columns
    keyed = work.with_columns(pl.col("start_ns").cast(pl.Int64), pl.col("end_ns").cast(pl.Int64))
    return (
        keyed.join(each.unique(), on=["pid", "start_ns", "end_ns"], how="left")
        .with_columns(
            pl.coalesce("node_start", "start_ns").alias("start_ns"), pl.coalesce("node_end", "end_ns").alias("end_ns")
        )
        .select(columns)
    )


def idle_gaps(work: pl.DataFrame, span_start_ns: int, span_end_ns: int) -> pl.DataFrame:
    """Every interval each (pid, device) ran nothing within [span_start, span_end]: pid, device_id,
    gap_start, gap_end, kind (before_first, between, after_last), and for `between` gaps the work that
    ended it: tid, call_start_ns, call_end_ns (the earliest-made of the work starting there)."""
    if work.is_empty():
        return GAPS.empty()
    busy = merge_intervals(work.select("pid", "device_id", "start_ns", "end_ns"), ["pid", "device_id"])
    between = (
        busy.with_columns(
            pl.col("end_ns").alias("gap_start"), pl.col("start_ns").shift(-1).over("pid", "device_id").alias("gap_end")
        )
        .filter(pl.col("gap_end").is_not_null() & (pl.col("gap_end") > pl.col("gap_start")))
        .select("pid", "device_id", "gap_start", "gap_end", pl.lit("between").alias("kind"))
    )
    enders = (
        work.sort("call_end_ns", nulls_last=True)
        .unique(["pid", "device_id", "start_ns"], keep="first", maintain_order=True)
        .select("pid", "device_id", pl.col("start_ns").alias("gap_end"), "tid", "call_start_ns", "call_end_ns")
    )
    between = between.join(enders, on=["pid", "device_id", "gap_end"], how="left")
    ends = busy.group_by("pid", "device_id").agg(
        pl.col("start_ns").min().alias("first"), pl.col("end_ns").max().alias("last")
    )
    outside = pl.concat(
        [
            ends.select(
                "pid",
                "device_id",
                pl.lit(span_start_ns, pl.Int64).alias("gap_start"),
                pl.col("first").alias("gap_end"),
                pl.lit(BEFORE_FIRST).alias("kind"),
            ),
            ends.select(
                "pid",
                "device_id",
                pl.col("last").alias("gap_start"),
                pl.lit(span_end_ns, pl.Int64).alias("gap_end"),
                pl.lit(AFTER_LAST).alias("kind"),
            ),
        ]
    ).filter(pl.col("gap_end") > pl.col("gap_start"))
    return pl.concat([between, outside], how="diagonal_relaxed").sort("pid", "device_id", "gap_start")


# The kernel's weight of each nice level, -20 to 19 (kernel/sched/core.c, sched_prio_to_weight): a fair
# scheduler gives runnable tasks CPU time in proportion to these.
NICE_WEIGHTS = (
    88761,
    71755,
    56483,
    46273,
    36291,
    29154,
    23254,
    18705,
    14949,
    11916,
    9548,
    7620,
    6100,
    4904,
    3906,
    3121,
    2501,
    1991,
    1586,
    1277,
    1024,
    820,
    655,
    526,
    423,
    335,
    272,
    215,
    172,
    137,
    110,
    87,
    70,
    56,
    45,
    36,
    29,
    23,
    18,
    15,
)
NICE_0_PRIO = 120  # the kernel's prio of a nice-0 task; prio below 100 is real-time
# A real-time task runs before any fair one: weighed as so many of the heaviest fair tasks that the
# freed time is all its when it waits, and all the launching thread's when that is the real-time one.
REAL_TIME_WEIGHT = NICE_WEIGHTS[0] << 20


def weight_of(prio: pl.Expr) -> pl.Expr:
    """A task's scheduling weight from its kernel prio: its nice level's (sched_prio_to_weight), a
    real-time task's REAL_TIME_WEIGHT; unknown (a source without prio): nice 0's."""
    nice = (prio - NICE_0_PRIO).clip(-20, 19) + 20
    return (
        pl.when(prio < 100)
        .then(pl.lit(REAL_TIME_WEIGHT, pl.Int64))
        .otherwise(nice.cast(pl.Int64).replace_strict(list(range(40)), list(NICE_WEIGHTS), return_dtype=pl.Int64))
        .fill_null(NICE_WEIGHTS[20])
    )


@dataclass(frozen=True)
class Competition:
    """Who else wanted a CPU, and when: where a culprit's CPU time would go, were the culprit gone.
    waits: cpu, tid, wait_start, wait_end, weight[, group, group_weight]: each task's runnable waits in a CPU's
    queue (disjoint for a task), at its weight then, and its scheduler group (an autogroup or a cgroup of
    the cpu controller, as the task_cgroup rows say; UNKNOWN_GROUP where the trace does not) with that
    group's weight; weights: tid, weight: each task's weight at its last switch-out; groups: ts_ns, tid,
    group, group_weight: each task's group from each of its task_cgroup rows on (sched_groups())."""

    waits: pl.DataFrame
    weights: pl.DataFrame
    groups: pl.DataFrame | None = None


# the group of a task whose scheduler group the trace does not say (a trace older than the task_cgroup rows'
# group columns, a kernel without group scheduling): all such tasks are weighed as one group's, by task weight
UNKNOWN_GROUP = "?"

NO_COMPETITION = Competition(WAITS.empty(), pl.DataFrame(schema={"tid": pl.UInt32, "weight": pl.Int64}))


def with_groups(frame: pl.DataFrame) -> pl.DataFrame:
    """FRAME with `group` and `group_weight` where it has none: every task in UNKNOWN_GROUP at nice 0's weight."""
    if "group" not in frame.columns:
        frame = frame.with_columns(pl.lit(UNKNOWN_GROUP).alias("group"))
    if "group_weight" not in frame.columns:
        frame = frame.with_columns(pl.lit(NICE_WEIGHTS[20], pl.Int64).alias("group_weight"))
    return frame


def sched_groups(trace: Trace) -> pl.DataFrame:
    """ts_ns, tid, group, group_weight: each task's scheduler group from each of its task_cgroup rows on (an
    autogroup `a<id>`, else the cpu controller's cgroup `c<id>`), as the recorder read it from the kernel's
    task->sched_task_group; empty where the trace has no such rows."""
    if not trace.count(Event.TASK_CGROUP):
        return sched_groups_none()
    rows = trace.of(Event.TASK_CGROUP, "ts_ns", "tid", "autogroup_id", "sched_cgroup_id", "group_weight")
    return (
        rows.filter(pl.col("group_weight").is_not_null())
        .select(
            pl.col("ts_ns").cast(pl.Int64),
            pl.col("tid").cast(pl.UInt32),
            pl.when(pl.col("autogroup_id").is_not_null())
            .then(pl.lit("a") + pl.col("autogroup_id").cast(pl.String))
            .when(pl.col("sched_cgroup_id").is_not_null())
            .then(pl.lit("c") + pl.col("sched_cgroup_id").cast(pl.String))
            .otherwise(pl.lit(UNKNOWN_GROUP))
            .alias("group"),
            pl.col("group_weight").cast(pl.Int64),
        )
        .sort("ts_ns")
    )


def sched_groups_none() -> pl.DataFrame:
    """sched_groups() of a trace without task_cgroup rows."""
    return pl.DataFrame(schema={"ts_ns": pl.Int64, "tid": pl.UInt32, "group": pl.String, "group_weight": pl.Int64})


def _group_at(frame: pl.DataFrame, groups: pl.DataFrame, at: str) -> pl.DataFrame:
    """FRAME (tid, AT, ...) with each task's group at time AT: its latest task_cgroup row by then, else its
    first (a task's first row comes at its first recorded switch: its group before it was the same but for
    an exec or setsid in between), else UNKNOWN_GROUP."""
    if groups.is_empty():
        return with_groups(frame)
    frame = frame.with_row_index("_row").sort(at)
    before = frame.join_asof(
        groups.rename({"ts_ns": "_g_ts"}),
        left_on=at,
        right_on="_g_ts",
        by="tid",
        strategy="backward",
        check_sortedness=False,
    )
    first = groups.group_by("tid").agg(
        pl.col("group").first().alias("_first"), pl.col("group_weight").first().alias("_first_weight")
    )
    return (
        before.join(first, on="tid", how="left")
        .with_columns(
            pl.coalesce("group", "_first", pl.lit(UNKNOWN_GROUP)).alias("group"),
            pl.coalesce("group_weight", "_first_weight", pl.lit(NICE_WEIGHTS[20], pl.Int64)).alias("group_weight"),
        )
        .sort("_row")
        .drop("_row", "_g_ts", "_first", "_first_weight")
    )


def competitors(trace: Trace) -> Competition:
    """Every task's waits in a CPU's queue, with its weight, and each task's weight. A wait begins at a
    switch-out that left the task runnable (on that CPU) or at a wakeup (on its target CPU) and ends at
    the task's next switch-in. Where the task's next switch is one of its own switch-outs the switch-in
    went unseen (a task whose switch-outs sched_switch never shows ran before it: docs/metrics.md): that
    wait's end is not known, and it is left out rather than counted to a later switch; a wakeup of a task
    already waiting (the kernel traces one) starts no second wait: each task's waits stay disjoint.
    Only the waits of tasks that still wanted the CPU after the run they waited for are kept (the run ended
    by preemption, or not before the trace's end): one that ran and then blocked had a fixed amount of work
    (a helper thread's batch), which it got as it would without a culprit, and would take no part of a
    culprit's freed time (docs/gpu-time.md, "What a fix would buy")."""
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "tid", "prio", "next_tid", "voluntary")
    preempted = sw.filter(pl.col("voluntary").eq(False) & (pl.col("tid") != 0)).select(
        "cpu", "tid", pl.col("ts_ns").cast(pl.Int64).alias("wait_start"), weight_of(pl.col("prio")).alias("weight")
    )
    woken = (
        pl.concat([trace.of(kind, "ts_ns", "tid", "target_cpu", "prio") for kind in (Event.WAKEUP, Event.WAKEUP_NEW)])
        .filter(pl.col("tid") != 0)
        .select(
            pl.col("target_cpu").alias("cpu"),
            "tid",
            pl.col("ts_ns").cast(pl.Int64).alias("wait_start"),
            weight_of(pl.col("prio")).alias("weight"),
        )
    )
    starts = pl.concat([preempted, woken.cast(preempted.schema)]).sort("wait_start")
    ins = sw.select(pl.col("next_tid").alias("tid"), pl.col("ts_ns").cast(pl.Int64).alias("wait_end")).sort("wait_end")
    outs = sw.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("next_out")).sort("next_out")
    waits = (
        starts.join_asof(
            ins, left_on="wait_start", right_on="wait_end", by="tid", strategy="forward", check_sortedness=False
        )
        .join_asof(
            outs,
            left_on="wait_start",
            right_on="next_out",
            by="tid",
            strategy="forward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(
            pl.col("wait_end").is_not_null()
            & (pl.col("wait_end") > pl.col("wait_start"))
            & (pl.col("next_out").is_null() | (pl.col("next_out") >= pl.col("wait_end")))
        )
        # one wait a switch-in: from the earliest start that it ended
        .sort("wait_start")
        .unique(["tid", "wait_end"], keep="first", maintain_order=True)
        .sort("wait_end")
        # how the run it waited for ended: blocked (voluntary), or still wanting the CPU (null: never seen
        # to end, it ran on to the end of the recording)
        .join_asof(
            sw.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("run_out"), "voluntary").sort("run_out"),
            left_on="wait_end",
            right_on="run_out",
            by="tid",
            strategy="forward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(~pl.col("voluntary").fill_null(False))
        .sort("wait_start")
        .select("cpu", "tid", "wait_start", "wait_end", "weight")
    )
    weights = (
        sw.filter(pl.col("tid") != 0)
        .sort("ts_ns")
        .group_by("tid")
        .agg(weight_of(pl.col("prio")).last().alias("weight"))
    )
    groups = sched_groups(trace)
    return Competition(_group_at(waits, groups, "wait_start"), weights, groups)


def _queued_weight(waits: pl.DataFrame, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each interval [starts[i], ends[i]), the weight-nanoseconds WAITS spent in it (each wait's weight
    times its overlap with it, summed): the weight waiting, a step function of time, integrated over it."""
    if waits.is_empty() or starts.size == 0:
        return np.zeros(starts.size, np.float64)
    weight = waits["weight"].to_numpy().astype(np.float64)
    times = np.concatenate([waits["wait_start"].to_numpy(), waits["wait_end"].to_numpy()]).astype(np.int64)
    steps = np.concatenate([weight, -weight])
    order = np.argsort(times, kind="stable")
    times, steps = times[order], steps[order]
    waiting = np.cumsum(steps)  # the weight waiting just after each event
    area = np.concatenate([[0.0], np.cumsum(waiting[:-1] * np.diff(times))])  # weight-ns up to each event

    def integral(at: np.ndarray) -> np.ndarray:
        last = np.searchsorted(times, at, side="right") - 1
        k = np.maximum(last, 0)
        return np.where(last >= 0, area[k] + waiting[k] * (at - times[k]), 0.0)

    return integral(ends) - integral(starts)


def _queued_weights(
    queries: pl.DataFrame, waits: pl.DataFrame, group_runs: pl.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """For each piece (QUERIES: cpu, my_group, piece_start, piece_end), the task weight-ns of its launching thread's
    group's waiting tasks (WAITS), and the group weight-ns of the other groups waiting (GROUP_RUNS: each group's
    waits on a CPU merged), on its CPU over the piece."""
    starts, ends = queries["piece_start"].to_numpy(), queries["piece_end"].to_numpy()
    cpus, mine = queries["cpu"].to_numpy(), queries["my_group"].to_numpy()
    in_group = np.zeros(queries.height, np.float64)  # task weight-ns of my group's waiting tasks
    other_groups = np.zeros(queries.height, np.float64)  # group weight-ns of the other groups waiting
    for cpu in np.unique(cpus):
        on_cpu = cpus == cpu
        runs_here = group_runs.filter(pl.col("cpu") == cpu)
        all_groups = _queued_weight(runs_here, starts[on_cpu], ends[on_cpu])
        for group in np.unique(mine[on_cpu]):
            here = on_cpu & (mine == group)
            at = np.flatnonzero(here[on_cpu])
            in_group[here] = _queued_weight(
                waits.filter((pl.col("cpu") == cpu) & (pl.col("group") == group)), starts[here], ends[here]
            )
            other_groups[here] = all_groups[at] - _queued_weight(
                runs_here.filter(pl.col("group") == group), starts[here], ends[here]
            )
    return in_group, other_groups


def _own_waits(queries: pl.DataFrame, waits: pl.DataFrame) -> pl.DataFrame:
    """piece, own: the weight-ns of the launching thread's own waits and its culprit's (where in its group) over
    each piece, on the piece's CPU: in its group's sum, to be taken back out (a task's waits are disjoint, so
    overlaps by task is exact)."""
    return (
        pl.concat(
            [
                overlaps(
                    queries.select("piece", pl.col("me").alias("tid"), "cpu", "my_group", "piece_start", "piece_end"),
                    waits.rename({"cpu": "wait_cpu"}),
                    "tid",
                    PIECES.bounds,
                    WAITS.bounds,
                ),
                overlaps(
                    queries.select(
                        "piece", pl.col("culprit_tid").alias("tid"), "cpu", "my_group", "piece_start", "piece_end"
                    ).drop_nulls("tid"),
                    waits.rename({"cpu": "wait_cpu"}),
                    "tid",
                    PIECES.bounds,
                    WAITS.bounds,
                ),
            ],
            how="diagonal_relaxed",
        )
        .filter((pl.col("wait_cpu") == pl.col("cpu")) & (pl.col("group") == pl.col("my_group")))
        .group_by("piece")
        .agg((pl.col("overlap_ns") * pl.col("weight")).sum().alias("own"))
    )


def with_share(pieces: pl.DataFrame, competition: Competition) -> pl.DataFrame:
    """PIECES (cpu, tid, culprit_tid, piece_start, piece_end, ...) with `share`: the part of each the launching thread
    would have had without its culprit. A fair scheduler splits a CPU's time first among the scheduler groups
    with a task waiting (autogroups, cgroups of the cpu controller), by the groups' weights, then a group's
    part among its waiting tasks by theirs (nice levels): the launching thread's share is its group's weight
    over its own and the other waiting groups' (each group's weight while any of its tasks waits), times its
    weight over its own and its group's other waiting tasks' (weight-time over the piece's length; only
    tasks that wanted more CPU than they got: competitors()). The groups are taken as siblings: a deeper
    cgroup tree's parents are not weighed (docs/gpu-time.md)."""
    if pieces.is_empty():
        return pieces.with_columns(pl.lit(1.0).alias("share"))
    waits = with_groups(competition.waits)
    indexed = pieces.with_row_index("piece")
    queries = (
        indexed.select(
            "piece",
            "cpu",
            pl.col("tid").alias("me"),
            "culprit_tid",
            pl.col("piece_start").cast(pl.Int64),
            pl.col("piece_end").cast(pl.Int64),
        )
        .drop_nulls("cpu")
        .join(competition.weights.rename({"tid": "me", "weight": "my_weight"}), on="me", how="left")
        .with_columns(pl.col("my_weight").fill_null(NICE_WEIGHTS[20]))
    )
    # the launching thread's group when the piece began (not at its last row: an exiting task leaves its
    # autogroup for the root group, kernel/sched/autogroup.c)
    groups = competition.groups if competition.groups is not None else sched_groups_none()
    queries = _group_at(queries.rename({"me": "tid"}), groups, "piece_start").rename(
        {"tid": "me", "group": "my_group", "group_weight": "my_group_weight"}
    )
    if waits.is_empty() or queries.is_empty():
        return indexed.with_columns(pl.lit(1.0).alias("share")).drop("piece")
    # the groups' weights while any of their tasks waits: each group's waits on a CPU merged into one run
    group_runs = merge_intervals(
        waits.select(
            "cpu", "group", "group_weight", pl.col("wait_start").alias("start_ns"), pl.col("wait_end").alias("end_ns")
        ),
        ["cpu", "group", "group_weight"],
    ).rename({"start_ns": "wait_start", "end_ns": "wait_end", "group_weight": "weight"})
    in_group, other_groups = _queued_weights(queries, waits, group_runs)
    own = _own_waits(queries, waits)
    length = pl.col("piece_end") - pl.col("piece_start")
    others = (
        queries.select("piece", "my_weight", "my_group_weight", "piece_start", "piece_end")
        .with_columns(pl.Series("in_group", in_group), pl.Series("other_groups", other_groups))
        .join(own, on="piece", how="left")
        .select(
            "piece",
            (
                (pl.col("in_group") - pl.col("own").fill_null(0)).clip(lower_bound=0) / length / pl.col("my_weight")
            ).alias("others"),
            (pl.col("other_groups").clip(lower_bound=0) / length / pl.col("my_group_weight")).alias("groups"),
        )
    )
    return (
        indexed.join(others, on="piece", how="left")
        .with_columns(
            (1.0 / (1.0 + pl.col("others").fill_null(0.0)) / (1.0 + pl.col("groups").fill_null(0.0))).alias("share")
        )
        .drop("piece", "others", "groups")
    )


# a gap's host part: from the gap's start to when the call that ended it returned (_host_parts)
HOST_PART = ("gap_start", "host_end")


def _host_parts(gaps: pl.DataFrame) -> pl.DataFrame:
    """The part of each `between` gap before its work's call returned: the thread's time."""
    return (
        gaps.filter(pl.col("kind") == "between")
        .with_row_index("gap")
        .with_columns(
            pl.min_horizontal(
                "gap_end", pl.max_horizontal("gap_start", pl.col("call_end_ns").fill_null(pl.col("gap_start")))
            ).alias("host_end")
        )
    )


def _recause(named: pl.DataFrame, measurement: Measurement) -> pl.DataFrame:
    """NAMED's waits (cause preempted or runqueue; culprit_pid, culprit_tid: who ran on the CPU) that no task is to
    blame for: where the CPU ran its idle task the thread waited for the CPU to wake (wakeup_latency, no culprit);
    where launchgap's own task ran it is the cost of measuring (measurement, its task named)."""
    waiting = pl.col("cause").is_in([PREEMPTED, RUNQUEUE])
    idle = waiting & (pl.col("culprit_pid") == 0)
    ours = waiting & ~idle & measurement.is_ours(pl.col("culprit_pid"), pl.col("culprit_tid"))
    return named.with_columns(
        pl.when(idle)
        .then(pl.lit(WAKEUP_LATENCY))
        .when(ours)
        .then(pl.lit(MEASUREMENT))
        .otherwise(pl.col("cause"))
        .alias("cause"),
        pl.when(idle).then(pl.lit(None, pl.UInt32)).otherwise(pl.col("culprit_pid")).alias("culprit_pid"),
        pl.when(idle).then(pl.lit(None, pl.String)).otherwise(pl.col("culprit")).alias("culprit"),
    )


def _host_pieces(host: pl.DataFrame, segments: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The gaps' host parts with a thread that ended them (HOST: _host_parts) as queries (gap, pid, device_id,
    tid, call_start_ns, call_end_ns, gap_start, host_end), and their pieces (interval_tables.PIECES): each part
    of a query one of its thread's SEGMENTS covers, with its state, piece_start, piece_end."""
    queries = host.filter(pl.col("host_end") > pl.col("gap_start") & pl.col("tid").is_not_null()).select(
        "gap", "pid", "device_id", "tid", "call_start_ns", "call_end_ns", "gap_start", "host_end"
    )
    seg = segments.select("tid", "cpu", pl.col("state").cast(pl.String), *SEGMENTS.bounds)
    pieces = overlaps(queries, seg, "tid", HOST_PART, SEGMENTS.bounds).with_columns(
        pl.max_horizontal("gap_start", "segment_start").alias("piece_start"),
        pl.min_horizontal("host_end", "segment_end").alias("piece_end"),
    )
    return queries, pieces


def _by_cause(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The attribution's PARTS (each with some of IDLE_COLUMNS, ns, and recoverable where a share applies) as
    one frame: ns and recoverable_ns summed by gap owner, cause, culprit and thread, largest first."""
    every = pl.concat(
        [
            o.select(
                [pl.col(c).cast(t) if c in o.columns else pl.lit(None, t).alias(c) for c, t in IDLE_COLUMNS.items()]
                + [
                    (pl.col("recoverable") if "recoverable" in o.columns else pl.col("ns"))
                    .cast(pl.Float64)
                    .alias("recoverable")
                ]
            )
            for o in parts
        ]
    )
    return (
        every.filter(pl.col("ns") > 0)
        .group_by("pid", "device_id", "cause", "culprit_pid", "culprit", "culprit_cgroup", "tid")
        .agg(pl.col("ns").sum(), pl.col("recoverable").sum().round().cast(pl.Int64).alias("recoverable_ns"))
        .sort(["ns", "pid", "cause", "culprit"], descending=[True, False, False, False], nulls_last=True)
    )


def attribute(
    gaps: pl.DataFrame,
    segments: pl.DataFrame,
    runs: pl.DataFrame,
    irqs: pl.DataFrame,
    competition: Competition = NO_COMPETITION,
    measurement: Measurement = NOTHING,
) -> pl.DataFrame:
    """Each gap's nanoseconds by cause (and culprit): pid, device_id, cause, culprit_pid, culprit,
    culprit_cgroup (the culprit's cgroup where RUNS carry run_cgroup: analysis/cgroups.py), tid, ns, and
    recoverable_ns (what taking the culprit away would give back: with_share). Sums to
    the gaps' total exactly.

    segments: thread_segments (tid, cpu, state, segment_start, segment_end); runs: cpu_runs (cpu, run_start,
    run_end, run_pid, run_tid, run_comm); irqs: irq_intervals (tid, name, irq_start, irq_end, ...);
    competition: competitors()."""
    out = []
    # outside the process's GPU work
    outside = gaps.filter(pl.col("kind") != "between")
    out.append(
        outside.select(
            "pid", "device_id", pl.col("kind").alias("cause"), (pl.col("gap_end") - pl.col("gap_start")).alias("ns")
        )
    )
    host = _host_parts(gaps)
    # after the call returned (or with no call known: all of it unknown) the GPU had the work
    out.append(
        host.select(
            "pid",
            "device_id",
            pl.when(pl.col("call_end_ns").is_null()).then(pl.lit(UNKNOWN)).otherwise(pl.lit(GPU_SIDE)).alias("cause"),
            (pl.col("gap_end") - pl.col("host_end")).alias("ns"),
        )
    )
    queries, pieces = _host_pieces(host, segments)
    # the host part's time the thread's segments do not cover: its state is not known
    covered = pieces.group_by("gap").agg(pl.col("overlap_ns").sum().alias("covered"))
    uncovered = queries.join(covered, on="gap", how="left").select(
        "pid",
        "device_id",
        "tid",
        pl.lit(UNKNOWN).alias("cause"),
        (pl.col("host_end") - pl.col("gap_start") - pl.col("covered").fill_null(0)).alias("ns"),
    )
    out.append(uncovered)
    out.extend(_waiting(pieces, runs, competition, measurement))
    out.extend(_running(pieces, irqs))
    out.append(
        pieces.filter(pl.col("state").is_in([ThreadState.BLOCKED, ThreadState.OFFCPU])).select(
            "pid",
            "device_id",
            "tid",
            pl.lit(BLOCKED).alias("cause"),
            (pl.col("piece_end") - pl.col("piece_start")).alias("ns"),
        )
    )
    out.append(
        pieces.filter(pl.col("state").is_in([ThreadState.UNKNOWN, ThreadState.DEAD])).select(
            "pid",
            "device_id",
            "tid",
            pl.lit(UNKNOWN).alias("cause"),
            (pl.col("piece_end") - pl.col("piece_start")).alias("ns"),
        )
    )
    return _by_cause(out)


def _run_columns(runs: pl.DataFrame) -> pl.DataFrame:
    """RUNS' columns a culprit is named from, run_cgroup null where the runs carry no cgroups."""
    cgroup = pl.col("run_cgroup") if "run_cgroup" in runs.columns else pl.lit(None, pl.Int32).alias("run_cgroup")
    return runs.select("cpu", "run_start", "run_end", "run_pid", "run_tid", "run_comm", cgroup)


def _waiting(
    pieces: pl.DataFrame, runs: pl.DataFrame, competition: Competition, measurement: Measurement = NOTHING
) -> list[pl.DataFrame]:
    """Preempted and run-queue time, by who ran on the thread's CPU meanwhile (the rest: nobody known); where
    that was the CPU's idle task or launchgap's own, by that cause instead (_recause)."""
    waiting = pieces.filter(pl.col("state").is_in([PREEMPTED, RUNQUEUE])).with_row_index("w")
    queries = waiting.select("w", "cpu", "pid", "device_id", "tid", "state", "piece_start", "piece_end").drop_nulls(
        "cpu"
    )
    ran = overlaps(queries, _run_columns(runs).drop_nulls("cpu"), "cpu", PIECES.bounds, RUNS.bounds).filter(
        pl.col("run_tid") != pl.col("tid")
    )
    named = ran.select(
        "pid",
        "device_id",
        "tid",
        "cpu",
        pl.col("state").alias("cause"),
        pl.col("run_pid").alias("culprit_pid"),
        pl.col("run_tid").alias("culprit_tid"),
        pl.col("run_cgroup").alias("culprit_cgroup"),
        pl.when(pl.col("run_pid") == 0).then(pl.lit("swapper")).otherwise(pl.col("run_comm")).alias("culprit"),
        pl.col("overlap_ns").alias("ns"),
        pl.max_horizontal("piece_start", "run_start").alias("piece_start"),
        pl.min_horizontal("piece_end", "run_end").alias("piece_end"),
    )
    named = with_share(_recause(named, measurement), competition).with_columns(
        (pl.col("ns") * pl.col("share")).alias("recoverable")
    )
    accounted = ran.group_by("w").agg(pl.col("overlap_ns").sum().alias("named"))
    rest = waiting.join(accounted, on="w", how="left").select(
        "pid",
        "device_id",
        "tid",
        pl.col("state").alias("cause"),
        (pl.col("piece_end") - pl.col("piece_start") - pl.col("named").fill_null(0)).alias("ns"),
    )
    return [named, rest]


def _covered_by(queries: pl.DataFrame, bounds: tuple[str, str], union: pl.DataFrame) -> pl.DataFrame:
    """r, ns: how much of each query (r, tid, and its BOUNDS) the disjoint UNION intervals (tid, start_ns,
    end_ns) cover."""
    if queries.is_empty() or union.is_empty():
        return pl.DataFrame(schema={"r": pl.UInt32, "ns": pl.Int64})
    return (
        overlaps(queries, union, "tid", bounds, ("start_ns", "end_ns"))
        .group_by("r")
        .agg(pl.col("overlap_ns").sum().alias("ns"))
    )


# the part of a running piece inside the driver call that made the gap's work (_running)
IN_CALL = ("in_call_start", "in_call_end")


def _running(pieces: pl.DataFrame, irqs: pl.DataFrame) -> list[pl.DataFrame]:
    """Running time: interrupts that ran on the thread meanwhile (by name), the launch call's own time
    (inside the driver call that made the work), and the app's host work; each nanosecond once (nested
    interrupts overlap one another: their union is what the thread lost)."""
    running = (
        pieces.filter(pl.col("state") == ThreadState.RUNNING)
        .with_row_index("r")
        .with_columns(
            pl.max_horizontal("piece_start", pl.col("call_start_ns")).alias("in_call_start"),
            pl.min_horizontal("piece_end", pl.col("call_end_ns")).alias("in_call_end"),
        )
    )
    running = running.with_columns(
        pl.when(pl.col("in_call_end") > pl.col("in_call_start"))
        .then(pl.col("in_call_end") - pl.col("in_call_start"))
        .otherwise(0)
        .fill_null(0)
        .alias("call_ns")
    )
    whole = running.select("r", "tid", *PIECES.bounds)
    in_call = running.filter(pl.col("call_ns") > 0).select("r", "tid", *IN_CALL)
    named = irqs.select(
        "tid",
        pl.col("irq_start").alias("start_ns"),
        pl.col("irq_end").alias("end_ns"),
        pl.col("name").fill_null(pl.col("kind")).alias("name"),
    )
    union = (
        merge_intervals(named.select("tid", "start_ns", "end_ns"), ["tid"]) if not named.is_empty() else named.head(0)
    )
    lost = _covered_by(whole, PIECES.bounds, union).rename({"ns": "irq_ns"})
    lost_in_call = _covered_by(in_call, IN_CALL, union).rename({"ns": "irq_call_ns"})
    rest = (
        running.join(lost, on="r", how="left")
        .join(lost_in_call, on="r", how="left")
        .with_columns(pl.col("irq_ns").fill_null(0), pl.col("irq_call_ns").fill_null(0))
    )
    host = rest.select(
        "pid",
        "device_id",
        "tid",
        pl.lit(HOST_WORK).alias("cause"),
        (
            pl.col("piece_end") - pl.col("piece_start") - pl.col("call_ns") - pl.col("irq_ns") + pl.col("irq_call_ns")
        ).alias("ns"),
    )
    call = rest.select(
        "pid",
        "device_id",
        "tid",
        pl.lit(LAUNCH_CALL).alias("cause"),
        (pl.col("call_ns") - pl.col("irq_call_ns")).alias("ns"),
    )
    return [host, call, _irqs_by_name(rest, whole, named)]


def _named_overlaps(queries: pl.DataFrame, bounds: tuple[str, str], named: pl.DataFrame) -> pl.DataFrame:
    """QUERIES' overlaps with the interrupts NAMED (tid, start_ns, end_ns, name), a row per query, name and
    overlap. overlaps() wants each key's intervals disjoint, and nested interrupts of different names are not: an
    interrupt begun before a query was missed where one nested in it began later (seen on a recording: 5,099 ns
    of a NET_RX went to no cause). Each name's own intervals, merged, are disjoint: one search a name."""
    by_name = merge_intervals(named.select("tid", "name", "start_ns", "end_ns"), ["tid", "name"])
    return pl.concat(
        [
            overlaps(queries, own.drop("name"), "tid", bounds, ("start_ns", "end_ns")).with_columns(
                pl.lit(name).alias("name")
            )
            for (name,), own in by_name.group_by(["name"], maintain_order=True)
        ]
    )


def _irqs_by_name(rest: pl.DataFrame, whole: pl.DataFrame, named: pl.DataFrame) -> pl.DataFrame:
    """Each piece's interrupt time (the union's) split over the interrupts' names in proportion to
    their own overlap with it, rounded so that each piece's total stays exact."""
    empty = pl.DataFrame(
        schema={
            "pid": pl.UInt32,
            "device_id": pl.UInt32,
            "tid": pl.UInt32,
            "cause": pl.String,
            "culprit_pid": pl.UInt32,
            "culprit": pl.String,
            "ns": pl.Int64,
        }
    )
    if named.is_empty() or whole.is_empty():
        return empty
    raw = _named_overlaps(whole, PIECES.bounds, named).group_by("r", "name").agg(pl.col("overlap_ns").sum())
    if raw.is_empty():
        return empty
    shares = (
        raw.join(rest.select("r", "pid", "device_id", "tid", "irq_ns"), on="r")
        .with_columns((pl.col("overlap_ns") * pl.col("irq_ns") // pl.col("overlap_ns").sum().over("r")).alias("ns"))
        .sort("r", "overlap_ns", "name", descending=[False, True, False])
    )
    short = pl.col("irq_ns") - pl.col("ns").sum().over("r")
    first = pl.int_range(pl.len()).over("r") == 0
    shares = shares.with_columns(pl.when(first).then(pl.col("ns") + short).otherwise(pl.col("ns")).alias("ns"))
    return shares.select(
        "pid",
        "device_id",
        "tid",
        pl.lit(IRQ).alias("cause"),
        pl.lit(0, pl.UInt32).alias("culprit_pid"),
        pl.col("name").alias("culprit"),
        "ns",
    )


def gpu_idle(
    trace: Trace,
    segments: pl.DataFrame,
    runs: pl.DataFrame,
    irqs: pl.DataFrame,
    span: tuple[int, int],
    measurement: Measurement = NOTHING,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(work, gaps, idle by cause): the GPU work, its idle gaps, and their time by cause and culprit."""
    work = gpu_work(trace)
    gaps = idle_gaps(work, *span)
    return work, gaps, attribute(gaps, segments, runs, irqs, competitors(trace), measurement)


def busy_ns(work: pl.DataFrame) -> pl.DataFrame:
    """Per (pid, device): when the GPU was busy, in total, and the span of its work."""
    busy = merge_intervals(work.select("pid", "device_id", "start_ns", "end_ns"), ["pid", "device_id"])
    return busy.group_by("pid", "device_id").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"),
        pl.col("start_ns").min().alias("first_ns"),
        pl.col("end_ns").max().alias("last_ns"),
    )


# --- without GPU activity: bounds from what the host saw (docs/gpu-time.md) -------------------------

# the syncs after which everything the calling thread launched has finished (schema/trace.toml's
# names.drain_api, which the monitor's kernel side counts by too)
DRAIN_APIS = DRAIN_API_NAMES
# fewer steps than this say too little about what a step takes undisturbed
MIN_STEPS = 4
# what a thread woken from a blocking sync by the GPU's finish runs before the call returns, at most: cudasim's
# return path, recorded beside a hog under stress-ng, ran 14 us at the median and 47 us at most; a thread that
# ran longer after its last wakeup in the sync was spinning, so that wakeup was not the GPU's
RETURN_PATH_NS = 100_000


def delays(segments: pl.DataFrame, irqs: pl.DataFrame, tids: list[int]) -> pl.DataFrame:
    """The launching threads' interference: tid, delay_start, delay_end, cause (preempted, runqueue: the
    segments; irq: interrupts that ran on the thread while it ran, their union), one row each."""
    waiting = segments.filter(
        pl.col("tid").is_in(tids) & pl.col("state").cast(pl.String).is_in([PREEMPTED, RUNQUEUE])
    ).select(
        "tid",
        "cpu",
        pl.col("segment_start").alias("delay_start"),
        pl.col("segment_end").alias("delay_end"),
        pl.col("state").cast(pl.String).alias("cause"),
    )
    running = segments.filter(pl.col("tid").is_in(tids) & (pl.col("state").cast(pl.String) == ThreadState.RUNNING))
    mine = irqs.filter(pl.col("tid").is_in(tids)).select(
        "tid", pl.col("irq_start").alias("start_ns"), pl.col("irq_end").alias("end_ns")
    )
    if mine.is_empty() or running.is_empty():
        return waiting
    union = merge_intervals(mine, ["tid"])
    hits = overlaps(
        running.select("tid", "cpu", *SEGMENTS.bounds), union, "tid", SEGMENTS.bounds, ("start_ns", "end_ns")
    )
    irq = hits.select(
        "tid",
        "cpu",
        pl.max_horizontal("segment_start", "start_ns").alias("delay_start"),
        pl.min_horizontal("segment_end", "end_ns").alias("delay_end"),
        pl.lit(IRQ).alias("cause"),
    )
    return pl.concat([waiting, irq], how="vertical_relaxed").sort("tid", "delay_start")


def _complement(spans: pl.DataFrame, within: pl.DataFrame, key: str) -> pl.DataFrame:
    """The parts of each WITHIN interval (key, within_start, within_end) that SPANS (key, start, end; disjoint, each
    inside its interval) leave uncovered: key, start, end."""
    edges = pl.concat(
        [
            within.select(
                key,
                pl.col("within_start").alias("start"),
                pl.col("within_start").alias("end"),
                "within_start",
                "within_end",
            ),
            spans.select(key, "start", "end", "within_start", "within_end"),
            within.select(
                key,
                pl.col("within_end").alias("start"),
                pl.col("within_end").alias("end"),
                "within_start",
                "within_end",
            ),
        ]
    ).sort(key, "within_start", "start", "end", maintain_order=True)
    return (
        edges.with_columns(
            pl.col("end").alias("uncovered_start"),
            pl.col("start").shift(-1).over(key, "within_start").alias("uncovered_end"),
        )
        .filter(pl.col("uncovered_end").is_not_null() & (pl.col("uncovered_end") > pl.col("uncovered_start")))
        .select(key, pl.col("uncovered_start").alias("start"), pl.col("uncovered_end").alias("end"))
    )


def _who_ran(waiting: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Who ran on each waiting delay's CPU while it lasted (WAITING: d, cpu, tid, delay_start, delay_end), the waiting
    thread aside: d, cpu, start, end, culprit_pid, culprit_tid, culprit_cgroup, culprit (the idle task as
    swapper)."""
    ran = overlaps(
        waiting.select("d", "cpu", "tid", *DELAYS.bounds).drop_nulls("cpu"),
        _run_columns(runs).drop_nulls("cpu"),
        "cpu",
        DELAYS.bounds,
        RUNS.bounds,
    )
    return ran.filter(pl.col("run_tid") != pl.col("tid")).select(
        "d",
        "cpu",
        pl.max_horizontal("delay_start", "run_start").alias("start"),
        pl.min_horizontal("delay_end", "run_end").alias("end"),
        pl.col("run_pid").alias("culprit_pid"),
        pl.col("run_tid").alias("culprit_tid"),
        pl.col("run_cgroup").alias("culprit_cgroup"),
        pl.when(pl.col("run_pid") == 0).then(pl.lit("swapper")).otherwise(pl.col("run_comm")).alias("culprit"),
    )


def _interrupt_pieces(interrupts: pl.DataFrame, irqs: pl.DataFrame) -> pl.DataFrame:
    """The delays that are interrupts (d, tid, delay_start, delay_end, cause), each named by the interrupt that overlaps
    it most (IRQS: tid, irq_start, irq_end, name, kind), as pieces: no culprit process, a share of one."""
    names = irqs.select(
        "tid",
        pl.col("irq_start").alias("start_ns"),
        pl.col("irq_end").alias("end_ns"),
        pl.col("name").fill_null(pl.col("kind")).alias("name"),
    )
    best = (
        _named_overlaps(interrupts.select("d", "tid", *DELAYS.bounds), DELAYS.bounds, names)
        .sort("overlap_ns", "name", descending=[True, False])
        .unique("d", keep="first", maintain_order=True)
        .select("d", "name")
    )
    return interrupts.join(best, on="d", how="left").select(
        "tid",
        pl.col("delay_start").alias("start"),
        pl.col("delay_end").alias("end"),
        "cause",
        pl.lit(0, pl.UInt32).alias("culprit_pid"),
        pl.col("name").alias("culprit"),
        pl.lit(None, pl.Int32).alias("culprit_cgroup"),
        pl.lit(1.0).alias("share"),
    )


def delay_pieces(
    segments: pl.DataFrame,
    runs: pl.DataFrame,
    irqs: pl.DataFrame,
    threads: pl.DataFrame,
    competition: Competition = NO_COMPETITION,
    measurement: Measurement = NOTHING,
) -> pl.DataFrame:
    """The launching threads' interference as disjoint intervals, each with its culprit: pid, tid,
    delay_start, delay_end, cause, culprit_pid, culprit, culprit_cgroup (where RUNS carry run_cgroup). Preempted and
    run-queue time by who ran on the thread's CPU meanwhile (the rest with no culprit); interrupts by
    the name of the one that overlaps most. THREADS: pid, tid of the launching threads."""
    tids = threads["tid"].to_list()
    raw = delays(segments, irqs, tids).with_row_index("d")
    waiting = raw.filter(pl.col("cause") != IRQ)
    ran = _who_ran(waiting, runs)
    named = _recause(
        ran.join(
            waiting.select(
                "d",
                "tid",
                "cause",
                pl.col("delay_start").alias("within_start"),
                pl.col("delay_end").alias("within_end"),
            ),
            on="d",
        ),
        measurement,
    )
    nobody = _complement(
        named.select("d", "start", "end", "within_start", "within_end"),
        waiting.select("d", pl.col("delay_start").alias("within_start"), pl.col("delay_end").alias("within_end")),
        "d",
    ).join(waiting.select("d", "tid", "cause"), on="d")
    named = with_share(named.rename({"start": "piece_start", "end": "piece_end"}), competition).rename(
        {"piece_start": "start", "piece_end": "end"}
    )
    parts = [
        named.select("tid", "start", "end", "cause", "culprit_pid", "culprit", "culprit_cgroup", "share"),
        nobody.select(
            "tid",
            "start",
            "end",
            "cause",
            pl.lit(None, pl.UInt32).alias("culprit_pid"),
            pl.lit(None, pl.String).alias("culprit"),
            pl.lit(None, pl.Int32).alias("culprit_cgroup"),
            pl.lit(1.0).alias("share"),
        ),
    ]
    interrupts = raw.filter(pl.col("cause") == IRQ)
    if not interrupts.is_empty():
        parts.append(_interrupt_pieces(interrupts, irqs))
    pieces = pl.concat(
        [
            p.with_columns(
                pl.col("tid").cast(pl.UInt32),
                pl.col("culprit_pid").cast(pl.UInt32),
                pl.col("culprit_cgroup").cast(pl.Int32),
            )
            for p in parts
        ]
    )
    return (
        pieces.join(threads.select(pl.col("pid").cast(pl.UInt32), pl.col("tid").cast(pl.UInt32)), on="tid")
        .select(
            "pid",
            "tid",
            pl.col("start").alias("delay_start"),
            pl.col("end").alias("delay_end"),
            "cause",
            "culprit_pid",
            "culprit",
            "culprit_cgroup",
            "share",
        )
        .sort("tid", "delay_start")
    )


def _clip(frame: pl.DataFrame, lo: str, hi: str, start: str = "delay_start", end: str = "delay_end") -> pl.DataFrame:
    """FRAME's [start, end) cut to its row's [lo, hi), empty ones dropped."""
    return frame.with_columns(pl.max_horizontal(start, lo).alias(start), pl.min_horizontal(end, hi).alias(end)).filter(
        pl.col(end) > pl.col(start)
    )


def _drained_windows(launches: pl.DataFrame, drains: pl.DataFrame) -> pl.DataFrame:
    """Per process, when its GPU had provably nothing to do: every launching thread of the process had,
    since its last launch, come out of a sync that waits for its work. pid, window_start, window_end, tid (the thread
    whose launch ended the window)."""
    # each drain exit of a thread, and the thread's next launch after it
    exits = drains.select("pid", "tid", pl.col("exit_ns").alias("ts")).sort("ts")
    nexts = launches.select("pid", "tid", pl.col("ts_ns").alias("next_launch")).sort("next_launch")
    per_thread = exits.join_asof(
        nexts, left_on="ts", right_on="next_launch", by=["pid", "tid"], strategy="forward", check_sortedness=False
    )
    # the thread was drained from the exit to its next launch (drained to the end when none follows)
    per_thread = per_thread.with_columns(pl.col("next_launch").fill_null(pl.col("ts")).alias("drained_end")).filter(
        pl.col("drained_end") > pl.col("ts")
    )
    threads = launches.group_by("pid").agg(pl.col("tid").n_unique().alias("threads"))
    # a process is drained where all its launching threads are: sweep each process's drained intervals
    events = pl.concat(
        [
            per_thread.select("pid", pl.col("ts").alias("t"), pl.lit(1).alias("step")),
            per_thread.select("pid", pl.col("drained_end").alias("t"), pl.lit(-1).alias("step")),
        ]
    ).sort("pid", "t", "step")
    events = events.with_columns(pl.col("step").cum_sum().over("pid").alias("drained")).join(threads, on="pid")
    windows = (
        events.with_columns(pl.col("t").shift(-1).over("pid").alias("window_end"))
        .filter(
            (pl.col("drained") == pl.col("threads"))
            & pl.col("window_end").is_not_null()
            & (pl.col("window_end") > pl.col("t"))
        )
        .select("pid", pl.col("t").alias("window_start"), "window_end")
    )
    # the thread whose launch ended each window
    enders = launches.select("pid", pl.col("ts_ns").alias("window_end"), "tid").unique(
        ["pid", "window_end"], keep="first"
    )
    return windows.join(enders, on=["pid", "window_end"], how="left")


def _work_region(launches: pl.DataFrame, syncs: pl.DataFrame) -> pl.DataFrame:
    """pid, tid, lo, hi: each launching thread's first GPU work (a launch, or a copy before it) to its last (a
    launch, or a copy after it)."""
    sync_span = syncs.group_by("pid", "tid").agg(
        pl.col("ts_ns").min().cast(pl.Int64).alias("first_sync"),
        (pl.col("ts_ns") + pl.col("duration_ns")).max().cast(pl.Int64).alias("last_sync"),
    )
    return (
        launches.group_by("pid", "tid")
        .agg(pl.col("ts_ns").min().alias("lo"), pl.col("ts_ns").max().alias("hi"))
        .join(sync_span, on=["pid", "tid"], how="left")
        .with_columns(
            pl.min_horizontal("lo", pl.col("first_sync").fill_null(pl.col("lo"))).alias("lo"),
            pl.max_horizontal("hi", pl.col("last_sync").fill_null(pl.col("hi"))).alias("hi"),
        )
    )


def host_bounds(
    launches: pl.DataFrame,
    syncs: pl.DataFrame,
    delay_pieces: pl.DataFrame,
    launch_times: dict[int, np.ndarray] | None = None,
    wakeups: pl.DataFrame | None = None,
) -> dict:
    """Without GPU activity: lower and upper bounds of the GPU idle the launching threads' interference
    caused, from the host's launches, syncs and thread states (docs/gpu-time.md).

    launches: ts_ns, pid, tid; syncs: ts_ns, duration_ns, pid, tid, api; delay_pieces: tid, pid,
    delay_start, delay_end, cause, culprit_pid, culprit, culprit_cgroup (one launching thread's interference, by culprit).
    launch_times: every launch time of each launching thread (for steps that repeat launch for launch);
    wakeups: ts_ns, tid of the launching threads' wakeups.
    Returns {low_ns, high_ns, culprits: frame(cause, culprit_pid, culprit, culprit_cgroup, low_ns, high_ns,
    rec_low, rec_high),
    steps, refined, note}."""
    launches = launches.with_columns(pl.col("ts_ns").cast(pl.Int64))
    region = _work_region(launches, syncs)
    # a delay costs the GPU at most its own length, and only while its thread still had launches to make
    inside = _clip(delay_pieces.join(region, on=["pid", "tid"]), "lo", "hi")
    inside = inside.with_columns((pl.col("delay_end") - pl.col("delay_start")).alias("ns"))
    drains = (
        syncs.filter(pl.col("api").is_in(DRAIN_APIS))
        .select(
            "pid",
            "tid",
            pl.col("ts_ns").cast(pl.Int64),
            (pl.col("ts_ns") + pl.col("duration_ns")).cast(pl.Int64).alias("exit_ns"),
        )
        .sort("exit_ns")
    )
    windows = _drained_windows(launches, drains)
    # in a window the GPU is idle until the first launch: the delay of the thread that made it is idle it caused
    low_pieces = _window_delays(windows, inside)
    keys = ["cause", "culprit_pid", "culprit", "culprit_cgroup"]
    culprits = (
        inside.group_by(keys)
        .agg(pl.col("ns").sum().alias("high_ns"), (pl.col("ns") * pl.col("share")).sum().alias("rec_high"))
        .join(
            low_pieces.group_by(keys).agg(
                pl.col("ns").sum().alias("low_ns"), (pl.col("ns") * pl.col("share")).sum().alias("rec_low")
            ),
            on=keys,
            how="left",
            nulls_equal=True,
        )
        .with_columns(
            pl.col("low_ns").fill_null(0),
            pl.col("rec_low").fill_null(0.0).round().cast(pl.Int64),
            pl.col("rec_high").round().cast(pl.Int64),
        )
    )
    low, high = int(low_pieces["ns"].sum() or 0), int(inside["ns"].sum() or 0)
    aligned = _aligned(launches, drains, inside, launch_times, wakeups)
    if aligned is not None:
        low = max(low, min(high, aligned[0]))
        note = f"the lower bound from {aligned[1]} steps that repeat launch for launch"
    else:
        note = (
            "the lower bound from the delays right after syncs only (the steps do not repeat launch for launch, "
            "or a process launches from several threads)"
        )
    steps = aligned[1] if aligned else 0
    return {
        "low_ns": low,
        "high_ns": max(high, low),
        "culprits": culprits.sort("high_ns", descending=True),
        "steps": steps,
        "note": note,
        "region": region.select("pid", "tid", "lo", "hi"),
        "inside": inside,
        "drains": drains,
    }


def _aligned(
    launches: pl.DataFrame,
    drains: pl.DataFrame,
    inside: pl.DataFrame,
    launch_times: dict[int, np.ndarray] | None,
    wakeups: pl.DataFrame | None,
    waits: pl.DataFrame | None = None,
) -> tuple[int, int] | None:
    """aligned_lower_bound over the launching threads, where each process has one (else None); INSIDE the delays
    to take out, WAITS every delay of the threads (INSIDE where not given): when they were not running."""
    if launch_times is None or wakeups is None:
        return None
    threads = launches.select("pid", "tid").unique()
    if threads.is_empty() or threads["pid"].n_unique() != threads.height:
        return None
    total, steps = 0, 0
    waits = inside if waits is None else waits
    for _pid, tid in threads.iter_rows():
        mine = inside.filter(pl.col("tid") == tid)
        waited = waits.filter(pl.col("tid") == tid)
        found = aligned_lower_bound(
            launch_times.get(tid, np.zeros(0, np.int64)),
            drains.filter(pl.col("tid") == tid),
            np.sort(wakeups.filter(pl.col("tid") == tid)["ts_ns"].to_numpy().astype(np.int64)),
            mine["delay_start"].to_numpy(),
            mine["delay_end"].to_numpy(),
            (waited["delay_start"].to_numpy(), waited["delay_end"].to_numpy()),
        )
        if found is None:
            return None
        total, steps = total + found[0], steps + found[1]
    return total, steps


def launch_times(trace: Trace, tids: list[int]) -> dict[int, np.ndarray]:
    """Every launch time of each of TIDS (8 bytes a launch), read a few segments at a time."""
    parts: dict[int, list[np.ndarray]] = {}
    for chunk in trace.in_time_order(Event.LAUNCH, "ts_ns", "tid"):
        for (tid,), mine in chunk.filter(pl.col("tid").is_in(tids)).group_by("tid"):
            parts.setdefault(tid, []).append(mine["ts_ns"].to_numpy().astype(np.int64))
    return {tid: np.concatenate(p) for tid, p in parts.items()}


def _window_delays(windows: pl.DataFrame, inside: pl.DataFrame) -> pl.DataFrame:
    """The delays of each window's ending thread inside the window: cause, culprit_pid, culprit, ns, window_start."""
    if windows.is_empty() or inside.is_empty():
        return pl.DataFrame(
            schema={
                "pid": pl.UInt32,
                "cause": pl.String,
                "culprit_pid": pl.UInt32,
                "culprit": pl.String,
                "culprit_cgroup": pl.Int32,
                "ns": pl.Int64,
                "share": pl.Float64,
                "window_start": pl.Int64,
            }
        )
    pairs = overlaps(
        windows.select(pl.col("tid"), "pid", *WINDOWS.bounds),
        inside.select("tid", "cause", "culprit_pid", "culprit", "culprit_cgroup", "share", *DELAYS.bounds),
        "tid",
        WINDOWS.bounds,
        DELAYS.bounds,
    )
    return pairs.select(
        "pid",
        "cause",
        "culprit_pid",
        "culprit",
        "culprit_cgroup",
        pl.col("overlap_ns").alias("ns"),
        "share",
        "window_start",
    )


# --- the report's section ------------------------------------------------------------------------


def _steps(syncs: pl.DataFrame, landmarks: pl.DataFrame) -> int:
    """The app's steps: on each launching thread, the drain syncs that end some launches made since its previous
    drain (a decode loop's tokens, one each). A drain before the thread's first launch (a start-up copy) or right
    after another ends nothing. LANDMARKS: each launching thread's first launch and its first after each of its
    drains (launch_landmarks)."""
    drains = (
        syncs.filter(pl.col("api").is_in(DRAIN_APIS))
        .join(landmarks.select("tid").unique(), on="tid")
        .select(
            "tid",
            pl.col("ts_ns").cast(pl.Int64).alias("entry_ns"),
            (pl.col("ts_ns") + pl.col("duration_ns")).cast(pl.Int64).alias("exit_ns"),
        )
        .sort("tid", "entry_ns")
        .with_columns(pl.col("exit_ns").shift(1).over("tid").fill_null(-1).alias("since"))
    )
    if drains.is_empty():
        return 0
    # the thread's first launch after the previous drain's exit (after nothing: its first), if one was made
    firsts = landmarks.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("first_launch_ns")).sort("first_launch_ns")
    ended = (
        drains.sort("since")
        .join_asof(
            firsts,
            left_on="since",
            right_on="first_launch_ns",
            by="tid",
            strategy="forward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(pl.col("first_launch_ns").is_not_null() & (pl.col("first_launch_ns") < pl.col("entry_ns")))
    )
    return ended.height


def _inside_active(pieces: pl.DataFrame, active: pl.DataFrame) -> int:
    """The interference PIECES (pid, delay_start, delay_end, cause) hold inside each process's ACTIVE span (pid, lo, hi)."""
    inside = _clip(pieces.filter(pl.col("cause").is_in(INTERFERENCE)).join(active, on="pid"), "lo", "hi")
    return int((inside["delay_end"] - inside["delay_start"]).sum() or 0)


def _probe_estimate(trace: Trace, gaps: pl.DataFrame, launching: pl.DataFrame) -> tuple[int | None, int | None]:
    """The probes' share of the launch calls' GPU idle, estimated: in each gap that a launch call ends, the part of
    the call inside the gap, at most what that launch's probes cost (measurement.probe_ns_per_launch). Returns
    (estimate, the largest cost a launch's probes have); (None, None) where the trace reports no probes."""
    per_api = probe_ns_per_launch(trace)
    if not per_api:
        return None, None
    most = max(per_api.values())
    host = _host_parts(gaps).filter(
        pl.col("tid").is_in(launching["tid"].implode()) & pl.col("call_start_ns").is_not_null()
    )
    in_call = (pl.min_horizontal("host_end", "call_end_ns") - pl.max_horizontal("gap_start", "call_start_ns")).clip(0)
    return int(host.select(pl.min_horizontal(in_call, pl.lit(most))).sum().item() or 0), most


def _prediction(steps: int, active_ns: int, low_ns: int, high_ns: int) -> GpuPrediction | None:
    """Throughput with the interference's GPU idle taken out of the active span. Where a bound covers the whole
    span (the host cannot rule out that the GPU waited on interference all along), that side has no bound: None,
    never the absurd rate of a span shrunk to nothing."""
    if active_ns <= 0:
        return None
    basis, units = ("steps", steps) if steps else ("gpu_span", 1)
    measured = units / (active_ns / 1e9)
    after = lambda lost: units / ((active_ns - lost) / 1e9) if lost < active_ns else None  # noqa: E731
    gain = lambda rate: 100.0 * (rate / measured - 1) if rate is not None else None  # noqa: E731
    low, high = after(low_ns), after(high_ns)
    return GpuPrediction(
        basis=basis,
        steps=steps or None,
        measured_per_s=measured,
        predicted_low_per_s=low,
        predicted_high_per_s=high,
        gain_low_percent=gain(low),
        gain_high_percent=gain(high),
    )


# a culprit table's rows: the top ones, largest first
TOP_CULPRITS = 10


def _culprit_groups(frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """FRAME (cause, culprit_pid, culprit, culprit_cgroup, low, high, rec_low, rec_high) as one row per culprit:
    BY "process" (culprit_pid and name) or "command" (the name: a command's processes together); an interrupt is
    its own row by its name. Columns: key (a struct naming the rows it sums), name, pids, is_interrupt, low, high,
    rec_low, rec_high, and one column per interference cause (its high), largest first."""
    interrupt = pl.col("cause") == IRQ
    keyed = frame.with_columns(
        interrupt.alias("is_interrupt"),
        pl.when(interrupt | pl.lit(by == "command"))
        .then(pl.lit(None, pl.UInt32))
        .otherwise(pl.col("culprit_pid"))
        .alias("group_pid"),
    )
    by_cause = [pl.col("high").filter(pl.col("cause") == c).sum().alias(c) for c in INTERFERENCE]
    return (
        keyed.group_by("is_interrupt", "culprit", "group_pid")
        .agg(
            pl.col("culprit_pid").filter(~interrupt).drop_nulls().unique().sort().alias("pids"),
            pl.col("low").sum(),
            pl.col("high").sum(),
            pl.col("rec_low").sum(),
            pl.col("rec_high").sum(),
            *by_cause,
        )
        .rename({"culprit": "name"})
        .sort(["high", "low", "name"], descending=[True, True, False], nulls_last=True)
    )


def _culprits(frame: pl.DataFrame, by: str, total_high: int, lower=None) -> list[GpuCulprit]:
    """The top culprits of FRAME grouped BY "process" or "command" (_culprit_groups). LOWER(name, pids), where
    given (bounds mode), is a culprit's own lower bound (its delays alone taken out of the steps), which raises
    the summed one where it is higher."""
    out = []
    groups = _culprit_groups(frame, by)
    for row in groups.head(TOP_CULPRITS).iter_rows(named=True):
        low, high, rec_low, rec_high = int(row["low"]), int(row["high"]), int(row["rec_low"]), int(row["rec_high"])
        if lower is not None and not row["is_interrupt"] and high:
            own = min(high, lower(row["name"], [int(p) for p in row["pids"]]))
            if own > low:
                rec_low = max(rec_low, round(rec_high * own / high))
                low = own
        out.append(
            GpuCulprit(
                name=row["name"],
                pids=[int(p) for p in row["pids"]],
                is_interrupt=bool(row["is_interrupt"]),
                low_ns=low,
                high_ns=high,
                share_percent=100.0 * high / total_high if total_high else None,
                causes={c: int(row[c]) for c in INTERFERENCE if row[c]},
                recoverable_low_ns=rec_low,
                recoverable_high_ns=rec_high,
            )
        )
    return out


def _cgroup_culprits(frame: pl.DataFrame, table: pl.DataFrame | None) -> list[GpuCgroupCulprit] | None:
    """FRAME (cause, culprit_pid, culprit, culprit_cgroup, low, high, rec_low, rec_high) summed by cgroup; None
    without a cgroup table (the trace does not record cgroups)."""
    if table is None:
        return None
    return [
        GpuCgroupCulprit(
            cause=r["cause"],
            cgroup=r["cgroup"],
            container_id=r["container_id"],
            pod=r["pod"],
            name=r["name"],
            low_ns=r["low"],
            high_ns=r["high"],
            recoverable_low_ns=r["rec_low"],
            recoverable_high_ns=r["rec_high"],
            processes=r["processes"],
        )
        for r in cgroups.by_cgroup(
            frame, table, "culprit_cgroup", "culprit_pid", ["high", "low", "rec_high", "rec_low"], irq_name="culprit"
        )
    ]


def _measured(
    idle: pl.DataFrame, probes: tuple[int | None, int | None], tasks_low: int | None = None
) -> GpuMeasurement:
    """The measurement section from IDLE's measurement rows (cause, culprit_pid, culprit, ns) and the probes'
    estimate; TASKS_LOW: the tasks' lower bound where IDLE's ns are upper bounds (bounds mode)."""
    ours = (
        idle.filter(pl.col("cause") == MEASUREMENT)
        .group_by("culprit_pid", "culprit")
        .agg(pl.col("ns").sum())
        .sort("ns", "culprit_pid", descending=[True, False])
    )
    high = int(ours["ns"].sum() or 0)
    return GpuMeasurement(
        tasks_low_ns=high if tasks_low is None else tasks_low,
        tasks_high_ns=high,
        tasks=[GpuMeasurementTask(name=name, pid=pid, ns=int(ns)) for pid, name, ns in ours.iter_rows()],
        probes_estimated_ns=probes[0],
        probe_ns_per_launch=probes[1],
        probe_cost_basis=HIT_NS_SOURCE,
    )


def _gpu_processes(per: pl.DataFrame, idle: pl.DataFrame) -> list[GpuProcess]:
    """Each process and device's GPU time (PER: busy_ns by pid, device_id, with first_ns and last_ns), its idle
    (IDLE: attribute's rows) by kind of cause, the idle by design left out."""
    processes = []
    for pid, device, busy_p, first, last in per.sort("pid", "device_id").iter_rows():
        mine = idle.filter((pl.col("pid") == pid) & (pl.col("device_id") == device) & ~pl.col("cause").is_in(BY_DESIGN))
        got = dict(mine.group_by("cause").agg(pl.col("ns").sum()).iter_rows())
        processes.append(
            GpuProcess(
                pid=pid,
                device_id=device,
                span_ns=int(last - first),
                busy_ns=int(busy_p),
                idle_ns=int(sum(got.values())),
                interference_ns=int(sum(got.get(c, 0) for c in INTERFERENCE)),
                own_ns=int(sum(got.get(c, 0) for c in OWN)),
                gpu_side_ns=int(got.get(GPU_SIDE, 0)),
                unknown_ns=int(got.get(UNKNOWN, 0)),
            )
        )
    return processes


def exact_section(
    trace: Trace,
    pids: set[int],
    segments: pl.DataFrame,
    runs: pl.DataFrame,
    irqs: pl.DataFrame,
    span: tuple[int, int],
    syncs: pl.DataFrame,
    launching: pl.DataFrame,
    measurement: Measurement,
    cgroup_table: pl.DataFrame | None = None,
) -> GpuTimeExact:
    work, gaps, idle = gpu_idle(trace, segments, runs, irqs, span, measurement)
    wanted = list(pids)
    work, idle = work.filter(pl.col("pid").is_in(wanted)), idle.filter(pl.col("pid").is_in(wanted))
    gaps = gaps.filter(pl.col("pid").is_in(wanted))
    per = busy_ns(work)
    window = span[1] - span[0]
    span_ns = window * per.height
    active_spans = int((per["last_ns"] - per["first_ns"]).sum() or 0)
    busy = int(per["busy_ns"].sum() or 0)
    idle_ns = int(idle["ns"].sum() or 0)
    by_cause = dict(idle.group_by("cause").agg(pl.col("ns").sum()).iter_rows())
    causes = [
        GpuIdleCause(cause=c, ns=int(by_cause[c]), percent=100.0 * by_cause[c] / idle_ns if idle_ns else 0.0)
        for c in GPU_IDLE_CAUSE_NAMES
        if by_cause.get(c)
    ]
    interference = sum(int(by_cause.get(c, 0)) for c in INTERFERENCE)
    own = sum(int(by_cause.get(c, 0)) for c in OWN)
    interfering = idle.filter(pl.col("cause").is_in(INTERFERENCE)).select(
        "cause",
        "culprit_pid",
        "culprit",
        "culprit_cgroup",
        pl.col("ns").alias("low"),
        pl.col("ns").alias("high"),
        pl.col("recoverable_ns").alias("rec_low"),
        pl.col("recoverable_ns").alias("rec_high"),
    )
    processes = _gpu_processes(per, idle)
    active = int(per["last_ns"].max() - per["first_ns"].min()) if per.height else 0
    # the CPU time the launching threads lost, and what of it the GPU did not notice, both inside the active span
    spans = per.group_by("pid").agg(pl.col("first_ns").min().alias("lo"), pl.col("last_ns").max().alias("hi"))
    cpu_interference = _inside_active(delay_pieces(segments, runs, irqs, launching, measurement=measurement), spans)
    hidden = max(0, cpu_interference - interference)
    landmarks = launch_landmarks(trace, pids, syncs)
    wakeup = int(by_cause.get(WAKEUP_LATENCY, 0))
    return GpuTimeExact(
        span_ns=span_ns,
        busy_ns=busy,
        idle_ns=idle_ns,
        busy_percent=100.0 * busy / active_spans if active_spans else None,
        causes=causes,
        interference_ns=interference,
        own_ns=own,
        culprits=_culprits(interfering, "command", interference),
        cpu_interference_ns=cpu_interference,
        hidden_ns=hidden,
        hidden_percent=100.0 * hidden / cpu_interference if cpu_interference else None,
        processes=processes,
        active_ns=active,
        prediction=_prediction(_steps(syncs, landmarks), active, interference, interference),
        culprits_by_cgroup=_cgroup_culprits(interfering, cgroup_table),
        culprits_by_process=_culprits(interfering, "process", interference),
        measurement=_measured(idle, _probe_estimate(trace, gaps, launching)),
        wakeup_latency_ns=wakeup,
        window_busy_percent=100.0 * busy / span_ns if span_ns else None,
    )


def bounds_section(
    trace: Trace,
    launches: pl.DataFrame,
    syncs: pl.DataFrame,
    segments: pl.DataFrame,
    runs: pl.DataFrame,
    irqs: pl.DataFrame,
    launching: pl.DataFrame,
    why: str,
    measurement: Measurement,
    cgroup_table: pl.DataFrame | None = None,
) -> GpuTimeBounds:
    pieces = delay_pieces(segments, runs, irqs, launching, competitors(trace), measurement)
    tids = launching["tid"].to_list()
    wakeups = trace.of(Event.WAKEUP, "ts_ns", "tid").filter(pl.col("tid").is_in(tids))
    times = launch_times(trace, tids)
    found = host_bounds(launches, syncs, pieces.filter(pl.col("cause").is_in(INTERFERENCE)), times, wakeups)
    active = int(launches["ts_ns"].max() - launches["ts_ns"].min()) if launches.height else 0
    # no bound is over the whole span: the GPU cannot have waited longer than it ran the workload
    low, high = min(found["low_ns"], active), min(found["high_ns"], active)
    interfering = found["culprits"].select(
        "cause",
        "culprit_pid",
        "culprit",
        "culprit_cgroup",
        pl.col("low_ns").alias("low"),
        pl.col("high_ns").alias("high"),
        "rec_low",
        "rec_high",
    )
    region = found["region"]

    def lower(name: str | None, pids: list[int]) -> int:
        """The GPU idle the steps show this culprit's delays cost, its delays alone taken out."""
        mine = found["inside"].filter(pl.col("culprit").eq_missing(name) & pl.col("culprit_pid").is_in(pids))
        aligned = _aligned(launches, found["drains"], mine, times, wakeups, found["inside"])
        return aligned[0] if aligned is not None else 0

    others = _clip(
        pieces.filter(pl.col("cause").is_in([MEASUREMENT, WAKEUP_LATENCY])).join(region, on=["pid", "tid"]), "lo", "hi"
    ).select("cause", "culprit_pid", "culprit", (pl.col("delay_end") - pl.col("delay_start")).alias("ns"))
    wakeup_high = int(others.filter(pl.col("cause") == WAKEUP_LATENCY)["ns"].sum() or 0)
    cpu_interference = int(found["inside"]["ns"].sum() or 0)
    # a culprit's share is of all the delays (its rows' shares add up to 100), its bounds within the span
    delayed = found["high_ns"]
    return GpuTimeBounds(
        why=why,
        interference_low_ns=low,
        interference_high_ns=high,
        culprits=_within_span(_culprits(interfering, "command", delayed, lower), active),
        cpu_interference_ns=cpu_interference,
        hidden_low_ns=max(0, cpu_interference - high),
        hidden_high_ns=max(0, cpu_interference - low),
        active_ns=active,
        prediction=_prediction(_steps(syncs, launches), active, low, high),
        note=found["note"],
        culprits_by_cgroup=_within_span(_cgroup_culprits(interfering, cgroup_table), active),
        culprits_by_process=_within_span(_culprits(interfering, "process", delayed, lower), active),
        measurement=_measured(others, (None, None), tasks_low=0),
        wakeup_latency_low_ns=0,
        wakeup_latency_high_ns=wakeup_high,
    )


def _within_span(culprits, span: int):
    """Bounds-mode culprit rows (GpuCulprit or GpuCgroupCulprit; None: none) with no bound over the active SPAN:
    a culprit's delays can add up to more than the GPU worked (launching threads delayed at once; in a trace
    without its switch table a woken thread never runs again), but the GPU cannot have waited longer than
    that. What it would give back is within its upper bound."""
    if culprits is None:
        return None
    out = []
    for c in culprits:
        high = min(c.high_ns, span)
        fields = dict(
            low_ns=min(c.low_ns, high),
            high_ns=high,
            recoverable_low_ns=min(c.recoverable_low_ns, high),
            recoverable_high_ns=min(c.recoverable_high_ns, high),
        )
        if isinstance(c, GpuCulprit):
            fields["causes"] = {cause: min(ns, span) for cause, ns in c.causes.items()}
        out.append(replace(c, **fields))
    return out


def no_section(why: str) -> GpuTimeNotEstimated:
    return GpuTimeNotEstimated(why=why)


def launch_landmarks(trace: Trace, pids: set[int], syncs: pl.DataFrame) -> pl.DataFrame:
    """The launches the bounds need (ts_ns, pid, tid), without holding every launch: each launching
    thread's first and last, and its first after each of its drain syncs. Read a few segments at a
    time, in time order."""
    wanted = list(pids)
    drains = (
        syncs.filter(pl.col("api").is_in(DRAIN_APIS) & pl.col("pid").is_in(wanted))
        .select("tid", (pl.col("ts_ns") + pl.col("duration_ns")).cast(pl.Int64).alias("exit_ns"))
        .sort("tid", "exit_ns")
    )
    pending = {tid: group["exit_ns"].to_numpy() for (tid,), group in drains.group_by("tid")}
    found: list[pl.DataFrame] = []
    first_seen: dict[int, tuple[int, int]] = {}
    last_seen: dict[int, tuple[int, int]] = {}
    for chunk in trace.in_time_order(Event.LAUNCH, "ts_ns", "pid", "tid"):
        chunk = chunk.filter(pl.col("pid").is_in(wanted)).with_columns(pl.col("ts_ns").cast(pl.Int64))
        for (tid,), mine in chunk.group_by("tid"):
            ts, pid = mine["ts_ns"].to_numpy(), int(mine["pid"][0])
            first_seen.setdefault(tid, (int(ts[0]), pid))
            last_seen[tid] = (int(ts[-1]), pid)
            exits = pending.get(tid)
            if exits is None or not exits.size:
                continue
            # each drain exit's next launch, if this chunk holds it
            at = np.searchsorted(ts, exits, "right")
            hit = at < ts.size
            if hit.any():
                found.append(
                    pl.DataFrame(
                        {
                            "ts_ns": ts[at[hit]],
                            "pid": np.full(int(hit.sum()), pid, np.uint32),
                            "tid": np.full(int(hit.sum()), tid, np.uint32),
                        }
                    )
                )
            pending[tid] = exits[~hit]
    ends = [
        pl.DataFrame(
            {"ts_ns": [t for t, _ in points.values()], "pid": [p for _, p in points.values()], "tid": list(points)},
            schema={"ts_ns": pl.Int64, "pid": pl.UInt32, "tid": pl.UInt32},
        )
        for points in (first_seen, last_seen)
    ]
    return pl.concat([*ends, *[f.cast({"ts_ns": pl.Int64}) for f in found]]).unique().sort("ts_ns")


def aligned_lower_bound(
    launch_ts: np.ndarray,
    drains: pl.DataFrame,
    wakeups: np.ndarray,
    delay_start: np.ndarray,
    delay_end: np.ndarray,
    waits: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[int, int] | None:
    """A lower bound of the GPU idle one launching thread's delays caused, from steps that repeat launch
    for launch (docs/gpu-time.md, "steps that repeat"). Returns (bound, steps), or None where the steps
    do not repeat (their launch counts differ). WAITS: every delay of the thread (start, end), when it was not
    running (the delays given, where not).

    Each step (from one drain sync to the next) makes the same launches in the same order, so the GPU work left
    after its i-th launch, R_i, is the same in every step; the step ends (E_s) no earlier than the GPU's finish,
    a_i + R_i, in every step, so R_i <= min over steps of (E_s - a_i,s). Without the step's delays (Delta_i,s
    before its i-th launch) it would end by max_i(a_i,s - Delta_i,s + R_i) or the host's delay-free arrival: the
    delays cost at least E_s minus that.

    A drain that blocked, and whose thread then did nothing but wait for its CPU and return (ran at most
    RETURN_PATH_NS after its last wakeup in it), was woken by the GPU's finish: it ends at that wakeup, and the
    step after it starts there (what delayed its return delayed that step's first launch). Any other drain (one
    that spun: it never blocked, or was woken by something else, a runtime lock, and then spun) ends at its
    return, the earliest sure to follow the GPU's finish, with the host's delay-free return beside it; the step
    after it starts at that return."""
    launch_ts = np.sort(launch_ts)
    entries = drains["ts_ns"].to_numpy().astype(np.int64)
    exits = drains["exit_ns"].to_numpy().astype(np.int64)
    if exits.size < MIN_STEPS + 2:
        return None
    # step s runs from the drain before it to the drain that ends it (entry s, exit s); the first keeps the
    # start-up. Its launches are those after the drain before it returned
    ends_entry = entries[2:]
    first = np.searchsorted(launch_ts, exits[1:-1], "right")
    last = np.searchsorted(launch_ts, ends_entry, "left")
    counts = last - first
    if counts.size < MIN_STEPS or not np.all(counts == counts[0]) or counts[0] == 0:
        return None
    n = int(counts[0])
    a = launch_ts[first[:, None] + np.arange(n)[None, :]]
    delay_before = _prefix_time(delay_start, delay_end)
    waited_before = delay_before if waits is None else _prefix_time(*waits)
    # each drain from the second on: the last wakeup inside it, if it blocked
    woke_at = np.searchsorted(wakeups, exits[1:], "right") - 1
    woke = (
        np.where(woke_at >= 0, wakeups[np.maximum(woke_at, 0)], -1)
        if wakeups.size
        else np.full(exits.size - 1, -1, np.int64)
    )
    blocked = (woke >= entries[1:]) & (woke <= exits[1:])
    ran_after_wake = (exits[1:] - woke) - (waited_before(exits[1:]) - waited_before(woke))
    woken_by_the_gpu = blocked & (ran_after_wake <= RETURN_PATH_NS)
    drain_end = np.where(woken_by_the_gpu, woke, exits[1:])
    # where the host's own arrival is measured: at a blocking drain's entry, at a spinning one's return
    host_end = np.where(woken_by_the_gpu, entries[1:], exits[1:])
    starts = np.where(woken_by_the_gpu[:-1], woke[:-1], exits[1:-1])
    end, arrival = drain_end[1:], host_end[1:]
    before_step = delay_before(starts)
    delta = delay_before(a) - before_step[:, None]
    delta_arrival = delay_before(arrival) - before_step
    remaining = (end[:, None] - a).min(axis=0)
    counterfactual = np.maximum((a - delta + remaining[None, :]).max(axis=1), arrival - delta_arrival)
    return int(np.clip(end - counterfactual, 0, None).sum()), int(counts.size)


def _prefix_time(start: np.ndarray, end: np.ndarray):
    """A function of times T: the time the sorted, disjoint intervals [START, END) hold before each T (the
    interval holding T cut at T), by prefix sums."""
    order = np.argsort(start)
    ds, de = start[order].astype(np.int64), end[order].astype(np.int64)
    done = np.concatenate([[0], np.cumsum(de - ds)])

    def before(t: np.ndarray) -> np.ndarray:
        if not ds.size:
            return np.zeros_like(t)
        k = np.searchsorted(ds, t, "right")
        last = np.maximum(k - 1, 0)
        return np.where(k > 0, done[last] + np.minimum(t, de[last]) - ds[last], 0)

    return before


def gain_without(g: GpuTime, culprit_pids: set[int]) -> tuple[float | None, float | None] | None:
    """The throughput gain (percent, low and high) predicted from one trace if the culprits CULPRIT_PIDS
    (a load's processes, say) were gone: their GPU idle (its recoverable part) taken out of the active
    span, the rest of the interference holding its share of the span. The workload's own time, the span
    less all its interference (OWN), is what it is; other interference (a neighbour's, interrupts, what
    others would take of the culprits' time) comes at a rate, so a shorter span holds less of it. So the
    span becomes OWN / (1 - rest / span), and the gain is removed / OWN. A side whose OWN is nothing (the
    interference covers the whole span) has no bound (None)."""
    match g:
        case GpuTimeNotEstimated():
            return None
        case GpuTimeExact():
            interference = (g.interference_ns, g.interference_ns)
        case GpuTimeBounds():
            interference = (g.interference_low_ns, g.interference_high_ns)
    if not g.active_ns:
        return None
    culprits = [c for c in g.culprits_by_process if not c.is_interrupt and set(c.pids) & culprit_pids]
    removed = (sum(c.recoverable_low_ns for c in culprits), sum(c.recoverable_high_ns for c in culprits))
    own = (g.active_ns - interference[0], g.active_ns - interference[1])
    # the high gain: the most taken out of the least the workload's own time can be; the low, the opposite
    gain = lambda lost, mine: 100.0 * lost / mine if mine > 0 else None  # noqa: E731
    return gain(removed[0], own[0]), gain(removed[1], own[1])
