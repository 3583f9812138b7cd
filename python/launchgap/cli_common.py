"""What every command shares: its consoles, one-line failures, loading a
trace with its damage said, and writing an output safely (output.py)."""

from __future__ import annotations

import math
import os
import re
import signal
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import polars as pl
import pyarrow as pa

from launchgap.console import make_console, shown
from launchgap.inputs import not_regular
from launchgap.output import OutputError, atomic_output, refuse_inputs
from launchgap.trace import Trace, TraceError, open_trace
from launchgap.trace.schema import MetaKey

console = make_console()
err_console = make_console(stderr=True)

# the shell's convention for a process ended by a signal: 128 + the signal's number
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(SystemExit):
    """SIGTERM, raised where the process is, so that every `finally` and every cleanup that catches
    BaseException runs (a half-written output's temporary file is removed, host settings are put back)
    and the process then exits 143, as a process killed by SIGTERM would."""

    def __init__(self) -> None:
        super().__init__(EXIT_TERMINATED)


_terminating = False


def raise_terminated(signum, frame) -> None:
    # raised once: a second SIGTERM during cleanup must not cut the cleanup short (not SIG_IGN, which a
    # child started during cleanup would inherit)
    global _terminating
    if _terminating:
        return
    _terminating = True
    os.write(2, b"launchgap: terminated (SIGTERM): stopping and cleaning up\n")
    raise Terminated()


def exit_cleanly_on_sigterm() -> None:
    """SIGTERM becomes Terminated (exit 143 after cleanup) instead of an immediate death that leaves a
    temporary file or a changed host setting behind."""
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, raise_terminated)


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"launchgap: {shown(message)}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


def note(message: str) -> None:
    """A line on stderr that the user must see but that does not stop the command."""
    err_console.print(f"launchgap: {shown(message)}", markup=False, highlight=False, soft_wrap=True)


def load(path: str, warn: bool = True) -> Trace:
    """The trace (or study CSV) at PATH, or one line saying why not. With WARN,
    a trace cut short or damaged is said on stderr (the report shows it itself)."""
    kind = not_regular(path)
    if kind:
        # a FIFO would block the reader for ever; a device is no trace
        fail(f"{path}: {kind}, not a trace (a file or a trace directory)")
    try:
        trace = open_trace(path)
    except TraceError as err:
        fail(str(err))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, pa.ArrowException, OSError, ValueError) as err:
        # a reader fault that validation did not foresee: still one line
        reason = " ".join((getattr(err, "strerror", None) or str(err) or type(err).__name__).split())[:300]
        fail(f"{path}: cannot read ({reason})")
    if not trace.has_events():
        fail(f"{path}: the trace holds no events")
    if warn:
        warn_damage(trace)
    return trace


def warn_damage(trace: Trace) -> None:
    if trace.truncated:
        note(
            f"warning: {trace.path} was cut short (the recorder did not stop cleanly): it is read up to its last "
            f"complete batch, so every count is a lower bound"
        )
    elif trace.meta.get(MetaKey.MODE) != "study-csv" and trace.end is None:
        note(f"warning: {trace.path} has no closing row (the recorder did not stop cleanly): its end is its last event")
    for damage in trace.damage:
        note(f"warning: {trace.path} is damaged: {damage}")


def check_output(output: str | Path, inputs: Iterable[str | Path]) -> None:
    """Refuses OUTPUT before anything is read or written, if it is one of INPUTS."""
    try:
        refuse_inputs(output, inputs)
    except OutputError as err:
        fail(str(err))


@contextmanager
def safe_output(
    path: str | Path, inputs: Iterable[str | Path] = (), *, directory: bool = False, replaces_trace: bool = False
) -> Iterator[Path]:
    """A temporary path for the writer to fill (write there, not to PATH; an empty
    directory with DIRECTORY); moved to PATH when complete. Writing over an input, a
    read-only place or a full disk becomes one line, and PATH is left as it was.
    REPLACES_TRACE: PATH may be an earlier trace, a file or a trace directory."""
    try:
        with atomic_output(path, inputs, directory=directory, replaces_trace=replaces_trace) as partial:
            yield partial
    except OutputError as err:
        fail(str(err))
    except OSError as err:
        fail(f"{path}: cannot write ({os_reason(err)})")


def os_reason(err: OSError) -> str:
    """The reason in words: the errno's text (polars' own errors append "(os error N)")."""
    if err.errno:
        return os.strerror(err.errno)
    text = err.strerror or str(err)
    return re.sub(r"\s*\(os error \d+\)", "", text).strip() or type(err).__name__


def finite_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: --min/--max must be real numbers of seconds."""
    if value is not None and not math.isfinite(value):
        fail(f"{param.opts[0]}: {value} is not a finite number of seconds")
    return value
