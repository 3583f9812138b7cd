"""Mitigations a scenario applies to the workload, and the host changes some
of them need, each recorded with how to undo it and undone on every path.

Per-process levers (CPU pinning, nice, the scheduler policy) are applied to
the workload alone, in the child before exec: nothing on the host changes.
A cgroup cpuset, IRQ affinity and the host-wide levers of levers.py
(preemption model, CPU isolation, timer migration, workqueue cpumask) do
change the host: HostChanges logs every write with the value it replaced
and restores them in reverse order.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from launchgap.experiments import levers
from launchgap.experiments.levers import (
    IRQ_AFFINITY,
    IRQ_ROOT,
    RT_PRIORITY_MAX,
    LeverFiles,
    LeverHost,
    MitigationError,
    Policy,
)

if TYPE_CHECKING:
    from launchgap.experiments.journal import Journal

__all__ = [
    "RT_PRIORITY_MAX",
    "HostChanges",
    "MitigationError",
    "Mitigations",
    "child_setup",
    "cpuset_available",
    "make_cpuset",
    "steer_irqs_away",
]

CGROUP_ROOT = Path("/sys/fs/cgroup")
DEFAULT_RT_PRIORITY = 10


@dataclass
class Mitigations:
    cpus: list[int] | None = None  # pin the workload (taskset)
    nice: int | None = None  # its nice value
    rt_policy: str | None = None  # "fifo" or "rr" (chrt); or give `policy`
    rt_priority: int | None = None  # with rt_policy (default DEFAULT_RT_PRIORITY); alone it is refused
    cpuset: bool = False  # a cgroup cpuset holding only the workload's CPUs
    irq_away: bool = False  # steer IRQ affinity away from the workload's CPUs
    policy: str | None = None  # other | batch | idle | fifo:P | rr:P (levers.Policy)
    preempt: str | None = None  # host-wide: none | voluntary | full | lazy
    isolate: str | None = None  # host-wide: the workload's CPUs as an "isolated" or "root" partition
    timer_migration: int | None = None  # host-wide: kernel.timer_migration 0 or 1
    workqueue_away: bool = False  # host-wide: unbound workqueues off the workload's CPUs

    @property
    def sched_policy(self) -> Policy | None:
        if self.policy is not None:
            return Policy.parse(self.policy)
        if self.rt_policy:
            return Policy(self.rt_policy, DEFAULT_RT_PRIORITY if self.rt_priority is None else self.rt_priority)
        return None

    def validate(self, online: set[int]) -> None:
        if self.cpus is not None and (not self.cpus or not set(self.cpus) <= online):
            raise MitigationError(f"cpus {self.cpus} are not all online ({sorted(online)})")
        if self.nice is not None and not -20 <= self.nice <= 19:
            raise MitigationError(f"nice {self.nice} is outside -20..19")
        if self.rt_policy not in (None, "fifo", "rr"):
            raise MitigationError(f"rt_policy must be fifo or rr, not {self.rt_policy!r}")
        if self.rt_priority is not None and not self.rt_policy:
            # it would be silently ignored: the workload would run as SCHED_OTHER
            raise MitigationError('rt_priority needs rt_policy (fifo or rr), or give policy = "fifo:P"')
        if self.rt_policy and self.rt_priority is not None and not 1 <= self.rt_priority <= RT_PRIORITY_MAX:
            raise MitigationError(f"rt_priority must be 1..{RT_PRIORITY_MAX}")
        if self.rt_policy and self.policy is not None:
            raise MitigationError("give policy or rt_policy, not both")
        _ = self.sched_policy  # parses and bounds it
        if (self.cpuset or self.irq_away) and not self.cpus:
            raise MitigationError("cpuset and irq_away need the workload's cpus")
        if self.irq_away and set(self.cpus or []) >= online:
            raise MitigationError("irq_away needs at least one CPU left for interrupts")
        if self.preempt is not None and self.preempt not in levers.PREEMPT_MODELS:
            raise MitigationError(f"preempt must be one of {', '.join(levers.PREEMPT_MODELS)}, not {self.preempt!r}")
        if self.isolate is not None:
            if self.isolate not in levers.ISOLATION_MODES:
                raise MitigationError(f"isolate must be isolated or root, not {self.isolate!r}")
            if not self.cpus:
                raise MitigationError("isolate needs the workload's cpus")
            if set(self.cpus) >= online:
                raise MitigationError("isolate needs at least one CPU left for housekeeping")
        if self.timer_migration not in (None, 0, 1):
            raise MitigationError(f"timer_migration must be 0 or 1, not {self.timer_migration!r}")
        if self.workqueue_away:
            if not self.cpus:
                raise MitigationError("workqueue_away needs the workload's cpus")
            if set(self.cpus) >= online:
                raise MitigationError("workqueue_away needs at least one CPU left for unbound work")

    @property
    def changes_host(self) -> bool:
        """Whether applying these writes host-wide settings (not the workload's own pinning, nice, policy)."""
        return bool(
            self.cpuset
            or self.irq_away
            or self.isolate
            or self.workqueue_away
            or self.preempt
            or self.timer_migration is not None
        )

    def host_refusal(self, host: LeverHost, allow_rt_unthrottled: bool = False) -> str | None:
        """Why this host cannot apply these (one line), from the doctor's view of it; None if it can."""
        policy = self.sched_policy
        checks = [lambda: levers.rt_refusal(policy, host, allow_rt_unthrottled) if policy else None]
        if self.cpuset and not self.isolate:
            checks.append(lambda: _cpuset_refusal(host))
        if self.preempt is not None:
            checks.append(lambda: levers.preempt_refusal(self.preempt, host))
        if self.isolate is not None:
            checks.append(lambda: levers.isolation_refusal(self.isolate, self.cpus, host))
        if self.timer_migration is not None:
            checks.append(lambda: levers.timer_migration_refusal(self.timer_migration, host))
        if self.workqueue_away:
            checks.append(lambda: levers.workqueue_refusal(self.cpus, host))
        for check in checks:
            problem = check()
            if problem:
                return problem
        return None

    def describe(self) -> str:
        parts = []
        if self.cpus:
            parts.append(f"pinned to CPUs {','.join(map(str, self.cpus))}")
        if self.nice is not None:
            parts.append(f"nice {self.nice}")
        policy = self.sched_policy
        if policy is not None:
            parts.append(policy.describe())
        if self.cpuset and not self.isolate:
            parts.append("own cpuset")
        if self.isolate:
            parts.append("CPUs isolated" + (" (a root partition)" if self.isolate == "root" else ""))
        if self.irq_away:
            parts.append("IRQs steered away")
        if self.workqueue_away:
            parts.append("unbound workqueues steered away")
        if self.timer_migration is not None:
            parts.append(f"timer migration {'on' if self.timer_migration else 'off'}")
        if self.preempt:
            parts.append(f"preemption {self.preempt}")
        return ", ".join(parts) or "none"


@dataclass
class HostChanges:
    """Every host setting changed, with the value to put back.

    With a journal (journal.py: a file only root can write, registered by the
    experiment), each change is written there *before* it is made, so that if
    the experiment dies where no handler runs (SIGKILL), its custodian
    (custodian.py) or the next experiment can still put everything back."""

    writes: list[tuple[Path, str]] = field(default_factory=list)
    made_dirs: list[Path] = field(default_factory=list)
    # files a load generator writes (fio's directory): not a setting, but not to be left behind either
    scratch: list[Path] = field(default_factory=list)
    journal: Journal | None = None

    def entries(self) -> list[dict]:
        """The journal's list: what to undo, each with what it needs."""
        entries = [{"kind": "scratch", "path": str(d)} for d in self.scratch]
        entries += [{"kind": "dir", "path": str(d)} for d in self.made_dirs]
        return entries + [{"kind": "write", "path": str(p), "old": old} for p, old in self.writes]

    def _save(self) -> None:
        if self.journal is not None:
            self.journal.save_changes(self.entries())

    def record_write(self, path: Path, old: str) -> None:
        """A write about to be made (or just made by the caller), to undo with OLD."""
        self.writes.append((path, old))
        self._save()

    def write(self, path: Path, value: str, old: str | None = None) -> None:
        """Writes VALUE to PATH, journalled first with what to put back: OLD, or what PATH holds now."""
        old = path.read_text().strip() if old is None else old
        self.record_write(path, old)  # in the journal before it is made
        try:
            path.write_text(value)
        except OSError:
            self.writes.pop()  # refused (a managed IRQ): nothing to undo
            self._save()
            raise

    def record_scratch(self, path: Path) -> None:
        self.scratch.append(path)
        self._save()

    def make_dir(self, path: Path) -> None:
        self.made_dirs.append(path)
        self._save()
        try:
            path.mkdir()
        except OSError:
            self.made_dirs.pop()
            self._save()
            raise

    @classmethod
    def recovered(
        cls, entries: object, allowed: LeverFiles, journal: Journal | None = None
    ) -> tuple[HostChanges, list[str]]:
        """The changes a dead experiment's journal lists that are changes launchgap makes (ALLOWED's files, its
        cgroups, its loads' scratch directories), and one line for each entry refused: those are never acted
        on, whoever wrote them."""
        changes, refused = cls(journal=journal), []
        for entry in entries if isinstance(entries, list) else [entries]:
            kind = entry.get("kind") if isinstance(entry, dict) else None
            path = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(path, str) or "\0" in path or kind not in ("scratch", "dir", "write"):
                refused.append(f"{_shown(entry)} (not a change launchgap makes)")
                continue
            old = entry.get("old")
            if kind == "scratch":
                why = allowed.scratch_refusal(path)
            elif kind == "dir":
                why = allowed.cgroup_refusal(path)
            else:
                why = allowed.write_refusal(path) or (
                    None if isinstance(old, str) and "\0" not in old else "no value to put back"
                )
            if why:
                refused.append(f"{kind} {_shown(path)} ({why})")
            elif kind == "scratch":
                changes.scratch.append(Path(path))
            elif kind == "dir":
                changes.made_dirs.append(Path(path))
            else:
                changes.writes.append((Path(path), old))
        return changes, refused

    def describe(self) -> list[str]:
        return (
            [f"scratch files {d}" for d in self.scratch]
            + [f"cgroup {d} (made by launchgap)" for d in self.made_dirs]
            + [f"{p} (was {old!r})" for p, old in self.writes]
        )

    def restore(self, retry_s: float = 0.0) -> list[str]:
        """Undo everything, newest first; returns what could not be undone. A cgroup
        still busy (its last task exiting) is retried for up to RETRY_S seconds."""
        problems = []
        left_dirs: list[Path] = []
        left_writes: list[tuple[Path, str]] = []
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)
        for directory in reversed(self.made_dirs):
            deadline = time.monotonic() + retry_s
            while True:
                try:
                    # processes still inside go back to the parent group first
                    for pid in (directory / "cgroup.procs").read_text().split():
                        try:
                            (directory.parent / "cgroup.procs").write_text(pid)
                        except OSError:
                            pass
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break  # already gone
                except OSError as err:
                    if time.monotonic() < deadline:
                        time.sleep(0.1)
                        continue
                    problems.append(f"{directory}: {err.strerror or err}")
                    left_dirs.insert(0, directory)
                    break
        for path, old in reversed(self.writes):
            try:
                path.write_text(old)
            except OSError as err:
                problems.append(f"{path}: {err.strerror or err} (was {old!r})")
                left_writes.insert(0, (path, old))
        # what is left is what the journal keeps, for whoever comes next
        self.made_dirs, self.writes = left_dirs, left_writes
        self.scratch = [p for p in self.scratch if p.exists() or p.is_symlink()]
        problems += [f"{p}: could not be removed" for p in self.scratch]
        self._save()
        return problems


def _shown(value: object, limit: int = 120) -> str:
    """A journal's value, short and printable, for a one-line refusal."""
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


def _cpuset_refusal(host: LeverHost) -> str | None:
    try:
        cpuset_available(host)
    except MitigationError as err:
        return str(err)
    return None


def cpuset_available(host: LeverHost | None = None) -> None:
    """Raises MitigationError if no cpuset controller can be used here (changes nothing)."""
    version = levers.cgroup_version(host or LeverHost())
    if version is None:
        facts = (host or LeverHost()).facts()
        if facts.read(levers.CGROUP_V2_CONTROLLERS).ok:
            raise MitigationError("the cpuset controller is not available in cgroup v2 here")
        raise MitigationError("no cpuset controller: neither cgroup v2 nor the v1 cpuset hierarchy is mounted")


def make_cpuset(cpus: list[int], changes: HostChanges, host: LeverHost | None = None) -> Path:
    """A cgroup whose cpuset holds only `cpus` (v2, or the v1 cpuset hierarchy);
    the workload joins it before exec."""
    host = host or LeverHost()
    cpuset_available(host)
    tag = f"launchgap-{uuid.uuid4().hex[:8]}"
    if levers.cgroup_version(host) == 1:
        v1 = host.path(levers.CPUSET_V1)
        group = v1 / tag
        changes.make_dir(group)
        (group / "cpuset.cpus").write_text(",".join(map(str, cpus)))
        (group / "cpuset.mems").write_text((v1 / "cpuset.mems").read_text().strip())
        return group
    control = host.path(levers.CGROUP_V2_SUBTREE)
    if "cpuset" not in control.read_text().split():
        changes.record_write(control, "-cpuset")  # turning it off again leaves the others as they were
        control.write_text("+cpuset")
    group = host.path(levers.CGROUP) / tag
    changes.make_dir(group)
    (group / "cpuset.cpus").write_text(",".join(map(str, cpus)))
    return group


def steer_irqs_away(cpus: list[int], online: set[int], changes: HostChanges, host: LeverHost | None = None) -> int:
    """Moves every IRQ that allows it onto the CPUs the workload does not use."""
    others = sorted(online - set(cpus))
    moved = 0
    for irq in sorted((host or LeverHost()).path(IRQ_ROOT).glob("[0-9]*")):
        path = irq / IRQ_AFFINITY
        try:
            current = path.read_text().strip()
            if current == ",".join(map(str, others)):
                continue
            changes.write(path, ",".join(map(str, others)))
            moved += 1
        except OSError:
            continue  # per-CPU and managed IRQs refuse affinity changes
    return moved


def child_setup(m: Mitigations, cgroup: Path | None):
    """What the workload's process does before exec: join its cgroup, pin, nice, scheduler policy."""
    policy = m.sched_policy

    def apply() -> None:
        if cgroup is not None:
            joins = cgroup / "cgroup.procs" if (cgroup / "cgroup.procs").exists() else cgroup / "tasks"
            joins.write_text(str(os.getpid()))
        if m.cpus:
            os.sched_setaffinity(0, set(m.cpus))
        if m.nice is not None:
            os.setpriority(os.PRIO_PROCESS, 0, m.nice)
        if policy is not None:
            os.sched_setscheduler(0, policy.number, os.sched_param(policy.priority))

    return apply
