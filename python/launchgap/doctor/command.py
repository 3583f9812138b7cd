"""`launchgap doctor`: a self-contained click command (cli.py only adds it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from launchgap.console import make_console, shown
from launchgap.doctor.host import DirectoryHost, SnapshotHost
from launchgap.doctor.render import render_doctor
from launchgap.doctor.run import TargetError, run_doctor, target_from_cpus, target_from_pid
from launchgap.inputs import not_regular
from launchgap.trace.schema import MetaKey

# --strict: exit status when any check fails
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2


def _fail(message: str) -> None:
    click.echo(f"launchgap: {shown(message)}", err=True)
    sys.exit(EXIT_USAGE)


def _trace_host(path: str) -> SnapshotHost:
    from launchgap.cli_common import load

    kind = not_regular(path)
    if kind:
        _fail(f"--trace {path}: {kind}, not a trace")
    trace = load(path, warn=False)  # one line for whatever cannot be read
    if trace.meta.get(MetaKey.MODE) == "study-csv":
        _fail(
            f"--trace {path}: a study CSV, which keeps no host files; doctor needs a launchgap trace (launchgap record)"
        )
    snapshot = trace.meta.get(MetaKey.HOST_FILES)
    if not snapshot:
        _fail(f"{path}: the trace carries no host files (recorded by an older recorder, or imported)")
    if not isinstance(snapshot, dict):
        _fail(f"{path}: the trace's host_files are damaged (not a table of files)")
    recorded_on = trace.meta.get(MetaKey.HOST)
    host = (recorded_on.get("hostname") if isinstance(recorded_on, dict) else None) or "?"
    return SnapshotHost(snapshot, f"{host} when {path} was recorded")


@click.command("doctor")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default="/",
    show_default=True,
    help="Read /proc, /sys and /etc under this directory: a copy of another node's files.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON (docs/doctor.md).")
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit {EXIT_CHECK_FAILED} if any check fails, or if no check could say anything (all unknown).",
)
@click.option("--cpus", help="The workload's CPUs (e.g. 2-3): where its interrupts, GPU and siblings are checked.")
@click.option("-p", "--pid", type=int, help="Take the CPUs of this process's threads (Cpus_allowed_list).")
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(),
    help="Check the host a trace was recorded on, from the files the recorder kept (host_files).",
)
@click.option("--brief", is_flag=True, help="Leave out the evidence lines.")
def doctor(
    root: str, as_json: bool, strict: bool, cpus: str | None, pid: int | None, trace_path: str | None, brief: bool
) -> None:
    """Check this node's isolation, interrupt, scheduler and CPU settings:
    boot isolation (nohz_full, isolcpus, rcu_nocbs, irqaffinity), where device
    interrupts land, RT throttling, the preemption model, governor, SMT, THP,
    the GPUs' NUMA nodes and virtualisation. Each check says ok, warn, fail or
    unknown, the file and value it rests on, and a one-line fix. Reads only:
    nothing on the host is changed."""
    if cpus is not None and pid is not None:
        _fail("give --cpus or -p, not both")
    if trace_path is not None:
        if root != "/":
            _fail("give --root or --trace, not both")
        if pid is not None:
            _fail("-p names a process on this host; with --trace give --cpus")
        host = _trace_host(trace_path)
    elif not Path(root).is_dir():
        _fail(f"--root {root}: no such directory")
    else:
        host = DirectoryHost(root)
    try:
        target = (
            target_from_cpus(host, cpus)
            if cpus is not None
            else target_from_pid(host, pid)
            if pid is not None
            else None
        )
    except TargetError as err:
        _fail(str(err))
    result = run_doctor(host, target)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        # the shared console: piped, lines are written whole rather than wrapped at 80 columns
        render_doctor(result.to_dict(), make_console(), evidence=not brief)
    if strict and (result.failed or result.nothing_checked):
        if result.nothing_checked and not as_json:
            click.echo(
                "launchgap: --strict: no check could say anything (every one unknown): nothing was checked", err=True
            )
        sys.exit(EXIT_CHECK_FAILED)
