"""launchgap's command line: parses arguments, then calls the pipeline."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

import launchgap.quiet_blas  # noqa: F401  (first: before anything imports numpy)
from launchgap import __version__
from launchgap.analysis.collectives import pattern_error
from launchgap.analysis.diff import diff_reports
from launchgap.analysis.report import MINOR_CAVEAT_PERCENT, build_report
from launchgap.cli_common import (
    check_output,
    console,
    exit_cleanly_on_sigterm,
    fail,
    finite_seconds,
    load,
    note,
    safe_output,
    warn_damage,
)
from launchgap.console import fitting_console, literal
from launchgap.doctor.command import doctor
from launchgap.experiments.commands import experiment
from launchgap.exports.study_csv import write_study_csv
from launchgap.held_memory import hold_freed_memory
from launchgap.output import PERMISSIONS_HELP
from launchgap.recorder import ENV_OVERRIDE, MONITOR_ENV_OVERRIDE, find_monitor, find_recorder
from launchgap.trace import Event, TraceError
from launchgap.trace.schema import MetaKey
from launchgap.views.cudasim_truth import render_truth
from launchgap.views.diff import render_diff
from launchgap.views.report_json import document
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
    hint = f"build it with `make setup`, put launchgap-monitor on PATH, or set {MONITOR_ENV_OVERRIDE}"
    binary = find_monitor()
    if binary is None or not binary.exists():
        fail(f"cannot find the monitor binary ({hint})")
    if not binary.is_file() or not os.access(binary, os.X_OK):
        fail(f"{binary}: not an executable monitor binary ({hint})")
    passed = sys.argv[sys.argv.index("monitor") + 1 :] if "monitor" in sys.argv else list(monitor_args)
    try:
        os.execv(str(binary), [str(binary), *passed])
    except OSError as err:
        fail(f"cannot run the monitor {binary} ({err.strerror or err}; {hint})")


def _load(path: str, warn: bool = True):
    return load(path, warn)


# --strict: exit status when a metric rests on events that were lost
EXIT_LOST_EVENTS = 3


def _require_cgroups(path: str, result) -> None:
    """--culprits-by cgroup on a trace that does not say which cgroup each task was in: one line, and out."""
    if result.taken.culprits_by_cgroup is None:
        fail(
            f"{path}: the trace does not record each task's cgroup (recorded by an older launchgap, imported, or "
            "a study CSV), so its culprits cannot be grouped by cgroup; record it again with this launchgap"
        )


@main.command("report", epilog=PERMISSIONS_HELP)
@click.argument("trace", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (docs/report-schema.md).")
@click.option("--csv", "csv_path", type=click.Path(), help="Also write the study's 19-column CSV here.")
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit {EXIT_LOST_EVENTS} if lost events affect any metric, or the trace is incomplete (cut short, "
    "or damaged rows left out).",
)
@click.option(
    "--culprits-by",
    "culprits_by",
    type=click.Choice([*CULPRIT_GROUPINGS, "task"]),
    default="command",
    show_default=True,
    help='Group who cost the GPU time by command (a command\'s processes together) or by process ("task" is the '
    "same; who ran while the workload waited is by process either way), or both tables by cgroup: each "
    "container, pod or service the tasks ran in, named by its pod and container where its cgroup path names "
    "them (as the monitor labels them). --json always has every grouping.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help=f"Show each caveat on what the trace could see (the report says how many), and the minor ones: "
    f"those bearing on at most {MINOR_CAVEAT_PERCENT:g}% of the time taken from the workload (always in "
    "--json, under trace.caveats and trace.minor_caveats).",
)
@click.option(
    "--kineto",
    "kineto",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="PROFILER_TRACE",
    help="A PyTorch profiler (Kineto) trace of the same run (.json or .json.gz; repeat it, one file per "
    "rank): its GPU work, on TRACE's clock and task ids, gives the exact GPU-time answer with no "
    "CUPTI of launchgap's in the process. Record TRACE with --no-cuda-probes (or with the probes: "
    "then the clocks are fitted to the launches both saw). A file of another run is refused.",
)
@click.option(
    "--collective-pattern",
    "collective_pattern",
    metavar="REGEX",
    help="Also count as collectives the kernels whose name this regular expression finds (Rust regex syntax, "
    "searched anywhere in the name, as CUPTI or the profiler gives it: mangled or not), for a library other "
    'than NCCL, whose kernels are recognised by their names (docs/gpu-time.md, "Collectives").',
)
def report(
    trace: str,
    as_json: bool,
    csv_path: str | None,
    strict: bool,
    culprits_by: str,
    verbose: bool,
    kineto: tuple[str, ...],
    collective_pattern: str | None,
) -> None:
    """What the scheduler and interrupts took from the workload in TRACE, from whom, and what to do.
    TRACE may be a PyTorch profiler trace itself (.json, .json.gz): then its GPU time, and how to learn
    what the host did."""
    if collective_pattern is not None:
        # checked once, here, by the engine the names are matched with, before the trace is read
        bad = pattern_error(collective_pattern)
        if bad is not None:
            fail(f"--collective-pattern {collective_pattern!r} is not a regular expression: {bad}")
    if csv_path:
        check_output(csv_path, [trace])
    loaded = _load(trace, warn=False)
    if kineto:
        from launchgap.trace.kineto_join import join_profiler_traces

        try:
            loaded = join_profiler_traces(loaded, list(kineto))
        except TraceError as err:
            fail(str(err))
    result = build_report(loaded, collective_pattern)
    if culprits_by == "cgroup":
        _require_cgroups(trace, result)
    if csv_path:
        with safe_output(csv_path, [trace]) as partial:
            write_study_csv(loaded, partial)
    if as_json:
        click.echo(json.dumps(document(result), indent=2))
    else:
        render(result, fitting_console(), "process" if culprits_by == "task" else culprits_by, verbose)
    # the warnings hold lost events and an incomplete trace (cut short, or damaged rows left out)
    if strict and result.warnings:
        sys.exit(EXIT_LOST_EVENTS)


@main.command("diff")
@click.argument("a", type=click.Path())
@click.argument("b", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--culprits-by",
    "culprits_by",
    type=click.Choice(["cgroup"]),
    help="Also compare the culprits of both traces by cgroup: the time each container, pod or service "
    "took from the workload in A and in B (and, where both have GPU time, the GPU idle it caused).",
)
def diff(a: str, b: str, as_json: bool, culprits_by: str | None) -> None:
    """Compare two traces (e.g. baseline and noisy): every metric side by side with the change."""
    report_a, report_b = build_report(_load(a)), build_report(_load(b))
    if culprits_by == "cgroup":
        _require_cgroups(a, report_a)
        _require_cgroups(b, report_b)
    result = diff_reports(report_a, report_b, culprits_by)
    if as_json:
        click.echo(json.dumps(document(result), indent=2))
        return
    render_diff(result, a, b, fitting_console())


@main.command("export", epilog=PERMISSIONS_HELP)
@click.argument("trace", type=click.Path())
@click.option("--csv", "as_csv", is_flag=True, help="The original study's 19-column CSV layout.")
@click.option(
    "--perfetto",
    "as_perfetto",
    is_flag=True,
    help="A Perfetto trace (ui.perfetto.dev): CPU and thread-state tracks, IRQs, CUDA calls, and with GPU activity one track per GPU stream with a flow from each launch to its kernel.",
)
@click.option("-o", "--output", type=click.Path(), help="Where to write (default: TRACE with .csv or .pftrace).")
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
    note(
        f"wrote {out}: {counts['ftrace_events']:,} scheduling and IRQ events, {counts['track_events']:,} CUDA "
        f"and vector events; open it at ui.perfetto.dev"
    )


@main.command("import", epilog=PERMISSIONS_HELP)
@click.argument("dat", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(), help="The launchgap trace to write, a directory (default: DAT.lg).")
@click.option(
    "--target",
    "targets",
    multiple=True,
    help="Command name prefix of the workload (repeatable), so `report` knows whom to analyse.",
)
def import_cmd(dat: str, output: str | None, targets: tuple[str, ...]) -> None:
    """Turn a trace-cmd .dat (sched_switch, wakeups, migrations, fork/exec/exit,
    IRQs, softirqs, irq_vectors), or a PyTorch profiler trace (.json, .json.gz:
    its GPU work and the CUDA calls that made it), into a launchgap trace, for
    every view and the report."""
    from launchgap.trace.kineto import looks_like_profiler_trace
    from launchgap.trace.tracecmd import DatImportError, import_dat

    out = Path(output) if output else Path(dat.removesuffix(".gz").removesuffix(".json") + ".lg")
    check_output(out, [dat])
    if not out.parent.exists():
        fail(f"{out.parent}: no such directory")
    if Path(dat).is_file() and looks_like_profiler_trace(dat):
        _import_profiler(dat, out, targets)
        return
    try:
        with (
            console.status(f"decoding {literal(dat)} with trace-cmd"),
            safe_output(out, [dat], directory=True, replaces_trace=True) as partial,
        ):
            stats = import_dat(Path(dat), partial, list(targets))
    except DatImportError as err:
        fail(str(err))
    names = stats["events_by_name"]
    console.print(
        f"imported {sum(names.values()):,} events ({names.get('sched_switch', 0):,} sched_switch) over "
        f"{(stats['end_ns'] - stats['start_ns']) / 1e9:.3f} s on {stats['cpu_count']} CPUs; "
        f"lost: {stats['lost_events']:,}",
        highlight=False,
    )
    if not targets:
        console.print(
            "no --target given: `launchgap report` will have no workload to analyse; the views need none",
            highlight=False,
        )
    note(f"wrote {out}")


def _import_profiler(path: str, out: Path, targets: tuple[str, ...]) -> None:
    from launchgap.trace.kineto import KinetoError, import_profiler_trace

    if targets:
        fail("--target names a trace-cmd .dat's workload; a PyTorch profiler trace names its own process")
    try:
        with (
            console.status(f"reading {literal(path)}"),
            safe_output(out, [path], directory=True, replaces_trace=True) as partial,
        ):
            run = import_profiler_trace(Path(path), partial)
    except KinetoError as err:
        fail(str(err))
    console.print(
        f"imported a PyTorch profiler trace: {run.gpu.height:,} GPU events on device(s) "
        f"{', '.join(map(str, run.devices))} and {run.calls.height:,} CUDA calls of process {run.pid} over "
        f"{(run.window[1] - run.window[0]) / 1e9:.3f} s (its active window)",
        highlight=False,
    )
    note(f"wrote {out}")


@main.command("convert", epilog=PERMISSIONS_HELP)
@click.argument("source", metavar="IN", type=click.Path())
@click.argument("output", metavar="OUT", type=click.Path())
@click.option(
    "--format",
    "version",
    type=click.Choice(["1", "2"]),
    help="The format to write (default: the other one: 2 for a format-1 trace, 1 for a format-2 one).",
)
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
    with (
        console.status(f"writing {literal(output)} (format {target})"),
        safe_output(output, [source], directory=target == 2, replaces_trace=True) as partial,
    ):
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
        if trace.meta.get(MetaKey.MODE) == "study-csv":
            fail(
                f"{trace.path}: the study's CSV does not say who ran next on a CPU, which these views draw; "
                "record a launchgap trace (or import a trace-cmd .dat)"
            )
        if not trace.count(Event.SWITCH):
            fail(f"{trace.path}: no context switches in the trace, nothing to draw")
        if refusal is not None and (why := refusal(trace)):
            fail(why)
    for trace in loaded:
        warn_damage(trace)
        if not records_every_switch(trace):
            note(
                f"note: {trace.path} was recorded in target mode: a CPU's switches are there only from the first "
                "time a target ran on it; record with --system for the whole machine"
            )
    return loaded


def _window_inside(trace, window) -> None:
    """One line, rather than an empty picture, when the window (--min/--max) lies wholly outside the trace."""
    from launchgap.analysis.timeline import trace_bounds

    bounds = trace_bounds(trace)
    if window.lo_ns >= bounds.end_ns or window.hi_ns <= bounds.start_ns:
        fail(
            f"{trace.path}: the window {(window.lo_ns - window.origin_ns) / 1e9:.6f}.."
            f"{(window.hi_ns - window.origin_ns) / 1e9:.6f} s lies outside the trace, which spans "
            f"{(bounds.start_ns - window.origin_ns) / 1e9:.6f}..{(bounds.end_ns - window.origin_ns) / 1e9:.6f} s "
            f"(seconds from the axis' origin); choose --min and --max inside it"
        )


def view_window_options(command):
    """The options timeline and running-waiting share: which time and which tasks."""
    for option in reversed(
        [
            click.option(
                "--min", "min_s", type=float, callback=finite_seconds, help="Start, in seconds after the axis' origin."
            ),
            click.option(
                "--max", "max_s", type=float, callback=finite_seconds, help="End, in seconds after the axis' origin."
            ),
            click.option("--forked", is_flag=True, help="Only tasks created during the trace (the workload's)."),
            click.option("--after-sleep", is_flag=True, help="The origin is where a leading `sleep` ended."),
            click.option("--from-workload", is_flag=True, help="The origin is where the traced command started."),
        ]
    ):
        command = option(command)
    return command


@main.command("timeline", epilog=PERMISSIONS_HELP)
@click.argument("traces", nargs=-1, type=click.Path())
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="cores.png, .pdf, .svg, or .html (interactive: zoom and pan). Default: NAME.timeline.png in the "
    "current directory, NAME the first trace's name without its suffix",
)
@view_window_options
@click.option("--target", help="Colour only tasks whose command starts with this; the others are black.")
@click.option(
    "--color-by",
    type=click.Choice(["command", "pid"]),
    default="command",
    show_default=True,
    help="command: a colour per command, busiest first, each named in the legend with its statistics; "
    "pid: a colour per task (the kernel's pid, our tid), from 20 colours that repeat, no legend.",
)
@click.option("--socket-order", is_flag=True, help="Order CPUs by package and core (from the trace's topology).")
@click.option(
    "--marks",
    default="irq,launch,sync,migrate",
    show_default=True,
    help="Overlay marks to draw (comma separated; empty for none).",
)
@click.option(
    "--gpu/--no-gpu",
    default=None,
    help="Draw when each process's GPU was busy, a band under the cores (default: when the trace has GPU "
    "activity, recorded with --gpu-activity). PNG, PDF and SVG only.",
)
def timeline(
    traces, output, min_s, max_s, target, color_by, forked, socket_order, after_sleep, from_workload, marks, gpu
) -> None:
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
    options = TimelineOptions(
        min_s, max_s, target, color_by, forked, socket_order, after_sleep, from_workload, kinds, gpu
    )
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
                note(
                    f"warning: --target {target}: no task in {data.name}'s window has a command starting with "
                    f"{target!r}; every task is drawn black"
                )
    for data in datas:
        if data.unknown is not None and not data.unknown.is_empty():
            per_cpu = data.unknown.group_by("cpu").agg((pl.col("end_ns") - pl.col("start_ns")).sum()).sort("cpu")
            cpus = per_cpu["cpu"].to_list()
            note(
                f"note: {data.name}: the switches of CPU{'s' if len(cpus) > 1 else ''} {', '.join(map(str, cpus))} "
                f"do not chain (a "
                f"switch was never recorded), so who ran there is unknown for "
                f"{int(per_cpu['end_ns'].sum()) / 1e6:.3f} ms of the window, drawn hatched (grey in .html); "
                f"`launchgap report` says how much of the workload's waiting lies there"
            )
        if data.marks_in_window > data.marks.height:
            note(
                f"note: {data.name}: the window holds {data.marks_in_window:,} marks, more than "
                f"{MARKS_KEPT_WHOLE:,}; the earliest per kind, CPU and slice of the window are drawn "
                f"({data.marks.height:,}): narrow it with --min/--max to see each"
            )
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
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="rw.png, .pdf, .svg, or .html (interactive). Default: NAME.running-waiting.png in the current "
    "directory, NAME the first trace's name without its suffix",
)
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
        console.print(
            f"{literal(g.name)}: {g.rw.n_cpus} CPUs, peak {int(g.rw.steps['runnable'].max() or 0)} runnable; "
            f"work-conservation failures: {g.rw.failures.height:,} stretches, "
            f"{g.rw.failure_ns / 1e6:.3f} ms ({100 * g.rw.failure_ns / 1e9 / max(seconds, 1e-9):.2f}% of "
            f"{seconds:.3f} s)",
            highlight=False,
        )
    span = shared_span_s([w for w, _ in graphs])
    with safe_output(out, traces) as partial:
        if out.suffix.lower() == ".html":
            from launchgap.views.html import steps_panel, write_html

            write_html(
                partial,
                [steps_panel(g.rw, g.origin_ns, g.name) for _, g in graphs],
                span,
                "launchgap running/waiting",
                legend={
                    "running": "#2ca02c",
                    "runnable (running + waiting)": "#d62728",
                    "work-conservation failure": "#ffa500",
                },
            )
        else:
            draw_static([g for _, g in graphs], partial, span)
    note(f"wrote {out}")


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
@click.option(
    "--cuda-lib",
    "cuda_libs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A CUDA driver or runtime library (or an executable with the runtime linked in) to list "
    "besides those found (repeatable).",
)
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
    argv = [
        str(binary),
        "--list-probes",
        *(a for lib in cuda_libs for a in ("--cuda-lib", lib)),
        *(a for pid in pids for a in ("-p", str(pid))),
    ]
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
        fail(
            f"{binary} did not answer as a launchgap recorder (its --list-probes output is not JSON; "
            f"{recorder_binary_hint()})"
        )
    if as_json:
        click.echo(proc.stdout.rstrip())
    else:
        try:
            render_probes(listing, console)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            fail(f"{binary} did not answer as a launchgap recorder (its listing lacks {err}; {recorder_binary_hint()})")


main.add_command(doctor)  # launchgap/doctor/command.py
main.add_command(experiment)  # launchgap/experiments/commands.py


def run() -> None:
    """The `launchgap` command where launchgap.entry exec'd no binary (and `python -m launchgap.cli`).
    Tests invoke `main` in their own process, which keeps glibc's defaults: the malloc setting is for a
    process that is launchgap alone."""
    hold_freed_memory()
    main()


if __name__ == "__main__":
    run()
