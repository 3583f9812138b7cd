"""launchgap's command line: parses arguments, then calls the pipeline."""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console
from rich.table import Table

from launchgap import __version__
from launchgap.recorder import ENV_OVERRIDE, find_recorder
from launchgap.workloads.cudasim_truth import TruthError, load_truth


def recorder_binary_hint() -> str:
    return f"build it with `make setup`, put launchgap-record on PATH, or set {ENV_OVERRIDE}"

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"launchgap: {message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="launchgap")
def main() -> None:
    """Measure how the Linux scheduler and interrupts steal time from a workload,
    above all the CPU thread that launches GPU kernels."""


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
    # click drops a bare "--"; the recorder needs it, so pass our argv on verbatim
    passed = sys.argv[sys.argv.index("record") + 1 :] if "record" in sys.argv else list(recorder_args)
    os.execv(str(binary), [str(binary), *passed])


@main.command("cudasim-truth")
@click.argument("path", type=click.Path(dir_okay=False))
def cudasim_truth(path: str) -> None:
    """Summarise a cudasim ground-truth file (cudasim decode --truth PATH)."""
    try:
        truth = load_truth(path)
    except TruthError as err:
        fail(str(err))
    raw = truth.raw
    cfg = raw["config"]
    console.print(
        f"[bold]cudasim ground truth[/bold]: {cfg['binary']} decode, api={cfg['api']}, "
        f"launch={cfg['launch']}, sync={cfg['sync']}, {cfg['procs']} process(es) x "
        f"{cfg['threads']} thread(s), seed {cfg['seed']}"
    )
    console.print(
        f"{raw['tokens']} tokens in {raw['wall_s']:.3f} s = {raw['tokens_per_s']:.1f} tok/s; "
        f"{raw['totals']['launches']} launches ({raw['totals']['kernels']} kernels), "
        f"{raw['totals']['syncs']} syncs blocking {raw['totals']['sync_wait_ns'] / 1e6:.1f} ms"
    )
    table = Table(title="calls by API, as the stand-in driver logged them")
    for column in ("driver API", "runtime API", "calls"):
        table.add_column(column, justify="right" if column == "calls" else "left")
    for frame in (truth.launches, truth.syncs):
        counts = frame.group_by(["api", "runtime_api"]).len().sort("len", descending=True)
        for api, runtime_api, n in counts.iter_rows():
            table.add_row(api, runtime_api or "-", str(n))
    console.print(table)
    threads = Table(title="per launching thread")
    for column in ("pid", "tid", "tokens", "launches", "syncs"):
        threads.add_column(column, justify="right")
    for row in truth.threads.iter_rows():
        threads.add_row(*(str(v) for v in row))
    console.print(threads)


if __name__ == "__main__":
    main()
