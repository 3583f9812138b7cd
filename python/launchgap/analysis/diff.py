"""Two reports side by side: every headline metric, and the change, as
typed records (serialised at the edge: `diff --json`, docs/report-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from launchgap.analysis.records import GpuTimeBounds, GpuTimeExact, GpuTimeNotEstimated, LowerBound, Record, Report, Say
from launchgap.trace.schema import INTERFERENCE_CAUSES

DIFF_SCHEMA = "launchgap-diff/1"

T = TypeVar("T")


@dataclass(frozen=True)
class BothSides(Record, Generic[T]):
    """One thing of each report: A's and B's."""

    a: T
    b: T


@dataclass(frozen=True)
class MetricChange(Record):
    metric: str  # what a reader calls it ("launch rate (/s)")
    a: float | None
    b: float | None
    change_percent: float | None  # (b - a) / a x 100; None when A's is 0 or either is unknown
    # both sides under this (the metric's unit): too small for a share to mean anything, the change is said as a
    # difference (0.002 to 0.09 ms of IRQ time is no "4410% higher")
    floor: float = 0.0


@dataclass(frozen=True)
class TraceState(Record):
    """Whether the numbers of one side rest on a whole trace."""

    path: str
    truncated: bool
    clean_end: bool
    damage: list[str]


@dataclass(frozen=True)
class GpuTimeSide(Record):
    """One trace's GPU time, as the diff gives it: shares of the GPU's span, idle by interference (each
    cause where exact, the total as bounds otherwise) and by the app's own host work."""

    mode: str
    why: str | None
    active_ns: int
    span_ns: int
    busy_percent: float | None
    idle_percent: float | None
    interference_exact: bool
    interference_low_ns: int
    interference_high_ns: int
    interference_low_percent: float | None
    interference_high_percent: float | None
    interference_by_cause_ns: dict[str, int] | None  # by INTERFERENCE_CAUSES, where exact
    own_ns: int | None
    steps_per_s: float | None = None  # the app's steps (a drain sync each) a second over the active span


@dataclass(frozen=True)
class GpuTimeChange(Record):
    """B - A: in percentage points for shares, nanoseconds for times; a range where either side is bounds."""

    busy_points: float | None
    idle_points: float | None
    # the smallest and largest change the bounds allow (equal when both sides are exact)
    interference_low_ns: int
    interference_high_ns: int
    interference_by_cause_ns: dict[str, int] | None
    own_ns: int | None


@dataclass(frozen=True)
class GpuCulpritChange(Record):
    """A culprit in GPU time in both traces, matched by name (process ids differ from run to run; a command's
    processes together, every cause summed); a side whose culprits (the report's top ten) do not name it has None
    there, counted as 0 in the change."""

    culprit: str | None
    is_interrupt: bool
    a_low_ns: int | None
    a_high_ns: int | None
    b_low_ns: int | None
    b_high_ns: int | None
    a_pids: list[int]
    b_pids: list[int]
    change_low_ns: int
    change_high_ns: int


@dataclass(frozen=True)
class GpuTimeDiff(Record):
    a: GpuTimeSide
    b: GpuTimeSide
    change: GpuTimeChange
    culprits: list[GpuCulpritChange]


@dataclass(frozen=True)
class CgroupChange(Record):
    """One cgroup's culprit time in A and in B (0 where a side has no such row)."""

    cgroup: str | None
    name: str
    container_id: str | None
    pod: str | None
    cause: str
    a_ns: int
    b_ns: int
    change_percent: float | None


@dataclass(frozen=True)
class CgroupCulpritsDiff(Record):
    cpu: list[CgroupChange]  # what the workload's threads lost to each cgroup's tasks
    gpu: list[CgroupChange] | None  # the GPU idle they caused, where both reports have a GPU-time section


@dataclass(frozen=True)
class ReportDiff(Record):
    schema: str
    a: str  # the traces' paths
    b: str
    # positive when B is slower than A: (rate A - rate B) / rate A x 100
    launch_rate_slowdown_percent: float | None
    metrics: list[MetricChange]
    verdicts: BothSides[str]
    traces: BothSides[TraceState]
    warnings: BothSides[dict[str, LowerBound]]  # in the JSON, in words (views/report_json.py)
    gpu_time: GpuTimeDiff
    # with `--culprits-by cgroup` only: absent from the JSON otherwise
    culprits_by_cgroup: CgroupCulpritsDiff | None = None

    def to_json(self, say: Say | None = None) -> dict:
        out = super().to_json(say)
        if self.culprits_by_cgroup is None:
            del out["culprits_by_cgroup"]
        return out


def _metrics(report: Report) -> dict[str, float | None]:
    o, m, t = report.overview, report.study_metrics, report.taken.total
    wall_s = o.wall_ns / 1e9
    return {
        "wall time (s)": wall_s,
        "launches": o.launches,
        "launch rate (/s)": o.launch_rate_hz,
        "Sched/1K": m.sched_per_1k_launches,
        "SoftIRQ/1K": m.softirq_per_1k_launches,
        "HardIRQ/1K": m.hardirq_per_1k_launches,
        "IRQ time (ms)": m.irq_ns / 1e6,
        "off-CPU (%)": m.off_cpu_percent,
        "switch rate (Hz)": m.switch_rate_hz,
        "preempted switches": o.preempted_switches,
        "blocked switches": o.blocked_switches,
        "preempted (ms)": t.preempted_ns / 1e6,
        "run-queue wait (ms)": t.runqueue_ns / 1e6,
        "IRQ on workload (ms)": t.irq_ns / 1e6,
        "migrations": t.migrations,
        "taken (%)": report.verdict.taken_percent,
        "Sched/1K (study's count)": m.sched_rows_per_1k_launches_study,
    }


# below these (the metric's unit) on both sides a change is said as a difference, not a share
FLOORS = {
    "IRQ time (ms)": 1.0,
    "preempted (ms)": 1.0,
    "run-queue wait (ms)": 1.0,
    "IRQ on workload (ms)": 1.0,
    "off-CPU (%)": 1.0,
    "taken (%)": 1.0,
    "launches": 10,
    "preempted switches": 10,
    "blocked switches": 10,
    "migrations": 10,
    "Sched/1K": 1.0,
    "SoftIRQ/1K": 1.0,
    "HardIRQ/1K": 1.0,
    "Sched/1K (study's count)": 1.0,
}


def _trace_state(report: Report) -> TraceState:
    t = report.trace
    return TraceState(path=t.path, truncated=t.truncated, clean_end=t.clean_end, damage=list(t.damage))


def _percent_change(x: float | None, y: float | None) -> float | None:
    return None if x in (None, 0) or y is None else 100.0 * (y - x) / x


def diff_reports(a: Report, b: Report, culprits_by: str | None = None) -> ReportDiff:
    """The comparison (docs/report-schema.md, `launchgap-diff/1`); with CULPRITS_BY "cgroup", the culprit
    time of each cgroup side by side too (`culprits_by_cgroup`)."""
    ma, mb = _metrics(a), _metrics(b)
    rate_a, rate_b = a.overview.launch_rate_hz, b.overview.launch_rate_hz
    return ReportDiff(
        schema=DIFF_SCHEMA,
        a=a.trace.path,
        b=b.trace.path,
        launch_rate_slowdown_percent=100.0 * (rate_a - rate_b) / rate_a if rate_a else None,
        metrics=[
            MetricChange(
                metric=name,
                a=ma[name],
                b=mb[name],
                change_percent=_percent_change(ma[name], mb[name]),
                floor=FLOORS.get(name, 0.0),
            )
            for name in ma
        ],
        verdicts=BothSides(a=a.verdict.level, b=b.verdict.level),
        traces=BothSides(a=_trace_state(a), b=_trace_state(b)),
        warnings=BothSides(a=dict(a.warnings), b=dict(b.warnings)),
        gpu_time=diff_gpu_time(a, b),
        culprits_by_cgroup=culprits_by_cgroup(a, b) if culprits_by == "cgroup" else None,
    )


# --- GPU time (docs/gpu-time.md): both sides' numbers and their difference -------------------------


def _gpu_side(report: Report) -> GpuTimeSide:
    g = report.gpu_time
    match g:
        case GpuTimeNotEstimated():
            return GpuTimeSide(
                mode=g.MODE,
                why=g.why,
                active_ns=0,
                span_ns=0,
                busy_percent=None,
                idle_percent=None,
                interference_exact=False,
                interference_low_ns=0,
                interference_high_ns=0,
                interference_low_percent=None,
                interference_high_percent=None,
                interference_by_cause_ns=None,
                own_ns=None,
                steps_per_s=None,
            )
        case GpuTimeExact():
            by_cause = {c.cause: c.ns for c in g.causes}
            return _estimated_side(
                g,
                why=None,
                span_ns=g.span_ns,
                busy_percent=g.busy_percent,
                idle_percent=None if g.busy_percent is None else 100.0 - g.busy_percent,
                interference_exact=True,
                interference=(g.interference_ns, g.interference_ns),
                interference_by_cause_ns={c: int(by_cause.get(c, 0)) for c in INTERFERENCE_CAUSES},
                own_ns=g.own_ns,
            )
        case GpuTimeBounds():
            return _estimated_side(
                g,
                why=g.why,
                span_ns=g.active_ns,
                busy_percent=None,
                idle_percent=None,
                interference_exact=False,
                interference=(g.interference_low_ns, g.interference_high_ns),
                interference_by_cause_ns=None,
                own_ns=None,
            )


def _estimated_side(g: GpuTimeExact | GpuTimeBounds, interference: tuple[int, int], **kind) -> GpuTimeSide:
    """A side with GPU time: what either kind has (its KIND's own numbers given), INTERFERENCE its low and
    high."""

    def share(ns: int) -> float | None:
        return 100.0 * ns / g.active_ns if g.active_ns else None

    p = g.prediction
    return GpuTimeSide(
        mode=g.MODE,
        active_ns=g.active_ns,
        interference_low_ns=interference[0],
        interference_high_ns=interference[1],
        interference_low_percent=share(interference[0]),
        interference_high_percent=share(interference[1]),
        steps_per_s=p.measured_per_s if p and p.basis == "steps" else None,
        **kind,
    )


def _change(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _culprits_by_name(report: Report) -> dict[tuple, tuple[int, int, list[int]]]:
    """(is an interrupt, name) -> low ns, high ns and the process ids of REPORT's culprits in GPU time."""
    match report.gpu_time:
        case GpuTimeNotEstimated():
            return {}
        case GpuTimeExact(culprits=culprits) | GpuTimeBounds(culprits=culprits):
            return {(c.is_interrupt, c.name): (c.low_ns, c.high_ns, list(c.pids)) for c in culprits}


def _gpu_culprits(a: Report, b: Report) -> list[GpuCulpritChange]:
    """The culprit tables of both sides in GPU time, matched by name, the largest change first."""
    in_a, in_b = _culprits_by_name(a), _culprits_by_name(b)
    rows = []
    for key in {**in_a, **in_b}:  # A's names first, then B's: equal rows keep that order
        a_low, a_high, a_pids = in_a.get(key, (None, None, []))
        b_low, b_high, b_pids = in_b.get(key, (None, None, []))
        rows.append(
            GpuCulpritChange(
                culprit=key[1],
                is_interrupt=key[0],
                a_low_ns=a_low,
                a_high_ns=a_high,
                b_low_ns=b_low,
                b_high_ns=b_high,
                a_pids=a_pids,
                b_pids=b_pids,
                change_low_ns=(b_low or 0) - (a_high or 0),
                change_high_ns=(b_high or 0) - (a_low or 0),
            )
        )
    return sorted(rows, key=lambda r: (-max(abs(r.change_low_ns), abs(r.change_high_ns)), r.culprit or ""))


def diff_gpu_time(a: Report, b: Report) -> GpuTimeDiff:
    """`gpu_time` of the diff (docs/report-schema.md): each side's GPU time, the changes (B - A, in
    percentage points for shares and nanoseconds for times; a range where either side is bounds), and the
    culprits of both in GPU time."""
    sa, sb = _gpu_side(a), _gpu_side(b)
    by_cause = None
    if sa.interference_by_cause_ns is not None and sb.interference_by_cause_ns is not None:
        by_cause = {c: sb.interference_by_cause_ns[c] - sa.interference_by_cause_ns[c] for c in INTERFERENCE_CAUSES}
    change = GpuTimeChange(
        busy_points=_change(sa.busy_percent, sb.busy_percent),
        idle_points=_change(sa.idle_percent, sb.idle_percent),
        interference_low_ns=sb.interference_low_ns - sa.interference_high_ns,
        interference_high_ns=sb.interference_high_ns - sa.interference_low_ns,
        interference_by_cause_ns=by_cause,
        own_ns=None if sa.own_ns is None or sb.own_ns is None else sb.own_ns - sa.own_ns,
    )
    return GpuTimeDiff(a=sa, b=sb, change=change, culprits=_gpu_culprits(a, b))


# --- culprits by cgroup ------------------------------------------------------------------------------


def _by_group(rows_a: list, rows_b: list, value) -> list[CgroupChange]:
    """Rows of two reports' by-cgroup culprit lists matched by (cgroup, name, cause), each side's VALUE (0 where
    a side has no such row), the largest (either side) first."""
    key = lambda r: (r.cgroup or "", r.name, r.cause)  # noqa: E731
    a, b = {key(r): r for r in rows_a}, {key(r): r for r in rows_b}
    out = []
    for k in sorted(set(a) | set(b)):
        x = value(a[k]) if k in a else 0
        y = value(b[k]) if k in b else 0
        row = a.get(k) or b[k]
        out.append(
            CgroupChange(
                cgroup=row.cgroup,
                name=row.name,
                container_id=row.container_id,
                pod=row.pod,
                cause=row.cause,
                a_ns=x,
                b_ns=y,
                change_percent=_percent_change(x, y),
            )
        )
    return sorted(out, key=lambda r: (-max(r.a_ns, r.b_ns), r.cause, r.name, r.cgroup or ""))


def culprits_by_cgroup(a: Report, b: Report) -> CgroupCulpritsDiff:
    """The culprit time of each cgroup in A and in B (docs/report-schema.md, `culprits_by_cgroup` of
    `launchgap-diff/1`): `cpu`, what the workload's threads lost to its tasks (taken.culprits_by_cgroup);
    `gpu`, the GPU idle they caused (gpu_time.culprits_by_cgroup, its upper bound: exact with GPU activity),
    where both reports have a GPU-time section. The caller checks both traces record cgroups."""
    gpu = None
    match a.gpu_time, b.gpu_time:
        case (GpuTimeExact() | GpuTimeBounds() as ga, GpuTimeExact() | GpuTimeBounds() as gb) if (
            ga.culprits_by_cgroup is not None and gb.culprits_by_cgroup is not None
        ):
            gpu = _by_group(ga.culprits_by_cgroup, gb.culprits_by_cgroup, lambda r: r.high_ns)
    return CgroupCulpritsDiff(
        cpu=_by_group(a.taken.culprits_by_cgroup or [], b.taken.culprits_by_cgroup or [], lambda r: r.ns), gpu=gpu
    )
