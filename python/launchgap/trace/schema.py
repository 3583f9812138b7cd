"""The trace's columns and types (docs/trace-format.md), for code that
writes traces other than the recorder: importers and test builders."""

from __future__ import annotations

import json

import polars as pl
import pyarrow as pa

FORMAT = "launchgap-trace/1"

COLUMNS: list[tuple[str, pa.DataType]] = [
    ("ts_ns", pa.uint64()), ("event", pa.utf8()), ("cpu", pa.uint32()), ("pid", pa.uint32()), ("tid", pa.uint32()),
    ("comm", pa.utf8()), ("duration_ns", pa.uint64()), ("api", pa.utf8()), ("runtime_api", pa.utf8()),
    ("func", pa.uint64()), ("stream", pa.uint64()), ("grid_x", pa.uint32()), ("grid_y", pa.uint32()),
    ("grid_z", pa.uint32()), ("block_x", pa.uint32()), ("block_y", pa.uint32()), ("block_z", pa.uint32()),
    ("shared_mem", pa.uint32()), ("bytes", pa.uint64()), ("prev_state", pa.int64()), ("preempt", pa.bool_()),
    ("voluntary", pa.bool_()), ("nvcsw", pa.uint64()), ("nivcsw", pa.uint64()), ("prio", pa.int32()),
    ("next_pid", pa.uint32()), ("next_tid", pa.uint32()), ("next_comm", pa.utf8()), ("next_prio", pa.int32()),
    ("target_cpu", pa.uint32()), ("waker_tid", pa.uint32()), ("orig_cpu", pa.uint32()), ("dest_cpu", pa.uint32()),
    ("child_pid", pa.uint32()), ("child_tid", pa.uint32()), ("filename", pa.utf8()), ("old_comm", pa.utf8()),
    ("exit_code", pa.int32()), ("irq", pa.int32()), ("irq_name", pa.utf8()), ("lost_event", pa.utf8()),
    ("lost_count", pa.uint64()), ("since_ns", pa.uint64()), ("detail", pa.utf8()), ("return_code", pa.int32()),
]
NON_NULL = {"ts_ns", "event"}


def arrow_schema(meta: dict) -> pa.Schema:
    fields = [pa.field(name, dtype, nullable=name not in NON_NULL) for name, dtype in COLUMNS]
    return pa.schema(fields, metadata={"format": FORMAT, "launchgap": json.dumps(meta)})


def write_trace(path, rows: list[dict], meta: dict, batch_rows: int | None = None) -> None:
    """Writes rows (dicts with any subset of the columns) as a trace file, in
    batches of batch_rows (one batch if None)."""
    schema = arrow_schema(meta)
    table = pa.Table.from_pylist([{name: row.get(name) for name, _ in COLUMNS} for row in rows], schema=schema)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table, max_chunksize=batch_rows)


def write_frame(path, frame: pl.DataFrame, meta: dict, batch_rows: int = 65536) -> None:
    """Writes a polars frame holding any subset of the columns as a trace; the
    others are null. For importers, where rows come by the million."""
    polars_types = {name: pl.from_arrow(pa.array([], type=dtype)).dtype for name, dtype in COLUMNS}
    full = frame.select([
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(polars_types[name]).alias(name)
        for name, _ in COLUMNS])
    table = full.to_arrow().cast(arrow_schema(meta))
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch_rows)
