"""The scheduling analysis as it was before it was made fast (issue 13: thread
segments, run slices and culprits built with polars sorts, window functions
and as-of joins; migration waits by a join on the thread): kept verbatim as
the reference the faster implementations in analysis/timeline.py, taken.py
and report.py are compared against (tests/analysis/test_sched_reference.py,
tests/recorder/test_storm_reference.py). Not used by the product."""

from __future__ import annotations

import polars as pl

from launchgap.analysis.intervals import overlaps
from launchgap.analysis.timeline import STATE
from launchgap.trace import Event, Trace
from launchgap.trace.checks import Bounds
from launchgap.trace.schema import TASK_DEAD

WAITING = ("preempted", "runqueue")


def cpu_runs(trace: Trace, bounds: Bounds) -> pl.DataFrame:
    """Who ran on each CPU when: cpu, run_start, run_end, run_pid, run_tid, run_comm.

    Each switch starts a slice of the next task; the task switched out by a
    CPU's first switch is taken to have run since the trace began.
    """
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "pid", "tid", "comm", "next_pid", "next_tid", "next_comm")
    if sw.is_empty():
        return pl.DataFrame(
            schema={
                "cpu": pl.UInt32,
                "run_start": pl.Int64,
                "run_end": pl.Int64,
                "run_pid": pl.UInt32,
                "run_tid": pl.UInt32,
                "run_comm": pl.Utf8,
            }
        )
    sw = sw.sort("cpu", "ts_ns")
    slices = sw.select(
        "cpu",
        pl.col("ts_ns").cast(pl.Int64).alias("run_start"),
        pl.col("ts_ns").cast(pl.Int64).shift(-1).over("cpu").fill_null(bounds.end_ns).alias("run_end"),
        pl.col("next_pid").alias("run_pid"),
        pl.col("next_tid").alias("run_tid"),
        pl.col("next_comm").alias("run_comm"),
    )
    first = (
        sw.group_by("cpu")
        .first()
        .select(
            "cpu",
            pl.lit(bounds.start_ns, pl.Int64).alias("run_start"),
            pl.col("ts_ns").cast(pl.Int64).alias("run_end"),
            pl.col("pid").alias("run_pid"),
            pl.col("tid").alias("run_tid"),
            pl.col("comm").alias("run_comm"),
        )
    )
    return pl.concat([first, slices]).filter(pl.col("run_end") > pl.col("run_start")).sort("cpu", "run_start")


def thread_segments(trace: Trace, tids: list[int], bounds: Bounds) -> pl.DataFrame:
    """tid, cpu, state, segment_start, segment_end for every target thread, end to end."""
    sw = trace.scan(Event.SWITCH).select("ts_ns", "cpu", "tid", "next_tid", "prev_state", "voluntary")
    outs = sw.filter(pl.col("tid").is_in(tids)).select(
        "ts_ns",
        "tid",
        "cpu",
        pl.when((pl.col("prev_state") & TASK_DEAD) != 0)
        .then(pl.lit("dead"))
        .when(pl.col("voluntary").is_null())
        .then(pl.lit("offcpu"))
        .when(pl.col("voluntary"))
        .then(pl.lit("blocked"))
        .otherwise(pl.lit("preempted"))
        .alias("state"),
        pl.lit(Event.SWITCH.value).alias("kind"),
    )
    ins = sw.filter(pl.col("next_tid").is_in(tids)).select(
        "ts_ns",
        pl.col("next_tid").alias("tid"),
        "cpu",
        pl.lit("running").alias("state"),
        pl.lit(Event.SWITCH.value).alias("kind"),
    )
    wakes = (
        pl.concat([trace.scan(kind) for kind in (Event.WAKEUP, Event.WAKEUP_NEW)])
        .filter(pl.col("tid").is_in(tids))
        .select(
            "ts_ns",
            "tid",
            pl.col("target_cpu").alias("cpu"),
            pl.lit(None, pl.Utf8).alias("state"),
            pl.lit(Event.WAKEUP.value).alias("kind"),
        )
    )
    moves = (
        trace.scan(Event.MIGRATE)
        .filter(pl.col("tid").is_in(tids))
        .select(
            "ts_ns",
            "tid",
            pl.col("dest_cpu").alias("cpu"),
            pl.lit(None, pl.Utf8).alias("state"),
            pl.lit(Event.MIGRATE.value).alias("kind"),
        )
    )
    rows = pl.concat([outs, ins, wakes, moves]).with_columns(pl.col("ts_ns").cast(pl.Int64)).collect()
    if rows.is_empty():
        return pl.DataFrame(
            schema={
                "tid": pl.UInt32,
                "cpu": pl.UInt32,
                "state": pl.Utf8,
                "segment_start": pl.Int64,
                "segment_end": pl.Int64,
            }
        )
    rows = rows.sort("tid", "ts_ns")
    switch_state = pl.when(pl.col("kind") == Event.SWITCH).then(pl.col("state"))
    rows = rows.with_columns(switch_state.forward_fill().shift(1).over("tid").alias("switched_before"))
    woken = (
        pl.when(pl.col("switched_before").is_null() | pl.col("switched_before").is_in(["blocked", "offcpu"]))
        .then(pl.lit("runqueue"))
        .otherwise(pl.col("switched_before"))
    )
    rows = rows.with_columns(
        pl.when(pl.col("kind") == Event.WAKEUP).then(woken).otherwise(pl.col("state")).alias("state")
    )
    rows = rows.with_columns(pl.col("state").forward_fill().over("tid"))
    # a thread's end: its death switch, else the end of the trace
    segments = rows.select(
        "tid",
        "cpu",
        pl.col("state").fill_null("unknown"),
        pl.col("ts_ns").alias("segment_start"),
        pl.col("ts_ns").shift(-1).over("tid").fill_null(bounds.end_ns).alias("segment_end"),
    )
    segments = segments.filter(pl.col("state") != "dead")
    # before the first event: inferred from it
    first = (
        rows.group_by("tid")
        .first()
        .select(
            "tid",
            "cpu",
            pl.when((pl.col("kind") == Event.SWITCH) & (pl.col("state") != "running"))
            .then(pl.lit("running"))
            .when(pl.col("kind") == Event.WAKEUP)
            .then(pl.lit("blocked"))
            .otherwise(pl.lit("unknown"))
            .alias("state"),
            pl.lit(bounds.start_ns, pl.Int64).alias("segment_start"),
            pl.col("ts_ns").alias("segment_end"),
        )
    )
    born = (
        trace.of(Event.FORK, "ts_ns", "child_tid")
        .filter(pl.col("child_tid").is_in(tids))
        .select(pl.col("child_tid").alias("tid"), pl.col("ts_ns").cast(pl.Int64).alias("born_ns"))
    )
    first = (
        first.join(born, on="tid", how="left")
        .with_columns(
            pl.max_horizontal("segment_start", pl.col("born_ns").fill_null(bounds.start_ns)).alias("segment_start")
        )
        .drop("born_ns")
    )
    out = pl.concat([first, segments]).filter(pl.col("segment_end") > pl.col("segment_start"))
    # the state held as timeline's Enum (its names, a byte a row); the values are what is compared
    return out.with_columns(
        pl.col("tid").cast(pl.UInt32), pl.col("cpu").cast(pl.UInt32), pl.col("state").cast(STATE)
    ).sort("tid", "segment_start")


def state_time(segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: ns in each state (columns running_ns, preempted_ns, ...) and lifetime_ns."""
    base = segments.with_columns((pl.col("segment_end") - pl.col("segment_start")).alias("ns"))
    wide = base.pivot(on="state", index="tid", values="ns", aggregate_function="sum")
    states = ("running", "preempted", "runqueue", "blocked", "offcpu", "unknown")
    for state in states:
        if state not in wide.columns:
            wide = wide.with_columns(pl.lit(0, pl.Int64).alias(state))
    wide = wide.select("tid", *states).rename({s: f"{s}_ns" for s in states})
    lifetime = base.group_by("tid").agg(
        (pl.col("segment_end").max() - pl.col("segment_start").min()).alias("lifetime_ns")
    )
    return wide.fill_null(0).join(lifetime, on="tid")


def culprits(segments: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Who ran on a waiting thread's CPU while it waited: tid, cause, run_pid, run_comm, ns, and run_cgroup where
    RUNS carry it (a task that changed cgroups has a row for each)."""
    by_cgroup = ["run_cgroup"] if "run_cgroup" in runs.columns else []
    waiting = segments.filter(pl.col("state").is_in(WAITING)).select(
        "tid", "cpu", pl.col("state").cast(pl.Utf8).alias("cause"), "segment_start", "segment_end"
    )
    pairs = overlaps(waiting, runs, "cpu", ("segment_start", "segment_end"), ("run_start", "run_end"))
    if pairs.is_empty():
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
    # the idle task has one name per CPU (swapper/N); as a culprit it is one thing
    idle_as_one = pl.when(pl.col("run_pid") == 0).then(pl.lit("swapper")).otherwise(pl.col("run_comm"))
    return (
        pairs.filter(pl.col("run_tid") != pl.col("tid"))
        .with_columns(idle_as_one.alias("run_comm"))
        .group_by("tid", "cause", "run_pid", "run_comm", *by_cgroup)
        .agg(pl.col("overlap_ns").sum().alias("ns"))
        .select("tid", "cause", "run_pid", "run_comm", "ns", *by_cgroup)
        # equal times in a fixed order, whatever order the rows came in
        .sort(
            ["ns", "tid", "cause", "run_pid", "run_comm", *by_cgroup],
            descending=[True, False, False, False, False, *[False for _ in by_cgroup]],
        )
    )


def migration_time(trace_migrations: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per thread: migrations, and the runnable time of the waits that contained one.

    A wait is a run of consecutive runnable segments (preempted / runqueue)
    ended by running; a migration while runnable splits it into segments.
    """
    waits = segments.sort("tid", "segment_start").with_columns(pl.col("state").is_in(WAITING).alias("waiting"))
    waits = waits.with_columns(
        (pl.col("waiting") != pl.col("waiting").shift(1).over("tid"))
        .fill_null(True)
        .cum_sum()
        .over("tid")
        .alias("episode")
    )
    episodes = (
        waits.filter(pl.col("waiting"))
        .group_by("tid", "episode")
        .agg(pl.col("segment_start").min().alias("e_start"), pl.col("segment_end").max().alias("e_end"))
    )
    moves = trace_migrations.select("tid", pl.col("ts_ns").cast(pl.Int64).alias("m_ts"))
    counts = moves.group_by("tid").agg(pl.len().alias("migrations"))
    if episodes.is_empty() or moves.is_empty():
        return counts.with_columns(pl.lit(0, pl.Int64).alias("runnable_around_ns"))
    hit = (
        episodes.join(moves, on="tid")
        .filter((pl.col("m_ts") >= pl.col("e_start")) & (pl.col("m_ts") <= pl.col("e_end")))
        .select("tid", "episode", "e_start", "e_end")
        .unique()
    )
    around = hit.group_by("tid").agg((pl.col("e_end") - pl.col("e_start")).sum().alias("runnable_around_ns"))
    return counts.join(around, on="tid", how="left").fill_null(0)


def silent_tasks(trace: Trace) -> list[dict]:
    """Tasks switched in but never out, other than those still running at the end: the kernel
    did not trace their switch-outs (seen with this project's sandbox agent), so a workload
    thread they preempted looks preempted until its next recorded switch-out."""
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "tid", "next_pid", "next_tid", "next_comm")
    if sw.is_empty():
        return []
    running_at_end = set(sw.sort("ts_ns").group_by("cpu").last()["next_tid"].to_list())
    switched_out = set(sw["tid"].unique().to_list())
    ins = sw.group_by("next_pid", "next_tid").agg(pl.len().alias("switch_ins"), pl.col("next_comm").last())
    silent = ins.filter(~pl.col("next_tid").is_in(list(switched_out | running_at_end | {0})))
    return [
        {"pid": p, "tid": t, "comm": c, "switch_ins": n}
        for p, t, n, c in silent.sort(["switch_ins", "next_tid"], descending=[True, False]).rows()
    ]


def assert_same_as_reference(trace: Trace, monkeypatch) -> dict:
    """Each fast piece gives the reference's frame, and the whole report the reference's JSON; returns
    the report's JSON (for the caller to check it holds what the trace should exercise)."""
    from dataclasses import asdict

    from polars.testing import assert_frame_equal

    from launchgap.analysis import report, taken, timeline
    from launchgap.analysis.targets import target_pids, target_threads
    from launchgap.trace import checks
    from launchgap.views.report_json import report_json

    def typed_silent_tasks(trace: Trace) -> list[checks.SilentTask]:
        return [checks.SilentTask(**task) for task in silent_tasks(trace)]

    bounds = timeline.trace_bounds(trace)
    tids = target_threads(trace, target_pids(trace))["tid"].to_list()
    segments = thread_segments(trace, tids, bounds)
    assert_frame_equal(timeline.thread_segments(trace, tids, bounds), segments)
    runs = cpu_runs(trace, bounds)
    assert_frame_equal(timeline.cpu_runs(trace, bounds), runs)
    if not segments.is_empty():
        assert_frame_equal(taken.state_time(segments).sort("tid"), state_time(segments).sort("tid"))
        assert_frame_equal(taken.culprits(segments, runs), culprits(segments, runs))
    moves = trace.of(Event.MIGRATE, "ts_ns", "tid").filter(pl.col("tid").is_in(tids))
    assert_frame_equal(taken.migration_time(moves, segments).sort("tid"), migration_time(moves, segments).sort("tid"))
    assert [asdict(task) for task in checks.silent_tasks(trace)] == silent_tasks(trace)
    fast = report_json(trace)
    for module, name, old in (
        (report, "thread_segments", thread_segments),
        (report, "cpu_runs", cpu_runs),
        (taken, "state_time", state_time),
        (taken, "culprits", culprits),
        (taken, "migration_time", migration_time),
        (report, "silent_tasks", typed_silent_tasks),
    ):
        monkeypatch.setattr(module, name, old)
    assert fast == report_json(trace)
    monkeypatch.undo()
    return fast
