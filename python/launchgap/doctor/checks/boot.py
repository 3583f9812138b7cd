"""Boot-time isolation: nohz_full, isolcpus, rcu_nocbs, irqaffinity."""

from __future__ import annotations

from launchgap.doctor.checks.registry import Finding, check
from launchgap.doctor.facts import CMDLINE, CPU_DIR, CPUS_ISOLATED, CPUS_NOHZ_FULL, CPUS_ONLINE, HostFacts, evidence
from launchgap.doctor.model import Evidence, Status, Target
from launchgap.doctor.parse import format_cpus

AREA = "boot isolation"
ISOLATION_PARAMS = ("nohz_full", "isolcpus", "rcu_nocbs", "irqaffinity")


def cmdline_evidence(facts: HostFacts) -> Evidence:
    reading = facts.read(CMDLINE)
    if not reading.ok:
        return evidence(reading)
    params = facts.params or {}
    asked = [f"{k}={params[k]}" if params[k] is not None else k for k in ISOLATION_PARAMS if k in params]
    return evidence(
        reading,
        " ".join(asked)
        if asked
        else "(no nohz_full, isolcpus, rcu_nocbs or irqaffinity; the rest of the line left out)",
    )


@check("boot.isolation", AREA, "isolation asked on the command line vs in effect")
def isolation_in_effect(facts: HostFacts, target: Target | None) -> Finding:
    if not facts.read(CMDLINE).ok:
        return Finding(Status.UNKNOWN, f"{CMDLINE} is not readable", [evidence(facts.read(CMDLINE))])
    boot = facts.boot
    ev = [cmdline_evidence(facts), evidence(facts.read(CPUS_ISOLATED)), evidence(facts.read(CPUS_NOHZ_FULL))]
    if boot.bad_values:
        return Finding(
            Status.FAIL,
            "the kernel cannot parse " + "; ".join(boot.bad_values),
            ev,
            "write CPU lists as the kernel reads them (e.g. 2-7,10)",
        )
    fails, warns = [], []
    if boot.nohz_full is not None:
        if boot.sysfs_nohz_full is None:
            fails.append(
                f"nohz_full={format_cpus(boot.nohz_full)} is asked but {CPUS_NOHZ_FULL} does not exist: "
                "this kernel has no full dynticks and ignores it"
            )
        elif boot.sysfs_nohz_full != boot.nohz_full:
            warns.append(
                f"nohz_full asks for {format_cpus(boot.nohz_full)}, the kernel runs "
                f"{format_cpus(boot.sysfs_nohz_full)} tickless (it keeps the boot CPU for timekeeping and "
                "drops CPUs that are not present)"
            )
    if boot.isolcpus is not None:
        if boot.isolcpus.unknown_flags:
            unknown = ", ".join(boot.isolcpus.unknown_flags)
            warns.append(
                f"isolcpus has flags the kernel does not know ({unknown}): kernels since 5.7 skip them, "
                "older ones drop the whole isolcpus="
            )
        if "domain" in boot.isolcpus.flags:
            if boot.sysfs_isolated is None:
                warns.append(f"{CPUS_ISOLATED} is not readable to confirm isolcpus")
            elif boot.sysfs_isolated != boot.isolcpus.cpus:
                warns.append(
                    f"isolcpus asks for {format_cpus(boot.isolcpus.cpus)}, the kernel isolates "
                    f"{format_cpus(boot.sysfs_isolated)}"
                )
    if fails or warns:
        return Finding(
            Status.FAIL if fails else Status.WARN,
            "; ".join(fails + warns),
            ev,
            "check the kernel's boot log (dmesg | grep -i -e nohz -e isol -e housekeeping) and fix the command line",
            data={"asked": _asked(facts), "in_effect": _shown(facts)},
        )
    if not boot.requested:
        runtime = boot.sysfs_isolated or frozenset()
        if runtime:
            return Finding(
                Status.OK,
                f"nothing asked at boot; CPUs {format_cpus(runtime)} are isolated at run time (a cpuset partition)",
                ev,
                data={"asked": {}, "in_effect": _shown(facts)},
            )
        return Finding(
            Status.OK,
            "no boot-time isolation: every CPU takes the tick, kernel threads, RCU callbacks and interrupts",
            ev,
            data={"asked": {}, "in_effect": _shown(facts)},
        )
    return Finding(
        Status.OK,
        "the kernel runs the isolation the command line asks for: "
        + ", ".join(f"{k} {v}" for k, v in _asked(facts).items()),
        ev,
        data={"asked": _asked(facts), "in_effect": _shown(facts)},
    )


def _asked(facts: HostFacts) -> dict[str, str]:
    boot = facts.boot
    out = {}
    if boot.nohz_full is not None:
        out["nohz_full"] = format_cpus(boot.nohz_full)
    if boot.isolcpus is not None:
        out["isolcpus"] = ",".join(sorted(boot.isolcpus.flags)) + " " + format_cpus(boot.isolcpus.cpus)
    if boot.rcu_nocbs is not None:
        out["rcu_nocbs"] = format_cpus(boot.rcu_nocbs)
    if boot.irqaffinity is not None:
        out["irqaffinity"] = format_cpus(boot.irqaffinity)
    return out


def _shown(facts: HostFacts) -> dict[str, str | None]:
    boot = facts.boot
    return {
        "isolated": None if boot.sysfs_isolated is None else format_cpus(boot.sysfs_isolated),
        "nohz_full": None if boot.sysfs_nohz_full is None else format_cpus(boot.sysfs_nohz_full),
    }


@check("boot.rcu_nocbs", AREA, "RCU callbacks kept off the nohz_full CPUs")
def rcu_callbacks(facts: HostFacts, target: Target | None) -> Finding:
    boot = facts.boot
    nohz = boot.nohz_full if boot.nohz_full is not None else (boot.sysfs_nohz_full or frozenset())
    ev = [cmdline_evidence(facts)]
    if not facts.read(CMDLINE).ok:
        return Finding(Status.UNKNOWN, f"{CMDLINE} is not readable", ev)
    if not nohz:
        return Finding(Status.OK, "no nohz_full CPUs: nothing to offload", ev)
    offloaded = boot.rcu_nocbs or frozenset()
    missing = nohz - offloaded
    if not missing:
        return Finding(
            Status.OK, f"rcu_nocbs={format_cpus(offloaded)} covers the nohz_full CPUs {format_cpus(nohz)}", ev
        )
    config = facts.config
    what = (
        f"nohz_full CPUs {format_cpus(missing)} are not in rcu_nocbs"
        if boot.rcu_nocbs is not None
        else f"nohz_full={format_cpus(nohz)} without rcu_nocbs"
    )
    fix = f"add rcu_nocbs={format_cpus(nohz | offloaded)} to the kernel command line"
    if config is None:
        ev += [evidence(facts.read(p)) for p in facts.config_candidates]
        return Finding(
            Status.WARN,
            f"{what}: their RCU callbacks stay on them (and keep the tick alive) unless "
            "the kernel offloads nohz_full CPUs itself, which it does only when built with "
            "CONFIG_RCU_NOCB_CPU; the kernel config is not readable to confirm",
            ev,
            fix,
            data={"not_offloaded": sorted(missing)},
        )
    ev.append(Evidence(config.path, f"CONFIG_RCU_NOCB_CPU={config.options.get('CONFIG_RCU_NOCB_CPU', 'n')}"))
    if config.enabled("CONFIG_RCU_NOCB_CPU"):
        return Finding(
            Status.OK,
            f"{what}, but this kernel (CONFIG_RCU_NOCB_CPU=y) offloads the callbacks of nohz_full CPUs itself",
            ev,
            f"optional: {fix}, to say so explicitly",
        )
    return Finding(
        Status.FAIL,
        f"{what}, and this kernel has no callback offloading (CONFIG_RCU_NOCB_CPU is "
        "not set): RCU callbacks run on the nohz_full CPUs and keep their tick",
        ev,
        "boot a kernel with CONFIG_NO_HZ_FULL (which selects CONFIG_RCU_NOCB_CPU)",
        data={"not_offloaded": sorted(missing)},
    )


@check("boot.housekeeping", AREA, "a housekeeping CPU left for the kernel")
def housekeeping(facts: HostFacts, target: Target | None) -> Finding:
    online = facts.online
    ev = [evidence(facts.read(CPUS_ONLINE)), cmdline_evidence(facts)]
    if online is None:
        return Finding(Status.UNKNOWN, f"{CPUS_ONLINE} is not readable", ev)
    boot = facts.boot
    asked = (boot.nohz_full or frozenset()) | (boot.isolcpus.cpus if boot.isolcpus else frozenset())
    isolated = facts.isolated | asked
    left = online - isolated
    if asked and online <= asked:
        return Finding(
            Status.FAIL,
            f"nohz_full/isolcpus name every online CPU ({format_cpus(online)}): no "
            "housekeeping CPU is left, so the kernel keeps the boot CPU for itself and timers, kernel "
            "threads and interrupts all crowd there",
            ev,
            "leave at least one CPU per NUMA node out of nohz_full and isolcpus",
            data={"housekeeping": sorted(left)},
        )
    if boot.irqaffinity:
        wrong = boot.irqaffinity & isolated
        if wrong:
            status = Status.FAIL if boot.irqaffinity <= isolated else Status.WARN
            return Finding(
                status,
                f"irqaffinity={format_cpus(boot.irqaffinity)} sends interrupts to isolated CPUs {format_cpus(wrong)}",
                ev,
                f"set irqaffinity={format_cpus(left) if left else '<a housekeeping CPU>'}",
                data={"housekeeping": sorted(left)},
            )
    if not isolated:
        return Finding(
            Status.OK, "no CPU is isolated: every CPU does housekeeping", ev, data={"housekeeping": sorted(online)}
        )
    return Finding(
        Status.OK,
        f"housekeeping CPUs {format_cpus(left)} take the timers, kernel threads, RCU and "
        f"interrupts of isolated CPUs {format_cpus(isolated)}",
        ev,
        data={"housekeeping": sorted(left)},
    )


@check("boot.kernel_support", AREA, "the kernel can do the isolation asked for")
def kernel_support(facts: HostFacts, target: Target | None) -> Finding:
    boot = facts.boot
    config = facts.config
    nohz_file = facts.read(CPUS_NOHZ_FULL)
    cpu_dir = facts.listdir(CPU_DIR)
    ev = [cmdline_evidence(facts)]
    if config is not None:
        ev.append(
            Evidence(
                config.path,
                " ".join(
                    f"{k}={config.options.get(k, 'n')}"
                    for k in ("CONFIG_NO_HZ_FULL", "CONFIG_CPU_ISOLATION", "CONFIG_RCU_NOCB_CPU")
                ),
            )
        )
        can_nohz = config.enabled("CONFIG_NO_HZ_FULL")
        can_isolate = config.enabled("CONFIG_CPU_ISOLATION")
        can_offload = config.enabled("CONFIG_RCU_NOCB_CPU")
    else:
        ev += [evidence(facts.read(p)) for p in facts.config_candidates]
        ev.append(Evidence(CPUS_NOHZ_FULL, "present" if nohz_file.ok else f"(not readable: {nohz_file.why})"))
        # the nohz_full file exists exactly when the kernel is built with CONFIG_NO_HZ_FULL
        can_nohz = True if nohz_file.ok else (False if nohz_file.missing and cpu_dir.ok else None)
        can_isolate = can_offload = None
    problems = []
    if boot.nohz_full is not None and can_nohz is False:
        problems.append(
            f"nohz_full={format_cpus(boot.nohz_full)} is asked on a kernel without CONFIG_NO_HZ_FULL: "
            "the tick keeps running on those CPUs"
        )
    if boot.isolcpus is not None and can_isolate is False:
        problems.append("isolcpus is asked on a kernel without CONFIG_CPU_ISOLATION")
    if boot.rcu_nocbs is not None and can_offload is False:
        problems.append("rcu_nocbs is asked on a kernel without CONFIG_RCU_NOCB_CPU")
    if problems:
        return Finding(
            Status.FAIL,
            "; ".join(problems),
            ev,
            "boot a kernel built with CONFIG_NO_HZ_FULL=y (most distributions' kernels are)",
        )
    if can_nohz is None:
        if boot.nohz_full is None and boot.isolcpus is None:
            return Finding(
                Status.UNKNOWN,
                "cannot tell whether this kernel could run nohz_full: neither the kernel "
                f"config nor {CPU_DIR} is readable",
                ev,
            )
        return Finding(
            Status.UNKNOWN, "the kernel config is not readable and the kernel shows no nohz_full file to tell", ev
        )
    source = "CONFIG_NO_HZ_FULL" if config is not None else CPUS_NOHZ_FULL
    if boot.nohz_full is None and boot.isolcpus is None:
        return Finding(
            Status.OK,
            "nothing asked; this kernel "
            + ("can" if can_nohz else "cannot")
            + f" run CPUs tickless (nohz_full) ({source})",
            ev,
            data={"no_hz_full": can_nohz},
        )
    return Finding(Status.OK, f"the kernel supports what is asked ({source})", ev, data={"no_hz_full": can_nohz})
