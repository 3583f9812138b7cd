"""Scenarios: load generators plus mitigations. Built in, as in the study
(RQ3/RQ4), or defined in a TOML file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from launchgap.experiments.loadgen import CpuLoad, DiskLoad, LoadGenerator, NetworkLoad
from launchgap.experiments.mitigations import MitigationError, Mitigations

LOAD_KINDS = ("cpu", "network", "disk")


@dataclass
class Scenario:
    name: str
    loads: list[dict] = field(default_factory=list)   # {"type": "cpu"|"network"|"disk", options...}
    mitigations: Mitigations = field(default_factory=Mitigations)
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        loads = ", ".join(load["type"] for load in self.loads) or "no load"
        return f"{loads}; mitigations: {self.mitigations.describe()}"


def make_load(spec: dict, disk_dir: Path | None) -> LoadGenerator:
    kind = spec.get("type")
    options = {k: v for k, v in spec.items() if k != "type"}
    if kind == "cpu":
        return CpuLoad(**options)
    if kind == "network":
        return NetworkLoad(**options)
    if kind == "disk":
        options.setdefault("directory", disk_dir)
        return DiskLoad(**options)
    raise MitigationError(f"unknown load type {kind!r} (known: {', '.join(LOAD_KINDS)})")


def builtin(names: list[str]) -> list[Scenario]:
    online = sorted(os.sched_getaffinity(0))
    # RQ4's "optimized": the CPU neighbour stays, the workload is pinned and favoured
    pinned_cpus = online[len(online) // 2:] if len(online) > 1 else online
    table = {
        "baseline": Scenario("baseline"),
        "cpu": Scenario("cpu", [{"type": "cpu"}]),
        "network": Scenario("network", [{"type": "network", "streams": 10}]),
        "disk": Scenario("disk", [{"type": "disk"}]),
        "heavy": Scenario("heavy", [{"type": "cpu"}, {"type": "network", "streams": 10}, {"type": "disk"}]),
        "pinned": Scenario("pinned", [{"type": "cpu"}], Mitigations(cpus=pinned_cpus, nice=-10)),
    }
    unknown = [n for n in names if n not in table]
    if unknown:
        raise MitigationError(f"unknown scenario {', '.join(unknown)} (built in: {', '.join(table)})")
    return [table[n] for n in names]


def from_toml(path: str | Path) -> list[Scenario]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise MitigationError(f"{path}: {err}") from err
    out = []
    for name, body in (data.get("scenarios") or {}).items():
        loads = [{"type": load} if isinstance(load, str) else dict(load) for load in body.get("loads", [])]
        for load in loads:
            if load.get("type") not in LOAD_KINDS:
                raise MitigationError(f"{path}: scenario {name}: unknown load {load.get('type')!r}")
        try:
            mitigations = Mitigations(**(body.get("mitigations") or {}))
        except TypeError as err:
            raise MitigationError(f"{path}: scenario {name}: {err}") from err
        out.append(Scenario(name, loads, mitigations, {k: str(v) for k, v in (body.get("env") or {}).items()}))
    if not out:
        raise MitigationError(f"{path}: no [scenarios.NAME] tables")
    if "baseline" not in [s.name for s in out]:
        out.insert(0, Scenario("baseline"))
    return out
