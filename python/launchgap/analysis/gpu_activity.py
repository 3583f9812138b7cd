"""GPU activity (CUPTI's records, `record --gpu-activity`) joined to the host's
launches: each kernel or graph execution to the launch row that made it.

The join rests on three facts (docs/trace-format.md, "GPU activity"):
- a launch row (the driver-entry uprobe) and the gpu_api row of the same driver call
  are the same call: per thread, the launch rows and the gpu_api rows of launch entry
  points are in one-to-one correspondence, in time order;
- a GPU execution carries the correlation id of the API call that made it, unique
  within its process; CUPTI may give it the runtime call's id rather than the driver
  call's, and then the runtime call encloses the driver call on the same thread;
- a graph traced node by node has one kernel row per node, all with the launch's id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl

from launchgap.analysis.records import CollectorContention, CollectorFailure, GpuActivity
from launchgap.trace import Event, Trace
from launchgap.trace.kineto import LAUNCH_CALLS, PROFILER_SOURCE, launch_calls
from launchgap.trace.schema import MetaKey

# a trace without the recorder's word on it: older than GPU activity, or imported
NOT_IN_TRACE = "the trace has none (recorded without --gpu-activity, by an older launchgap, or imported)"

EXECUTION_COLUMNS = (
    "pid",
    "correlation_id",
    "gpu_start_ns",
    "gpu_end_ns",
    "device_id",
    "context_id",
    "stream_id",
    "what",
    "kernel_name",
)


def executions(trace: Trace) -> pl.DataFrame:
    """One row per launch's GPU execution: a kernel launched alone, a graph traced as one, or a
    graph traced node by node (its nodes folded into one interval). `what`: kernel or graph."""
    kernels = trace.scan(Event.GPU_KERNEL).select(
        "pid",
        "correlation_id",
        pl.col("ts_ns").alias("gpu_start_ns"),
        pl.col("end_ns").alias("gpu_end_ns"),
        "device_id",
        "context_id",
        "stream_id",
        "kernel_name",
        "graph_id",
    )
    alone = kernels.filter(pl.col("graph_id").is_null()).select(
        *EXECUTION_COLUMNS[:7], pl.lit("kernel").alias("what"), "kernel_name"
    )
    nodes = (
        kernels.filter(pl.col("graph_id").is_not_null())
        .group_by("pid", "correlation_id")
        .agg(
            pl.col("gpu_start_ns").min(),
            pl.col("gpu_end_ns").max(),
            pl.col("device_id").first(),
            pl.col("context_id").first(),
            pl.col("stream_id").first(),
        )
        .select(*EXECUTION_COLUMNS[:7], pl.lit("graph").alias("what"), pl.lit(None, pl.String).alias("kernel_name"))
    )
    graphs = trace.scan(Event.GPU_GRAPH).select(
        "pid",
        "correlation_id",
        pl.col("ts_ns").alias("gpu_start_ns"),
        pl.col("end_ns").alias("gpu_end_ns"),
        "device_id",
        "context_id",
        "stream_id",
        pl.lit("graph").alias("what"),
        pl.lit(None, pl.String).alias("kernel_name"),
    )
    return pl.concat([alone, nodes, graphs]).sort("gpu_start_ns", "pid", "correlation_id").collect()


def merge_intervals(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """FRAME's [start_ns, end_ns) intervals, overlapping or touching ones merged, per BY group:
    disjoint intervals in time order."""
    ordered = frame.sort([*by, "start_ns"])
    reach = pl.col("end_ns").cum_max().shift(1).over(by)
    return (
        ordered.with_columns(((pl.col("start_ns") > reach) | reach.is_null()).cum_sum().over(by).alias("run"))
        .group_by([*by, "run"])
        .agg(pl.col("start_ns").min(), pl.col("end_ns").max())
        .drop("run")
        .sort([*by, "start_ns"])
    )


def busy_intervals(trace: Trace) -> pl.DataFrame:
    """When each process's GPU ran anything (kernels, graphs, copies, memsets), per device, as
    disjoint intervals: pid, device_id, start_ns, end_ns. Per process: CUPTI numbers devices
    within a process (CUDA_VISIBLE_DEVICES renumbers them), so processes are not merged."""
    execs = executions(trace).select(
        "pid", "device_id", pl.col("gpu_start_ns").alias("start_ns"), pl.col("gpu_end_ns").alias("end_ns")
    )
    others = [
        trace.of(kind, "pid", "device_id", "ts_ns", "end_ns").rename({"ts_ns": "start_ns"})
        for kind in (Event.GPU_MEMCPY, Event.GPU_MEMSET)
    ]
    work = pl.concat([execs, *[o.select(execs.columns) for o in others]])
    return merge_intervals(work, ["pid", "device_id"])


def _ranked(frame: pl.DataFrame, time: str) -> pl.DataFrame:
    """FRAME with each row's rank among its thread's rows in time order."""
    return frame.sort("pid", "tid", time, maintain_order=True).with_columns(
        pl.int_range(pl.len()).over("pid", "tid").alias("rank")
    )


def _fill_from_enclosing_calls(
    direct: pl.DataFrame, paired: pl.DataFrame, api: pl.DataFrame, unmatched: pl.DataFrame, launch_apis: list[str]
) -> pl.DataFrame:
    """DIRECT (the launches joined to their executions by the driver call's id) with the executions CUPTI
    numbered with the enclosing runtime call's id (UNMATCHED) filled in: each put on the launch whose driver
    call (PAIRED) that runtime call (API, not one of LAUNCH_APIS) encloses."""
    outer = (
        api.filter(~pl.col("api").is_in(launch_apis))
        .join(unmatched, on=["pid", "correlation_id"], how="inner")
        .select(
            "pid",
            "tid",
            pl.col("ts_ns").alias("outer_start_ns"),
            pl.col("end_ns").alias("outer_end_ns"),
            *[c for c in EXECUTION_COLUMNS if c not in ("pid", "correlation_id")],
        )
        .sort("outer_start_ns")
    )
    inner = paired.select("pid", "tid", "rank", "call_start_ns").drop_nulls().sort("call_start_ns")
    # both sides sorted by time above; polars cannot check that within `by` groups, and warned on every report
    nested = (
        inner.join_asof(
            outer,
            left_on="call_start_ns",
            right_on="outer_start_ns",
            by=["pid", "tid"],
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("outer_end_ns").is_not_null() & (pl.col("call_start_ns") <= pl.col("outer_end_ns")))
        .select("pid", "tid", "rank", *[c for c in EXECUTION_COLUMNS if c not in ("pid", "correlation_id")])
    )
    filled = direct.join(nested, on=["pid", "tid", "rank"], how="left", suffix="_outer")
    return filled.with_columns(
        [pl.coalesce(c, f"{c}_outer").alias(c) for c in EXECUTION_COLUMNS if c not in ("pid", "correlation_id")]
    ).drop([f"{c}_outer" for c in EXECUTION_COLUMNS if c not in ("pid", "correlation_id")])


def join_launches(trace: Trace) -> pl.DataFrame:
    """Every launch row of the processes that have GPU activity, with its GPU execution:
    ts_ns, pid, tid, api, correlation_id, gpu_start_ns, gpu_end_ns, device_id, context_id,
    stream_id, what, kernel_name (null where the execution never arrived), and `api_matches`:
    whether the gpu_api row paired with it names the same entry point (false means the
    pairing by order slipped: a gpu_api row was lost)."""
    api = trace.of(Event.GPU_API, "ts_ns", "end_ns", "pid", "tid", "api", "correlation_id")
    with_activity = api["pid"].unique().to_list()
    launches = (
        trace.scan(Event.LAUNCH)
        .select("ts_ns", "pid", "tid", "api")
        .filter(pl.col("pid").is_in(with_activity))
        .collect()
    )
    launch_apis = launches["api"].unique().to_list()
    # the driver calls that are launches, paired with the launch rows by order on their thread; a profiler's
    # trace records the runtime's calls (and the driver's only where the app called it): its launch calls
    from_profiler = (trace.meta.get(MetaKey.GPU_ACTIVITY) or {}).get("source") == PROFILER_SOURCE
    made = launch_calls(api) if from_profiler else api.filter(pl.col("api").is_in(launch_apis))
    if from_profiler:
        launch_apis = list(LAUNCH_CALLS)
    calls = _ranked(made, "ts_ns").select(
        "pid",
        "tid",
        "rank",
        pl.col("api").alias("call_api"),
        "correlation_id",
        pl.col("ts_ns").alias("call_start_ns"),
        pl.col("end_ns").alias("call_end_ns"),
    )
    paired = _ranked(launches, "ts_ns").join(calls, on=["pid", "tid", "rank"], how="left")
    execs = executions(trace)
    direct = paired.join(execs, on=["pid", "correlation_id"], how="left")
    # CUPTI may number the execution with the runtime call's id: that call encloses the driver call
    unmatched = execs.join(paired.select("pid", "correlation_id"), on=["pid", "correlation_id"], how="anti")
    if not unmatched.is_empty():
        direct = _fill_from_enclosing_calls(direct, paired, api, unmatched, launch_apis)
    return (
        direct.with_columns((pl.col("call_api") == pl.col("api")).fill_null(False).alias("api_matches"))
        .select(
            "ts_ns",
            "pid",
            "tid",
            "api",
            "correlation_id",
            "gpu_start_ns",
            "gpu_end_ns",
            "device_id",
            "context_id",
            "stream_id",
            "what",
            "kernel_name",
            "api_matches",
        )
        .sort("ts_ns", "pid", "tid")
    )


@dataclass(frozen=True)
class CollectorState:
    """What one process's collector said of itself."""

    pid: int
    state: str
    detail: dict
    ts_ns: int = 0


def collector_states(trace: Trace) -> list[CollectorState]:
    """Every gpu_collector row, in time order, its detail parsed (unparsable detail: empty)."""
    out = []
    for ts, pid, state, detail in (
        trace.of(Event.GPU_COLLECTOR, "ts_ns", "pid", "state", "detail").sort("ts_ns").iter_rows()
    ):
        try:
            parsed = json.loads(detail) if detail else {}
        except ValueError:
            parsed = {}
        out.append(
            CollectorState(pid=pid, state=state, detail=parsed if isinstance(parsed, dict) else {}, ts_ns=int(ts))
        )
    return out


def _in_profiler_windows(trace: Trace) -> pl.Expr:
    """Rows (pid, ts_ns) inside a profiler file's window for their process, where the trace's GPU activity came
    from profiler files joined to a recording (meta.json's `profiler`); every row otherwise."""
    files = trace.meta.get(MetaKey.PROFILER) or []
    if trace.meta.get(MetaKey.MODE) == "profiler" or not isinstance(files, list) or not files:
        return pl.lit(True)
    return pl.any_horizontal(
        [
            (pl.col("pid") == f["pid"]) & pl.col("ts_ns").is_between(f["window_start_ns"], f["window_end_ns"])
            for f in files
        ]
    )


def gpu_activity(trace: Trace, pids: set[int]) -> GpuActivity:
    """What GPU activity the trace holds for the processes PIDS, or why it holds none."""
    recording = trace.meta.get(MetaKey.GPU_ACTIVITY) or {}  # how GPU activity was recorded, or why not
    states = [s for s in collector_states(trace) if s.pid in pids]
    started = [s for s in states if s.state == "started"]
    failed = [
        CollectorFailure(pid=s.pid, reason=str(s.detail.get("reason", "no reason given")))
        for s in states
        if s.state == "failed"
    ]
    if not recording.get("recorded"):
        why = recording.get("why") if recording else NOT_IN_TRACE
        return GpuActivity(
            recorded=False,
            why_absent=why,
            cupti=None,
            cupti_version=None,
            clock_method=None,
            clock_error_ns=None,
            collectors_started=0,
            collectors_failed=[],
            executions=0,
            copies=0,
            memsets=0,
            syncs=0,
            launches_joined=0,
            launches_without_execution=0,
        )
    clocks = [s.detail.get("clock") or {} for s in started]
    errors = [c.get("error_ns") for c in clocks if isinstance(c.get("error_ns"), int)]
    methods = sorted({str(c.get("method")) for c in clocks if c.get("method")})
    # joined to profiler traces: how each file's clock was put on the recording's, and within what
    for f in trace.meta.get(MetaKey.PROFILER) or []:
        clock = f.get("clock") if isinstance(f, dict) else None
        if isinstance(clock, dict):
            methods = sorted({*methods, f"pytorch profiler: {clock.get('method')}"})
            error = (
                clock.get("residual_ns")
                if clock.get("residual_ns") is not None
                else clock.get("recorded_uncertainty_ns")
            )
            if isinstance(error, int):
                errors.append(error)
    wanted = list(pids)
    of_targets = lambda kind: trace.scan(kind).filter(pl.col("pid").is_in(wanted))  # noqa: E731
    count = lambda kind: of_targets(kind).select(pl.len()).collect().item()  # noqa: E731
    joined = join_launches(trace).filter(pl.col("pid").is_in(wanted))
    with_execution = joined["gpu_start_ns"].is_not_null().sum()
    # launch rows of target processes without any GPU activity (no collector ran there) are missing too; joined
    # to profiler traces, only the launches inside their windows could have theirs
    launches = of_targets(Event.LAUNCH).filter(_in_profiler_windows(trace)).select(pl.len()).collect().item()
    cupti = recording.get("cupti") or {}
    contended = [
        CollectorContention(
            pid=s.pid,
            ts_ns=s.ts_ns,
            what=str(s.detail.get("what", "?")),
            done=str(s.detail.get("done", "?")),
            kind=s.detail.get("kind") if isinstance(s.detail.get("kind"), int) and s.detail.get("kind") >= 0 else None,
        )
        for s in states
        if s.state == "contended"
    ]
    return GpuActivity(
        recorded=True,
        why_absent=None,
        cupti=cupti.get("path"),
        cupti_version=cupti.get("version"),
        clock_method=", ".join(methods) or None,
        clock_error_ns=max(errors) if errors else None,
        collectors_started=len(started),
        collectors_failed=failed,
        executions=executions(trace).filter(pl.col("pid").is_in(wanted)).height,
        copies=count(Event.GPU_MEMCPY),
        memsets=count(Event.GPU_MEMSET),
        syncs=count(Event.GPU_SYNC),
        launches_joined=int(with_execution),
        launches_without_execution=int(launches - with_execution),
        contended=contended,
    )
