"""The PyTorch profiler's trace (Kineto's Chrome-trace JSON, .json or .json.gz) read
into launchgap's GPU kinds: `launchgap report TRACE.json.gz`, `launchgap import`, and
the GPU side of `launchgap report run.lg --kineto TRACE` (trace/kineto_join.py).

What a Kineto file holds, as Kineto's ChromeTraceLogger writes it (libkineto's
output_json.cpp, read for its shapes; checked against the real traces in
shared/real-traces/kineto and against cudasim's own writer of the same layout):
- one event per line group, `ph: "X"` for work with `ts` and `dur` in microseconds,
  written as decimals with three places (`{}.{:03}`: nanoseconds) by Kineto since
  2023, as integers before; parsed here as decimals, never through a float, which
  keeps epoch microseconds only to 0.25 us;
- two layouts of `ts`: absolute (microseconds since the epoch, CLOCK_REALTIME) in
  older files, or relative to the top-level `baseTimeNanoseconds` in newer ones;
- GPU work (`cat` kernel, gpu_memcpy, gpu_memset) filed under `pid` = a device index
  and `tid` = a stream, its device also in `args.device`, which is what is read (never
  the pid: an event without args.device is left out and counted as damage);
  `gpu_user_annotation` rows are spans drawn over GPU work, not work, and are left out;
- host calls (`cat` cuda_runtime, cuda_driver) with the process and thread that made
  them and `args.correlation`, the id the GPU work they made carries (every node of
  a graph launched with cudaGraphLaunch carries the launch's: Kineto gives no graph id);
- thread ids that are not the kernel's: older Kineto wrote a truncated pthread id for
  some threads (negative or positive, outside 1..pid_max); their calls cannot be put
  on a thread of the host and are counted, their GPU work kept;
- the profiler's active window: a `cat: "Trace"` span and a "Record Window End" mark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from launchgap.trace.checks import PID_MAX_LIMIT
from launchgap.trace.chrome_json import ChromeJsonError, event_lines, lines_frame
from launchgap.trace.model import FrameTables, Trace, TraceError
from launchgap.trace.schema import COPY_KIND_NAMES, CUDA_APIS, Event, MetaKey

GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")
WINDOW_CATEGORY = "Trace"
WINDOW_END_MARK = "Record Window End"
# the profiler's launch calls (the runtime's and the driver's launch entry points, schema/trace.toml [cuda]),
# and the driver entry point each stands for in a launch row: cudaLaunchKernelExC is cuLaunchKernelEx's
LAUNCH_CALLS = {
    api.name: api.name.replace("cuda", "cu", 1).replace("ExC", "Ex") for api in CUDA_APIS if api.does == "launch"
}
GRAPH_LAUNCHES = tuple(name for name in LAUNCH_CALLS if "GraphLaunch" in name)
# NCCL's kernels, by the names its builds give them (ncclKernel_..., ncclDevKernel_...)
NCCL_KERNEL = r"^nccl(Dev)?Kernel"
# Kineto's copy names ("Memcpy HtoD (Pageable -> Device)"): the direction, as names.copy_kind has it
COPY_DIRECTION = r"^Memcpy (\w+)"
# a relative `ts` is below this many microseconds (a day); an absolute one is a date since 2001
RELATIVE_BELOW_US = 86_400 * 10**6

EVENT_FIELDS = pl.Struct(
    {
        "ph": pl.String,
        "cat": pl.String,
        "name": pl.String,
        "pid": pl.String,
        "tid": pl.String,
        "ts": pl.String,
        "dur": pl.String,
        "args": pl.Struct(
            {
                "device": pl.String,
                "stream": pl.String,
                "context": pl.String,
                "correlation": pl.String,
                "bytes": pl.String,
                "shared memory": pl.String,
            }
        ),
    }
)
# `ts` and `dur` as the text they were written in (a float keeps epoch microseconds to 0.25 us only)
NUMBER_AS_TEXT = (r'"(ts|dur)"\s*:\s*(-?[0-9][0-9.eE+-]*)', r'"$1": "$2"')


class KinetoError(TraceError):
    """The file cannot be read as a PyTorch profiler trace (one line, naming it)."""


@dataclass(frozen=True)
class ProfilerRun:
    """What one profiler file holds, every time in nanoseconds on the profiler's clock (CLOCK_REALTIME
    read through the TSC, fitted to the system clock at the profiler's start and end): absolute where the
    file anchors its times (both layouts do), else from the file's own origin (`anchored` false)."""

    path: Path
    layout: str  # "absolute" (epoch microseconds) or "relative" (to baseTimeNanoseconds)
    anchored: bool
    pid: int | None  # the process whose calls the file holds (the most calls), None: no call
    window: tuple[int, int]  # the profiler's active window
    gpu: (
        pl.DataFrame
    )  # work, ts_ns, end_ns, device_id, context_id, stream_id, correlation_id, name, bytes, copy_kind, graph
    calls: pl.DataFrame  # ts_ns, end_ns, pid, tid, api, correlation_id (threads the host knows only)
    events: int  # events in the file
    foreign_thread_calls: int  # calls on thread ids that are not the kernel's (pthread ids)
    damage: dict[str, int] = field(default_factory=dict)  # what was left out, and how many
    header: dict = field(default_factory=dict, repr=False)

    @property
    def devices(self) -> list[int]:
        return sorted(self.gpu["device_id"].unique().to_list())

    @property
    def rank(self) -> int | None:
        info = self.header.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        return rank if isinstance(rank, int) else None


def _nanoseconds(text: pl.Expr) -> pl.Expr:
    """Microseconds written as a decimal (text) in nanoseconds, exactly: the whole part times 1,000 plus the
    first three decimals (a fourth rounds); exponent forms (no profiler writes them) through a float."""
    body = text.str.strip_chars().str.strip_prefix("-")
    sign = pl.when(text.str.strip_chars().str.starts_with("-")).then(-1).otherwise(1)
    plain = body.str.contains(r"^[0-9]+(\.[0-9]*)?$")
    whole = body.str.extract(r"^([0-9]+)", 1).cast(pl.Int64, strict=False)
    decimals = body.str.extract(r"\.([0-9]*)$", 1).fill_null("")
    thousandths = decimals.str.slice(0, 3).str.pad_end(3, "0").cast(pl.Int64, strict=False)
    round_up = (decimals.str.slice(3, 1).str.pad_end(1, "0").cast(pl.Int64, strict=False) >= 5).cast(pl.Int64)
    exact = whole * 1000 + thousandths + round_up
    approximate = (body.cast(pl.Float64, strict=False) * 1000).round().cast(pl.Int64, strict=False)
    return pl.when(plain).then(exact).otherwise(approximate) * sign


def _integer(text: pl.Expr) -> pl.Expr:
    return text.cast(pl.Int64, strict=False)


# the events read: GPU work, CUDA calls, the window's span and end mark (most of a file is CPU ops and flows)
WANTED_LINE = r'"cat":\s*"(?:kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver|Trace)"|"' + WINDOW_END_MARK + '"'


def _decoded(lines: pl.Series) -> pl.DataFrame:
    """The wanted events (one JSON text each) as columns; a wanted line that is not JSON comes back with no ph
    (left out, counted). Lines of other events are not decoded at all."""
    quoted = lines.filter(lines.str.contains(WANTED_LINE)).str.replace_all(*NUMBER_AS_TEXT)
    try:
        frame = quoted.str.json_decode(EVENT_FIELDS).struct.unnest()
    except pl.exceptions.PolarsError:
        # one bad event fails the batch: decoded one at a time to find it (damaged files only)
        parts = []
        for line in quoted.to_list():
            try:
                parts.append(pl.Series([line]).str.json_decode(EVENT_FIELDS).struct.unnest())
            except pl.exceptions.PolarsError:
                parts.append(pl.DataFrame({"ph": [None]}, schema={"ph": pl.String}))
        frame = pl.concat(parts, how="diagonal_relaxed")
    return frame.unnest("args") if "args" in frame.columns else frame


def _wanted(events: pl.DataFrame) -> pl.DataFrame:
    """What launchgap reads of a batch: GPU work, host calls, the window; times in (file) nanoseconds."""
    cat, ph = pl.col("cat"), pl.col("ph")
    keep = (
        cat.is_in(list(GPU_CATEGORIES))
        | cat.is_in(CALL_CATEGORIES)
        | (cat == WINDOW_CATEGORY)
        | ((ph == "i") & (pl.col("name") == WINDOW_END_MARK))
        | ph.is_null()
    )
    return events.filter(keep.fill_null(False)).select(
        "ph",
        "cat",
        "name",
        _integer(pl.col("pid")).alias("pid"),
        _integer(pl.col("tid")).alias("tid"),
        _nanoseconds(pl.col("ts")).alias("ts"),
        _nanoseconds(pl.col("dur")).alias("dur"),
        _integer(pl.col("device")).alias("device"),
        _integer(pl.col("stream")).alias("stream"),
        _integer(pl.col("context")).alias("context"),
        _integer(pl.col("correlation")).alias("correlation"),
        _integer(pl.col("bytes")).alias("bytes"),
        _integer(pl.col("shared memory")).alias("shared_mem"),
        pl.col("pid").alias("pid_text"),
    )


def _read_events(path: Path) -> tuple[pl.DataFrame, dict, int]:
    """The wanted events of PATH, its top-level object, and how many events it held."""
    pieces, splitter = event_lines(path)
    parts = []
    try:
        for piece in pieces:
            parts.append(_wanted(_decoded(lines_frame(piece))))
        header = splitter.finish()
    except ChromeJsonError as err:
        raise KinetoError(f"{path}: {err}") from None
    except OSError as err:
        raise KinetoError(f"{path}: cannot read ({err.strerror or err})") from None
    if not parts:
        return (
            _wanted(
                pl.DataFrame(
                    schema={
                        "ph": pl.String,
                        "cat": pl.String,
                        "name": pl.String,
                        "pid": pl.String,
                        "tid": pl.String,
                        "ts": pl.String,
                        "dur": pl.String,
                        "device": pl.String,
                        "stream": pl.String,
                        "context": pl.String,
                        "correlation": pl.String,
                        "bytes": pl.String,
                        "shared memory": pl.String,
                    }
                )
            ),
            header,
            0,
        )
    return pl.concat(parts, how="diagonal_relaxed"), header, splitter.events


def _base_ns(header: dict, path: Path) -> int | None:
    base = header.get("baseTimeNanoseconds")
    if base is None:
        return None
    if isinstance(base, bool) or not isinstance(base, int) or base < 0:
        raise KinetoError(f"{path}: its baseTimeNanoseconds is {base!r:.40}, not a time in nanoseconds")
    return base


def _gpu_work(timed: pl.DataFrame, graph_ids: pl.Series, damaged: Callable[[str, int], None]) -> pl.DataFrame:
    """The GPU's work among the TIMED events (kernels, copies, memsets) as rows, those of a graph launch
    (GRAPH_IDS: their correlation ids) marked; what cannot be placed on a device counted by DAMAGED."""
    gpu_raw = timed.filter(pl.col("cat").is_in(list(GPU_CATEGORIES)))
    # the device: the event's own args.device, never its pid (the "GPU N" process it is filed under, which need
    # not be its device); an event without one is left out and counted
    device = pl.col("device")
    damaged("GPU events without a device", int(gpu_raw.select(device.is_null().sum()).item()))
    damaged("GPU events with a negative device", int(gpu_raw.select((device < 0).sum()).item()))
    gpu = gpu_raw.filter(device.is_not_null() & (device >= 0)).select(
        pl.col("cat").replace_strict(GPU_CATEGORIES).alias("work"),
        "ts_ns",
        "end_ns",
        device.alias("device_id"),
        pl.col("context").fill_null(0).alias("context_id"),
        pl.col("stream").fill_null(pl.col("tid")).fill_null(0).alias("stream_id"),
        pl.col("correlation").fill_null(0).alias("correlation_id"),
        "name",
        pl.col("bytes").fill_null(0),
        pl.col("name").str.extract(COPY_DIRECTION, 1).str.to_uppercase().alias("copy_kind"),
        pl.col("correlation").is_in(graph_ids.implode()).fill_null(False).alias("graph"),
    )
    return gpu.with_columns(
        pl.when(pl.col("copy_kind").is_in(COPY_KIND_NAMES))
        .then("copy_kind")
        .otherwise(pl.lit(COPY_KIND_NAMES[0]))
        .alias("copy_kind")
    )


def read_profiler_trace(path: str | Path) -> ProfilerRun:
    """The PyTorch profiler trace at PATH (.json or .json.gz), streamed: the memory of its GPU work and
    calls, not of its text. KinetoError, one line, when it is not one launchgap can read."""
    path = Path(path)
    events, header, count = _read_events(path)
    if "schemaVersion" not in header and "deviceProperties" not in header and not events.height:
        raise KinetoError(f"{path}: a Chrome trace with no GPU work or CUDA calls: not a PyTorch profiler trace")
    damage: dict[str, int] = {}

    def damaged(what: str, rows: int) -> None:
        if rows:
            damage[what] = damage.get(what, 0) + rows

    damaged("events that are not JSON", int(events["ph"].is_null().sum()))
    events = events.filter(pl.col("ph").is_not_null())
    base = _base_ns(header, path)
    timed = events.filter(pl.col("ph") == "X")
    damaged("events without a readable ts or dur", int((timed["ts"].is_null() | timed["dur"].is_null()).sum()))
    damaged("events with a negative duration", int((timed["dur"] < 0).sum()))
    timed = timed.filter(pl.col("ts").is_not_null() & pl.col("dur").is_not_null() & (pl.col("dur") >= 0))
    first_ts = events["ts"].drop_nulls().min()
    relative = base is not None or (first_ts is not None and first_ts < RELATIVE_BELOW_US * 1000)
    origin = base or 0
    timed = timed.with_columns(
        (pl.col("ts") + origin).alias("ts_ns"), (pl.col("ts") + pl.col("dur") + origin).alias("end_ns")
    )

    calls_raw = timed.filter(pl.col("cat").is_in(CALL_CATEGORIES))
    damaged("CUDA calls without a process id", int(calls_raw["pid"].is_null().sum()))
    calls_raw = calls_raw.filter(pl.col("pid").is_not_null())
    os_thread = pl.col("tid").is_between(1, PID_MAX_LIMIT)
    foreign = int(calls_raw.select((~os_thread).fill_null(True).sum()).item()) if calls_raw.height else 0
    pid = (
        int(calls_raw.group_by("pid").len().sort(["len", "pid"], descending=[True, False])["pid"][0])
        if calls_raw.height
        else None
    )
    calls = calls_raw.filter(os_thread.fill_null(False)).select(
        "ts_ns",
        "end_ns",
        "pid",
        "tid",
        pl.col("name").fill_null("unknown").alias("api"),
        pl.col("correlation").fill_null(0).alias("correlation_id"),
    )
    graph_ids = calls_raw.filter(pl.col("name").is_in(GRAPH_LAUNCHES))["correlation"].drop_nulls()

    gpu = _gpu_work(timed, graph_ids, damaged)

    spans = timed.filter(pl.col("cat") == WINDOW_CATEGORY)
    marks = events.filter((pl.col("ph") == "i") & (pl.col("name") == WINDOW_END_MARK))["ts"].drop_nulls() + origin
    starts = [v for v in (spans["ts_ns"].min(), gpu["ts_ns"].min(), calls["ts_ns"].min()) if v is not None]
    ends = [
        v for v in (spans["end_ns"].max(), marks.max(), gpu["end_ns"].max(), calls["end_ns"].max()) if v is not None
    ]
    if not gpu.height:
        raise KinetoError(
            f"{path}: a PyTorch profiler trace with no GPU work (no kernel, copy or memset): was "
            f"the profiler run with ProfilerActivity.CUDA?"
        )
    return ProfilerRun(
        path=path,
        layout="relative" if base is not None else "absolute",
        anchored=base is not None or not relative,
        pid=pid,
        window=(min(starts), max(ends)),
        gpu=gpu,
        calls=calls,
        events=count,
        foreign_thread_calls=foreign,
        damage=damage,
        header={
            k: v
            for k, v in header.items()
            if k in ("distributedInfo", "schemaVersion", "baseTimeNanoseconds", "displayTimeUnit")
        },
    )


def looks_like_profiler_trace(path: str | Path) -> bool:
    """Whether PATH is named as a profiler trace is (.json, .json.gz), or begins as gzip or a JSON object."""
    name = Path(path).name.lower()
    if name.endswith((".json", ".json.gz")):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.startswith(b"\x1f\x8b") or head.lstrip()[:1] == b"{"


# --- launchgap's kinds ------------------------------------------------------------------------------


def launch_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls (ts_ns, end_ns, pid, tid, api, ...) that are launches, one a launch: a driver launch inside a
    runtime launch on the same thread is the same launch (the GPU work carries the runtime call's id)."""
    launch = calls.filter(pl.col("api").is_in(list(LAUNCH_CALLS)))
    runtime = launch.filter(pl.col("api").str.starts_with("cuda")).sort("ts_ns")
    driver = launch.filter(~pl.col("api").str.starts_with("cuda")).sort("ts_ns")
    if driver.height and runtime.height:
        enclosing = driver.join_asof(
            runtime.select("pid", "tid", pl.col("ts_ns").alias("outer"), pl.col("end_ns").alias("outer_end")),
            left_on="ts_ns",
            right_on="outer",
            by=["pid", "tid"],
            strategy="backward",
            check_sortedness=False,
        )
        driver = enclosing.filter(pl.col("outer_end").is_null() | (pl.col("ts_ns") > pl.col("outer_end"))).select(
            launch.columns
        )
    return pl.concat([runtime, driver]).sort("ts_ns")


def launches_of(calls: pl.DataFrame) -> pl.DataFrame:
    """The launch rows the profiler's launch calls stand for (ts_ns, pid, tid, api, runtime_api)."""
    rows = launch_calls(calls)
    return rows.select(
        "ts_ns",
        "pid",
        "tid",
        pl.col("api").replace_strict(LAUNCH_CALLS).alias("api"),
        pl.when(pl.col("api").str.starts_with("cuda")).then(pl.col("api")).alias("runtime_api"),
        pl.lit(0).alias("stream"),
        *[pl.lit(0).alias(c) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")],
    ).sort("ts_ns")


def gpu_frames(gpu: pl.DataFrame, calls: pl.DataFrame, pid: int) -> dict[Event, pl.DataFrame]:
    """The profiler's GPU work and calls as launchgap's kinds, the work under the process that made it
    (its call's, else PID's). The calls' return codes are not in a profiler trace: 0."""
    owner = calls.select("correlation_id", pl.col("pid").alias("owner")).unique("correlation_id", keep="first")
    work = gpu.join(owner, on="correlation_id", how="left").with_columns(pl.col("owner").fill_null(pid).alias("pid"))
    common = ("ts_ns", "end_ns", "pid", "device_id", "context_id", "stream_id", "correlation_id")
    kernels = work.filter(pl.col("work") == "kernel").select(
        *common,
        pl.col("name").alias("kernel_name"),
        *[pl.lit(0).alias(c) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")],
        # a graph's nodes carry its launch's correlation id and no graph id: the launch's id names the graph
        pl.when(pl.col("graph")).then(pl.col("correlation_id")).alias("graph_id"),
    )
    copies = work.filter(pl.col("work") == "memcpy").select(*common, "copy_kind", "bytes")
    sets = work.filter(pl.col("work") == "memset").select(*common, "bytes")
    api = calls.with_columns(pl.lit(0).alias("return_code"))
    return {
        Event.GPU_KERNEL: kernels.sort("ts_ns"),
        Event.GPU_MEMCPY: copies.sort("ts_ns"),
        Event.GPU_MEMSET: sets.sort("ts_ns"),
        Event.GPU_API: api.sort("ts_ns"),
        Event.LAUNCH: launches_of(calls),
    }


def profiler_summary(run: ProfilerRun) -> dict:
    """meta.json's `profiler` entry for one file: what it is and what of it was read."""
    kernels = run.gpu.filter(pl.col("work") == "kernel")
    return {
        "path": str(run.path),
        "layout": run.layout,
        "anchored": run.anchored,
        "pid": run.pid,
        "rank": run.rank,
        "devices": run.devices,
        "window_start_ns": run.window[0],
        "window_end_ns": run.window[1],
        "events": run.events,
        "kernels": kernels.height,
        "nccl_kernels": int(kernels["name"].str.contains(NCCL_KERNEL).fill_null(False).sum()),
        "graph_nodes": int(kernels["graph"].sum()),
        "copies": int((run.gpu["work"] == "memcpy").sum()),
        "memsets": int((run.gpu["work"] == "memset").sum()),
        "calls": run.calls.height,
        "foreign_thread_calls": run.foreign_thread_calls,
        "damage": run.damage,
    }


PROFILER_FORMAT = "pytorch-profiler"
# meta.json's gpu_activity.source where the GPU activity came from profiler files
PROFILER_SOURCE = "pytorch profiler"


def profiler_trace(run: ProfilerRun) -> Trace:
    """A profiler trace alone as a launchgap trace: its GPU work, the calls that made it and their launches,
    on the profiler's clock; no thread states (the host's part of each idle gap is unknown)."""
    pid = run.pid if run.pid is not None else 0
    frames = gpu_frames(run.gpu, run.calls, pid)
    meta = {
        MetaKey.FORMAT: PROFILER_FORMAT,
        MetaKey.VERSION: 0,
        MetaKey.START_NS: run.window[0],
        MetaKey.MODE: "profiler",
        MetaKey.COMMAND: None,
        MetaKey.COMMAND_PID: None,
        MetaKey.PIDS: [pid],
        MetaKey.RECORDER_PID: None,
        MetaKey.HOST: {},
        MetaKey.TOPOLOGY: {},
        MetaKey.GPU_ACTIVITY: {"recorded": True, "source": PROFILER_SOURCE, "path": str(run.path)},
        MetaKey.PROFILER: [profiler_summary(run)],
    }
    damage = tuple(f"{n:,} {what} (left out)" for what, n in run.damage.items())
    return Trace(run.path, meta, FrameTables(frames), truncated=False, end_ns=run.window[1], damage=damage, format=0)


def open_profiler_trace(path: str | Path) -> Trace:
    return profiler_trace(read_profiler_trace(path))


def import_profiler_trace(path: str | Path, out: Path) -> ProfilerRun:
    """Writes the profiler trace at PATH as a launchgap trace (format 2) in OUT, an empty directory."""
    from launchgap.trace.format2 import write_format2

    run = read_profiler_trace(path)
    trace = profiler_trace(run)
    frames = {kind: trace.of(kind) for kind in Event if trace.count(kind)}
    end = {"end_ns": run.window[1], "stop_reason": "imported", "lost_events": 0}
    write_format2(out, frames, {**trace.meta, MetaKey.SOURCE: str(path)}, end)
    return run
