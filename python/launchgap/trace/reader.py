"""launchgap traces: an Arrow IPC stream, one row per event.

Any Arrow reader opens a complete trace (`pl.read_ipc_stream(path)`); this
reader also accepts a trace cut short (a killed recorder): it keeps every
complete batch and says the trace is truncated.

It also checks what it reads, so that a damaged file (a flipped bit, random
bytes, a copy cut short) gives one clear line, never a traceback, a crash or
quietly wrong numbers:
- the stream's framing and the schema message (else: not a trace, or damaged);
- the metadata JSON and the types of the keys the analysis relies on;
- the columns of format 1 and their Arrow types (extra columns are ignored);
- every batch, with Arrow's full validation (offsets, UTF-8, null bitmaps):
  a batch that fails is left out and the loss said;
- every row's values against the trace itself: timestamps inside its span,
  CPU numbers within its topology, durations no longer than the trace. A few
  impossible rows are left out and counted; many mean the trace's own start,
  end or topology is damaged, and the file is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from launchgap.trace.schema import COLUMNS

FORMAT_NAME = "launchgap-trace"
SUPPORTED_VERSIONS = {1}
# An Arrow IPC message starts with this continuation marker (Arrow >= 0.15).
ARROW_CONTINUATION = b"\xff\xff\xff\xff"
# How far outside the trace's [start, end] a timestamp may lie before it is
# impossible: generous (clock reads at attach and stop are not atomic with the
# first and last events), far below what a flipped high bit produces.
SPAN_SLACK_NS = 1_000_000_000
# Above this share of impossible rows the bounds themselves are suspect.
MAX_DROPPED_SHARE = 0.01
MAX_DROPPED_ROWS = 10
CPU_COLUMNS = ("cpu", "target_cpu", "orig_cpu", "dest_cpu")
# No Linux task id is above PID_MAX_LIMIT (include/linux/threads.h: 4M on 64-bit)
PID_MAX_LIMIT = 4 * 1024 * 1024
PID_COLUMNS = ("pid", "tid", "next_pid", "next_tid", "child_pid", "child_tid", "waker_tid")
DURATION_EVENTS = ("sync", "hardirq", "softirq", "irq_vector")


class TraceError(ValueError):
    """The file is not a launchgap trace this version can read (message says why, on one line)."""


@dataclass(frozen=True)
class Trace:
    path: Path
    meta: dict
    events: pl.DataFrame
    truncated: bool
    # for traces imported from other tools, which have no closing row
    end_ns: int | None = None
    # what was found damaged and left out, one sentence each (empty for a sound file)
    damage: tuple[str, ...] = ()

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


def _reason(err: BaseException) -> str:
    text = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return " ".join(text.split())[:300]


def _head(path: Path, size: int = 8) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _open_stream(path: Path, source) -> pa.ipc.RecordBatchStreamReader:
    try:
        return pa.ipc.open_stream(source)
    except (pa.ArrowException, OSError, ValueError) as err:
        head = _head(path)
        if not head:
            raise TraceError(f"{path}: the file is empty") from None
        if head.startswith(ARROW_CONTINUATION):
            declared = int.from_bytes(head[4:8], "little") if len(head) >= 8 else None
            if declared is None or path.stat().st_size < 8 + declared:
                raise TraceError(f"{path}: truncated inside its schema, before any event: not a readable "
                                 f"trace") from None
            raise TraceError(f"{path}: damaged trace: its Arrow schema message cannot be read "
                             f"({_reason(err)})") from None
        raise TraceError(f"{path}: not a launchgap trace (neither an Arrow IPC stream nor the study's CSV)") from None


# key -> the types its value may have; the analysis relies on these
META_TYPES: dict[str, tuple[type, ...]] = {
    "start_ns": (int,), "mode": (str,), "command": (list, type(None)), "command_pid": (int, type(None)),
    "pids": (list,), "recorder_pid": (int, type(None)), "host": (dict,), "topology": (dict,),
    "every_switch": (bool,), "caveats": (list,),
}


def _metadata(path: Path, schema: pa.Schema) -> dict:
    metadata = schema.metadata or {}
    fmt = metadata.get(b"format", b"").decode(errors="replace")
    name, _, version = fmt.partition("/")
    if name != FORMAT_NAME:
        if b"launchgap" in metadata:
            raise TraceError(f"{path}: damaged trace: its format marker reads {fmt!r}")
        raise TraceError(f"{path}: not a launchgap trace (an Arrow stream whose format is {fmt or 'not given'!r})")
    if not version.isdigit() or int(version) not in SUPPORTED_VERSIONS:
        raise TraceError(
            f"{path}: trace format version {version} is not supported "
            f"(this launchgap reads {sorted(SUPPORTED_VERSIONS)})"
        )
    try:
        meta = json.loads(metadata[b"launchgap"])
    except KeyError:
        raise TraceError(f"{path}: damaged trace: its metadata (the `launchgap` JSON in the schema) is missing") from None
    except ValueError as err:
        raise TraceError(f"{path}: damaged trace: its metadata (the `launchgap` JSON in the schema) cannot be "
                         f"read ({_reason(err)})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: damaged trace: its metadata is not a JSON object")
    for key, types in META_TYPES.items():
        value = meta.get(key)
        if key in meta and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise TraceError(f"{path}: damaged trace: metadata {key!r} is {value!r:.200}")
    topology = meta.get("topology") or {}
    if not isinstance(topology.get("count", 0), int) or not isinstance(topology.get("cpus", []), list) or not all(
            isinstance(c, dict) and isinstance(c.get("cpu", 0), int) for c in topology.get("cpus", [])):
        raise TraceError(f"{path}: damaged trace: metadata 'topology' is {topology!r:.200}")
    return meta


# The columns format 1 began with: a file without one of them is damaged (or another format). A column
# added since (docs/trace-format.md, "Versioning") may be absent from older traces: it reads as nulls.
FORMAT_1_COLUMNS = frozenset((
    "ts_ns", "event", "cpu", "pid", "tid", "comm", "duration_ns", "api", "runtime_api", "func", "stream", "grid_x",
    "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem", "bytes", "prev_state", "preempt", "voluntary",
    "nvcsw", "nivcsw", "prio", "next_pid", "next_tid", "next_comm", "next_prio", "target_cpu", "waker_tid", "orig_cpu",
    "dest_cpu", "child_pid", "child_tid", "filename", "old_comm", "exit_code", "irq", "irq_name", "lost_event",
    "lost_count", "since_ns", "detail"))


def _check_columns(path: Path, schema: pa.Schema) -> None:
    problems = []
    for name, dtype in COLUMNS:
        index = schema.get_field_index(name)
        if index < 0:
            if name in FORMAT_1_COLUMNS:
                problems.append(f"no column {name!r}")
        elif schema.field(index).type != dtype:
            problems.append(f"column {name!r} is {schema.field(index).type}, not {dtype}")
    if problems:
        raise TraceError(f"{path}: damaged trace (or not format 1): {'; '.join(problems[:3])}")


def _read_batches(path: Path, reader) -> tuple[list[pa.RecordBatch], bool, list[str]]:
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
            damage.append(f"batch {index} ({batch.num_rows:,} rows) is damaged ({_reason(err)}) and was left out")
            continue
        batches.append(batch)
    return batches, truncated, damage


def _end_ns(path: Path, events: pl.DataFrame) -> tuple[pl.DataFrame, int | None, list[str]]:
    """The closing row's end_ns; a closing row that cannot be read is dropped (the trace then has no clean end)."""
    ends = events.filter(pl.col("event") == "trace_end")
    if ends.is_empty():
        return events, None, []
    try:
        detail = json.loads(ends["detail"][0])
        end = detail["end_ns"]
        if not isinstance(end, int) or isinstance(end, bool):
            raise ValueError(f"end_ns is {end!r}")
        return events, end, []
    except (TypeError, ValueError, KeyError) as err:
        kept = events.filter(pl.col("event") != "trace_end")
        return kept, None, [f"its closing row is damaged ({_reason(err)}) and was left out: the trace has no clean end"]


def topology_cpus(meta: dict) -> int | None:
    """How many CPU numbers the trace's topology allows (highest + 1), if it says."""
    topology = meta.get("topology") or {}
    numbers = [c["cpu"] for c in topology.get("cpus", []) if "cpu" in c]
    count = topology.get("count")
    bounds = [n + 1 for n in numbers] + ([count] if count else [])
    return max(bounds) if bounds else None


def impossible_rows(events: pl.DataFrame, start_ns: int | None, end_ns: int | None,
                    n_cpus: int | None) -> pl.Expr:
    """A boolean expression: rows whose values the trace itself rules out."""
    checks = []
    ts = pl.col("ts_ns").cast(pl.Float64)
    if start_ns is not None:
        checks.append(ts < start_ns - SPAN_SLACK_NS)
    if end_ns is not None:
        checks.append(ts > end_ns + SPAN_SLACK_NS)
    if n_cpus is not None:
        checks += [pl.col(c) >= n_cpus for c in CPU_COLUMNS if c in events.columns]
    checks += [pl.col(c) > PID_MAX_LIMIT for c in PID_COLUMNS if c in events.columns]
    if start_ns is not None and end_ns is not None:
        longest = max(0, end_ns - start_ns) + 2 * SPAN_SLACK_NS
        duration = pl.col("duration_ns").cast(pl.Float64)
        checks.append(pl.col("event").is_in(DURATION_EVENTS) & (duration > longest))
        checks.append(pl.col("event").is_in(DURATION_EVENTS) & (ts + duration > end_ns + SPAN_SLACK_NS))
    missing = pl.col("ts_ns").is_null() | pl.col("event").is_null()
    return pl.any_horizontal([c.fill_null(False) for c in checks]) | missing if checks else missing


def _drop_impossible(path: Path, events: pl.DataFrame, meta: dict, end_ns: int | None) -> tuple[pl.DataFrame, list[str]]:
    start = meta.get("start_ns")
    n_cpus = topology_cpus(meta)
    bad = events.select(impossible_rows(events, start, end_ns, n_cpus).alias("bad"))["bad"]
    n_bad = int(bad.sum() or 0)
    if n_bad == 0:
        return events, []
    first = events.filter(bad).row(0, named=True)
    span = f"{start}..{end_ns}" if end_ns is not None else f"from {start}"
    example = (f"e.g. a {first['event']} row at ts_ns {first['ts_ns']} on CPU {first['cpu']}"
               + (f" lasting {first['duration_ns']} ns" if first.get("duration_ns") is not None else ""))
    what = (f"{n_bad:,} of {events.height:,} rows hold values the trace rules out (timestamps outside its span "
            f"{span} ns, CPU numbers beyond its {n_cpus} CPUs, task ids above the kernel's limit, or durations "
            f"longer than the trace; {example})")
    if n_bad > max(MAX_DROPPED_ROWS, MAX_DROPPED_SHARE * events.height):
        raise TraceError(f"{path}: damaged trace: {what}: its start, end or topology must be damaged")
    return events.filter(~bad), [f"{what}; they were left out"]


def read_trace(path: str | Path) -> Trace:
    path = Path(path)
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace")
    try:
        source = pa.memory_map(str(path), "r")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (OSError, pa.ArrowException) as err:
        raise TraceError(f"{path}: cannot open ({_reason(err)})") from None
    reader = _open_stream(path, source)
    meta = _metadata(path, reader.schema)
    _check_columns(path, reader.schema)
    batches, truncated, damage = _read_batches(path, reader)
    if not batches:
        if truncated:
            raise TraceError(f"{path}: truncated before its first complete batch of events (the recorder was "
                             f"killed before its first flush, or the file was cut short): nothing to read")
        if damage:
            raise TraceError(f"{path}: damaged trace: {'; '.join(damage)}")
    try:
        table = pa.Table.from_batches(batches, schema=reader.schema)
        events = pl.from_arrow(table)
    except (pa.ArrowException, pl.exceptions.PolarsError, pl.exceptions.PanicException, ValueError) as err:
        raise TraceError(f"{path}: damaged trace: its rows cannot be read ({_reason(err)})") from None
    assert isinstance(events, pl.DataFrame)
    added_since = [(n, t) for n, t in COLUMNS if n not in events.columns]
    if added_since:
        events = events.with_columns([pl.lit(None).cast(pl.from_arrow(pa.array([], type=t)).dtype).alias(n)
                                      for n, t in added_since])
    # a dozen distinct values over millions of rows: filters compare small integers
    events = events.with_columns(pl.col("event").cast(pl.Categorical))
    events, end_ns, end_damage = _end_ns(path, events)
    events, value_damage = _drop_impossible(path, events, meta, end_ns)
    return Trace(path, meta, events, truncated, damage=tuple(damage + end_damage + value_damage))
