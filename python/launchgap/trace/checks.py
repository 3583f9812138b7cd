"""What the readers check, in either format, so that a damaged trace (a flipped
bit, random bytes, a copy cut short) gives one clear line, never a traceback, a
crash or quietly wrong numbers:
- the metadata JSON and the types of the keys the analysis relies on;
- every row's values against the trace itself: timestamps inside its span,
  an end no earlier than its start (GPU work, API calls), CPU numbers within its
  topology, task ids no kernel gives, durations no longer than the trace. A few
  impossible rows are left out and counted; many mean the trace's own start, end
  or topology is damaged, and the file is refused. Which column is a time, a CPU,
  a task or a duration comes from the schema (each column's `role`);
- the GPU rows' correlation ids, which join GPU work to the call that made it
  (`correlation_damage`): an id repeated within a kind, or an execution whose id
  no API call of its process holds, cannot be right, and its rows are left out.

And, once a trace is read, what it could not see, for the report to say (its caveats and warnings): the
events the recorder lost, by kind (`lost_by_kind`), and the tasks whose switch-outs the kernel never traced
(`silent_tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from launchgap.inputs import JsonError, parse_json
from launchgap.trace.model import Trace, TraceError
from launchgap.trace.schema import (
    FORMAT_NAME,
    KIND_COLUMNS,
    META_CHECKED_TYPES,
    TASK_CPU_UNKNOWN,
    VERSIONS_READ,
    Event,
    MetaKey,
)

# How far outside the trace's [start, end] a timestamp may lie before it is
# impossible: generous (clock reads at attach and stop are not atomic with the
# first and last events), far below what a flipped high bit produces.
SPAN_SLACK_NS = 1_000_000_000
# Above this share of impossible rows the bounds themselves are suspect.
MAX_DROPPED_SHARE = 0.01
MAX_DROPPED_ROWS = 10
# No Linux task id is above PID_MAX_LIMIT (include/linux/threads.h: 4M on 64-bit)
PID_MAX_LIMIT = 4 * 1024 * 1024
# each column's role, one wherever it appears
ROLES: dict[str, str | None] = {c.name: c.role for columns in KIND_COLUMNS.values() for c in columns}

# the Python types of a value of each JSON type schema/trace.toml names
PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "bool": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
# key -> the types its value may have; the analysis relies on these (the schema's checked [meta] keys)
META_TYPES: dict[str, tuple[type, ...]] = {
    key: tuple(t for name in types for t in PYTHON_TYPES[name]) for key, types in META_CHECKED_TYPES.items()
}


def reason(err: BaseException) -> str:
    text = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return " ".join(text.split())[:300]


def check_version(path: Path, fmt: str, metadata_present: bool) -> int:
    """The version of a `launchgap-trace/N` marker, if this launchgap reads it."""
    name, _, version = fmt.partition("/")
    if name != FORMAT_NAME:
        if metadata_present:
            raise TraceError(f"{path}: damaged trace: its format marker reads {fmt!r}")
        raise TraceError(f"{path}: not a launchgap trace (its format is {fmt or 'not given'!r})")
    if not version.isdigit() or int(version) not in VERSIONS_READ:
        raise TraceError(
            f"{path}: trace format version {version} is not supported (this launchgap reads {sorted(VERSIONS_READ)})"
        )
    return int(version)


def parse_meta(path: Path, text: bytes | str, where: str) -> dict:
    """The metadata object, its keys' types checked; WHERE says where it was kept."""
    try:
        meta = parse_json(text, where)
    except JsonError as err:
        raise TraceError(f"{path}: damaged trace: its metadata ({where}) cannot be read ({err.problem})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: damaged trace: its metadata is not a JSON object")
    for key, types in META_TYPES.items():
        value = meta.get(key)
        if key in meta and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise TraceError(f"{path}: damaged trace: metadata {key!r} is {value!r:.200}")
    topology = meta.get(MetaKey.TOPOLOGY) or {}
    if (
        not isinstance(topology, dict)
        or not isinstance(topology.get("count", 0), int)
        or not isinstance(topology.get("cpus", []), list)
        or not all(isinstance(c, dict) and isinstance(c.get("cpu", 0), int) for c in topology.get("cpus", []))
    ):
        raise TraceError(f"{path}: damaged trace: metadata 'topology' is {topology!r:.200}")
    return meta


def parse_summary(text: bytes | str | None) -> tuple[dict | None, list[str]]:
    """The closing summary, or None and why it was left out (the trace then has no clean end)."""
    if text is None:
        return None, []
    try:
        summary = parse_json(text, "the closing summary")
        if not isinstance(summary, dict):
            raise ValueError("not a JSON object")
        end = summary["end_ns"]
        if not isinstance(end, int) or isinstance(end, bool):
            raise ValueError(f"end_ns is {end!r}")
        return summary, []
    except JsonError as err:
        return None, [f"its closing summary is damaged ({err.problem}) and was left out: the trace has no clean end"]
    except (TypeError, ValueError, KeyError) as err:
        return None, [f"its closing summary is damaged ({reason(err)}) and was left out: the trace has no clean end"]


def count_damage(summary: dict | None, read: dict[Event, int], written_by: str, held_in: str) -> list[str]:
    """Each kind whose rows read (READ, impossible ones included) differ from the rows the recorder wrote, as
    its closing summary counts them (`rows`, by kind; WRITTEN_BY names the summary, HELD_IN what holds the
    rows). A trace without a summary (a killed recorder) or whose summary has no counts (imported, older
    recorders) cannot be checked."""
    if summary is None or "rows" not in summary:
        return []
    rows = summary["rows"]
    if not isinstance(rows, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in rows.values()
    ):
        return [
            f"its closing summary's row counts are damaged ({rows!r:.100}): the rows read were not checked against them"
        ]
    damage = []
    for kind in Event:
        written, found = rows.get(kind.value, 0), read.get(kind, 0)
        if found != written:
            what = (
                f"{written - found:,} are missing"
                if found < written
                else f"{found - written:,} were added that the recorder did not write"
            )
            damage.append(
                f"{kind.value}: {written_by} counts {written:,} rows written, {held_in} hold {found:,}: {what}"
            )
    return damage


def topology_cpus(meta: dict) -> int | None:
    """How many CPU numbers the trace's topology allows (highest + 1), if it says."""
    topology = meta.get(MetaKey.TOPOLOGY) or {}
    numbers = [c["cpu"] for c in topology.get("cpus", []) if "cpu" in c]
    count = topology.get("count")
    bounds = [n + 1 for n in numbers] + ([count] if count else [])
    return max(bounds) if bounds else None


@dataclass(frozen=True)
class Bounds:
    """A trace's span (ns, the recorder's clock) and how many CPU numbers it has. The readers check each row
    against what the trace itself says (Bounds.of, where the metadata or the closing row may not say); the
    analysis measures over the span the rows fill (analysis/timeline.trace_bounds: both ends known)."""

    start_ns: int | None
    end_ns: int | None
    n_cpus: int | None

    @classmethod
    def of(cls, meta: dict, end_ns: int | None) -> Bounds:
        start = meta.get(MetaKey.START_NS)
        return cls(start if isinstance(start, int) else None, end_ns, topology_cpus(meta))

    @property
    def seconds(self) -> float:
        """The span's length; 0 where an end is not known."""
        if self.start_ns is None or self.end_ns is None:
            return 0.0
        return max(0, self.end_ns - self.start_ns) / 1e9


def impossible_rows(columns: set[str], bounds: Bounds) -> pl.Expr:
    """A boolean expression over a frame with COLUMNS: rows whose values the trace rules out."""
    checks = []
    ts = pl.col("ts_ns").cast(pl.Float64)
    start, end = bounds.start_ns, bounds.end_ns
    if start is not None:
        checks.append(ts < start - SPAN_SLACK_NS)
    if end is not None:
        checks.append(ts > end + SPAN_SLACK_NS)
    for name in sorted(columns):
        role = ROLES.get(name)
        if role == "time" and name != "ts_ns":
            # the end of an interval (GPU work, an API call): not before its start, not after the trace's end
            checks.append(pl.col(name) < pl.col("ts_ns"))
            if end is not None:
                checks.append(pl.col(name).cast(pl.Float64) > end + SPAN_SLACK_NS)
        elif role == "cpu" and bounds.n_cpus is not None:
            # a task's CPU the kernel's layout did not let the recorder read is unknown, not impossible
            known = pl.col(name) != TASK_CPU_UNKNOWN if name != "cpu" else pl.lit(True)
            checks.append((pl.col(name) >= bounds.n_cpus) & known)
        elif role == "task":
            checks.append(pl.col(name) > PID_MAX_LIMIT)
        elif role == "duration" and start is not None and end is not None:
            longest = max(0, end - start) + 2 * SPAN_SLACK_NS
            duration = pl.col(name).cast(pl.Float64)
            checks.append(duration > longest)
            checks.append(ts + duration > end + SPAN_SLACK_NS)
    missing = pl.col("ts_ns").is_null()
    if "event" in columns:
        missing = missing | pl.col("event").is_null()
    return pl.any_horizontal([c.fill_null(False) for c in checks]) | missing if checks else missing


@dataclass
class ImpossibleRows:
    """Impossible rows found so far, over every kind and part of a trace."""

    bad: int = 0
    total: int = 0
    example: str | None = None

    def add(self, frame: pl.DataFrame, bad: pl.Series, kind: str | None = None) -> None:
        n_bad = int(bad.sum() or 0)
        self.total += frame.height
        self.bad += n_bad
        if n_bad and self.example is None:
            first = frame.filter(bad).row(0, named=True)
            what = kind or first.get("event")
            self.example = f"e.g. a {what} row at ts_ns {first['ts_ns']} on CPU {first.get('cpu')}" + (
                f" lasting {first['duration_ns']} ns" if first.get("duration_ns") is not None else ""
            )

    def verdict(self, path: Path, bounds: Bounds) -> list[str]:
        """The damage to report; raises TraceError when there is too much of it to trust the bounds."""
        if not self.bad:
            return []
        span = f"{bounds.start_ns}..{bounds.end_ns}" if bounds.end_ns is not None else f"from {bounds.start_ns}"
        what = (
            f"{self.bad:,} of {self.total:,} rows hold values the trace rules out (timestamps outside its span "
            f"{span} ns, ends before starts, CPU numbers beyond its {bounds.n_cpus} CPUs, task ids above the "
            f"kernel's limit, or durations longer than the trace; {self.example})"
        )
        if self.bad > max(MAX_DROPPED_ROWS, MAX_DROPPED_SHARE * self.total):
            raise TraceError(f"{path}: damaged trace: {what}: its start, end or topology must be damaged")
        return [f"{what}; they were left out"]


# Each row of these kinds is one call or one piece of GPU work, with an id of its own within its process (CUPTI's
# correlation id); a graph traced node by node is the exception: its nodes share the launch's.
OWN_CORRELATION = (Event.GPU_API, Event.GPU_KERNEL, Event.GPU_GRAPH, Event.GPU_MEMCPY, Event.GPU_MEMSET)
# Executions: made only by launch calls, which the collector always records (collector/cupti_collector.c kept_calls)
EXECUTIONS = (Event.GPU_KERNEL, Event.GPU_GRAPH)


def correlation_key() -> pl.Expr:
    """(pid, correlation_id) as one u64."""
    return pl.col("pid").cast(pl.UInt64) * (1 << 32) + pl.col("correlation_id").cast(pl.UInt64)


def _alone(kind: Event) -> pl.Expr:
    """The rows of KIND that must have an id of their own (a graph's nodes share theirs)."""
    return pl.col("graph_id").is_null() if kind is Event.GPU_KERNEL else pl.lit(True)


def correlation_damage(scan) -> tuple[dict[Event, pl.Expr], list[str]]:
    """Rows whose correlation id cannot be right in a recording of launchgap's collector, found over the whole
    trace (SCAN(kind): its rows, lazily):
    - an id that several rows of one kind hold in one process (every call, kernel launched alone, graph, copy and
      memset has its own): all of them are left out, none can be told the right one;
    - a kernel or graph whose id no API call of its process holds: every launch call is recorded, so the id points
      nowhere; a process whose collector said CUPTI dropped records is spared (the call's record may be among them).
    Returns, per kind, an expression for the rows to leave out, and the damage in words."""
    drop: dict[Event, pl.Expr] = {}
    damage: list[str] = []
    repeated: dict[Event, pl.Series] = {}
    for kind in OWN_CORRELATION:
        keys = (
            scan(kind)
            .filter(_alone(kind))
            .select(correlation_key().alias("key"))
            .group_by("key")
            .len()
            .filter(pl.col("len") > 1)
            .collect()
        )
        if keys.height:
            repeated[kind] = keys["key"]
            rows = int(keys["len"].sum())
            first = int(keys["key"].min())
            damage.append(
                f"{rows:,} {kind.value} rows share {keys.height:,} correlation ids within their process "
                f"(e.g. pid {first >> 32}, id {first & 0xFFFFFFFF}), which each {kind.value} row has "
                f"alone; they were left out"
            )
    dangling: dict[Event, pl.Series] = {}
    api = scan(Event.GPU_API).select(correlation_key().alias("key"), "pid")
    dropped = (
        scan(Event.LOST)
        .filter(pl.col("detail").str.contains('"cupti_dropped"', literal=True))
        .select(pl.col("detail").str.json_path_match("$.pid").cast(pl.UInt32, strict=False).alias("pid"))
    )
    with_calls = api.select("pid").unique().join(dropped.unique(), on="pid", how="anti")
    for kind in EXECUTIONS:
        keys = (
            scan(kind)
            .select(correlation_key().alias("key"), "pid")
            .join(with_calls, on="pid", how="semi")
            .join(api.select("key"), on="key", how="anti")
            .select("key")
            .unique()
            .collect()
        )
        if keys.height:
            dangling[kind] = keys["key"]
            first = int(keys["key"].min())
            damage.append(
                f"{kind.value} rows with {keys.height:,} correlation ids that no API call of their "
                f"process holds (e.g. pid {first >> 32}, id {first & 0xFFFFFFFF}): every launch call is "
                f"recorded, so these point nowhere; they were left out"
            )
    for kind in OWN_CORRELATION:
        parts = []
        if kind in repeated:
            parts.append(_alone(kind) & correlation_key().is_in(repeated[kind].implode()))
        if kind in dangling:
            parts.append(correlation_key().is_in(dangling[kind].implode()))
        if parts:
            drop[kind] = pl.any_horizontal(parts)
    return drop, damage


def lost_by_kind(trace: Trace) -> dict[str, int]:
    """Events the recorder lost, summed by kind (the `lost` rows' lost_event), in kind-name order."""
    lost = trace.lost
    if lost.is_empty():
        return {}
    # by kind name: group_by's order varies from run to run, and the JSON should not
    return {k: int(v) for k, v in sorted(lost.group_by("lost_event").agg(pl.col("lost_count").sum()).iter_rows())}


@dataclass(frozen=True)
class SilentTask:
    """A task switched in but never out, though not running at the end (silent_tasks)."""

    pid: int
    tid: int
    comm: str | None
    switch_ins: int


def silent_tasks(trace: Trace) -> list[SilentTask]:
    """Tasks switched in but never out, other than those still running at the end: the kernel
    did not trace their switch-outs (seen with this project's sandbox agent), so a workload
    thread they preempted looks preempted until its next recorded switch-out. Most switch-ins first."""
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "tid", "next_tid")
    if sw.is_empty():
        return []
    # each CPU's last switch-in, equal times in the order read: grouped, not sorted
    running_at_end = set(
        sw.group_by("cpu")
        .agg(pl.col("next_tid").filter(pl.col("ts_ns") == pl.col("ts_ns").max()).last())["next_tid"]
        .to_list()
    )
    switched_out = set(sw["tid"].unique().to_list())
    switched_in = set(sw["next_tid"].unique().to_list())
    silent_tids = sorted(switched_in - switched_out - running_at_end - {0})
    if not silent_tids:
        return []
    # names and counts only for those (on a --system trace, strings a switch would cost more than the rest)
    ins = (
        trace.scan(Event.SWITCH)
        .select("next_pid", "next_tid", "next_comm")
        .filter(pl.col("next_tid").is_in(silent_tids))
        .collect()
        .group_by("next_pid", "next_tid")
        .agg(pl.len().alias("switch_ins"), pl.col("next_comm").last())
    )
    return [
        SilentTask(pid=p, tid=t, comm=c, switch_ins=n)
        for p, t, n, c in ins.sort(["switch_ins", "next_tid"], descending=[True, False]).rows()
    ]
