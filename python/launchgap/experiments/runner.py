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
from dataclasses import dataclass, replace
from pathlib import Path

from launchgap import __version__, procfs
from launchgap.analysis.report import build_report
from launchgap.cli_common import Terminated, raise_terminated
from launchgap.experiments import custodian, leash, levers
from launchgap.experiments import journal as journals
from launchgap.experiments.host_lock import HostBusy, HostLock
from launchgap.experiments.journal import Journal
from launchgap.experiments.levers import LeverHost
from launchgap.experiments.loadgen import LoadError
from launchgap.experiments.mitigations import HostChanges, MitigationError, Mitigations, make_cpuset, steer_irqs_away
from launchgap.experiments.results import (
    RESULTS_FILE,
    WALL_METRIC,
    Environment,
    ExperimentResults,
    GpuTimeOfRun,
    GridInfo,
    Owner,
    Run,
    RunOutcome,
    ScenarioInfo,
    TraceMeasures,
    Verified,
    metric_name,
)
from launchgap.experiments.run_dir import RunDirError
from launchgap.experiments.scenarios import Scenario, make_load
from launchgap.experiments.verify import ThreadWatch, sampled_problems, trace_check
from launchgap.output import OutputError, atomic_output, hand_over_trace, make_directory, write_text
from launchgap.recorder import ENV_OVERRIDE, find_recorder
from launchgap.trace import read_trace


@dataclass(frozen=True)
class Metric:
    """The workload's own measure of speed: a regex over its output, or wall time."""

    pattern: str | None  # None: wall time
    higher: bool | None = None  # None: a pattern is a throughput (higher is better), wall time is not
    label: str | None = None  # what it is called (--metric-name); None: named after the pattern

    @property
    def name(self) -> str:
        """What identifies the measure (experiments are compared only when theirs are the same): the pattern."""
        return WALL_METRIC if self.pattern is None else self.pattern

    @property
    def shown_name(self) -> str:
        """What tables and plots call it: the label given, else the text beside the number in the pattern."""
        if self.label:
            return self.label
        return WALL_METRIC if self.pattern is None else metric_name(self.pattern)

    @property
    def higher_is_better(self) -> bool:
        return self.pattern is not None if self.higher is None else self.higher

    def check(self) -> None:
        """Raises ExperimentError if the pattern is not a regular expression with at most one group, or the
        label is not a short line of text."""
        if self.label is not None:
            problem = metric_label_problem(self.label)
            if problem:
                raise ExperimentError(f"--metric-name {self.label!r}: {problem}")
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
            f" (its last line: {tail!r})" if tail else " (it printed nothing)"
        )

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


# a metric's name heads tables and plots: one short line
MAX_METRIC_LABEL = 60


def metric_label_problem(label: str) -> str | None:
    """Why LABEL cannot name a metric, or None."""
    if not label.strip():
        return "empty; give the measure's name (e.g. tok/s)"
    if not label.isprintable():
        return "holds a control character or a line break; give one line of text"
    if len(label) > MAX_METRIC_LABEL:
        return f"{len(label)} characters; at most {MAX_METRIC_LABEL}"
    return None


class ExperimentError(RuntimeError):
    """The experiment cannot start or go on (message says why, on one line)."""


class NotStartedError(ExperimentError):
    """The experiment could not start (another one is changing host settings, no results directory):
    nothing was run."""


def _version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, errors="backslashreplace", timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not installed"


def environment() -> Environment:
    def read(path: str) -> str | None:
        try:
            return procfs.read_text(path).strip()
        except OSError:
            return None

    cpu_model = next(
        (
            line.split(":", 1)[1].strip()
            for line in (read("/proc/cpuinfo") or "").splitlines()
            if line.startswith("model name")
        ),
        None,
    )
    return Environment(
        hostname=platform.node(),
        boot_id=read("/proc/sys/kernel/random/boot_id"),
        kernel=platform.release(),
        machine=platform.machine(),
        cpu_model=cpu_model,
        cpus=sorted(os.sched_getaffinity(0)),
        governor=read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        isolated_cpus=read("/sys/devices/system/cpu/isolated"),
        nohz_full=read("/sys/devices/system/cpu/nohz_full"),
        cmdline=read("/proc/cmdline"),
        preemption=read("/sys/kernel/debug/sched/preempt"),
        versions={
            "launchgap": __version__,
            "python": platform.python_version(),
            "stress-ng": _version(["stress-ng", "--version"]),
            "iperf3": _version(["iperf3", "--version"]),
            "fio": _version(["fio", "--version"]),
        },
    )


def plan(scenarios: list[Scenario], repeat: int, seed: int) -> list[tuple[int, Scenario]]:
    """(round, scenario) in run order: a warm-up baseline (round 0), then each round shuffled."""
    rng = random.Random(seed)
    order = [(0, scenarios[0])]
    for r in range(1, repeat + 1):
        shuffled = list(scenarios)
        rng.shuffle(shuffled)
        order += [(r, s) for s in shuffled]
    return order


def trace_measures(trace, focus_threads: str | None = None, load_pids: list[int] | None = None) -> TraceMeasures:
    """The run's time taken by cause: from the launching threads, else those named FOCUS_THREADS* (the
    lever workload's workers), else every thread of the workload; and its GPU time (gpu_time_of_run)."""
    report = build_report(trace)
    threads = report.taken.threads
    launching = (
        [t for t in threads if t.launches]
        or [t for t in threads if focus_threads and (t.comm or "").startswith(focus_threads)]
        or threads
    )
    culprits = [c for c in report.taken.culprits if not c.is_idle]
    m = report.study_metrics
    return TraceMeasures(
        launches=report.overview.launches,
        sched_per_1k=m.sched_per_1k_launches,
        softirq_per_1k=m.softirq_per_1k_launches,
        hardirq_per_1k=m.hardirq_per_1k_launches,
        preempted_ns=sum(t.preempted_ns for t in launching),
        runqueue_ns=sum(t.runqueue_ns for t in launching),
        irq_ns=sum(t.irq_ns for t in launching),
        top_culprit=culprits[0].comm if culprits else None,
        lost_events=sum(report.overview.lost_events.values()),
        gpu_time=gpu_time_of_run(report, load_pids or []),
    )


def gpu_time_of_run(report, load_pids: list[int]) -> GpuTimeOfRun:
    """What the run's GPU lost to interference (docs/gpu-time.md; exact with GPU activity, else bounds), and
    the throughput gain its trace predicts were the scenario's load (LOAD_PIDS: its processes) gone."""
    from launchgap.analysis.gpu_time import gain_without

    g = report.gpu_time
    gain = gain_without(g, set(load_pids)) if load_pids else None
    return GpuTimeOfRun(
        mode=g.mode,
        why=g.why,
        idle_caused_low_ns=g.interference_low_ns,
        idle_caused_high_ns=g.interference_high_ns,
        active_ns=g.active_ns,
        load_pids=sorted(load_pids),
        predicted_gain_low_percent=gain[0] if gain else None,
        predicted_gain_high_percent=gain[1] if gain else None,
    )


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


RECORDER_PREFIX = "launchgap-record: "
# the recorder's summary of what it lost (recorder/src/losses.rs): a fact about the trace, not an error
RECORDER_LOST = RECORDER_PREFIX + "LOST "


# what a program's complaint reads like (whole words, any case): the first such line of a failed workload's
# stderr says why it failed better than its last (often the end of a usage text)
ERROR_LIKE = re.compile(
    r"\b(errors?|unrecogni[sz]ed|invalid|cannot|can't|could not|couldn't|unable|fail(s|ed|ure)?|"
    r"not found|no such|denied|fatal|abort(ed)?|panic(ked)?|exception|illegal|"
    r"unknown (option|argument|command|flag))\b",
    re.IGNORECASE,
)
PYTHON_TRACEBACK = "Traceback (most recent call last):"
# a quoted line is cut to this many characters
SHOWN_LINE = 200


def _shown_line(line: str) -> str:
    """A line of a workload's output as it can be quoted on one line: control characters escaped, cut."""
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line.strip())
    return text if len(text) <= SHOWN_LINE else text[:SHOWN_LINE] + "..."


def workload_complaint(stderr: str) -> str | None:
    """What a failed workload said went wrong, on one line, from its stderr (the recorder's own lines left
    out): a Python traceback's exception; else the first line that reads as an error (ERROR_LIKE); else its
    only line, or its first and last; None when it printed nothing."""
    raw = [line.rstrip() for line in stderr.splitlines() if not line.startswith(RECORDER_PREFIX)]
    lines = [line for line in raw if line.strip()]
    if not lines:
        return None
    headers = [i for i, line in enumerate(raw) if line.strip() == PYTHON_TRACEBACK]
    if headers:
        # the exception is the first line after the last traceback's header that is not indented
        raised = next((line for line in raw[headers[-1] + 1 :] if line and not line[0].isspace()), None)
        if raised:
            return _shown_line(raised)
    complaint = next((line for line in lines if ERROR_LIKE.search(line)), None)
    if complaint:
        return _shown_line(complaint)
    if len(lines) == 1:
        return _shown_line(lines[0])
    return f"{_shown_line(lines[0])} ... {_shown_line(lines[-1])}"


def failed_run_error(returncode: int, stderr: str, recorded: bool, kept: Path | None = None) -> str:
    """Why a run failed, in one line: the workload's exit status (the recorder exits with it) and what it
    said went wrong (workload_complaint), with where its whole stderr was kept (KEPT); where no trace was
    written, the recorder itself failed: its last line. The recorder's LOST summary is never the reason."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    recorder = [
        line.removeprefix(RECORDER_PREFIX)
        for line in lines
        if line.startswith(RECORDER_PREFIX) and not line.startswith(RECORDER_LOST)
    ]
    where = f" (its whole stderr: {kept})" if kept else ""
    if not recorded and recorder:
        return f"the recorder failed (exit status {returncode}): {_shown_line(recorder[-1])}{where}"
    status = (
        f"the command was killed by signal {-returncode}"
        if returncode < 0
        else f"the command exited with status {returncode}"
    )
    complaint = workload_complaint(stderr)
    return status + (f": {complaint}" if complaint else "") + where


def keep_stderr(stderr: bytes, path: Path) -> Path | None:
    """Writes a failed run's whole stderr, byte for byte, to PATH; None when there was none or it could not
    be written (the run's error says what it could without it)."""
    if not stderr:
        return None
    try:
        make_directory(path.parent)
        with atomic_output(path) as partial:
            partial.write_bytes(stderr)
    except (OSError, OutputError):
        return None
    return path


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


def preflight(
    command: list[str],
    scenarios: list[Scenario],
    metric: Metric,
    disk_dir: Path | None,
    host: LeverHost | None = None,
    allow_rt_unthrottled: bool = False,
) -> None:
    """Everything that can be known wrong before the warm-up run, raised as one ExperimentError each:
    the command, privileges, the recorder, the metric, every scenario's mitigations, levers and loads
    (what the host allows, from the doctor's view of it)."""
    for workload in ([command] if command else []) + [s.command for s in scenarios if s.command]:
        problem = _command_problem(workload)
        if problem:
            raise ExperimentError(f"cannot run the workload: {problem}")
    if os.geteuid() != 0:
        raise ExperimentError("experiments record with eBPF and may change host settings: run as root (sudo)")
    recorder = find_recorder()
    if recorder is None or not recorder.is_file() or not os.access(recorder, os.X_OK):
        raise ExperimentError(
            f"cannot find an executable recorder binary ({recorder or 'launchgap-record'}; "
            f"make setup, or set {ENV_OVERRIDE})"
        )
    metric.check()
    online = set(os.sched_getaffinity(0))
    host = host or LeverHost()
    for scenario in scenarios:
        try:
            scenario.mitigations.validate(online)
            problem = scenario.mitigations.host_refusal(host, allow_rt_unthrottled)
            if problem:
                raise MitigationError(problem)
            for spec in scenario.loads:
                make_load(spec, disk_dir).check()
        except (LoadError, MitigationError) as err:
            raise ExperimentError(f"scenario {scenario.name}: {err}") from None


def apply_host_levers(m: Mitigations, host: LeverHost, changes: HostChanges) -> tuple[Path | None, list[str]]:
    """Makes the scenario's host-wide changes, each read back; returns the cgroup the workload joins and
    what each read-back showed. Raises MitigationError if one is refused or does not read back."""
    verified: list[str] = []
    cgroup = None
    if m.isolate:
        isolation = levers.isolate_cpus(m.isolate, m.cpus, host, changes)
        cgroup = isolation.group
        verified.append(isolation.evidence)
    elif m.cpuset:
        cgroup = make_cpuset(m.cpus, changes, host)
        verified.append(f"cpuset {cgroup.name}: CPUs {','.join(map(str, m.cpus))}")
    if m.irq_away:
        online = host.facts().online or frozenset(os.sched_getaffinity(0))
        before = len(changes.writes)
        moved = steer_irqs_away(m.cpus, set(online), changes, host)
        others = set(online) - set(m.cpus)
        for path, _old in changes.writes[before:]:
            shown = path.read_text().strip()
            if levers.parse_mask_or_list(shown) != others:
                raise MitigationError(f"irq-away: {path} reads {shown!r} after writing {sorted(others)}")
        verified.append(f"{moved} IRQs moved to CPUs {','.join(map(str, sorted(others)))}")
    if m.workqueue_away:
        verified.append(levers.apply_workqueue_away(m.cpus, host, changes))
    if m.timer_migration is not None:
        verified.append(levers.apply_timer_migration(m.timer_migration, host, changes))
    if m.preempt:
        verified.append(levers.apply_preempt(m.preempt, host, changes))
    return cgroup, verified


def _enter_wrapper(m: Mitigations, report: Path, cgroup: Path | None) -> list[str]:
    """The command that puts the workload under the mitigations M (in CGROUP, where one was made) before it
    execs it, and writes what it entered to REPORT (launchgap.experiments.enter)."""
    wrapper = [sys.executable, "-m", "launchgap.experiments.enter", "--report", str(report)]
    if cgroup:
        wrapper += ["--cgroup", str(cgroup)]
    if m.cpus:
        wrapper += ["--cpus", ",".join(map(str, m.cpus))]
    if m.nice is not None:
        wrapper += ["--nice", str(m.nice)]
    if m.sched_policy is not None:
        wrapper += ["--policy", str(m.sched_policy)]
    return wrapper


def _take_entered(report: Path) -> dict | None:
    """What the wrapper wrote it entered (None where it wrote nothing readable); the file goes."""
    try:
        return json.loads(report.read_text())
    except (OSError, ValueError):
        return None
    finally:
        report.unlink(missing_ok=True)


def run_once(
    command: list[str],
    scenario: Scenario,
    metric: Metric,
    trace_path: Path,
    disk_dir: Path | None,
    on_event=lambda text: None,
    journal: Journal | None = None,
    not_restored: list[str] | None = None,
    host: LeverHost | None = None,
    focus_threads: str | None = None,
    stderr_path: Path | None = None,
    gpu_activity: bool = False,
) -> RunOutcome:
    """One recorded run (with GPU_ACTIVITY: recorded with --gpu-activity, so that its GPU time is exact).
    Host settings it could not put back are appended to NOT_RESTORED (never dropped: the caller must say so
    and stop). A failed run's whole stderr is kept in STDERR_PATH, named in its error and as its stderr."""
    recorder = find_recorder()
    if recorder is None:
        raise ExperimentError("cannot find the recorder binary (make setup)")
    host = host or LeverHost()
    m = scenario.mitigations
    m.validate(set(os.sched_getaffinity(0)))
    changes, loads = HostChanges(journal=journal), []
    proc = None
    watch = None
    report = trace_path.with_name(trace_path.stem + ".enter.json")
    try:
        cgroup, verified = apply_host_levers(m, host, changes)
        for spec in scenario.loads:
            load = make_load(spec, disk_dir)
            load.on_scratch = changes.record_scratch
            loads.append(load)
            load.start()
            on_event(f"{load.name} load: {load.verify()}")
        wrapper = _enter_wrapper(m, report, cgroup)
        argv = [
            str(recorder),
            "-q",
            *(["--gpu-activity"] if gpu_activity else []),
            "-o",
            str(trace_path),
            "--",
            *wrapper,
            "--",
            *(scenario.command or command),
        ]
        watch = ThreadWatch(report)
        watch.start()
        started = time.monotonic()
        # on a leash: the recorder and the workload die with the experiment, however it dies
        # bytes: a workload's output need not be UTF-8, and its stderr is kept as it wrote it
        proc = leash.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **scenario.env})
        out_bytes, err_bytes = proc.communicate()
        wall = time.monotonic() - started
        # the loads' processes, while they still run: whose GPU idle a run without them would not have
        load_pids = sorted({pid for load in loads for pid in load.pids()})
        watch.stop()
        out, err = out_bytes.decode("utf-8", "replace"), err_bytes.decode("utf-8", "backslashreplace")
        value = metric.read(out, wall)
        kept, error = None, None
        if proc.returncode != 0 or value is None:
            kept = keep_stderr(err_bytes, stderr_path) if stderr_path is not None else None
            error = (
                failed_run_error(proc.returncode, err, trace_path.exists(), kept)
                if proc.returncode
                else metric.missing(out) + (f" (its whole stderr: {kept})" if kept else "")
            )
        entered = _take_entered(report)
        problems = sampled_problems(m, watch)
        sampled = {
            str(t): {"comm": e["comm"], "seen": sorted(map(list, e["seen"])), "cpus": sorted(e["cpus"])}
            for t, e in sorted(watch.threads.items())
        }
        measures, checked = None, None
        if trace_path.exists():
            hand_over_trace(trace_path)
            trace = read_trace(trace_path)
            measures = trace_measures(trace, focus_threads, load_pids)
            if entered is not None:
                checked = trace_check(trace, int(entered["pid"]), int(entered["monotonic_ns"]), m)
                problems += checked.get("problems", [])
        if entered is not None and entered.get("not_in_effect"):
            problems += entered["not_in_effect"]
        if problems and not error:
            error = (
                "settings not in effect: "
                + "; ".join(problems[:3])
                + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
            )
        return RunOutcome(
            exit_code=proc.returncode,
            metric=value,
            wall_s=wall,
            stderr=str(kept) if kept is not None else None,
            error=error,
            verified=Verified(host=verified, enter=entered, threads_sampled=sampled, trace=checked),
            measures=measures,
        )
    finally:
        if watch is not None and watch.is_alive():
            watch.stop()
        if proc is not None:
            _stop_session(proc)
        for load in reversed(loads):
            load.stop()
        problems = changes.restore(retry_s=2.0)
        if problems:
            on_event("could not restore: " + "; ".join(problems))
            if not_restored is not None:
                not_restored.extend(problems)


def doctor_findings(host: LeverHost, cpus: set[int] | None) -> dict:
    """The doctor's checks of the host as the experiment starts (the boot-only levers among them), with the
    workload's CPUs as the target when every scenario pins it to the same ones."""
    from launchgap.doctor.model import Target
    from launchgap.doctor.run import run_doctor

    target = Target(frozenset(cpus), "the workload's CPUs") if cpus else None
    return run_doctor(host.view(), target).to_dict()


def run_experiment(
    command: list[str],
    scenarios: list[Scenario],
    repeat: int,
    metric: Metric,
    outdir: Path,
    seed: int,
    disk_dir: Path | None,
    progress=None,
    say=print,
    not_restored: list[str] | None = None,
    host: LeverHost | None = None,
    grid: GridInfo | None = None,
    focus_threads: str | None = None,
    gpu_activity: bool = False,
) -> ExperimentResults:
    """Runs everything; returns the results (also in OUTDIR/results.json, rewritten after every run); GRID:
    a lever grid's layout, kept with them.
    Raises ExperimentError when it cannot go on: the warm-up run failed (so would every run), or a host
    setting could not be put back (listed in NOT_RESTORED and in the results)."""
    host = host or LeverHost()
    lock = None
    if any(s.mitigations.changes_host for s in scenarios):
        lock = HostLock(host)
        try:
            lock.acquire(outdir)
        except HostBusy as err:
            raise NotStartedError(str(err)) from None
    registered = None
    try:
        registered = _register(host, outdir)
        return _run_locked(
            command,
            scenarios,
            repeat,
            metric,
            outdir,
            seed,
            disk_dir,
            progress,
            not_restored,
            host,
            grid,
            focus_threads,
            lock,
            registered,
            gpu_activity,
        )
    finally:
        if registered is not None:
            registered.unregister()  # also when the results directory could not be made
        if lock is not None:
            lock.release()


def _register(host: LeverHost, outdir: Path) -> Journal | None:
    """The experiment's journal of host changes, registered where only root can write (journal.py). Not
    root, there is none: such a run cannot change the host (preflight refuses it; the tests' stand-in hosts
    under LAUNCHGAP_LEVER_ROOT are the user's own, and have one)."""
    try:
        return journals.register(host, outdir, custodian.owner())
    except RunDirError as err:
        if os.geteuid() == 0:
            raise NotStartedError(f"cannot journal host changes: {err}") from None
        return None


def _run_locked(
    command,
    scenarios,
    repeat,
    metric,
    outdir,
    seed,
    disk_dir,
    progress,
    not_restored,
    host,
    grid: GridInfo | None,
    focus_threads,
    lock,
    registered: Journal | None,
    gpu_activity: bool = False,
) -> ExperimentResults:
    make_directory(outdir)
    make_directory(outdir / "traces")
    not_restored = [] if not_restored is None else not_restored
    order = plan(scenarios, repeat, seed)
    host = host or LeverHost()
    pinned = {tuple(sorted(s.mitigations.cpus or ())) for s in scenarios}
    results = ExperimentResults(
        status="running",
        command=command,
        repeat=repeat,
        seed=seed,
        metric=metric.name,
        metric_name=metric.shown_name,
        higher_is_better=metric.higher_is_better,
        gpu_activity=gpu_activity,
        scenarios=[ScenarioInfo.of(s) for s in scenarios],
        environment=environment(),
        owner=Owner(**custodian.owner()),
        runs=[],
        doctor=doctor_findings(host, set(pinned.pop()) if len(pinned) == 1 else None),
        grid=grid,
    )

    def save() -> None:
        write_text(outdir / RESULTS_FILE, json.dumps(results.to_json(), indent=2))

    previous_term = signal.signal(signal.SIGTERM, raise_terminated)
    keeper = None
    try:
        save()
        if registered is not None:
            keeper = custodian.start(registered, host, lock.fd if lock else None)
            registered.record["custodian"] = custodian.owner(keeper.pid)
            registered.save()
        for index, (round_no, scenario) in enumerate(order):
            # a grid's "compute/fifo:10" names no directory: only safe characters in file names
            safe_name = re.sub(r"[^A-Za-z0-9_.=+-]", "-", scenario.name)
            trace = outdir / "traces" / f"{index:03d}-{safe_name}-r{round_no}.lg"
            if progress:
                progress(index, len(order), f"{scenario.name} (round {round_no or 'warm-up'})")
            try:
                outcome = run_once(
                    command,
                    scenario,
                    metric,
                    trace,
                    disk_dir,
                    on_event=lambda t: None,
                    journal=registered,
                    not_restored=not_restored,
                    host=host,
                    focus_threads=focus_threads,
                    stderr_path=outdir / "stderr" / f"{index:03d}-{safe_name}-r{round_no}.txt",
                    gpu_activity=gpu_activity,
                )
            except (LoadError, MitigationError) as err:
                results.status = "failed"
                results.error = str(err)
                raise ExperimentError(str(err)) from err
            finally:
                if not_restored:
                    results.status = "failed"
                    results.host_not_restored = list(not_restored)
            if not_restored:
                results.error = "host settings could not be restored: " + "; ".join(not_restored)
                raise ExperimentError(results.error)
            if outcome.stderr:
                # where the directory moves, its runs' files move with it
                outcome = replace(outcome, stderr=str(Path(outcome.stderr).relative_to(outdir)))
            run = Run.placed(
                outcome,
                index=index,
                round=round_no,
                scenario=scenario.name,
                warmup=round_no == 0,
                trace=str(trace.relative_to(outdir)),
            )
            results.runs.append(run)
            save()
            if round_no == 0 and run.error:
                results.status = "failed"
                what = scenario.name + ("" if scenario.loads else ", no load")
                results.error = f"the warm-up run ({what}) failed: {run.error}; every run would, so none was measured"
                raise ExperimentError(results.error)
        results.failed_runs = sum(1 for r in results.runs if not r.warmup and r.error)
        results.status = "complete"
    except (KeyboardInterrupt, Terminated):
        results.status = "incomplete"
        raise
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        if results.status == "running":
            results.status = "incomplete"
        save()
        if registered is not None:
            # everything is put back (or said in capitals not to be): nothing for the custodian or the next
            # experiment to do
            registered.unregister()
        if keeper is not None:
            custodian.stop(keeper)
    return results
