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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from launchgap.trace.columns import conform, empty, polars_schema
from launchgap.trace.schema import HOST_KINDS, Event

# rows handed out at a time, at least, by Trace.in_time_order (but the last): ~2M timestamps, tens of MB
ORDERED_CHUNK_ROWS = 1 << 21


def collect_streamed(frame: pl.LazyFrame) -> pl.DataFrame:
    """FRAME collected by polars' streaming engine (the memory of the batches in flight, not of the
    rows scanned). A segment the reader's check decoded whole can still trip that engine's stricter
    reading of a damaged footer (an error, or under load a panic in its dictionary-page predicate
    decoding, seen in test_corrupt_input's seeded damage): then the in-memory engine, which reads
    what the check read."""
    try:
        return frame.collect(engine="streaming")
    except (pl.exceptions.ComputeError, pl.exceptions.PanicException):
        return frame.collect()


class TraceError(ValueError):
    """The file is not a launchgap trace this version can read (message says why, on one line)."""


class Tables(Protocol):
    """Where a trace's rows come from: one lazy frame per kind, already shaped to it."""

    def scan(self, kind: Event) -> pl.LazyFrame: ...

    def count(self, kind: Event) -> int: ...

    def pieces(self, kind: Event) -> list[tuple[pl.LazyFrame, int | None]]:
        """The kind's rows as pieces read one at a time, in the order written, each with the least
        timestamp it can hold (None: unknown, so no row of it may come before any later piece's)."""
        ...


class FrameTables:
    """Kinds held in memory (a study CSV, frames made by a test or an importer)."""

    def __init__(self, frames: dict[Event, pl.DataFrame]):
        self._frames = {kind: conform(kind, frame.lazy()).collect() for kind, frame in frames.items() if frame.height}

    def scan(self, kind: Event) -> pl.LazyFrame:
        frame = self._frames.get(kind)
        return (frame if frame is not None else empty(kind)).lazy()

    def count(self, kind: Event) -> int:
        frame = self._frames.get(kind)
        return 0 if frame is None else frame.height

    def pieces(self, kind: Event) -> list[tuple[pl.LazyFrame, int | None]]:
        return [(self.scan(kind), None)]


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

    def pieces(self, kind: Event) -> list[tuple[pl.LazyFrame, int | None]]:
        return [(self.scan(kind), None)]


class ParquetTables:
    """Format 2: each kind's Parquet segments, read lazily; rows found impossible when the trace
    was opened are filtered out on every read (`drop`: a kind's expression for them)."""

    def __init__(
        self,
        files: dict[Event, list[Path]],
        counts: dict[Event, int],
        drop: dict[Event, pl.Expr] | None = None,
        held: dict[Event, pl.DataFrame] | None = None,
    ):
        self._files = {kind: paths for kind, paths in files.items() if paths}
        self._counts = counts
        self._drop = drop or {}
        # kinds kept decoded from the opening check (shaped, impossible rows already out): read from memory
        self._held = held or {}

    def scan(self, kind: Event) -> pl.LazyFrame:
        held = self._held.get(kind)
        if held is not None:
            return held.lazy()
        paths = self._files.get(kind)
        if not paths:
            return empty(kind).lazy()
        frame = pl.scan_parquet(
            [str(p) for p in paths],
            schema=polars_schema(kind),
            missing_columns="insert",
            extra_columns="ignore",
            glob=False,
        )
        bad = self._drop.get(kind)
        if bad is not None:
            frame = frame.filter(~bad)
        return conform(kind, frame)

    def count(self, kind: Event) -> int:
        return self._counts.get(kind, 0)

    @property
    def drop(self) -> dict[Event, pl.Expr]:
        """Each kind's expression for the rows left out on every read."""
        return dict(self._drop)

    @property
    def held(self) -> dict[Event, pl.DataFrame]:
        """The kinds kept decoded in memory."""
        return dict(self._held)

    def files(self, kind: Event) -> list[Path]:
        return list(self._files.get(kind, []))

    def pieces(self, kind: Event) -> list[tuple[pl.LazyFrame, int | None]]:
        if kind in self._held:
            return [(self._held[kind].lazy(), None)]
        out = []
        for path in self._files.get(kind, []):
            frame = pl.scan_parquet(
                str(path), schema=polars_schema(kind), missing_columns="insert", extra_columns="ignore", glob=False
            )
            bad = self._drop.get(kind)
            if bad is not None:
                frame = frame.filter(~bad)
            out.append((conform(kind, frame), _least_ts(path)))
        return out


def _least_ts(path: Path) -> int | None:
    """A segment's least timestamp, from its Parquet statistics (the footer alone); None without them."""
    try:
        meta = pq.ParquetFile(path).metadata
        column = meta.schema.names.index("ts_ns")
        least = None
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(column).statistics
            if stats is None or not stats.has_min_max:
                return None
            least = stats.min if least is None else min(least, stats.min)
        return least
    except (OSError, ValueError, pa.ArrowException):
        return None


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

    def in_time_order(self, kind: Event, *columns: str, least_rows: int | None = None) -> Iterator[pl.DataFrame]:
        """A kind's rows (COLUMNS of them, which must include ts_ns) in timestamp order, a few segments
        at a time: the memory of the segments in flight, however long the trace. A row is handed out
        once no later segment can hold an earlier one (by each segment's least timestamp)."""
        least_rows = ORDERED_CHUNK_ROWS if least_rows is None else least_rows
        pieces = self.tables.pieces(Event(kind))
        # the least timestamp of each piece and every piece after it (None: one of them is unknown)
        later_least: list[int | None] = [None] * (len(pieces) + 1)
        unknown = False
        for i in range(len(pieces) - 1, -1, -1):
            mine, after = pieces[i][1], later_least[i + 1]
            unknown = unknown or mine is None
            later_least[i] = None if unknown else (mine if after is None else min(mine, after))
        held = None
        for i, (piece, _) in enumerate(pieces):
            rows = piece.select(columns).collect()
            held = rows if held is None else pl.concat([held, rows])
            last = i == len(pieces) - 1
            if not last and (held.height < least_rows or later_least[i + 1] is None):
                continue
            if not held["ts_ns"].is_sorted():  # segments are sorted, and follow each other, as a rule
                held = held.sort("ts_ns", maintain_order=True)
            if last:
                ready, held = held, None
            else:
                cut = held["ts_ns"].search_sorted(later_least[i + 1], side="left")
                ready, held = held.head(cut), held.slice(cut)
            if ready.height:
                yield ready

    def has_events(self, kinds: Iterable[Event] | None = None) -> bool:
        """Whether any row of KINDS (default: every kind but lost) is in the trace."""
        wanted = kinds if kinds is not None else [k for k in Event if k is not Event.LOST]
        return any(self.count(k) for k in wanted)

    def span_ns(self) -> tuple[int | None, int | None]:
        """The first and last timestamp of any row."""
        parts = [
            self.scan(k).select(pl.col("ts_ns").min().alias("lo"), pl.col("ts_ns").max().alias("hi"))
            for k in Event
            if self.count(k)
        ]
        if not parts:
            return None, None
        both = collect_streamed(pl.concat(parts).select(pl.col("lo").min(), pl.col("hi").max()))
        lo, hi = both.row(0)
        return (int(lo) if lo is not None else None, int(hi) if hi is not None else None)

    def cpus_seen(self) -> set[int]:
        """Every CPU a row happened on."""
        parts = [
            self.scan(k).select(pl.col("cpu").drop_nulls().unique()) for k in (*HOST_KINDS, Event.LOST) if self.count(k)
        ]
        if not parts:
            return set()
        return {int(c) for c in collect_streamed(pl.concat(parts).unique())["cpu"].to_list()}

    @property
    def lost(self) -> pl.DataFrame:
        return self.of(Event.LOST, "ts_ns", "cpu", "lost_event", "lost_count", "since_ns")
