"""Every check's ok / warn / fail / unknown paths, on fixture trees copied
from this VM's real files and edited (fixtures/make_fixtures.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from launchgap.doctor import DirectoryHost, SnapshotHost, Status, run_doctor, target_from_cpus
from launchgap.doctor.checks import all_checks
from tests.doctor.trees import EACCES, EPERM, FIXTURES, RefusingHost, make_tree, snapshot_of

NODE_CMDLINE_TAIL = " nohz_full=1-3 isolcpus=domain,managed_irq,1-3 irqaffinity=0\n"


def node_cmdline(extra: str = "", replace: str | None = None) -> str:
    """node-4cpu's command line with its isolation part replaced or extended."""
    base = (FIXTURES / "node-4cpu/proc/cmdline").read_text()
    head = base[: -len(NODE_CMDLINE_TAIL)]
    return head + (replace if replace is not None else NODE_CMDLINE_TAIL.rstrip("\n")) + extra + "\n"


def vm_cmdline(extra: str) -> str:
    return (FIXTURES / "vm-2cpu/proc/cmdline").read_text().replace(" -- ", f" {extra} -- ", 1)


RELEASE = (FIXTURES / "vm-2cpu/proc/sys/kernel/osrelease").read_text().strip()
BOOT_CONFIG = f"/boot/config-{RELEASE}"


@dataclass
class Case:
    check: str
    status: Status
    fixture: str
    edits: dict = field(default_factory=dict)
    cpus: str | None = None
    says: str = ""  # a phrase the summary must contain
    refused: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.check}-{self.status.value}-{self.says[:30]}"


CASES = [
    # boot.isolation
    Case("boot.isolation", Status.OK, "vm-2cpu", says="no boot-time isolation"),
    Case("boot.isolation", Status.OK, "node-4cpu", says="nohz_full 1-3, isolcpus domain,managed_irq 1-3"),
    Case(
        "boot.isolation",
        Status.OK,
        "vm-2cpu",
        {"/sys/devices/system/cpu/isolated": "1\n"},
        says="CPUs 1 are isolated at run time",
    ),
    Case(
        "boot.isolation",
        Status.WARN,
        "node-4cpu",
        {"/sys/devices/system/cpu/nohz_full": "2-3\n"},
        says="nohz_full asks for 1-3, the kernel runs 2-3 tickless",
    ),
    Case(
        "boot.isolation",
        Status.WARN,
        "node-4cpu",
        {"/sys/devices/system/cpu/isolated": "\n"},
        says="isolcpus asks for 1-3, the kernel isolates none",
    ),
    Case(
        "boot.isolation",
        Status.WARN,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(replace=" nohz_full=1-3 isolcpus=nohz,fast,domain,1-3")},
        says="isolcpus has flags the kernel does not know (fast)",
    ),
    Case(
        "boot.isolation",
        Status.FAIL,
        "node-4cpu",
        {"/sys/devices/system/cpu/nohz_full": None},
        says="this kernel has no full dynticks",
    ),
    Case(
        "boot.isolation",
        Status.FAIL,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(replace=" nohz_full=1-x")},
        says="cannot parse nohz_full=1-x",
    ),
    Case("boot.isolation", Status.UNKNOWN, "node-4cpu", {"/proc/cmdline": None}, says="/proc/cmdline"),
    # boot.rcu_nocbs
    Case("boot.rcu_nocbs", Status.OK, "vm-2cpu", says="no nohz_full CPUs"),
    Case(
        "boot.rcu_nocbs",
        Status.OK,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(" rcu_nocbs=1-3")},
        says="rcu_nocbs=1-3 covers",
    ),
    Case(
        "boot.rcu_nocbs",
        Status.OK,
        "node-4cpu",
        {BOOT_CONFIG: "CONFIG_NO_HZ_FULL=y\nCONFIG_RCU_NOCB_CPU=y\n"},
        says="offloads the callbacks of nohz_full CPUs itself",
    ),
    Case("boot.rcu_nocbs", Status.WARN, "node-4cpu", says="nohz_full=1-3 without rcu_nocbs"),
    Case(
        "boot.rcu_nocbs",
        Status.WARN,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(" rcu_nocbs=1")},
        says="nohz_full CPUs 2-3 are not in rcu_nocbs",
    ),
    Case(
        "boot.rcu_nocbs",
        Status.FAIL,
        "node-4cpu",
        {BOOT_CONFIG: "# CONFIG_RCU_NOCB_CPU is not set\n"},
        says="no callback offloading",
    ),
    Case("boot.rcu_nocbs", Status.UNKNOWN, "node-4cpu", {"/proc/cmdline": None}),
    # boot.housekeeping
    Case("boot.housekeeping", Status.OK, "node-4cpu", says="housekeeping CPUs 0 take"),
    Case("boot.housekeeping", Status.OK, "vm-2cpu", says="every CPU does housekeeping"),
    Case(
        "boot.housekeeping",
        Status.FAIL,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(replace=" nohz_full=0-3 isolcpus=0-3")},
        says="no housekeeping CPU is left",
    ),
    Case(
        "boot.housekeeping",
        Status.FAIL,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(replace=" nohz_full=1-3 irqaffinity=2-3")},
        says="irqaffinity=2-3 sends interrupts to isolated CPUs 2-3",
    ),
    Case(
        "boot.housekeeping",
        Status.WARN,
        "node-4cpu",
        {"/proc/cmdline": node_cmdline(replace=" nohz_full=1-3 irqaffinity=0-1")},
        says="irqaffinity=0-1 sends interrupts to isolated CPUs 1",
    ),
    Case(
        "boot.housekeeping",
        Status.UNKNOWN,
        "node-4cpu",
        {"/sys/devices/system/cpu/online": None, "/proc/interrupts": None},
    ),
    # boot.kernel_support
    Case(
        "boot.kernel_support", Status.OK, "node-4cpu", says="supports what is asked (/sys/devices/system/cpu/nohz_full)"
    ),
    Case(
        "boot.kernel_support",
        Status.OK,
        "vm-2cpu",
        says="this kernel cannot run CPUs tickless (nohz_full) (CONFIG_NO_HZ_FULL)",
    ),
    Case(
        "boot.kernel_support",
        Status.FAIL,
        "vm-2cpu",
        {"/proc/cmdline": vm_cmdline("nohz_full=1")},
        says="nohz_full=1 is asked on a kernel without CONFIG_NO_HZ_FULL",
    ),
    Case(
        "boot.kernel_support",
        Status.FAIL,
        "node-4cpu",
        {"/sys/devices/system/cpu/nohz_full": None},
        says="without CONFIG_NO_HZ_FULL",
    ),
    Case(
        "boot.kernel_support",
        Status.UNKNOWN,
        "vm-2cpu",
        {"/proc/config.gz": None, "/sys/devices/system/cpu": None},
        says="neither the kernel config nor",
    ),
    # irq.isolated
    Case("irq.isolated", Status.OK, "vm-2cpu", says="no CPU is isolated"),
    Case(
        "irq.isolated",
        Status.OK,
        "node-4cpu",
        {"/proc/irq/38/effective_affinity_list": "0\n"},
        says="none of 6 device interrupts lands on isolated CPUs 1-3",
    ),
    Case(
        "irq.isolated",
        Status.FAIL,
        "node-4cpu",
        says="1 device interrupt lands on isolated CPUs 1-3: virtio2-input.0 (nic, IRQ 38) on CPU 2: 61,887 so far",
    ),
    Case("irq.isolated", Status.UNKNOWN, "node-4cpu", {"/proc/interrupts": None}),
    # irq.target
    Case("irq.target", Status.UNKNOWN, "vm-2cpu", says="no target"),
    Case(
        "irq.target", Status.OK, "node-4cpu", cpus="3", says="none of 6 device interrupts lands on the CPUs given (3)"
    ),
    Case("irq.target", Status.WARN, "node-4cpu", cpus="0", says="5 device interrupts land on the CPUs given (0)"),
    Case("irq.target", Status.WARN, "vm-2cpu", cpus="1", says="2 device interrupts land on the CPUs given (1)"),
    Case("irq.target", Status.UNKNOWN, "vm-2cpu", {"/proc/interrupts": None}, cpus="1"),
    # irq.managed
    Case(
        "irq.managed",
        Status.OK,
        "node-4cpu",
        says="1 kernel-managed interrupt (by debugfs: virtio1-req.0); none lands on isolated CPUs",
    ),
    Case("irq.managed", Status.OK, "vm-2cpu", says="(by name: nvme and virtio-blk queues: virtio1-req.0)"),
    Case(
        "irq.managed",
        Status.OK,
        "node-4cpu",
        {"/sys/kernel/debug/irq/irqs/36": "handler:  handle_edge_irq\n"},
        says="no kernel-managed interrupts",
    ),
    Case(
        "irq.managed",
        Status.WARN,
        "node-4cpu",
        {"/proc/irq/36/effective_affinity_list": "3\n"},
        says="1 kernel-managed interrupt (by debugfs) lands on isolated CPUs 1-3",
    ),
    Case("irq.managed", Status.WARN, "vm-2cpu", cpus="1", says="lands on target CPUs 1 and cannot be moved"),
    Case(
        "irq.managed",
        Status.UNKNOWN,
        "vm-2cpu",
        {"/proc/interrupts": (FIXTURES / "vm-2cpu/proc/interrupts").read_text().replace("virtio1-req.0", "virtio1-r")},
        says="cannot tell which interrupts the kernel manages",
    ),
    # irq.irqbalance
    Case("irq.irqbalance", Status.OK, "vm-2cpu", says="irqbalance is not running"),
    Case(
        "irq.irqbalance",
        Status.OK,
        "node-4cpu",
        {"/proc/4242/comm": "irqbalance\n", "/proc/4242/environ": "PATH=/bin\0"},
        says="irqbalance (pid 4242) leaves CPUs 1-3 alone",
    ),
    Case(
        "irq.irqbalance",
        Status.WARN,
        "node-4cpu",
        {"/proc/4242/comm": "irqbalance\n", "/proc/4242/environ": "IRQBALANCE_BANNED_CPULIST=3\0HOME=/\0"},
        says="may move interrupts onto CPUs 1-2 every 10 s (it bans 3)",
    ),
    Case(
        "irq.irqbalance",
        Status.WARN,
        "node-4cpu",
        {"/proc/4242/comm": "irqbalance\n", "/etc/default/irqbalance": "# comment\nIRQBALANCE_BANNED_CPUS=2\n"},
        says="may move interrupts onto CPUs 2-3 every 10 s (it bans 1)",
    ),
    Case("irq.irqbalance", Status.UNKNOWN, "node-4cpu", refused={"/proc": EACCES}),
    # irq.default_affinity
    Case("irq.default_affinity", Status.OK, "node-4cpu", says="new interrupts go to CPUs 0 (no isolated CPU"),
    Case(
        "irq.default_affinity",
        Status.WARN,
        "node-4cpu",
        {"/proc/irq/default_smp_affinity": "f\n"},
        says="may be placed on isolated CPUs 1-3",
    ),
    Case("irq.default_affinity", Status.UNKNOWN, "node-4cpu", {"/proc/irq/default_smp_affinity": None}),
    # sched.rt_throttling
    Case("sched.rt_throttling", Status.OK, "vm-2cpu", says="950000 us per period (95% of each period)"),
    Case(
        "sched.rt_throttling",
        Status.WARN,
        "vm-2cpu",
        {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"},
        says="RT throttling is off",
    ),
    Case("sched.rt_throttling", Status.UNKNOWN, "vm-2cpu", {"/proc/sys/kernel/sched_rt_runtime_us": None}),
    # sched.preemption: it has no warn or fail (no model is wrong in itself), only ok and the unknowns
    Case(
        "sched.preemption",
        Status.OK,
        "node-4cpu",
        says="preemption model full; switchable at run time to none, voluntary, lazy",
    ),
    Case(
        "sched.preemption",
        Status.UNKNOWN,
        "vm-2cpu",
        says="debugfs is not mounted at /sys/kernel/debug; it booted as none",
    ),
    Case(
        "sched.preemption",
        Status.UNKNOWN,
        "vm-2cpu",
        {"/proc/cmdline": vm_cmdline("preempt=voluntary")},
        says="it booted as voluntary",
    ),
    Case(
        "sched.preemption",
        Status.UNKNOWN,
        "node-4cpu",
        {"/sys/kernel/security/lockdown": "none [integrity] confidentiality\n"},
        refused={"/sys/kernel/debug/sched/preempt": EPERM},
        says="the kernel is locked down (integrity)",
    ),
    Case(
        "sched.preemption",
        Status.UNKNOWN,
        "node-4cpu",
        refused={"/sys/kernel/debug": EACCES, "/sys/kernel/debug/sched/preempt": EACCES},
        says="debugfs refuses the read (EACCES): run as root",
    ),
    Case(
        "sched.preemption",
        Status.UNKNOWN,
        "node-4cpu",
        {"/sys/kernel/debug/sched/preempt": None},
        says="a kernel without PREEMPT_DYNAMIC",
    ),
    # sched.timer_migration
    Case("sched.timer_migration", Status.OK, "node-4cpu", says="timer migration is off"),
    Case("sched.timer_migration", Status.OK, "vm-2cpu", says="on: timers of idle CPUs move"),
    Case(
        "sched.timer_migration",
        Status.WARN,
        "node-4cpu",
        {"/proc/sys/kernel/timer_migration": "1\n"},
        says="while CPUs 1-3 are isolated",
    ),
    Case("sched.timer_migration", Status.UNKNOWN, "node-4cpu", {"/proc/sys/kernel/timer_migration": None}),
    # sched.workqueue
    Case("sched.workqueue", Status.OK, "node-4cpu", says="runs on CPUs 0 (no isolated CPU among them)"),
    Case(
        "sched.workqueue",
        Status.WARN,
        "node-4cpu",
        {"/sys/devices/virtual/workqueue/cpumask": "f\n"},
        says="may run on isolated CPUs 1-3",
    ),
    Case("sched.workqueue", Status.UNKNOWN, "node-4cpu", {"/sys/devices/virtual/workqueue/cpumask": None}),
    # cpu.governor
    Case("cpu.governor", Status.OK, "node-4cpu", says="CPUs 0-3 use the performance governor"),
    Case(
        "cpu.governor",
        Status.WARN,
        "node-4cpu",
        {"/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor": "powersave\n"},
        says="CPUs 2 use powersave",
    ),
    Case(
        "cpu.governor",
        Status.OK,
        "node-4cpu",
        {"/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor": "powersave\n"},
        cpus="1",
        says="CPUs 1 use the performance",
    ),
    Case("cpu.governor", Status.UNKNOWN, "vm-2cpu", says="no cpufreq driver"),
    # cpu.smt
    Case("cpu.smt", Status.OK, "vm-2cpu", says="SMT is not active (control: notsupported)"),
    Case(
        "cpu.smt",
        Status.WARN,
        "node-4cpu",
        {
            "/sys/devices/system/cpu/smt/control": "on\n",
            "/sys/devices/system/cpu/smt/active": "1\n",
            **{
                f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list": s
                for c, s in ((0, "0-1\n"), (1, "0-1\n"), (2, "2-3\n"), (3, "2-3\n"))
            },
        },
        says="(1 with 0)",
    ),
    Case(
        "cpu.smt",
        Status.OK,
        "node-4cpu",
        {
            "/sys/devices/system/cpu/smt/control": "on\n",
            "/sys/devices/system/cpu/smt/active": "1\n",
            "/proc/cmdline": node_cmdline(replace=""),
            "/sys/devices/system/cpu/isolated": "\n",
            "/sys/devices/system/cpu/nohz_full": "\n",
            **{
                f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list": s
                for c, s in ((0, "0-1\n"), (1, "0-1\n"), (2, "2-3\n"), (3, "2-3\n"))
            },
        },
        cpus="2-3",
        says="CPUs 2-3 hold whole cores",
    ),
    Case("cpu.smt", Status.UNKNOWN, "vm-2cpu", {"/sys/devices/system/cpu/smt": None}),
    # cpu.thp
    Case("cpu.thp", Status.OK, "vm-2cpu", says="enabled=madvise, defrag=madvise"),
    Case(
        "cpu.thp",
        Status.WARN,
        "vm-2cpu",
        {"/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n"},
        says="enabled=always",
    ),
    Case("cpu.thp", Status.UNKNOWN, "vm-2cpu", {"/sys/kernel/mm/transparent_hugepage": None}),
    # cpu.gpu_numa
    Case("cpu.gpu_numa", Status.OK, "vm-2cpu", says="no NVIDIA GPU (PCI vendor 0x10de, display class) among 6"),
    Case(
        "cpu.gpu_numa", Status.OK, "node-4cpu", cpus="1", says="(1) are local to 0000:65:00.0 (node 0, local CPUs 0-3)"
    ),
    Case(
        "cpu.gpu_numa",
        Status.WARN,
        "node-4cpu",
        {
            "/sys/bus/pci/devices/0000:65:00.0/numa_node": "1\n",
            "/sys/bus/pci/devices/0000:65:00.0/local_cpulist": "2-3\n",
        },
        cpus="1",
        says="not all local to any GPU: 0000:65:00.0 (node 1, local CPUs 2-3)",
    ),
    Case(
        "cpu.gpu_numa",
        Status.UNKNOWN,
        "node-4cpu",
        {"/sys/bus/pci/devices/0000:65:00.0/local_cpulist": None},
        cpus="1",
        says="local CPUs are not readable",
    ),
    # cpu.hypervisor
    Case("cpu.hypervisor", Status.WARN, "vm-2cpu", says="the CPU reports the hypervisor flag"),
    Case("cpu.hypervisor", Status.OK, "node-4cpu", says="bare metal"),
    Case("cpu.hypervisor", Status.WARN, "node-4cpu", {"/sys/class/dmi/id/sys_vendor": "QEMU\n"}, says="DMI says QEMU"),
    Case("cpu.hypervisor", Status.UNKNOWN, "node-4cpu", {"/proc/cpuinfo": None}),
]


def run_case(case: Case, tmp_path):
    root = make_tree(tmp_path, case.fixture, case.edits)
    host = DirectoryHost(root)
    if case.refused:
        host = RefusingHost(host, case.refused)
    target = target_from_cpus(host, case.cpus) if case.cpus else None
    result = run_doctor(host, target)
    return next(c for c in result.checks if c.id == case.check)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_check_verdict(case: Case, tmp_path):
    found = run_case(case, tmp_path)
    assert found.status is case.status, f"{found.summary} / {found.evidence}"
    assert " ".join(case.says.split()) in " ".join(found.summary.split())
    assert found.evidence or found.status is Status.UNKNOWN
    if found.status in (Status.WARN, Status.FAIL):
        assert found.fix, "a warning or failure comes with a fix"


def test_every_check_is_covered_on_each_path():
    covered: dict[str, set[Status]] = {}
    for case in CASES:
        covered.setdefault(case.check, set()).add(case.status)
    ids = [c.id for c in all_checks()]
    assert sorted(covered) == sorted(ids)
    for check_id in ids:
        assert {Status.OK, Status.UNKNOWN} <= covered[check_id], check_id
        if check_id != "sched.preemption":  # no model is a problem in itself
            assert covered[check_id] & {Status.WARN, Status.FAIL}, check_id


def _column_counts(tree, irq: int) -> list[int]:
    """The counts of one /proc/interrupts row, read by fixed columns as the kernel writes them."""
    text = (tree / "proc/interrupts").read_text().splitlines()
    cpus = len(text[0].split())
    row = next(line for line in text if line.partition(":")[0].strip() == str(irq))
    rest = row.partition(":")[2][1:]
    return [int(rest[i * 11 : (i + 1) * 11]) for i in range(cpus)]


def test_four_cpu_node_nohz_full_without_rcu_nocbs_and_a_nic_queue_on_an_isolated_cpu(tmp_path):
    """The acceptance case: 4 CPUs, nohz_full=1-3 and no rcu_nocbs, the NIC's
    receive queue on isolated CPU 2; a GPU on the node."""
    root = make_tree(tmp_path, "node-4cpu")
    result = run_doctor(DirectoryHost(root), target_from_cpus(DirectoryHost(root), "2"))
    checks = {c.id: c for c in result.checks}
    assert checks["boot.rcu_nocbs"].status is Status.WARN
    assert checks["boot.rcu_nocbs"].data == {"not_offloaded": [1, 2, 3]}
    isolated = checks["irq.isolated"]
    assert isolated.status is Status.FAIL
    assert [i["irq"] for i in isolated.data["irqs"]] == [38]
    assert isolated.data["irqs"][0]["kind"] == "nic" and isolated.data["irqs"][0]["pci"] == "0000:00:03.0"
    assert isolated.data["irqs"][0]["count_on_cpus"] == sum(_column_counts(root, 38)[1:])
    on_target = checks["irq.target"]
    assert on_target.status is Status.WARN and on_target.data["count"] == 1
    assert on_target.data["irqs"][0]["count_on_cpus"] == _column_counts(root, 38)[2]
    assert checks["cpu.gpu_numa"].status is Status.OK
    assert checks["cpu.gpu_numa"].data["gpus"] == [{"pci": "0000:65:00.0", "numa_node": 0, "local_cpus": [0, 1, 2, 3]}]
    assert result.counts() == {"ok": 15, "warn": 2, "fail": 1, "unknown": 0}


def test_the_gpu_interrupt_is_a_device_interrupt_by_its_pci_device(tmp_path):
    root = make_tree(tmp_path, "node-4cpu", {"/proc/irq/44/effective_affinity_list": "3\n"})
    checks = {c.id: c for c in run_doctor(DirectoryHost(root)).checks}
    irqs = {i["irq"]: i for i in checks["irq.isolated"].data["irqs"]}
    assert sorted(irqs) == [38, 44]
    assert irqs[44]["kind"] == "gpu" and irqs[44]["pci"] == "0000:65:00.0"


@pytest.mark.parametrize("fixture", ["vm-2cpu", "node-4cpu"])
def test_a_snapshot_of_a_tree_gives_the_same_verdicts_as_the_tree(fixture, tmp_path):
    """--root DIR and the recorder's snapshot are the same code over two views."""
    root = make_tree(tmp_path, fixture)
    target = target_from_cpus(DirectoryHost(root), "1")
    from_tree = run_doctor(DirectoryHost(root), target).to_dict()
    from_snapshot = run_doctor(SnapshotHost(snapshot_of(root)), target).to_dict()
    from_tree.pop("host"), from_snapshot.pop("host")
    assert from_tree == from_snapshot
