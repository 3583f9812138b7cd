"""The verdict: how much interference cost the workload, judged in GPU time where the trace allows it (exact
with GPU activity, bounds from the host without), else in the CPU time the launching threads lost. What it
returns is numbers and the facts the judgement rests on (records.py); its words are views/verdict_words.py's."""

from __future__ import annotations

from dataclasses import replace

from launchgap.analysis import gpu_time as gpu
from launchgap.analysis.records import (
    CpuTimeGrounds,
    GpuHostUnknown,
    GpuTimeBounds,
    GpuTimeExact,
    GpuTimeGrounds,
    IncompleteTrace,
    NoVerdictFromStudyCsv,
    NoVerdictWithoutTarget,
    OnIncompleteTrace,
    ThreadTaken,
    Verdict,
)
from launchgap.trace import Trace
from launchgap.trace.schema import MetaKey

# The study's decision logic, on the share of the launching threads' time taken.
NEGLIGIBLE_PERCENT = 1.0
HEAVY_PERCENT = 5.0

NO_VERDICT = "not given"

# Above this share of the GPU's idle between its work with no host state known for it, the trace cannot
# say whether interference made the GPU wait: the level is "unknown", never "negligible"
UNKNOWN_IDLE_SHARE = 0.5
UNKNOWN_LEVEL = "unknown"


def level_of(share: float) -> str:
    """The level of interference a share (percent) of time lost is."""
    return "negligible" if share < NEGLIGIBLE_PERCENT else "light" if share < HEAVY_PERCENT else "heavy"


def _not_given(grounds: NoVerdictFromStudyCsv | NoVerdictWithoutTarget) -> Verdict:
    return Verdict(
        level=NO_VERDICT, taken_percent=None, taken_ns=None, main_cause=None, recoverable_ns=None, grounds=grounds
    )


def no_verdict_from_study_csv(trace: Trace) -> Verdict:
    """The study's CSV layout cannot tell preemption from blocking and has no wakeups: no verdict."""
    return _not_given(
        NoVerdictFromStudyCsv(from_the_study_tool=trace.meta.get(MetaKey.CSV_SOURCE) == "cuda_sched_trace")
    )


def no_verdict_without_target(trace: Trace) -> Verdict:
    """Nothing names the workload (a trace-cmd import without --target; --system with no CUDA use): the
    threads in the trace are whatever ran, and a verdict about them would be about nobody in particular."""
    return _not_given(NoVerdictWithoutTarget(imported_from=trace.meta.get(MetaKey.SOURCE) or None))


def cpu_verdict(
    threads: list[ThreadTaken], launching: set[int], recoverable: int, taken_where_unknown: dict[int, int]
) -> Verdict:
    """The verdict in the CPU time the launching threads (else every thread) lost to the scheduler and
    interrupts. RECOVERABLE: of it, what fell between consecutive launches; TAKEN_WHERE_UNKNOWN: tid -> the
    part of its waits that lies where a CPU's switches do not chain."""
    pool = [t for t in threads if t.tid in launching] or threads
    life = sum(t.lifetime_ns for t in pool)
    taken_ns = sum(t.preempted_ns + t.runqueue_ns + t.irq_ns for t in pool)
    share = 100.0 * taken_ns / life if life else 0.0
    by = {
        "preemption": sum(t.preempted_ns for t in pool),
        "run-queue wait": sum(t.runqueue_ns for t in pool),
        "interrupts": sum(t.irq_ns for t in pool),
    }
    main_cause = max(by, key=by.get) if taken_ns else None
    level = level_of(share)
    unchained = sum(taken_where_unknown.get(t.tid, 0) for t in pool)
    without = 100.0 * (taken_ns - unchained) / life if life else 0.0
    grounds = CpuTimeGrounds(
        level=level,
        launching=bool(launching),
        lifetime_ns=life,
        taken_ns=taken_ns,
        taken_percent=share,
        preempted_ns=by["preemption"],
        runqueue_ns=by["run-queue wait"],
        irq_ns=by["interrupts"],
        interrupts_first=main_cause == "interrupts" and level != "negligible",
        recoverable_ns=recoverable,
        unchained_ns=unchained,
        percent_without_unchained=without,
        level_without_unchained=level_of(without),
    )
    return Verdict(
        level=level,
        taken_percent=share,
        taken_ns=taken_ns,
        main_cause=main_cause,
        recoverable_ns=recoverable,
        grounds=grounds,
    )


def unknown_idle_share(g: GpuTimeExact) -> float | None:
    """The share of the GPU's idle between its work (outside it, before the first and after the last, is by
    design) whose host cause the trace cannot tell: no thread state, or no call known for the work."""
    between = sum(c.ns for c in g.causes if c.cause not in gpu.BY_DESIGN)
    unknown = sum(c.ns for c in g.causes if c.cause == gpu.UNKNOWN)
    return unknown / between if between else None


def _host_unknown(cpu: Verdict, g: GpuTimeExact, profiler_alone: bool) -> Verdict:
    """The GPU's idle mostly without a known host cause: interference of unknown weight."""
    grounds = GpuHostUnknown(
        idle_ns=sum(c.ns for c in g.causes if c.cause not in gpu.BY_DESIGN),
        unknown_ns=sum(c.ns for c in g.causes if c.cause == gpu.UNKNOWN),
        active_ns=g.active_ns,
        profiler_alone=profiler_alone,
    )
    return replace(
        cpu,
        level=UNKNOWN_LEVEL,
        grounds=grounds,
        basis="gpu_time",
        gpu_idle_low_percent=100.0 * g.interference_ns / g.active_ns if g.active_ns else 0.0,
        gpu_idle_high_percent=100.0 * g.interference_ns / g.active_ns if g.active_ns else 0.0,
    )


def gpu_verdict(
    cpu: Verdict, g: GpuTimeExact | GpuTimeBounds, profiler_alone: bool = False, attached: bool = False
) -> Verdict:
    """The verdict in GPU time: how long the GPU sat idle because interference made a launch late
    (docs/gpu-time.md), with the CPU time the launching threads lost beside it (CPU: the verdict in CPU time).
    Where most of the GPU's idle has no host state known for it, the level is unknown (PROFILER_ALONE: a
    profiler trace alone). ATTACHED: recorded by attaching to running processes (-p)."""
    active = g.active_ns
    match g:
        case GpuTimeExact():
            share = unknown_idle_share(g)
            # a profiler trace alone has no thread state at all: whatever part of the idle is the host's is
            # unknown
            if share is not None and (share > UNKNOWN_IDLE_SHARE or (profiler_alone and share > 0)):
                return _host_unknown(cpu, g, profiler_alone)
            exact, why = True, None
            lost_low = lost_high = g.interference_ns
            hidden = g.hidden_ns
        case GpuTimeBounds():
            exact, why = False, g.why
            lost_low, lost_high = g.interference_low_ns, g.interference_high_ns
            # what queued GPU work surely hid: the CPU interference less the most the GPU can have lost
            hidden = g.hidden_low_ns
    low = 100.0 * lost_low / active if active else 0.0
    high = 100.0 * lost_high / active if active else 0.0
    level = level_of(high)
    if not exact and level_of(low) != level:
        # bounds that straddle a threshold: said so, rather than the worse or the better
        level = "uncertain"
    irq_ns = sum(c.causes.get("irq", 0) for c in g.culprits)
    grounds = GpuTimeGrounds(
        level=level,
        exact=exact,
        lost_low_ns=lost_low,
        lost_high_ns=lost_high,
        active_ns=active,
        low_percent=low,
        high_percent=high,
        estimate_why=why,
        low_level=level_of(low),
        high_level=level_of(high),
        attached=attached,
        interrupts_first=level not in ("negligible", "uncertain") and irq_ns * 2 > lost_high,
        cpu_interference_ns=g.cpu_interference_ns,
        hidden_ns=hidden,
        top_culprit=g.culprits[0] if g.culprits else None,
        prediction=g.prediction,
    )
    return replace(
        cpu,
        level=level,
        grounds=grounds,
        basis="gpu_time" if exact else "gpu_time_bounds",
        gpu_idle_low_percent=low,
        gpu_idle_high_percent=high,
    )


def on_incomplete_trace(verdict: Verdict, trace: IncompleteTrace) -> Verdict:
    """A verdict on part of a recording says so first: its numbers are lower bounds."""
    return replace(verdict, grounds=OnIncompleteTrace(grounds=verdict.grounds, trace=trace))
