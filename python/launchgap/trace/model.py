"""A trace as the analysis sees it, whatever it was read from: per-kind
tables, the metadata, the closing summary, and what was found damaged.

Each event kind is its own table (docs/trace-format.md): `trace.scan(kind)`
is a lazy frame of it (nothing is read until it is collected, so a consumer
that streams or selects a few columns reads no more than that), and
`trace.of(kind, *columns)` the frame itself. Both have exactly the kind's
columns (schema/trace.toml), in order, with their types; a column the source
lacks is null.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import polars as pl

from launchgap.trace.columns import conform, empty, polars_schema
from launchgap.trace.schema import Event


class TraceError(ValueError):
    """The file is not a launchgap trace this version can read (message says why, on one line)."""


class Tables(Protocol):
    """Where a trace's rows come from: one lazy frame per kind, already shaped to it."""

    def scan(self, kind: Event) -> pl.LazyFrame: ...

    def count(self, kind: Event) -> int: ...


class FrameTables:
    """Kinds held in memory (a study CSV, frames made by a test or an importer)."""

    def __init__(self, frames: dict[Event, pl.DataFrame]):
        self._frames = {kind: conform(kind, frame.lazy()).collect() for kind, frame in frames.items()
                        if frame.height}

    def scan(self, kind: Event) -> pl.LazyFrame:
        frame = self._frames.get(kind)
        return (frame if frame is not None else empty(kind)).lazy()

    def count(self, kind: Event) -> int:
        frame = self._frames.get(kind)
        return 0 if frame is None else frame.height


class WideTables:
    """Format 1: every kind in one wide frame, told apart by its `event` column."""

    def __init__(self, wide: pl.DataFrame):
        self._wide = wide
        counts = wide.group_by(pl.col("event").cast(pl.String)).len()
        self._counts = {kind: n for kind, n in counts.iter_rows()}

    def scan(self, kind: Event) -> pl.LazyFrame:
        if not self._counts.get(kind.value):
            return empty(kind).lazy()
        return conform(kind, self._wide.lazy().filter(pl.col("event") == kind.value))

    def count(self, kind: Event) -> int:
        return self._counts.get(kind.value, 0)


class ParquetTables:
    """Format 2: each kind's Parquet segments, read lazily; rows found impossible when the trace
    was opened are filtered out on every read (`drop`: a kind's expression for them)."""

    def __init__(self, files: dict[Event, list[Path]], counts: dict[Event, int],
                 drop: dict[Event, pl.Expr] | None = None):
        self._files = {kind: paths for kind, paths in files.items() if paths}
        self._counts = counts
        self._drop = drop or {}

    def scan(self, kind: Event) -> pl.LazyFrame:
        paths = self._files.get(kind)
        if not paths:
            return empty(kind).lazy()
        frame = pl.scan_parquet([str(p) for p in paths], schema=polars_schema(kind), missing_columns="insert",
                                extra_columns="ignore", glob=False)
        bad = self._drop.get(kind)
        if bad is not None:
            frame = frame.filter(~bad)
        return conform(kind, frame)

    def count(self, kind: Event) -> int:
        return self._counts.get(kind, 0)

    def files(self, kind: Event) -> list[Path]:
        return list(self._files.get(kind, []))


@dataclass(frozen=True)
class Trace:
    path: Path
    meta: dict
    tables: Tables = field(repr=False)
    truncated: bool
    # the recorder's closing summary (format 2's end.json, format 1's trace_end row); None if it did not stop cleanly
    summary: dict | None = None
    # for traces imported from other tools, which have no closing summary
    end_ns: int | None = None
    # what was found damaged and left out, one sentence each (empty for a sound file)
    damage: tuple[str, ...] = ()
    # the format it was read from (1 or 2; 0 for the study's CSV)
    format: int = 2

    @property
    def end(self) -> dict | None:
        """The closing summary, absent when the recorder was killed."""
        if self.summary is not None:
            return self.summary
        return {"end_ns": self.end_ns, "lost_events": 0} if self.end_ns is not None else None

    def scan(self, kind: Event) -> pl.LazyFrame:
        """One kind's rows, lazily: select and filter before collecting to read only that."""
        return self.tables.scan(Event(kind))

    def of(self, kind: Event, *columns: str) -> pl.DataFrame:
        """One kind's rows; with columns named, only those (much cheaper on big traces)."""
        frame = self.scan(kind)
        if columns:
            frame = frame.select(columns)
        return frame.collect()

    def count(self, kind: Event) -> int:
        """How many rows of a kind (without reading them)."""
        return self.tables.count(Event(kind))

    def has_events(self, kinds: Iterable[Event] | None = None) -> bool:
        """Whether any row of KINDS (default: every kind but lost) is in the trace."""
        wanted = kinds if kinds is not None else [k for k in Event if k is not Event.LOST]
        return any(self.count(k) for k in wanted)

    def span_ns(self) -> tuple[int | None, int | None]:
        """The first and last timestamp of any row."""
        parts = [self.scan(k).select(pl.col("ts_ns").min().alias("lo"), pl.col("ts_ns").max().alias("hi"))
                 for k in Event if self.count(k)]
        if not parts:
            return None, None
        both = pl.concat(parts).select(pl.col("lo").min(), pl.col("hi").max()).collect()
        lo, hi = both.row(0)
        return (int(lo) if lo is not None else None, int(hi) if hi is not None else None)

    def cpus_seen(self) -> set[int]:
        """Every CPU a row happened on."""
        parts = [self.scan(k).select(pl.col("cpu").drop_nulls().unique()) for k in Event if self.count(k)]
        if not parts:
            return set()
        return {int(c) for c in pl.concat(parts).unique().collect()["cpu"].to_list()}

    @property
    def lost(self) -> pl.DataFrame:
        return self.of(Event.LOST, "ts_ns", "cpu", "lost_event", "lost_count", "since_ns")
