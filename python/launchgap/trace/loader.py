"""Opening whatever a command was given: a launchgap trace (a format-2
directory or a format-1 file), a CSV in the study's layout, or a PyTorch
profiler trace (.json, .json.gz). Every failure is a TraceError with one line
saying why."""

from __future__ import annotations

import os
from pathlib import Path

from launchgap.inputs import not_regular
from launchgap.trace.kineto import looks_like_profiler_trace, open_profiler_trace
from launchgap.trace.model import Trace, TraceError
from launchgap.trace.reader import read_trace
from launchgap.trace.study_csv import looks_like_csv, read_study_csv


def open_trace(path: str | Path) -> Trace:
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file or trace")
    if not os.access(path, os.R_OK):
        raise TraceError(f"{path}: cannot open (permission denied)")
    if path.is_dir():
        return read_trace(path)
    kind = not_regular(path)
    if kind:
        # a FIFO would block the CSV sniffing's open for ever; a device is no trace
        raise TraceError(f"{path}: {kind}, not a trace (a file or a trace directory)")
    # named as a profiler trace is (.json, .json.gz): one, whatever its first line looks like
    if path.name.lower().endswith((".json", ".json.gz")):
        return open_profiler_trace(path)
    if looks_like_csv(path):
        return read_study_csv(path)
    if looks_like_profiler_trace(path):
        return open_profiler_trace(path)
    return read_trace(path)
