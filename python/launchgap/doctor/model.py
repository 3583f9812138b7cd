"""The doctor's typed results; serialised to JSON only at the edge (to_dict)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

DOCTOR_SCHEMA = "launchgap-doctor/1"

# evidence values longer than this are cut (a /proc/cmdline can be long)
EVIDENCE_CHARS = 240


class Status(str, Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Evidence:
    """What a verdict rests on: a file and the value read there (or why not)."""

    path: str
    value: str

    def to_dict(self) -> dict:
        return {"path": self.path, "value": self.value}


@dataclass(frozen=True)
class Check:
    id: str  # "irq.devices_on_target"
    area: str  # "boot isolation", "interrupts", "scheduler", "cpu"
    title: str
    status: Status
    summary: str  # one sentence: what was found
    evidence: tuple[Evidence, ...] = ()
    fix: str | None = None  # one line, None when there is nothing to do
    about_target: bool = False  # the verdict depends on the target's CPUs
    data: dict = field(default_factory=dict)  # numbers a program may want (counts, CPU lists)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "area": self.area,
            "title": self.title,
            "status": self.status.value,
            "summary": self.summary,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": self.fix,
            "about_target": self.about_target,
            "data": self.data,
        }


@dataclass(frozen=True)
class Target:
    """The CPUs whose interference matters: --cpus, a process's threads, or
    the CPUs a trace's launching threads ran on."""

    cpus: frozenset[int]
    description: str

    def to_dict(self) -> dict:
        return {"cpus": sorted(self.cpus), "description": self.description}


@dataclass(frozen=True)
class DoctorResult:
    host: str
    kernel: str | None
    online_cpus: str | None
    target: Target | None
    checks: tuple[Check, ...]

    def counts(self) -> dict[str, int]:
        return {s.value: sum(1 for c in self.checks if c.status is s) for s in Status}

    @property
    def failed(self) -> bool:
        return any(c.status is Status.FAIL for c in self.checks)

    @property
    def nothing_checked(self) -> bool:
        """Every check unknown: the host's files could not be read or parsed at all."""
        return all(c.status is Status.UNKNOWN for c in self.checks)

    def to_dict(self) -> dict:
        return {
            "schema": DOCTOR_SCHEMA,
            "host": self.host,
            "kernel": self.kernel,
            "online_cpus": self.online_cpus,
            "target": self.target.to_dict() if self.target else None,
            "counts": self.counts(),
            "checks": [c.to_dict() for c in self.checks],
        }
