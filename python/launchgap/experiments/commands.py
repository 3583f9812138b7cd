"""`launchgap experiment levers` (the kernel-tuning study's grid) and `launchgap experiment compare`
(runs from several boots or hosts side by side). cli.py adds both to its `experiment` group."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from launchgap.doctor.parse import is_number
from launchgap.output import PERMISSIONS_HELP, OutputError, write_text
from launchgap.console import literal, shown

DEFAULT_IO_DIR = Path("/var/tmp")


def _cli():
    # cli.py imports this module to register the commands; its helpers are reached lazily
    from launchgap import cli

    return cli


def _cpus(text: str | None) -> list[int] | None:
    from launchgap.cli_common import fail
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
    from launchgap.cli_common import fail
    from launchgap.experiments.grid import CLASSES, check_size
    from launchgap.experiments.levers import MitigationError

    out = {}
    for value in values:
        cls, sep, size = value.partition("=")
        if not sep or cls not in CLASSES or not size:
            fail(f"--size {value}: give CLASS=N, CLASS one of {', '.join(CLASSES)} (N: rows for compute and mixed, "
                 f"bytes for memory and io, K/M/G allowed)")
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
        return (f"--dir {directory} is on {fstype}, not a block device: the io and mixed workloads' writes and "
                f"fsyncs would measure nothing there; choose a directory on a disk")
    return None


@click.command("levers", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@click.option("--classes", default="compute,memory,io,mixed", show_default=True,
              help="Workload classes of the built-in lever-workload (not with -- WORKLOAD).")
@click.option("--policies", default="other,fifo:10,rr:10", show_default=True,
              help="Scheduler policies: other, batch, idle, fifo:P, rr:P (P 1..49). SCHED_OTHER is always run: "
                   "every cell is compared with it.")
@click.option("--levers", "lever_list", default="", metavar="LIST",
              help="More cells, each SCHED_OTHER plus levers: isolate, isolate=root, irq-away, workqueue-away, "
                   "timer-migration=0|1, preempt=none|voluntary|full|lazy; join several with + "
                   "(isolate+irq-away). Refused in one line if this host cannot apply one.")
@click.option("--repeat", default=5, show_default=True, help="Measured runs per cell, after one warm-up.")
@click.option("--threads", default=2, show_default=True, help="Worker threads of the built-in workload.")
@click.option("--cpus", help="The workload's CPUs (e.g. 1 or 0-1): the process and its workers are pinned there; "
                             "isolate, irq-away and workqueue-away keep the kernel off them.")
@click.option("--disturb", metavar="SPIN:PERIOD",
              help="The study's disturbance thread: SPIN ms of CPU every PERIOD ms (e.g. 20:300).")
@click.option("--size", "sizes", multiple=True, metavar="CLASS=N",
              help="The built-in workload's size for a class (rows for compute/mixed, bytes for memory/io).")
@click.option("--dir", "io_dir", type=click.Path(file_okay=False), default=str(DEFAULT_IO_DIR), show_default=True,
              help="Where the io and mixed classes write (a real disk; tmpfs is refused).")
@click.option("--metric", default="wall", show_default=True,
              help="With -- WORKLOAD: a regex whose first group is its measure, or 'wall' for wall time.")
@click.option("--metric-name", metavar="NAME",
              help="What tables and plots call the measure (default: the text beside the number in --metric, "
                   "e.g. elapsed_s).")
@click.option("--higher-is-better", is_flag=True, help="With -- WORKLOAD and --metric: larger values are better.")
@click.option("--allow-rt-unthrottled", is_flag=True,
              help="Run fifo/rr even with RT throttling off (sched_rt_runtime_us = -1): a spinning RT task can "
                   "then hang its CPUs.")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Results directory (default results/levers-TIME).")
@click.option("--seed", type=int, help="Seed for the run order (printed when chosen at random).")
@click.argument("workload", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def levers_command(ctx, classes, policies, lever_list, repeat, threads, cpus, disturb, sizes, io_dir, metric,
                   metric_name, higher_is_better, allow_rt_unthrottled, output, seed, workload) -> None:
    """The kernel-tuning study's grid: each workload class (compute, memory, io, mixed: the built-in
    lever-workload, whose elapsed_s is the measure, lower is better) under each scheduler policy, and
    any other lever this host can apply, every cell run N times interleaved, recorded and compared with
    SCHED_OTHER (mean, n-1 sd, p95, 95% interval, Welch's test, time taken by cause). Every setting is read
    back before the workload starts and checked in the trace. `-- WORKLOAD` runs your command in every
    cell instead."""
    import time

    from launchgap.cli_common import fail
    from launchgap.experiments import grid
    from launchgap.experiments.levers import MitigationError
    from launchgap.experiments.runner import Metric

    cli = _cli()
    workload = list(workload)
    if workload and ctx.get_parameter_source("classes") is not click.core.ParameterSource.DEFAULT:
        fail("--classes chooses the built-in workloads; with -- WORKLOAD every cell runs your command")
    if not workload and (metric != "wall" or higher_is_better):
        fail("--metric and --higher-is-better are for -- WORKLOAD; the built-in workload's measure is its elapsed_s")
    if threads < 1:
        fail("--threads must be at least 1")
    try:
        chosen_classes = grid.parse_classes(classes)
        chosen_policies = grid.parse_policies(policies)
        variants = [v.strip() for v in lever_list.split(",") if v.strip()]
        for variant in variants:
            grid.lever_options(variant)
    except MitigationError as err:
        fail(str(err))
    size_by_class = _sizes(sizes)
    if disturb is not None:
        spin, sep, period = disturb.partition(":")
        if not (sep and is_number(spin) and is_number(period) and 1 <= int(spin) <= int(period)):
            fail(f"--disturb {disturb}: give SPIN:PERIOD in ms, 1 <= SPIN <= PERIOD (the study's spike: 20:300)")
    pinned = _cpus(cpus)
    if not workload:
        if not grid.LEVER_WORKLOAD.exists():
            fail(f"{grid.LEVER_WORKLOAD}: the built-in lever workload is not built (make setup)")
        if set(chosen_classes) & set(grid.WRITING_CLASSES):
            problem = _io_dir_problem(Path(io_dir))
            if problem:
                fail(problem)
    try:
        scenarios = grid.build(chosen_classes, chosen_policies, variants, threads=threads, cpus=pinned,
                               disturb=disturb, io_dir=Path(io_dir), sizes=size_by_class, workload=workload or None)
    except MitigationError as err:
        fail(str(err))
    if workload:
        chosen_metric = Metric(None if metric == "wall" else metric, higher=higher_is_better, label=metric_name)
    else:
        chosen_metric = Metric(grid.ELAPSED_METRIC, higher=False, label=metric_name)
    extra = {"grid": {"classes": [grid.CUSTOM_CLASS] if workload else chosen_classes,
                      "variants": chosen_policies + variants, "baseline_variant": grid.BASELINE,
                      "threads": threads, "cpus": pinned, "disturb": disturb,
                      "workload": "custom" if workload else "lever-workload"}}
    cli._run_experiment(scenarios, workload, repeat, chosen_metric,
                        output or f"results/levers-{time.strftime('%Y%m%d-%H%M%S')}", seed, None,
                        allow_rt_unthrottled=allow_rt_unthrottled, extra=extra,
                        focus_threads=None if workload else grid.WORKER_THREADS, need_command=False)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def vm_caution(results: dict) -> str | None:
    """The doctor's virtualisation verdict, when the experiment ran in a VM (the study's caution)."""
    for check in (results.get("doctor") or {}).get("checks", []):
        if check.get("id") == "cpu.hypervisor" and check.get("status") == "warn":
            return f"caution: {check['summary']}"
    return None


def show_grid(outdir: Path, results: dict) -> None:
    from rich.text import Text

    from launchgap.cli_common import console, fail, note
    from launchgap.experiments.summary import SummaryError, failures, metric_label, summarize_grid
    from launchgap.views.words import speed, speed_interval

    cli = _cli()
    try:
        summary = summarize_grid(results)
    except SummaryError as err:
        fail(f"{outdir / 'results.json'}: damaged experiment results ({err})")
    written = []
    try:
        write_text(outdir / "summary.json", json.dumps(summary, indent=2))
        written = [outdir / "summary.json", *plot_grid(results, summary, outdir)]
    except (OSError, OutputError) as err:
        note(f"note: {outdir}: summary.json and the plot were not written ({getattr(err, 'strerror', None) or err})")
    direction = "higher" if results["higher_is_better"] else "lower"
    table = Table(title=Text(shown(f"{metric_label(results)} ({direction} is better), each cell vs SCHED_OTHER of its "
                             f"class (means, Welch's 95% CI); status: {results['status']}")), title_justify="left")
    for col in ("class", "variant", "runs", "failed", "verified", "mean", "sd", "p95", "95% CI", "vs other",
                "vs other 95% CI", "p (Welch)", "preempted", "run-queue", "IRQ", "top culprit"):
        table.add_column(col, justify="left" if col in ("class", "variant", "top culprit") else "right")
    for name, e in summary.items():
        if not e.get("runs"):
            table.add_row(literal(e["class"] or name), literal(e["variant"] or ""), "0", literal(e["failed"]), "",
                          *[""] * 11)
            continue
        m, v = e["metric"], e.get("vs_baseline")
        table.add_row(
            literal(e["class"]), literal(e["variant"]), str(e["runs"]), literal(e["failed"]),
            literal(f"{e['verified']}/{e['runs']}"),
            _num(m["mean"]), _num(m["sd"]), _num(m["p95"]),
            f"{_num(m['ci_low'])}..{_num(m['ci_high'])}" if m["ci_low"] is not None else "-",
            speed(v["mean_slowdown_percent"]) if v else "-",
            speed_interval(v["slowdown_ci_low"], v["slowdown_ci_high"]) if v else "-",
            f"{v['welch_p']:.3f}" if v and v["welch_p"] is not None else "-",
            _ms(e.get("preempted_ms")), _ms(e.get("runqueue_ms")), _ms(e.get("irq_ms")),
            literal(e.get("top_culprit") or "-"))
    console.print(table)
    if written:
        console.print(literal(f"per-run data: {outdir / 'results.json'}; statistics: {outdir / 'summary.json'}; "
                              f"plot: " + ", ".join(str(p) for p in written[1:])))
    caution = vm_caution(results)
    if caution:
        note(caution)
    problems = failures(results, summary)
    for line in problems:
        note(line)
    if results.get("host_not_restored"):
        cli._host_not_restored(results["host_not_restored"], outdir)
    if problems or results.get("host_not_restored") or results["status"] in ("failed", "killed"):
        sys.exit(cli.EXIT_EXPERIMENT_FAILED)


def grid_figure(results: dict, summary: dict):
    """Each class's cells: the mean with its 95% interval."""
    from launchgap.experiments.summary import metric_label, pyplot_agg

    plt = pyplot_agg()
    classes = list(dict.fromkeys(e["class"] for e in summary.values()))
    variants = list(dict.fromkeys(e["variant"] for e in summary.values()))
    fig, axes = plt.subplots(1, len(classes), figsize=(3.2 * len(classes) + 1, 4), squeeze=False,
                             layout="constrained")
    for ax, cls in zip(axes[0], classes):
        cells = [(v, summary.get(f"{cls}/{v}")) for v in variants]
        cells = [(v, e) for v, e in cells if e and e.get("runs")]
        means = [e["metric"]["mean"] for _, e in cells]
        errors = [(e["metric"]["ci_high"] - e["metric"]["mean"]) if e["metric"]["ci_high"] is not None else 0
                  for _, e in cells]
        ax.bar([v for v, _ in cells], means, yerr=errors, capsize=4, color="#4c72b0")
        ax.set_title(cls)
        ax.tick_params(axis="x", rotation=30)
    axes[0][0].set_ylabel(f"{metric_label(results)}\n(mean, 95% interval)")
    return fig


def plot_grid(results: dict, summary: dict, outdir: Path) -> list[Path]:
    from launchgap.experiments.summary import save_figure

    return [save_figure(grid_figure(results, summary), outdir / "levers.png", dpi=110)]


# ---- compare -----------------------------------------------------------------------------------------

@click.command("compare", epilog=PERMISSIONS_HELP)
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--pool", is_flag=True, help="Pool the runs of every directory into one sample per scenario; "
                                           "refused when their host settings differ.")
@click.option("--force", is_flag=True,
              help="With --pool: pool even where the recorded environments differ (CPUs, governor, command line, "
                   "tool versions); the differences are shown. Differing host settings are never pooled.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(directories: tuple[str, ...], pool: bool, force: bool, as_json: bool) -> None:
    """Experiments from different boots or hosts side by side: the boot-only levers (nohz_full,
    isolcpus, rcu_nocbs) and every other host setting the doctor recorded at each experiment's start,
    which of them differ, and each scenario's statistics per directory with Welch's test against the
    first. --pool merges the runs instead, only when no setting differs."""
    from launchgap.cli_common import console, fail
    from launchgap.experiments.compare import CompareError, compare_experiments

    cli = _cli()
    loaded = [(Path(d), cli._read_results(Path(d))) for d in directories]
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
