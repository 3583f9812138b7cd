"""Running an experiment: every scenario, repeated, interleaved, each run
recorded; results written after every run so an interrupted experiment keeps
what it measured (marked incomplete). Whatever a run starts or changes is
stopped, removed and restored on every path: KeyboardInterrupt and SIGTERM
included."""

from __future__ import annotations

import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from launchgap import __version__
from launchgap.analysis.report import build_report
from launchgap.experiments.loadgen import LoadError
from launchgap.experiments.mitigations import HostChanges, MitigationError, make_cpuset, steer_irqs_away
from launchgap.experiments.scenarios import Scenario, make_load
from launchgap.recorder import find_recorder
from launchgap.trace import read_trace


@dataclass(frozen=True)
class Metric:
    """The workload's own measure of speed: a regex over its output, or wall time."""

    pattern: str | None  # None: wall time

    @property
    def name(self) -> str:
        return "wall time (s)" if self.pattern is None else self.pattern

    @property
    def higher_is_better(self) -> bool:
        return self.pattern is not None

    def read(self, output: str, wall_s: float) -> float | None:
        if self.pattern is None:
            return wall_s
        found = re.findall(self.pattern, output)
        return float(found[-1]) if found else None


class ExperimentError(RuntimeError):
    pass


def _version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not installed"


def environment() -> dict:
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None

    cpu_model = next((line.split(":", 1)[1].strip() for line in (read("/proc/cpuinfo") or "").splitlines()
                      if line.startswith("model name")), None)
    return {
        "kernel": platform.release(), "machine": platform.machine(), "cpu_model": cpu_model,
        "cpus": sorted(os.sched_getaffinity(0)),
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "isolated_cpus": read("/sys/devices/system/cpu/isolated"), "nohz_full": read("/sys/devices/system/cpu/nohz_full"),
        "cmdline": read("/proc/cmdline"), "preemption": read("/sys/kernel/debug/sched/preempt"),
        "versions": {"launchgap": __version__, "python": platform.python_version(),
                     "stress-ng": _version(["stress-ng", "--version"]), "iperf3": _version(["iperf3", "--version"]),
                     "fio": _version(["fio", "--version"])},
    }


def plan(scenarios: list[Scenario], repeat: int, seed: int) -> list[tuple[int, Scenario]]:
    """(round, scenario) in run order: a warm-up baseline (round 0), then each round shuffled."""
    rng = random.Random(seed)
    order = [(0, scenarios[0])]
    for r in range(1, repeat + 1):
        shuffled = list(scenarios)
        rng.shuffle(shuffled)
        order += [(r, s) for s in shuffled]
    return order


def _trace_metrics(path: Path) -> dict:
    report = build_report(read_trace(path))
    launching = [t for t in report["taken"]["threads"] if t["launches"]] or report["taken"]["threads"]
    culprits = [c for c in report["taken"]["culprits"] if not c["is_idle"]]
    m = report["study_metrics"]
    return {
        "launches": report["overview"]["launches"],
        "sched_per_1k": m["sched_per_1k_launches"], "softirq_per_1k": m["softirq_per_1k_launches"],
        "hardirq_per_1k": m["hardirq_per_1k_launches"],
        "preempted_ms": sum(t["preempted_ns"] for t in launching) / 1e6,
        "runqueue_ms": sum(t["runqueue_ns"] for t in launching) / 1e6,
        "irq_ms": sum(t["irq_ns"] for t in launching) / 1e6,
        "top_culprit": culprits[0]["comm"] if culprits else None,
        "lost_events": sum(report["overview"]["lost_events"].values()),
    }


def _stop_session(proc: subprocess.Popen) -> None:
    """The recorder and everything it started, whatever state they are in."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_once(command: list[str], scenario: Scenario, metric: Metric, trace_path: Path, disk_dir: Path | None,
             on_event=lambda text: None) -> dict:
    recorder = find_recorder()
    if recorder is None:
        raise ExperimentError("cannot find the recorder binary (make setup)")
    m = scenario.mitigations
    m.validate(set(os.sched_getaffinity(0)))
    changes, loads = HostChanges(), []
    proc = None
    try:
        cgroup = make_cpuset(m.cpus, changes) if m.cpuset else None
        if m.irq_away:
            steer_irqs_away(m.cpus, set(os.sched_getaffinity(0)), changes)
        for spec in scenario.loads:
            load = make_load(spec, disk_dir)
            loads.append(load)
            load.start()
            on_event(f"{load.name} load: {load.verify()}")
        wrapper = [sys.executable, "-m", "launchgap.experiments.enter"]
        if cgroup:
            wrapper += ["--cgroup", str(cgroup)]
        if m.cpus:
            wrapper += ["--cpus", ",".join(map(str, m.cpus))]
        if m.nice is not None:
            wrapper += ["--nice", str(m.nice)]
        if m.rt_policy:
            wrapper += ["--rt", m.rt_policy, "--rt-priority", str(m.rt_priority)]
        argv = [str(recorder), "-q", "-o", str(trace_path), "--", *wrapper, "--", *command]
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **scenario.env}, start_new_session=True)
        out, err = proc.communicate()
        wall = time.monotonic() - started
        value = metric.read(out, wall)
        row = {"exit_code": proc.returncode, "metric": value, "wall_s": wall}
        if proc.returncode != 0 or value is None:
            row["error"] = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1] if proc.returncode else \
                f"the metric {metric.name!r} was not in the output"
        if trace_path.exists():
            row.update(_trace_metrics(trace_path))
        return row
    finally:
        if proc is not None:
            _stop_session(proc)
        for load in reversed(loads):
            load.stop()
        problems = changes.restore()
        if problems:
            on_event("could not restore: " + "; ".join(problems))


def run_experiment(command: list[str], scenarios: list[Scenario], repeat: int, metric: Metric, outdir: Path,
                   seed: int, disk_dir: Path | None, progress=None, say=print) -> dict:
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "traces").mkdir(exist_ok=True)
    runs: list[dict] = []
    order = plan(scenarios, repeat, seed)
    results = {"schema": "launchgap-experiment/1", "status": "running", "command": command, "repeat": repeat,
               "seed": seed, "metric": metric.name, "higher_is_better": metric.higher_is_better,
               "scenarios": [{"name": s.name, "description": s.describe()} for s in scenarios],
               "environment": environment(), "runs": runs}

    def save() -> None:
        (outdir / "results.json").write_text(json.dumps(results, indent=2))

    previous_term = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        save()
        for index, (round_no, scenario) in enumerate(order):
            trace = outdir / "traces" / f"{index:03d}-{scenario.name}-r{round_no}.lg"
            if progress:
                progress(index, len(order), f"{scenario.name} (round {round_no or 'warm-up'})")
            try:
                row = run_once(command, scenario, metric, trace, disk_dir, on_event=lambda t: None)
            except (LoadError, MitigationError) as err:
                results["status"] = "failed"
                results["error"] = str(err)
                raise ExperimentError(str(err)) from err
            row.update({"index": index, "round": round_no, "scenario": scenario.name, "warmup": round_no == 0,
                        "trace": str(trace.relative_to(outdir))})
            runs.append(row)
            save()
        results["status"] = "complete"
    except KeyboardInterrupt:
        results["status"] = "incomplete"
        raise
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        if results["status"] == "running":
            results["status"] = "incomplete"
        save()
    return results
