"""The report's sentences: the verdict, the caveats, the warnings, each said from the facts the analysis
found (analysis/records.py: a verdict's grounds, a caveat, a lower bound). The terminal report and the
JSON's text fields (views/report_json.py) both say them through `say`, so the two never differ."""

from __future__ import annotations

from launchgap.analysis.records import (
    CpuTimeGrounds,
    Fact,
    GpuCulprit,
    GpuHostUnknown,
    GpuPrediction,
    GpuTimeGrounds,
    IncompleteTrace,
    InconsistentCpu,
    LostEvents,
    NoVerdictFromStudyCsv,
    NoVerdictWithoutTarget,
    OnIncompleteTrace,
    RecordedCaveat,
    SilentTaskCaveat,
    UnchainedCpus,
    Verdict,
)
from launchgap.analysis.verdict import HEAVY_PERCENT, NEGLIGIBLE_PERCENT

# what each verdict level asks of the user, the CPU-time and the GPU-time verdicts alike
TUNING_ADVICE = {
    "negligible": "No scheduler or IRQ tuning is needed; monitor only.",
    "light": (
        "Pin the launching threads (taskset or a cpuset) and raise their priority (nice -n -10, or "
        "SCHED_FIFO with a bounded priority) so neighbours stop preempting them."
    ),
    "heavy": (
        "Isolate cores for the workload (isolcpus/nohz_full, or a cgroup v2 cpuset that neighbours "
        "cannot use), pin the launching threads to them, and steer IRQs away from those cores "
        "(/proc/irq/*/smp_affinity_list)."
    ),
}
INTERRUPTS_FIRST = " Interrupts dominate: steering IRQ affinity away from the launching threads' cores comes first."

# how to get the exact answer where the recorder attached to running processes (-p): CUDA loads a collector only
# into a process started with it
EXACT_FOR_A_RUNNING_JOB = (
    "For the exact answer on a job that runs for long, restart it under `sudo launchgap record --gpu-activity -o "
    "run.lg -- COMMAND`; or, for a PyTorch job, record it with `-p` while torch.profiler runs in it and join the "
    "two: `launchgap report run.lg --kineto TRACE.json.gz`."
)

THRESHOLDS = f"(below {NEGLIGIBLE_PERCENT:g}% negligible, from {HEAVY_PERCENT:g}% heavy)"


def verdict_text(verdict: Verdict) -> str:
    """The verdict's words: what the terminal shows in its box and the JSON holds as verdict.text."""
    return say(verdict.grounds)


def say(fact: Fact) -> str:
    """A fact of the report in words."""
    match fact:
        case NoVerdictFromStudyCsv():
            return _no_verdict_from_study_csv(fact)
        case NoVerdictWithoutTarget():
            return _no_verdict_without_target(fact)
        case CpuTimeGrounds():
            return _cpu_time_verdict(fact)
        case GpuHostUnknown():
            return _gpu_host_unknown(fact)
        case GpuTimeGrounds():
            return _gpu_time_verdict(fact)
        case OnIncompleteTrace():
            return (
                f"This trace is incomplete ({_incomplete(fact.trace)}): every count and time below is a lower "
                f"bound, and the verdict rests on what was read. " + say(fact.grounds)
            )
        case RecordedCaveat():
            return fact.text
        case SilentTaskCaveat():
            return _silent_task(fact)
        case UnchainedCpus():
            return _unchained(fact.cpus, fact.trace_seconds)
        case IncompleteTrace():
            return f"incomplete: {_incomplete(fact)}"
        case LostEvents():
            what = ", ".join(f"{n} {s}" for s, n in sorted(fact.lost.items()))
            return f"lower bound: {what} events were lost"
    raise TypeError(f"no words for {type(fact).__name__}")


# --- durations, as each sentence says them -----------------------------------------------------------------


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.3f} s"


def _ms(ns: int) -> str:
    """A duration as the answer says it: ns below a microsecond, us below a millisecond, ms below a second, else s."""
    if ns < 1_000:
        return f"{ns} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.0f} us"
    return f"{ns / 1e6:.1f} ms" if ns < 1_000_000_000 else f"{ns / 1e9:.2f} s"


def _duration(ns: int) -> str:
    return f"{ns / 1e9:.3f} s" if ns >= 1e9 else f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.3f} us"


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n:,} times")


# --- the verdicts ------------------------------------------------------------------------------------------


def _no_verdict_from_study_csv(fact: NoVerdictFromStudyCsv) -> str:
    if fact.from_the_study_tool:
        supports = (
            "kernel launches (each counted once) and their rate, launch gaps, sync count and time, the "
            "main thread's switch count and off-CPU time (unclassified), IRQ counts and time while a GPU "
            "thread was current"
        )
    else:
        supports = (
            "kernel launches and their rate, launch gaps, sync count and time, every workload thread's "
            "switch count and off-CPU time (unclassified), and the IRQs that interrupted them"
        )
    return (
        "No verdict can be given from this file: the study's CSV layout records neither why a thread left the "
        "CPU (preempted or blocked on its own sync) nor any wakeup, so preemption and run-queue waits cannot be "
        f"told apart from the workload's own waiting. What it does support: {supports}. Record with launchgap "
        "for a verdict."
    )


def _no_verdict_without_target(fact: NoVerdictWithoutTarget) -> str:
    if fact.imported_from:
        how = f"re-import it naming the workload's command (`launchgap import {fact.imported_from} --target NAME`)"
    else:
        how = "record the workload itself (`launchgap record -- COMMAND`, or `-p PID`)"
    return (
        "No verdict can be given: no target was named, so the trace has no workload to judge (it was recorded "
        "or imported system-wide, and nothing in it used CUDA). The views (timeline, running/waiting) need "
        f"none; for a verdict, {how}."
    )


def _cpu_time_verdict(v: CpuTimeGrounds) -> str:
    whose = "launching threads" if v.launching else "threads"
    numbers = (
        f"The {whose} lost {v.taken_ns / 1e9:.3f} s of {v.lifetime_ns / 1e9:.3f} s ({v.taken_percent:.2f}%) to the "
        f"scheduler and interrupts: preemption {v.preempted_ns / 1e9:.3f} s, run-queue wait "
        f"{v.runqueue_ns / 1e9:.3f} s, interrupts {v.irq_ns / 1e9:.3f} s."
    )
    advice = TUNING_ADVICE[v.level] + (INTERRUPTS_FIRST if v.interrupts_first else "")
    text = f"{numbers} That is {v.level} interference {THRESHOLDS}. {advice}"
    if v.recoverable_ns:
        text += (
            f" Of that, {v.recoverable_ns / 1e9:.3f} s fell between consecutive kernel launches, delaying the "
            f"next launch directly: what a mitigation would recover first."
        )
    if v.unchained_ns:
        text += (
            f" But {v.unchained_ns / 1e9:.3f} s of the time taken lies where a CPU's switches do not chain (the "
            f"caveat above): who ran there is unknown, so it may not have been taken at all; without it the "
            f"share is {v.percent_without_unchained:.2f}% ({v.level_without_unchained})."
        )
    return text


def _gpu_host_unknown(v: GpuHostUnknown) -> str:
    """The GPU's idle mostly without a known host cause: what is missing, and how to get it."""
    span = v.active_ns
    head = (
        f"The GPU sat idle {_seconds(v.idle_ns)} between its work over {_seconds(span)} "
        f"({100 * v.idle_ns / span if span else 0:.1f}%); for {_seconds(v.unknown_ns)} of it "
        f"({100 * v.unknown_ns / span if span else 0:.1f}% of the span) it waited for the host, and "
        f"the trace does not hold what the launching threads were doing then (preempted, waiting to run, "
        f"interrupted, or running their own code), so it cannot say how much of that interference caused: "
        f"interference of unknown weight, not negligible."
    )
    if v.profiler_alone:
        how = (
            "A PyTorch profiler trace holds the GPU's work and the calls that made it, not who held the CPU. "
            "Record the same run with launchgap (`sudo launchgap record --no-cuda-probes -o run.lg -- COMMAND`, "
            "or `-p PID` for a running job) while the profiler runs, then join the two: `launchgap report run.lg "
            "--kineto TRACE.json.gz` gives the exact answer, culprits and the throughput without them."
        )
    else:
        how = (
            "The launching threads' states are missing there (their switches and wakeups were not recorded, "
            "or the GPU work's calls are not in the trace): record the whole run with launchgap, from before "
            "the workload starts, with --gpu-activity or joined to a profiler trace."
        )
    return f"{head} {how}"


def _gpu_lost(v: GpuTimeGrounds) -> str:
    """What the GPU lost to interference, of its work: exact, bounds that meet, or bounds."""
    if v.exact:
        return (
            f"The GPU lost {_ms(v.lost_high_ns)} of its {_ms(v.active_ns)} of work to interference "
            f"({v.high_percent:.2f}%)"
        )
    if _ms(v.lost_low_ns) == _ms(v.lost_high_ns):
        # bounds that meet, as the reader sees them, are one figure
        return (
            f"The GPU lost {_ms(v.lost_high_ns)} of its {_ms(v.active_ns)} of work to interference "
            f"({v.high_percent:.2f}%; estimated from the host, whose bounds meet: {v.estimate_why})"
        )
    return (
        f"The GPU lost between {_ms(v.lost_low_ns)} and {_ms(v.lost_high_ns)} of its {_ms(v.active_ns)} of work to "
        f"interference ({v.low_percent:.2f}%-{v.high_percent:.2f}%; estimated from the host: {v.estimate_why})"
    )


def _gpu_advice(v: GpuTimeGrounds) -> str:
    if v.level == "uncertain":
        advice = (
            f"The estimate spans {v.low_level} to {v.high_level}: record with --gpu-activity (or join a "
            f"PyTorch profiler trace) for the exact answer."
        )
    else:
        advice = TUNING_ADVICE[v.level]
    if v.attached and not v.exact:
        advice += " " + EXACT_FOR_A_RUNNING_JOB
    return advice + (INTERRUPTS_FIRST if v.interrupts_first else "")


def _gpu_time_verdict(v: GpuTimeGrounds) -> str:
    """The answer: what was lost, of what, who, what to do, and what it would buy; the figures around it (what
    queued work hid, the app's own idle, wake-up latency, what measuring cost) are the GPU-time section's."""
    said = {
        "negligible": "negligible: no action needed",
        "light": "light",
        "heavy": "heavy",
        "uncertain": "of uncertain weight",
    }[v.level]
    if v.level != "negligible":
        after = _top_culprit(v.top_culprit)
    elif v.cpu_interference_ns > v.lost_high_ns:
        # the CPU side's tables show what the threads lost: say why the GPU hardly noticed
        after = (
            f" Its launching threads lost {_ms(v.cpu_interference_ns)} of CPU time meanwhile; queued GPU work hid "
            f"{'' if v.exact else 'at least '}{100.0 * v.hidden_ns / v.cpu_interference_ns:.0f}% of it."
        )
    else:
        after = ""
    return (
        f"{_gpu_lost(v)}: {said} {THRESHOLDS}."
        + after
        + f" {_gpu_advice(v)}"
        + (_predicted(v.prediction) if v.level != "negligible" else "")
    )


def _who(c: GpuCulprit) -> str:
    """A culprit as the answer names it: its name and its processes."""
    if c.is_interrupt:
        return f"the {c.name} interrupts"
    pids = ", ".join(str(p) for p in c.pids[:3]) + (", ..." if len(c.pids) > 3 else "")
    what = "pid" if len(c.pids) == 1 else "pids"
    return f"{c.name or 'an unnamed task'} ({what} {pids})" if c.pids else (c.name or "an unnamed task")


def _top_culprit(top: GpuCulprit | None) -> str:
    """The largest culprit's total and share, in words ("" where there is none)."""
    if top is None:
        return ""
    took = _ms(top.high_ns) if top.low_ns == top.high_ns else f"{_ms(top.low_ns)} to {_ms(top.high_ns)}"
    share = f", {top.share_percent:.0f}% of it" if top.share_percent is not None else ""
    return f" Most of it was {_who(top)}: {took}{share}."


def _predicted(p: GpuPrediction | None) -> str:
    """The throughput without the interference, in the app's steps where it has them."""
    if p is None or p.predicted_high_per_s is None and p.predicted_low_per_s is None:
        return ""
    unit = "steps/s" if p.basis == "steps" else "GPU spans/s"
    if (
        p.predicted_low_per_s is not None
        and p.predicted_high_per_s is not None
        and abs(p.predicted_high_per_s - p.predicted_low_per_s) < 1e-9 * p.predicted_high_per_s
    ):
        return (
            f" Without it: {p.predicted_high_per_s:.1f} {unit} instead of {p.measured_per_s:.1f} "
            f"({p.gain_high_percent:+.1f}%)."
        )
    if p.predicted_high_per_s is None:
        return (
            f" Without it: at least {p.predicted_low_per_s:.1f} {unit} instead of {p.measured_per_s:.1f} "
            f"(the host sets no upper bound)."
        )
    return (
        f" Without it: {p.predicted_low_per_s:.1f} to {p.predicted_high_per_s:.1f} {unit} instead of "
        f"{p.measured_per_s:.1f} ({p.gain_low_percent:+.1f}% to {p.gain_high_percent:+.1f}%)."
    )


# --- what the trace could not see ---------------------------------------------------------------------------


def _incomplete(trace: IncompleteTrace) -> str:
    """Why the trace is not the whole recording, for its warning and its verdict."""
    parts = ["the recorder did not stop cleanly, so the trace ends early"] if trace.ended_early else []
    return "; ".join(parts + trace.damage)


def _silent_task(c: SilentTaskCaveat) -> str:
    task = c.task
    return (
        f"{task.comm or 'an unnamed task'} ({task.pid}/{task.tid}) was switched in {_times(task.switch_ins)} but "
        f"its switch-outs were never traced by this kernel: a thread it preempted looks preempted until "
        f"its next recorded switch-out. The workload waited {_duration(c.waited_ns)} while it ran, "
        f"{c.share_percent:.2f}% of the {_duration(c.taken_ns)} taken from the workload: at most that much is "
        f"counted as preemption wrongly"
    )


def _unchained(cpus: list[InconsistentCpu], seconds: float) -> str:
    """One line for every CPU whose switches do not chain (SECONDS: the trace's length)."""

    def ms(ns: int) -> str:
        return f"{ns / 1e6:.3f} ms"

    which = ", ".join(str(c.cpu) for c in cpus)
    unmatched, switches = sum(c.unmatched for c in cpus), sum(c.switches for c in cpus)
    after_idle, unknown = sum(c.after_idle for c in cpus), sum(c.unknown_ns for c in cpus)
    taken_ns = sum(c.taken_ns for c in cpus)
    its = "their" if len(cpus) > 1 else "its"
    share = f" ({100 * unknown / 1e9 / (seconds * len(cpus)):.1f}% of {its} time)" if seconds else ""
    idle = f", {after_idle:,} of them right after a switch-in of the idle task" if after_idle else ""
    text = (
        f"the switches of CPU{'s' if len(cpus) > 1 else ''} {which} do not chain: in {unmatched:,} of {its} "
        f"{switches:,} the task switched out is not the one last switched in there{idle}. A switch was never "
        f"recorded, so who ran is unknown for {ms(unknown)}{share}"
    )
    if taken_ns:
        text += (
            f"; {ms(taken_ns)} of the workload's preempted and run-queue time lies in that and may not have "
            f"been taken at all"
        )
    return text + " (the timeline hatches it)"
