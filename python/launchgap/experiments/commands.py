"""`launchgap experiment`: the command group and every command in it. noisy-neighbor and run (scenarios,
built in or from a file), levers (the kernel-tuning study's grid), show (the tables of a finished or
interrupted experiment), compare (runs from several boots or hosts side by side). cli.py adds the group
with one add_command, as it does the doctor's.

Modules that load numpy and scipy (the runner, the statistics) are imported inside the commands: the
group is built for every launchgap command, most of which never run an experiment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchgap.cli_common import fail
from launchgap.doctor.parse import is_number
from launchgap.output import PERMISSIONS_HELP

if TYPE_CHECKING:
    from launchgap.experiments.plan import Metric

DEFAULT_IO_DIR = Path("/var/tmp")


def what_is_measured(command):
    """The options every experiment that runs a workload takes: how many runs, and what each measures."""
    command = click.option(
        "--metric-name",
        metavar="NAME",
        help="What tables and plots call the metric (default: the text beside the number in --metric, e.g. tok/s).",
    )(command)
    command = click.option(
        "--metric",
        default=r"tok/s: ([0-9.]+)",
        show_default=True,
        help="Regex whose first group is the workload's throughput, or 'wall' for wall time.",
    )(command)
    return click.option(
        "--repeat", default=5, show_default=True, help="Measured runs per scenario, after one warm-up."
    )(command)


gpu_activity_option = click.option(
    "--gpu-activity",
    is_flag=True,
    help="Record each run with --gpu-activity (CUPTI), so that the GPU idle each scenario's interference caused "
    "is exact, not bounds (docs/gpu-time.md).",
)


@click.group("experiment")
def experiment() -> None:
    """Run a workload under noisy-neighbour and mitigation scenarios, repeated, with statistics."""


@experiment.command("noisy-neighbor", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@what_is_measured
@click.option(
    "--scenarios",
    default="baseline,cpu,network,disk,heavy,pinned",
    show_default=True,
    help="Built-in scenarios, comma separated.",
)
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), help="Results directory (default results/experiment-TIME)."
)
@click.option("--seed", type=int, help="Seed for the run order (printed when chosen at random).")
@click.option(
    "--disk-dir", type=click.Path(file_okay=False), help="Where fio writes (a real block device; default /var/tmp)."
)
@gpu_activity_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def noisy_neighbor(repeat, metric, metric_name, scenarios, output, seed, disk_dir, gpu_activity, command) -> None:
    """The study's scenarios: baseline, cpu (stress-ng), network (iperf3 on loopback),
    disk (fio direct I/O), heavy (all three), pinned (cpu load, workload pinned and niced)."""
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import builtin
    from launchgap.experiments.start import run_and_show

    try:
        chosen = builtin([s.strip() for s in scenarios.split(",") if s.strip()])
    except MitigationError as err:
        fail(str(err))
    if chosen[0].name != "baseline":
        chosen = builtin(["baseline"]) + [s for s in chosen if s.name != "baseline"]
    run_and_show(_scenario_plan(chosen, command, repeat, metric, metric_name, output, seed, disk_dir, gpu_activity))


def _scenario_plan(
    chosen, command, repeat, metric, metric_name, output, seed, disk_dir, gpu_activity, allow_rt_unthrottled=False
):
    """The plan of a scenario experiment (noisy-neighbor's built-in ones, run's from a file), made from the options
    both commands share."""
    from launchgap.experiments.plan import ExperimentPlan, Metric, results_directory, seed_or_random

    return ExperimentPlan(
        scenarios=chosen,
        command=list(command),
        repeat=repeat,
        metric=Metric.of_option(metric, metric_name),
        outdir=results_directory(output, "experiment"),
        seed=seed_or_random(seed),
        disk_dir=Path(disk_dir) if disk_dir else None,
        allow_rt_unthrottled=allow_rt_unthrottled,
        gpu_activity=gpu_activity,
    )


@experiment.command("run", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@click.argument("scenario_file", type=click.Path(dir_okay=False, exists=True))
@what_is_measured
@click.option("-o", "--output", type=click.Path(file_okay=False))
@click.option("--seed", type=int)
@click.option("--disk-dir", type=click.Path(file_okay=False))
@click.option(
    "--allow-rt-unthrottled",
    is_flag=True,
    help="Run SCHED_FIFO/SCHED_RR scenarios even with RT throttling off (sched_rt_runtime_us = -1).",
)
@gpu_activity_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def experiment_run(
    scenario_file, repeat, metric, metric_name, output, seed, disk_dir, allow_rt_unthrottled, gpu_activity, command
) -> None:
    """Scenarios from a TOML file ([scenarios.NAME] with loads, mitigations, env). Mitigations: cpus, nice,
    policy (other, batch, idle, fifo:P, rr:P), cpuset, irq_away, and the host-wide levers isolate
    ("isolated" or "root"), workqueue_away, timer_migration (0 or 1), preempt (none, voluntary, full,
    lazy): docs/lever-experiments.md. examples/ has a commented file of each kind, with the command that
    runs it."""
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import from_toml
    from launchgap.experiments.start import run_and_show

    try:
        chosen = from_toml(scenario_file)
    except MitigationError as err:
        fail(str(err))
    plan = _scenario_plan(
        chosen, command, repeat, metric, metric_name, output, seed, disk_dir, gpu_activity, allow_rt_unthrottled
    )
    run_and_show(plan)


@experiment.command("show", epilog=PERMISSIONS_HELP)
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
def experiment_show(directory: str) -> None:
    """Tables and plots from a finished (or interrupted) experiment."""
    from launchgap.experiments.show import show

    show(Path(directory))


def _cpus(text: str | None) -> list[int] | None:
    from launchgap.doctor.parse import ParseError, parse_cpulist

    if text is None:
        return None
    try:
        cpus = sorted(parse_cpulist(text))
    except ParseError as err:
        fail(f"--cpus {text}: {err}")
    if not cpus:
        fail(f"--cpus {text!r} names no CPU")
    return cpus


def _sizes(values: tuple[str, ...]) -> dict[str, str]:
    from launchgap.experiments.grid import CLASSES, check_size
    from launchgap.experiments.levers import MitigationError

    out = {}
    for value in values:
        cls, sep, size = value.partition("=")
        if not sep or cls not in CLASSES or not size:
            fail(
                f"--size {value}: give CLASS=N, CLASS one of {', '.join(CLASSES)} (N: rows for compute and mixed, "
                f"bytes for memory and io, K/M/G allowed)"
            )
        try:
            out[cls] = check_size(cls, size)
        except MitigationError as err:
            fail(str(err))
    return out


def _io_dir_problem(directory: Path) -> str | None:
    from launchgap.experiments.loadgen import backing_device

    if not directory.is_dir():
        return f"--dir {directory}: no such directory"
    fstype, major, _ = backing_device(directory)
    if fstype in ("tmpfs", "ramfs") or major == 0:
        return (
            f"--dir {directory} is on {fstype}, not a block device: the io and mixed workloads' writes and "
            f"fsyncs would measure nothing there; choose a directory on a disk"
        )
    return None


@experiment.command("levers", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@click.option(
    "--classes",
    default="compute,memory,io,mixed",
    show_default=True,
    help="Workload classes of the built-in lever-workload (not with -- WORKLOAD).",
)
@click.option(
    "--policies",
    default="other,fifo:10,rr:10",
    show_default=True,
    help="Scheduler policies: other, batch, idle, fifo:P, rr:P (P 1..49). SCHED_OTHER is always run: "
    "every cell is compared with it.",
)
@click.option(
    "--levers",
    "lever_list",
    default="",
    metavar="LIST",
    help="More cells, each SCHED_OTHER plus levers: isolate, isolate=root, irq-away, workqueue-away, "
    "timer-migration=0|1, preempt=none|voluntary|full|lazy; join several with + "
    "(isolate+irq-away). Refused in one line if this host cannot apply one.",
)
@click.option("--repeat", default=5, show_default=True, help="Measured runs per cell, after one warm-up.")
@click.option("--threads", default=2, show_default=True, help="Worker threads of the built-in workload.")
@click.option(
    "--cpus",
    help="The workload's CPUs (e.g. 1 or 0-1): the process and its workers are pinned there; "
    "isolate, irq-away and workqueue-away keep the kernel off them.",
)
@click.option(
    "--disturb",
    metavar="SPIN:PERIOD",
    help="The study's disturbance thread: SPIN ms of CPU every PERIOD ms (e.g. 20:300).",
)
@click.option(
    "--size",
    "sizes",
    multiple=True,
    metavar="CLASS=N",
    help="The built-in workload's size for a class (rows for compute/mixed, bytes for memory/io).",
)
@click.option(
    "--dir",
    "io_dir",
    type=click.Path(file_okay=False),
    default=str(DEFAULT_IO_DIR),
    show_default=True,
    help="Where the io and mixed classes write (a real disk; tmpfs is refused).",
)
@click.option(
    "--metric",
    default="wall",
    show_default=True,
    help="With -- WORKLOAD: a regex whose first group is its measure, or 'wall' for wall time.",
)
@click.option(
    "--metric-name",
    metavar="NAME",
    help="What tables and plots call the measure (default: the text beside the number in --metric, e.g. elapsed_s).",
)
@click.option("--higher-is-better", is_flag=True, help="With -- WORKLOAD and --metric: larger values are better.")
@click.option(
    "--allow-rt-unthrottled",
    is_flag=True,
    help="Run fifo/rr even with RT throttling off (sched_rt_runtime_us = -1): a spinning RT task can "
    "then hang its CPUs.",
)
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), help="Results directory (default results/levers-TIME)."
)
@click.option("--seed", type=int, help="Seed for the run order (printed when chosen at random).")
@click.argument("workload", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def levers_command(
    ctx,
    classes,
    policies,
    lever_list,
    repeat,
    threads,
    cpus,
    disturb,
    sizes,
    io_dir,
    metric,
    metric_name,
    higher_is_better,
    allow_rt_unthrottled,
    output,
    seed,
    workload,
) -> None:
    """The kernel-tuning study's grid: each workload class (compute, memory, io, mixed: the built-in
    lever-workload, whose elapsed_s is the measure, lower is better) under each scheduler policy, and
    any other lever this host can apply, every cell run N times interleaved, recorded and compared with
    SCHED_OTHER (mean, n-1 sd, p95, 95% interval, Welch's test, time taken by cause). Every setting is read
    back before the workload starts and checked in the trace. `-- WORKLOAD` runs your command in every
    cell instead."""
    from launchgap.experiments import grid
    from launchgap.experiments.levers import MitigationError
    from launchgap.experiments.plan import ExperimentPlan, results_directory, seed_or_random
    from launchgap.experiments.start import run_and_show

    workload = list(workload)
    _refuse_the_other_workloads_options(ctx, workload, metric, higher_is_better)
    if threads < 1:
        fail("--threads must be at least 1")
    chosen_classes, chosen_policies, variants = _grid_axes(classes, policies, lever_list)
    size_by_class = _sizes(sizes)
    _check_disturb(disturb)
    pinned = _cpus(cpus)
    if not workload:
        _check_built_in_workload(chosen_classes, Path(io_dir))
    lever_grid = grid.LeverGrid(
        classes=chosen_classes,
        policies=chosen_policies,
        lever_variants=variants,
        threads=threads,
        cpus=pinned,
        disturb=disturb,
        io_dir=Path(io_dir),
        sizes=size_by_class,
        workload=workload,
    )
    try:
        scenarios = lever_grid.scenarios()
    except MitigationError as err:
        fail(str(err))
    plan = ExperimentPlan(
        scenarios=scenarios,
        command=workload,
        repeat=repeat,
        metric=_lever_metric(workload, metric, higher_is_better, metric_name),
        outdir=results_directory(output, "levers"),
        seed=seed_or_random(seed),
        allow_rt_unthrottled=allow_rt_unthrottled,
        grid=lever_grid.layout(),
        focus_threads=lever_grid.focus_threads,
    )
    run_and_show(plan)


def _refuse_the_other_workloads_options(ctx, workload: list[str], metric: str, higher_is_better: bool) -> None:
    """--classes is the built-in workload's; --metric and --higher-is-better are a workload of the user's."""
    if workload and ctx.get_parameter_source("classes") is not click.core.ParameterSource.DEFAULT:
        fail("--classes chooses the built-in workloads; with -- WORKLOAD every cell runs your command")
    if not workload and (metric != "wall" or higher_is_better):
        fail("--metric and --higher-is-better are for -- WORKLOAD; the built-in workload's measure is its elapsed_s")


def _grid_axes(classes: str, policies: str, lever_list: str) -> tuple[list[str], list[str], list[str]]:
    """--classes, --policies and --levers, each checked: the grid's classes, policies and lever variants."""
    from launchgap.experiments import grid
    from launchgap.experiments.levers import MitigationError

    try:
        chosen_classes = grid.parse_classes(classes)
        chosen_policies = grid.parse_policies(policies)
        variants = [v.strip() for v in lever_list.split(",") if v.strip()]
        for variant in variants:
            grid.lever_options(variant)
    except MitigationError as err:
        fail(str(err))
    return chosen_classes, chosen_policies, variants


def _check_disturb(disturb: str | None) -> None:
    if disturb is None:
        return
    spin, sep, period = disturb.partition(":")
    if not (sep and is_number(spin) and is_number(period) and 1 <= int(spin) <= int(period)):
        fail(f"--disturb {disturb}: give SPIN:PERIOD in ms, 1 <= SPIN <= PERIOD (the study's spike: 20:300)")


def _check_built_in_workload(classes: list[str], io_dir: Path) -> None:
    """The built-in workload is built, and where a class writes, it writes to a disk."""
    from launchgap.experiments import grid

    if not grid.LEVER_WORKLOAD.exists():
        fail(f"{grid.LEVER_WORKLOAD}: the built-in lever workload is not built (make setup)")
    if set(classes) & set(grid.WRITING_CLASSES):
        problem = _io_dir_problem(io_dir)
        if problem:
            fail(problem)


def _lever_metric(workload: list[str], metric: str, higher_is_better: bool, metric_name: str | None) -> Metric:
    """The measure of a workload of the user's, as --metric says; else the built-in workload's elapsed_s."""
    from launchgap.experiments import grid
    from launchgap.experiments.plan import Metric

    if workload:
        return Metric.of_option(metric, metric_name, higher=higher_is_better)
    return Metric(grid.ELAPSED_METRIC, higher=False, label=metric_name)


# ---- compare -----------------------------------------------------------------------------------------


@experiment.command("compare", epilog=PERMISSIONS_HELP)
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option(
    "--pool",
    is_flag=True,
    help="Pool the runs of every directory into one sample per scenario; refused when their host settings differ.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --pool: pool even where the recorded environments differ (CPUs, governor, command line, "
    "tool versions); the differences are shown. Differing host settings are never pooled.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(directories: tuple[str, ...], pool: bool, force: bool, as_json: bool) -> None:
    """Experiments from different boots or hosts side by side: the boot-only levers (nohz_full,
    isolcpus, rcu_nocbs) and every other host setting the doctor recorded at each experiment's start,
    which of them differ, and each scenario's statistics per directory with Welch's test against the
    first. --pool merges the runs instead, only when no setting differs."""
    from launchgap.cli_common import console
    from launchgap.experiments.compare import CompareError, compare_experiments
    from launchgap.experiments.show import results_or_fail

    loaded = [(Path(d), results_or_fail(Path(d))) for d in directories]
    try:
        if force and not pool:
            fail("--force is for --pool")
        comparison = compare_experiments(loaded, pool=pool, force=force)
    except CompareError as err:
        fail(str(err))
    if as_json:
        click.echo(json.dumps(comparison, indent=2))
        return
    from launchgap.experiments.compare import render

    render(comparison, console)
