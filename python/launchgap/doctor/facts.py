"""What the checks know about a host: each file read once, parsed into typed
facts, with the reading kept as evidence. Only reads, through a Host."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from launchgap.doctor.host import Host, Listing, Reading
from launchgap.doctor.model import EVIDENCE_CHARS, Evidence
from launchgap.doctor.parse import (
    InterruptRow,
    Interrupts,
    Isolcpus,
    ParseError,
    UnparsableFile,
    environ_entries,
    excerpt,
    format_cpus,
    is_number,
    kernel_params,
    parse_cpulist,
    parse_cpumask,
    parse_interrupts,
    parse_isolcpus,
    parse_kernel_config,
    shell_assignments,
)

# Every file and directory the doctor reads; the recorder's snapshot
# (recorder/src/metadata/host_files.rs) captures the same set.
CMDLINE = "/proc/cmdline"
INTERRUPTS = "/proc/interrupts"
CPUINFO = "/proc/cpuinfo"
OSRELEASE = "/proc/sys/kernel/osrelease"
KERNEL_VERSION = "/proc/sys/kernel/version"
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
RT_PERIOD = "/proc/sys/kernel/sched_rt_period_us"
TIMER_MIGRATION = "/proc/sys/kernel/timer_migration"
IRQ_DIR = "/proc/irq"
DEFAULT_IRQ_AFFINITY = "/proc/irq/default_smp_affinity"
CPU_DIR = "/sys/devices/system/cpu"
CPUS_ONLINE = f"{CPU_DIR}/online"
CPUS_POSSIBLE = f"{CPU_DIR}/possible"
CPUS_ISOLATED = f"{CPU_DIR}/isolated"
CPUS_NOHZ_FULL = f"{CPU_DIR}/nohz_full"
SMT_CONTROL = f"{CPU_DIR}/smt/control"
SMT_ACTIVE = f"{CPU_DIR}/smt/active"
WORKQUEUE_CPUMASK = "/sys/devices/virtual/workqueue/cpumask"
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
THP_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
REALTIME = "/sys/kernel/realtime"
DEBUGFS = "/sys/kernel/debug"
PREEMPT = "/sys/kernel/debug/sched/preempt"
IRQ_DEBUGFS = "/sys/kernel/debug/irq/irqs"
LOCKDOWN = "/sys/kernel/security/lockdown"
PCI_DEVICES = "/sys/bus/pci/devices"
HYPERVISOR_TYPE = "/sys/hypervisor/type"
DMI_VENDOR = "/sys/class/dmi/id/sys_vendor"
DMI_PRODUCT = "/sys/class/dmi/id/product_name"
PROC = "/proc"
IRQBALANCE_CONFIGS = ("/etc/default/irqbalance", "/etc/sysconfig/irqbalance")
CONFIG_GZ = "/proc/config.gz"
PCI_FILES = ("vendor", "class", "numa_node", "local_cpulist", "irq")
CPU_FILES = ("cpufreq/scaling_governor", "topology/thread_siblings_list")
# kernel config options the doctor consults (the snapshot keeps only these lines)
CONFIG_PREFIXES = ("CONFIG_NO_HZ", "CONFIG_PREEMPT", "CONFIG_RCU_NOCB_CPU", "CONFIG_CPU_ISOLATION", "CONFIG_HZ")

NVIDIA_VENDOR = 0x10DE
# PCI base classes (the top byte of the class code) and the NVMe subclass
PCI_CLASS_STORAGE = 0x01
PCI_CLASS_NETWORK = 0x02
PCI_CLASS_DISPLAY = 0x03
PCI_CLASS_ACCELERATOR = 0x12
PCI_SUBCLASS_NVME = 0x0108
# the device kinds whose interrupts the checks flag: they fire under load (NIC
# queues, disks, GPUs); a balloon, an RNG or a serial port hardly ever does
FLAGGED_KINDS = ("nic", "nvme", "storage", "gpu", "display", "accelerator")
IRQBALANCE_COMM = "irqbalance"

PCI_ADDRESS = r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"
# newer kernels name the device in the chip column: "PCI-MSIX-0000:00:03.0"
CHIP_PCI = re.compile(rf"PCI-MSI(?:X)?-({PCI_ADDRESS})")
# device kinds by handler name, for IRQs with no PCI device to ask
KIND_BY_NAME = (
    (re.compile(r"^nvidia"), "gpu"),
    (re.compile(r"^nvme\d+q\d+"), "nvme"),
    (re.compile(r"^(eth\d|en[a-z]\w*|ib\d|mlx[45]_|i40e|ice-|ixgbe|igb|bnxt|virtio\d+-(input|output))"), "nic"),
)
# queue interrupts whose drivers ask the kernel to spread and manage them
# (pci_alloc_irq_vectors_affinity): told apart by name when debugfs cannot be read
MANAGED_BY_NAME = (re.compile(r"^nvme\d+q[1-9]\d*$"), re.compile(r"^virtio\d+-req\.\d+$"))


def evidence(reading: Reading, value: str | None = None) -> Evidence:
    """A reading as evidence: its value (or the one given), or why it could not be read."""
    if not reading.ok:
        return Evidence(reading.path, f"(not readable: {reading.why})")
    text = reading.value if value is None else value
    if text == "":
        text = "(empty)"
    if len(text) > EVIDENCE_CHARS:
        text = text[: EVIDENCE_CHARS - 3] + "..."
    return Evidence(reading.path, text)


def cpulist_of(reading: Reading, last_cpu: int | None = None) -> frozenset[int]:
    """The CPU list a readable file holds, or UnparsableFile naming the file and its value."""
    try:
        return parse_cpulist(reading.value, last_cpu)
    except ParseError as err:
        raise UnparsableFile(reading.path, reading.value, str(err)) from None


@dataclass(frozen=True)
class BootIsolation:
    """What the command line asks for, and what the kernel shows in effect."""

    nohz_full: frozenset[int] | None  # None: not on the command line
    isolcpus: Isolcpus | None
    rcu_nocbs: frozenset[int] | None
    irqaffinity: frozenset[int] | None
    sysfs_isolated: frozenset[int] | None  # None: not readable
    sysfs_nohz_full: frozenset[int] | None  # None: not readable (the file exists only with CONFIG_NO_HZ_FULL)
    bad_values: tuple[str, ...] = ()

    @property
    def requested(self) -> bool:
        return any(v is not None for v in (self.nohz_full, self.isolcpus, self.rcu_nocbs, self.irqaffinity))


@dataclass(frozen=True)
class PciDevice:
    address: str
    vendor: int | None
    class_code: int | None
    numa_node: int | None
    local_cpus: frozenset[int] | None
    msi_irqs: frozenset[int]
    legacy_irq: int | None

    @property
    def is_nvidia_gpu(self) -> bool:
        return (
            self.vendor == NVIDIA_VENDOR and self.class_code is not None and self.class_code >> 16 == PCI_CLASS_DISPLAY
        )

    @property
    def kind(self) -> str:
        if self.is_nvidia_gpu:
            return "gpu"
        if self.class_code is None:
            return "device"
        if self.class_code >> 8 == PCI_SUBCLASS_NVME:
            return "nvme"
        return {
            PCI_CLASS_NETWORK: "nic",
            PCI_CLASS_STORAGE: "storage",
            PCI_CLASS_DISPLAY: "display",
            PCI_CLASS_ACCELERATOR: "accelerator",
        }.get(self.class_code >> 16, "device")


@dataclass(frozen=True)
class IrqInfo:
    number: int
    row: InterruptRow
    effective: frozenset[int] | None
    effective_is_requested: bool  # effective_affinity_list unreadable: smp_affinity_list used
    affinity_reading: Reading
    pci: str | None
    kind: str | None  # nic, nvme, storage, gpu, display, device; None: platform/system
    managed: bool | None  # None: cannot tell
    managed_source: str | None  # "debugfs" or "name"

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def is_device(self) -> bool:
        """A device interrupt the checks flag (see FLAGGED_KINDS)."""
        return self.kind in FLAGGED_KINDS

    def fired_on(self, cpus) -> int:
        return sum(self.row.counts.get(c, 0) for c in cpus)

    def describe(self, cpus: frozenset[int] | None = None) -> str:
        """ "virtio2-input.0 (nic, IRQ 38) on CPU 0: 15,608 so far"."""
        where = format_cpus(self.effective or ())
        fired = self.fired_on(cpus if cpus is not None else self.row.counts)
        managed = ", kernel-managed" if self.managed else ""
        return f"{self.name} ({self.kind}{managed}, IRQ {self.number}) on CPU {where}: {fired:,} so far"


@dataclass(frozen=True)
class KernelConfig:
    path: str
    options: dict[str, str]

    def enabled(self, option: str) -> bool:
        return self.options.get(option) in ("y", "m")


@dataclass(frozen=True)
class IrqbalanceProcess:
    pid: int
    banned: frozenset[int] | None  # None: the daemon's own default (isolated + nohz_full CPUs)
    banned_source: Evidence | None
    environ_readable: bool


class HostFacts:
    """Lazily parsed facts about one host; every file is read at most once."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._reads: dict[str, Reading] = {}
        self._lists: dict[str, Listing] = {}

    def read(self, path: str) -> Reading:
        if path not in self._reads:
            self._reads[path] = self.host.read(path)
        return self._reads[path]

    def listdir(self, path: str) -> Listing:
        if path not in self._lists:
            self._lists[path] = self.host.listdir(path)
        return self._lists[path]

    def cpus_from(self, path: str) -> frozenset[int] | None:
        """The CPU list in PATH; None where it cannot be read; UnparsableFile where it is not a CPU list."""
        reading = self.read(path)
        if not reading.ok:
            return None
        return cpulist_of(reading, self.last_cpu)

    # ---- CPUs ------------------------------------------------------------
    @cached_property
    def online(self) -> frozenset[int] | None:
        reading = self.read(CPUS_ONLINE)
        if reading.ok:
            return cpulist_of(reading)
        if self.interrupts is not None:
            return frozenset(self.interrupts.cpus)
        return None

    @cached_property
    def last_cpu(self) -> int | None:
        reading = self.read(CPUS_POSSIBLE)
        cpus = cpulist_of(reading) if reading.ok else self.online
        return max(cpus) if cpus else None

    @cached_property
    def kernel_release(self) -> str | None:
        return self.read(OSRELEASE).value

    # ---- boot isolation --------------------------------------------------
    @cached_property
    def params(self) -> dict[str, str | None] | None:
        reading = self.read(CMDLINE)
        return kernel_params(reading.text) if reading.ok else None

    @cached_property
    def boot(self) -> BootIsolation:
        params = self.params or {}
        bad: list[str] = []

        def cpus_param(name: str) -> frozenset[int] | None:
            if name not in params:
                return None
            value = params[name]
            if value is None:
                return frozenset()
            try:
                return parse_cpulist(value, self.last_cpu)
            except ParseError as err:
                bad.append(f"{name}={excerpt(value)}: {err}")
                return frozenset()

        isolcpus = None
        if params.get("isolcpus") is not None:
            try:
                isolcpus = parse_isolcpus(params["isolcpus"], self.last_cpu)
            except ParseError as err:
                bad.append(f"isolcpus={excerpt(params['isolcpus'])}: {err}")
        sysfs_nohz = self.read(CPUS_NOHZ_FULL)
        return BootIsolation(
            nohz_full=cpus_param("nohz_full"),
            isolcpus=isolcpus,
            rcu_nocbs=cpus_param("rcu_nocbs"),
            irqaffinity=cpus_param("irqaffinity"),
            sysfs_isolated=self.cpus_from(CPUS_ISOLATED),
            sysfs_nohz_full=cpulist_of(sysfs_nohz) if sysfs_nohz.ok else None,
            bad_values=tuple(bad),
        )

    @cached_property
    def isolated(self) -> frozenset[int]:
        """CPUs kept from general work: what the kernel shows in effect, else what the command line asks."""
        boot = self.boot
        shown = (boot.sysfs_isolated or frozenset()) | (boot.sysfs_nohz_full or frozenset())
        if boot.sysfs_isolated is not None:
            return shown
        asked = (boot.nohz_full or frozenset()) | (boot.isolcpus.cpus if boot.isolcpus else frozenset())
        return shown | asked

    # ---- kernel build ----------------------------------------------------
    @cached_property
    def config_candidates(self) -> list[str]:
        paths = [CONFIG_GZ]
        if self.kernel_release:
            paths.append(f"/boot/config-{self.kernel_release}")
        return paths

    @cached_property
    def config(self) -> KernelConfig | None:
        for path in self.config_candidates:
            reading = self.read(path)
            if reading.ok:
                return KernelConfig(path, parse_kernel_config(reading.text))
        return None

    # ---- interrupts ------------------------------------------------------
    @cached_property
    def interrupts(self) -> Interrupts | None:
        reading = self.read(INTERRUPTS)
        if not reading.ok:
            return None
        try:
            return parse_interrupts(reading.text)
        except ParseError:
            return None

    @cached_property
    def pci(self) -> dict[str, PciDevice]:
        listing = self.listdir(PCI_DEVICES)
        devices = {}
        for address in listing.names or ():
            base = f"{PCI_DEVICES}/{address}"

            def number(name: str, base_: int = 10, base: str = base) -> int | None:
                value = self.read(f"{base}/{name}").value
                try:
                    return int(value, base_) if value else None
                except ValueError:
                    return None

            msi = self.listdir(f"{base}/msi_irqs")
            devices[address] = PciDevice(
                address=address,
                vendor=number("vendor", 16),
                class_code=number("class", 16),
                numa_node=number("numa_node"),
                local_cpus=self.cpus_from(f"{base}/local_cpulist"),
                msi_irqs=frozenset(int(n) for n in (msi.names or ()) if is_number(n)),
                legacy_irq=number("irq"),
            )
        return devices

    @cached_property
    def debugfs_listing(self) -> Listing:
        return self.listdir(DEBUGFS)

    @cached_property
    def irq_debugfs_readable(self) -> bool:
        return self.listdir(IRQ_DEBUGFS).ok

    @cached_property
    def irqs(self) -> list[IrqInfo]:
        if self.interrupts is None:
            return []
        by_msi = {irq: addr for addr, dev in self.pci.items() for irq in dev.msi_irqs}
        by_legacy = {dev.legacy_irq: addr for addr, dev in self.pci.items() if dev.legacy_irq}
        out = []
        for row in self.interrupts.rows:
            n = row.number
            if n is None:
                continue
            eff = self.read(f"{IRQ_DIR}/{n}/effective_affinity_list")
            requested = not eff.ok
            reading = eff if eff.ok else self.read(f"{IRQ_DIR}/{n}/smp_affinity_list")
            try:
                cpus = parse_cpulist(reading.value, self.last_cpu) if reading.ok else None
            except ParseError:
                cpus = None
            chip = CHIP_PCI.search(row.chip)
            pci = (
                by_msi.get(n)
                or (chip.group(1) if chip else None)
                or (by_legacy.get(n) if "MSI" not in row.chip else None)
            )
            if pci in self.pci:
                kind = self.pci[pci].kind
            else:  # no PCI device to ask: go by the handler's name
                kind = next(
                    (named for pattern, named in KIND_BY_NAME if any(pattern.search(a) for a in row.actions)),
                    "device" if pci else None,
                )
            managed, source = self._managed(n, row)
            out.append(IrqInfo(n, row, cpus, requested, reading, pci, kind, managed, source))
        return out

    def _managed(self, number: int, row: InterruptRow) -> tuple[bool | None, str | None]:
        if self.irq_debugfs_readable:
            state = self.read(f"{IRQ_DEBUGFS}/{number}")
            if state.ok:
                return "IRQD_AFFINITY_MANAGED" in state.text, "debugfs"
        if any(p.match(a) for p in MANAGED_BY_NAME for a in row.actions):
            return True, "name"
        return None, None

    # ---- processes -------------------------------------------------------
    @cached_property
    def irqbalance(self) -> list[IrqbalanceProcess]:
        found = []
        for name in self.listdir(PROC).names or ():
            if not is_number(name):
                continue
            if self.read(f"{PROC}/{name}/comm").value != IRQBALANCE_COMM:
                continue
            environ = self.read(f"{PROC}/{name}/environ")
            banned, source = None, None
            if environ.ok:
                env = environ_entries(environ.text)
                banned, source = _banned_from(env, environ)
            else:
                for path in IRQBALANCE_CONFIGS:
                    conf = self.read(path)
                    if conf.ok:
                        banned, source = _banned_from(shell_assignments(conf.text), conf)
                        if source:
                            break
            found.append(IrqbalanceProcess(int(name), banned, source, environ.ok))
        return found


def _banned_from(env: dict[str, str], reading: Reading) -> tuple[frozenset[int] | None, Evidence | None]:
    """irqbalance's own order: IRQBALANCE_BANNED_CPUS (a mask) first, then
    IRQBALANCE_BANNED_CPULIST; neither set means isolated + nohz_full CPUs."""
    for key, parse in (("IRQBALANCE_BANNED_CPUS", parse_cpumask), ("IRQBALANCE_BANNED_CPULIST", parse_cpulist)):
        if env.get(key):
            try:
                return parse(env[key]), Evidence(reading.path, f"{key}={env[key]}")
            except ParseError:
                return frozenset(), Evidence(reading.path, f"{key}={env[key]} (not understood)")
    return None, None
