"""What every command that runs an experiment shares (noisy-neighbor, run, levers): the checks made before
anything runs, the progress bar, the run itself, stopping on Ctrl-C or SIGTERM with the host put back,
and the results shown at the end."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

from launchgap.cli_common import EXIT_INTERRUPTED, Terminated, console, fail, note
from launchgap.console import literal
from launchgap.experiments.results import RESULTS_FILE, GridInfo
from launchgap.experiments.show import EXIT_EXPERIMENT_FAILED, host_not_restored, show

# runs per scenario: far more than statistics need, and each run is a recorded trace on disk
MAX_REPEAT = 1000


def results_dir_problem(outdir: Path) -> str | None:
    """Why OUTDIR cannot hold an experiment's results (checked before anything runs), or None."""
    resolved = Path(os.path.realpath(outdir))
    for tree in ("proc", "sys", "dev"):
        if resolved == Path("/", tree) or Path("/", tree) in resolved.parents:
            if tree == "dev" and Path("/dev/shm") in [resolved, *resolved.parents]:
                break
            return f"is in the kernel's {tree} file system, not a place for results"
    existing = resolved
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def run_and_show(
    scenarios,
    command,
    repeat,
    metric,
    output,
    seed,
    disk_dir,
    *,
    allow_rt_unthrottled=False,
    grid: GridInfo | None = None,
    focus_threads=None,
    need_command=True,
    metric_name=None,
    gpu_activity=False,
) -> None:
    """METRIC: a --metric value ('wall' or a regex), or a runner Metric; METRIC_NAME: --metric-name; GRID: a
    lever grid's layout, kept with the results."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from launchgap.experiments.custodian import stale_results
    from launchgap.experiments.levers import LeverHost
    from launchgap.experiments.runner import ExperimentError, Metric, NotStartedError, preflight, run_experiment

    if need_command and not command:
        fail("a command to run is required after --")
    if repeat < 2:
        fail("--repeat must be at least 2 (statistics need a spread)")
    if repeat > MAX_REPEAT:
        fail(f"--repeat {repeat}: at most {MAX_REPEAT} runs per scenario")
    outdir = Path(output or f"results/experiment-{time.strftime('%Y%m%d-%H%M%S')}")
    problem = results_dir_problem(outdir)
    if problem:
        fail(f"-o {outdir}: {problem}")
    chosen_metric = (
        metric if isinstance(metric, Metric) else Metric(None if metric == "wall" else metric, label=metric_name)
    )
    host = LeverHost()
    try:
        # every error that can be known now comes before the warm-up run, not after it
        preflight(
            list(command),
            scenarios,
            chosen_metric,
            Path(disk_dir) if disk_dir else None,
            host=host,
            allow_rt_unthrottled=allow_rt_unthrottled,
        )
    except ExperimentError as err:
        fail(str(err))
    if outdir.exists() and (outdir / RESULTS_FILE).exists():
        fail(f"{outdir}: already holds an experiment's results; choose another -o")
    for line in stale_results(host):
        note(f"warning: {line}")
    seed = seed if seed is not None else random.randrange(1 << 31)
    console.print(
        f"experiment: {len(scenarios)} scenarios x {repeat} repeats + warm-up, order shuffled with seed "
        f"{seed}; results in {literal(outdir)}"
    )
    for s in scenarios:
        console.print(f"  {literal(s.name)}: {literal(s.describe())}")
    not_restored: list[str] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("starting", total=len(scenarios) * repeat + 1)

        def progress(index, total, what):
            bar.update(task, completed=index, description=literal(what))

        try:
            run_experiment(
                list(command),
                scenarios,
                repeat,
                chosen_metric,
                outdir,
                seed,
                Path(disk_dir) if disk_dir else None,
                progress=progress,
                not_restored=not_restored,
                host=host,
                grid=grid,
                focus_threads=focus_threads,
                gpu_activity=gpu_activity,
            )
            bar.update(task, completed=len(scenarios) * repeat + 1, description="done")
        except (KeyboardInterrupt, Terminated) as stopped:
            bar.stop()
            if not_restored:
                host_not_restored(not_restored, outdir)
            note(f"interrupted: everything stopped and restored; partial results (marked incomplete) in {outdir}")
            sys.exit(stopped.code if isinstance(stopped, Terminated) else EXIT_INTERRUPTED)
        except NotStartedError as err:
            bar.stop()
            fail(str(err), EXIT_EXPERIMENT_FAILED)
        except ExperimentError as err:
            bar.stop()
            if not_restored:
                host_not_restored(not_restored, outdir)
            fail(f"{err} (partial results in {outdir})", EXIT_EXPERIMENT_FAILED)
    show(outdir)
