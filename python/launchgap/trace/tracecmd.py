"""Importing trace-cmd .dat files (docs/views.md, "trace-cmd import").

trace-cmd itself decodes the file (`trace-cmd report -R -t`: raw field
values, nanosecond timestamps), so every .dat version and event format it
knows is read the way it reads it; this module turns its lines into
launchgap rows with vectorised regular expressions.

What a .dat cannot say, and what the import does about it:
- thread groups: sched events carry the kernel's pid, which is a thread id;
  the import sets pid = tid (meta `pid_is_thread_id`).
- voluntary: derived from prev_state (R or R+ = preempted, anything else
  blocked), the rule the kernel's own counters follow except when a pending
  signal aborts a sleep.
- prev_state: the tracepoint reports a bit per state letter (S=1, D=2, T=4,
  t=8, X=16, Z=32, P=64, I=128, R+=256); it is mapped back to the kernel's
  task-state values used by launchgap traces (dead = 0x80).
- names: trace-cmd prints a name (a task's, a file's) that is not all printable, or
  holds stale bytes after its NUL, as `ARRAY[ff, 6f, 64, 64, 00, ...]`: the bytes up to
  the NUL are kept, escaped as the recorder escapes names (docs/trace-format.md, "Names").
- lost events: trace-cmd's `[LOST n EVENTS]` lines are per CPU and lose
  every kind of event at once, so each becomes one `lost` row per
  scheduling and IRQ event type.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl

from launchgap import __version__
from launchgap.procfs import escape_name
from launchgap.trace.format2 import write_format2
from launchgap.trace.schema import (
    FORMAT_NAME,
    FORMAT_VERSION,
    IRQ_VECTOR_NAMES,
    SOFTIRQ_NAMES,
    TASK_DEAD,
    Event,
    MetaKey,
)

# x86 irq_vectors tracepoints (trace-cmd's event names: the vector's name, lower case, + _entry/_exit)
VECTOR_EVENTS = {name.lower(): name for name in IRQ_VECTOR_NAMES}
# what a [LOST n EVENTS] line loses: every record type of the scheduler and IRQ tracepoints
LOST_TYPES = (
    Event.SWITCH,
    Event.WAKEUP,
    Event.MIGRATE,
    Event.FORK,
    Event.EXEC,
    Event.EXIT,
    Event.HARDIRQ,
    Event.SOFTIRQ,
    Event.IRQ_VECTOR,
)
# tracepoint state bit -> the kernel's task state value (include/linux/sched.h)
REPORT_TO_TASK_STATE = {
    0: 0,
    1: 0x1,
    2: 0x2,
    4: 0x4,
    8: 0x8,
    16: TASK_DEAD,
    32: TASK_DEAD,
    64: 0x40,
    128: 0x402,
    256: 0,
}
PREEMPTED_BIT = 256

LINE = (
    r"^\s*(?:[^\s:]+:\s+)?(?P<task>.+?)-(?P<line_pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<frac>\d+):\s+"
    r"(?P<name>\w+):\s*(?P<fields>.*)$"
)
LOST_LINE = r"CPU:\s*(?P<cpu>\d+)\s+\[LOST (?P<count>\d+) EVENTS\]"
FIELDS = {
    "sched_switch": r"prev_comm=(?P<comm>.*) prev_pid=(?P<tid>\d+) prev_prio=(?P<prio>-?\d+) "
    r"prev_state=(?P<state>\d+) next_comm=(?P<next_comm>.*) next_pid=(?P<next_tid>\d+) "
    r"next_prio=(?P<next_prio>-?\d+)",
    "wakeups": r"comm=(?P<comm>.*) pid=(?P<tid>\d+) prio=(?P<prio>-?\d+)(?: success=\d+)? target_cpu=(?P<target_cpu>\d+)",
    "sched_migrate_task": r"comm=(?P<comm>.*) pid=(?P<tid>\d+) prio=(?P<prio>-?\d+) orig_cpu=(?P<orig_cpu>\d+) "
    r"dest_cpu=(?P<dest_cpu>\d+)",
    "sched_process_fork": r"(?:parent_)?comm=(?P<parent_comm>.*) (?:parent_)?pid=(?P<tid>\d+) "
    r"child_comm=(?P<comm>.*) child_pid=(?P<child_tid>\d+)",
    "sched_process_exec": r"filename=(?P<filename>.*) pid=(?P<tid>\d+) old_pid=(?P<old_tid>\d+)",
    "sched_process_exit": r"comm=(?P<comm>.*) pid=(?P<tid>\d+) prio=(?P<prio>-?\d+)",
    "irq_handler_entry": r"irq=(?P<irq>\d+) name=(?P<irq_name>.*)",
    "softirq_entry": r"vec=(?P<irq>\d+)",
}
# what trace-cmd -R prints for a char array it does not print as a string: its bytes in hex
ARRAY_VALUE = r"^ARRAY\[[0-9a-f]{2}(?:, [0-9a-f]{2})*\]$"
NAME_COLUMNS = ("comm", "next_comm", "filename", "irq_name")
WAKEUPS = {"sched_wakeup": Event.WAKEUP, "sched_waking": Event.WAKING, "sched_wakeup_new": Event.WAKEUP_NEW}


class DatImportError(ValueError):
    """The .dat file cannot be imported (message says why)."""


def report_lines(dat: Path) -> list[str]:
    tool = shutil.which("trace-cmd")
    if tool is None:
        raise DatImportError("trace-cmd is not installed (apt install trace-cmd)")
    proc = subprocess.run([tool, "report", "-R", "-t", "-i", str(dat)], capture_output=True)
    if proc.returncode != 0:
        detail = (proc.stderr.decode("utf-8", "backslashreplace").strip().splitlines() or ["no message"])[-1]
        raise DatImportError(f"{dat}: trace-cmd cannot read it ({detail})")
    # trace-cmd prints task and file names as the kernel holds them, any bytes: escaped as the recorder does
    return escape_name(proc.stdout).split("\n")  # only newline ends a line: a name may hold \x1c or \x85


def _fields(frame: pl.DataFrame, names: list[str], pattern: str) -> pl.DataFrame:
    part = frame.filter(pl.col("name").is_in(names))
    if part.is_empty():
        return pl.DataFrame()
    extracted = part.with_columns(pl.col("fields").str.extract_groups(pattern).alias("f")).unnest("f")
    return extracted.drop("fields")


def _paired(frame: pl.DataFrame, entry: str, exit_: str) -> pl.DataFrame:
    """Entry rows with duration_ns from the next exit on the same CPU. Each
    kind is paired on its own, so a hard IRQ inside a softirq leaves both
    durations intact; an exit with no entry (the trace began inside the
    handler) or an entry with no exit (it ended inside) is dropped."""
    rows = frame.filter(pl.col("name").is_in([entry, exit_])).sort("cpu", "ts_ns")
    nxt = pl.col("name").shift(-1).over("cpu")
    return rows.with_columns(
        (pl.col("ts_ns").shift(-1).over("cpu") - pl.col("ts_ns")).alias("duration_ns"), (nxt == exit_).alias("closed")
    ).filter((pl.col("name") == entry) & pl.col("closed"))


def _array_name(value: str) -> str:
    """A name trace-cmd printed as ARRAY[..]: its bytes up to the NUL, escaped."""
    raw = bytes(int(byte, 16) for byte in value[len("ARRAY[") : -1].split(", "))
    return escape_name(raw.split(b"\0", 1)[0])


def _names_from_arrays(frame: pl.DataFrame) -> pl.DataFrame:
    """FRAME with every name column's ARRAY[..] values made names (decoded once per distinct value)."""
    columns = [c for c in NAME_COLUMNS if c in frame.columns]
    arrays = (
        pl.concat([frame.get_column(c).filter(frame.get_column(c).str.contains(ARRAY_VALUE)).unique() for c in columns])
        .unique()
        .to_list()
        if columns
        else []
    )
    if not arrays:
        return frame
    names = {value: _array_name(value) for value in arrays}
    return frame.with_columns(pl.col(c).replace(names) for c in columns)


def _add_task_events(parsed: pl.DataFrame, add: Callable[[Event, pl.DataFrame], None]) -> None:
    """The scheduler's events of the tasks (switches, wakeups, migrations), each kind given to ADD as
    launchgap's rows."""
    sw = _fields(parsed, ["sched_switch"], FIELDS["sched_switch"])
    if not sw.is_empty():
        state = pl.col("state").cast(pl.Int64)
        task_state = state.replace_strict(REPORT_TO_TASK_STATE, default=state)
        add(
            Event.SWITCH,
            sw.select(
                "ts_ns",
                "cpu",
                pl.col("tid").cast(pl.UInt32).alias("pid"),
                pl.col("tid").cast(pl.UInt32),
                "comm",
                task_state.alias("prev_state"),
                (state != 0).and_(state != PREEMPTED_BIT).alias("voluntary"),
                (state == PREEMPTED_BIT).alias("preempt"),
                pl.col("prio").cast(pl.Int32),
                pl.col("next_tid").cast(pl.UInt32).alias("next_pid"),
                pl.col("next_tid").cast(pl.UInt32),
                "next_comm",
                pl.col("next_prio").cast(pl.Int32),
            ),
        )
    wk = _fields(parsed, list(WAKEUPS), FIELDS["wakeups"])
    for name, kind in WAKEUPS.items():
        mine = wk.filter(pl.col("name") == name) if not wk.is_empty() else wk
        if not mine.is_empty():
            add(
                kind,
                mine.select(
                    "ts_ns",
                    "cpu",
                    pl.col("tid").cast(pl.UInt32).alias("pid"),
                    pl.col("tid").cast(pl.UInt32),
                    "comm",
                    pl.col("prio").cast(pl.Int32),
                    pl.col("target_cpu").cast(pl.UInt32),
                    pl.col("line_pid").alias("waker_tid"),
                ),
            )
    mg = _fields(parsed, ["sched_migrate_task"], FIELDS["sched_migrate_task"])
    if not mg.is_empty():
        add(
            Event.MIGRATE,
            mg.select(
                "ts_ns",
                "cpu",
                pl.col("tid").cast(pl.UInt32).alias("pid"),
                pl.col("tid").cast(pl.UInt32),
                "comm",
                pl.col("orig_cpu").cast(pl.UInt32),
                pl.col("dest_cpu").cast(pl.UInt32),
            ),
        )


def _add_process_events(parsed: pl.DataFrame, add: Callable[[Event, pl.DataFrame], None]) -> None:
    """The tasks' births, execs and deaths (fork, exec, exit), each kind given to ADD as launchgap's rows."""
    fk = _fields(parsed, ["sched_process_fork"], FIELDS["sched_process_fork"])
    if not fk.is_empty():
        add(
            Event.FORK,
            fk.select(
                "ts_ns",
                "cpu",
                pl.col("tid").cast(pl.UInt32).alias("pid"),
                pl.col("tid").cast(pl.UInt32),
                "comm",
                pl.col("child_tid").cast(pl.UInt32).alias("child_pid"),
                pl.col("child_tid").cast(pl.UInt32),
            ),
        )
    ex = _fields(parsed, ["sched_process_exec"], FIELDS["sched_process_exec"])
    if not ex.is_empty():
        add(
            Event.EXEC,
            ex.select(
                "ts_ns",
                "cpu",
                pl.col("tid").cast(pl.UInt32).alias("pid"),
                pl.col("tid").cast(pl.UInt32),
                pl.col("task").alias("comm"),
                "filename",
            ),
        )
    dx = _fields(parsed, ["sched_process_exit"], FIELDS["sched_process_exit"])
    if not dx.is_empty():
        add(
            Event.EXIT,
            dx.select(
                "ts_ns", "cpu", pl.col("tid").cast(pl.UInt32).alias("pid"), pl.col("tid").cast(pl.UInt32), "comm"
            ),
        )


def _add_irq_events(parsed: pl.DataFrame, add: Callable[[Event, pl.DataFrame], None]) -> None:
    """Interrupts (hard IRQs, softirqs, the x86 vectors), each an entry paired with its exit, given to ADD
    as launchgap's rows."""
    hard = _paired(parsed, "irq_handler_entry", "irq_handler_exit")
    if not hard.is_empty():
        hard = hard.with_columns(pl.col("fields").str.extract_groups(FIELDS["irq_handler_entry"]).alias("f")).unnest(
            "f"
        )
        add(
            Event.HARDIRQ,
            hard.select(
                "ts_ns",
                "cpu",
                pl.col("line_pid").alias("pid"),
                pl.col("line_pid").alias("tid"),
                pl.col("irq").cast(pl.Int32),
                "irq_name",
                "duration_ns",
            ),
        )
    soft = _paired(parsed, "softirq_entry", "softirq_exit")
    if not soft.is_empty():
        soft = soft.with_columns(pl.col("fields").str.extract(r"vec=(\d+)").cast(pl.Int32).alias("irq"))
        add(
            Event.SOFTIRQ,
            soft.select(
                "ts_ns",
                "cpu",
                pl.col("line_pid").alias("pid"),
                pl.col("line_pid").alias("tid"),
                "irq",
                pl.col("irq")
                .replace_strict(dict(enumerate(SOFTIRQ_NAMES)), default="?", return_dtype=pl.Utf8)
                .alias("irq_name"),
                "duration_ns",
            ),
        )
    for event, name in VECTOR_EVENTS.items():
        vec = _paired(parsed, f"{event}_entry", f"{event}_exit")
        if not vec.is_empty():
            add(
                Event.IRQ_VECTOR,
                vec.select(
                    "ts_ns",
                    "cpu",
                    pl.col("line_pid").alias("pid"),
                    pl.col("line_pid").alias("tid"),
                    pl.lit(IRQ_VECTOR_NAMES.index(name), pl.Int32).alias("irq"),
                    pl.lit(name).alias("irq_name"),
                    "duration_ns",
                ),
            )


def lines_to_events(lines: list[str]) -> tuple[dict[Event, pl.DataFrame], dict]:
    """One frame per event kind, and what was imported."""
    raw = pl.DataFrame({"line": lines}, schema={"line": pl.Utf8})
    lost = raw.select(pl.col("line").str.extract_groups(LOST_LINE).alias("g")).unnest("g").drop_nulls()
    parsed = raw.select(pl.col("line").str.extract_groups(LINE).alias("g")).unnest("g").drop_nulls("name")
    if parsed.is_empty():
        raise DatImportError(
            "trace-cmd decoded no events from it (a .dat cut short loses its event pages: is the file complete?)"
        )
    parsed = parsed.with_columns(
        (
            pl.col("sec").cast(pl.Int64) * 1_000_000_000
            + pl.col("frac").str.slice(0, 9).str.pad_end(9, "0").cast(pl.Int64)
        ).alias("ts_ns"),
        pl.col("cpu").cast(pl.UInt32),
        pl.col("line_pid").cast(pl.UInt32),
    ).drop("sec", "frac")
    out: dict[Event, list[pl.DataFrame]] = {}

    def add(kind: Event, frame: pl.DataFrame) -> None:
        out.setdefault(kind, []).append(frame)

    counts = parsed.group_by("name").len()

    _add_task_events(parsed, add)
    _add_process_events(parsed, add)
    _add_irq_events(parsed, add)
    if not out:
        raise DatImportError(
            "the trace holds none of the events launchgap uses (sched_switch, sched_wakeup, "
            "sched_migrate_task, fork/exec/exit, irq and softirq events)"
        )
    frames = {
        kind: _names_from_arrays(pl.concat(parts, how="diagonal_relaxed").sort("ts_ns", maintain_order=True))
        for kind, parts in out.items()
    }
    end_ns = int(parsed["ts_ns"].max())
    if not lost.is_empty():
        # a lost-events line has no time of its own: it is placed at the end of the trace
        frames[Event.LOST] = pl.concat(
            [
                lost.select(
                    pl.lit(end_ns).alias("ts_ns"),
                    pl.col("cpu").cast(pl.UInt32),
                    pl.lit(kind.value).alias("lost_event"),
                    pl.col("count").cast(pl.UInt64).alias("lost_count"),
                    pl.lit(int(parsed["ts_ns"].min())).alias("since_ns"),
                )
                for kind in LOST_TYPES
            ]
        )
    stats = {
        "events_by_name": dict(counts.sort("name").iter_rows()),
        "lost_events": int(lost["count"].cast(pl.Int64).sum()) if not lost.is_empty() else 0,
        "start_ns": int(parsed["ts_ns"].min()),
        "end_ns": end_ns,
        "cpu_count": _cpu_count(lines, parsed),
    }
    return frames, stats


def _cpu_count(lines: list[str], parsed: pl.DataFrame) -> int:
    """trace-cmd's header line `cpus=N`, else the highest CPU seen + 1."""
    for line in lines[:5]:
        if line.startswith("cpus=") and line[5:].strip().isdigit():
            return int(line[5:])
    return int(parsed["cpu"].max()) + 1


def import_dat(dat: Path, out: Path, targets: list[str] | None = None) -> dict:
    """Writes a launchgap trace (format 2) from a trace-cmd .dat into OUT, an empty directory; returns what
    was imported."""
    dat = Path(dat)
    if not dat.is_file():
        raise DatImportError(f"{dat}: no such file")
    try:
        return import_lines(report_lines(dat), out, str(dat), targets)
    except DatImportError as err:
        raise DatImportError(str(err) if str(err).startswith(f"{dat}:") else f"{dat}: {err}") from None


def import_lines(lines: list[str], out: Path, source: str, targets: list[str] | None = None) -> dict:
    """Writes a launchgap trace (format 2) from the lines of `trace-cmd report -R -t` into OUT, an empty
    directory (SOURCE: what they came from, for the trace's meta); returns what was imported."""
    frames, stats = lines_to_events(lines)
    pids = []
    if targets:
        named = pl.concat([frame.select("tid", "comm") for frame in frames.values() if "comm" in frame.columns])
        named = named.filter(
            pl.col("comm").is_not_null() & pl.any_horizontal([pl.col("comm").str.starts_with(t) for t in targets])
        )
        pids = sorted(set(named["tid"].drop_nulls().to_list()))
        if not pids:
            raise DatImportError(f"--target: no task named {', '.join(targets)}* in the trace")
    end = {"end_ns": stats["end_ns"], "stop_reason": "imported", "lost_events": stats["lost_events"]}
    meta = {
        MetaKey.FORMAT: FORMAT_NAME,
        MetaKey.VERSION: FORMAT_VERSION,
        MetaKey.RECORDER: {"name": "launchgap import (trace-cmd .dat)", "version": __version__},
        MetaKey.SOURCE: source,
        MetaKey.START_NS: stats["start_ns"],
        MetaKey.MODE: "pids" if pids else "system",
        MetaKey.PIDS: pids,
        MetaKey.COMMAND: None,
        MetaKey.COMMAND_PID: None,
        MetaKey.PID_IS_THREAD_ID: True,
        MetaKey.EVERY_SWITCH: True,
        MetaKey.CLOCK: {"timestamps": "the .dat's trace clock (trace-cmd default: local)"},
        MetaKey.TOPOLOGY: {"count": stats["cpu_count"]},
        MetaKey.IMPORTED_EVENTS: stats["events_by_name"],
    }
    write_format2(out, frames, meta, end)
    return stats
