"""CPU: frequency governor, SMT, transparent huge pages, GPU NUMA placement, virtualisation."""

from __future__ import annotations

from launchgap.doctor.checks.registry import Finding, check
from launchgap.doctor.facts import (
    CPU_DIR,
    CPUINFO,
    DMI_PRODUCT,
    DMI_VENDOR,
    HYPERVISOR_TYPE,
    PCI_DEVICES,
    SMT_ACTIVE,
    SMT_CONTROL,
    THP_DEFRAG,
    THP_ENABLED,
    HostFacts,
    evidence,
)
from launchgap.doctor.model import Evidence, Status, Target
from launchgap.doctor.parse import cpuinfo_flags, format_cpus, parse_bracketed_choice

AREA = "cpu"
PERFORMANCE = "performance"
# DMI vendor or product names of common hypervisors (for CPUs without the x86 flag)
VIRTUAL_DMI = (
    "QEMU",
    "KVM",
    "VMware",
    "VirtualBox",
    "Xen",
    "Microsoft Corporation",
    "Amazon EC2",
    "Google Compute Engine",
    "Firecracker",
    "Bochs",
    "Parallels",
)
VM_CAUTION = (
    "the study found that a VM flattens or inverts every kernel lever's effect (tickless + isolation "
    "made its matrix run 2.3x slower there, 2.6% on bare metal); confirm lever results on bare metal"
)


def _cpus_of_interest(facts: HostFacts, target: Target | None) -> frozenset[int]:
    return target.cpus if target else (facts.online or frozenset())


@check("cpu.governor", AREA, "CPU frequency governor", about_target=True)
def governor(facts: HostFacts, target: Target | None) -> Finding:
    cpus = _cpus_of_interest(facts, target)
    if not cpus:
        return Finding(Status.UNKNOWN, "the online CPUs are not readable")
    readings = {cpu: facts.read(f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor") for cpu in sorted(cpus)}
    read = {cpu: r.value for cpu, r in readings.items() if r.ok}
    if not read:
        first = next(iter(readings.values()))
        return Finding(
            Status.UNKNOWN,
            "no cpufreq driver exposes a governor: the frequency is left to firmware or a hypervisor",
            [evidence(first)],
        )
    slow = {cpu: g for cpu, g in read.items() if g != PERFORMANCE}
    ev = [evidence(readings[cpu]) for cpu in sorted(slow or read)[:4]]
    if slow:
        names = sorted(set(slow.values()))
        return Finding(
            Status.WARN,
            f"CPUs {format_cpus(slow)} use {'/'.join(names)}: the clock ramps up and down "
            "with load, which moves run times by more than most levers do",
            ev,
            "cpupower frequency-set -g performance (and fix turbo on or off for every run)",
            data={"governors": {str(c): g for c, g in read.items()}},
        )
    return Finding(
        Status.OK,
        f"CPUs {format_cpus(read)} use the performance governor",
        ev,
        data={"governors": {str(c): g for c, g in read.items()}},
    )


@check("cpu.smt", AREA, "SMT (hyper-threads sharing a core)", about_target=True)
def smt(facts: HostFacts, target: Target | None) -> Finding:
    control, active = facts.read(SMT_CONTROL), facts.read(SMT_ACTIVE)
    ev = [evidence(control), evidence(active)]
    if not control.ok and not active.ok:
        return Finding(Status.UNKNOWN, "the kernel shows no SMT state", ev)
    if active.value != "1":
        return Finding(
            Status.OK, f"SMT is not active (control: {control.value or 'unknown'})", ev, data={"active": False}
        )
    interest = facts.isolated | (target.cpus if target else frozenset())
    if not interest:
        return Finding(
            Status.OK, "SMT is on; nothing isolated or targeted to check siblings of", ev, data={"active": True}
        )
    exposed = {}
    for cpu in sorted(interest):
        siblings = facts.cpus_from(f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list")
        if siblings is None:
            continue
        outside = siblings - interest
        if outside:
            exposed[cpu] = outside
            ev.append(evidence(facts.read(f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list")))
    if exposed:
        pairs = ", ".join(f"{cpu} with {format_cpus(o)}" for cpu, o in list(exposed.items())[:4])
        return Finding(
            Status.WARN,
            f"SMT is on and isolated or target CPUs share a core with CPUs outside the set "
            f"({pairs}): a neighbour on the sibling takes half the core",
            ev,
            "isolate or target whole cores (both siblings), or boot with nosmt",
            data={"active": True, "shared_with_outside": {str(k): sorted(v) for k, v in exposed.items()}},
        )
    return Finding(Status.OK, f"SMT is on; CPUs {format_cpus(interest)} hold whole cores", ev, data={"active": True})


@check("cpu.thp", AREA, "transparent huge pages")
def transparent_huge_pages(facts: HostFacts, target: Target | None) -> Finding:
    enabled, defrag = facts.read(THP_ENABLED), facts.read(THP_DEFRAG)
    ev = [evidence(enabled), evidence(defrag)]
    if not enabled.ok:
        return Finding(Status.UNKNOWN, "the kernel shows no transparent huge page setting", ev)
    mode, _ = parse_bracketed_choice(enabled.value)
    defrag_mode = parse_bracketed_choice(defrag.value)[0] if defrag.ok else None
    data = {"enabled": mode, "defrag": defrag_mode}
    if mode == "always" or defrag_mode == "always":
        what = []
        if mode == "always":
            what.append(
                "every large anonymous mapping gets huge pages, and khugepaged collapses pages in the background"
            )
        if defrag_mode == "always":
            what.append("a page fault may stall in direct compaction")
        return Finding(
            Status.WARN,
            f"THP enabled={mode}, defrag={defrag_mode}: " + "; ".join(what),
            ev,
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (and defrag), so only programs "
            "that ask get huge pages",
            data=data,
        )
    return Finding(Status.OK, f"THP enabled={mode}, defrag={defrag_mode}: huge pages only where asked", ev, data=data)


@check("cpu.gpu_numa", AREA, "NVIDIA GPUs and the target's NUMA node", about_target=True)
def gpu_numa(facts: HostFacts, target: Target | None) -> Finding:
    listing = facts.listdir(PCI_DEVICES)
    if not listing.ok:
        return Finding(
            Status.UNKNOWN, f"{PCI_DEVICES} is not readable", [Evidence(PCI_DEVICES, f"(not readable: {listing.why})")]
        )
    gpus = [d for d in facts.pci.values() if d.is_nvidia_gpu]
    if not gpus:
        return Finding(
            Status.OK,
            f"no NVIDIA GPU (PCI vendor 0x10de, display class) among {len(facts.pci)} PCI devices",
            [Evidence(PCI_DEVICES, f"{len(facts.pci)} devices")],
            data={"gpus": []},
        )
    ev = []
    rows = []
    for gpu in gpus:
        base = f"{PCI_DEVICES}/{gpu.address}"
        ev += [evidence(facts.read(f"{base}/numa_node")), evidence(facts.read(f"{base}/local_cpulist"))]
        rows.append(
            {
                "pci": gpu.address,
                "numa_node": gpu.numa_node,
                "local_cpus": sorted(gpu.local_cpus) if gpu.local_cpus is not None else None,
            }
        )
    data = {"gpus": rows}

    def where(gpu) -> str:
        node = "no NUMA node" if gpu.numa_node is None or gpu.numa_node < 0 else f"node {gpu.numa_node}"
        local = format_cpus(gpu.local_cpus) if gpu.local_cpus is not None else "?"
        return f"{gpu.address} ({node}, local CPUs {local})"

    listed = "; ".join(where(g) for g in gpus)
    if target is None:
        return Finding(
            Status.OK,
            f"{len(gpus)} NVIDIA GPU(s): {listed}; give --cpus or -p to compare with a workload's CPUs",
            ev,
            data=data,
        )
    near = [g for g in gpus if g.local_cpus is not None and target.cpus <= g.local_cpus]
    if near:
        return Finding(
            Status.OK,
            f"{target.description} ({format_cpus(target.cpus)}) are local to " + "; ".join(where(g) for g in near),
            ev,
            data=data,
        )
    if all(g.local_cpus is None for g in gpus):
        return Finding(Status.UNKNOWN, f"the GPUs' local CPUs are not readable: {listed}", ev, data=data)
    return Finding(
        Status.WARN,
        f"{target.description} ({format_cpus(target.cpus)}) are not all local to any "
        f"GPU: {listed}; every launch and copy crosses the socket link",
        ev,
        "pin the launching threads to the GPU's local CPUs (taskset -c <local_cpulist>, numactl --cpunodebind)",
        data=data,
    )


@check("cpu.hypervisor", AREA, "bare metal or a virtual machine")
def hypervisor(facts: HostFacts, target: Target | None) -> Finding:
    cpuinfo = facts.read(CPUINFO)
    flags = cpuinfo_flags(cpuinfo.text) if cpuinfo.ok else None
    kind = facts.read(HYPERVISOR_TYPE)
    vendor, product = facts.read(DMI_VENDOR), facts.read(DMI_PRODUCT)
    ev = []
    signs = []
    if flags is not None:
        ev.append(
            evidence(cpuinfo, "flags: ... hypervisor ..." if "hypervisor" in flags else "flags: (no hypervisor flag)")
        )
        if "hypervisor" in flags:
            signs.append("the CPU reports the hypervisor flag")
    if kind.ok:
        ev.append(evidence(kind))
        signs.append(f"{HYPERVISOR_TYPE} says {kind.value}")
    for reading in (vendor, product):
        if reading.ok:
            ev.append(evidence(reading))
            if any(name.lower() in reading.value.lower() for name in VIRTUAL_DMI):
                signs.append(f"DMI says {reading.value}")
    if signs:
        return Finding(
            Status.WARN,
            f"a virtual machine ({'; '.join(signs)}): {VM_CAUTION}",
            ev,
            "measure levers on bare metal, or at least with dedicated (pinned) vCPUs",
            data={"virtual": True},
        )
    if flags is None and not vendor.ok and not kind.ok:
        return Finding(
            Status.UNKNOWN,
            "no CPU flags, hypervisor type or DMI names to tell a VM from bare metal",
            [evidence(cpuinfo), evidence(vendor)],
            data={"virtual": None},
        )
    return Finding(
        Status.OK, "bare metal: no hypervisor flag, hypervisor type or virtual DMI name", ev, data={"virtual": False}
    )
