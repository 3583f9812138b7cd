"""The report: every metric of docs/metrics.md, as typed records
(analysis/records.py), made JSON only at the edge (docs/report-schema.md).
The report assembles sections from the stages that compute them (timeline,
taken, gap_stream, gpu_time, verdict, ...); it holds numbers and typed facts,
never a sentence: the words (the verdict, caveats, warnings) are
views/verdict_words.py's, for the terminal and the JSON's text fields alike.
The terminal view, diff and experiments read the records; nothing is
computed anywhere else."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import polars as pl

from launchgap.analysis import cgroups, taken
from launchgap.analysis import collectives as coll
from launchgap.analysis import gpu_time as gpu
from launchgap.analysis import verdict as judge
from launchgap.analysis.core_map import records_every_switch
from launchgap.analysis.gap_stream import GapStats, gap_stats, launch_chunks
from launchgap.analysis.gpu_activity import gpu_activity
from launchgap.analysis.irqs import irq_intervals
from launchgap.analysis.measurement import collector_names, measurement_of
from launchgap.analysis.records import (
    CgroupCulprit,
    CollectiveName,
    CollectiveRank,
    Collectives,
    Culprit,
    FailedLaunch,
    FailedLaunches,
    Gaps,
    GpuActivity,
    GpuTime,
    GpuTimeBounds,
    GpuTimeExact,
    HostChecks,
    HostTarget,
    IncompleteTrace,
    InconsistentCpu,
    IrqSummary,
    LostEvents,
    LowerBound,
    Overview,
    ProfilerClock,
    ProfilerFile,
    RecordedCaveat,
    Report,
    SilentTaskCaveat,
    StudyMetrics,
    Taken,
    TakenTotal,
    ThreadCulprit,
    ThreadIrq,
    ThreadTaken,
    TraceInfo,
    UnchainedCpus,
    Verdict,
)
from launchgap.analysis.side_by_side import side_by_side
from launchgap.analysis.targets import target_pids, target_threads
from launchgap.analysis.timeline import cpu_runs, inconsistent_cpus, switch_chain_breaks, thread_segments, trace_bounds
from launchgap.doctor import SnapshotHost, Status, Target, run_doctor
from launchgap.doctor.in_trace import workload_cpus
from launchgap.trace import Event, Trace
from launchgap.trace.checks import Bounds, SilentTask, lost_by_kind, silent_tasks
from launchgap.trace.model import collect_streamed
from launchgap.trace.schema import RUNTIME_LAUNCH_APIS, MetaKey

REPORT_SCHEMA = "launchgap-report/1"

# Which recorded event types each metric is computed from: a loss of any of
# them makes the metric a lower bound, and the report says so beside it. Losses
# are counted by record type (`lost_event`): the wakeup record carries all three
# wakeup kinds, so Event.WAKEUP stands for them.
DEPENDS_ON = {
    "launches": (Event.LAUNCH,),
    "syncs": (Event.SYNC,),
    "switches": (Event.SWITCH,),
    "off_cpu": (Event.SWITCH,),
    "runqueue": (Event.SWITCH, Event.WAKEUP),
    "irqs": (Event.HARDIRQ, Event.SOFTIRQ, Event.IRQ_VECTOR),
    "gaps": (Event.LAUNCH, Event.SWITCH, Event.WAKEUP, Event.HARDIRQ, Event.SOFTIRQ, Event.IRQ_VECTOR, Event.SYNC),
    "migrations": (Event.MIGRATE,),
    "failed_launches": (Event.RUNTIME_ONLY,),
}

# A caveat about part of the trace (a task whose switch-outs were never traced) is shown in the terminal
# report only when what it may have got wrong is more than this share of the time taken from the workload
# (preemption, run-queue waits and interrupts, all its threads); below, it is in the JSON and --verbose.
MINOR_CAVEAT_PERCENT = 1.0


def _per_thousand(count: int, launches: int) -> float | None:
    return count / launches * 1000 if launches else None


def lower_bounds(lost: dict[str, int]) -> dict[str, LostEvents]:
    """metric -> the events it rests on that were lost, for every metric a loss affects."""
    out = {}
    for metric, sources in DEPENDS_ON.items():
        hit = {s: lost[s] for s in sources if lost.get(s)}
        if hit:
            out[metric] = LostEvents(lost=hit)
    return out


def incompleteness(trace: TraceInfo) -> IncompleteTrace | None:
    """Why the trace is not the whole recording, for its warning and its verdict; None when it is."""
    ended_early = trace.truncated or not trace.clean_end
    return IncompleteTrace(ended_early=ended_early, damage=list(trace.damage)) if ended_early or trace.damage else None


def silent_caveats(
    silent: list[SilentTask], culprits: pl.DataFrame, taken_ns: int
) -> tuple[list[SilentTaskCaveat], list[SilentTaskCaveat]]:
    """(caveats, minor caveats) for the silent tasks: what each may have got wrong is the time the
    workload waited while it ran (its unseen switch back made a run look like a wait), and a caveat is
    minor when that is not more than MINOR_CAVEAT_PERCENT of TAKEN_NS."""
    shown, minor = [], []
    for task in silent:
        bears = 0
        if not culprits.is_empty():
            bears = int(
                culprits.filter((pl.col("run_pid") == task.pid) & pl.col("run_comm").eq_missing(task.comm))["ns"].sum()
            )
        share = 100.0 * bears / taken_ns if taken_ns else 0.0
        caveat = SilentTaskCaveat(task=task, waited_ns=bears, taken_ns=taken_ns, share_percent=share)
        (shown if share > MINOR_CAVEAT_PERCENT else minor).append(caveat)
    return shown, minor


def failed_launches(trace: Trace, pids: set[int]) -> FailedLaunches:
    """Runtime launches of targets that returned an error without reaching the
    driver (recorded with --api-names): how many, by entry point and return code."""
    recorded = bool(trace.meta.get(MetaKey.OPTIONS, {}).get("api_names"))
    # a trace older than the return_code column reads it as null: no call counts as failed
    calls = trace.of(Event.RUNTIME_ONLY, "pid", "runtime_api", "return_code").filter(pl.col("pid").is_in(list(pids)))
    failed = calls.filter(pl.col("runtime_api").is_in(RUNTIME_LAUNCH_APIS) & (pl.col("return_code") != 0))
    by = failed.group_by("runtime_api", "return_code").len().sort("len", "runtime_api", descending=[True, False])
    return FailedLaunches(
        recorded=recorded,
        count=failed.height,
        runtime_only_calls=calls.height,
        by=[FailedLaunch(runtime_api=a, return_code=c, count=n) for a, c, n in by.rows()],
    )


def runtime_names_recorded(trace: Trace, *calls: pl.DataFrame) -> bool:
    """The trace names the runtime entry point of each call: recorded with --api-names, or (a study CSV,
    whose rows are the runtime's) some of CALLS carry a name."""
    return bool(trace.meta.get(MetaKey.OPTIONS, {}).get("api_names")) or any(
        frame["runtime_api"].null_count() < frame.height for frame in calls
    )


def _by_runtime_api(counts: pl.DataFrame, recorded: bool) -> dict[str, int] | None:
    """runtime entry point -> calls, from COUNTS (runtime_api, n), the calls with no runtime name left out."""
    if not recorded:
        return None
    named = counts.filter(pl.col("runtime_api").is_not_null()).group_by("runtime_api").agg(pl.col("n").sum())
    return {k: int(v) for k, v in named.sort("runtime_api").iter_rows()}


def _runs(trace: Trace, bounds: Bounds) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Who ran on each CPU when (cpu_runs), each slice with its task's cgroup where the trace records them
    (run_cgroup: a code of the table returned beside, else no such column and no table)."""
    runs = cpu_runs(trace, bounds)
    if not cgroups.recorded(trace):
        return runs, None
    members, table = cgroups.memberships(trace)
    return cgroups.with_run_cgroup(runs, members), table


def _cgroup_culprits(culprits: pl.DataFrame, table: pl.DataFrame | None) -> list[CgroupCulprit] | None:
    if table is None:
        return None
    if culprits.is_empty():
        return []
    return [CgroupCulprit(**row) for row in cgroups.by_cgroup(culprits, table, "run_cgroup", "run_pid", ["ns"])]


# --- the report: what it is computed from, then one builder per section ------------------------------------


def build_report(trace: Trace, collective_pattern: str | None = None) -> Report:
    """The report of TRACE. Launches, most of a launch-bound trace, are streamed: counted lazily, their
    gaps taken a few segments at a time (gap_stream.py). COLLECTIVE_PATTERN: a regular expression that names
    other libraries' collective kernels beside NCCL's (checked by the caller: collectives.pattern_error)."""
    w = workload_of(trace)
    launch_gaps = gap_stats(launch_chunks(trace, w.pids), w.segments, w.target_irqs, w.syncs)
    return report_from(w, gaps_section(launch_gaps), launch_gaps.interference_ns(), collective_pattern)


@dataclass(frozen=True)
class Workload:
    """What every section of the report is computed from, made once (workload_of): the trace, its span,
    the workload's threads, what they did and what was done to them, as frames."""

    trace: Trace
    bounds: Bounds
    pids: set[int]
    threads: pl.DataFrame  # targets.target_threads: pid, tid, comm, first_ns, last_ns
    tids: list[int]
    launches: pl.DataFrame  # the targets' launches counted: tid, api, runtime_api, launches
    syncs: pl.DataFrame  # the targets' syncs: ts_ns, pid, tid, api, runtime_api, duration_ns
    switches: pl.DataFrame  # the target threads' switch-outs: ts_ns, tid, voluntary
    segments: pl.DataFrame  # timeline.thread_segments: each target thread's states over time
    runs: pl.DataFrame  # _runs: who ran on each CPU when
    cgroup_table: pl.DataFrame | None  # the cgroups runs' run_cgroup codes name; None when not recorded
    silent: list[SilentTask]  # trace.checks.silent_tasks
    irqs: pl.DataFrame  # irqs.irq_intervals: every interrupt
    target_irqs: pl.DataFrame  # those that interrupted a target thread
    unchained: list[InconsistentCpu]  # inconsistent_cpus
    taken_where_unknown: dict[int, int]  # tid -> its waits where a CPU's switches do not chain
    culprits: pl.DataFrame  # taken.culprits: who ran while a target thread waited
    states: pl.DataFrame  # taken.state_time: ns in each state, per thread
    migrations: pl.DataFrame  # taken.migration_time
    lost: dict[str, int]  # lost events by kind

    @functools.cached_property
    def launch_counts(self) -> pl.DataFrame:
        """tid, launches: each launching thread's launches."""
        return self.launches.group_by("tid").agg(pl.col("launches").sum().cast(pl.UInt32))

    @functools.cached_property
    def launching(self) -> set[int]:
        """The threads that launched a kernel."""
        return set(self.launch_counts["tid"].to_list())


def workload_of(trace: Trace) -> Workload:
    """What the report needs of TRACE, read once."""
    bounds = trace_bounds(trace)
    pids = target_pids(trace)
    threads = target_threads(trace, pids)
    tids = threads["tid"].to_list()
    launches = collect_streamed(
        trace.scan(Event.LAUNCH)
        .filter(pl.col("pid").is_in(list(pids)))
        .group_by("tid", "api", "runtime_api")
        .agg(pl.len().alias("launches"))
    )
    syncs = trace.of(Event.SYNC, "ts_ns", "pid", "tid", "api", "runtime_api", "duration_ns").filter(
        pl.col("pid").is_in(list(pids))
    )
    switches = trace.of(Event.SWITCH, "ts_ns", "tid", "voluntary").filter(pl.col("tid").is_in(tids))
    # the run slices (numpy, one CPU) while the segments are built (numpy, the other)
    # a trace that records every switch chains them on each CPU; where it does not, say so
    every_switch = records_every_switch(trace)
    ((runs, cgroup_table), silent, breaks), segments = side_by_side(
        lambda: (_runs(trace, bounds), silent_tasks(trace), switch_chain_breaks(trace) if every_switch else None),
        lambda: thread_segments(trace, tids, bounds),
    )
    irqs = irq_intervals(trace)
    unchained, taken_unknown = inconsistent_cpus(trace, breaks, segments) if breaks is not None else ([], {})

    def states_and_migrations() -> tuple[pl.DataFrame, pl.DataFrame]:
        migrated = trace.of(Event.MIGRATE, "ts_ns", "tid").filter(pl.col("tid").is_in(tids))
        return taken.state_time(segments), taken.migration_time(migrated, segments)

    culprits, (states, migrations) = side_by_side(
        lambda: taken.culprits(segments, runs) if not segments.is_empty() else pl.DataFrame(), states_and_migrations
    )
    return Workload(
        trace=trace,
        bounds=bounds,
        pids=pids,
        threads=threads,
        tids=tids,
        launches=launches,
        syncs=syncs,
        switches=switches,
        segments=segments,
        runs=runs,
        cgroup_table=cgroup_table,
        silent=silent,
        irqs=irqs,
        target_irqs=irqs.filter(pl.col("tid").is_in(tids)),
        unchained=unchained,
        taken_where_unknown=taken_unknown,
        culprits=culprits,
        states=states,
        migrations=migrations,
        lost=lost_by_kind(trace),
    )


def report_from(w: Workload, gaps: Gaps, recoverable_ns: int, collective_pattern: str | None = None) -> Report:
    """The report of W, given its launch-gap section GAPS and RECOVERABLE_NS, the interference inside those
    gaps. They come in apart because there are two ways to find them: streamed (build_report), and with
    every launch in memory (the reference, tests/analysis/reference_gaps.py). COLLECTIVE_PATTERN: as
    build_report's."""
    threads = thread_rows(w)
    trace_info = trace_section(w, threads)
    incomplete = incompleteness(trace_info)
    gpu_info = gpu_activity(w.trace, w.pids)
    gpu_time = gpu_time_section(w, gpu_info)
    return Report(
        schema=REPORT_SCHEMA,
        trace=trace_info,
        gpu_activity=gpu_info,
        gpu_time=gpu_time,
        overview=overview_section(w),
        study_metrics=study_metrics_section(w, threads),
        taken=taken_section(w, threads),
        gaps=gaps,
        verdict=verdict_section(w, threads, recoverable_ns, gpu_time, incomplete),
        host_checks=host_checks_section(w),
        warnings=warnings_section(w.lost, incomplete),
        profiler=profiler_section(w),
        collectives=collectives_section(w, collective_pattern),
    )


def _profiler_ranks(w: Workload) -> dict[int, int]:
    """pid -> its rank, as the profiler files the GPU activity came from say (distributedInfo)."""
    files = w.trace.meta.get(MetaKey.PROFILER) or []
    return {
        f["pid"]: f["rank"]
        for f in (files if isinstance(files, list) else [])
        if isinstance(f.get("pid"), int) and isinstance(f.get("rank"), int)
    }


def collectives_section(w: Workload, pattern: str | None) -> Collectives | None:
    """The workload's collective kernels per rank (collectives.py), with each rank's wait inside them where
    they match across ranks; None where the trace has no GPU activity or no collective kernel."""
    kernels = coll.collective_kernels(w.trace, w.pids, pattern)
    if kernels.is_empty():
        return None
    why_not = coll.unmatchable(kernels)
    waits = coll.split_waits(kernels) if why_not is None else None
    names = coll.names_per_rank(kernels)
    ranks = _profiler_ranks(w)
    rows = []
    for r in coll.per_rank(kernels, waits).iter_rows(named=True):
        mine = names.filter((pl.col("pid") == r["pid"]) & (pl.col("device_id") == r["device_id"]))
        rows.append(
            CollectiveRank(
                pid=r["pid"],
                device_id=r["device_id"],
                rank=ranks.get(r["pid"]),
                kernels=r["kernels"],
                gpu_ns=r["gpu_ns"],
                wait_ns=r["wait_ns"],
                transfer_ns=r["transfer_ns"],
                last_arrivals=r["last_arrivals"],
                longest_wait_ns=r["longest_wait_ns"],
                names=[
                    CollectiveName(name=n, kernels=k, gpu_ns=g)
                    for n, k, g in mine.select("name", "kernels", "gpu_ns").rows()
                ],
            )
        )
    return Collectives(
        pattern=pattern,
        matched=int(waits["k"].n_unique()) if waits is not None else 0,
        matched_by=coll.MATCHED_BY_ORDER if waits is not None else None,
        not_matched=why_not,
        ranks=rows,
    )


def profiler_section(w: Workload) -> list[ProfilerFile]:
    """The PyTorch profiler files the trace's GPU activity came from (meta.json's `profiler`), each with its
    window's share of the recording where it was joined to one."""
    files = w.trace.meta.get(MetaKey.PROFILER) or []
    joined = w.trace.meta.get(MetaKey.MODE) != "profiler"
    span = w.bounds.end_ns - w.bounds.start_ns
    out = []
    for f in files if isinstance(files, list) else []:
        clock = f.get("clock")
        start, end = int(f["window_start_ns"]), int(f["window_end_ns"])
        covered = max(0, min(end, w.bounds.end_ns) - max(start, w.bounds.start_ns))
        out.append(
            ProfilerFile(
                path=f["path"],
                layout=f["layout"],
                pid=f.get("pid"),
                rank=f.get("rank"),
                devices=list(f["devices"]),
                window_start_ns=start,
                window_end_ns=end,
                window_percent=100.0 * covered / span if joined and span > 0 else None,
                kernels=f["kernels"],
                nccl_kernels=f["nccl_kernels"],
                graph_nodes=f["graph_nodes"],
                copies=f["copies"],
                memsets=f["memsets"],
                calls=f["calls"],
                foreign_thread_calls=f["foreign_thread_calls"],
                damage=dict(f.get("damage") or {}),
                clock=ProfilerClock(**clock) if isinstance(clock, dict) else None,
            )
        )
    return out


def trace_section(w: Workload, threads: list[ThreadTaken]) -> TraceInfo:
    """What was recorded, how, and what the numbers cannot show (caveats)."""
    meta, host = w.trace.meta, w.trace.meta.get(MetaKey.HOST) or {}
    taken_ns = sum(t.preempted_ns + t.runqueue_ns + t.irq_ns for t in threads)
    silent_shown, silent_minor = silent_caveats(w.silent, w.culprits, taken_ns)
    return TraceInfo(
        path=str(w.trace.path),
        mode=meta.get(MetaKey.MODE),
        command=meta.get(MetaKey.COMMAND),
        pids=list(meta.get(MetaKey.PIDS) or []),
        host=host.get("hostname"),
        kernel=host.get("kernel_release"),
        cpus=(meta.get(MetaKey.TOPOLOGY) or {}).get("count"),
        truncated=w.trace.truncated,
        clean_end=w.trace.end is not None,
        damage=list(w.trace.damage),
        csv_source=meta.get(MetaKey.CSV_SOURCE),
        caveats=[RecordedCaveat(text) for text in meta.get(MetaKey.CAVEATS, [])]
        + silent_shown
        + ([UnchainedCpus(cpus=w.unchained, trace_seconds=w.bounds.seconds)] if w.unchained else []),
        minor_caveats=silent_minor,
        inconsistent_cpus=w.unchained,
    )


def gpu_time_section(w: Workload, gpu_info: GpuActivity) -> GpuTime:
    """The GPU-time section: exact with GPU activity, bounds from the host without it, or none and why."""
    if w.trace.meta.get(MetaKey.MODE) == "study-csv":
        return gpu.no_section("the study's CSV layout has neither GPU activity nor thread states")
    if not w.pids:
        return gpu.no_section("no target was named")
    launching = w.threads.join(w.launch_counts.select("tid"), on="tid").select("pid", "tid")
    if launching.is_empty():
        return gpu.no_section("no thread of the workload launched a kernel")
    measurement = measurement_of(w.trace)
    if gpu_info.recorded and gpu_info.executions:
        return gpu.exact_section(
            w.trace,
            w.pids,
            w.segments,
            w.runs,
            w.irqs,
            (w.bounds.start_ns, w.bounds.end_ns),
            w.syncs,
            launching,
            measurement,
            cgroup_table=w.cgroup_table,
        )
    if w.segments.is_empty():
        return gpu.no_section("the trace has no thread states for the launching threads")
    landmarks = gpu.launch_landmarks(w.trace, w.pids, w.syncs)
    why = gpu_info.why_absent or "its GPU activity did not arrive"
    return gpu.bounds_section(
        w.trace,
        landmarks,
        w.syncs,
        w.segments,
        w.runs,
        w.irqs,
        launching,
        why,
        measurement,
        cgroup_table=w.cgroup_table,
    )


def overview_section(w: Workload) -> Overview:
    """Counts and rates of what the workload did: launches, syncs, switches, interrupts, lost events."""
    n_launches = int(w.launches["launches"].sum())
    runtime_names = runtime_names_recorded(w.trace, w.launches, w.syncs)
    irq_table = (
        w.irqs.group_by("kind", "name")
        .agg(
            pl.len().alias("count"),
            pl.col("exclusive_ns").sum().alias("ns"),
            pl.col("tid").is_in(w.tids).sum().alias("on_workload"),
        )
        .sort(["ns", "kind", "name"], descending=[True, False, False])
    )
    switches = w.switches.height
    return Overview(
        wall_ns=w.bounds.end_ns - w.bounds.start_ns,
        processes=sorted(w.pids),
        threads=len(w.tids),
        launching_threads=len(w.launching),
        launches=n_launches,
        launches_by_api={
            k: v for k, v in w.launches.group_by("api").agg(pl.col("launches").sum()).sort("api").iter_rows()
        },
        launches_by_runtime_api=_by_runtime_api(w.launches.select("runtime_api", n="launches"), runtime_names),
        launch_rate_hz=n_launches / w.bounds.seconds if w.bounds.seconds else 0.0,
        syncs=w.syncs.height,
        sync_ns=int(w.syncs["duration_ns"].sum() or 0),
        syncs_by_api={k: v for k, v in w.syncs.group_by("api").len().sort("api").iter_rows()},
        syncs_by_runtime_api=_by_runtime_api(w.syncs.group_by("runtime_api").agg(pl.len().alias("n")), runtime_names),
        failed_launches=failed_launches(w.trace, w.pids),
        switches=switches,
        preempted_switches=int((~w.switches["voluntary"]).sum()) if switches else 0,
        blocked_switches=int(w.switches["voluntary"].sum()) if switches else 0,
        irqs=[IrqSummary(kind=k, name=n, count=c, ns=s_, on_workload=o) for k, n, c, s_, o in irq_table.rows()],
        lost_events=w.lost,
    )


def study_metrics_section(w: Workload, threads: list[ThreadTaken]) -> StudyMetrics:
    """The original study's metrics, per 1,000 launches and as rates."""
    n_launches = int(w.launches["launches"].sum())
    switches = w.switches.height
    study_counts = w.trace.meta.get(MetaKey.STUDY_COUNTS)
    if study_counts:
        study_rows, study_launches = study_counts["sched_switch_rows"], study_counts["launches"]
    else:
        switch_ins = w.trace.of(Event.SWITCH, "next_tid").filter(pl.col("next_tid").is_in(w.tids)).height
        study_rows, study_launches = switches + switch_ins, n_launches
    soft = w.target_irqs.filter(pl.col("kind") == Event.SOFTIRQ)
    hard = w.target_irqs.filter(pl.col("kind") != Event.SOFTIRQ)
    off_cpu = sum(t.blocked_ns + t.preempted_ns + t.runqueue_ns + t.offcpu_ns for t in threads)
    lifetime = sum(t.lifetime_ns for t in threads)
    return StudyMetrics(
        sched_per_1k_launches=_per_thousand(switches, n_launches),
        # the study's own arithmetic (docs/metrics.md): a row per switch-out and per switch-in
        sched_rows_per_1k_launches_study=_per_thousand(study_rows, study_launches),
        softirq_per_1k_launches=_per_thousand(soft.height, n_launches),
        hardirq_per_1k_launches=_per_thousand(hard.height, n_launches),
        irq_ns=int(w.target_irqs["exclusive_ns"].sum() or 0),
        off_cpu_ns=off_cpu,
        off_cpu_percent=taken.percent(off_cpu, lifetime) if lifetime else 0.0,
        switch_rate_hz=switches / w.bounds.seconds if w.bounds.seconds else 0.0,
    )


def thread_rows(w: Workload) -> list[ThreadTaken]:
    """Each target thread: its time by state, what it did, and who and what took time from it (taken.threads)."""
    # by task: a task that changed cgroups has a row for each in `culprits`, summed here
    by_task = (
        w.culprits
        if "run_cgroup" not in w.culprits.columns
        else (
            w.culprits.group_by("tid", "cause", "run_pid", "run_comm")
            .agg(pl.col("ns").sum())
            .sort(["ns", "tid", "cause", "run_pid", "run_comm"], descending=[True, False, False, False, False])
        )
    )
    irq_by_thread = taken.irq_time(w.irqs, w.tids)
    switch_counts = w.switches.group_by("tid").agg(
        pl.col("voluntary").sum().alias("blocked_switches"), (~pl.col("voluntary")).sum().alias("preempted_switches")
    )
    sync_time = w.syncs.group_by("tid").agg(pl.len().alias("syncs"), pl.col("duration_ns").sum().alias("sync_ns"))
    irq_ns = irq_by_thread.group_by("tid").agg(pl.col("ns").sum().alias("irq_ns"), pl.col("count").sum().alias("irqs"))
    # a thread with no switch, wakeup or migration (the study's CSV sees only the main thread's switches; a
    # thread that never left its CPU) lived at least from its first event to its last: that is its lifetime,
    # in no known state, rather than none at all
    states = w.states
    unseen = w.threads.filter(~pl.col("tid").is_in(states["tid"].to_list())).select(
        "tid", (pl.col("last_ns").cast(pl.Int64) - pl.col("first_ns").cast(pl.Int64)).alias("unknown_ns")
    )
    if not unseen.is_empty():
        states = pl.concat(
            [states, unseen.with_columns(pl.col("unknown_ns").alias("lifetime_ns"))], how="diagonal_relaxed"
        ).fill_null(0)
    per_thread = (
        w.threads.join(states, on="tid", how="left")
        .join(switch_counts, on="tid", how="left")
        .join(w.launch_counts, on="tid", how="left")
        .join(sync_time, on="tid", how="left")
        .join(irq_ns, on="tid", how="left")
        .join(w.migrations, on="tid", how="left")
        .fill_null(0)
        .sort("launches", "tid", descending=[True, False])
    )
    rows = []
    for row in per_thread.iter_rows(named=True):
        tid = row["tid"]
        mine = by_task.filter(pl.col("tid") == tid) if not by_task.is_empty() else by_task
        rows.append(
            ThreadTaken(
                pid=row["pid"],
                tid=tid,
                comm=row["comm"],
                lifetime_ns=row["lifetime_ns"],
                launches=row["launches"],
                syncs=row["syncs"],
                sync_ns=row["sync_ns"],
                running_ns=row["running_ns"],
                blocked_ns=row["blocked_ns"],
                offcpu_ns=row["offcpu_ns"],
                preempted_ns=row["preempted_ns"],
                runqueue_ns=row["runqueue_ns"],
                irq_ns=row["irq_ns"],
                unknown_ns=row["unknown_ns"],
                preempted_switches=row["preempted_switches"],
                blocked_switches=row["blocked_switches"],
                migrations=row["migrations"],
                runnable_around_migrations_ns=row["runnable_around_ns"],
                taken_percent=taken.percent(
                    row["preempted_ns"] + row["runqueue_ns"] + row["irq_ns"], row["lifetime_ns"]
                ),
                culprits=[
                    ThreadCulprit(cause=c, pid=p, comm=m, ns=n)
                    for c, p, m, n in (
                        mine.select("cause", "run_pid", "run_comm", "ns").head(5).rows() if not mine.is_empty() else []
                    )
                ],
                irqs=[
                    ThreadIrq(kind=k, name=n, count=c, ns=s_)
                    for _, k, n, c, s_ in irq_by_thread.filter(pl.col("tid") == tid).rows()
                ],
            )
        )
    return rows


def taken_section(w: Workload, threads: list[ThreadTaken]) -> Taken:
    """Time taken from the workload: the totals, each thread (THREADS: thread_rows), the top culprits."""
    culprits = []
    ours = measurement_of(w.trace)
    # the collector's threads run in the workload's processes: known by the names they ran under there
    collector = collector_names(w.trace, ours)
    if not w.culprits.is_empty():
        for cause, pid, comm, ns in (
            w.culprits.group_by("cause", "run_pid", "run_comm")
            .agg(pl.col("ns").sum())
            .sort(["ns", "cause", "run_pid", "run_comm"], descending=[True, False, False, False])
            .head(10)
            .rows()
        ):
            culprits.append(
                Culprit(
                    cause=cause,
                    pid=pid,
                    comm=comm,
                    ns=ns,
                    is_recorder=ours.is_ours_by_name(pid, comm) or (pid, comm) in collector,
                    is_idle=pid == 0,
                )
            )
    return Taken(
        total=TakenTotal(
            lifetime_ns=sum(t.lifetime_ns for t in threads),
            preempted_ns=sum(t.preempted_ns for t in threads),
            runqueue_ns=sum(t.runqueue_ns for t in threads),
            irq_ns=sum(t.irq_ns for t in threads),
            blocked_ns=sum(t.blocked_ns for t in threads),
            sync_ns=sum(t.sync_ns for t in threads),
            migrations=sum(t.migrations for t in threads),
        ),
        threads=threads,
        culprits=culprits,
        culprits_by_cgroup=_cgroup_culprits(w.culprits, w.cgroup_table),
    )


def gaps_section(launch_gaps: GapStats) -> Gaps:
    """Launch gaps by class, the tail's attribution and the bursts (gap_stream.py)."""
    return Gaps(
        classes=launch_gaps.class_table(),
        tail=launch_gaps.tail_attribution(),
        bursts=launch_gaps.bursts(),
        count=launch_gaps.count,
    )


def verdict_section(
    w: Workload, threads: list[ThreadTaken], recoverable_ns: int, gpu_time: GpuTime, incomplete: IncompleteTrace | None
) -> Verdict:
    """The verdict (verdict.py): in GPU time where the GPU-time section has one, else in the launching threads'
    CPU time; none for a study CSV or a trace that names no workload. INCOMPLETE: why the trace is not the
    whole recording (None when it is)."""
    if w.trace.meta.get(MetaKey.MODE) == "study-csv":
        verdict = judge.no_verdict_from_study_csv(w.trace)
    elif not w.pids:
        verdict = judge.no_verdict_without_target(w.trace)
    else:
        verdict = judge.cpu_verdict(threads, w.launching, recoverable_ns, w.taken_where_unknown)
        match gpu_time:
            case GpuTimeExact() | GpuTimeBounds() if gpu_time.active_ns:
                verdict = judge.gpu_verdict(
                    verdict,
                    gpu_time,
                    profiler_alone=w.trace.meta.get(MetaKey.MODE) == "profiler",
                    attached=w.trace.meta.get(MetaKey.MODE) == "pids",
                )
    return judge.on_incomplete_trace(verdict, incomplete) if incomplete else verdict


# where the doctor's checks in the report come from
HOST_CHECKS_SOURCE = "host files captured when recording started"


def host_checks_section(w: Workload) -> HostChecks | None:
    """`launchgap doctor` on the host files the recorder kept (metadata `host_files`), its target the CPUs the
    launching threads ran on from their first launch (the workload threads' when none launched): every check
    that warns or fails, and every one about the target's CPUs. None when the trace carries no host files
    (imported traces, older recorders)."""
    snapshot = w.trace.meta.get(MetaKey.HOST_FILES)
    if not snapshot:
        return None
    launching = w.launching
    tids, whose = (
        (launching, "the launching threads' CPUs") if launching else (set(w.tids), "the workload threads' CPUs")
    )
    cpus = workload_cpus(w.trace, tids, launching=bool(launching))
    target = Target(cpus, whose) if cpus else None
    result = run_doctor(SnapshotHost(snapshot, "the recorded host"), target)
    bearing = [
        c for c in result.checks if c.status in (Status.WARN, Status.FAIL) or (c.about_target and target is not None)
    ]
    return HostChecks(
        source=HOST_CHECKS_SOURCE,
        target=HostTarget(cpus=sorted(cpus), description=whose),
        counts=result.counts(),
        checks=bearing,
    )


def warnings_section(lost: dict[str, int], incomplete: IncompleteTrace | None) -> dict[str, LowerBound]:
    """metric -> why it is a lower bound: events it rests on were lost; "trace" when the trace is not the
    whole recording (INCOMPLETE says why)."""
    warnings: dict[str, LowerBound] = dict(lower_bounds(lost))
    if incomplete:
        # every metric rests on part of the recording: said beside them, and --strict fails on it
        warnings["trace"] = incomplete
    return warnings
