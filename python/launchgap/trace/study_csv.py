"""Reading the study's CSV layout, so its users can re-analyse old data, and
saying plainly what such a file can and cannot support.

Two writers use the layout, and they are told apart (their limits differ):

- the original study's tracer, `cuda_sched_trace` (eunomia-bpf/gpu_ext,
  tools/cuda_sched_trace.c + .bpf.c). Its rows, from its printf formats:
  launch rows `ts,cuLaunchKernel|cudaLaunchKernel,pid,tid,comm,cpu,gx,gy,gz,
  bx,by,bz,shared_mem,0x<stream hex>,0,0` (16 fields: the IRQ columns are
  simply absent); schedSwitch rows `ts,schedSwitch,pid,pid,comm,cpu,,,,,,,,,
  OFF,ON` where one of OFF/ON is the absolute ktime and the other `0`
  ("0 means N/A"); sync rows with every field after cpu empty; IRQ rows
  `...,,irq,name,duration` (19 fields), an Entry row (duration 0) and an Exit
  row each; `comm` unquoted. `timestamp_ns` counts from its first event.
  An earlier version wrote only the first 16 columns (no IRQs); both are read.
  Its known faults (shared/PRODUCT.md, "Lessons") and what we do:
  - a runtime launch also fired the driver probe, so most launches appear
    twice: a cuLaunchKernel row right after a cudaLaunchKernel row of the same
    thread with the same geometry is merged into one launch;
  - switches were looked up in a map keyed by process id, so only the main
    thread's switches were seen: other threads' off-CPU time is unknown;
  - IRQs were only seen while a GPU thread was current.
- launchgap's own `export --csv`: one row per logical launch, every
  workload thread's switches, IRQ Exit rows only, unused fields empty (never
  `0`). A launch row with last_*_ns filled, a switch row with both filled, or
  an IRQ Entry row can only come from the study's tool.

Neither records why a thread left the CPU (preempted or blocked) nor any
wakeup: off-CPU time stays unclassified ("offcpu"), never called
preemption, and run-queue wait cannot be measured.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from launchgap.trace.model import FrameTables, Trace, TraceError
from launchgap.trace.schema import Event, MetaKey

# The layout's 19 columns, in order, each with the type launchgap's export writes it as
# (exports/study_csv.py; read back here as text, numbers parsed strictly)
COLUMN_TYPES = {
    "timestamp_ns": pl.Int64,
    "event_type": pl.Utf8,
    "pid": pl.UInt32,
    "tid": pl.UInt32,
    "comm": pl.Utf8,
    "cpu": pl.UInt32,
    "grid_x": pl.UInt32,
    "grid_y": pl.UInt32,
    "grid_z": pl.UInt32,
    "block_x": pl.UInt32,
    "block_y": pl.UInt32,
    "block_z": pl.UInt32,
    "shared_mem": pl.UInt32,
    "stream": pl.UInt64,
    "last_offcpu_ns": pl.Int64,
    "last_oncpu_ns": pl.Int64,
    "irq_num": pl.Int32,
    "irq_name": pl.Utf8,
    "duration_ns": pl.UInt64,
}
COLUMNS = list(COLUMN_TYPES)
HEADER = ",".join(COLUMNS)
# the tool before it traced IRQs wrote only these
BASE_COLUMNS = COLUMNS[:16]
IRQ_COLUMNS = COLUMNS[16:]
GEOMETRY = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem"]
TEXT_COLUMNS = {"event_type", "comm", "irq_name"}
LAUNCH_TYPES = ("cuLaunchKernel", "cudaLaunchKernel")
SOURCE_TOOL = "cuda_sched_trace"
SOURCE_EXPORT = "launchgap export"
UTF8_BOM = b"\xef\xbb\xbf"


def first_line(path: str | Path, limit: int = 4096) -> str | None:
    """The file's first line as text (a UTF-8 BOM dropped), or None if it is not text."""
    try:
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return None
    head = head.removeprefix(UTF8_BOM)
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text and text.isprintable() else None


def looks_like_csv(path: str | Path) -> bool:
    """Text whose first line has commas: read as the study's CSV layout (which says what is wrong with it)."""
    line = first_line(path)
    return line is not None and "," in line


def looks_like_study_csv(path: str | Path) -> bool:
    line = first_line(path)
    return line is not None and set(BASE_COLUMNS) <= set(line.split(","))


def _check_header(path: Path) -> list[str]:
    line = first_line(path)
    if line is None:
        raise TraceError(f"{path}: not a launchgap trace or a CSV")
    names = [n.strip() for n in line.split(",")]
    if names and names[0].lstrip("-").isdigit():
        raise TraceError(
            f"{path}: a CSV without a header row (its first line is data); the study's CSV starts "
            f"with the line {HEADER}"
        )
    missing = [c for c in BASE_COLUMNS if c not in names]
    if missing:
        raise TraceError(
            f"{path}: a CSV, but not the study's layout: no column {', '.join(missing[:6])}"
            + (f" (and {len(missing) - 6} more)" if len(missing) > 6 else "")
        )
    return names


def _too_many_fields(path: Path, width: int) -> str:
    """Where a row has more fields than the header (read line by line: an error path only)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        for number, row in enumerate(csv.reader(f), start=1):
            if len(row) > width:
                return f"line {number} has {len(row)} fields, the header {width}"
    return "a row has more fields than the header"


def _numbers(raw: pl.DataFrame, path: Path) -> pl.DataFrame:
    """Every numeric column parsed strictly: a value that is not a number is an error naming its line."""
    parsed = []
    for name in raw.columns:
        if name in TEXT_COLUMNS:
            continue
        column = pl.col(name).str.strip_chars()
        if name == "stream":
            # the tool prints the stream pointer as 0x... hex; older files and hand-made ones in decimal
            hexadecimal = column.str.starts_with("0x") | column.str.starts_with("0X")
            value = (
                pl.when(hexadecimal)
                .then(column.str.slice(2).str.to_integer(base=16, dtype=pl.UInt64, strict=False))
                .otherwise(column.str.to_integer(dtype=pl.UInt64, strict=False))
            )
        else:
            value = column.str.to_integer(dtype=pl.Int64, strict=False)
        parsed.append(value.alias(name))
    numbers = raw.select(parsed)
    for name in numbers.columns:
        failed = raw[name].str.strip_chars().ne("").fill_null(False) & numbers[name].is_null()
        if failed.any():
            row = int(failed.arg_true()[0])
            raise TraceError(f"{path}: line {row + 2}: column {name} holds {raw[name][row]!r}, not a number")
    return raw.select(sorted(TEXT_COLUMNS & set(raw.columns))).hstack(numbers).select(raw.columns)


def _source(raw: pl.DataFrame, echoes: int) -> str:
    """Which writer made the file (see the module note)."""
    launch = pl.col("event_type").is_in(LAUNCH_TYPES)
    switch = pl.col("event_type") == "schedSwitch"
    tool_only = (
        (launch & (pl.col("last_offcpu_ns").is_not_null() | pl.col("last_oncpu_ns").is_not_null()))
        | (switch & pl.col("last_offcpu_ns").is_not_null() & pl.col("last_oncpu_ns").is_not_null())
        | pl.col("event_type").is_in(["hardirqEntry", "softirqEntry"])
    )
    if echoes or "irq_num" not in raw.columns or raw.select(tool_only.any()).item():
        return SOURCE_TOOL
    return SOURCE_EXPORT


def _read_raw(path: Path) -> pl.DataFrame:
    """The CSV's rows, its known columns typed (the IRQ ones null where the file has none); a TraceError
    names the line where it cannot be read."""
    names = _check_header(path)
    try:
        raw = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
    except pl.exceptions.ComputeError as err:
        if "more fields" in str(err):
            raise TraceError(
                f"{path}: {_too_many_fields(path, len(names))} (an unquoted comma in a command name, "
                f"as the study's tool writes them?)"
            ) from None
        raise TraceError(f"{path}: cannot read as the study's CSV ({str(err).splitlines()[0]})") from None
    except pl.exceptions.PolarsError as err:
        raise TraceError(f"{path}: cannot read as the study's CSV ({str(err).splitlines()[0]})") from None
    raw = raw.select([c for c in COLUMNS if c in raw.columns])
    for column in IRQ_COLUMNS:
        if column not in raw.columns:
            raw = raw.with_columns(pl.lit(None, pl.Utf8).alias(column))
    raw = _numbers(raw, path)
    missing_time = raw["timestamp_ns"].is_null() | raw["event_type"].is_null()
    if missing_time.any():
        raise TraceError(f"{path}: line {int(missing_time.arg_true()[0]) + 2}: no timestamp_ns or event_type")
    return raw


def _syncs(raw: pl.DataFrame) -> pl.DataFrame:
    """Each thread's n-th syncEnter with its n-th syncExit: one sync row (api unknown)."""
    enters = raw.filter(pl.col("event_type") == "syncEnter").sort("tid", "timestamp_ns")
    exits = raw.filter(pl.col("event_type") == "syncExit").sort("tid", "timestamp_ns")
    return (
        enters.with_columns(pl.int_range(pl.len()).over("tid").alias("n"))
        .join(
            exits.with_columns(pl.int_range(pl.len()).over("tid").alias("n")).select(
                "tid", "n", pl.col("timestamp_ns").alias("exit_ns")
            ),
            on=["tid", "n"],
        )
        .select(
            pl.col("timestamp_ns").alias("ts_ns"),
            "cpu",
            "pid",
            "tid",
            "comm",
            pl.lit("unknown").alias("api"),
            (pl.col("exit_ns") - pl.col("timestamp_ns")).alias("duration_ns"),
        )
    )


def _caveats(
    source: str, launch_rows: int, echoes: int, launches: int, threads_with_switches: int, launching_threads: int
) -> list[str]:
    """What the CSV cannot say, for the report's caveats: what every such CSV lacks, and what the study's
    tool (SOURCE_TOOL) or our export missed."""
    caveats = [
        "preempted vs blocked: the CSV does not record why a thread left the CPU, so off-CPU time is shown "
        "unclassified, never as preemption (a sync's block is not interference)",
        "run-queue wait: the CSV has no wakeups, so it cannot be measured",
    ]
    if source == SOURCE_TOOL:
        caveats = [
            f"launches: {launch_rows:,} rows in the CSV, {echoes:,} of them a driver row echoing the runtime launch "
            f"just before it (the tool probed both); counted once each: {launches:,} launches",
            *caveats,
            f"switches: the tool only saw the main thread's (a map keyed by process id); {threads_with_switches} "
            f"thread(s) have switches here, {launching_threads} launched kernels: other threads' off-CPU time is "
            f"unknown",
            "IRQs: the tool saw interrupts only while a GPU thread was current; IRQs on its CPU while it waited are "
            "missing",
        ]
    else:
        caveats.append(
            "who ran instead: the CSV holds only the workload threads' own rows, so neither the culprits "
            "nor the IRQs that hit a CPU while a workload thread waited are in it"
        )
    return caveats


def _switches(switch_rows: pl.DataFrame) -> pl.DataFrame:
    """The schedSwitch rows as switch rows: one out (its last_offcpu_ns set) or one in (last_oncpu_ns)."""
    # the tool writes 0 in the unused one of the pair ("0 means N/A"): a zero is not a time
    switched_out = pl.col("last_offcpu_ns").fill_null(0) != 0
    switched_in = pl.col("last_oncpu_ns").fill_null(0) != 0
    # switched out: voluntary unknown; switched in: next_* is the thread
    outs = switch_rows.filter(switched_out).select(
        pl.col("timestamp_ns").alias("ts_ns"),
        "cpu",
        "pid",
        "tid",
        "comm",
        pl.lit(None, pl.Boolean).alias("voluntary"),
        pl.lit(0).alias("prev_state"),
        pl.lit(0).alias("next_pid"),
        pl.lit(0).alias("next_tid"),
        pl.lit("?").alias("next_comm"),
    )
    ins = switch_rows.filter(switched_in).select(
        pl.col("timestamp_ns").alias("ts_ns"),
        "cpu",
        pl.lit(0).alias("pid"),
        pl.lit(0).alias("tid"),
        pl.lit("?").alias("comm"),
        pl.lit(False).alias("voluntary"),
        pl.lit(0).alias("prev_state"),
        pl.col("pid").alias("next_pid"),
        pl.col("tid").alias("next_tid"),
        pl.col("comm").alias("next_comm"),
    )

    return pl.concat([outs, ins], how="diagonal_relaxed")


def _irqs(raw: pl.DataFrame, exit_row: str) -> pl.DataFrame:
    """The interrupts whose exit rows are EXIT_ROW, each from its start (the exit less its duration)."""
    return raw.filter(pl.col("event_type") == exit_row).select(
        (pl.col("timestamp_ns") - pl.col("duration_ns")).alias("ts_ns"),
        "cpu",
        "pid",
        "tid",
        pl.col("irq_num").alias("irq"),
        "irq_name",
        "duration_ns",
    )


def read_study_csv(path: str | Path) -> Trace:
    path = Path(path)
    raw = _read_raw(path)

    launches = raw.filter(pl.col("event_type").is_in(LAUNCH_TYPES)).sort("tid", "timestamp_ns")
    previous = [pl.col(c).shift(1).over("tid") for c in ["event_type", *GEOMETRY]]
    launches = launches.with_columns(
        (
            (pl.col("event_type") == "cuLaunchKernel")
            & (previous[0] == "cudaLaunchKernel")
            & pl.all_horizontal(*[pl.col(c).eq_missing(p) for c, p in zip(GEOMETRY, previous[1:])])
        ).alias("echo_of_runtime")
    )
    echoes = int(launches["echo_of_runtime"].sum())
    launch_rows = launches.height
    driver_rows = int((launches["event_type"] == "cuLaunchKernel").sum())
    source = _source(raw, echoes)
    # the runtime row stands for the launch; its driver echo is dropped
    launches = launches.filter(~pl.col("echo_of_runtime")).select(
        pl.col("timestamp_ns").alias("ts_ns"),
        "cpu",
        "pid",
        "tid",
        "comm",
        pl.when(pl.col("event_type") == "cudaLaunchKernel")
        .then(pl.lit("cuLaunchKernel"))
        .otherwise(pl.col("event_type"))
        .alias("api"),
        pl.when(pl.col("event_type") == "cudaLaunchKernel").then(pl.lit("cudaLaunchKernel")).alias("runtime_api"),
        *GEOMETRY,
        "stream",
    )

    syncs = _syncs(raw)

    switch_rows = raw.filter(pl.col("event_type") == "schedSwitch")
    frames = {
        kind: frame.sort("ts_ns", maintain_order=True)
        for kind, frame in (
            (Event.LAUNCH, launches),
            (Event.SYNC, syncs),
            (Event.SWITCH, _switches(switch_rows)),
            (Event.HARDIRQ, _irqs(raw, "hardirqExit")),
            (Event.SOFTIRQ, _irqs(raw, "softirqExit")),
        )
    }
    caveats = _caveats(
        source, launch_rows, echoes, launches.height, switch_rows["tid"].n_unique(), launches["tid"].n_unique()
    )
    start = int(raw["timestamp_ns"].min() or 0)
    end = int(raw["timestamp_ns"].max() or 0)
    meta = {
        MetaKey.FORMAT: "study-csv",
        MetaKey.VERSION: 0,
        MetaKey.START_NS: start,
        MetaKey.MODE: "study-csv",
        MetaKey.COMMAND: None,
        MetaKey.PIDS: [],
        MetaKey.HOST: {},
        MetaKey.TOPOLOGY: {},
        MetaKey.CAVEATS: caveats,
        MetaKey.CSV_SOURCE: source,
        # what the study's own script divided for Sched/1K (analyze_scheduler_impact.py): its tracer's
        # schedSwitch counter (a row per switch-out and per switch-in) over its cuLaunchKernel counter,
        # which holds the runtime launches' driver echoes too; in our export every launch is one row
        MetaKey.STUDY_COUNTS: {
            "sched_switch_rows": switch_rows.height,
            "launches": driver_rows if source == SOURCE_TOOL else launches.height,
        },
    }
    return Trace(path, meta, FrameTables(frames), truncated=False, end_ns=end, format=0)
