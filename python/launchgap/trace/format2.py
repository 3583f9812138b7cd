"""Format 2: a trace is a directory (docs/trace-format.md): `meta.json`, one
subdirectory of Parquet segments per event kind (`launch/000001.parquet`,
...), and `end.json`, the closing summary, when the recorder stopped cleanly.
Any Parquet reader takes it as it is (`read_parquet('run.lg/launch/*.parquet')`).

Reading checks, besides what trace/checks.py checks in either format: the
metadata's format marker; every segment, decoded in full with the reader the
analysis uses (a segment that cannot be decoded, or whose columns are not its
kind's, is left out and the loss said); a trace without end.json (a killed
recorder, a full disk) is truncated: it reads up to its last complete
segment. Launches, most of a launch-bound trace, are checked one segment at
a time and then dropped, so the check holds one segment of them, not the
trace, and the analysis reads them lazily (model.ParquetTables). The other
kinds are kept decoded while they fit in HELD_BYTES (all or none), so that
the analysis, which reads switches and wakeups many times over, does not
decode them again; a kind that surely fits is decoded in one parallel call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from launchgap.trace.checks import Bounds, ImpossibleRows, check_version, impossible_rows, parse_meta, parse_summary, reason
from launchgap.trace.columns import ARROW_TYPES, POLARS_TYPES, conform
from launchgap.trace.model import ParquetTables, Trace, TraceError
from launchgap.trace.schema import (
    END_FILE, FORMAT_NAME, KIND_COLUMNS, META_FILE, SEGMENT_DIGITS, SEGMENT_ROWS, SEGMENT_SUFFIX, Event,
)

VERSION = 2
ZSTD_LEVEL = 1
# Decoded rows of every kind but launches kept from the opening check, at most (launches, most of a
# launch-bound trace, are streamed by the analysis and never held; the scheduling analysis holds the
# switches and wakeups it reads anyway)
HELD_BYTES = 512 << 20
# how many times larger decoded rows may be than their segments on disk, at most (zstd over dictionary and
# delta encodings: ~10x on the storm's switches)
MAX_COMPRESSION = 32


def segment_name(number: int) -> str:
    return f"{number:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"


def is_trace_directory(path: Path) -> bool:
    return path.is_dir() and (path / META_FILE).is_file()


def _read_text(path: Path, name: str) -> bytes | None:
    try:
        return (path / name).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise TraceError(f"{path / name}: cannot open ({reason(err)})") from None


def _segment_problem(kind: Event, frame: pl.DataFrame) -> str | None:
    """Why a segment's columns are not its kind's, or None."""
    for column in KIND_COLUMNS[kind]:
        dtype = frame.schema.get(column.name)
        if dtype is None:
            if not column.nullable and not column.optional:
                return f"no column {column.name!r}"
        elif dtype != POLARS_TYPES[column.type]:
            return f"column {column.name!r} is {dtype}, not {column.type}"
    return None


def _read_segment(kind: Event, segment: Path | list[Path]) -> tuple[pl.DataFrame | None, str | None]:
    try:
        frame = pl.read_parquet(segment, glob=False)  # a path may hold [ or *: never a pattern
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError, pa.ArrowException) as err:
        return None, reason(err)
    problem = _segment_problem(kind, frame)
    return (None, problem) if problem else (frame, None)


def _size_on_disk(paths: list[Path]) -> float:
    try:
        return sum(p.stat().st_size for p in paths)
    except OSError:  # gone since it was listed: read one at a time, where its loss is said
        return float("inf")


def _read_segments(kind: Event, paths: list[Path], room: int) -> Iterator[tuple[list[Path], pl.DataFrame | None,
                                                                               str | None]]:
    """PATHS decoded: (segments, their rows or None, why not). A kind the trace may hold (not launches, of
    more than one segment, whose decoded rows, at most MAX_COMPRESSION times its size on disk, fit in the
    ROOM left of HELD_BYTES) is read at once, its segments decoded in parallel; if that fails, or any
    segment's columns differ, and always for the others, one segment at a time (the memory of one
    segment, and the damaged one named)."""
    if kind is not Event.LAUNCH and len(paths) > 1 and _size_on_disk(paths) * MAX_COMPRESSION <= room:
        frame, _ = _read_segment(kind, paths)
        if frame is not None:
            yield paths, frame, None
            return
    for segment in paths:
        yield [segment], *_read_segment(kind, segment)


def read_format2(path: Path) -> Trace:
    meta_text = _read_text(path, META_FILE)
    if meta_text is None:
        raise TraceError(f"{path}: is a directory, not a launchgap trace (no {META_FILE})")
    meta = parse_meta(path, meta_text, META_FILE)
    fmt = f"{meta.get('format', '')}/{meta.get('version', '')}"
    if check_version(path, fmt, True) != VERSION:
        raise TraceError(f"{path}: damaged trace: a directory whose {META_FILE} says {fmt!r}")
    summary_text = _read_text(path, END_FILE)
    summary, damage = parse_summary(summary_text)
    bounds = Bounds.of(meta, summary["end_ns"] if summary else None)
    found = ImpossibleRows()
    files: dict[Event, list[Path]] = {}
    counts: dict[Event, int] = {}
    drop: dict[Event, pl.Expr] = {}
    segments = 0
    held: dict[Event, list[pl.DataFrame]] = {}
    held_bytes, holding = 0, True
    for kind in Event:
        directory = path / kind.value
        if not directory.is_dir():
            continue
        # a partial segment (.NNNNNN.parquet.partial) does not end with the suffix
        paths = sorted(directory.glob(f"*{SEGMENT_SUFFIX}"))
        segments += len(paths)
        for group, frame, problem in _read_segments(kind, paths, HELD_BYTES - held_bytes if holding else 0):
            if frame is None:
                damage.append(f"segment {kind.value}/{group[0].name} is damaged ({problem}) and was left out")
                continue
            bad_rows = frame.select(impossible_rows(set(frame.columns), bounds).alias("bad"))["bad"]
            bad_before = found.bad
            found.add(frame, bad_rows, kind.value)
            if found.bad > bad_before:
                drop[kind] = impossible_rows({c.name for c in KIND_COLUMNS[kind]}, bounds)
            files.setdefault(kind, []).extend(group)
            counts[kind] = counts.get(kind, 0) + frame.height - (found.bad - bad_before)
            if kind is not Event.LAUNCH and holding:
                # the check decoded it already: the analysis reads it from memory rather than decoding again
                kept = frame.filter(~bad_rows) if found.bad > bad_before else frame
                kept = conform(kind, kept.lazy()).collect()
                held_bytes += kept.estimated_size()
                if held_bytes <= HELD_BYTES:
                    held.setdefault(kind, []).append(kept)
                else:
                    # all kinds or none, and what was held goes at once: memory stays bounded
                    holding = False
                    held.clear()
            del frame
    truncated = summary_text is None
    if not files:
        if damage and segments:
            raise TraceError(f"{path}: damaged trace: {'; '.join(damage[:3])}")
        if truncated:
            raise TraceError(f"{path}: truncated before its first complete segment of events (the recorder was "
                             f"killed before its first flush, or the directory was cut short): nothing to read")
    damage += found.verdict(path, bounds)
    # all of them or none: past the budget every kind is read lazily again, so memory stays bounded
    whole = {kind: pl.concat(frames) for kind, frames in held.items()}
    return Trace(path, meta, ParquetTables(files, counts, drop, whole), truncated, summary=summary, damage=tuple(damage),
                 format=VERSION)


# --- writing -------------------------------------------------------------------

def _write_options(kind: Event, columns: list[str]) -> dict:
    specs = {c.name: c for c in KIND_COLUMNS[kind]}
    dictionary = [n for n in columns if specs[n].encoding == "dictionary"]
    encodings = {n: "DELTA_BINARY_PACKED" if specs[n].encoding == "delta" else "PLAIN"
                 for n in columns if specs[n].encoding != "dictionary"}
    return {"compression": "zstd", "compression_level": ZSTD_LEVEL, "use_dictionary": dictionary,
            "column_encoding": encodings, "write_statistics": ["ts_ns"], "data_page_version": "2.0"}


def kind_table(kind: Event, frame: pl.DataFrame) -> pa.Table:
    """A kind's rows, by time, as the Arrow table format 2 holds: its columns with their types; an optional
    column only where the frame has values in it; a column declared always set that has nulls anyway (a
    legacy source) marked nullable, rather than refused."""
    present = set(frame.columns)
    shaped = conform(kind, frame.lazy()).sort("ts_ns", maintain_order=True).collect()
    fields = []
    for c in KIND_COLUMNS[kind]:
        if c.optional and (c.name not in present or shaped[c.name].null_count() == shaped.height):
            continue
        has_nulls = shaped[c.name].null_count() > 0
        fields.append(pa.field(c.name, ARROW_TYPES[c.type], nullable=c.nullable or has_nulls))
    schema = pa.schema(fields)
    return shaped.select(schema.names).rechunk().to_arrow().cast(schema)


def write_format2(directory: Path, frames: dict[Event, pl.DataFrame], meta: dict, summary: dict | None,
                  segment_rows: int | None = SEGMENT_ROWS) -> None:
    """Writes a format-2 trace into DIRECTORY (existing and empty): meta.json, each kind's segments of
    SEGMENT_ROWS rows (all in one if None), end.json when SUMMARY is given."""
    (directory / META_FILE).write_text(json.dumps({**meta, "format": FORMAT_NAME, "version": VERSION}))
    for kind, frame in frames.items():
        if not frame.height:
            continue
        table = kind_table(Event(kind), frame)
        (directory / kind.value).mkdir()
        step = segment_rows or table.num_rows
        options = _write_options(Event(kind), table.schema.names)
        for number, start in enumerate(range(0, table.num_rows, step), start=1):
            pq.write_table(table.slice(start, step), directory / kind.value / segment_name(number), **options)
    if summary is not None:
        (directory / END_FILE).write_text(json.dumps(summary, indent=1))
