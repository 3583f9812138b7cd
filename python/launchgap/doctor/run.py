"""Run every check over one host; find the target's CPUs."""

from __future__ import annotations

from launchgap.doctor.checks import all_checks
from launchgap.doctor.facts import CPU_DIR, HostFacts
from launchgap.doctor.host import Host
from launchgap.doctor.model import DoctorResult, Target
from launchgap.doctor.parse import ParseError, UnparsableFile, excerpt, format_cpus, parse_cpulist, parse_status_field


class TargetError(ValueError):
    """The target cannot be resolved (no such process, CPUs that are not online)."""


def run_doctor(host: Host, target: Target | None = None) -> DoctorResult:
    facts = HostFacts(host)
    checks = tuple(registered.run(facts, target) for registered in all_checks())
    online = _or_none(lambda: facts.online)
    return DoctorResult(
        host=host.description,
        kernel=_or_none(lambda: facts.kernel_release),
        online_cpus=format_cpus(online) if online is not None else None,
        target=target,
        checks=checks,
    )


def _or_none(fact):
    """A fact the checks also rest on, or None where its file cannot be parsed (they say so, each)."""
    try:
        return fact()
    except UnparsableFile:
        return None


def target_from_cpus(host: Host, text: str) -> Target:
    facts = HostFacts(host)
    try:
        cpus = parse_cpulist(text, _or_none(lambda: facts.last_cpu))
    except ParseError as err:
        raise TargetError(f"--cpus {text}: {err}") from err
    if not cpus:
        raise TargetError(f"--cpus {text!r} names no CPU")
    online = _or_none(lambda: facts.online)
    if online is not None and not cpus <= online:
        raise TargetError(
            f"--cpus {text}: CPU {format_cpus(cpus - online)} is not online "
            f"(online: {format_cpus(online)}, {CPU_DIR}/online)"
        )
    return Target(cpus, "the CPUs given")


def target_from_pid(host: Host, pid: int) -> Target:
    """The CPUs a process's threads may run on (Cpus_allowed_list of every thread)."""
    tasks = host.listdir(f"/proc/{pid}/task")
    if not tasks.ok:
        raise TargetError(f"-p {pid}: no such process ({tasks.why})")
    cpus: set[int] = set()
    for tid in tasks.names or ():
        status = host.read(f"/proc/{pid}/task/{tid}/status")
        if not status.ok:
            continue  # the thread exited while we looked
        allowed = parse_status_field(status.text, "Cpus_allowed_list")
        if allowed:
            try:
                cpus |= parse_cpulist(allowed)
            except ParseError as err:
                raise TargetError(
                    f"-p {pid}: cannot parse Cpus_allowed_list '{excerpt(allowed)}' of thread {tid} ({err})"
                ) from None
    if not cpus:
        raise TargetError(f"-p {pid}: the process exited, or its threads' CPUs are not readable")
    threads = len(tasks.names or ())
    return Target(frozenset(cpus), f"the CPUs of pid {pid}'s {threads} thread{'s' if threads != 1 else ''}")
