"""Mitigations a scenario applies to the workload, and the host changes some
of them need, each recorded with how to undo it and undone on every path.

Per-process levers (CPU pinning, nice, RT policy) are applied to the
workload alone, in the child before exec: nothing on the host changes.
A cgroup v2 cpuset and IRQ affinity do change the host: HostChanges logs
every write with the value it replaced and restores them in reverse order.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
IRQ_ROOT = Path("/proc/irq")
# SCHED_FIFO/SCHED_RR priorities a scenario may ask for: high enough to win
# against normal tasks, low enough to leave kernel threads (at 50 and up) alone.
RT_PRIORITY_MAX = 49


class MitigationError(RuntimeError):
    """A mitigation cannot be applied here."""


@dataclass
class Mitigations:
    cpus: list[int] | None = None       # pin the workload (taskset)
    nice: int | None = None             # its nice value
    rt_policy: str | None = None        # "fifo" or "rr" (chrt)
    rt_priority: int = 10
    cpuset: bool = False                # a cgroup v2 cpuset holding only the workload's CPUs
    irq_away: bool = False              # steer IRQ affinity away from the workload's CPUs

    def validate(self, online: set[int]) -> None:
        if self.cpus is not None and (not self.cpus or not set(self.cpus) <= online):
            raise MitigationError(f"cpus {self.cpus} are not all online ({sorted(online)})")
        if self.nice is not None and not -20 <= self.nice <= 19:
            raise MitigationError(f"nice {self.nice} is outside -20..19")
        if self.rt_policy not in (None, "fifo", "rr"):
            raise MitigationError(f"rt_policy must be fifo or rr, not {self.rt_policy!r}")
        if self.rt_policy and not 1 <= self.rt_priority <= RT_PRIORITY_MAX:
            raise MitigationError(f"rt_priority must be 1..{RT_PRIORITY_MAX}")
        if (self.cpuset or self.irq_away) and not self.cpus:
            raise MitigationError("cpuset and irq_away need the workload's cpus")
        if self.irq_away and set(self.cpus or []) >= online:
            raise MitigationError("irq_away needs at least one CPU left for interrupts")

    def describe(self) -> str:
        parts = []
        if self.cpus:
            parts.append(f"pinned to CPUs {','.join(map(str, self.cpus))}")
        if self.nice is not None:
            parts.append(f"nice {self.nice}")
        if self.rt_policy:
            parts.append(f"SCHED_{self.rt_policy.upper()} {self.rt_priority}")
        if self.cpuset:
            parts.append("own cpuset")
        if self.irq_away:
            parts.append("IRQs steered away")
        return ", ".join(parts) or "none"


@dataclass
class HostChanges:
    """Every host setting changed, with the value to put back.

    With a journal file, each change is written there *before* it is made, so
    that if the experiment dies where no handler runs (SIGKILL), its custodian
    (custodian.py) or the next experiment can still put everything back."""

    writes: list[tuple[Path, str]] = field(default_factory=list)
    made_dirs: list[Path] = field(default_factory=list)
    # files a load generator writes (fio's directory): not a setting, but not to be left behind either
    scratch: list[Path] = field(default_factory=list)
    journal: Path | None = None

    def _save(self) -> None:
        if self.journal is None:
            return
        entries = [{"kind": "scratch", "path": str(d)} for d in self.scratch]
        entries += [{"kind": "dir", "path": str(d)} for d in self.made_dirs]
        entries += [{"kind": "write", "path": str(p), "old": old} for p, old in self.writes]
        if not entries:
            self.journal.unlink(missing_ok=True)
            return
        partial = self.journal.with_name(f".{self.journal.name}.partial")
        partial.write_text(json.dumps(entries, indent=1))
        os.replace(partial, self.journal)

    def record_write(self, path: Path, old: str) -> None:
        """A write about to be made (or just made by the caller), to undo with OLD."""
        self.writes.append((path, old))
        self._save()

    def write(self, path: Path, value: str) -> None:
        old = path.read_text().strip()
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
    def from_journal(cls, journal: Path) -> "HostChanges":
        """The changes a journal lists (none if it is gone or unreadable)."""
        try:
            entries = json.loads(journal.read_text())
        except (OSError, ValueError):
            return cls(journal=journal)
        changes = cls(journal=journal)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("kind") == "scratch":
                changes.scratch.append(Path(entry["path"]))
            elif isinstance(entry, dict) and entry.get("kind") == "dir":
                changes.made_dirs.append(Path(entry["path"]))
            elif isinstance(entry, dict) and entry.get("kind") == "write":
                changes.writes.append((Path(entry["path"]), str(entry.get("old", ""))))
        return changes

    def describe(self) -> list[str]:
        return ([f"scratch files {d}" for d in self.scratch]
                + [f"cgroup {d} (made by launchgap)" for d in self.made_dirs]
                + [f"{p} (was {old!r})" for p, old in self.writes])

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
        self.made_dirs, self.writes, self.scratch = left_dirs, left_writes, [p for p in self.scratch if p.exists()]
        problems += [f"{p}: could not be removed" for p in self.scratch]
        self._save()
        return problems


CGROUP_V1_CPUSET = CGROUP_ROOT / "cpuset"


def cpuset_available() -> None:
    """Raises MitigationError if no cpuset controller can be used here (changes nothing)."""
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.exists():
        if "cpuset" not in controllers.read_text().split():
            raise MitigationError("the cpuset controller is not available in cgroup v2 here")
        return
    if not (CGROUP_V1_CPUSET / "cpuset.cpus").exists():
        raise MitigationError("no cpuset controller: neither cgroup v2 nor the v1 cpuset hierarchy is mounted")


def make_cpuset(cpus: list[int], changes: HostChanges) -> Path:
    """A cgroup whose cpuset holds only `cpus` (v2, or the v1 cpuset hierarchy);
    the workload joins it before exec."""
    if not (CGROUP_ROOT / "cgroup.controllers").exists():
        if (CGROUP_V1_CPUSET / "cpuset.cpus").exists():
            group = CGROUP_V1_CPUSET / f"launchgap-{uuid.uuid4().hex[:8]}"
            changes.make_dir(group)
            (group / "cpuset.cpus").write_text(",".join(map(str, cpus)))
            (group / "cpuset.mems").write_text((CGROUP_V1_CPUSET / "cpuset.mems").read_text().strip())
            return group
        raise MitigationError("no cpuset controller: neither cgroup v2 nor the v1 cpuset hierarchy is mounted")
    if "cpuset" not in (CGROUP_ROOT / "cgroup.controllers").read_text().split():
        raise MitigationError("the cpuset controller is not available in cgroup v2 here")
    control = CGROUP_ROOT / "cgroup.subtree_control"
    if "cpuset" not in control.read_text().split():
        changes.record_write(control, "-cpuset")  # turning it off again leaves the others as they were
        control.write_text("+cpuset")
    group = CGROUP_ROOT / f"launchgap-{uuid.uuid4().hex[:8]}"
    changes.make_dir(group)
    (group / "cpuset.cpus").write_text(",".join(map(str, cpus)))
    return group


def steer_irqs_away(cpus: list[int], online: set[int], changes: HostChanges) -> int:
    """Moves every IRQ that allows it onto the CPUs the workload does not use."""
    others = sorted(online - set(cpus))
    moved = 0
    for irq in sorted(IRQ_ROOT.glob("[0-9]*")):
        path = irq / "smp_affinity_list"
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
    """What the workload's process does before exec: join its cpuset, pin, nice, RT policy."""

    def apply() -> None:
        if cgroup is not None:
            joins = cgroup / "cgroup.procs" if (cgroup / "cgroup.procs").exists() else cgroup / "tasks"
            joins.write_text(str(os.getpid()))
        if m.cpus:
            os.sched_setaffinity(0, set(m.cpus))
        if m.nice is not None:
            os.setpriority(os.PRIO_PROCESS, 0, m.nice)
        if m.rt_policy:
            policy = os.SCHED_FIFO if m.rt_policy == "fifo" else os.SCHED_RR
            os.sched_setscheduler(0, policy, os.sched_param(m.rt_priority))

    return apply
