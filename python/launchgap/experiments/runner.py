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
from launchgap.analysis.records import GpuTimeBounds, GpuTimeExact, GpuTimeNotEstimated
from launchgap.analysis.report import build_report
from launchgap.cli_common import Terminated, raise_terminated
from launchgap.experiments import custodian, leash, levers
from launchgap.experiments import journal as journals
from launchgap.experiments.host_lock import HostBusy, HostLock
from launchgap.experiments.journal import Journal
from launchgap.experiments.levers import LeverHost
from launchgap.experiments.loadgen import LoadError, LoadGenerator
from launchgap.experiments.mitigations import HostChanges, MitigationError, Mitigations, make_cpuset, steer_irqs_away
from launchgap.experiments.plan import ExperimentError, ExperimentPlan, Metric
from launchgap.experiments.results import (
    RESULTS_FILE,
    Environment,
    ExperimentResults,
    GpuTimeOfRun,
    Owner,
    Run,
    RunOutcome,
    ScenarioInfo,
    TraceMeasures,
    Verified,
)
from launchgap.experiments.run_dir import RunDirError
from launchgap.experiments.scenarios import Scenario, make_load
from launchgap.experiments.verify import ThreadWatch, sampled_problems, trace_check
from launchgap.output import OutputError, atomic_output, hand_over_trace, make_directory, write_text
from launchgap.recorder import ENV_OVERRIDE, find_recorder
from launchgap.trace import read_trace


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


def run_order(scenarios: list[Scenario], repeat: int, seed: int) -> list[tuple[int, Scenario]]:
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
    # the results file's layout, as before the kinds were types: none gives 0 for its times
    match g:
        case GpuTimeNotEstimated():
            why, caused, active = g.why, (0, 0), 0
        case GpuTimeExact():
            why, caused, active = None, (g.interference_ns, g.interference_ns), g.active_ns
        case GpuTimeBounds():
            why, caused, active = g.why, (g.interference_low_ns, g.interference_high_ns), g.active_ns
    gain = gain_without(g, set(load_pids)) if load_pids else None
    return GpuTimeOfRun(
        mode=g.MODE,
        why=why,
        idle_caused_low_ns=caused[0],
        idle_caused_high_ns=caused[1],
        active_ns=active,
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


def preflight(plan: ExperimentPlan, host: LeverHost | None = None) -> None:
    """Everything that can be known wrong before the warm-up run, raised as one ExperimentError each:
    the command, privileges, the recorder, the metric, every scenario's mitigations, levers and loads
    (what the host allows, from the doctor's view of it)."""
    workloads = [s.command for s in plan.scenarios if s.command]
    for workload in ([plan.command] if plan.command else []) + workloads:
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
    plan.metric.check()
    online = set(os.sched_getaffinity(0))
    host = host or LeverHost()
    for scenario in plan.scenarios:
        try:
            scenario.mitigations.validate(online)
            problem = scenario.mitigations.host_refusal(host, plan.allow_rt_unthrottled)
            if problem:
                raise MitigationError(problem)
            for spec in scenario.loads:
                make_load(spec, plan.disk_dir).check()
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


@dataclass(frozen=True)
class _Finished:
    """What the recorded workload left as it ended: its exit status (the recorder exits with it), its output
    as bytes (it need not be UTF-8, and a failed run's stderr is kept as it wrote it), how long it ran, and the
    loads' processes while they still ran (whose GPU idle a run without them would not have)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    wall_s: float
    load_pids: list[int]


def run_once(
    plan: ExperimentPlan,
    scenario: Scenario,
    trace_path: Path,
    *,
    stderr_path: Path | None = None,
    journal: Journal | None = None,
    not_restored: list[str] | None = None,
    host: LeverHost | None = None,
    on_event=lambda text: None,
) -> RunOutcome:
    """One recorded run of SCENARIO (with the plan's gpu_activity: recorded with --gpu-activity, so that its
    GPU time is exact). Host settings it could not put back are appended to NOT_RESTORED (never dropped: the
    caller must say so and stop). A failed run's whole stderr is kept in STDERR_PATH, named in its error and as
    its stderr."""
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
        _start_loads(scenario, plan.disk_dir, changes, loads, on_event)
        argv = _recorder_argv(recorder, plan, scenario, trace_path, _enter_wrapper(m, report, cgroup))
        watch = ThreadWatch(report)
        watch.start()
        started = time.monotonic()
        # on a leash: the recorder and the workload die with the experiment, however it dies
        proc = leash.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **scenario.env})
        out_bytes, err_bytes = proc.communicate()
        finished = _Finished(
            returncode=proc.returncode,
            stdout=out_bytes,
            stderr=err_bytes,
            wall_s=time.monotonic() - started,
            load_pids=sorted({pid for load in loads for pid in load.pids()}),
        )
        watch.stop()
        return _outcome(plan, m, finished, verified, watch, trace_path, report, stderr_path)
    finally:
        _stop_and_restore(watch, proc, loads, changes, on_event, not_restored)


def _start_loads(
    scenario: Scenario, disk_dir: Path | None, changes: HostChanges, started: list[LoadGenerator], on_event
) -> None:
    """Starts the scenario's loads, each checked to load, into STARTED as it starts (so that every one
    started is stopped, whichever fails)."""
    for spec in scenario.loads:
        load = make_load(spec, disk_dir)
        load.on_scratch = changes.record_scratch
        started.append(load)
        load.start()
        on_event(f"{load.name} load: {load.verify()}")


def _recorder_argv(
    recorder: Path, plan: ExperimentPlan, scenario: Scenario, trace_path: Path, wrapper: list[str]
) -> list[str]:
    """The recorder, quiet, recording the scenario's workload (its own, else the plan's) as WRAPPER starts it."""
    return [
        str(recorder),
        "-q",
        *(["--gpu-activity"] if plan.gpu_activity else []),
        "-o",
        str(trace_path),
        "--",
        *wrapper,
        "--",
        *(scenario.command or plan.command),
    ]


def _outcome(
    plan: ExperimentPlan,
    m: Mitigations,
    finished: _Finished,
    verified: list[str],
    watch: ThreadWatch,
    trace_path: Path,
    report: Path,
    stderr_path: Path | None,
) -> RunOutcome:
    """The run's measure and, where it failed, why; and the mitigations M checked three ways: as the wrapper
    entered them (REPORT), as the threads were seen running (WATCH), and in the trace, which is measured."""
    value, kept, error = _measure(plan.metric, finished, trace_path, stderr_path)
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
        measures = trace_measures(trace, plan.focus_threads, finished.load_pids)
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
        exit_code=finished.returncode,
        metric=value,
        wall_s=finished.wall_s,
        stderr=str(kept) if kept is not None else None,
        error=error,
        verified=Verified(host=verified, enter=entered, threads_sampled=sampled, trace=checked),
        measures=measures,
    )


def _measure(
    metric: Metric, finished: _Finished, trace_path: Path, stderr_path: Path | None
) -> tuple[float | None, Path | None, str | None]:
    """The run's measure (None where absent), where its whole stderr was kept, and why it failed (None if it
    did not): it exited with an error, or printed no measure."""
    out = finished.stdout.decode("utf-8", "replace")
    err = finished.stderr.decode("utf-8", "backslashreplace")
    value = metric.read(out, finished.wall_s)
    kept, error = None, None
    if finished.returncode != 0 or value is None:
        kept = keep_stderr(finished.stderr, stderr_path) if stderr_path is not None else None
        error = (
            failed_run_error(finished.returncode, err, trace_path.exists(), kept)
            if finished.returncode
            else metric.missing(out) + (f" (its whole stderr: {kept})" if kept else "")
        )
    return value, kept, error


def _stop_and_restore(
    watch: ThreadWatch | None,
    proc: subprocess.Popen | None,
    loads: list[LoadGenerator],
    changes: HostChanges,
    on_event,
    not_restored: list[str] | None,
) -> None:
    """Whatever a run started, stopped, and the host put back, however the run ended; what could not be put
    back is said and appended to NOT_RESTORED."""
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
    plan: ExperimentPlan, *, progress=None, not_restored: list[str] | None = None, host: LeverHost | None = None
) -> ExperimentResults:
    """Runs everything the plan asks for; returns the results (also in its outdir's results.json, rewritten
    after every run). PROGRESS(index, total, what) is called as each run starts.
    Raises ExperimentError when it cannot go on: the warm-up run failed (so would every run), or a host
    setting could not be put back (listed in NOT_RESTORED and in the results)."""
    host = host or LeverHost()
    not_restored = [] if not_restored is None else not_restored
    lock = None
    if any(s.mitigations.changes_host for s in plan.scenarios):
        lock = HostLock(host)
        try:
            lock.acquire(plan.outdir)
        except HostBusy as err:
            raise NotStartedError(str(err)) from None
    registered = None
    try:
        registered = _register(host, plan.outdir)
        return _run_locked(plan, host, lock, registered, progress, not_restored)
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
    plan: ExperimentPlan,
    host: LeverHost,
    lock: HostLock | None,
    registered: Journal | None,
    progress,
    not_restored: list[str],
) -> ExperimentResults:
    """The runs in their order, the results saved after each, with the host lock (LOCK) held where a
    scenario changes the host, and a custodian watching the journal (REGISTERED) where there is one."""
    outdir = plan.outdir
    make_directory(outdir)
    make_directory(outdir / "traces")
    order = run_order(plan.scenarios, plan.repeat, plan.seed)
    results = _results_at_start(plan, host)

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
            if progress:
                progress(index, len(order), f"{scenario.name} (round {round_no or 'warm-up'})")
            run = _placed_run(plan, results, index, round_no, scenario, registered, not_restored, host)
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


def _results_at_start(plan: ExperimentPlan, host: LeverHost) -> ExperimentResults:
    """The results before any run: what the plan asks, the host's environment, and the doctor's findings."""
    pinned = {tuple(sorted(s.mitigations.cpus or ())) for s in plan.scenarios}
    return ExperimentResults(
        status="running",
        command=plan.command,
        repeat=plan.repeat,
        seed=plan.seed,
        metric=plan.metric.name,
        metric_name=plan.metric.shown_name,
        higher_is_better=plan.metric.higher_is_better,
        gpu_activity=plan.gpu_activity,
        scenarios=[ScenarioInfo.of(s) for s in plan.scenarios],
        environment=environment(),
        owner=Owner(**custodian.owner()),
        runs=[],
        doctor=doctor_findings(host, set(pinned.pop()) if len(pinned) == 1 else None),
        grid=plan.grid,
    )


def _placed_run(
    plan: ExperimentPlan,
    results: ExperimentResults,
    index: int,
    round_no: int,
    scenario: Scenario,
    registered: Journal | None,
    not_restored: list[str],
    host: LeverHost,
) -> Run:
    """The run at INDEX of the order, its files named in the results directory. A run that could not start
    its loads or levers, or left a host setting changed, fails the experiment (in RESULTS too)."""
    outdir = plan.outdir
    # a grid's "compute/fifo:10" names no directory: only safe characters in file names
    run_name = f"{index:03d}-{re.sub(r'[^A-Za-z0-9_.=+-]', '-', scenario.name)}-r{round_no}"
    trace = outdir / "traces" / f"{run_name}.lg"
    try:
        outcome = run_once(
            plan,
            scenario,
            trace,
            stderr_path=outdir / "stderr" / f"{run_name}.txt",
            journal=registered,
            not_restored=not_restored,
            host=host,
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
    return Run.placed(
        outcome,
        index=index,
        round=round_no,
        scenario=scenario.name,
        warmup=round_no == 0,
        trace=str(trace.relative_to(outdir)),
    )
