"""Experiments from different boots or hosts side by side (`launchgap experiment compare`).

Boot-only levers (nohz_full, isolcpus, rcu_nocbs, irqaffinity, preempt=) cannot be switched inside one
experiment, so they are compared across experiments. Each experiment recorded the doctor's checks of its
host at its start (results.json "doctor"); the settings below are read from them, and runs are pooled
only when none differs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from launchgap.console import literal, shown
from launchgap.experiments.results import RESULTS_FILE, Environment, ExperimentResults, ScenarioInfo
from launchgap.experiments.stats import compare, summarize
from launchgap.views.numbers import fixed, places, span
from launchgap.views.words import speed

COMPARE_SCHEMA = "launchgap-compare/1"


class CompareError(ValueError):
    """The experiments cannot be compared or pooled (the message says why, on one line)."""


def _data(checks: dict, check_id: str, key: str):
    return (checks.get(check_id) or {}).get("data", {}).get(key)


def _evidence(checks: dict, check_id: str) -> str | None:
    check = checks.get(check_id)
    if not check:
        return None
    values = [f"{e['path']}={e['value']}" for e in check.get("evidence", [])]
    return "; ".join(values) if values else check.get("status")


def _text(value) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True) if value else "none"
    return str(value)


def settings_of(results: ExperimentResults) -> dict[str, str] | None:
    """The host settings that can change a lever's effect, from the doctor's findings at the start."""
    doctor = results.doctor
    # the doctor's own layout (doctor/model.py), read as it is: a check it does not hold is unknown
    if doctor is None or not isinstance(doctor.get("checks"), list):
        return None
    checks = {c.get("id"): c for c in doctor["checks"] if isinstance(c, dict)}
    preemption = _data(checks, "sched.preemption", "model")
    if preemption is None and _data(checks, "sched.preemption", "booted_as"):
        preemption = f"booted as {_data(checks, 'sched.preemption', 'booted_as')}"
    settings = {
        "kernel": doctor.get("kernel"),
        "CPU model": results.environment.cpu_model if results.environment else None,
        "online CPUs": doctor.get("online_cpus"),
        "boot isolation asked (nohz_full, isolcpus, rcu_nocbs, irqaffinity)": _data(checks, "boot.isolation", "asked"),
        "isolation in effect": _data(checks, "boot.isolation", "in_effect"),
        "preemption model": preemption,
        "RT throttling (sched_rt_runtime_us)": _data(checks, "sched.rt_throttling", "runtime_us"),
        "timer migration": _data(checks, "sched.timer_migration", "enabled"),
        "unbound workqueue CPUs": _data(checks, "sched.workqueue", "cpus"),
        "default IRQ affinity": _data(checks, "irq.default_affinity", "cpus"),
        "CPU frequency governor": _evidence(checks, "cpu.governor"),
        "SMT active": _data(checks, "cpu.smt", "active"),
        "transparent huge pages": _data(checks, "cpu.thp", "enabled"),
        "virtual machine": _data(checks, "cpu.hypervisor", "virtual"),
    }
    return {key: _text(value) for key, value in settings.items()}


def _labels(paths: list[Path]) -> list[str]:
    names = [p.name or str(p) for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def _values(results: ExperimentResults, scenario: str) -> list[float]:
    return [float(r.metric) for r in results.measured(scenario)]


def _baseline_of(info: ScenarioInfo, names: list[str]) -> str | None:
    if info.baseline:
        return info.baseline if info.baseline != info.name else None
    return "baseline" if info.name != "baseline" and "baseline" in names else None


# what the runner's environment() records that can change a measurement besides the doctor's settings
# (hostname and boot_id are what pooling across boots and hosts is for: not compared)
ENVIRONMENT_KEYS = ("machine", "cpus", "cmdline", "governor", "isolated_cpus", "nohz_full", "preemption", "versions")


def environment_differences(
    labels: list[str], loaded: list[tuple[Path, ExperimentResults]]
) -> dict[str, dict[str, str]]:
    """The recorded environment entries (ENVIRONMENT_KEYS) whose values differ, by label."""
    differ = {}
    for key in ENVIRONMENT_KEYS:
        values = {
            label: _text(getattr(r.environment, key) if r.environment else None)
            for label, (_, r) in zip(labels, loaded)
        }
        if len(set(values.values())) > 1:
            differ[key] = values
    return differ


def _experiment_identity(results: ExperimentResults) -> str | None:
    """Who ran an experiment, when (its owner process: pid, start time, boot) and with which seed: the same in
    a copy of its results, different for any other experiment."""
    owner = results.owner
    if owner is None or not owner.boot_id:
        return None
    return json.dumps([owner.pid, owner.start_ticks, owner.boot_id, results.seed])


def _refuse_the_same_twice(labels: list[str], loaded: list[tuple[Path, ExperimentResults]], pool: bool) -> None:
    seen_files: list[tuple[str, Path]] = []
    seen_runs: dict[str, str] = {}
    for label, (path, results) in zip(labels, loaded):
        for other, other_path in seen_files:
            try:
                same = os.path.samefile(path / RESULTS_FILE, other_path / RESULTS_FILE)
            except OSError:
                same = path.resolve() == other_path.resolve()
            if same:
                raise CompareError(f"{label} and {other} are the same results; give each experiment once")
        seen_files.append((label, path))
        identity = _experiment_identity(results)
        if pool and identity is not None:
            if identity in seen_runs:
                raise CompareError(
                    f"cannot pool: {label} and {seen_runs[identity]} hold the same experiment's runs "
                    f"(a copy of its results): pooled, each run would count twice"
                )
            seen_runs[identity] = label


def compare_experiments(loaded: list[tuple[Path, ExperimentResults]], pool: bool = False, force: bool = False) -> dict:
    if len(loaded) < 2:
        raise CompareError("give two or more experiments' result directories to compare")
    labels = _labels([path for path, _ in loaded])
    _refuse_the_same_twice(labels, loaded, pool)
    measures = {(r.metric, r.higher_is_better) for _, r in loaded}
    if len(measures) > 1:
        shown = "; ".join(f"{label}: {r.metric}" for label, (_, r) in zip(labels, loaded))
        raise CompareError(f"the experiments measure different things ({shown})")
    metric, higher = measures.pop()
    metric_name = loaded[0][1].metric_label
    settings = {label: settings_of(r) for label, (_, r) in zip(labels, loaded)}
    missing = [label for label, s in settings.items() if s is None]
    differ: dict[str, dict[str, str]] = {}
    known = {label: s for label, s in settings.items() if s is not None}
    for key in next(iter(known.values()), {}):
        values = {label: s.get(key, "unknown") for label, s in known.items()}
        if len(set(values.values())) > 1:
            differ[key] = values
    experiments = []
    for label, (path, r) in zip(labels, loaded):
        environment = r.environment or Environment()
        experiments.append(
            {
                "label": label,
                "path": str(path),
                "host": environment.hostname,
                "boot_id": environment.boot_id or (r.owner.boot_id if r.owner else None),
                "kernel": environment.kernel,
                "status": r.status,
                "settings": settings[label],
            }
        )
    names = list(dict.fromkeys(s.name for _, r in loaded for s in r.scenarios))
    info = {s.name: s for _, r in reversed(loaded) for s in r.scenarios}
    environment_differ = environment_differences(labels, loaded)
    out = {
        "schema": COMPARE_SCHEMA,
        "metric": metric,
        "metric_name": metric_name,
        "higher_is_better": higher,
        "pooled": pool,
        "experiments": experiments,
        "settings_differ": differ,
        "settings_missing": missing,
        "environment_differ": environment_differ,
    }
    if pool:
        _refuse_pooling(labels, loaded, differ, missing)
        if environment_differ and not force:
            shown = "; ".join(
                f"{key} ({', '.join(f'{label}: {value}' for label, value in values.items())})"
                for key, values in environment_differ.items()
            )
            raise CompareError(
                f"cannot pool: the experiments' environments differ: {shown} (--force pools them anyway)"
            )
        out["scenarios"] = _pooled(loaded, names, info, higher)
    else:
        out["scenarios"] = _side_by_side(labels, loaded, names, higher)
    return out


def _refuse_pooling(labels, loaded, differ, missing) -> None:
    if missing:
        raise CompareError(
            f"cannot pool: {', '.join(missing)} recorded no host settings (results from before "
            f"experiments ran the doctor), so whether they match is unknown"
        )
    if differ:
        shown = "; ".join(
            f"{key} ({', '.join(f'{label}: {value}' for label, value in values.items())})"
            for key, values in differ.items()
        )
        raise CompareError(f"cannot pool: the host settings differ: {shown}")
    commands = {label: json.dumps(r.command) for label, (_, r) in zip(labels, loaded)}
    if len(set(commands.values())) > 1:
        raise CompareError(
            "cannot pool: the workloads differ ("
            + "; ".join(f"{k}: {' '.join(json.loads(v))}" for k, v in commands.items())
            + ")"
        )
    described: dict[str, dict[str, str]] = {}
    for label, (_, r) in zip(labels, loaded):
        for s in r.scenarios:
            described.setdefault(s.name, {})[label] = s.description if s.description is not None else ""
    for name, by_label in described.items():
        if len(set(by_label.values())) > 1:
            shown = "; ".join(f"{label}: {text}" for label, text in by_label.items())
            raise CompareError(f"cannot pool: scenario {name} is not the same in every experiment ({shown})")


def _pooled(loaded, names, info, higher) -> list[dict]:
    rows = []
    pooled_values = {name: [v for _, r in loaded for v in _values(r, name)] for name in names}
    for name in names:
        values = pooled_values[name]
        row = {"name": name, "runs": len(values), "from": sum(1 for _, r in loaded if _values(r, name))}
        if values:
            row["metric"] = summarize(values).as_dict()
            base = _baseline_of(info[name], names)
            if base and pooled_values.get(base):
                row["vs_baseline"] = compare(pooled_values[base], values, higher).as_dict() | {"baseline": base}
        rows.append(row)
    return rows


def _side_by_side(labels, loaded, names, higher) -> list[dict]:
    rows = []
    for name in names:
        row = {"name": name, "per_experiment": {}}
        first = None
        for label, (_, r) in zip(labels, loaded):
            values = _values(r, name)
            entry: dict = {"runs": len(values)}
            if values:
                entry["metric"] = summarize(values).as_dict()
                if first is None:
                    first = (label, values)
                else:
                    entry["vs_first"] = compare(first[1], values, higher).as_dict() | {"first": first[0]}
            row["per_experiment"][label] = entry
        rows.append(row)
    return rows


def _mean_cell(metric: dict, runs: int, decimals: int) -> str:
    """'227.3 (sd 10.0, 5 runs)'."""
    sd = f"sd {fixed(metric['sd'], decimals)}, " if metric["sd"] is not None else ""
    return f"{fixed(metric['mean'], decimals)} ({sd}{runs} run{'' if runs == 1 else 's'})"


def render(comparison: dict, console: Console) -> None:
    _say_what_was_compared(comparison, console)
    # one rounding for the whole table, set by the runs' scatter (views/numbers.py)
    metrics = (
        [row["metric"] for row in comparison["scenarios"] if row.get("metric")]
        if comparison["pooled"]
        else [
            entry["metric"]
            for row in comparison["scenarios"]
            for entry in row["per_experiment"].values()
            if entry.get("metric")
        ]
    )
    decimals = places([m["sd"] for m in metrics], [m["mean"] for m in metrics])
    if comparison["pooled"]:
        console.print(_pooled_table(comparison, decimals))
    else:
        console.print(_side_by_side_table(comparison, decimals))


def _say_what_was_compared(comparison: dict, console: Console) -> None:
    """Each experiment, where it ran, and what differs between them: their environments, their host settings."""
    for e in comparison["experiments"]:
        boot = (e["boot_id"] or "?")[:8]
        console.print(
            literal(
                f"{e['label']}: {e['path']}, host {e['host'] or '?'}, boot {boot}, kernel "
                f"{e['kernel'] or '?'}, status {e['status']}"
            ),
            highlight=False,
        )
    if comparison["settings_missing"]:
        console.print(
            "no host settings recorded in: " + literal(", ".join(map(str, comparison["settings_missing"]))),
            highlight=False,
        )
    if comparison.get("environment_differ"):
        console.print(
            "environments that differ" + (" (pooled anyway: --force)" if comparison["pooled"] else "") + ":",
            highlight=False,
        )
        for key, values in comparison["environment_differ"].items():
            console.print(
                literal(f"  {key}: " + "; ".join(f"{label}: {value}" for label, value in values.items())),
                highlight=False,
            )
    if comparison["settings_differ"]:
        console.print("host settings that differ:", highlight=False)
        for key, values in comparison["settings_differ"].items():
            console.print(
                shown(f"  {key}: " + "; ".join(f"{label}: {value}" for label, value in values.items())),
                highlight=False,
                markup=False,
            )
    elif not comparison["settings_missing"]:
        console.print("every recorded host setting is the same (--pool merges their runs)", highlight=False)


def _measure_title(comparison: dict) -> str:
    """The measure's name and which way is better: 'tok/s (higher is better)'."""
    direction = "higher" if comparison["higher_is_better"] else "lower"
    name = comparison.get("metric_name") or comparison["metric"]
    return f"{name} ({direction} is better)"


def _pooled_table(comparison: dict, decimals: int) -> Table:
    table = Table(title=Text(shown(f"{_measure_title(comparison)}, pooled; vs baseline: means")), title_justify="left")
    for col in ("scenario", "runs", "from", "mean", "sd", "p95", "95% CI", "vs baseline", "p (Welch)"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for row in comparison["scenarios"]:
        m, v = row.get("metric"), row.get("vs_baseline")
        if not m:
            table.add_row(literal(row["name"]), "0", literal(row["from"]), *[""] * 6)
            continue
        table.add_row(
            literal(row["name"]),
            str(row["runs"]),
            literal(row["from"]),
            fixed(m["mean"], decimals),
            fixed(m["sd"], decimals),
            fixed(m["p95"], decimals),
            span(m["ci_low"], m["ci_high"], decimals),
            speed(v["mean_slowdown_percent"]) if v else "-",
            f"{v['welch_p']:.3f}" if v and v["welch_p"] is not None else "-",
        )
    return table


def _side_by_side_table(comparison: dict, decimals: int) -> Table:
    labels = [e["label"] for e in comparison["experiments"]]
    table = Table(
        title=Text(
            shown(f"{_measure_title(comparison)}: mean (sd, runs); vs {labels[0]}: the means compared, Welch p")
        ),
        title_justify="left",
    )
    table.add_column("scenario")
    for i, label in enumerate(labels):
        table.add_column(literal(label), justify="right")
        if i:
            table.add_column(f"vs {literal(labels[0])}", justify="right")
    for row in comparison["scenarios"]:
        cells = [literal(row["name"])]
        for i, label in enumerate(labels):
            entry = row["per_experiment"][label]
            m = entry.get("metric")
            cells.append(_mean_cell(m, entry["runs"], decimals) if m else "-")
            if i:
                cells.append(_vs_first_cell(entry.get("vs_first")))
        table.add_row(*cells)
    return table


def _vs_first_cell(vs_first: dict | None) -> str:
    """'4.1% slower, p 0.012', or without p where Welch's test could not be made; '-' where nothing was compared."""
    if not vs_first:
        return "-"
    if vs_first["welch_p"] is None:
        return speed(vs_first["mean_slowdown_percent"])
    return f"{speed(vs_first['mean_slowdown_percent'])}, p {vs_first['welch_p']:.3f}"
