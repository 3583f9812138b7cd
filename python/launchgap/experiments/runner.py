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
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from launchgap import __version__
from launchgap.analysis.report import build_report
from launchgap.experiments import custodian, leash
from launchgap.experiments.loadgen import LoadError
from launchgap.experiments.mitigations import (HostChanges, MitigationError, cpuset_available, make_cpuset,
                                               steer_irqs_away)
from launchgap.experiments.scenarios import Scenario, make_load
from launchgap.output import hand_over_trace, make_directory, write_text
from launchgap.recorder import ENV_OVERRIDE, find_recorder
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

    def check(self) -> None:
        """Raises ExperimentError if the pattern is not a regular expression with at most one group."""
        if self.pattern is None:
            return
        try:
            compiled = re.compile(self.pattern)
        except re.error as err:
            raise ExperimentError(f"--metric {self.pattern!r}: not a regular expression ({err})") from None
        if compiled.groups > 1:
            raise ExperimentError(f"--metric {self.pattern!r}: {compiled.groups} groups; give one, around the number")

    def missing(self, output: str) -> str:
        """Why read() found no value in OUTPUT."""
        found = list(re.finditer(self.pattern or "", output))
        if found:
            last = found[-1]
            text = last.group(1) if last.re.groups else last.group(0)
            return f"the metric {self.name!r} matched {text!r}, which is not a number"
        tail = output.strip().splitlines()[-1][:120] if output.strip() else None
        return f"the metric {self.name!r} was not in the output" + (
            f" (its last line: {tail!r})" if tail else " (it printed nothing)")

    def read(self, output: str, wall_s: float) -> float | None:
        """The last match's first group (or the whole match, without groups), as a number; None if absent."""
        if self.pattern is None:
            return wall_s
        found = list(re.finditer(self.pattern, output))
        if not found:
            return None
        last = found[-1]
        try:
            return float(last.group(1) if last.re.groups else last.group(0))
        except (TypeError, ValueError):
            return None


class ExperimentError(RuntimeError):
    """The experiment cannot start or go on (message says why, on one line)."""


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


def _command_problem(command: list[str]) -> str | None:
    """Why COMMAND cannot be run here, if it cannot (checked before anything starts)."""
    name = command[0]
    if "/" in name:
        path = Path(name)
        if not path.exists():
            return f"{name}: no such file"
        if path.is_dir() or not os.access(path, os.X_OK):
            return f"{name}: not an executable file"
        return None
    return None if shutil.which(name) else f"{name}: command not found on PATH"


def preflight(command: list[str], scenarios: list[Scenario], metric: Metric, disk_dir: Path | None) -> None:
    """Everything that can be known wrong before the warm-up run, raised as one ExperimentError each:
    the command, privileges, the recorder, the metric, every scenario's mitigations and loads."""
    problem = _command_problem(command)
    if problem:
        raise ExperimentError(f"cannot run the workload: {problem}")
    if os.geteuid() != 0:
        raise ExperimentError("experiments record with eBPF and may change host settings: run as root (sudo)")
    recorder = find_recorder()
    if recorder is None or not recorder.is_file() or not os.access(recorder, os.X_OK):
        raise ExperimentError(f"cannot find an executable recorder binary ({recorder or 'launchgap-record'}; "
                              f"make setup, or set {ENV_OVERRIDE})")
    metric.check()
    online = set(os.sched_getaffinity(0))
    for scenario in scenarios:
        try:
            scenario.mitigations.validate(online)
            if scenario.mitigations.cpuset:
                cpuset_available()
            for spec in scenario.loads:
                make_load(spec, disk_dir).check()
        except (LoadError, MitigationError) as err:
            raise ExperimentError(f"scenario {scenario.name}: {err}") from None


def run_once(command: list[str], scenario: Scenario, metric: Metric, trace_path: Path, disk_dir: Path | None,
             on_event=lambda text: None, journal: Path | None = None,
             not_restored: list[str] | None = None) -> dict:
    """One recorded run. Host settings it could not put back are appended to NOT_RESTORED
    (never dropped: the caller must say so and stop)."""
    recorder = find_recorder()
    if recorder is None:
        raise ExperimentError("cannot find the recorder binary (make setup)")
    m = scenario.mitigations
    m.validate(set(os.sched_getaffinity(0)))
    changes, loads = HostChanges(journal=journal), []
    proc = None
    try:
        cgroup = make_cpuset(m.cpus, changes) if m.cpuset else None
        if m.irq_away:
            steer_irqs_away(m.cpus, set(os.sched_getaffinity(0)), changes)
        for spec in scenario.loads:
            load = make_load(spec, disk_dir)
            load.on_scratch = changes.record_scratch
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
        # on a leash: the recorder and the workload die with the experiment, however it dies
        proc = leash.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, **scenario.env})
        out, err = proc.communicate()
        wall = time.monotonic() - started
        value = metric.read(out, wall)
        row = {"exit_code": proc.returncode, "metric": value, "wall_s": wall}
        if proc.returncode != 0 or value is None:
            row["error"] = ((err.strip().splitlines() or [f"the command exited with status {proc.returncode}"])[-1]
                            if proc.returncode else metric.missing(out))
        if trace_path.exists():
            hand_over_trace(trace_path)
            row.update(_trace_metrics(trace_path))
        return row
    finally:
        if proc is not None:
            _stop_session(proc)
        for load in reversed(loads):
            load.stop()
        problems = changes.restore(retry_s=2.0)
        if problems:
            on_event("could not restore: " + "; ".join(problems))
            if not_restored is not None:
                not_restored.extend(problems)


def run_experiment(command: list[str], scenarios: list[Scenario], repeat: int, metric: Metric, outdir: Path,
                   seed: int, disk_dir: Path | None, progress=None, say=print,
                   not_restored: list[str] | None = None) -> dict:
    """Runs everything; returns the results (also in OUTDIR/results.json, rewritten after every run).
    Raises ExperimentError when it cannot go on: the warm-up run failed (so would every run), or a host
    setting could not be put back (listed in NOT_RESTORED and in the results)."""
    make_directory(outdir)
    make_directory(outdir / "traces")
    not_restored = [] if not_restored is None else not_restored
    runs: list[dict] = []
    order = plan(scenarios, repeat, seed)
    results = {"schema": "launchgap-experiment/1", "status": "running", "command": command, "repeat": repeat,
               "seed": seed, "metric": metric.name, "higher_is_better": metric.higher_is_better,
               "scenarios": [{"name": s.name, "description": s.describe()} for s in scenarios],
               "environment": environment(), "owner": custodian.owner(), "runs": runs}
    journal = outdir / custodian.JOURNAL

    def save() -> None:
        write_text(outdir / "results.json", json.dumps(results, indent=2))

    previous_term = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        save()
        custodian.start(outdir)
        for index, (round_no, scenario) in enumerate(order):
            trace = outdir / "traces" / f"{index:03d}-{scenario.name}-r{round_no}.lg"
            if progress:
                progress(index, len(order), f"{scenario.name} (round {round_no or 'warm-up'})")
            try:
                row = run_once(command, scenario, metric, trace, disk_dir, on_event=lambda t: None, journal=journal,
                               not_restored=not_restored)
            except (LoadError, MitigationError) as err:
                results["status"] = "failed"
                results["error"] = str(err)
                raise ExperimentError(str(err)) from err
            finally:
                if not_restored:
                    results["status"] = "failed"
                    results["host_not_restored"] = list(not_restored)
            if not_restored:
                results["error"] = "host settings could not be restored: " + "; ".join(not_restored)
                raise ExperimentError(results["error"])
            row.update({"index": index, "round": round_no, "scenario": scenario.name, "warmup": round_no == 0,
                        "trace": str(trace.relative_to(outdir))})
            runs.append(row)
            save()
            if round_no == 0 and row.get("error"):
                results["status"] = "failed"
                results["error"] = (f"the warm-up run ({scenario.name}, no load) failed: {row['error']}; every run "
                                    f"would, so none was measured")
                raise ExperimentError(results["error"])
        measured_runs = [r for r in runs if not r["warmup"]]
        results["failed_runs"] = sum(1 for r in measured_runs if r.get("error"))
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
