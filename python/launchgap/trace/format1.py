"""Format 1 (legacy): one Arrow IPC stream, one row per event, every kind in
one wide table (docs/trace-format.md, "Format 1"). Read for traces recorded
before format 2 (and with `launchgap-record --format 1`); written only by
`launchgap convert`.

Reading keeps every complete batch of a stream cut short (a killed recorder)
and says the trace is truncated, and checks the stream's framing and schema
message, the metadata, the columns and their Arrow types (extra columns are
ignored; one added since format 1 began may be absent), and every batch with
Arrow's full validation: a batch that fails is left out and the loss said.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from launchgap.inputs import kind_of
from launchgap.trace.checks import (
    Bounds,
    ImpossibleRows,
    check_version,
    count_damage,
    impossible_rows,
    parse_meta,
    parse_summary,
    reason,
)
from launchgap.trace.columns import arrow_type, format1_arrow_fields, polars_type
from launchgap.trace.model import Trace, TraceError, WideTables
from launchgap.trace.schema import FORMAT1_COLUMNS, FORMAT1_END_EVENT, FORMAT1_ORIGINAL, FORMAT_NAME, Event, MetaKey

VERSION = 1
# An Arrow IPC message starts with this continuation marker (Arrow >= 0.15).
ARROW_CONTINUATION = b"\xff\xff\xff\xff"
METADATA_KEY = "launchgap"
BATCH_ROWS = 65_536


def _map(path: Path) -> pa.Buffer:
    """The file's bytes, memory-mapped: a regular file only, checked on the descriptor opened (O_NONBLOCK: a
    FIFO would block the open for ever), so that nothing swapped in after a check is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot open ({reason(err)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{path}: {kind_of(st.st_mode)}, not a trace (a file or a trace directory)")
        if st.st_size == 0:
            raise TraceError(f"{path}: the file is empty")
        try:
            return pa.py_buffer(mmap.mmap(fd, 0, prot=mmap.PROT_READ))
        except (OSError, ValueError) as err:
            raise TraceError(f"{path}: cannot open ({reason(err)})") from None
    finally:
        os.close(fd)


# the schema message holds the trace's metadata (meta.json's content, host files included): a few MB at most
MAX_SCHEMA_MESSAGE_BYTES = 64 << 20


def is_format1_trace(path: Path) -> bool:
    """Whether PATH is a launchgap trace in format 1: a regular file that starts with an Arrow IPC stream's
    schema message whose metadata names launchgap (what the reader checks first). Reads that message
    only (bounded); never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return False
    with os.fdopen(fd, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or not head.startswith(ARROW_CONTINUATION):
            return False
        declared = int.from_bytes(head[4:8], "little")
        if not 0 < declared <= MAX_SCHEMA_MESSAGE_BYTES:
            return False
        message = f.read(declared)
    if len(message) < declared:
        return False
    try:
        schema = pa.ipc.open_stream(pa.BufferReader(head + message)).schema
    except (pa.ArrowException, OSError, ValueError):
        return False
    metadata = schema.metadata or {}
    fmt = metadata.get(b"format", b"").decode(errors="replace")
    return fmt.partition("/")[0] == FORMAT_NAME or METADATA_KEY.encode() in metadata


def _open_stream(path: Path, source: pa.Buffer) -> pa.ipc.RecordBatchStreamReader:
    try:
        return pa.ipc.open_stream(source)
    except (pa.ArrowException, OSError, ValueError) as err:
        head = source[:8].to_pybytes()
        if head.startswith(ARROW_CONTINUATION):
            declared = int.from_bytes(head[4:8], "little") if len(head) >= 8 else None
            if declared is None or source.size < 8 + declared:
                raise TraceError(
                    f"{path}: truncated inside its schema, before any event: not a readable trace"
                ) from None
            raise TraceError(
                f"{path}: damaged trace: its Arrow schema message cannot be read ({reason(err)})"
            ) from None
        raise TraceError(
            f"{path}: not a launchgap trace (neither a trace directory, an Arrow IPC stream nor the study's CSV)"
        ) from None


def _metadata(path: Path, schema: pa.Schema) -> dict:
    metadata = schema.metadata or {}
    fmt = metadata.get(b"format", b"").decode(errors="replace")
    if fmt.partition("/")[0] != FORMAT_NAME and METADATA_KEY.encode() not in metadata:
        raise TraceError(f"{path}: not a launchgap trace (an Arrow stream whose format is {fmt or 'not given'!r})")
    if check_version(path, fmt, METADATA_KEY.encode() in metadata) != VERSION:
        raise TraceError(f"{path}: damaged trace: an Arrow stream marked {fmt!r} (format 2 is a directory)")
    if METADATA_KEY.encode() not in metadata:
        raise TraceError(f"{path}: damaged trace: its metadata (the `launchgap` JSON in the schema) is missing")
    return parse_meta(path, metadata[METADATA_KEY.encode()], "the `launchgap` JSON in the schema")


def _check_columns(path: Path, schema: pa.Schema) -> None:
    problems = []
    for name in FORMAT1_COLUMNS:
        index = schema.get_field_index(name)
        if index < 0:
            if name in FORMAT1_ORIGINAL:
                problems.append(f"no column {name!r}")
        elif schema.field(index).type != arrow_type(name):
            problems.append(f"column {name!r} is {schema.field(index).type}, not {arrow_type(name)}")
    if problems:
        raise TraceError(f"{path}: damaged trace (or not format 1): {'; '.join(problems[:3])}")


def _read_batches(reader) -> tuple[list[pa.RecordBatch], bool, list[str]]:
    batches: list[pa.RecordBatch] = []
    damage: list[str] = []
    truncated = False
    index = 0
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowException, OSError, ValueError):
            # the file ends inside a batch (a killed recorder), or its framing is damaged:
            # either way nothing after this point can be found
            truncated = True
            break
        index += 1
        try:
            batch.validate(full=True)
        except (pa.ArrowException, ValueError) as err:
            damage.append(f"batch {index} ({batch.num_rows:,} rows) is damaged ({reason(err)}) and was left out")
            continue
        batches.append(batch)
    return batches, truncated, damage


def read_format1(path: Path) -> Trace:
    source = _map(path)
    reader = _open_stream(path, source)
    meta = _metadata(path, reader.schema)
    _check_columns(path, reader.schema)
    batches, truncated, damage = _read_batches(reader)
    if not batches:
        if truncated:
            raise TraceError(
                f"{path}: truncated before its first complete batch of events (the recorder was "
                f"killed before its first flush, or the file was cut short): nothing to read"
            )
        if damage:
            raise TraceError(f"{path}: damaged trace: {'; '.join(damage)}")
    try:
        table = pa.Table.from_batches(batches, schema=reader.schema)
        events = pl.from_arrow(table)
    except (pa.ArrowException, pl.exceptions.PolarsError, pl.exceptions.PanicException, ValueError) as err:
        raise TraceError(f"{path}: damaged trace: its rows cannot be read ({reason(err)})") from None
    assert isinstance(events, pl.DataFrame)
    added_since = [n for n in FORMAT1_COLUMNS if n not in events.columns]
    if added_since:
        events = events.with_columns([pl.lit(None).cast(polars_type(n)).alias(n) for n in added_since])
    # a dozen distinct values over millions of rows: filters compare small integers
    events = events.with_columns(pl.col("event").cast(pl.Categorical))
    ends = events.filter(pl.col("event") == FORMAT1_END_EVENT)
    summary, end_damage = parse_summary(ends["detail"][0] if ends.height else None)
    events = events.filter(pl.col("event") != FORMAT1_END_EVENT)
    kinds = {kind.value: kind for kind in Event}
    read = {
        kinds[name]: n
        for name, n in events.group_by(pl.col("event").cast(pl.String)).len().iter_rows()
        if name in kinds
    }
    count_problems = count_damage(summary, read, "the closing row", "its batches")
    bounds = Bounds.of(meta, summary["end_ns"] if summary else None)
    bad = events.select(impossible_rows(set(events.columns), bounds).alias("bad"))["bad"]
    found = ImpossibleRows()
    found.add(events, bad)
    value_damage = found.verdict(path, bounds)
    if found.bad:
        events = events.filter(~bad)
    return Trace(
        path,
        meta,
        WideTables(events),
        truncated,
        summary=summary,
        damage=tuple(damage + end_damage + count_problems + value_damage),
        format=VERSION,
    )


def wide_table(frames: dict[Event, pl.DataFrame], summary: dict | None) -> pa.Table:
    """Every kind's rows as format 1's wide table, by time, and the closing row."""
    fields = format1_arrow_fields()
    parts = [
        frame.lazy().with_columns(pl.lit(kind.value).alias("event")) for kind, frame in frames.items() if frame.height
    ]
    if summary is not None:
        parts.append(
            pl.LazyFrame({"ts_ns": [summary["end_ns"]], "event": [FORMAT1_END_EVENT], "detail": [json.dumps(summary)]})
        )
    if not parts:
        return pa.table({f.name: pa.array([], type=f.type) for f in fields})
    rows = pl.concat(parts, how="diagonal_relaxed")
    have = set(rows.collect_schema().names())
    rows = rows.select(
        [(pl.col(f.name) if f.name in have else pl.lit(None)).cast(polars_type(f.name)).alias(f.name) for f in fields]
    ).sort("ts_ns", maintain_order=True)
    return rows.collect().rechunk().to_arrow().cast(pa.schema(fields))


def write_format1(
    path: Path, frames: dict[Event, pl.DataFrame], meta: dict, summary: dict | None, batch_rows: int | None = BATCH_ROWS
) -> None:
    """Writes the kinds' frames as a format-1 stream at PATH (a new file)."""
    table = wide_table(frames, summary)
    schema = table.schema.with_metadata(
        {
            "format": f"{FORMAT_NAME}/{VERSION}",
            METADATA_KEY: json.dumps({**meta, MetaKey.FORMAT: FORMAT_NAME, MetaKey.VERSION: VERSION}),
        }
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table.replace_schema_metadata(schema.metadata), max_chunksize=batch_rows)
