"""Interrupts: where device interrupts land, which cannot be moved, who moves them."""

from __future__ import annotations

from launchgap.doctor.checks.registry import Finding, check
from launchgap.doctor.facts import (
    DEFAULT_IRQ_AFFINITY,
    INTERRUPTS,
    IRQ_DEBUGFS,
    IRQBALANCE_CONFIGS,
    PROC,
    HostFacts,
    IrqInfo,
    evidence,
)
from launchgap.doctor.model import Evidence, Status, Target
from launchgap.doctor.parse import ParseError, format_cpus, parse_cpumask

AREA = "interrupts"
# how many interrupts a summary names before "and N more", and evidence shows
NAMED_IN_SUMMARY = 4
IN_EVIDENCE = 8


def _irq_evidence(irqs: list[IrqInfo]) -> list[Evidence]:
    out = []
    for irq in irqs[:IN_EVIDENCE]:
        out.append(evidence(irq.affinity_reading))
        counts = " ".join(str(irq.row.counts[c]) for c in sorted(irq.row.counts))
        out.append(Evidence(INTERRUPTS, f"{irq.number}: {counts} {irq.row.chip} {irq.row.hwirq} {irq.name}"))
    if len(irqs) > IN_EVIDENCE:
        out.append(Evidence(INTERRUPTS, f"... and {len(irqs) - IN_EVIDENCE} more (listed in the JSON's data)"))
    return out


def _landing(irqs: list[IrqInfo], cpus: frozenset[int]) -> list[IrqInfo]:
    """The interrupts whose effective affinity meets CPUS, busiest there first."""
    hits = [i for i in irqs if i.effective and i.effective & cpus]
    return sorted(hits, key=lambda i: (-i.fired_on(cpus), i.number))


def _named(irqs: list[IrqInfo], cpus: frozenset[int]) -> str:
    text = "; ".join(i.describe(cpus) for i in irqs[:NAMED_IN_SUMMARY])
    if len(irqs) > NAMED_IN_SUMMARY:
        text += f"; and {len(irqs) - NAMED_IN_SUMMARY} more"
    return text


def _irq_data(irqs: list[IrqInfo], cpus: frozenset[int]) -> dict:
    return {
        "count": len(irqs),
        "cpus": sorted(cpus),
        "irqs": [
            {
                "irq": i.number,
                "name": i.name,
                "kind": i.kind,
                "pci": i.pci,
                "managed": i.managed,
                "effective_cpus": sorted(i.effective or ()),
                "count_on_cpus": i.fired_on(cpus),
            }
            for i in irqs
        ],
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _unreadable(facts: HostFacts) -> Finding:
    return Finding(Status.UNKNOWN, f"{INTERRUPTS} is not readable", [evidence(facts.read(INTERRUPTS))])


@check("irq.isolated", AREA, "device interrupts kept off isolated CPUs")
def devices_on_isolated(facts: HostFacts, target: Target | None) -> Finding:
    if facts.interrupts is None:
        return _unreadable(facts)
    isolated = facts.isolated
    if not isolated:
        return Finding(Status.OK, "no CPU is isolated", [evidence(facts.read(INTERRUPTS), "(read)")])
    devices = [i for i in facts.irqs if i.is_device]
    hits = _landing(devices, isolated)
    if not hits:
        return Finding(
            Status.OK,
            f"none of {_plural(len(devices), 'device interrupt')} lands on isolated CPUs {format_cpus(isolated)}",
            _irq_evidence(devices[:NAMED_IN_SUMMARY]),
            data=_irq_data([], isolated),
        )
    housekeeping = (facts.online or frozenset()) - isolated
    fix = _move_fix(hits, housekeeping).replace(
        "; or run the workload on other CPUs", f"; irqaffinity={format_cpus(housekeeping)} at boot"
    )
    return Finding(
        Status.FAIL,
        f"{_plural(len(hits), 'device interrupt')} {_verb(hits)} on isolated CPUs "
        f"{format_cpus(isolated)}: {_named(hits, isolated)}",
        _irq_evidence(hits),
        fix,
        data=_irq_data(hits, isolated),
    )


@check("irq.target", AREA, "device interrupts kept off the target's CPUs", about_target=True)
def devices_on_target(facts: HostFacts, target: Target | None) -> Finding:
    if target is None:
        return Finding(
            Status.UNKNOWN,
            "no target: give --cpus LIST or -p PID to check where interrupts land against a workload's CPUs",
        )
    if facts.interrupts is None:
        return _unreadable(facts)
    devices = [i for i in facts.irqs if i.is_device]
    hits = _landing(devices, target.cpus)
    where = f"{target.description} ({format_cpus(target.cpus)})"
    if not hits:
        return Finding(
            Status.OK,
            f"none of {_plural(len(devices), 'device interrupt')} lands on {where}",
            _irq_evidence(devices[:NAMED_IN_SUMMARY]),
            data=_irq_data([], target.cpus),
        )
    others = (facts.online or frozenset()) - target.cpus
    return Finding(
        Status.WARN,
        f"{_plural(len(hits), 'device interrupt')} {_verb(hits)} on {where}: {_named(hits, target.cpus)}",
        _irq_evidence(hits),
        _move_fix(hits, others),
        data=_irq_data(hits, target.cpus),
    )


def _verb(irqs: list) -> str:
    return "lands" if len(irqs) == 1 else "land"


def _move_fix(irqs: list[IrqInfo], to: frozenset[int]) -> str:
    movable = [str(i.number) for i in irqs if not i.managed]
    stuck = len(irqs) - len(movable)
    fix = (
        f"for N in {' '.join(movable[:8])}{' ...' if len(movable) > 8 else ''}: echo "
        f"{format_cpus(to) if to else '<other CPUs>'} > /proc/irq/$N/smp_affinity_list"
        if movable
        else ""
    )
    if stuck:
        fix += ("; " if fix else "") + f"{stuck} kernel-managed cannot be moved (see irq.managed)"
    return fix + "; or run the workload on other CPUs"


@check("irq.managed", AREA, "kernel-managed interrupts (cannot be moved)")
def managed(facts: HostFacts, target: Target | None) -> Finding:
    if facts.interrupts is None:
        return _unreadable(facts)
    irqs = [i for i in facts.irqs if i.managed]
    by_debugfs = facts.irq_debugfs_readable
    how = "by debugfs" if by_debugfs else "by name: nvme and virtio-blk queues"
    ev = [evidence(facts.read(IRQ_DEBUGFS)) if not by_debugfs else Evidence(IRQ_DEBUGFS, "readable")]
    ev += _irq_evidence(irqs[:NAMED_IN_SUMMARY])
    if not irqs:
        if not by_debugfs:
            listing = facts.listdir(IRQ_DEBUGFS)
            return Finding(
                Status.UNKNOWN,
                f"cannot tell which interrupts the kernel manages: {IRQ_DEBUGFS} is not "
                f"readable ({listing.why}) and none is named like a managed queue",
                ev,
                "as root with debugfs mounted, grep -l IRQD_AFFINITY_MANAGED /sys/kernel/debug/irq/irqs/*",
            )
        return Finding(Status.OK, "no kernel-managed interrupts", ev, data={"count": 0})
    interest = facts.isolated | (target.cpus if target else frozenset())
    which = " or ".join(
        w for w, cpus in (("isolated", facts.isolated), ("target", target.cpus if target else None)) if cpus
    )
    landing = _landing(irqs, interest)
    isolcpus = facts.boot.isolcpus
    has_flag = isolcpus is not None and "managed_irq" in isolcpus.flags
    if landing:
        fix = (
            "the kernel already keeps them off isolated CPUs where a housekeeping CPU is in their mask "
            "(isolcpus=managed_irq): these queues belong to isolated CPUs; use fewer queues"
            if has_flag
            else "add managed_irq to isolcpus= (isolcpus=managed_irq,domain,<list>), or use fewer queues "
            "(ethtool -L, nvme poll_queues)"
        )
        return Finding(
            Status.WARN,
            f"{_plural(len(landing), 'kernel-managed interrupt')} ({how}) "
            f"{_verb(landing)} on {which} CPUs {format_cpus(interest)} and cannot be moved (writing "
            f"smp_affinity fails with EIO): {_named(landing, interest)}",
            ev,
            fix,
            data={"count": len(irqs), "landing": [i.number for i in landing]},
        )
    names = ", ".join(i.name for i in irqs[:NAMED_IN_SUMMARY])
    where = f"none lands on {which} CPUs" if which else "they cannot be moved, which matters once CPUs are isolated"
    return Finding(
        Status.OK,
        f"{_plural(len(irqs), 'kernel-managed interrupt')} ({how}: {names}); {where}",
        ev,
        data={"count": len(irqs), "landing": []},
    )


@check("irq.irqbalance", AREA, "irqbalance and the CPUs it leaves alone")
def irqbalance(facts: HostFacts, target: Target | None) -> Finding:
    listing = facts.listdir(PROC)
    if not listing.ok:
        return Finding(Status.UNKNOWN, f"{PROC} is not readable to look for irqbalance", [])
    running = facts.irqbalance
    if not running:
        return Finding(
            Status.OK,
            "irqbalance is not running: interrupt affinities stay where they were set",
            [Evidence(PROC, "no process named irqbalance")],
        )
    interest = facts.isolated | (target.cpus if target else frozenset())
    default_banned = facts.isolated
    problems, ev = [], []
    for proc in running:
        banned = default_banned if proc.banned is None else proc.banned
        ev.append(Evidence(f"{PROC}/{proc.pid}/comm", "irqbalance"))
        if proc.banned_source is not None:
            ev.append(proc.banned_source)
        else:
            note = "" if proc.environ_readable else " (its environment was not readable)"
            ev.append(
                Evidence(
                    f"{PROC}/{proc.pid}/environ",
                    f"no IRQBALANCE_BANNED_CPUS/CPULIST{note}: it bans the "
                    f"isolated and nohz_full CPUs ({format_cpus(default_banned)})",
                )
            )
        exposed = interest - banned
        if exposed:
            problems.append(
                f"irqbalance (pid {proc.pid}) may move interrupts onto CPUs {format_cpus(exposed)} "
                f"every 10 s (it bans {format_cpus(banned)})"
            )
    if problems:
        return Finding(
            Status.WARN,
            "; ".join(problems),
            ev,
            f"set IRQBALANCE_BANNED_CPULIST={format_cpus(interest)} in {IRQBALANCE_CONFIGS[0]} (or "
            f"{IRQBALANCE_CONFIGS[1]}) and restart it, or stop irqbalance",
        )
    pids = ", ".join(str(p.pid) for p in running)
    if not interest:
        return Finding(Status.OK, f"irqbalance (pid {pids}) is running; no CPU is isolated or targeted", ev)
    return Finding(Status.OK, f"irqbalance (pid {pids}) leaves CPUs {format_cpus(interest)} alone", ev)


@check("irq.default_affinity", AREA, "where new interrupts are placed")
def default_affinity(facts: HostFacts, target: Target | None) -> Finding:
    reading = facts.read(DEFAULT_IRQ_AFFINITY)
    if not reading.ok:
        return Finding(Status.UNKNOWN, f"{DEFAULT_IRQ_AFFINITY} is not readable", [evidence(reading)])
    try:
        mask = parse_cpumask(reading.value)
    except ParseError:
        return Finding(Status.UNKNOWN, f"{DEFAULT_IRQ_AFFINITY} holds {reading.value!r}", [evidence(reading)])
    isolated = facts.isolated
    wrong = mask & isolated
    ev = [evidence(reading, f"{reading.value} (CPUs {format_cpus(mask)})")]
    if wrong:
        housekeeping = (facts.online or frozenset()) - isolated
        return Finding(
            Status.WARN,
            f"new interrupts may be placed on isolated CPUs {format_cpus(wrong)}",
            ev,
            f"irqaffinity={format_cpus(housekeeping)} on the kernel command line",
            data={"cpus": sorted(mask)},
        )
    return Finding(
        Status.OK,
        f"new interrupts go to CPUs {format_cpus(mask)}" + (" (no isolated CPU among them)" if isolated else ""),
        ev,
        data={"cpus": sorted(mask)},
    )
