"""launchgap traces: an Arrow IPC stream, one row per event.

Any Arrow reader opens a complete trace (`pl.read_ipc_stream(path)`); this
reader also accepts a trace cut short (a killed recorder): it keeps every
complete batch and says the trace is truncated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc

FORMAT_NAME = "launchgap-trace"
SUPPORTED_VERSIONS = {1}


class TraceError(ValueError):
    """The file is not a launchgap trace this version can read."""


@dataclass(frozen=True)
class Trace:
    path: Path
    meta: dict
    events: pl.DataFrame
    truncated: bool
    # for traces imported from other tools, which have no closing row
    end_ns: int | None = None

    @property
    def end(self) -> dict | None:
        """The recorder's closing summary, absent when the recorder was killed."""
        ends = self.events.filter(pl.col("event") == "trace_end")
        if ends.is_empty():
            return {"end_ns": self.end_ns, "lost_events": 0} if self.end_ns is not None else None
        return json.loads(ends["detail"][0])

    def of(self, event: str, *columns: str) -> pl.DataFrame:
        """Rows of one event kind; with columns named, only those (much cheaper on big traces)."""
        frame = self.events.lazy().filter(pl.col("event") == event)
        if columns:
            frame = frame.select(columns)
        return frame.collect()

    @property
    def lost(self) -> pl.DataFrame:
        return self.of("lost").select("ts_ns", "cpu", "lost_event", "lost_count", "since_ns")


def read_trace(path: str | Path) -> Trace:
    path = Path(path)
    try:
        source = pa.memory_map(str(path), "r")
    except (OSError, pa.ArrowException) as err:
        raise TraceError(f"{path}: cannot open ({err})") from err
    try:
        reader = pa.ipc.open_stream(source)
    except pa.ArrowException as err:
        raise TraceError(f"{path}: not a launchgap trace (no Arrow stream header)") from err
    metadata = reader.schema.metadata or {}
    fmt = metadata.get(b"format", b"").decode()
    name, _, version = fmt.partition("/")
    if name != FORMAT_NAME:
        raise TraceError(f"{path}: not a launchgap trace (format {fmt or 'missing'!r})")
    if not version.isdigit() or int(version) not in SUPPORTED_VERSIONS:
        raise TraceError(
            f"{path}: trace format version {version} is not supported "
            f"(this launchgap reads {sorted(SUPPORTED_VERSIONS)})"
        )
    meta = json.loads(metadata[b"launchgap"])
    batches = []
    truncated = False
    while True:
        try:
            batches.append(reader.read_next_batch())
        except StopIteration:
            break
        except (pa.ArrowException, OSError):
            truncated = True
            break
    table = pa.Table.from_batches(batches, schema=reader.schema)
    events = pl.from_arrow(table)
    assert isinstance(events, pl.DataFrame)
    # a dozen distinct values over millions of rows: filters compare small integers
    events = events.with_columns(pl.col("event").cast(pl.Categorical))
    return Trace(path, meta, events, truncated)
