"""launchgap's command line: parses arguments, then calls the pipeline."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

import launchgap.quiet_blas  # noqa: F401  (first: before anything imports numpy)
from launchgap import __version__
from launchgap.analysis.diff import diff_reports
from launchgap.analysis.report import MINOR_CAVEAT_PERCENT, build_report
from launchgap.cli_common import (
    EXIT_INTERRUPTED,
    Terminated,
    check_output,
    console,
    err_console,
    exit_cleanly_on_sigterm,
    fail,
    finite_seconds,
    load,
    note,
    safe_output,
    warn_damage,
)
from launchgap.doctor.command import doctor
from launchgap.exports.study_csv import write_study_csv
from launchgap.held_memory import hold_freed_memory
from launchgap.inputs import InputError, JsonError, read_json
from launchgap.output import PERMISSIONS_HELP, OutputError, write_text
from launchgap.recorder import ENV_OVERRIDE, MONITOR_ENV_OVERRIDE, find_monitor, find_recorder
from launchgap.trace import Event
from launchgap.console import literal, shown
from launchgap.views import words
from launchgap.views.cudasim_truth import render_truth
from launchgap.views.diff import render_diff
from launchgap.views.terminal import CULPRIT_GROUPINGS, render
from launchgap.workloads.cudasim_truth import TruthError, load_truth


def recorder_binary_hint() -> str:
    return f"build it with `make setup`, put launchgap-record on PATH, or set {ENV_OVERRIDE}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=PERMISSIONS_HELP)
@click.version_option(__version__, prog_name="launchgap")
def main() -> None:
    """Measure how the Linux scheduler and interrupts steal time from a workload,
    above all the CPU thread that launches GPU kernels."""
    exit_cleanly_on_sigterm()


@main.command(
    "record",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("recorder_args", nargs=-1, type=click.UNPROCESSED)
def record(recorder_args: tuple[str, ...]) -> None:
    """Trace a command, processes (-p) or the whole system (--system) into a
    trace file. Runs the standalone launchgap-record binary; see `launchgap
    record --help`."""
    binary = find_recorder()
    if binary is None or not binary.exists():
        fail(f"cannot find the recorder binary ({recorder_binary_hint()})")
    if not binary.is_file() or not os.access(binary, os.X_OK):
        fail(f"{binary}: not an executable recorder binary ({recorder_binary_hint()})")
    # click drops a bare "--"; the recorder needs it, so pass our argv on verbatim
    passed = sys.argv[sys.argv.index("record") + 1 :] if "record" in sys.argv else list(recorder_args)
    try:
        os.execv(str(binary), [str(binary), *passed])
    except OSError as err:
        fail(f"cannot run the recorder {binary} ({err.strerror or err}; {recorder_binary_hint()})")


@main.command(
    "monitor",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("monitor_args", nargs=-1, type=click.UNPROCESSED)
def monitor(monitor_args: tuple[str, ...]) -> None:
    """Serve in-kernel aggregates of CUDA launches, launch gaps, scheduling
    and interrupts to Prometheus until stopped (docs/monitor.md). Runs the
    standalone launchgap-monitor binary; see `launchgap monitor --help`."""
    binary = find_monitor()
    if binary is None or not binary.exists():
        fail("cannot find the monitor binary (build it with `make setup`, put launchgap-monitor on PATH, "
             f"or set {MONITOR_ENV_OVERRIDE})")
    passed = sys.argv[sys.argv.index("monitor") + 1 :] if "monitor" in sys.argv else list(monitor_args)
    os.execv(str(binary), [str(binary), *passed])


def _load(path: str, warn: bool = True):
    return load(path, warn)


# --strict: exit status when a metric rests on events that were lost
EXIT_LOST_EVENTS = 3


def _require_cgroups(path: str, result) -> None:
    """--culprits-by cgroup on a trace that does not say which cgroup each task was in: one line, and out."""
    if result.taken.culprits_by_cgroup is None:
        fail(f"{path}: the trace does not record each task's cgroup (recorded by an older launchgap, imported, or "
             "a study CSV), so its culprits cannot be grouped by cgroup; record it again with this launchgap")


@main.command("report", epilog=PERMISSIONS_HELP)
@click.argument("trace", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (docs/report-schema.md).")
@click.option("--csv", "csv_path", type=click.Path(), help="Also write the study's 19-column CSV here.")
@click.option("--strict", is_flag=True,
              help=f"Exit {EXIT_LOST_EVENTS} if lost events affect any metric, or the trace is incomplete (cut short, "
                   "or damaged rows left out).")
@click.option("--culprits-by", "culprits_by", type=click.Choice(CULPRIT_GROUPINGS), default="task", show_default=True,
              help="Group the culprit tables (who ran while the workload waited; who cost the GPU time) by task, or "
                   "by cgroup: each container, pod or service the tasks ran in, named by its pod and container where "
                   "its cgroup path names them (as the monitor labels them). --json always has both.")
@click.option("-v", "--verbose", is_flag=True,
              help=f"Also show the minor caveats: those bearing on at most {MINOR_CAVEAT_PERCENT:g}% of the time taken "
                   "from the workload (always in --json, under trace.minor_caveats).")
def report(trace: str, as_json: bool, csv_path: str | None, strict: bool, culprits_by: str, verbose: bool) -> None:
    """What the scheduler and interrupts took from the workload in TRACE, from whom, and what to do."""
    if csv_path:
        check_output(csv_path, [trace])
    loaded = _load(trace, warn=False)
    result = build_report(loaded)
    if culprits_by == "cgroup":
        _require_cgroups(trace, result)
    if csv_path:
        with safe_output(csv_path, [trace]) as partial:
            write_study_csv(loaded, partial)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render(result, console, culprits_by, verbose)
    # the warnings hold lost events and an incomplete trace (cut short, or damaged rows left out)
    if strict and result.warnings:
        sys.exit(EXIT_LOST_EVENTS)


@main.command("diff")
@click.argument("a", type=click.Path())
@click.argument("b", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--culprits-by", "culprits_by", type=click.Choice(["cgroup"]),
              help="Also compare the culprits of both traces by cgroup: the time each container, pod or service "
                   "took from the workload in A and in B (and, where both have GPU time, the GPU idle it caused).")
def diff(a: str, b: str, as_json: bool, culprits_by: str | None) -> None:
    """Compare two traces (e.g. baseline and noisy): every metric side by side with the change."""
    report_a, report_b = build_report(_load(a)), build_report(_load(b))
    if culprits_by == "cgroup":
        _require_cgroups(a, report_a)
        _require_cgroups(b, report_b)
    result = diff_reports(report_a, report_b, culprits_by)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    render_diff(result, a, b, console)


@main.command("export", epilog=PERMISSIONS_HELP)
@click.argument("trace", type=click.Path())
@click.option("--csv", "as_csv", is_flag=True, help="The original study's 19-column CSV layout.")
@click.option("--perfetto", "as_perfetto", is_flag=True,
              help="A Perfetto trace (ui.perfetto.dev): CPU and thread-state tracks, IRQs, CUDA calls, and with GPU activity one track per GPU stream with a flow from each launch to its kernel.")
@click.option("-o", "--output", type=click.Path(),
              help="Where to write (default: TRACE with .csv or .pftrace).")
def export(trace: str, as_csv: bool, as_perfetto: bool, output: str | None) -> None:
    """Write TRACE in another tool's format."""
    if as_csv == as_perfetto:
        fail("choose one format: --csv or --perfetto")
    out = output or str(Path(trace).with_suffix(".csv" if as_csv else ".pftrace"))
    check_output(out, [trace])
    if not Path(out).parent.exists():
        fail(f"{Path(out).parent}: no such directory")
    loaded = _load(trace)
    if as_csv:
        with safe_output(out, [trace]) as partial:
            rows = write_study_csv(loaded, partial)
        note(f"wrote {rows:,} rows to {out}")
        return
    from launchgap.exports.perfetto import write_perfetto

    try:
        with console.status(f"writing {literal(out)}"), safe_output(out, [trace]) as partial:
            counts = write_perfetto(loaded, partial)
    except ValueError as err:  # a value Perfetto's messages cannot hold: a damaged trace the checks let through
        fail(f"{trace}: cannot be written as a Perfetto trace ({' '.join(str(err).split())[:200]})")
    note(f"wrote {out}: {counts['ftrace_events']:,} scheduling and IRQ events, {counts['track_events']:,} CUDA "
         f"and vector events; open it at ui.perfetto.dev")


@main.command("import", epilog=PERMISSIONS_HELP)
@click.argument("dat", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(),
              help="The launchgap trace to write, a directory (default: DAT.lg).")
@click.option("--target", "targets", multiple=True,
              help="Command name prefix of the workload (repeatable), so `report` knows whom to analyse.")
def import_cmd(dat: str, output: str | None, targets: tuple[str, ...]) -> None:
    """Turn a trace-cmd .dat (sched_switch, wakeups, migrations, fork/exec/exit,
    IRQs, softirqs, irq_vectors) into a launchgap trace, for every view and the report."""
    from launchgap.trace.tracecmd import DatImportError, import_dat

    out = Path(output) if output else Path(dat).with_suffix(".lg")
    check_output(out, [dat])
    if not out.parent.exists():
        fail(f"{out.parent}: no such directory")
    try:
        with (console.status(f"decoding {literal(dat)} with trace-cmd"),
              safe_output(out, [dat], directory=True, replaces_trace=True) as partial):
            stats = import_dat(Path(dat), partial, list(targets))
    except DatImportError as err:
        fail(str(err))
    names = stats["events_by_name"]
    console.print(f"imported {sum(names.values()):,} events ({names.get('sched_switch', 0):,} sched_switch) over "
                  f"{(stats['end_ns'] - stats['start_ns']) / 1e9:.3f} s on {stats['cpu_count']} CPUs; "
                  f"lost: {stats['lost_events']:,}", highlight=False)
    if not targets:
        console.print("no --target given: `launchgap report` will have no workload to analyse; the views "
                      "need none", highlight=False)
    note(f"wrote {out}")


@main.command("convert", epilog=PERMISSIONS_HELP)
@click.argument("source", metavar="IN", type=click.Path())
@click.argument("output", metavar="OUT", type=click.Path())
@click.option("--format", "version", type=click.Choice(["1", "2"]),
              help="The format to write (default: the other one: 2 for a format-1 trace, 1 for a format-2 one).")
def convert_cmd(source: str, output: str, version: str | None) -> None:
    """Turn a trace into the other format: format 1 (one Arrow IPC stream, the
    legacy format) into format 2 (a directory of Parquet tables, one per event
    kind), or back. OUT is replaced only when complete."""
    from launchgap.trace.convert import convert

    check_output(output, [source])
    loaded = _load(source)
    if loaded.format not in (1, 2):
        fail(f"{source}: a study CSV, not a launchgap trace: `launchgap report` reads it as it is")
    target = int(version) if version else (2 if loaded.format == 1 else 1)
    if not Path(output).parent.exists():
        fail(f"{Path(output).parent}: no such directory")
    with console.status(f"writing {literal(output)} (format {target})"), \
            safe_output(output, [source], directory=target == 2, replaces_trace=True) as partial:
        rows = convert(loaded, partial, target)
    note(f"wrote {output}: format {target}, {rows:,} rows")


STATIC_SUFFIXES = (".png", ".pdf", ".svg")


def _view_output(output: str | None, traces: tuple[str, ...], kind: str) -> Path:
    if not traces:
        fail("name at least one trace")
    out = Path(output) if output else Path(f"{Path(traces[0]).stem}.{kind}.png")
    if out.suffix.lower() not in (*STATIC_SUFFIXES, ".html"):
        fail(f"{out}: choose .png, .pdf, .svg or .html")
    check_output(out, traces)
    if not out.parent.exists():
        fail(f"{out.parent}: no such directory")
    return out


def _view_traces(traces: tuple[str, ...], refusal=None) -> list:
    """The traces loaded; a failure, in one line, where one cannot be drawn (REFUSAL(trace): why not, or None)."""
    if not traces:
        fail("name at least one trace")
    from launchgap.analysis.core_map import records_every_switch

    # warnings about a trace's damage once it is known to be drawn at all: a refusal stays one line
    loaded = [_load(t, warn=False) for t in traces]
    for trace in loaded:
        if trace.meta.get("mode") == "study-csv":
            fail(f"{trace.path}: the study's CSV does not say who ran next on a CPU, which these views draw; "
                 "record a launchgap trace (or import a trace-cmd .dat)")
        if not trace.count(Event.SWITCH):
            fail(f"{trace.path}: no context switches in the trace, nothing to draw")
        if refusal is not None and (why := refusal(trace)):
            fail(why)
    for trace in loaded:
        warn_damage(trace)
        if not records_every_switch(trace):
            note(f"note: {trace.path} was recorded in target mode: a CPU's switches are there only from the first "
                 "time a target ran on it; record with --system for the whole machine")
    return loaded


def _window_inside(trace, window) -> None:
    """One line, rather than an empty picture, when the window (--min/--max) lies wholly outside the trace."""
    from launchgap.analysis.timeline import trace_bounds

    bounds = trace_bounds(trace)
    if window.lo_ns >= bounds.end_ns or window.hi_ns <= bounds.start_ns:
        fail(f"{trace.path}: the window {(window.lo_ns - window.origin_ns) / 1e9:.6f}.."
             f"{(window.hi_ns - window.origin_ns) / 1e9:.6f} s lies outside the trace, which spans "
             f"{(bounds.start_ns - window.origin_ns) / 1e9:.6f}..{(bounds.end_ns - window.origin_ns) / 1e9:.6f} s "
             f"(seconds from the axis' origin); choose --min and --max inside it")


def view_window_options(command):
    """The options timeline and running-waiting share: which time and which tasks."""
    for option in reversed([
        click.option("--min", "min_s", type=float, callback=finite_seconds,
                     help="Start, in seconds after the axis' origin."),
        click.option("--max", "max_s", type=float, callback=finite_seconds,
                     help="End, in seconds after the axis' origin."),
        click.option("--forked", is_flag=True, help="Only tasks created during the trace (the workload's)."),
        click.option("--after-sleep", is_flag=True, help="The origin is where a leading `sleep` ended."),
        click.option("--from-workload", is_flag=True, help="The origin is where the traced command started."),
    ]):
        command = option(command)
    return command


@main.command("timeline", epilog=PERMISSIONS_HELP)
@click.argument("traces", nargs=-1, type=click.Path())
@click.option("-o", "--output", type=click.Path(),
              help="cores.png, .pdf, .svg, or .html (interactive: zoom and pan). Default: NAME.timeline.png in the "
                   "current directory, NAME the first trace's name without its suffix")
@view_window_options
@click.option("--target", help="Colour only tasks whose command starts with this; the others are black.")
@click.option("--color-by", type=click.Choice(["command", "pid"]), default="command", show_default=True,
              help="command: a colour per command, busiest first, each named in the legend with its statistics; "
                   "pid: a colour per task (the kernel's pid, our tid), from 20 colours that repeat, no legend.")
@click.option("--socket-order", is_flag=True, help="Order CPUs by package and core (from the trace's topology).")
@click.option("--marks", default="irq,launch,sync,migrate", show_default=True,
              help="Overlay marks to draw (comma separated; empty for none).")
@click.option("--gpu/--no-gpu", default=None,
              help="Draw when each process's GPU was busy, a band under the cores (default: when the trace has GPU "
                   "activity, recorded with --gpu-activity). PNG, PDF and SVG only.")
def timeline(traces, output, min_s, max_s, target, color_by, forked, socket_order, after_sleep, from_workload,
             marks, gpu) -> None:
    """Which task ran on which CPU over time (dat2graph's picture): one line per
    stretch a task ran, gaps are idle; one graph per trace, all on the slowest
    run's time scale; per-command statistics printed."""
    import polars as pl

    from launchgap.analysis.core_map import MARKS_KEPT_WHOLE, ViewError, choose_window, shared_span_s
    from launchgap.views.timeline import MARK_KINDS, TimelineOptions, build_timeline, command_table, draw_static

    out = _view_output(output, traces, "timeline")
    kinds = tuple(k.strip() for k in marks.split(",") if k.strip())
    unknown = [k for k in kinds if k not in MARK_KINDS]
    if unknown:
        fail(f"--marks: unknown {unknown}; choose from {', '.join(MARK_KINDS)}")
    if after_sleep and from_workload:
        fail("choose one of --after-sleep and --from-workload")
    options = TimelineOptions(min_s, max_s, target, color_by, forked, socket_order, after_sleep, from_workload, kinds,
                              gpu)
    loaded = _view_traces(traces)
    try:
        for trace in loaded:
            _window_inside(trace, choose_window(trace, after_sleep, from_workload, min_s, max_s))
        with console.status("building the timeline"):
            datas = [build_timeline(t, options) for t in loaded]
    except ViewError as err:
        fail(str(err))
    if target:
        for data in datas:
            if not data.slices.filter(pl.col("comm").str.starts_with(target)).height:
                note(f"warning: --target {target}: no task in {data.name}'s window has a command starting with "
                     f"{target!r}; every task is drawn black")
    for data in datas:
        if data.unknown is not None and not data.unknown.is_empty():
            per_cpu = data.unknown.group_by("cpu").agg((pl.col("end_ns") - pl.col("start_ns")).sum()).sort("cpu")
            cpus = per_cpu["cpu"].to_list()
            note(f"note: {data.name}: the switches of CPU{'s' if len(cpus) > 1 else ''} {', '.join(map(str, cpus))} "
                 f"do not chain (a "
                 f"switch was never recorded), so who ran there is unknown for "
                 f"{int(per_cpu['end_ns'].sum()) / 1e6:.3f} ms of the window, drawn hatched (grey in .html); "
                 f"`launchgap report` says how much of the workload's waiting lies there")
        if data.marks_in_window > data.marks.height:
            note(f"note: {data.name}: the window holds {data.marks_in_window:,} marks, more than "
                 f"{MARKS_KEPT_WHOLE:,}; the earliest per kind, CPU and slice of the window are drawn "
                 f"({data.marks.height:,}): narrow it with --min/--max to see each")
        console.print(command_table(data))
    span = shared_span_s([d.window for d in datas])
    drawing = console.status(f"drawing {sum(d.slices.height for d in datas):,} slices")
    with drawing, safe_output(out, traces) as partial:
        if out.suffix.lower() == ".html":
            from launchgap.views.html import cores_panel, write_html

            from launchgap.views.timeline import UNKNOWN_COLOUR, UNKNOWN_LABEL

            legend = dict(list(datas[0].legend.items())[:24])
            if any(d.unknown is not None and not d.unknown.is_empty() for d in datas):
                legend[UNKNOWN_LABEL] = UNKNOWN_COLOUR
            write_html(partial, [cores_panel(d) for d in datas], span, "launchgap timeline", legend=legend)
        else:
            draw_static(datas, partial)
    note(f"wrote {out}")


@main.command("running-waiting", epilog=PERMISSIONS_HELP)
@click.argument("traces", nargs=-1, type=click.Path())
@click.option("-o", "--output", type=click.Path(),
              help="rw.png, .pdf, .svg, or .html (interactive). Default: NAME.running-waiting.png in the current "
                   "directory, NAME the first trace's name without its suffix")
@view_window_options
def running_waiting_cmd(traces, output, min_s, max_s, forked, after_sleep, from_workload) -> None:
    """Running and runnable task counts over time against the CPU count
    (running_waiting's picture); stretches where a task waits on a busy CPU
    while another CPU is idle (work-conservation failures) are shaded and summed."""
    from launchgap.analysis.core_map import ViewError, choose_window, forked_tids, shared_span_s, trace_cpus
    from launchgap.analysis.running_waiting import running_waiting, why_not_countable
    from launchgap.views.running_waiting import RunningWaitingGraph, draw_static

    out = _view_output(output, traces, "running-waiting")
    if after_sleep and from_workload:
        fail("choose one of --after-sleep and --from-workload")
    graphs = []
    try:
        with console.status("counting running and waiting tasks"):
            for trace in _view_traces(traces, why_not_countable):
                window = choose_window(trace, after_sleep, from_workload, min_s, max_s)
                _window_inside(trace, window)
                rw = running_waiting(trace, window, len(trace_cpus(trace)), forked_tids(trace) if forked else None)
                graphs.append((window, RunningWaitingGraph(str(trace.path), window.origin_ns, rw)))
    except ViewError as err:
        fail(str(err))
    for window, g in graphs:
        seconds = (window.hi_ns - window.lo_ns) / 1e9
        console.print(f"{literal(g.name)}: {g.rw.n_cpus} CPUs, peak {int(g.rw.steps['runnable'].max() or 0)} runnable; "
                      f"work-conservation failures: {g.rw.failures.height:,} stretches, "
                      f"{g.rw.failure_ns / 1e6:.3f} ms ({100 * g.rw.failure_ns / 1e9 / max(seconds, 1e-9):.2f}% of "
                      f"{seconds:.3f} s)", highlight=False)
    span = shared_span_s([w for w, _ in graphs])
    with safe_output(out, traces) as partial:
        if out.suffix.lower() == ".html":
            from launchgap.views.html import steps_panel, write_html

            write_html(partial, [steps_panel(g.rw, g.origin_ns, g.name) for _, g in graphs], span,
                       "launchgap running/waiting", legend={"running": "#2ca02c",
                                                            "runnable (running + waiting)": "#d62728",
                                                            "work-conservation failure": "#ffa500"})
        else:
            draw_static([g for _, g in graphs], partial, span)
    note(f"wrote {out}")


@main.group("experiment")
def experiment() -> None:
    """Run a workload under noisy-neighbour and mitigation scenarios, repeated, with statistics."""


# exit status of an experiment that ran but did not measure what it should: failed runs, a host
# setting left changed
EXIT_EXPERIMENT_FAILED = 1


def _run_experiment(scenarios, command, repeat, metric, output, seed, disk_dir, *, allow_rt_unthrottled=False,
                    extra=None, focus_threads=None, need_command=True, metric_name=None, gpu_activity=False) -> None:
    """METRIC: a --metric value ('wall' or a regex), or a runner Metric; METRIC_NAME: --metric-name."""
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
    problem = _results_dir_problem(outdir)
    if problem:
        fail(f"-o {outdir}: {problem}")
    chosen_metric = metric if isinstance(metric, Metric) else Metric(None if metric == "wall" else metric,
                                                                     label=metric_name)
    host = LeverHost()
    try:
        # every error that can be known now comes before the warm-up run, not after it
        preflight(list(command), scenarios, chosen_metric, Path(disk_dir) if disk_dir else None, host=host,
                  allow_rt_unthrottled=allow_rt_unthrottled)
    except ExperimentError as err:
        fail(str(err))
    if outdir.exists() and (outdir / "results.json").exists():
        fail(f"{outdir}: already holds an experiment's results; choose another -o")
    for line in stale_results(host):
        note(f"warning: {line}")
    seed = seed if seed is not None else random.randrange(1 << 31)
    console.print(f"experiment: {len(scenarios)} scenarios x {repeat} repeats + warm-up, order shuffled with seed "
                  f"{seed}; results in {literal(outdir)}")
    for s in scenarios:
        console.print(f"  {literal(s.name)}: {literal(s.describe())}")
    not_restored: list[str] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("starting", total=len(scenarios) * repeat + 1)

        def progress(index, total, what):
            bar.update(task, completed=index, description=literal(what))

        try:
            run_experiment(list(command), scenarios, repeat, chosen_metric, outdir, seed,
                           Path(disk_dir) if disk_dir else None, progress=progress, not_restored=not_restored,
                           host=host, extra=extra, focus_threads=focus_threads, gpu_activity=gpu_activity)
            bar.update(task, completed=len(scenarios) * repeat + 1, description="done")
        except (KeyboardInterrupt, Terminated) as stopped:
            bar.stop()
            if not_restored:
                _host_not_restored(not_restored, outdir)
            note(f"interrupted: everything stopped and restored; partial results (marked incomplete) in {outdir}")
            sys.exit(stopped.code if isinstance(stopped, Terminated) else EXIT_INTERRUPTED)
        except NotStartedError as err:
            bar.stop()
            fail(str(err), EXIT_EXPERIMENT_FAILED)
        except ExperimentError as err:
            bar.stop()
            if not_restored:
                _host_not_restored(not_restored, outdir)
            fail(f"{err} (partial results in {outdir})", EXIT_EXPERIMENT_FAILED)
    _show(outdir)


def _results_dir_problem(outdir: Path) -> str | None:
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


# runs per scenario: far more than statistics need, and each run is a recorded trace on disk
MAX_REPEAT = 1000


def _host_not_restored(problems: list[str], outdir: Path) -> None:
    err_console.print(shown("launchgap: WARNING: HOST SETTINGS LEFT CHANGED: could not put back "
                            + "; ".join(map(str, problems)) + f" (listed in {outdir / 'results.json'}; restore "
                            f"them by hand)"), markup=False,
                      highlight=False, style="bold red")


@experiment.command("noisy-neighbor", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@click.option("--repeat", default=5, show_default=True, help="Measured runs per scenario, after one warm-up.")
@click.option("--metric", default=r"tok/s: ([0-9.]+)", show_default=True,
              help="Regex whose first group is the workload's throughput, or 'wall' for wall time.")
@click.option("--metric-name", metavar="NAME",
              help="What tables and plots call the metric (default: the text beside the number in --metric, "
                   "e.g. tok/s).")
@click.option("--scenarios", default="baseline,cpu,network,disk,heavy,pinned", show_default=True,
              help="Built-in scenarios, comma separated.")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Results directory (default results/experiment-TIME).")
@click.option("--seed", type=int, help="Seed for the run order (printed when chosen at random).")
@click.option("--disk-dir", type=click.Path(file_okay=False),
              help="Where fio writes (a real block device; default /var/tmp).")
@click.option("--gpu-activity", is_flag=True,
              help="Record each run with --gpu-activity (CUPTI), so that the GPU idle each scenario's interference "
                   "caused is exact, not bounds (docs/gpu-time.md).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def noisy_neighbor(repeat, metric, metric_name, scenarios, output, seed, disk_dir, gpu_activity, command) -> None:
    """The study's scenarios: baseline, cpu (stress-ng), network (iperf3 on loopback),
    disk (fio direct I/O), heavy (all three), pinned (cpu load, workload pinned and niced)."""
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import builtin

    try:
        chosen = builtin([s.strip() for s in scenarios.split(",") if s.strip()])
    except MitigationError as err:
        fail(str(err))
    if chosen[0].name != "baseline":
        chosen = builtin(["baseline"]) + [s for s in chosen if s.name != "baseline"]
    _run_experiment(chosen, command, repeat, metric, output, seed, disk_dir, metric_name=metric_name,
                    gpu_activity=gpu_activity)


@experiment.command("run", context_settings={"ignore_unknown_options": True}, epilog=PERMISSIONS_HELP)
@click.argument("scenario_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--repeat", default=5, show_default=True, help="Measured runs per scenario, after one warm-up.")
@click.option("--metric", default=r"tok/s: ([0-9.]+)", show_default=True,
              help="Regex whose first group is the workload's throughput, or 'wall' for wall time.")
@click.option("--metric-name", metavar="NAME",
              help="What tables and plots call the metric (default: the text beside the number in --metric, "
                   "e.g. tok/s).")
@click.option("-o", "--output", type=click.Path(file_okay=False))
@click.option("--seed", type=int)
@click.option("--disk-dir", type=click.Path(file_okay=False))
@click.option("--allow-rt-unthrottled", is_flag=True,
              help="Run SCHED_FIFO/SCHED_RR scenarios even with RT throttling off (sched_rt_runtime_us = -1).")
@click.option("--gpu-activity", is_flag=True,
              help="Record each run with --gpu-activity (CUPTI), so that the GPU idle each scenario's interference "
                   "caused is exact, not bounds (docs/gpu-time.md).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def experiment_run(scenario_file, repeat, metric, metric_name, output, seed, disk_dir, allow_rt_unthrottled,
                   gpu_activity, command) -> None:
    """Scenarios from a TOML file ([scenarios.NAME] with loads, mitigations, env). Mitigations: cpus, nice,
    policy (other, batch, idle, fifo:P, rr:P), cpuset, irq_away, and the host-wide levers isolate
    ("isolated" or "root"), workqueue_away, timer_migration (0 or 1), preempt (none, voluntary, full,
    lazy): docs/lever-experiments.md. examples/ has a commented file of each kind, with the command that
    runs it."""
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import from_toml

    try:
        chosen = from_toml(scenario_file)
    except MitigationError as err:
        fail(str(err))
    _run_experiment(chosen, command, repeat, metric, output, seed, disk_dir,
                    allow_rt_unthrottled=allow_rt_unthrottled, metric_name=metric_name, gpu_activity=gpu_activity)


def _read_results(outdir: Path) -> dict:
    path = outdir / "results.json"
    try:
        results = read_json(path)
    except OSError as err:
        fail(f"{outdir}: no readable results.json ({err.strerror or err})")
    except JsonError as err:
        fail(f"{path}: not an experiment's results (not JSON: {err.problem})")
    except InputError as err:
        fail(f"{path}: not an experiment's results ({err.problem})")
    if not isinstance(results, dict) or results.get("schema") != "launchgap-experiment/1":
        fail(f"{path}: not an experiment's results (no schema launchgap-experiment/1)")
    missing = [k for k in ("status", "metric", "higher_is_better", "scenarios", "runs") if k not in results]
    if missing or not isinstance(results["runs"], list) or not isinstance(results["scenarios"], list):
        fail(f"{path}: damaged experiment results (missing or malformed: {', '.join(missing) or 'runs/scenarios'})")
    return results


def _show(outdir: Path) -> None:
    from launchgap.experiments.summary import SummaryError, failures, metric_label, plot, summarize_results

    results = _read_results(outdir)
    if results.get("grid"):
        from launchgap.experiments.commands import show_grid

        show_grid(outdir, results)
        return
    try:
        summary = summarize_results(results)
    except SummaryError as err:
        fail(f"{outdir / 'results.json'}: damaged experiment results ({err})")
    written = []
    try:
        write_text(outdir / "summary.json", json.dumps(summary, indent=2))
        written = [outdir / "summary.json", *plot(results, summary, outdir)]
    except (OSError, OutputError) as err:
        # a read-only place, say: the tables are still worth showing
        note(f"note: {outdir}: summary.json and the plots were not written ({getattr(err, 'strerror', None) or err})")
    direction = "higher" if results["higher_is_better"] else "lower"
    table = Table(title=Text(shown(f"{metric_label(results)} ({direction} is better), status: {results['status']}; "
                             f"vs baseline: medians, 95% CI: Welch's, of the means")), title_justify="left")
    from launchgap.experiments.summary import measured
    from launchgap.views.experiment_gpu import gpu_idle_cells, render_gains
    from launchgap.views.numbers import fixed, places, rounds, span, with_sd

    # one rounding for the whole table, set by the runs' scatter
    decimals = places([e["metric"]["sd"] for e in summary.values() if e.get("runs")],
                      [e["metric"]["median"] for e in summary.values() if e.get("runs")])
    for col in ("scenario", "runs", "failed", "median", "mean (sd)", "min..max", "95% CI", "vs baseline",
                "vs baseline 95% CI", "p (Welch / MWU)", "GPU idle caused", "GPU idle 95% CI", "preempted",
                "run-queue", "IRQ", "explained", "Sched/1K", "top culprit"):
        table.add_column(col, justify="left" if col in ("scenario", "top culprit") else "right")
    for name, e in summary.items():
        failed = str(e.get("failed", 0))
        if not e.get("runs"):
            table.add_row(literal(name), "0", failed, *[""] * 15)
            continue
        m, v = e["metric"], e.get("vs_baseline")
        # the outliers are indices into the scenario's measured runs: said as the rounds they ran in
        runs = measured(results, name)
        outlying = sorted(runs[i].get("round", i + 1) for i in m["outliers"] if i < len(runs))
        flags = f" ({len(outlying)} outlier{'s' if len(outlying) > 1 else ''}: {rounds(outlying)})" if outlying else ""
        table.add_row(literal(name), str(e["runs"]), failed, f"{fixed(m['median'], decimals)}{flags}",
                      with_sd(m["mean"], m["sd"], decimals), span(m["min"], m["max"], decimals),
                      span(m["ci_low"], m["ci_high"], decimals),
                      words.speed(v["slowdown_percent"]) if v else "-",
                      words.speed_interval(v["slowdown_ci_low"], v["slowdown_ci_high"]) if v else "-",
                      f"{v['welch_p']:.3f} / {v['mannwhitney_p']:.2f}" if v and v["welch_p"] is not None else "-",
                      *gpu_idle_cells(e), _ms(e["preempted_ms"]), _ms(e["runqueue_ms"]), _ms(e["irq_ms"]),
                      f"{e['explained_percent']:.0f}%" if e.get("explained_percent") is not None else "-",
                      f"{e['sched_per_1k']:.1f}" if e["sched_per_1k"] is not None else "-",
                      literal(e["top_culprit"] or "-"))
    console.print(table)
    render_gains(summary, console)
    if written:
        console.print(literal(f"per-run data: {outdir / 'results.json'}; statistics: {outdir / 'summary.json'}; "
                              f"plots: " + ", ".join(str(p) for p in written[1:])))
    problems = failures(results, summary)
    for line in problems:
        note(line)
    if results.get("host_not_restored"):
        _host_not_restored(results["host_not_restored"], outdir)
    if problems or results.get("host_not_restored") or results["status"] in ("failed", "killed"):
        sys.exit(EXIT_EXPERIMENT_FAILED)


def _ms(value) -> str:
    return "-" if value is None else f"{value:.1f} ms"


@experiment.command("show", epilog=PERMISSIONS_HELP)
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
def experiment_show(directory: str) -> None:
    """Tables and plots from a finished (or interrupted) experiment."""
    _show(Path(directory))


@main.command("cudasim-truth")
@click.argument("path", type=click.Path())
def cudasim_truth(path: str) -> None:
    """Summarise a cudasim ground-truth file (cudasim decode --truth PATH)."""
    try:
        truth = load_truth(path)
    except TruthError as err:
        fail(str(err))
    render_truth(truth, console)


@main.command("probes")
@click.option("--cuda-lib", "cuda_libs", multiple=True, type=click.Path(dir_okay=False),
              help="A CUDA driver or runtime library (or an executable with the runtime linked in) to list "
                   "besides those found (repeatable).")
@click.option("-p", "--pid", "pids", multiple=True, type=int, help="Look in this running process's maps (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the recorder's listing as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def probes(cuda_libs: tuple[str, ...], pids: tuple[int, ...], as_json: bool, command: tuple[str, ...]) -> None:
    """Every CUDA library a recording would find (for [-- COMMAND], which is not
    run, or -p PID) and, for each probe, the instruction it sits on and what a
    hit costs. Traces nothing, needs no root."""
    import subprocess

    from launchgap.views.probes import render_probes

    binary = find_recorder()
    if binary is None or not binary.exists():
        fail(f"cannot find the recorder binary ({recorder_binary_hint()})")
    argv = [str(binary), "--list-probes", *(a for lib in cuda_libs for a in ("--cuda-lib", lib)),
            *(a for pid in pids for a in ("-p", str(pid)))]
    if command:
        argv += ["--", *command]
    if not binary.is_file() or not os.access(binary, os.X_OK):
        fail(f"{binary}: not an executable recorder binary ({recorder_binary_hint()})")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace")
    except OSError as err:
        fail(f"cannot run the recorder {binary} ({err.strerror or err}; {recorder_binary_hint()})")
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        fail(message.removeprefix("launchgap-record: "))
    try:
        listing = json.loads(proc.stdout)
        if not isinstance(listing, dict):
            raise ValueError("not an object")
    except ValueError:
        fail(f"{binary} did not answer as a launchgap recorder (its --list-probes output is not JSON; "
             f"{recorder_binary_hint()})")
    if as_json:
        click.echo(proc.stdout.rstrip())
    else:
        try:
            render_probes(listing, console)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            fail(f"{binary} did not answer as a launchgap recorder (its listing lacks {err}; "
                 f"{recorder_binary_hint()})")

main.add_command(doctor)  # launchgap/doctor/command.py


def _experiment_commands() -> None:
    from launchgap.experiments.commands import compare_command, levers_command

    experiment.add_command(levers_command)   # launchgap/experiments/commands.py
    experiment.add_command(compare_command)


_experiment_commands()


def run() -> None:
    """The `launchgap` command (and `python -m launchgap.cli`). Tests invoke `main` in their own process,
    which keeps glibc's defaults: the malloc setting is for a process that is launchgap alone."""
    hold_freed_memory()
    main()


if __name__ == "__main__":
    run()
