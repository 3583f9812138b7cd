"""The registry of checks: each check module registers its functions with `@check`, and the registry
turns what one returns (a Finding) into a Check with its id, area and title. The check modules import
this module, never the package: the package's __init__ imports them (all_checks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from launchgap.doctor.facts import HostFacts
from launchgap.doctor.model import Check, Evidence, Status, Target
from launchgap.doctor.parse import ParseError, UnparsableFile, excerpt


@dataclass
class Finding:
    status: Status
    summary: str
    evidence: list[Evidence] = field(default_factory=list)
    fix: str | None = None
    data: dict = field(default_factory=dict)


CheckFunction = Callable[[HostFacts, "Target | None"], Finding]


@dataclass(frozen=True)
class Registered:
    id: str
    area: str
    title: str
    about_target: bool
    function: CheckFunction

    def run(self, facts: HostFacts, target: Target | None) -> Check:
        try:
            found = self.function(facts, target)
        except UnparsableFile as err:
            # one file not in the kernel's format: this check cannot say, the others still can
            found = Finding(Status.UNKNOWN, str(err), [Evidence(err.path, err.shown)])
        except (ParseError, ValueError, TypeError) as err:
            found = Finding(Status.UNKNOWN, f"cannot parse the host's files ({excerpt(str(err), 200)})")
        return Check(
            self.id,
            self.area,
            self.title,
            found.status,
            found.summary,
            tuple(found.evidence),
            found.fix,
            self.about_target,
            found.data,
        )


REGISTRY: list[Registered] = []
# the order the report shows the areas in, whichever module was imported first (the experiments'
# levers import the scheduler checks on their own)
AREA_ORDER = ("boot isolation", "interrupts", "scheduler", "cpu")


def check(check_id: str, area: str, title: str, about_target: bool = False):
    def register(function: CheckFunction) -> CheckFunction:
        REGISTRY.append(Registered(check_id, area, title, about_target, function))
        return function

    return register
