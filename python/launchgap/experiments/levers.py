"""Kernel levers a scenario sets for its runs, beyond pinning and nice:

- the workload's scheduler policy (`other | batch | idle | fifo:P | rr:P`),
  set in the workload alone before exec (enter.py), nothing on the host;
- host-wide: the preemption model (PREEMPT_DYNAMIC's debugfs switch), CPU
  isolation at run time (a cgroup v2 cpuset partition, or v1 cpu_exclusive
  without load balancing), timer migration and the unbound workqueue
  cpumask. (IRQ steering is in mitigations.py.)

What the host allows is decided from the doctor's view of it (HostFacts over
a DirectoryHost, and the doctor's own checks), so the experiment and
`launchgap doctor` never disagree about a host. Every host write goes through
HostChanges: journalled before it is made, undone on every path (the
custodian undoes it after SIGKILL), and read back through a fresh view of the
host before the workload starts. LeverHost's root is "/" except in tests,
which play a host whose debugfs can switch the model (this VM's cannot).
"""

from __future__ import annotations

import json
import os
import re
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from launchgap import procfs
from launchgap.doctor.checks import scheduler
from launchgap.doctor.facts import LOCKDOWN, PREEMPT, TIMER_MIGRATION, WORKQUEUE_CPUMASK, HostFacts
from launchgap.doctor.host import DirectoryHost, Host
from launchgap.doctor.parse import (
    ParseError,
    format_cpus,
    is_number,
    parse_bracketed_choice,
    parse_cpulist,
    parse_cpumask,
)

# the tests' stand-in for "/" (a tree of fake /proc, /sys files): where levers read and write
ENV_ROOT = "LAUNCHGAP_LEVER_ROOT"
# SCHED_FIFO/SCHED_RR priorities a scenario may ask for: high enough to win
# against normal tasks, low enough to leave the kernel's own RT threads (at 50 and up) alone.
RT_PRIORITY_MAX = 49
RT_POLICIES = ("fifo", "rr")
POLICIES = {
    "other": os.SCHED_OTHER,
    "batch": os.SCHED_BATCH,
    "idle": os.SCHED_IDLE,
    "fifo": os.SCHED_FIFO,
    "rr": os.SCHED_RR,
}
POLICY_BY_NUMBER = {number: name for name, number in POLICIES.items()}
# the kernel's prio for a task (what sched_switch reports): RT tasks 0..98 (MAX_RT_PRIO - 1 - rt_priority),
# fair ones (other, batch, idle) 100..139 (120 + nice)
MAX_RT_PRIO = 100
DEFAULT_PRIO = 120
PREEMPT_MODELS = ("none", "voluntary", "full", "lazy")
ISOLATION_MODES = ("isolated", "root")
# the first kernels with each v2 partition type (cpuset.cpus.partition "root": 5.0; "isolated": 6.1)
V2_PARTITION_SINCE = {"root": (5, 0), "isolated": (6, 1)}

CGROUP = "/sys/fs/cgroup"
CGROUP_V2_CONTROLLERS = f"{CGROUP}/cgroup.controllers"
CGROUP_V2_SUBTREE = f"{CGROUP}/cgroup.subtree_control"
CGROUP_V2_ISOLATED = f"{CGROUP}/cpuset.cpus.isolated"  # root only, Linux 6.10+: CPUs in isolated partitions
CPUSET_V1 = f"{CGROUP}/cpuset"
V1_LOAD_BALANCE = "cpuset.sched_load_balance"
V1_EXCLUSIVE = "cpuset.cpu_exclusive"
IRQ_ROOT = "/proc/irq"
IRQ_AFFINITY = "smp_affinity_list"

# ---- everything a lever may change: what a journal is checked against before anything in it is undone ------
# the files a lever writes (IRQ affinity aside: IRQ_ROOT/N/IRQ_AFFINITY)
LEVER_FILES = (TIMER_MIGRATION, WORKQUEUE_CPUMASK, PREEMPT, CGROUP_V2_SUBTREE, f"{CPUSET_V1}/{V1_LOAD_BALANCE}")
# the directories a lever's cgroups are made in, and the names it gives them: launchgap-XXXXXXXX (a cpuset),
# launchgap-iso-XXXXXXXX and launchgap-house-XXXXXXXX (isolation)
CGROUP_PARENTS = (CGROUP, CPUSET_V1)
CGROUP_NAME = re.compile(r"launchgap-(?:iso-|house-)?[0-9a-f]{8}")
# a load's scratch directory (fio's files): tempfile.mkdtemp(prefix=SCRATCH_PREFIX), 8 random characters
SCRATCH_PREFIX = "launchgap-fio-"
SCRATCH_NAME = re.compile(re.escape(SCRATCH_PREFIX) + r"[a-z0-9_]{8}")


class MitigationError(RuntimeError):
    """A mitigation or lever cannot be applied here, or did not take effect (the message says why, on one line)."""


@dataclass(frozen=True)
class Policy:
    """A scheduling policy as `chrt` would set it."""

    name: str  # other | batch | idle | fifo | rr
    priority: int = 0  # 1..RT_PRIORITY_MAX for fifo and rr, else 0

    @classmethod
    def parse(cls, text: str) -> Policy:
        name, sep, prio = text.strip().lower().partition(":")
        if name not in POLICIES:
            raise MitigationError(f"policy {text!r}: not one of other, batch, idle, fifo:P, rr:P")
        if name in RT_POLICIES:
            if not sep or not is_number(prio):
                raise MitigationError(
                    f"policy {text!r}: {name} needs a priority, e.g. {name}:10 (1..{RT_PRIORITY_MAX})"
                )
            policy = cls(name, int(prio))
        elif sep:
            raise MitigationError(f"policy {text!r}: {name} takes no priority")
        else:
            policy = cls(name)
        policy.validate()
        return policy

    def validate(self) -> None:
        if self.name not in POLICIES:
            raise MitigationError(f"policy {self.name!r}: not one of other, batch, idle, fifo, rr")
        if self.is_rt and not 1 <= self.priority <= RT_PRIORITY_MAX:
            raise MitigationError(
                f"policy {self}: RT priority must be 1..{RT_PRIORITY_MAX} (the kernel's own RT "
                f"threads run at 50 and up)"
            )

    @property
    def is_rt(self) -> bool:
        return self.name in RT_POLICIES

    @property
    def number(self) -> int:
        return POLICIES[self.name]

    def kernel_prio(self, nice: int = 0) -> int:
        """The prio the kernel shows for a task with this policy (sched_switch's prev_prio)."""
        return MAX_RT_PRIO - 1 - self.priority if self.is_rt else DEFAULT_PRIO + nice

    def __str__(self) -> str:
        return f"{self.name}:{self.priority}" if self.is_rt else self.name

    def describe(self) -> str:
        return f"SCHED_{self.name.upper()}" + (f" {self.priority}" if self.is_rt else "")


class LeverHost:
    """Where levers read (through the doctor's view of the host) and write: "/" or, in tests, a tree standing
    in for it (LAUNCHGAP_LEVER_ROOT), or a subclass that stands in for single files."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root if root is not None else os.environ.get(ENV_ROOT) or "/")

    def view(self) -> Host:
        """The doctor's read-only view of this host."""
        return DirectoryHost(self.root)

    def facts(self) -> HostFacts:
        """A fresh view: every lever reads the host as it is now, after its own writes."""
        return HostFacts(self.view())

    def path(self, kernel_path: str) -> Path:
        """Where a write to KERNEL_PATH goes."""
        return self.root / kernel_path.lstrip("/")

    def writable(self, kernel_path: str) -> bool:
        return os.access(self.path(kernel_path), os.W_OK)


@dataclass(frozen=True)
class LeverFiles:
    """What a lever may change on one host, as paths there: recovery from a journal undoes nothing else."""

    files: frozenset[str]
    irq_root: str
    cgroup_parents: frozenset[str]

    @classmethod
    def of(cls, host: LeverHost) -> LeverFiles:
        return cls(
            frozenset(str(host.path(f)) for f in LEVER_FILES),
            str(host.path(IRQ_ROOT)),
            frozenset(str(host.path(d)) for d in CGROUP_PARENTS),
        )

    def to_json(self) -> str:
        return json.dumps(
            {"files": sorted(self.files), "irq_root": self.irq_root, "cgroup_parents": sorted(self.cgroup_parents)}
        )

    @classmethod
    def from_json(cls, text: str) -> LeverFiles:
        data = json.loads(text)
        return cls(frozenset(data["files"]), data["irq_root"], frozenset(data["cgroup_parents"]))

    def write_refusal(self, path: str) -> str | None:
        """Why a journal's write to PATH is not one a lever makes, or None."""
        if path in self.files:
            return None
        irq = re.fullmatch(re.escape(self.irq_root) + r"/[0-9]+/" + re.escape(IRQ_AFFINITY), path)
        return None if irq else "not a file a lever writes"

    def cgroup_refusal(self, path: str) -> str | None:
        """Why PATH is not a cgroup a lever makes, or None."""
        parent, _, name = path.rpartition("/")
        if parent not in self.cgroup_parents or not CGROUP_NAME.fullmatch(name):
            return "not a cgroup launchgap makes"
        return None

    @staticmethod
    def scratch_refusal(path: str) -> str | None:
        """Why PATH is not a load's scratch directory that this user made, or None (also when it is gone)."""
        if (
            not path.startswith("/")
            or os.path.normpath(path) != path
            or not SCRATCH_NAME.fullmatch(os.path.basename(path))
        ):
            return "not a scratch directory launchgap makes"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as err:
            return err.strerror or str(err)
        if not stat.S_ISDIR(st.st_mode):
            return "not a directory"
        if st.st_uid != os.geteuid():
            return f"belongs to uid {st.st_uid}, not to uid {os.geteuid()} (who makes launchgap's)"
        return None


def format_cpumask(cpus) -> str:
    """A CPU set as the kernel prints and parses a mask: hex, 32-bit groups separated by commas."""
    value = sum(1 << c for c in cpus)
    digits = f"{value:x}"
    groups = []
    while digits:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join(groups) or "0"


# ---- what the host allows: one line each, before anything runs --------------------------------------


def rt_refusal(policy: Policy, host: LeverHost, allow_unthrottled: bool) -> str | None:
    """Why an RT policy may not run here: RT throttling off (the doctor's check), unless allowed."""
    if not policy.is_rt or allow_unthrottled:
        return None
    finding = scheduler.rt_throttling(host.facts(), None)
    if finding.data.get("runtime_us") == scheduler.RT_UNTHROTTLED:
        return (
            f"{policy.describe()}: RT throttling is off here (sched_rt_runtime_us = -1), so a spinning RT "
            f"workload could hang its CPUs; turn it on (sysctl kernel.sched_rt_runtime_us=950000) or pass "
            f"--allow-rt-unthrottled"
        )
    return None


def preempt_state(host: LeverHost) -> tuple[str | None, list[str], str]:
    """(model in effect or None, models it can switch to, the doctor's summary)."""
    finding = scheduler.preemption(host.facts(), None)
    return finding.data.get("model"), list(finding.data.get("switchable") or []), finding.summary


def preempt_refusal(model: str, host: LeverHost) -> str | None:
    if model not in PREEMPT_MODELS:
        return f"preempt={model}: not a preemption model ({', '.join(PREEMPT_MODELS)})"
    active, choices, summary = preempt_state(host)
    if active is None:
        return f"preempt={model}: the preemption model cannot be switched here: {summary}"
    if model not in choices:
        return f"preempt={model}: this kernel switches only between {', '.join(choices)} ({PREEMPT})"
    lockdown = host.facts().read(LOCKDOWN)
    mode = parse_bracketed_choice(lockdown.value)[0] if lockdown.ok else None
    if mode and mode != "none":
        return f"preempt={model}: the kernel is locked down ({mode}): debugfs refuses writes to {PREEMPT}"
    if not host.writable(PREEMPT):
        return f"preempt={model}: {PREEMPT} is not writable here (run as root)"
    return None


def _sysctl_refusal(name: str, path: str, host: LeverHost, allowed: tuple[str, ...]) -> str | None:
    reading = host.facts().read(path)
    if not reading.ok:
        return f"{name}: {path} is not readable here ({reading.why})"
    if allowed and reading.value not in allowed:
        return f"{name}: {path} holds {reading.value!r}, not one of {', '.join(allowed)}"
    if not host.writable(path):
        return f"{name}: {path} is not writable here (run as root)"
    return None


def timer_migration_refusal(value: int, host: LeverHost) -> str | None:
    if value not in (0, 1):
        return f"timer-migration={value}: 0 (off) or 1 (on)"
    return _sysctl_refusal(f"timer-migration={value}", TIMER_MIGRATION, host, ("0", "1"))


def _housekeeping(cpus: list[int] | None, host: LeverHost, name: str) -> tuple[frozenset[int] | None, str | None]:
    if not cpus:
        return None, f"{name} needs the workload's CPUs (--cpus, or cpus in the scenario)"
    online = host.facts().online
    if online is None:
        return None, f"{name}: the online CPUs are not readable here"
    left = online - set(cpus)
    if not left:
        return (
            None,
            f"{name} needs a CPU left for the kernel's housekeeping: the workload has every online CPU "
            f"({format_cpus(online)})",
        )
    return left, None


def workqueue_refusal(cpus: list[int] | None, host: LeverHost) -> str | None:
    _, problem = _housekeeping(cpus, host, "workqueue-away")
    return problem or _sysctl_refusal("workqueue-away", WORKQUEUE_CPUMASK, host, ())


def cgroup_version(host: LeverHost) -> int | None:
    """2 where the unified hierarchy at /sys/fs/cgroup offers cpuset, 1 where the v1 cpuset hierarchy is mounted."""
    facts = host.facts()
    controllers = facts.read(CGROUP_V2_CONTROLLERS)
    if controllers.ok and "cpuset" in controllers.value.split():
        return 2
    if facts.read(f"{CPUSET_V1}/{V1_LOAD_BALANCE}").ok:
        return 1
    return None


def _kernel_at_least(host: LeverHost, version: tuple[int, int]) -> bool | None:
    release = host.facts().kernel_release
    found = re.match(r"(\d+)\.(\d+)", release or "")
    return None if not found else (int(found.group(1)), int(found.group(2))) >= version


def _v1_overlapping_siblings(cpus: set[int], host: LeverHost, ignore: tuple[str, ...] = ()) -> list[str]:
    """Top-level v1 cpusets sharing CPUs with CPUS: the kernel refuses cpu_exclusive beside them."""
    facts = host.facts()
    found = []
    for name in facts.listdir(CPUSET_V1).names or ():
        if name in ignore:
            continue
        reading = facts.read(f"{CPUSET_V1}/{name}/cpuset.cpus")
        if not reading.ok:
            continue
        try:
            theirs = parse_cpulist(reading.value)
        except ParseError:
            continue
        if theirs & cpus:
            found.append(f"{name} (CPUs {format_cpus(theirs)})")
    return found


def isolation_refusal(mode: str, cpus: list[int] | None, host: LeverHost) -> str | None:
    name = "isolate" if mode == "isolated" else f"isolate={mode}"
    if mode not in ISOLATION_MODES:
        return f"isolate={mode}: isolated (no load balancing) or root (a scheduling domain of its own)"
    _, problem = _housekeeping(cpus, host, name)
    if problem:
        return problem
    version = cgroup_version(host)
    if version is None:
        return (
            f"{name}: no cpuset controller here: neither cgroup v2 with cpuset at {CGROUP} nor the v1 "
            f"cpuset hierarchy at {CPUSET_V1}"
        )
    if version == 2:
        if _kernel_at_least(host, V2_PARTITION_SINCE[mode]) is False:
            since = ".".join(map(str, V2_PARTITION_SINCE[mode]))
            return f"{name}: the cpuset partition type {mode!r} needs Linux {since} or later"
        if not host.writable(CGROUP_V2_SUBTREE):
            return f"{name}: {CGROUP_V2_SUBTREE} is not writable here (run as root)"
        return None
    if not host.writable(f"{CPUSET_V1}/{V1_LOAD_BALANCE}"):
        return f"{name}: {CPUSET_V1}/{V1_LOAD_BALANCE} is not writable here (run as root)"
    overlapping = _v1_overlapping_siblings(set(cpus or ()), host)
    if overlapping:
        return (
            f"{name}: cgroup v1 gives CPUs {format_cpus(cpus or ())} cpu_exclusive only if no other top-level "
            f"cpuset shares them, and {', '.join(overlapping)} does"
        )
    return None


# ---- applying, each read back through a fresh view ---------------------------------------------------


def apply_preempt(model: str, host: LeverHost, changes) -> str:
    """Switches the preemption model; returns what the read-back shows."""
    active, _, summary = preempt_state(host)
    if active is None:
        raise MitigationError(f"preempt={model}: {summary}")
    path = host.path(PREEMPT)
    if active != model:
        # the file reads "none voluntary (full) lazy"; what it takes back is the model's name alone
        changes.write(path, model, old=active)
    now, _, _ = preempt_state(host)
    if now != model:
        raise MitigationError(f"preempt={model}: wrote {model} to {PREEMPT}, but the model in effect reads {now!r}")
    return f"{PREEMPT}: {model}"


def apply_timer_migration(value: int, host: LeverHost, changes) -> str:
    changes.write(host.path(TIMER_MIGRATION), str(value))
    finding = scheduler.timer_migration(host.facts(), None)
    if finding.data.get("enabled") is not bool(value):
        raise MitigationError(
            f"timer-migration={value}: {TIMER_MIGRATION} reads {host.facts().read(TIMER_MIGRATION).value!r}"
            f" after the write"
        )
    return f"{TIMER_MIGRATION}: {value}"


def apply_workqueue_away(cpus: list[int], host: LeverHost, changes) -> str:
    left, problem = _housekeeping(cpus, host, "workqueue-away")
    if problem:
        raise MitigationError(problem)
    changes.write(host.path(WORKQUEUE_CPUMASK), format_cpumask(left))
    finding = scheduler.workqueue(host.facts(), None)
    if set(finding.data.get("cpus") or ()) != set(left):
        raise MitigationError(
            f"workqueue-away: {WORKQUEUE_CPUMASK} reads {finding.data.get('cpus')} after writing "
            f"CPUs {format_cpus(left)}"
        )
    return f"{WORKQUEUE_CPUMASK}: {format_cpumask(left)} (CPUs {format_cpus(left)})"


@dataclass
class Isolation:
    group: Path  # the cgroup the workload joins
    evidence: str


def _read_cpus(host: LeverHost, path: str) -> frozenset[int] | None:
    reading = host.facts().read(path)
    try:
        return parse_cpulist(reading.value) if reading.ok else None
    except ParseError:
        return None


def isolate_cpus(mode: str, cpus: list[int], host: LeverHost, changes) -> Isolation:
    """Takes CPUS away from the scheduler's load balancing at run time; the workload joins the group made."""
    problem = isolation_refusal(mode, cpus, host)
    if problem:
        raise MitigationError(problem)
    wanted = frozenset(cpus)
    tag = uuid.uuid4().hex[:8]
    if cgroup_version(host) == 2:
        return _isolate_v2(mode, wanted, tag, host, changes)
    return _isolate_v1(mode, wanted, tag, host, changes)


def _isolate_v2(mode: str, wanted: frozenset[int], tag: str, host: LeverHost, changes) -> Isolation:
    control = host.path(CGROUP_V2_SUBTREE)
    if "cpuset" not in control.read_text().split():
        changes.record_write(control, "-cpuset")  # turning it off again leaves the others as they were
        control.write_text("+cpuset")
    kernel_group = f"{CGROUP}/launchgap-iso-{tag}"  # CGROUP_NAME
    group = host.path(kernel_group)
    changes.make_dir(group)
    (group / "cpuset.cpus").write_text(format_cpus(wanted))
    try:
        (group / "cpuset.cpus.partition").write_text(mode)
    except OSError as err:
        raise MitigationError(
            f"isolate: writing {mode!r} to {kernel_group}/cpuset.cpus.partition failed ({err.strerror or err})"
        ) from None
    shown = host.facts().read(f"{kernel_group}/cpuset.cpus.partition").value
    if shown != mode:
        # the kernel says "isolated invalid (reason)" when it cannot make the partition
        raise MitigationError(f"isolate: {kernel_group}/cpuset.cpus.partition reads {shown!r}, not {mode!r}")
    effective = _read_cpus(host, f"{kernel_group}/cpuset.cpus.effective")
    if effective is not None and effective != wanted:
        raise MitigationError(f"isolate: the partition holds CPUs {format_cpus(effective)}, not {format_cpus(wanted)}")
    if mode == "isolated" and host.facts().read(CGROUP_V2_ISOLATED).ok:
        isolated = _read_cpus(host, CGROUP_V2_ISOLATED) or frozenset()
        if not wanted <= isolated:
            raise MitigationError(
                f"isolate: {CGROUP_V2_ISOLATED} shows {format_cpus(isolated)}, without {format_cpus(wanted - isolated)}"
            )
    return Isolation(group, f"{kernel_group}/cpuset.cpus.partition: {mode} (CPUs {format_cpus(wanted)})")


def _isolate_v1(mode: str, wanted: frozenset[int], tag: str, host: LeverHost, changes) -> Isolation:
    """cgroup v1 (cpusets.rst, "sched_load_balance"): the workload's CPUs in an exclusive cpuset without
    load balancing, the others in one with it, and the top cpuset's balancing off (while it is on, it
    spans every CPU and the children's flags do not count)."""
    online = host.facts().online or frozenset()
    house = online - wanted
    mems = host.facts().read(f"{CPUSET_V1}/cpuset.mems").value or "0"
    balance = "0" if mode == "isolated" else "1"
    iso_name, house_name = f"launchgap-iso-{tag}", f"launchgap-house-{tag}"  # CGROUP_NAME
    iso, housekeeping = host.path(f"{CPUSET_V1}/{iso_name}"), host.path(f"{CPUSET_V1}/{house_name}")
    try:
        changes.make_dir(iso)
        (iso / "cpuset.cpus").write_text(format_cpus(wanted))
        (iso / "cpuset.mems").write_text(mems)
        (iso / V1_EXCLUSIVE).write_text("1")
        (iso / V1_LOAD_BALANCE).write_text(balance)
        changes.make_dir(housekeeping)
        (housekeeping / "cpuset.cpus").write_text(format_cpus(house))
        (housekeeping / "cpuset.mems").write_text(mems)
        (housekeeping / V1_LOAD_BALANCE).write_text("1")
        changes.write(host.path(f"{CPUSET_V1}/{V1_LOAD_BALANCE}"), "0")
    except OSError as err:
        raise MitigationError(
            f"isolate: cgroup v1 refused a write ({err.strerror or err}): {getattr(err, 'filename', '') or ''}"
        ) from None
    facts = host.facts()

    def shown(path: str) -> str | None:
        return facts.read(path).value

    problems = []
    if _read_cpus(host, f"{CPUSET_V1}/{iso_name}/cpuset.cpus") != wanted:
        problems.append(f"{iso_name}/cpuset.cpus reads {shown(f'{CPUSET_V1}/{iso_name}/cpuset.cpus')!r}")
    for path, value in (
        (f"{CPUSET_V1}/{iso_name}/{V1_EXCLUSIVE}", "1"),
        (f"{CPUSET_V1}/{iso_name}/{V1_LOAD_BALANCE}", balance),
        (f"{CPUSET_V1}/{house_name}/{V1_LOAD_BALANCE}", "1"),
        (f"{CPUSET_V1}/{V1_LOAD_BALANCE}", "0"),
    ):
        if shown(path) != value:
            problems.append(f"{path} reads {shown(path)!r}, not {value}")
    # another load-balanced cpuset over these CPUs would put them back in a scheduling domain
    for name in facts.listdir(CPUSET_V1).names or ():
        if name in (iso_name, house_name) or shown(f"{CPUSET_V1}/{name}/{V1_LOAD_BALANCE}") != "1":
            continue
        theirs = _read_cpus(host, f"{CPUSET_V1}/{name}/cpuset.cpus") or frozenset()
        if theirs & wanted:
            problems.append(f"the load-balanced cpuset {name} also holds CPUs {format_cpus(theirs & wanted)}")
    if problems:
        raise MitigationError("isolate: not in effect: " + "; ".join(problems))
    what = "no load balancing" if mode == "isolated" else "a scheduling domain of their own"
    return Isolation(
        iso,
        f"{CPUSET_V1}/{iso_name}: CPUs {format_cpus(wanted)}, cpu_exclusive 1, "
        f"sched_load_balance {balance} ({what}); top cpuset sched_load_balance 0",
    )


def cpuset_of_process(pid: int | str = "self") -> str | None:
    """The process's cpuset (v1) or cgroup (v2) path, as the kernel shows it."""
    try:
        return procfs.read_text(f"/proc/{pid}/cpuset").strip()
    except OSError:
        return None


def read_thread_policies(pid: int) -> dict[int, dict]:
    """Every thread of PID: name, policy, RT priority, nice, last CPU (from /proc/PID/task/TID/stat)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            comm, fields = procfs.read_stat(f"/proc/{pid}/task/{tid}/stat")
        except (OSError, ValueError):
            continue
        # after the name: state(0) ... nice(16) ... processor(36) rt_priority(37) policy(38)
        try:
            out[int(tid)] = {
                "comm": comm,
                "nice": int(fields[16]),
                "cpu": int(fields[36]),
                "rt_priority": int(fields[37]),
                "policy": POLICY_BY_NUMBER.get(int(fields[38]), fields[38]),
            }
        except (IndexError, ValueError):
            continue
    return out


def parse_mask_or_list(text: str) -> frozenset[int]:
    """A CPU set as a list ("0-2") or, failing that, a hex mask."""
    try:
        return parse_cpulist(text)
    except ParseError:
        return parse_cpumask(text)
