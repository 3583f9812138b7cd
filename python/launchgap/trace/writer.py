"""Writing launchgap traces from Python (importers, `launchgap convert`, test
builders): per-kind frames in, format 2 (default) or format 1 out."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from launchgap.trace.columns import columns_of, polars_type
from launchgap.trace.directory import is_trace_directory
from launchgap.trace.format1 import write_format1
from launchgap.trace.format2 import write_format2
from launchgap.trace.model import TraceError
from launchgap.trace.schema import FORMAT_VERSION, Event


def frames_from_rows(rows: Iterable[dict]) -> dict[Event, pl.DataFrame]:
    """Row dicts (each with an `event` and any of its kind's columns) as one frame per kind."""
    by_kind: dict[Event, list[dict]] = {}
    for row in rows:
        by_kind.setdefault(Event(row["event"]), []).append(row)
    frames = {}
    for kind, kind_rows in by_kind.items():
        names = [n for n in columns_of(kind) if any(n in r for r in kind_rows)]
        frames[kind] = pl.DataFrame(
            {n: [r.get(n) for r in kind_rows] for n in names}, schema={n: polars_type(n) for n in names}
        )
    return frames


def write_trace(
    path: str | Path,
    frames: dict[Event, pl.DataFrame],
    meta: dict,
    summary: dict | None = None,
    *,
    version: int = FORMAT_VERSION,
    segment_rows: int | None = None,
) -> Path:
    """Writes a trace at PATH (which must not exist, or be a trace this replaces): format 2, a directory
    with segments of SEGMENT_ROWS rows each (as written by the recorder); or format 1, one stream in
    batches of SEGMENT_ROWS rows."""
    path = Path(path)
    if path.is_dir():
        if not is_trace_directory(path):
            raise TraceError(f"{path}: a directory that is not a launchgap trace; refusing to replace it")
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    if version == 1:
        write_format1(path, frames, meta, summary, batch_rows=segment_rows)
    else:
        path.mkdir()
        kwargs = {"segment_rows": segment_rows} if segment_rows else {}
        write_format2(path, frames, meta, summary, **kwargs)
    return path
