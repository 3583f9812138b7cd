"""Format 2: a trace is a directory (docs/trace-format.md): `meta.json`, one
subdirectory of Parquet segments per event kind (`launch/000001.parquet`,
...), and `end.json`, the closing summary, when the recorder stopped cleanly.
Any Parquet reader takes it as it is (`read_parquet('run.lg/launch/*.parquet')`).

Reading checks, besides what trace/checks.py checks in either format: the
metadata's format marker; every segment, decoded in full with the reader the
analysis uses (a segment that cannot be decoded, or whose columns are not its
kind's, is left out and the loss said); a trace without end.json (a killed
recorder, a full disk) is truncated: it reads up to its last complete
segment. Only what the recorder writes is read: regular files (a FIFO would
block every command; /dev/zero would fill memory), meta.json and end.json of
at most MAX_JSON_BYTES, segments named in its sequence (NNNNNN.parquet: one
number per flush, shared by every kind that had rows, so the numbers over
all kinds run 1, 2, 3, ... with none missing); any other `*.parquet` and a
segment with the very bytes of another of its kind (a copy) are left out,
and a number missing from the sequence, or a kind whose rows differ from
end.json's count of rows written (`rows`), is damage. Launches, most of a launch-bound trace, are checked one segment at
a time and then dropped, so the check holds one segment of them, not the
trace, and the analysis reads them lazily (model.ParquetTables). The other
kinds are kept decoded while they fit in HELD_BYTES (all or none), so that
the analysis, which reads switches and wakeups many times over, does not
decode them again; a kind that surely fits is decoded in one parallel call.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from launchgap.inputs import MAX_JSON_BYTES, InputError, excerpt, kind_of, read_regular_bytes
from launchgap.trace.checks import (
    OWN_CORRELATION,
    Bounds,
    ImpossibleRows,
    check_version,
    correlation_damage,
    count_damage,
    impossible_rows,
    parse_meta,
    parse_summary,
    reason,
)
from launchgap.trace.columns import ARROW_TYPES, POLARS_TYPES, conform
from launchgap.trace.model import ParquetTables, Trace, TraceError
from launchgap.trace.schema import (
    END_FILE,
    FORMAT_NAME,
    KIND_COLUMNS,
    META_FILE,
    SEGMENT_DIGITS,
    SEGMENT_ROWS,
    SEGMENT_SUFFIX,
    Event,
    MetaKey,
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


# a segment's name as the recorder writes it: its number, zero-padded to SEGMENT_DIGITS (more digits past
# 999,999 segments), and the suffix
SEGMENT_NAME = re.compile(rf"(\d{{{SEGMENT_DIGITS},}}){re.escape(SEGMENT_SUFFIX)}")


def _read_json_file(path: Path, name: str) -> tuple[bytes | None, str | None]:
    """NAME's bytes, or None when there is none; or why it cannot be read (not a regular file: a FIFO would
    block, /dev/zero fill memory; more than MAX_JSON_BYTES)."""
    try:
        return read_regular_bytes(path / name, MAX_JSON_BYTES), None
    except FileNotFoundError:
        return None, None
    except InputError as err:
        return None, err.problem
    except OSError as err:
        raise TraceError(f"{path / name}: cannot open ({reason(err)})") from None


def _listed_segments(path: Path, kind: Event, damage: list[str], numbers: set[int]) -> list[Path]:
    """KIND's segments in number order: the regular files named as the recorder names them. Anything else
    ending in the suffix (a stray or renamed copy, a FIFO, a device), and a segment holding the very bytes of
    an earlier one (a copy under a segment's name), is left out and said in DAMAGE. NUMBERS gains the numbers
    of the segments named, but of copies."""
    directory = path / kind.value
    if not directory.is_dir():
        return []
    segments: list[tuple[int, Path, int]] = []
    named_numbers: set[int] = set()
    # a partial segment (.NNNNNN.parquet.partial) does not end with the suffix
    for segment in sorted(directory.glob(f"*{SEGMENT_SUFFIX}")):
        where = f"{kind.value}/{segment.name}"
        named = SEGMENT_NAME.fullmatch(segment.name)
        if not named or segment.name != segment_name(int(named.group(1))):
            damage.append(
                f"{excerpt(where, 100)} is not a segment the recorder writes (they are named "
                f"NNNNNN{SEGMENT_SUFFIX}) and was left out"
            )
            continue
        named_numbers.add(int(named.group(1)))
        try:
            st = segment.stat()
        except OSError as err:
            damage.append(f"segment {where} cannot be read ({reason(err)}) and was left out")
            continue
        if not stat.S_ISREG(st.st_mode):
            damage.append(f"segment {where} is {kind_of(st.st_mode)}, not a regular file, and was left out")
            continue
        segments.append((int(named.group(1)), segment, st.st_size))
    segments.sort()
    # only a segment of the same size and the same footer (its row groups' offsets and statistics) can be
    # a copy: read whole only then
    sizes = Counter(size for _, _, size in segments)
    ends = {segment: (size, _digest(segment, FOOTER_BYTES)) for _, segment, size in segments if sizes[size] > 1}
    alike = Counter(ends.values())
    kept: list[Path] = []
    seen: dict[bytes, Path] = {}
    for number, segment, _size in segments:
        if segment in ends and alike[ends[segment]] > 1:
            digest = _digest(segment)
            if digest is not None:
                original = seen.setdefault(digest, segment)
                if original is not segment:
                    damage.append(
                        f"segment {kind.value}/{segment.name} holds the very bytes of "
                        f"{kind.value}/{original.name} (a copy) and was left out"
                    )
                    named_numbers.discard(number)
                    continue
        kept.append(segment)
    numbers |= named_numbers
    return kept


# the end of a segment compared before the whole of it: the Parquet footer, with every row group's offsets
# and statistics
FOOTER_BYTES = 64 << 10


def _digest(segment: Path, tail: int | None = None) -> bytes | None:
    """A digest of the segment's bytes (its last TAIL bytes only, if given); None if it cannot be read (its
    reading says why)."""
    try:
        fd = os.open(segment, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if tail is not None:
            os.lseek(fd, max(0, st.st_size - tail), os.SEEK_SET)
        digest = hashlib.blake2b()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.digest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _sequence_damage(numbers: set[int]) -> list[str]:
    """The recorder gives every flush the next number, over all kinds: a number below the highest that no
    kind holds is a flush whose every segment is gone (or the highest was added out of sequence)."""
    runs: list[tuple[int, int]] = []
    previous = 0
    for number in sorted(numbers):
        if number > previous + 1:
            runs.append((previous + 1, number - 1))
        previous = number
    if not runs:
        return []

    def shown(number: int) -> str:
        return segment_name(number).removesuffix(SEGMENT_SUFFIX)

    listed = ", ".join(shown(a) if a == b else f"{shown(a)}..{shown(b)}" for a, b in runs[:5])
    more = f" and {len(runs) - 5} more runs" if len(runs) > 5 else ""
    one = len(runs) == 1 and runs[0][0] == runs[0][1]
    return [
        f"segment number{'' if one else 's'} {listed}{more} {'is' if one else 'are'} in no kind's directory, "
        f"though {shown(previous)} is: the recorder numbers its flushes 1, 2, 3, ... over all kinds, so "
        f"segments were removed (or one added out of sequence)"
    ]


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


def _read_segments(
    kind: Event, paths: list[Path], room: int
) -> Iterator[tuple[list[Path], pl.DataFrame | None, str | None]]:
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
    meta_text, unreadable = _read_json_file(path, META_FILE)
    if unreadable:
        raise TraceError(f"{path}: damaged trace: its metadata ({META_FILE}) is {unreadable}")
    if meta_text is None:
        raise TraceError(f"{path}: is a directory, not a launchgap trace (no {META_FILE})")
    meta = parse_meta(path, meta_text, META_FILE)
    fmt = f"{meta.get(MetaKey.FORMAT, '')}/{meta.get(MetaKey.VERSION, '')}"
    if check_version(path, fmt, True) != VERSION:
        raise TraceError(f"{path}: damaged trace: a directory whose {META_FILE} says {fmt!r}")
    summary_text, unreadable = _read_json_file(path, END_FILE)
    summary, damage = parse_summary(summary_text)
    if unreadable:
        damage.append(f"its closing summary ({END_FILE}) is {unreadable}, and was left out: the trace has no clean end")
    bounds = Bounds.of(meta, summary["end_ns"] if summary else None)
    found = ImpossibleRows()
    files: dict[Event, list[Path]] = {}
    counts: dict[Event, int] = {}
    drop: dict[Event, pl.Expr] = {}
    segments = 0
    held: dict[Event, list[pl.DataFrame]] = {}
    held_bytes, holding = 0, True
    numbers: set[int] = set()
    read: dict[Event, int] = {}
    for kind in Event:
        paths = _listed_segments(path, kind, damage, numbers)
        segments += len(paths)
        for group, frame, problem in _read_segments(kind, paths, HELD_BYTES - held_bytes if holding else 0):
            if frame is None:
                damage.append(f"segment {kind.value}/{group[0].name} is damaged ({problem}) and was left out")
                continue
            read[kind] = read.get(kind, 0) + frame.height
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
    truncated = summary_text is None and not unreadable
    damage += _sequence_damage(numbers)
    damage += count_damage(summary, read, END_FILE, "its segments")
    if not files:
        if damage and segments:
            raise TraceError(f"{path}: damaged trace: {'; '.join(damage[:3])}")
        if truncated:
            raise TraceError(
                f"{path}: truncated before its first complete segment of events (the recorder was "
                f"killed before its first flush, or the directory was cut short): nothing to read"
            )
    damage += found.verdict(path, bounds)
    # all of them or none: past the budget every kind is read lazily again, so memory stays bounded
    whole = {kind: pl.concat(frames) for kind, frames in held.items()}
    tables = _without_wrong_correlations(ParquetTables(files, counts, drop, whole), meta, damage)
    return Trace(path, meta, tables, truncated, summary=summary, damage=tuple(damage), format=VERSION)


def _without_wrong_correlations(tables: ParquetTables, meta: dict, damage: list[str]) -> ParquetTables:
    """TABLES less the GPU rows whose correlation ids cannot be right (checks.correlation_damage), said in DAMAGE."""
    # Only a recording of launchgap's own collector (meta.json names the CUPTI it used) keeps the rules: it records
    # every launch call, and CUPTI gives each call and each piece of work an id of its own (a graph's nodes share
    # theirs, with the graph's id). A PyTorch profiler's trace, imported, need not: its window may begin after a
    # launch call, and real ones give one id to several memsets and kernels made inside one call.
    activity = meta.get(MetaKey.GPU_ACTIVITY)
    if not (isinstance(activity, dict) and activity.get("recorded") is True and "cupti" in activity):
        return tables
    if not any(tables.count(kind) for kind in OWN_CORRELATION):
        return tables
    wrong, said = correlation_damage(tables.scan)
    if not wrong:
        return tables
    damage += said
    files = {kind: tables.files(kind) for kind in Event}
    counts = {kind: tables.count(kind) for kind in Event}
    drop, held = dict(tables.drop), dict(tables.held)
    for kind, bad in wrong.items():
        counts[kind] -= tables.scan(kind).filter(bad).select(pl.len()).collect().item()
        drop[kind] = (drop[kind] | bad) if kind in drop else bad
        if kind in held:
            held[kind] = held[kind].filter(~bad)
    return ParquetTables(files, counts, drop, held)


# --- writing -------------------------------------------------------------------


def _write_options(kind: Event, columns: list[str]) -> dict:
    specs = {c.name: c for c in KIND_COLUMNS[kind]}
    dictionary = [n for n in columns if specs[n].encoding == "dictionary"]
    encodings = {
        n: "DELTA_BINARY_PACKED" if specs[n].encoding == "delta" else "PLAIN"
        for n in columns
        if specs[n].encoding != "dictionary"
    }
    return {
        "compression": "zstd",
        "compression_level": ZSTD_LEVEL,
        "use_dictionary": dictionary,
        "column_encoding": encodings,
        "write_statistics": ["ts_ns"],
        "data_page_version": "2.0",
    }


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


def write_format2(
    directory: Path,
    frames: dict[Event, pl.DataFrame],
    meta: dict,
    summary: dict | None,
    segment_rows: int | None = SEGMENT_ROWS,
) -> None:
    """Writes a format-2 trace into DIRECTORY (existing and empty): meta.json, each kind's segments of
    SEGMENT_ROWS rows (all in one if None), end.json when SUMMARY is given."""
    (directory / META_FILE).write_text(json.dumps({**meta, MetaKey.FORMAT: FORMAT_NAME, MetaKey.VERSION: VERSION}))
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
