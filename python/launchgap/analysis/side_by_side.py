"""Two independent steps of an analysis run at once, one in a worker thread.

The scheduling analysis is numpy for the most part, and numpy uses one CPU; polars uses all of them but
only in its own steps. Steps that need nothing of each other (a trace's thread segments and its CPUs'
run slices; the culprits and the per-state totals of those segments) can share the CPUs instead. numpy
and polars release the GIL while they work on arrays, so a thread is enough, and the results are the
same values whichever finishes first: on the 4.07M-event storm of docs/benchmarks.md this takes
`launchgap report` from about 1.75 s to 1.5 s wall on 2 quiet CPUs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

First = TypeVar("First")
Second = TypeVar("Second")


def side_by_side(first: Callable[[], First], second: Callable[[], Second]) -> tuple[First, Second]:
    """(FIRST(), SECOND()), FIRST run in a worker thread while SECOND runs in this one. An exception of
    either is raised here, after both have stopped (the pool waits for its worker on the way out)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="launchgap-analysis") as pool:
        pending = pool.submit(first)
        second_result = second()
        return pending.result(), second_result
