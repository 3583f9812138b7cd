"""Scheduler: RT throttling, the preemption model, timer migration, unbound work."""

from __future__ import annotations

import errno
import os

from launchgap.doctor.checks.registry import Finding, check
from launchgap.doctor.facts import (
    DEBUGFS,
    KERNEL_VERSION,
    LOCKDOWN,
    PREEMPT,
    REALTIME,
    RT_PERIOD,
    RT_RUNTIME,
    TIMER_MIGRATION,
    WORKQUEUE_CPUMASK,
    HostFacts,
    evidence,
)
from launchgap.doctor.model import Evidence, Status, Target
from launchgap.doctor.parse import (
    ParseError,
    UnparsableFile,
    format_cpus,
    is_number,
    parse_bracketed_choice,
    parse_cpumask,
)

AREA = "scheduler"
RT_UNTHROTTLED = -1
# the build-time preemption choice, most preemptive first
PREEMPT_CONFIGS = (
    ("CONFIG_PREEMPT_RT", "full (PREEMPT_RT)"),
    ("CONFIG_PREEMPT_LAZY", "lazy"),
    ("CONFIG_PREEMPT", "full"),
    ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
    ("CONFIG_PREEMPT_NONE", "none"),
)


@check("sched.rt_throttling", AREA, "RT throttling (a runaway RT task cannot hang a CPU)")
def rt_throttling(facts: HostFacts, target: Target | None) -> Finding:
    runtime, period = facts.read(RT_RUNTIME), facts.read(RT_PERIOD)
    ev = [evidence(runtime), evidence(period)]
    if not runtime.ok:
        return Finding(Status.UNKNOWN, f"{RT_RUNTIME} is not readable", ev)
    try:
        value = int(runtime.value)
    except ValueError:
        raise UnparsableFile(RT_RUNTIME, runtime.value) from None
    if value == RT_UNTHROTTLED:
        return Finding(
            Status.WARN,
            "RT throttling is off (sched_rt_runtime_us = -1): a SCHED_FIFO/SCHED_RR task "
            "that spins holds its CPU forever, starving kernel threads there",
            ev,
            "sysctl kernel.sched_rt_runtime_us=950000 (the default), unless RT tasks are known to sleep",
            data={"runtime_us": value},
        )
    share = (
        f" ({100 * value / int(period.value):.0f}% of each period)"
        if period.ok and is_number(period.value) and int(period.value)
        else ""
    )
    return Finding(Status.OK, f"RT tasks are throttled to {value} us per period{share}", ev, data={"runtime_us": value})


def _build_time_model(facts: HostFacts) -> tuple[str | None, list[Evidence]]:
    """The model the kernel booted with: preempt= (PREEMPT_DYNAMIC kernels),
    else the config's choice; PREEMPT_RT from /sys/kernel/realtime or uname."""
    ev = []
    version = facts.read(KERNEL_VERSION)
    realtime = facts.read(REALTIME)
    if version.ok:
        ev.append(evidence(version))
    if realtime.ok and realtime.value == "1" or version.ok and "PREEMPT_RT" in version.value.split():
        if realtime.ok:
            ev.append(evidence(realtime))
        return "full (PREEMPT_RT)", ev
    params = facts.params or {}
    config = facts.config
    dynamic = (
        config.enabled("CONFIG_PREEMPT_DYNAMIC")
        if config
        else version.ok and "PREEMPT_DYNAMIC" in version.value.split()
    )
    if dynamic and params.get("preempt"):
        ev.append(Evidence("/proc/cmdline", f"preempt={params['preempt']}"))
        return params["preempt"], ev
    if config is not None:
        for option, model in PREEMPT_CONFIGS:
            if config.enabled(option):
                ev.append(Evidence(config.path, f"{option}=y" + (" CONFIG_PREEMPT_DYNAMIC=y" if dynamic else "")))
                return model, ev
    return None, ev


def _why_unreadable(facts: HostFacts, reading) -> str:
    listing = facts.debugfs_listing
    if reading.error in (errno.EACCES, errno.EPERM):
        lockdown = facts.read(LOCKDOWN)
        mode = parse_bracketed_choice(lockdown.value)[0] if lockdown.ok else None
        if mode and mode != "none":
            return (
                f"debugfs refuses the read ({reading.why}): the kernel is locked down ({mode}), which closes "
                "debugfs files that can be written"
            )
        if facts.host.description == "this host" and os.geteuid() == 0:
            # root refused without lockdown: debugfs restricted at boot (debugfs=no-mount/off) or by a sandbox
            return (
                f"debugfs refuses the read ({reading.why}) even to root: debugfs is restricted on this host "
                "(the debugfs= boot option, or a sandbox's filter)"
            )
        return f"debugfs refuses the read ({reading.why}): run as root"
    if not listing.ok:
        return f"{DEBUGFS} is not readable ({listing.why}): run as root"
    if not listing.names:
        return f"debugfs is not mounted at {DEBUGFS}"
    if reading.missing:
        return "debugfs has no sched/preempt: a kernel without PREEMPT_DYNAMIC, whose model is fixed when it is built"
    return f"{PREEMPT}: {reading.why}"


@check("sched.preemption", AREA, "the preemption model in effect")
def preemption(facts: HostFacts, target: Target | None) -> Finding:
    reading = facts.read(PREEMPT)
    if reading.ok:
        active, choices = parse_bracketed_choice(reading.value)
        if active is None:
            return Finding(Status.UNKNOWN, f"{PREEMPT} holds {reading.value!r}", [evidence(reading)])
        return Finding(
            Status.OK,
            f"preemption model {active}; switchable at run time to {', '.join(c for c in choices if c != active)}",
            [evidence(reading)],
            data={"model": active, "switchable": choices, "source": PREEMPT},
        )
    why = _why_unreadable(facts, reading)
    model, ev = _build_time_model(facts)
    ev.insert(0, evidence(reading))
    if facts.debugfs_listing.ok and not facts.debugfs_listing.names:
        ev.insert(1, Evidence(DEBUGFS, "(empty: not mounted)"))
    guess = f"; it booted as {model}" if model else "; the kernel config does not say which model it was built with"
    if reading.missing and facts.debugfs_listing.names or "locked down" in why:
        fix = None  # nothing a user can do short of another kernel or boot
    else:
        fix = (
            "as root: mount -t debugfs none /sys/kernel/debug, then read sched/preempt (a locked-down kernel "
            "refuses it even then)"
        )
    return Finding(
        Status.UNKNOWN,
        f"cannot read the model in effect: {why}{guess}",
        ev,
        fix,
        data={"model": None, "booted_as": model, "source": None},
    )


@check("sched.timer_migration", AREA, "timer migration")
def timer_migration(facts: HostFacts, target: Target | None) -> Finding:
    reading = facts.read(TIMER_MIGRATION)
    if not reading.ok or reading.value not in ("0", "1"):
        return Finding(Status.UNKNOWN, f"{TIMER_MIGRATION} is not readable", [evidence(reading)])
    on = reading.value == "1"
    isolated = facts.isolated
    if on and isolated:
        return Finding(
            Status.WARN,
            "timers may migrate between CPUs while CPUs "
            f"{format_cpus(isolated)} are isolated; real-time tuning turns it off so a timer stays on "
            "the CPU that armed it",
            [evidence(reading)],
            "sysctl kernel.timer_migration=0",
            data={"enabled": on},
        )
    state = (
        "on: timers of idle CPUs move to busy ones to save power"
        if on
        else "off: a timer fires on the CPU that armed it"
    )
    return Finding(
        Status.OK,
        f"timer migration is {state}" + ("" if isolated else "; no CPU is isolated"),
        [evidence(reading)],
        data={"enabled": on},
    )


@check("sched.workqueue", AREA, "unbound kernel work kept off isolated CPUs")
def workqueue(facts: HostFacts, target: Target | None) -> Finding:
    reading = facts.read(WORKQUEUE_CPUMASK)
    if not reading.ok:
        return Finding(Status.UNKNOWN, f"{WORKQUEUE_CPUMASK} is not readable", [evidence(reading)])
    try:
        mask = parse_cpumask(reading.value)
    except ParseError:
        return Finding(Status.UNKNOWN, f"{WORKQUEUE_CPUMASK} holds {reading.value!r}", [evidence(reading)])
    ev = [evidence(reading, f"{reading.value} (CPUs {format_cpus(mask)})")]
    isolated = facts.isolated
    wrong = mask & isolated
    if wrong:
        keep = sum(1 << c for c in (facts.online or mask) - isolated)
        return Finding(
            Status.WARN,
            f"unbound kernel work (kworkers) may run on isolated CPUs {format_cpus(wrong)}",
            ev,
            f"echo {keep:x} > {WORKQUEUE_CPUMASK}",
            data={"cpus": sorted(mask)},
        )
    return Finding(
        Status.OK,
        f"unbound kernel work runs on CPUs {format_cpus(mask)}" + (" (no isolated CPU among them)" if isolated else ""),
        ev,
        data={"cpus": sorted(mask)},
    )
