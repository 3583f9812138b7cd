"""`launchgap convert`: a trace in the other format (format 1, the legacy Arrow
IPC stream, and format 2, the directory of per-kind Parquet tables). Every
kind's rows, the metadata and the closing summary carry over; what the reader
left out of a damaged trace (and said) stays out."""

from __future__ import annotations

from pathlib import Path

from launchgap.trace.format1 import write_format1
from launchgap.trace.format2 import write_format2
from launchgap.trace.model import Trace
from launchgap.trace.schema import Event, MetaKey


def convert(trace: Trace, out: Path, version: int) -> int:
    """Writes TRACE in format VERSION at OUT (an empty directory for format 2, a new file for 1); returns the
    rows written."""
    frames = {kind: trace.of(kind) for kind in Event if trace.count(kind)}
    meta = {**trace.meta, MetaKey.CONVERTED_FROM: {"format": trace.format, "path": str(trace.path)}}
    if version == 2:
        write_format2(out, frames, meta, trace.summary)
    else:
        write_format1(out, frames, meta, trace.summary)
    return sum(frame.height for frame in frames.values())
