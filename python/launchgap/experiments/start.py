"""What every command that runs an experiment shares (noisy-neighbor, run, levers), given the command's
ExperimentPlan: the checks made before anything runs, the progress bar, the run itself, stopping on Ctrl-C or
SIGTERM with the host put back, and the results shown at the end."""

from __future__ import annotations

import sys

from launchgap.cli_common import EXIT_INTERRUPTED, Terminated, console, fail, note
from launchgap.console import literal
from launchgap.experiments.plan import ExperimentPlan
from launchgap.experiments.results import RESULTS_FILE
from launchgap.experiments.show import EXIT_EXPERIMENT_FAILED, host_not_restored, show


def run_and_show(plan: ExperimentPlan) -> None:
    """Checks the plan, then the host; runs the experiment; shows its results."""
    from launchgap.experiments.levers import LeverHost

    problem = plan.problem()
    if problem:
        fail(problem)
    host = LeverHost()
    _check_the_host(plan, host)
    console.print(
        f"experiment: {len(plan.scenarios)} scenarios x {plan.repeat} repeats + warm-up, order shuffled with seed "
        f"{plan.seed}; results in {literal(plan.outdir)}"
    )
    for s in plan.scenarios:
        console.print(f"  {literal(s.name)}: {literal(s.describe())}")
    _run_with_progress(plan, host)
    show(plan.outdir)


def _check_the_host(plan: ExperimentPlan, host) -> None:
    """Every error that can be known now, one line each, before the warm-up run and not after it; and the
    results an experiment killed before left, said."""
    from launchgap.experiments.custodian import stale_results
    from launchgap.experiments.runner import ExperimentError, preflight

    try:
        preflight(plan, host=host)
    except ExperimentError as err:
        fail(str(err))
    if plan.outdir.exists() and (plan.outdir / RESULTS_FILE).exists():
        fail(f"{plan.outdir}: already holds an experiment's results; choose another -o")
    for line in stale_results(host):
        note(f"warning: {line}")


def _run_with_progress(plan: ExperimentPlan, host) -> None:
    """The experiment under a progress bar; interrupted or failed, the command ends here, saying where the
    partial results are and any host setting left changed."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from launchgap.experiments.runner import ExperimentError, NotStartedError, run_experiment

    outdir = plan.outdir
    not_restored: list[str] = []
    runs_in_all = len(plan.scenarios) * plan.repeat + 1  # the warm-up's too
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("starting", total=runs_in_all)

        def progress(index, total, what):
            bar.update(task, completed=index, description=literal(what))

        try:
            run_experiment(plan, progress=progress, not_restored=not_restored, host=host)
            bar.update(task, completed=runs_in_all, description="done")
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
