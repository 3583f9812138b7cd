"""Scenarios: load generators plus mitigations. Built in, as in the study
(RQ3/RQ4), or defined in a TOML file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from launchgap.experiments.loadgen import CpuLoad, DiskLoad, LoadGenerator, NetworkLoad
from launchgap.experiments.mitigations import MitigationError, Mitigations
from launchgap.inputs import InputError, read_regular_bytes

LOAD_KINDS = ("cpu", "network", "disk")


@dataclass
class Scenario:
    name: str
    loads: list[dict] = field(default_factory=list)  # {"type": "cpu"|"network"|"disk", options...}
    mitigations: Mitigations = field(default_factory=Mitigations)
    env: dict[str, str] = field(default_factory=dict)
    command: list[str] | None = None  # its own workload (a lever grid's class); None: the experiment's
    labels: dict = field(default_factory=dict)  # kept in results.json beside the name (a grid's class, variant)

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
    pinned_cpus = online[len(online) // 2 :] if len(online) > 1 else online
    table = {
        "baseline": Scenario("baseline"),
        "cpu": Scenario("cpu", [{"type": "cpu"}]),
        "network": Scenario("network", [{"type": "network", "streams": 10}]),
        "disk": Scenario("disk", [{"type": "disk"}]),
        "heavy": Scenario("heavy", [{"type": "cpu"}, {"type": "network", "streams": 10}, {"type": "disk"}]),
        "pinned": Scenario("pinned", [{"type": "cpu"}], Mitigations(cpus=pinned_cpus, nice=-10)),
    }
    if not names:
        raise MitigationError(f"no scenario named (built in: {', '.join(table)})")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise MitigationError(f"unknown scenario {', '.join(unknown)} (built in: {', '.join(table)})")
    return [table[n] for n in names]


LOAD_NAMES = {"enum": list(LOAD_KINDS)}
# the options each load type takes (its constructor's), and nothing else
LOAD_OPTIONS = {
    "cpu": {
        "workers": {"type": "integer", "minimum": 1},
        "cpus": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
    },
    "network": {"streams": {"type": "integer", "minimum": 1}},
    "disk": {"directory": {"type": "string", "minLength": 1}, "jobs": {"type": "integer", "minimum": 1}},
}
LOAD_TABLE = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": LOAD_NAMES},
    "allOf": [
        {
            "if": {"properties": {"type": {"const": kind}}},
            "then": {"properties": {"type": True, **options}, "additionalProperties": False},
        }
        for kind, options in LOAD_OPTIONS.items()
    ],
}
SCENARIO_FILE_SCHEMA = {
    "type": "object",
    "required": ["scenarios"],
    "additionalProperties": False,
    "properties": {
        "scenarios": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "loads": {"type": "array", "items": {"type": ["string", "object"]}},
                    "mitigations": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "cpus": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                            "nice": {"type": "integer"},
                            "rt_policy": {"enum": ["fifo", "rr"]},
                            "rt_priority": {"type": "integer"},
                            "cpuset": {"type": "boolean"},
                            "irq_away": {"type": "boolean"},
                            "policy": {"type": "string"},
                            "preempt": {"enum": ["none", "voluntary", "full", "lazy"]},
                            "isolate": {"enum": [True, False, "isolated", "root"]},
                            "timer_migration": {"enum": [0, 1]},
                            "workqueue_away": {"type": "boolean"},
                        },
                    },
                    "env": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
                    },
                },
            },
        }
    },
}


# what execve passes on: NAME=value strings, NUL-terminated; a name with "=" or a NUL in either cannot be
# passed at all (Python raises ValueError at the run, after the warm-up), and a name that is not an identifier
# reaches no shell or program that reads it by name
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_problem(name: str, value: str) -> str | None:
    """Why NAME=VALUE cannot be a workload's environment variable, or None."""
    if not ENV_NAME.fullmatch(name):
        return f"{name!r}: not a variable name (letters, digits and _, not starting with a digit)"
    if "\0" in value:
        return f"{name}: the value holds a NUL byte, which no environment can carry"
    return None


def _where(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the file"


def _schema_error(path: str | Path, data, schema: dict, prefix: tuple = ()) -> None:
    import jsonschema
    from jsonschema.exceptions import best_match

    error = best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = _where([*prefix, *error.absolute_path])
        message = error.message
        if error.validator == "additionalProperties":
            message = message.replace("Additional properties are not allowed", "unknown key(s)")
        if error.validator == "type" and len(error.absolute_path) == 4 and error.absolute_path[2] == "loads":
            message = f"{error.instance!r}: a load is a name ({', '.join(LOAD_KINDS)}) or a table with a type"
        raise MitigationError(f"{path}: {where}: {message}")


def from_toml(path: str | Path) -> list[Scenario]:
    """Scenarios from a TOML file, checked whole before anything runs: unknown keys, wrong types and
    impossible values are errors naming where they are."""
    try:
        text = read_regular_bytes(path).decode("utf-8")
    except InputError as err:
        raise MitigationError(str(err)) from None
    except OSError as err:
        raise MitigationError(f"{path}: cannot read ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise MitigationError(f"{path}: not a TOML file (not UTF-8 text)") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise MitigationError(f"{path}: not valid TOML ({err})") from None
    if "scenarios" not in data:
        extra = f" (unknown top-level key(s): {', '.join(sorted(data))})" if data else ""
        raise MitigationError(f"{path}: no [scenarios.NAME] tables{extra}")
    _schema_error(path, data, SCENARIO_FILE_SCHEMA)
    online = set(os.sched_getaffinity(0))
    out = []
    for name, body in data["scenarios"].items():
        loads = [{"type": load} if isinstance(load, str) else dict(load) for load in body.get("loads", [])]
        for index, load in enumerate(loads):
            if "type" not in load:
                raise MitigationError(
                    f"{path}: scenarios.{name}.loads[{index}]: a load table needs a type ({', '.join(LOAD_KINDS)})"
                )
            if load.get("type") not in LOAD_KINDS:
                raise MitigationError(
                    f"{path}: scenarios.{name}.loads[{index}]: unknown load {load.get('type')!r} "
                    f"(known: {', '.join(LOAD_KINDS)})"
                )
            _schema_error(path, load, LOAD_TABLE, ("scenarios", name, "loads", index))
        options = dict(body.get("mitigations") or {})
        if isinstance(options.get("isolate"), bool):
            options["isolate"] = "isolated" if options["isolate"] else None
        mitigations = Mitigations(**options)
        try:
            mitigations.validate(online)
        except MitigationError as err:
            raise MitigationError(f"{path}: scenarios.{name}.mitigations: {err}") from None
        env = {k: str(v) for k, v in (body.get("env") or {}).items()}
        for key, value in env.items():
            problem = env_problem(key, value)
            if problem:
                raise MitigationError(f"{path}: scenarios.{name}.env: {problem}")
        out.append(Scenario(name, loads, mitigations, env))
    if "baseline" not in [s.name for s in out]:
        out.insert(0, Scenario("baseline"))
    return out
