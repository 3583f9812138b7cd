"""Every check: a plain function over a host's facts and the target, returning a Finding (registry.py),
one module per area."""

from __future__ import annotations

from launchgap.doctor.checks.registry import AREA_ORDER, REGISTRY, Registered


def all_checks() -> list[Registered]:
    # importing the modules fills the registry, in the order the report shows them
    from launchgap.doctor.checks import (
        boot,  # noqa: F401
        cpu,  # noqa: F401
        interrupts,  # noqa: F401
        scheduler,  # noqa: F401
    )

    return sorted(REGISTRY, key=lambda r: AREA_ORDER.index(r.area))  # stable: each area in definition order
