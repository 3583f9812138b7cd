"""Views of the schema (trace/schema.py, generated from schema/trace.toml) that
readers and writers need: Arrow and polars types, and frames shaped to a kind."""

from __future__ import annotations

from functools import cache

import polars as pl
import pyarrow as pa

from launchgap.trace.schema import COLUMN_TYPES, FORMAT1_COLUMNS, KIND_COLUMNS, Event

ARROW_TYPES: dict[str, pa.DataType] = {
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "bool": pa.bool_(),
    "utf8": pa.utf8(),
}
POLARS_TYPES: dict[str, pl.DataType] = {
    "uint32": pl.UInt32(),
    "uint64": pl.UInt64(),
    "int32": pl.Int32(),
    "int64": pl.Int64(),
    "bool": pl.Boolean(),
    "utf8": pl.String(),
}


def arrow_type(column: str) -> pa.DataType:
    return ARROW_TYPES[COLUMN_TYPES[column]]


def polars_type(column: str) -> pl.DataType:
    return POLARS_TYPES[COLUMN_TYPES[column]]


def columns_of(kind: Event) -> tuple[str, ...]:
    """Every column a kind may have, in order (optional ones included)."""
    return tuple(c.name for c in KIND_COLUMNS[kind])


@cache
def polars_schema(kind: Event) -> pl.Schema:
    return pl.Schema({c.name: POLARS_TYPES[c.type] for c in KIND_COLUMNS[kind]})


def format1_arrow_fields() -> list[pa.Field]:
    return [pa.field(name, arrow_type(name), nullable=name not in ("ts_ns", "event")) for name in FORMAT1_COLUMNS]


def conform(kind: Event, frame: pl.LazyFrame) -> pl.LazyFrame:
    """FRAME as the kind's table: its columns in order, with their types; one the
    frame lacks (optional, or added to the format since it was written) is null."""
    have = set(frame.collect_schema().names())
    schema = polars_schema(kind)
    return frame.select(
        [(pl.col(name) if name in have else pl.lit(None)).cast(dtype).alias(name) for name, dtype in schema.items()]
    )


def empty(kind: Event) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(kind))
