"""The report as typed records: what analysis/report.py builds and every
consumer reads (the terminal view, diff, experiments) by attribute. JSON is
made only at the edge (`report --json`, `diff --json`, experiment results):
`Report.to_json(say)`, whose layout docs/report-schema.md describes (a test
checks the two agree, field by field, both ways). What the report states in
words (a verdict's grounds, a caveat, a warning) is a typed Fact here, never a
string: its words, in the terminal and in the JSON's text fields alike, are
views/verdict_words.py's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

from launchgap.doctor.model import Check
from launchgap.trace.checks import SilentTask


class Fact:
    """A finding the report states in words (a verdict's grounds, a caveat, a warning): typed here, said only by
    views/verdict_words.py `say`, for the terminal and for the JSON's text fields alike. Not a Record: the JSON
    holds its words, never its fields."""


# what turns a Fact into its words: views/verdict_words.py `say`
Say = Callable[[Fact], str]


def _json(value: Any, say: Say | None) -> Any:
    if isinstance(value, Fact):
        if say is None:
            raise TypeError(f"{type(value).__name__} is said in words: to_json(say), say from views/verdict_words.py")
        return say(value)
    if is_dataclass(value):
        # without SAY, as before: a record that overrides to_json and holds no fact need not take it
        return value.to_json(say) if say is not None and isinstance(value, Record) else value.to_json()
    if isinstance(value, (list, tuple)):
        return [_json(v, say) for v in value]
    if isinstance(value, dict):
        return {k: _json(v, say) for k, v in value.items()}
    return value


def json_key(f) -> str:
    """A field's key in the JSON (a Python keyword, such as `class`, is a field named otherwise)."""
    return f.metadata.get("key", f.name)


# a field's metadata: the JSON leaves the field out while it is None (a section only some traces have, so that
# the others' JSON stays as it was)
OMITTED_WHEN_NONE = "omitted_when_none"


def omitted(f, value: Any) -> bool:
    """The field F, holding VALUE, is left out of the JSON."""
    return value is None and f.metadata.get(OMITTED_WHEN_NONE, False)


class Record:
    def to_json(self, say: Say | None = None) -> dict:
        """The record as JSON; SAY gives the facts inside it their words (a record that holds one needs it)."""
        return {
            json_key(f): _json(getattr(self, f.name), say)
            for f in fields(self)
            if not omitted(f, getattr(self, f.name))
        }


@dataclass(frozen=True)
class InconsistentCpu(Record):
    """A CPU whose switches do not chain (timeline.switch_chain_breaks)."""

    cpu: int
    switches: int
    unmatched: int  # switches whose task switched out is not the one the CPU last switched in
    after_idle: int  # of those, the ones right after a switch-in of the idle task
    unknown_ns: int  # the time between each such switch and the one before it: who ran is unknown
    taken_ns: int  # the target threads' preempted and run-queue time on this CPU within it


# --- what the trace could not see: caveats and warnings, as facts (said by views/verdict_words.py) ---------


@dataclass(frozen=True)
class RecordedCaveat(Fact):
    """A caveat its reader wrote into the trace's metadata (`caveats`: the study CSV's, a profiler join's)."""

    text: str


@dataclass(frozen=True)
class SilentTaskCaveat(Fact):
    """A task whose switch-outs this kernel never traced (trace.checks.silent_tasks), and what it may have got
    wrong: the workload's waits while it ran (its unseen switch back made a run look like a wait)."""

    task: SilentTask
    waited_ns: int  # the workload's waits while it ran: at most this much counted as preemption wrongly
    taken_ns: int  # all the time taken from the workload
    share_percent: float  # waited_ns of taken_ns


@dataclass(frozen=True)
class UnchainedCpus(Fact):
    """The CPUs whose switches do not chain (timeline.inconsistent_cpus), over a trace of TRACE_SECONDS."""

    cpus: list[InconsistentCpu]
    trace_seconds: float


Caveat = RecordedCaveat | SilentTaskCaveat | UnchainedCpus


@dataclass(frozen=True)
class IncompleteTrace(Fact):
    """Why the trace is not the whole recording: the recorder did not stop cleanly, or rows were found damaged
    (the reader's own words for each)."""

    ended_early: bool
    damage: list[str]


@dataclass(frozen=True)
class LostEvents(Fact):
    """Events a metric rests on were lost (count by kind): the metric is a lower bound."""

    lost: dict[str, int]


LowerBound = LostEvents | IncompleteTrace


@dataclass(frozen=True)
class TraceInfo(Record):
    path: str
    mode: str | None
    command: list[str] | None
    pids: list[int]  # the processes named with -p (mode "pids"); empty otherwise
    host: str | None
    kernel: str | None
    cpus: int | None
    truncated: bool
    clean_end: bool
    damage: list[str]
    csv_source: str | None
    caveats: list[Caveat]  # what the numbers below cannot show, or show wrong by more than a small share
    # caveats that bear on less than report.MINOR_CAVEAT_PERCENT of the time taken from the workload: in the
    # JSON and `report --verbose`, not in the default terminal report
    minor_caveats: list[SilentTaskCaveat]
    inconsistent_cpus: list[InconsistentCpu] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """The whole recording is here: it ended cleanly and nothing was found damaged."""
        return not self.truncated and self.clean_end and not self.damage


@dataclass(frozen=True)
class FailedLaunch(Record):
    runtime_api: str
    return_code: int
    count: int


@dataclass(frozen=True)
class FailedLaunches(Record):
    recorded: bool
    count: int
    runtime_only_calls: int
    by: list[FailedLaunch]


@dataclass(frozen=True)
class IrqSummary(Record):
    kind: str
    name: str | None
    count: int
    ns: int
    on_workload: int


@dataclass(frozen=True)
class Overview(Record):
    wall_ns: int
    processes: list[int]
    threads: int
    launching_threads: int
    launches: int
    launches_by_api: dict[str, int]
    # the runtime entry points that made those launches (recorded with --api-names; None without): a launch
    # that called the driver directly is in no entry
    launches_by_runtime_api: dict[str, int] | None
    launch_rate_hz: float
    syncs: int
    sync_ns: int
    syncs_by_api: dict[str, int]
    syncs_by_runtime_api: dict[str, int] | None
    failed_launches: FailedLaunches
    switches: int
    preempted_switches: int
    blocked_switches: int
    irqs: list[IrqSummary]
    lost_events: dict[str, int]


@dataclass(frozen=True)
class StudyMetrics(Record):
    sched_per_1k_launches: float | None
    sched_rows_per_1k_launches_study: float | None
    softirq_per_1k_launches: float | None
    hardirq_per_1k_launches: float | None
    irq_ns: int
    off_cpu_ns: int
    off_cpu_percent: float
    switch_rate_hz: float


@dataclass(frozen=True)
class TakenTotal(Record):
    lifetime_ns: int
    preempted_ns: int
    runqueue_ns: int
    irq_ns: int
    blocked_ns: int
    sync_ns: int
    migrations: int


@dataclass(frozen=True)
class ThreadCulprit(Record):
    cause: str
    pid: int
    comm: str | None
    ns: int


@dataclass(frozen=True)
class ThreadIrq(Record):
    kind: str
    name: str | None
    count: int
    ns: int


@dataclass(frozen=True)
class ThreadTaken(Record):
    pid: int
    tid: int
    comm: str | None
    lifetime_ns: int
    launches: int
    syncs: int
    sync_ns: int
    running_ns: int
    blocked_ns: int
    offcpu_ns: int
    preempted_ns: int
    runqueue_ns: int
    irq_ns: int
    unknown_ns: int
    preempted_switches: int
    blocked_switches: int
    migrations: int
    runnable_around_migrations_ns: int
    taken_percent: float
    culprits: list[ThreadCulprit]
    irqs: list[ThreadIrq]


@dataclass(frozen=True)
class Culprit(Record):
    cause: str
    pid: int
    comm: str | None
    ns: int
    is_recorder: bool
    is_idle: bool


@dataclass(frozen=True)
class CgroupCulprit(Record):
    """The culprit time of every task of one cgroup (a container, a pod's container, a service), by cause;
    or of the CPU's idle task, or of tasks whose cgroup the trace does not say (analysis/cgroups.py)."""

    cause: str
    cgroup: str | None  # its path from its hierarchy's root ("/" the root); None: idle or not known
    container_id: str | None  # the container id its path names (the monitor's container_id label)
    pod: str | None  # the Kubernetes pod UID its path names
    name: str  # what a reader calls it: pod and container, else the path
    ns: int
    processes: int  # how many of its processes ran while the workload waited
    is_idle: bool


@dataclass(frozen=True)
class Taken(Record):
    total: TakenTotal
    threads: list[ThreadTaken]
    culprits: list[Culprit]
    # every cgroup whose tasks ran while the workload waited, largest first; None when the trace does not
    # record each task's cgroup (made before launchgap recorded them, or imported)
    culprits_by_cgroup: list[CgroupCulprit] | None = None


@dataclass(frozen=True)
class GapClass(Record):
    klass: str = field(metadata={"key": "class"})
    count: int = 0
    share: float = 0.0
    p50_ns: float = 0.0
    p90_ns: float = 0.0
    p99_ns: float = 0.0
    total_ns: int = 0
    penalty_ns: float | None = None


@dataclass(frozen=True)
class TailShare(Record):
    count: int
    share: float
    time_share: float


@dataclass(frozen=True)
class GapTail(Record):
    percentile: int
    threshold_ns: float
    gaps: int
    by_class: dict[str, TailShare]


@dataclass(frozen=True)
class Bursts(Record):
    bursts: int
    launches_per_burst_p50: float | None = None
    launches_per_burst_p90: float | None = None
    idle_between_bursts_p50_ns: float | None = None
    idle_between_bursts_p90_ns: float | None = None
    break_rule: str | None = None

    def to_json(self, say: Say | None = None) -> dict:
        # no gaps, no bursts: the count alone
        return super().to_json(say) if self.break_rule is not None else {"bursts": self.bursts}


@dataclass(frozen=True)
class Gaps(Record):
    classes: list[GapClass]
    tail: list[GapTail]
    bursts: Bursts
    count: int


# --- what a verdict rests on, one fact for each way to reach it (said by views/verdict_words.py) -----------


@dataclass(frozen=True)
class NoVerdictFromStudyCsv(Fact):
    """A study CSV: its layout cannot tell preemption from blocking and has no wakeups."""

    from_the_study_tool: bool  # the study tool's own CSV (csv_source cuda_sched_trace), not our export


@dataclass(frozen=True)
class NoVerdictWithoutTarget(Fact):
    """Nothing names the workload (a trace-cmd import without --target; --system with no CUDA use)."""

    imported_from: str | None  # the trace-cmd file it was imported from (meta `source`)


@dataclass(frozen=True)
class CpuTimeGrounds(Fact):
    """The verdict in the CPU time the launching threads (else every workload thread) lost."""

    level: str
    launching: bool  # judged on the launching threads; False: none launched, on every thread
    lifetime_ns: int
    taken_ns: int
    taken_percent: float
    preempted_ns: int
    runqueue_ns: int
    irq_ns: int
    interrupts_first: bool  # interrupts the main cause, and the level not negligible
    recoverable_ns: int  # of the time taken, what fell between consecutive launches
    unchained_ns: int  # of the time taken, what lies where a CPU's switches do not chain
    percent_without_unchained: float
    level_without_unchained: str


@dataclass(frozen=True)
class GpuHostUnknown(Fact):
    """Most of the GPU's idle between its work has no host state known for it: interference of unknown weight."""

    idle_ns: int  # the GPU's idle between its work
    unknown_ns: int  # of that, with no host cause known
    active_ns: int
    profiler_alone: bool  # a profiler trace alone: it holds no thread state at all


@dataclass(frozen=True)
class GpuTimeGrounds(Fact):
    """The verdict in GPU time: the GPU idle interference caused (docs/gpu-time.md), exact or bounds."""

    level: str  # negligible, light, heavy; or uncertain: bounds on both sides of a threshold
    exact: bool
    lost_low_ns: int
    lost_high_ns: int
    active_ns: int
    low_percent: float
    high_percent: float
    estimate_why: str | None  # bounds: why not exact (GpuTime.why)
    low_level: str  # the level of each bound (they differ where the level is uncertain)
    high_level: str
    attached: bool  # recorded by attaching to running processes (-p)
    interrupts_first: bool  # interrupts caused most of it, and the level is light or heavy
    cpu_interference_ns: int  # what the launching threads lost in CPU time meanwhile
    hidden_ns: int  # of that, what queued GPU work hid (exact; bounds: at least)
    top_culprit: GpuCulprit | None
    prediction: GpuPrediction | None


@dataclass(frozen=True)
class OnIncompleteTrace(Fact):
    """A verdict on part of a recording: its numbers are lower bounds."""

    grounds: VerdictGrounds
    trace: IncompleteTrace


VerdictGrounds = (
    NoVerdictFromStudyCsv
    | NoVerdictWithoutTarget
    | CpuTimeGrounds
    | GpuHostUnknown
    | GpuTimeGrounds
    | OnIncompleteTrace
)


@dataclass(frozen=True)
class Verdict(Record):
    level: str
    taken_percent: float | None
    taken_ns: int | None
    main_cause: str | None
    recoverable_ns: int | None
    # what the verdict rests on; in the JSON, its words (`text`)
    grounds: VerdictGrounds = field(metadata={"key": "text"})
    # what the level was judged on: "gpu_time" (exact), "gpu_time_bounds", or "cpu_time" (neither could be had)
    basis: str = "cpu_time"
    # the GPU idle the interference caused, as a share of the GPU's span (bounds; equal when exact)
    gpu_idle_low_percent: float | None = None
    gpu_idle_high_percent: float | None = None


@dataclass(frozen=True)
class CollectorFailure(Record):
    pid: int
    reason: str


@dataclass(frozen=True)
class CollectorContention(Record):
    """Another CUPTI client in a traced process (the workload's profiler) changed CUPTI's process-wide activity
    state, and what the collector did (collector/cupti_clients.h)."""

    pid: int
    ts_ns: int
    what: str  # buffer_callbacks, timestamp_callback, disable, finalize
    done: str  # what the collector did: shared, followed, kept for launchgap, ...
    kind: int | None  # the activity kind, for a disable


@dataclass(frozen=True)
class GpuActivity(Record):
    """Whether the trace holds what the GPU ran (record --gpu-activity), and how much of it."""

    recorded: bool
    why_absent: str | None
    cupti: str | None
    cupti_version: int | None
    clock_method: str | None
    # the largest clock alignment error a collector stated
    clock_error_ns: int | None
    collectors_started: int
    collectors_failed: list[CollectorFailure]
    # kernels launched alone and graphs, each one execution
    executions: int
    copies: int
    memsets: int
    syncs: int
    # launch rows of processes with GPU activity: with their GPU execution in the trace, and without
    launches_joined: int
    launches_without_execution: int
    # each time another CUPTI client in a process (its profiler) changed CUPTI's process-wide activity state
    contended: list[CollectorContention] = field(default_factory=list)


@dataclass(frozen=True)
class GpuIdleCause(Record):
    cause: str  # names.gpu_idle_cause
    ns: int
    percent: float  # of the idle time


@dataclass(frozen=True)
class GpuCulprit(Record):
    """One culprit and the GPU idle it caused, exact (low_ns == high_ns) or bounds: a command (its processes
    together: `gpu_time.culprits`), one process (`culprits_by_process`), or an interrupt."""

    name: str | None  # the command's name (a task's comm), or the interrupt's
    pids: list[int]  # its processes; empty for an interrupt
    is_interrupt: bool
    low_ns: int
    high_ns: int
    # its upper bound's share of the interference's (percent), so the rows' shares add up to 100
    share_percent: float | None
    # its time under each cause it caused (preempted, runqueue, irq): exact, or the upper bounds
    causes: dict[str, int]
    # what taking it away would give back: the launching thread's fair share of the time it held the CPU,
    # beside the other tasks that waited for it too
    recoverable_low_ns: int
    recoverable_high_ns: int


@dataclass(frozen=True)
class GpuMeasurementTask(Record):
    """One of launchgap's own tasks, and the GPU idle it took (exact, or an upper bound)."""

    name: str | None
    pid: int | None
    ns: int


@dataclass(frozen=True)
class GpuMeasurement(Record):
    """What measuring cost the GPU (docs/gpu-time.md, "What measuring costs"): never interference."""

    # GPU idle while launchgap's own tasks held a launching thread's CPU (recorder, collector, CUPTI's thread)
    tasks_low_ns: int
    tasks_high_ns: int
    tasks: list[GpuMeasurementTask]
    # of the launch calls' GPU idle, what the probes' hits took: an estimate (hits x what a hit costs)
    probes_estimated_ns: int | None
    probe_ns_per_launch: int | None  # the largest a launch's probes cost, as estimated
    probe_cost_basis: str  # what a hit is taken to cost, and where that comes from


@dataclass(frozen=True)
class GpuCgroupCulprit(Record):
    """GpuCulprit's time summed over the tasks of one cgroup; an interrupt is its own row (no cgroup)."""

    cause: str
    cgroup: str | None
    container_id: str | None
    pod: str | None
    # pod and container, else the path; the interrupt's name; "CPU idle"; "cgroup not recorded"; "no task known"
    name: str
    low_ns: int
    high_ns: int
    recoverable_low_ns: int
    recoverable_high_ns: int
    processes: int


@dataclass(frozen=True)
class GpuProcess(Record):
    """One process's GPU (per device), from its first GPU work to its last."""

    pid: int
    device_id: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    interference_ns: int
    own_ns: int
    gpu_side_ns: int
    unknown_ns: int


@dataclass(frozen=True)
class GpuPrediction(Record):
    """Throughput with the interference's GPU idle taken out, predicted from this one trace."""

    basis: str  # "steps": sync-delimited steps of the launching threads; "gpu_span": the GPU's span
    steps: int | None
    measured_per_s: float  # steps per second (or spans per second)
    # None: that bound of the interference's GPU idle covers the whole active span, so the trace sets no bound
    predicted_low_per_s: float | None
    predicted_high_per_s: float | None
    gain_low_percent: float | None
    gain_high_percent: float | None


# --- GPU time: exact, bounds, or not estimated (docs/gpu-time.md) ------------------------------------------
# Each kind holds only its own numbers and is matched on (`match g: case GpuTimeExact(): ...`). The JSON has one
# layout for the three (docs/report-schema.md): a kind writes, for the keys it has no number for, what a trace
# without GPU time writes (GPU_TIME_ABSENT), and its `mode`.

# gpu_time's keys in the JSON, in order, whichever its kind
GPU_TIME_KEYS = (
    "mode",
    "why",
    "span_ns",
    "busy_ns",
    "idle_ns",
    "busy_percent",
    "causes",
    "interference_low_ns",
    "interference_high_ns",
    "own_ns",
    "culprits",
    "cpu_interference_ns",
    "hidden_low_ns",
    "hidden_high_ns",
    "hidden_percent",
    "processes",
    "active_ns",
    "prediction",
    "note",
    "culprits_by_cgroup",
    "culprits_by_process",
    "measurement",
    "wakeup_latency_low_ns",
    "wakeup_latency_high_ns",
    "window_busy_percent",
)
# what the JSON holds for a key the kind has no number for: nothing estimated, nothing found
GPU_TIME_ABSENT = {
    "why": None,
    "span_ns": 0,
    "busy_ns": None,
    "idle_ns": None,
    "busy_percent": None,
    "causes": [],
    "interference_low_ns": 0,
    "interference_high_ns": 0,
    "own_ns": None,
    "culprits": [],
    "cpu_interference_ns": 0,
    "hidden_low_ns": 0,
    "hidden_high_ns": 0,
    "hidden_percent": None,
    "processes": [],
    "active_ns": 0,
    "prediction": None,
    "note": None,
    "culprits_by_cgroup": None,
    "culprits_by_process": [],
    "measurement": None,
    "wakeup_latency_low_ns": 0,
    "wakeup_latency_high_ns": 0,
    "window_busy_percent": None,
}


def _gpu_time_json(mode: str, own: dict, **more: Any) -> dict:
    """gpu_time's JSON: OWN (a kind's fields as JSON) and MORE (keys it derives) over GPU_TIME_ABSENT, in the
    order of GPU_TIME_KEYS (a field of the kind's own that is no key, such as an exact one-number field, is
    written through MORE)."""
    values = {**GPU_TIME_ABSENT, **own, **more, "mode": mode}
    return {key: values[key] for key in GPU_TIME_KEYS}


@dataclass(frozen=True)
class GpuTimeExact(Record):
    """GPU time from GPU activity (gpu_time.exact_section): every idle nanosecond of the processes' spans has
    its cause, so what interference caused is one number."""

    MODE: ClassVar[str] = "exact"
    JSON_KEYS: ClassVar[tuple[str, ...]] = GPU_TIME_KEYS

    span_ns: int  # the processes' GPU spans, summed: the trace's window once per process and device
    busy_ns: int
    idle_ns: int
    busy_percent: float | None  # busy over the processes' active spans (first GPU work to last), summed
    causes: list[GpuIdleCause]  # every idle nanosecond of the spans, by cause
    interference_ns: int  # GPU idle caused by preemption, run-queue waits and interrupts
    own_ns: int  # by the app's own host work, launch calls and waits
    culprits: list[GpuCulprit]  # top 10, a command's processes together (largest first)
    # what the launching threads lost to the same causes, in CPU time, from their process's first GPU work to
    # its last
    cpu_interference_ns: int
    hidden_ns: int  # of that, what queued GPU work hid (the GPU did not notice)
    hidden_percent: float | None  # hidden share of the CPU interference
    processes: list[GpuProcess]
    active_ns: int  # from the first GPU work to the last, the span a verdict is on
    prediction: GpuPrediction | None
    # culprits summed by cgroup, every one, largest first; None when the trace does not record cgroups
    culprits_by_cgroup: list[GpuCgroupCulprit] | None
    culprits_by_process: list[GpuCulprit]  # top 10, one process each
    measurement: GpuMeasurement | None
    # idle while a launching thread waited to run on a CPU that was idle (waking up): no task to blame
    wakeup_latency_ns: int
    window_busy_percent: float | None  # busy over the whole trace's window (busy_percent: the active spans)

    def to_json(self, say: Say | None = None) -> dict:
        return _gpu_time_json(
            self.MODE,
            super().to_json(say),
            interference_low_ns=self.interference_ns,
            interference_high_ns=self.interference_ns,
            hidden_low_ns=self.hidden_ns,
            hidden_high_ns=self.hidden_ns,
            wakeup_latency_low_ns=self.wakeup_latency_ns,
            wakeup_latency_high_ns=self.wakeup_latency_ns,
        )


@dataclass(frozen=True)
class GpuTimeBounds(Record):
    """GPU time estimated from the host, as bounds (gpu_time.bounds_section): the trace has no GPU activity, so
    what interference caused lies between two numbers, and the GPU's busy and idle time are not known."""

    MODE: ClassVar[str] = "bounds"
    JSON_KEYS: ClassVar[tuple[str, ...]] = GPU_TIME_KEYS

    why: str  # why not exact
    interference_low_ns: int  # GPU idle caused by preemption, run-queue waits and interrupts
    interference_high_ns: int
    culprits: list[GpuCulprit]  # top 10, a command's processes together (largest first)
    # what the launching threads lost to the same causes, in CPU time, from their first launch to their last
    cpu_interference_ns: int
    hidden_low_ns: int  # of that, what queued GPU work hid (the GPU did not notice)
    hidden_high_ns: int
    active_ns: int  # from the first launch to the last, the span a verdict is on (the JSON's span_ns too)
    prediction: GpuPrediction | None
    note: str | None  # what the estimate rests on, or could not use
    culprits_by_cgroup: list[GpuCgroupCulprit] | None
    culprits_by_process: list[GpuCulprit]
    measurement: GpuMeasurement | None
    wakeup_latency_low_ns: int
    wakeup_latency_high_ns: int

    def to_json(self, say: Say | None = None) -> dict:
        return _gpu_time_json(self.MODE, super().to_json(say), span_ns=self.active_ns)


@dataclass(frozen=True)
class GpuTimeNotEstimated(Record):
    """No GPU time (gpu_time.no_section): neither GPU activity nor what bounds need, and why."""

    MODE: ClassVar[str] = "none"
    JSON_KEYS: ClassVar[tuple[str, ...]] = GPU_TIME_KEYS

    why: str

    def to_json(self, say: Say | None = None) -> dict:
        return _gpu_time_json(self.MODE, super().to_json(say))


# What the GPU lost, and to whom (docs/gpu-time.md)
GpuTime = GpuTimeExact | GpuTimeBounds | GpuTimeNotEstimated


@dataclass(frozen=True)
class HostTarget(Record):
    """The CPUs the doctor's checks of a trace's host were about."""

    cpus: list[int]
    description: str


@dataclass(frozen=True)
class HostChecks(Record):
    """`launchgap doctor` run on the host files the trace carries: the checks that bear on the run
    (report.host_checks_section)."""

    source: str
    target: HostTarget
    counts: dict[str, int]  # every check, not only these, by status (ok, warn, fail, unknown)
    # the doctor's own typed checks (doctor/model.py), in the JSON as `launchgap doctor --json` writes them
    # (docs/doctor.md)
    checks: list[Check]

    def to_json(self, say: Say | None = None) -> dict:
        return {
            "source": self.source,
            "target": self.target.to_json(),
            "counts": dict(self.counts),
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass(frozen=True)
class ProfilerClock(Record):
    """How a profiler file's times were put on the recording's clock (trace/kineto_join.py)."""

    method: str  # "launches" (fit to the probed launches) or "recorded_offset" (meta.json's)
    offset_ns: int  # recording time = profiler time - offset (at the window's start)
    slope_ppm: float  # the profiler clock's rate against the recording's, less one, in millionths
    residual_ns: int | None  # the fit's largest residual over the matched launches (None: not fitted)
    launches_matched: int  # launches of the profiler paired with the recording's launch rows
    recorded_offset_ns: int | None  # meta.json's realtime_minus_monotonic_ns at the start
    recorded_uncertainty_ns: int | None
    stepped: bool | None  # the recording says the system clock was set while it ran


@dataclass(frozen=True)
class ProfilerFile(Record):
    """A PyTorch profiler (Kineto) file the trace's GPU activity comes from (trace/kineto.py)."""

    path: str
    layout: str  # "absolute" (epoch microseconds) or "relative" (to baseTimeNanoseconds)
    pid: int | None  # its process (on the recording's pids when joined)
    rank: int | None
    devices: list[int]
    window_start_ns: int  # the profiler's active window, on the trace's clock
    window_end_ns: int
    window_percent: float | None  # joined: the window's share of the recording
    kernels: int
    nccl_kernels: int
    graph_nodes: int
    copies: int
    memsets: int
    calls: int
    foreign_thread_calls: int  # calls on thread ids that are not the kernel's (truncated pthread ids)
    damage: dict[str, int]
    clock: ProfilerClock | None  # joined to a recording: how its clock was fitted


@dataclass(frozen=True)
class CollectiveName(Record):
    """A rank's collective kernels of one function (analysis/collectives.py function_name)."""

    name: str
    kernels: int
    gpu_ns: int


@dataclass(frozen=True)
class CollectiveRank(Record):
    """One rank's collective kernels (a process's device) and, matched across ranks, how long they waited
    for the last rank (analysis/collectives.py)."""

    pid: int
    device_id: int
    rank: int | None  # its rank as the profiler file says it (distributedInfo); None in a recording
    kernels: int
    gpu_ns: int  # their time on the GPU, waiting and transferring
    # matched across ranks (Collectives.matched_by), else None: from each kernel's start to the last rank's
    # start of that collective (spinning, busy, on the GPU), and the rest of it
    wait_ns: int | None
    transfer_ns: int | None
    last_arrivals: int | None  # the collectives this rank was the last to start
    longest_wait_ns: int | None
    names: list[CollectiveName]  # by function, the most GPU time first


@dataclass(frozen=True)
class Collectives(Record):
    """The collective kernels (NCCL's, or PATTERN's) per rank, and the waits inside them (docs/gpu-time.md,
    "Collectives")."""

    pattern: str | None  # report --collective-pattern: other libraries' kernels counted beside NCCL's
    matched: int  # collectives matched across the ranks (0 where not)
    matched_by: str | None  # "order_on_stream": each rank's k-th collective kernel with the others' k-th
    not_matched: str | None  # why not: one_rank, several_streams, counts_differ, kernels_differ
    ranks: list[CollectiveRank]


@dataclass(frozen=True)
class Report(Record):
    schema: str
    trace: TraceInfo
    gpu_activity: GpuActivity
    gpu_time: GpuTime
    overview: Overview
    study_metrics: StudyMetrics
    taken: Taken
    gaps: Gaps
    verdict: Verdict
    # `launchgap doctor` on the host files in the trace; None without them
    host_checks: HostChecks | None
    # metric (or "trace": all of them) -> why it is a lower bound; in the JSON, its words
    warnings: dict[str, LowerBound]
    # the PyTorch profiler files the GPU activity came from (a profiler trace, or a recording joined to them)
    profiler: list[ProfilerFile] = field(default_factory=list)
    # the collective kernels of the workload (GPU activity or profiler files); None, and not in the JSON, where
    # it has none
    collectives: Collectives | None = field(default=None, metadata={OMITTED_WHEN_NONE: True})
