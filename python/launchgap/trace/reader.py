"""Reading launchgap traces, either format behind one API (trace/model.py):
format 2, a directory of per-kind Parquet segments (trace/format2.py), and
format 1, the legacy single Arrow IPC stream (trace/format1.py). Both check
what they read (trace/checks.py): a damaged trace gives one clear line
(TraceError), or is read without what is damaged, which `trace.damage` says.
"""

from __future__ import annotations

from pathlib import Path

from launchgap.trace.format1 import read_format1
from launchgap.trace.format2 import read_format2
from launchgap.trace.model import Trace, TraceError

__all__ = ["Trace", "TraceError", "read_trace"]


def read_trace(path: str | Path) -> Trace:
    path = Path(path)
    if path.is_dir():
        return read_format2(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    return read_format1(path)
