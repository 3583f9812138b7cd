"""Two independent steps of an analysis run at once, one in a worker thread.

The scheduling analysis is numpy for the most part, and numpy uses one CPU; polars uses all of them but
only in its own steps. Steps that need nothing of each other (a trace's thread segments and its CPUs'
run slices; the culprits and the per-state totals of those segments) can share the CPUs instead. numpy
and polars release the GIL while they work on arrays, so a thread is enough, and the results are the
same values whichever finishes first (docs/benchmarks.md, the storm: with the other changes of that
section, `launchgap report` from about 2.06 s to 1.5 s wall on 2 quiet CPUs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

First = TypeVar("First")
Second = TypeVar("Second")


def side_by_side(first: Callable[[], First], second: Callable[[], Second]) -> tuple[First, Second]:
    """(FIRST(), SECOND()), FIRST run in a worker thread while SECOND runs in this one. FIRST's exception is
    raised here once both are done. SECOND's (Ctrl-C included) leaves at once: the worker is a daemon
    thread, so neither a caller's clean-up (an experiment restoring the host) nor the process's exit
    waits for the rest of FIRST, whose result nobody will read."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = first()
        except BaseException as error:  # handed to the caller, which decides
            outcome["error"] = error

    worker = threading.Thread(target=run, name="launchgap-analysis", daemon=True)
    worker.start()
    second_result = second()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"], second_result
