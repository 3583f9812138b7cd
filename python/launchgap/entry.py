"""The `launchgap` command's entry point. `launchgap record` and `launchgap monitor` only run a
standalone binary, so they exec it before anything else is imported: the full command line
(launchgap.cli) imports polars, numpy and the analysis, about a second of CPU, and beside a
busier task sharing the CPU (a `nice -19` hog in the same session) that second became tens of
seconds before the recorder even started (issue 34, item 8). Everything else, and any case the
fast path cannot settle (no binary, one that cannot be executed), goes to launchgap.cli, which
says what is wrong."""

from __future__ import annotations

import os
import sys

# the subcommands that are a standalone binary and nothing more: argv[1] as click would dispatch it
STANDALONE = ("record", "monitor")


def exec_standalone(argv: list[str]) -> None:
    """Replaces this process with the binary `argv[1]` names, passing the rest of argv verbatim
    (a bare `--` included, which click would drop). Returns only when it cannot: the full
    command line then reports why."""
    if len(argv) < 2 or argv[1] not in STANDALONE:
        return
    from launchgap.recorder import find_monitor, find_recorder

    binary = find_recorder() if argv[1] == "record" else find_monitor()
    if binary is None or not binary.is_file() or not os.access(binary, os.X_OK):
        return
    try:
        os.execv(str(binary), [str(binary), *argv[2:]])
    except OSError:
        return


def run() -> None:
    """The `launchgap` command."""
    exec_standalone(sys.argv)
    from launchgap.cli import run as run_cli

    run_cli()
