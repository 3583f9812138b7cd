"""The terminal report: rich tables over the report records, nothing computed here. Every text in a
record (names, paths, the trace's own words) goes through literal(): it comes from the trace."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from launchgap.analysis.diff import CgroupCulpritsDiff
from launchgap.analysis.records import (
    CgroupCulprit,
    Collectives,
    FailedLaunches,
    GpuActivity,
    GpuCgroupCulprit,
    GpuTime,
    GpuTimeBounds,
    GpuTimeExact,
    GpuTimeNotEstimated,
    ProfilerFile,
    Report,
    StudyMetrics,
    TraceInfo,
)
from launchgap.console import literal, shown
from launchgap.views import words
from launchgap.views.verdict_words import say, verdict_text

# how the culprit tables group (report --culprits-by): by command (its processes together), by process, or by the
# cgroup (container, pod) of each task
CULPRIT_GROUPINGS = ("command", "process", "cgroup")
WHILE_WAITING = {"preempted": "preempted", "runqueue": "woken, waiting to run", "irq": "interrupted"}


def _s(ns: float | int | None) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def _n(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _warn(report: Report, metric: str) -> str:
    bound = report.warnings.get(metric)
    return f" [bold red]({literal(say(bound))})[/]" if bound else ""


def _failed_launches(failed: FailedLaunches) -> str:
    if not failed.recorded:
        return "not recorded (record with --api-names to see launches that fail before the driver)"
    if not failed.count:
        return "none"
    by = ", ".join(f"{literal(b.runtime_api)} returned {literal(b.return_code)} x{b.count:,}" for b in failed.by[:4])
    return f"[bold red]{failed.count:,}[/] never reached the driver ({by})"


def _gpu_activity(gpu: GpuActivity, profiler: list[ProfilerFile] = ()) -> str:
    """Whether the trace says what the GPU ran, and how much of it."""
    if profiler:
        joined = (
            "every launch joined to its GPU work"
            if not gpu.launches_without_execution
            else f"{gpu.launches_without_execution:,} launches without their GPU work in the profiler's window"
        )
        return (
            f"from {len(profiler)} PyTorch profiler file{'s' if len(profiler) > 1 else ''}: {gpu.executions:,} "
            f"kernels and graphs, {gpu.copies:,} copies, {gpu.memsets:,} memsets; {joined}"
        )
    if not gpu.recorded:
        return f"absent: {literal(gpu.why_absent or '')}"
    if not gpu.collectors_started:
        failed = "; ".join(f"pid {f.pid}: {literal(f.reason)}" for f in gpu.collectors_failed[:3])
        return f"[bold red]not recorded[/]: {failed or 'no collector started in the workload'}"
    clock = f"clock {literal(gpu.clock_method or '?')}, within {_s(gpu.clock_error_ns)}"
    what = f"{gpu.executions:,} kernels and graphs, {gpu.copies:,} copies, {gpu.memsets:,} memsets, {gpu.syncs:,} syncs"
    joined = (
        "every launch joined to its GPU work"
        if not gpu.launches_without_execution
        else f"[bold red]{gpu.launches_without_execution:,} launches without their GPU work[/] (lost rows say why)"
    )
    failed = "".join(f"; [bold red]pid {f.pid} not recorded[/]: {literal(f.reason)}" for f in gpu.collectors_failed[:3])
    shared = ""
    if gpu.contended:
        pids = sorted({c.pid for c in gpu.contended})
        whats = ", ".join(sorted({literal(c.what) for c in gpu.contended}))
        shared = (
            f"; [bold yellow]shared CUPTI with a profiler in pid {', '.join(map(str, pids))}[/] ({whats}): each "
            f"kept its own buffers, kinds and clock"
        )
    return f"recorded through CUPTI {gpu.cupti_version} ({clock}): {what}; {joined}{failed}{shared}"


CAUSE_WORDS = {
    "preempted": "preempted",
    "runqueue": "run-queue wait",
    "irq": "interrupts",
    "host_work": "the app's host work",
    "launch_call": "launch calls",
    "blocked": "its own waits",
    "gpu_side": "launched, not yet started",
    "before_first": "before its first work",
    "after_last": "after its last work",
    "unknown": "unknown",
    "measurement": "launchgap's own threads",
    "wakeup_latency": "waiting for an idle CPU to wake",
}


def _range(low: int, high: int) -> str:
    return _s(low) if low == high else f"{_s(low)} to {_s(high)}"


def _cgroup_cell(c: CgroupCulprit | GpuCgroupCulprit) -> str:
    """A by-cgroup row's cgroup: what a reader calls it (its pod and container, or its path) and, where that is
    not the path, the path under it; escaped (a cgroup is named by whoever made it). The container's and pod's
    ids are in the name (the container's first 12 characters) and whole in --json."""
    name = literal(c.name)
    return name if c.cgroup is None or c.name == c.cgroup else f"{name}\n[dim]{literal(c.cgroup)}[/]"


def _gpu_cgroup_culprits(rows: list[GpuCgroupCulprit], console: Console) -> None:
    cu = Table(title="Which cgroups cost the GPU time", title_justify="left")
    for col in ("cgroup (its path under its name)", "processes", "while the launching\nthread was", "GPU idle caused"):
        cu.add_column(col, justify="right" if col in ("processes", "GPU idle caused") else "left")
    for c in rows[:10]:
        cu.add_row(
            _cgroup_cell(c),
            "-" if c.cause == "irq" else str(c.processes),
            WHILE_WAITING.get(c.cause, c.cause),
            _range(c.low_ns, c.high_ns),
        )
    if len(rows) > 10:
        cu.caption = f"... {len(rows) - 10} more (report --json has every one)"
        cu.caption_justify = "left"
    console.print(cu)


def _cgroup_culprits(rows: list[CgroupCulprit], console: Console) -> None:
    cu = Table(title="Which cgroups ran while the workload waited", title_justify="left")
    for col in ("cgroup (its path under its name)", "processes", "while it was", "time"):
        cu.add_column(col, justify="right" if col in ("processes", "time") else "left")
    for c in rows[:10]:
        name = (
            "CPU idle: wake-up latency (in a VM, the host had not run the vCPU yet)" if c.is_idle else _cgroup_cell(c)
        )
        cu.add_row(name, str(c.processes), WHILE_WAITING.get(c.cause, c.cause), _s(c.ns))
    if len(rows) > 10:
        cu.caption = f"... {len(rows) - 10} more (report --json has every one)"
        cu.caption_justify = "left"
    console.print(cu)


def _pids(pids: list[int]) -> str:
    shown = ", ".join(str(p) for p in pids[:3])
    return shown + (f" (+{len(pids) - 3})" if len(pids) > 3 else "") if pids else "-"


def _gpu_culprits(g: GpuTime, console: Console, culprits_by: str) -> None:
    """One row per culprit: a command (its processes together), or a process with --culprits-by process; its GPU
    idle, its share of the interference, and its time under each cause."""
    rows = g.culprits_by_process if culprits_by == "process" else g.culprits
    if not rows:
        return
    causes = [c for c in ("preempted", "runqueue", "irq") if any(r.causes.get(c) for r in rows)]
    cu = Table(title="Who cost the GPU time", title_justify="left")
    cu.add_column("culprit", overflow="fold")
    cu.add_column("pid" if culprits_by == "process" else "pids", overflow="fold")
    for col in ("GPU idle caused", "share", *(WHILE_WAITING[c] for c in causes)):
        cu.add_column(col, justify="right")
    for c in rows:
        name = ("irq " if c.is_interrupt else "") + literal(c.name or "an unnamed task")
        share = f"{c.share_percent:.0f}%" if c.share_percent is not None else "-"
        cells = (_s(c.causes[k]) if c.causes.get(k) else "-" for k in causes)
        cu.add_row(name, _pids(c.pids), _range(c.low_ns, c.high_ns), share, *cells)
    console.print(cu)


def _measurement(g: GpuTime) -> str | None:
    """What measuring cost, for the GPU-time table (never interference)."""
    m = g.measurement
    if m is None or not (m.tasks_high_ns or m.probes_estimated_ns):
        return None
    parts = []
    if m.tasks_high_ns:
        names = ", ".join(f"{literal(t.name or '?')} {_s(t.ns)}" for t in m.tasks[:3])
        parts.append(f"launchgap's threads {_range(m.tasks_low_ns, m.tasks_high_ns)} ({names})")
    if m.probes_estimated_ns:
        parts.append(
            f"its probes about {_s(m.probes_estimated_ns)} of the launch calls (estimated at "
            f"{_s(m.probe_ns_per_launch)} a launch: {literal(m.probe_cost_basis)})"
        )
    return "; ".join(parts)


@dataclass(frozen=True)
class _GpuKind:
    """What the GPU-time table says differently for exact GPU time and for bounds (_gpu_kind)."""

    how: str  # the title's words
    lead: list[tuple[str, str]]  # rows before the interference's
    caused: tuple[int, int]  # the interference's GPU idle, low and high
    own: str | None  # the app's own idle, where known
    wakeup: tuple[int, int]
    hidden: str  # what queued GPU work hid of the launching threads' CPU interference
    waited_ns: int  # idle whose host cause is unknown (what a profiler trace alone can say)
    note: str | None


def _gpu_kind(g: GpuTimeExact | GpuTimeBounds) -> _GpuKind:
    hidden = "{} hidden by queued GPU work"
    match g:
        case GpuTimeExact():
            by_cause = ", ".join(
                f"{CAUSE_WORDS.get(c.cause, c.cause)} {_s(c.ns)} ({c.percent:.1f}%)"
                for c in sorted(g.causes, key=lambda c: -c.ns)
            )
            busy = (
                f"{g.busy_percent:.1f}% of its {_s(g.active_ns)} of work (busy {_s(g.busy_ns)}, "
                f"idle {_s(g.idle_ns)} over the whole trace)"
            )
            return _GpuKind(
                how="exact, from GPU activity",
                lead=[("GPU busy", busy), ("idle, by cause", by_cause)],
                caused=(g.interference_ns, g.interference_ns),
                own=f"{_s(g.own_ns)} (host work, launch calls, its own waits)",
                wakeup=(g.wakeup_latency_ns, g.wakeup_latency_ns),
                hidden=hidden.format(f"{g.hidden_percent:.0f}%" if g.hidden_percent is not None else _s(g.hidden_ns)),
                waited_ns=sum(c.ns for c in g.causes if c.cause == "unknown"),
                note=None,
            )
        case GpuTimeBounds():
            return _GpuKind(
                how=f"estimated from the host, as bounds: {literal(g.why or '')}",
                lead=[],
                caused=(g.interference_low_ns, g.interference_high_ns),
                own=None,
                wakeup=(g.wakeup_latency_low_ns, g.wakeup_latency_high_ns),
                hidden=hidden.format(_range(g.hidden_low_ns, g.hidden_high_ns)),
                waited_ns=0,  # no GPU activity: no idle known, caused or not
                note=g.note,
            )


def _gpu_time(g: GpuTime, console: Console, culprits_by: str = "command", host_seen: bool = True) -> None:
    """The GPU-time section: what the GPU lost, and to whom (docs/gpu-time.md). HOST_SEEN false: the trace has
    no thread states (a profiler trace alone), so nothing is said of interference, culprits or a prediction."""
    if isinstance(g, GpuTimeNotEstimated):
        console.print(f"[bold]GPU time[/]: not estimated: {literal(g.why or '')}", highlight=False)
        return
    kind = _gpu_kind(g)
    table = Table(title=f"GPU time ({kind.how})", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for row in kind.lead:
        table.add_row(*row)
    share = lambda ns: f" ({100 * ns / g.active_ns:.2f}% of {_s(g.active_ns)})" if g.active_ns else ""  # noqa: E731
    if not host_seen:
        waited = kind.waited_ns
        table.add_row(
            "idle waiting for the host",
            f"{_s(waited)}{share(waited)}: whether interference caused it is not in a profiler trace",
        )
        console.print(table)
        return
    table.add_row(
        "idle caused by interference",
        _range(*kind.caused) + share(kind.caused[1]) + " (preemption, run-queue waits, interrupts)",
    )
    if kind.own is not None:
        table.add_row("idle for the app's own work", kind.own)
    if kind.wakeup[1]:
        table.add_row("idle waiting for idle CPUs to wake", _range(*kind.wakeup) + " (no task's doing)")
    measuring = _measurement(g)
    if measuring:
        table.add_row("what measuring cost", measuring)
    table.add_row(
        "CPU time the launching threads lost", f"{_s(g.cpu_interference_ns)} while the GPU worked: {kind.hidden}"
    )
    if g.prediction:
        p = g.prediction
        unit = "steps" if p.basis == "steps" else "runs"
        table.add_row(
            "without the interference",
            words.prediction(
                p.predicted_low_per_s,
                p.predicted_high_per_s,
                p.gain_low_percent,
                p.gain_high_percent,
                p.measured_per_s,
                unit,
            ),
        )
    if kind.note:
        table.add_row("note", literal(kind.note))
    console.print(table)
    if culprits_by == "cgroup" and g.culprits_by_cgroup:
        _gpu_cgroup_culprits(g.culprits_by_cgroup, console)
    elif culprits_by != "cgroup":
        _gpu_culprits(g, console, culprits_by)


# why the collectives were not matched across ranks (collectives.py's reasons), in words
NOT_MATCHED_WORDS = {
    "one_rank": "the trace holds one rank's, nothing to match them with",
    "several_streams": "a rank's collectives lie on several streams (process groups of their own), whose kernels "
    "interleave differently on each rank; matching them needs each collective's communicator and number, which "
    "the trace does not hold yet",
    "counts_differ": "the ranks launched different numbers of them (a rank missing from the trace, or cut short)",
    "kernels_differ": "the ranks' kernels in the same place differ (a rank missing from the trace, or one with "
    "collectives of its own)",
}


def _collective_rank(r) -> str:
    rank = f", rank {r.rank}" if r.rank is not None else ""
    return f"pid {r.pid}, device {r.device_id}{rank}"


def _collectives(c: Collectives, console: Console) -> None:
    """Each rank's collective kernels, what they cost the GPU, and (matched across ranks) their wait for the
    last rank (docs/gpu-time.md, "Collectives")."""
    which = "NCCL" + (f" and {literal(c.pattern)}" if c.pattern is not None else "")
    table = Table(title=f"Collective kernels ({which})", title_justify="left")
    matched = c.matched_by is not None
    waits = ("waiting for the last rank", "transferring", "last to start") if matched else ()
    for col in ("rank", "kernels", "GPU time", *waits, "names"):
        table.add_column(col, justify="left" if col in ("rank", "names") else "right", overflow="fold")
    for r in c.ranks:
        names = ", ".join(f"{literal(n.name)} x{n.kernels:,} ({_s(n.gpu_ns)})" for n in r.names[:4])
        if len(r.names) > 4:
            names += f", {len(r.names) - 4} more"
        cells = []
        if matched:
            share = f" ({100 * r.wait_ns / r.gpu_ns:.1f}%)" if r.gpu_ns else ""
            cells = [_s(r.wait_ns) + share, _s(r.transfer_ns), f"{r.last_arrivals:,} of {c.matched:,}"]
        table.add_row(_collective_rank(r), f"{r.kernels:,}", _s(r.gpu_ns), *cells, names)
    if matched:
        table.caption = (
            f"{c.matched:,} collectives matched across the ranks by their order: each rank's k-th collective kernel "
            "with the others' k-th (the trace holds no communicator or sequence number yet). Waiting: from a "
            "kernel's start to the last rank's start of it, busy on the GPU; transferring: the rest."
        )
    else:
        table.caption = f"Not matched across ranks: {NOT_MATCHED_WORDS.get(c.not_matched or '', c.not_matched)}."
    table.caption_justify = "left"
    console.print(table)


def _by_api(driver: dict[str, int], runtime: dict[str, int] | None, total: int) -> str:
    """Calls by the driver's entry point, and with --api-names by the runtime's that made them."""
    said = ", ".join(f"{literal(k)} {v:,}" for k, v in driver.items()) or "none"
    if runtime is None:
        return said
    through = [f"{literal(k)} {v:,}" for k, v in runtime.items()]
    direct = total - sum(runtime.values())
    if direct:
        through.append(f"the driver called directly {direct:,}")
    return f"driver: {said}; runtime: {', '.join(through) or 'none'}"


# the header names this many of the processes a recording attached to (-p), then says how many more
PIDS_NAMED = 8


def _profiler(files: list[ProfilerFile], console: Console) -> None:
    """What each PyTorch profiler file holds, its window, and (joined) how its clock was put on the recording's."""
    table = Table(title="PyTorch profiler", title_justify="left")
    for col in ("file", "process", "devices", "active window", "GPU work", "clock"):
        table.add_column(col)
    for f in files:
        window = _s(f.window_end_ns - f.window_start_ns)
        if f.window_percent is not None:
            window += f" ({f.window_percent:.1f}% of the recording)"
        work = f"{f.kernels:,} kernels"
        if f.nccl_kernels:
            work += f" ({f.nccl_kernels:,} NCCL)"
        if f.graph_nodes:
            work += f", {f.graph_nodes:,} of them graph nodes"
        work += f", {f.copies:,} copies, {f.memsets:,} memsets; {f.calls:,} CUDA calls"
        if f.foreign_thread_calls:
            work += (
                f"; {f.foreign_thread_calls:,} calls on thread ids that are not the kernel's (their threads unknown)"
            )
        if f.damage:
            work += "; [bold red]left out[/]: " + ", ".join(f"{n:,} {literal(what)}" for what, n in f.damage.items())
        c = f.clock
        if c is None:
            clock = "its own (CLOCK_REALTIME)"
        elif c.method == "launches":
            clock = (
                f"fitted to {c.launches_matched:,} probed launches: residual {_s(c.residual_ns)}, slope "
                f"{c.slope_ppm:+.1f} ppm"
            )
        else:
            clock = f"the recording's clock readings (within {_s(c.recorded_uncertainty_ns)})"
        if c is not None and c.stepped:
            clock += "; [bold red]the system clock was set during the recording[/]"
        rank = f", rank {f.rank}" if f.rank is not None else ""
        table.add_row(
            literal(f.path),
            f"{f.pid if f.pid is not None else '-'}{rank}",
            ", ".join(map(str, f.devices)),
            window,
            work,
            clock,
        )
    console.print(table)


def _header(trace: TraceInfo) -> str:
    """What was read: mode, command, host, kernel, CPUs, each only where the file says."""
    path = f"[bold]{literal(trace.path)}[/]"
    if trace.mode == "profiler":
        return (
            f"{path}: a PyTorch profiler trace alone: the GPU's work and the calls that made it, not who held the CPU"
        )
    if trace.mode == "study-csv":
        writer = {
            "cuda_sched_trace": "written by the study's tool (cuda_sched_trace)",
            "launchgap export": "written by launchgap export --csv",
        }.get(trace.csv_source or "", "")
        return f"{path}: the study's CSV layout, {writer}; no host, kernel or CPU information in the file"
    if trace.mode == "pids" and trace.pids:
        shown = ", ".join(str(p) for p in trace.pids[:PIDS_NAMED])
        more = f" and {len(trace.pids) - PIDS_NAMED} more" if len(trace.pids) > PIDS_NAMED else ""
        where = f"{'pid' if len(trace.pids) == 1 else 'pids'} {shown}{more}"
    else:
        where = " ".join(literal(str(part)) for part in (trace.mode, " ".join(map(str, trace.command or []))) if part)
    host = []
    if trace.kernel:
        host.append(literal(trace.kernel))
    if trace.cpus:
        host.append(f"{trace.cpus} CPUs")
    head = f"{path}: {where}" + (f" on {literal(trace.host)}" if trace.host else "")
    head += f" ({', '.join(host)})" if host else ""
    if trace.truncated or not trace.clean_end:
        head += "  [bold red]trace cut short: the recorder did not stop cleanly[/]"
    return head


# a paragraph's width where there is no terminal to fit (a pipe, a log): lines a reader and a diff can take
PLAIN_WIDTH = 100


def _verdict(level: str, text: str, style: str, console: Console) -> None:
    """The verdict: a box on a terminal (fitted to its width); elsewhere a heading and a plain paragraph
    wrapped at PLAIN_WIDTH, where a box would be one line hundreds of characters long."""
    # the verdict's sentences name culprits: their names reach the terminal as the characters they hold
    text = shown(text)
    if console.is_terminal:
        # not expanded: a short verdict keeps a short box
        console.print(Panel(Text(text), title=f"Verdict: {literal(level)}", border_style=style, expand=False))
        return
    console.print(f"Verdict: {shown(level)}", markup=False, highlight=False)
    for line in textwrap.wrap(text, PLAIN_WIDTH, break_long_words=False, break_on_hyphens=False):
        console.print(line, markup=False, highlight=False)


def _caveats(trace: TraceInfo, console: Console, verbose: bool) -> None:
    """What the numbers cannot show: one line, each caveat with -v (and then the minor ones too)."""
    if verbose:
        for caveat in trace.caveats:
            console.print(f"[bold yellow]caveat[/]: {literal(say(caveat))}", highlight=False)
        for caveat in trace.minor_caveats:
            console.print(f"[yellow]minor caveat[/]: {literal(say(caveat))}", highlight=False)
        return
    if trace.caveats:
        what = "caveat" if len(trace.caveats) == 1 else "caveats"
        console.print(
            f"[bold yellow]{len(trace.caveats)} {what}[/] on what the trace could see "
            f"(`launchgap report -v` says each)",
            highlight=False,
        )


def _overview(report: Report, console: Console) -> None:
    """The Overview table: what the trace holds, with the report's warnings beside each figure."""
    o = report.overview
    ov = Table(title="Overview", show_header=False, title_justify="left")
    ov.add_column(style="bold")
    ov.add_column()
    ov.add_row("wall time", _s(o.wall_ns))
    ov.add_row("processes / threads", f"{len(o.processes)} / {o.threads} ({o.launching_threads} launching)")
    apis = _by_api(o.launches_by_api, o.launches_by_runtime_api, o.launches)
    ov.add_row("kernel launches", f"{o.launches:,} ({apis}), {_n(o.launch_rate_hz, 0)}/s" + _warn(report, "launches"))
    syncs = f" ({_by_api(o.syncs_by_api, o.syncs_by_runtime_api, o.syncs)})" if o.syncs_by_runtime_api else ""
    ov.add_row("syncs", f"{o.syncs:,} blocking {_s(o.sync_ns)}{syncs}" + _warn(report, "syncs"))
    ov.add_row("GPU activity", _gpu_activity(report.gpu_activity, report.profiler))
    ov.add_row("failed launch attempts", _failed_launches(o.failed_launches) + _warn(report, "failed_launches"))
    ov.add_row(
        "context switches",
        f"{o.switches:,}: {o.preempted_switches:,} preempted (still runnable), "
        f"{o.blocked_switches:,} blocked (voluntary)" + _warn(report, "switches"),
    )
    irq = ", ".join(f"{literal(i.name)} {i.count}" for i in o.irqs[:6]) or "none"
    ov.add_row("interrupts on traced CPUs", irq + _warn(report, "irqs"))
    lost = ", ".join(f"{literal(k)} {v:,}" for k, v in o.lost_events.items()) or "none"
    ov.add_row("lost events", lost if lost == "none" else f"[bold red]{lost}[/]")
    console.print(ov)


def _study_metrics(m: StudyMetrics, console: Console) -> None:
    """The study's metrics, per 1,000 launches (docs/metrics.md)."""
    st = Table(title="The study's metrics (per 1,000 launches)", title_justify="left")
    for col in ("Sched/1K", "Sched/1K (study)", "SoftIRQ/1K", "HardIRQ/1K", "IRQ time", "off-CPU", "switch rate"):
        st.add_column(col, justify="right")
    st.caption = (
        "Sched/1K: context switches (switch-outs) of the workload; Sched/1K (study): the study script's "
        "arithmetic, a row per switch-out and per switch-in (docs/metrics.md)"
    )
    st.caption_justify = "left"
    st.add_row(
        _n(m.sched_per_1k_launches),
        _n(m.sched_rows_per_1k_launches_study),
        _n(m.softirq_per_1k_launches),
        _n(m.hardirq_per_1k_launches),
        _s(m.irq_ns),
        f"{_s(m.off_cpu_ns)} ({m.off_cpu_percent:.2f}%)",
        f"{m.switch_rate_hz:.1f} Hz",
    )
    console.print(st)


def _taken(report: Report, console: Console, culprits_by: str) -> None:
    """The time taken from each thread of the workload, then who took it, by task or by cgroup."""
    o, t = report.overview, report.taken
    tk = Table(title="Time taken from the workload (blocking is the app's own, shown apart)", title_justify="left")
    for col in (
        "thread",
        "launches",
        "preempted",
        "run-queue wait",
        "IRQ",
        "taken",
        "migrations",
        "blocked",
        "top culprit",
    ):
        tk.add_column(col, justify="left" if col in ("thread", "top culprit") else "right")
    total = t.total
    for row in t.threads[:12]:
        culprit = row.culprits[0] if row.culprits else None
        tk.add_row(
            f"{literal(row.comm)} {row.pid}/{row.tid}",
            f"{row.launches:,}",
            _s(row.preempted_ns),
            _s(row.runqueue_ns),
            _s(row.irq_ns),
            f"{row.taken_percent:.2f}%",
            f"{row.migrations}",
            _s(row.blocked_ns),
            f"{literal(culprit.comm)} ({culprit.pid}) {_s(culprit.ns)}" if culprit else "-",
        )
    if len(t.threads) > 12:
        tk.add_row(f"... {len(t.threads) - 12} more", "", "", "", "", "", "", "", "")
    tk.add_row(
        "[bold]all threads[/]",
        f"{o.launches:,}",
        _s(total.preempted_ns),
        _s(total.runqueue_ns),
        _s(total.irq_ns),
        "",
        f"{total.migrations}",
        _s(total.blocked_ns),
        "",
    )
    console.print(tk)
    if culprits_by == "cgroup" and t.culprits_by_cgroup:
        _cgroup_culprits(t.culprits_by_cgroup, console)
    elif culprits_by != "cgroup" and t.culprits:
        cu = Table(title="Who ran while the workload waited", title_justify="left")
        for col in ("task", "pid", "while it was", "time"):
            cu.add_column(col, justify="right" if col == "time" else "left")
        for c in t.culprits:
            name = literal(c.comm) + (" (launchgap's own: measurement)" if c.is_recorder else "")
            if c.is_idle:
                name = "CPU idle: wake-up latency (in a VM, the host had not run the vCPU yet)"
            cu.add_row(name, str(c.pid), "preempted" if c.cause == "preempted" else "woken, waiting to run", _s(c.ns))
        console.print(cu)


def _launch_gaps(report: Report, console: Console) -> None:
    """The launch gaps by class, their tails and bursts."""
    g = report.gaps
    if g.classes:
        gt = Table(
            title=f"Launch gaps ({g.count:,}), classified by what took most of each" + _warn(report, "gaps"),
            title_justify="left",
        )
        for col in ("class", "count", "share", "p50", "p90", "p99", "penalty vs clean"):
            gt.add_column(col, justify="left" if col == "class" else "right")
        for c in g.classes:
            gt.add_row(
                literal(c.klass),
                f"{c.count:,}",
                f"{100 * c.share:.2f}%",
                _s(c.p50_ns),
                _s(c.p90_ns),
                _s(c.p99_ns),
                _s(c.penalty_ns),
            )
        console.print(gt)
        for tail in g.tail:
            parts = [f"{literal(k)} {100 * v.time_share:.1f}%" for k, v in tail.by_class.items() if v.count]
            console.print(
                f"  gaps >= p{tail.percentile} ({_s(tail.threshold_ns)}, {tail.gaps:,} gaps), "
                f"share of their time: {', '.join(parts)}"
            )
        b = g.bursts
        if b.bursts:
            console.print(
                f"  bursts: {b.bursts:,}, launches per burst p50 {b.launches_per_burst_p50:.0f} / "
                f"p90 {b.launches_per_burst_p90:.0f}, idle between bursts p50 "
                f"{_s(b.idle_between_bursts_p50_ns)}"
            )
    else:
        console.print("No kernel launches in this trace: no launch-gap analysis.")


def render(report: Report, console: Console, culprits_by: str = "command", verbose: bool = False) -> None:
    """The report on CONSOLE, its culprit tables by task or, with CULPRITS_BY "cgroup", by cgroup (the caller
    checks the trace records cgroups: Taken.culprits_by_cgroup is not None). VERBOSE adds the minor caveats
    (report.MINOR_CAVEAT_PERCENT)."""
    trace = report.trace
    # the trace's path and command whole on one line, never folded (a reader copies it; a script greps it)
    console.print(_header(trace), highlight=False, soft_wrap=True)
    for damage in trace.damage:
        console.print(f"[bold red]damaged[/]: {literal(damage)}", highlight=False)
    # the answer first
    style = {"negligible": "green", "light": "yellow", "heavy": "red", "uncertain": "yellow"}.get(
        report.verdict.level, "blue"
    )
    _verdict(report.verdict.level, verdict_text(report.verdict), style, console)
    _caveats(trace, console, verbose)
    if report.profiler:
        _profiler(report.profiler, console)
    _gpu_time(report.gpu_time, console, culprits_by, host_seen=trace.mode != "profiler")
    if report.collectives is not None:
        _collectives(report.collectives, console)
    if trace.mode == "profiler":
        console.print(
            "No thread states in a profiler trace: the time taken from the workload, its launch gaps and "
            "their culprits need a launchgap recording of the same run, joined with `launchgap report "
            "RUN.lg --kineto TRACE`.",
            highlight=False,
        )
        return

    _overview(report, console)
    _study_metrics(report.study_metrics, console)
    _taken(report, console, culprits_by)
    _launch_gaps(report, console)

    if report.host_checks:
        from launchgap.doctor.render import render_host_checks

        render_host_checks(report.host_checks.to_json(), console)
    for metric, bound in report.warnings.items():
        console.print(f"[bold red]warning[/]: {literal(metric)}: {literal(say(bound))}")


def render_cgroup_diff(compared: CgroupCulpritsDiff, console: Console) -> None:
    """`diff --culprits-by cgroup`: each cgroup's culprit time in A and in B (analysis/diff.py)."""
    for rows, title, what in (
        (compared.cpu, "Which cgroups ran while the workload waited, A and B", "time"),
        (compared.gpu, "Which cgroups cost the GPU time, A and B (upper bounds where estimated)", "GPU idle caused"),
    ):
        if not rows:
            continue
        table = Table(title=title, title_justify="left")
        for col in ("cgroup", "while it was", f"{what} A", f"{what} B", "B vs A"):
            table.add_column(col, justify="left" if col in ("cgroup", "while it was") else "right")
        for r in rows[:20]:
            table.add_row(
                literal(r.name),
                WHILE_WAITING.get(r.cause, r.cause),
                _s(r.a_ns),
                _s(r.b_ns),
                words.change(r.change_percent),
            )
        if len(rows) > 20:
            table.caption = f"... {len(rows) - 20} more (diff --json has every one)"
            table.caption_justify = "left"
        console.print(table)
