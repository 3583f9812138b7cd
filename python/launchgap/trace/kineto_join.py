"""`launchgap report RUN.lg --kineto TRACE.json.gz [--kineto ...]`: a launchgap recording and the
PyTorch profiler's traces of the same run, joined into one trace whose GPU activity is the
profiler's, on the recording's clock and its task ids (docs/gpu-time.md, "PyTorch users").

- Which process: each file's CPU process (its calls' pid) and threads are found among the
  recording's tasks, by their ids, or where the profiler ran in a container (its own pid
  namespace) by the namespace ids the recorder keeps for every task (task_cgroup's ns_pid,
  ns_tid). Files are keyed by that process and their devices: one file per rank.
- Which clock: the profiler's times are CLOCK_REALTIME read through the TSC; the recording's,
  CLOCK_MONOTONIC. meta.json's clock.realtime_minus_monotonic_ns, read at the recording's start
  and end, gives a first mapping (interpolated between the two). Where the recording probed the
  launches, the profiler's launch calls and the recording's launch rows of the same threads are
  paired (the profiler's are a run of the recording's, in order), and offset and slope are
  fitted to them; the residual is reported. Without launch probes the recorded offset stands.
- Not the same run: a file whose process is not in the recording, or whose window the recording
  does not overlap, is refused in one line saying what of each the other does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from launchgap.trace.kineto import (
    PROFILER_SOURCE,
    ProfilerRun,
    gpu_frames,
    launch_calls,
    profiler_summary,
    read_profiler_trace,
)
from launchgap.trace.model import FrameTables, Trace, TraceError, collect_streamed
from launchgap.trace.schema import Event, MetaKey

GPU_KINDS = (Event.GPU_KERNEL, Event.GPU_MEMCPY, Event.GPU_MEMSET, Event.GPU_API)
# launches paired to choose how the profiler's run of launches lines up with the recording's
ALIGN_LAUNCHES = 2000
# how many of the recording's launches, before and after the first one the recorded offset points
# at, are tried as the one the profiler's first launch is
ALIGN_SEARCH = 64
# two readings of the same launch agree within this, the drift over ALIGN_LAUNCHES launches included
ALIGN_AGREEMENT_NS = 2_000
# a pair farther apart than this after the fit is not the same launch (a launch lost on one side)
PAIR_TOLERANCE_NS = 50_000
# a pair whose readings disagree by more than this many deviations of all pairs' (and more than the floor) is
# left out of the fit: the thread was preempted between one side's reading and the other's
OUTLIER_DEVIATIONS = 5
OUTLIER_FLOOR_NS = 1_000


class JoinError(TraceError):
    """The recording and a profiler trace cannot be joined (one line: why, naming both)."""


@dataclass(frozen=True)
class Clock:
    """Recording time = offset_ns + (profiler time - origin_ns) * (1 + slope): how one file's times are
    put on the recording's clock, and how well that is known."""

    method: str
    origin_ns: int
    offset_ns: int
    slope: float
    residual_ns: int | None
    launches_matched: int
    recorded_offset_ns: int | None
    recorded_uncertainty_ns: int | None
    stepped: bool | None

    def to_recording(self, ns: pl.Expr) -> pl.Expr:
        since = (ns - self.origin_ns).cast(pl.Float64)
        return pl.lit(self.offset_ns, pl.Int64) + ns - self.origin_ns + (since * self.slope).round().cast(pl.Int64)

    def at(self, ns: np.ndarray) -> np.ndarray:
        since = (ns - self.origin_ns).astype(np.float64)
        return self.offset_ns + (ns - self.origin_ns) + np.round(since * self.slope).astype(np.int64)

    def summary(self) -> dict:
        return {
            "method": self.method,
            "offset_ns": self.offset_ns,
            "slope_ppm": self.slope * 1e6,
            "residual_ns": self.residual_ns,
            "launches_matched": self.launches_matched,
            "recorded_offset_ns": self.recorded_offset_ns,
            "recorded_uncertainty_ns": self.recorded_uncertainty_ns,
            "stepped": self.stepped,
        }


# --- the recording's clock readings ------------------------------------------------------------------


@dataclass(frozen=True)
class Readings:
    """meta.json's REALTIME - MONOTONIC readings: (monotonic_ns, offset_ns, uncertainty_ns) at start and end."""

    start: tuple[int, int, int] | None
    end: tuple[int, int, int] | None
    stepped: bool | None

    def offset_at(self, monotonic_ns: int) -> int | None:
        """REALTIME - MONOTONIC at a monotonic time: interpolated between the readings, else the one there is."""
        if self.start is None:
            return None
        if self.end is None or self.end[0] == self.start[0]:
            return self.start[1]
        share = (monotonic_ns - self.start[0]) / (self.end[0] - self.start[0])
        return round(self.start[1] + share * (self.end[1] - self.start[1]))


def readings_of(meta: dict) -> Readings:
    clock = meta.get(MetaKey.CLOCK) or {}
    value = clock.get("realtime_minus_monotonic_ns") if isinstance(clock, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        # older recorders: one reading at the start, not bracketed
        mono = clock.get("monotonic_ns")
        return Readings((int(mono) if isinstance(mono, int) else 0, value, 0), None, None)
    if not isinstance(value, dict):
        return Readings(None, None, None)

    def reading(part) -> tuple[int, int, int] | None:
        if not isinstance(part, dict):
            return None
        values = (part.get("monotonic_ns"), part.get("offset_ns"), part.get("uncertainty_ns"))
        return tuple(int(v) for v in values) if all(isinstance(v, int) for v in values) else None

    stepped = value.get("stepped")
    return Readings(
        reading(value.get("start")), reading(value.get("end")), stepped if isinstance(stepped, bool) else None
    )


# --- which process and threads -------------------------------------------------------------------------


def _tasks(recording: Trace) -> pl.DataFrame:
    """Every task of the recording with its ids in its own pid namespace: pid, tid, ns_pid, ns_tid (null
    where not recorded: the host's own ids then)."""
    ids = recording.of(Event.TASK_CGROUP, "pid", "tid", "ns_pid", "ns_tid").unique(["pid", "tid"], keep="first")
    seen = collect_streamed(
        pl.concat(
            [recording.scan(k).select("pid", "tid") for k in (Event.SWITCH, Event.LAUNCH, Event.SYNC, Event.FORK)]
        ).unique()
    )
    return seen.join(ids, on=["pid", "tid"], how="full", coalesce=True).with_columns(
        pl.col("ns_pid").fill_null(pl.col("pid")), pl.col("ns_tid").fill_null(pl.col("tid"))
    )


def host_ids(recording: Trace, run: ProfilerRun, tasks: pl.DataFrame) -> tuple[int, dict[int, int]]:
    """The recording's process and threads the profiler's are: (host pid, {profiler tid: host tid}). Its
    ids as the recording has them, or as their pid namespace has them (a container). JoinError when its
    process or threads are not there."""
    pid, tids = run.pid, sorted(run.calls["tid"].unique().to_list())
    if pid is None:
        raise JoinError(f"{run.path}: no CUDA call names its process, so it cannot be found in {recording.path}")
    for host_col, tid_col in (("pid", "tid"), ("ns_pid", "ns_tid")):
        mine = tasks.filter(pl.col(host_col) == pid)
        hosts = mine["pid"].unique().to_list()
        for host in hosts:
            threads = mine.filter(pl.col("pid") == host)
            mapping = dict(zip(threads[tid_col].to_list(), threads["tid"].to_list()))
            if all(t in mapping for t in tids):
                return int(host), {int(t): int(mapping[t]) for t in tids}
    recorded = sorted(recording.meta.get(MetaKey.PIDS) or []) or sorted(
        {p for p in [recording.meta.get(MetaKey.COMMAND_PID)] if p}
    )
    raise JoinError(
        f"{run.path} and {recording.path} are not the same run: the profiler's process {pid} "
        f"(threads {', '.join(map(str, tids[:6]))}{' ...' if len(tids) > 6 else ''}) is not in the recording, "
        f"by its ids or its pid namespace's (the recording traced "
        f"{'pids ' + ', '.join(map(str, recorded)) if recorded else 'other processes'})"
    )


# --- the clock --------------------------------------------------------------------------------------------


def recorded_clock(readings: Readings, run: ProfilerRun, path: Path) -> Clock:
    """The mapping meta.json's clock readings give: the profiler's time less REALTIME - MONOTONIC, that offset
    taken at both ends of the profiler's window (interpolated between the recording's readings)."""
    if readings.start is None:
        raise JoinError(
            f"{path}: the recording keeps no CLOCK_REALTIME reading (meta.json's clock), so a "
            f"profiler's wall-clock times cannot be put on its clock"
        )
    first = readings.offset_at(run.window[0] - readings.start[1])
    last = readings.offset_at(run.window[1] - readings.start[1])
    span = max(1, run.window[1] - run.window[0])
    slope = -(last - first) / span
    uncertainty = max(readings.start[2], readings.end[2] if readings.end else 0)
    return Clock(
        method="recorded_offset",
        origin_ns=run.window[0],
        offset_ns=run.window[0] - first,
        slope=slope,
        residual_ns=None,
        launches_matched=0,
        recorded_offset_ns=readings.start[1],
        recorded_uncertainty_ns=uncertainty,
        stepped=readings.stepped,
    )


def _align(host: np.ndarray, mapped: np.ndarray) -> int | None:
    """Where in HOST (a thread's recorded launches, sorted) the profiler's launches MAPPED (on the recording's
    clock, roughly) begin: the start index whose pairing in order agrees best, the most pairs within
    ALIGN_AGREEMENT_NS of their median difference (a few pairs far off, the thread preempted between its two
    readings, do not sway it), among those near the first mapped launch. None where too few overlap."""
    n = min(mapped.size, ALIGN_LAUNCHES)
    if n < 3 or host.size < n:
        return None
    near = int(np.searchsorted(host, mapped[0]))
    best = None
    for start in range(max(0, near - ALIGN_SEARCH), min(host.size - n, near + ALIGN_SEARCH) + 1):
        diff = host[start : start + n] - mapped[:n]
        agree = int((np.abs(diff - np.median(diff)) <= ALIGN_AGREEMENT_NS).sum())
        if best is None or agree > best[0]:
            best = (agree, start)
    return best[1] if best else None


def launch_clock(first: Clock, run: ProfilerRun, thread_map: dict[int, int], launches: pl.DataFrame) -> Clock:
    """FIRST refined by the launches both sides saw: each of the profiler's threads' launch calls paired in order
    with the recording's launch rows of its host thread, offset and slope fitted by least squares, the pairs then
    made again by nearness to the fit (a launch one side lost pairs with nothing) and fitted once more."""
    calls = launch_calls(run.calls).sort("ts_ns")
    profiler_ts, host_ts = [], []
    for tid, host_tid in thread_map.items():
        mine = calls.filter(pl.col("tid") == tid)["ts_ns"].to_numpy().astype(np.int64)
        theirs = np.sort(launches.filter(pl.col("tid") == host_tid)["ts_ns"].to_numpy().astype(np.int64))
        start = _align(theirs, first.at(mine)) if mine.size else None
        if start is None:
            continue
        n = min(mine.size, theirs.size - start)
        profiler_ts.append(mine[:n])
        host_ts.append(theirs[start : start + n])
    if not profiler_ts:
        return first
    p, h = np.concatenate(profiler_ts), np.concatenate(host_ts)
    clock = _fit(first, p, h)
    # pairs again by nearness to the fit: a launch one side lost does not shift every pair after it; and a
    # pair whose two readings disagree far more than the rest (the thread preempted between the probe and the
    # profiler's own reading) does not tilt the line: kept within a few deviations of the others
    for _ in range(3):
        error = h - clock.at(p)
        deviation = 1.4826 * float(np.median(np.abs(error - np.median(error))))
        kept = np.abs(error) <= min(PAIR_TOLERANCE_NS, max(OUTLIER_FLOOR_NS, OUTLIER_DEVIATIONS * deviation))
        if kept.sum() < 3:
            break
        clock = _fit(first, p[kept], h[kept])
    # the residual the report states is over every pair that is one launch (within PAIR_TOLERANCE_NS of the fit),
    # those left out of the fit as outliers included: a time read from the profiler's file is no better known
    # than its worst such pair, and a kernel placed by the fit may lie as far from the truth
    error = np.abs(h - clock.at(p))
    paired = error[error <= PAIR_TOLERANCE_NS]
    return Clock(**{**clock.__dict__, "residual_ns": int(paired.max()) if paired.size else clock.residual_ns})


def _fit(first: Clock, profiler: np.ndarray, host: np.ndarray) -> Clock:
    x = (profiler - first.origin_ns).astype(np.float64)
    y = (host - first.origin_ns).astype(np.float64)
    slope_plus_one, intercept = np.polyfit(x, y, 1)
    offset = first.origin_ns + int(round(intercept))
    clock = Clock(
        method="launches",
        origin_ns=first.origin_ns,
        offset_ns=offset,
        slope=float(slope_plus_one - 1),
        residual_ns=0,
        launches_matched=int(profiler.size),
        recorded_offset_ns=first.recorded_offset_ns,
        recorded_uncertainty_ns=first.recorded_uncertainty_ns,
        stepped=first.stepped,
    )
    residual = int(np.abs(host - clock.at(profiler)).max()) if profiler.size else None
    return Clock(**{**clock.__dict__, "residual_ns": residual})


# --- the join ---------------------------------------------------------------------------------------------------


def _span(recording: Trace) -> tuple[int, int]:
    start = recording.meta.get(MetaKey.START_NS)
    end = (recording.end or {}).get("end_ns")
    if isinstance(start, int) and isinstance(end, int):
        return start, end
    lo, hi = recording.span_ns()
    return int(start if isinstance(start, int) else lo or 0), int(end if isinstance(end, int) else hi or 0)


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.3f} s"


def check_coverage(recording: Trace, run: ProfilerRun, window: tuple[int, int]) -> str | None:
    """None when the profiler's window (on the recording's clock) overlaps the recording; else a refusal. A window
    that runs past the recording's ends is not refused: the caveat returned says what is not covered."""
    start, end = _span(recording)
    if window[1] <= start or window[0] >= end:
        where = "before the recording began" if window[1] <= start else "after the recording ended"
        raise JoinError(
            f"{run.path} and {recording.path} are not the same run: the profiler's window "
            f"({_seconds(window[1] - window[0])}) lies wholly {where} "
            f"({_seconds(start - window[1] if window[1] <= start else window[0] - end)} away), by the "
            f"recording's clock readings; the recording covers {_seconds(end - start)}"
        )
    parts = []
    if window[0] < start:
        parts.append(f"its first {_seconds(start - window[0])} precede the recording")
    if window[1] > end:
        parts.append(f"its last {_seconds(window[1] - end)} follow the recording's end")
    return (f"{run.path}: " + " and ".join(parts) + ": GPU time there has no thread states") if parts else None


def _check_threads_started(
    recording: Trace, run: ProfilerRun, thread_map: dict[int, int], clock: Clock, tasks_seen: pl.DataFrame
) -> None:
    """Each profiler thread's first call must come after its host thread was first seen, unless the recording
    began after it (then nothing can be said): a thread that did not exist yet is another run's."""
    calls = run.calls.group_by("tid").agg(pl.col("ts_ns").min().alias("first"))
    start, _ = _span(recording)
    for tid, first in calls.iter_rows():
        host = thread_map.get(tid)
        seen = tasks_seen.filter(pl.col("tid") == host)["first_ns"]
        if host is None or seen.is_empty():
            continue
        at = int(clock.at(np.array([first], np.int64))[0])
        born = int(seen[0])
        if born > start + 1_000_000 and at < born - 1_000_000:
            raise JoinError(
                f"{run.path} and {recording.path} are not the same run: its thread {tid} made a CUDA "
                f"call {_seconds(born - at)} before the recording's thread {host} existed"
            )


def _check_joinable(recording: Trace) -> None:
    """A JoinError where RECORDING cannot take a profiler trace: it is none of launchgap's, or has GPU work of
    its own."""
    if recording.meta.get(MetaKey.MODE) in ("profiler", "study-csv"):
        raise JoinError(
            f"{recording.path}: --kineto joins a profiler trace to a launchgap recording, and this is "
            f"not one (it is a {recording.meta.get(MetaKey.MODE)} file)"
        )
    if recording.count(Event.GPU_KERNEL) and (recording.meta.get(MetaKey.GPU_ACTIVITY) or {}).get("recorded"):
        raise JoinError(
            f"{recording.path}: it was recorded with --gpu-activity and holds GPU work of its own; "
            f"join a profiler trace to a recording made without it"
        )


def _first_seen(recording: Trace) -> pl.DataFrame:
    """tid, first_ns: when the recording first shows each task (a switch, a wakeup, a launch)."""
    return collect_streamed(
        pl.concat(
            [
                recording.scan(k).select("tid", "ts_ns")
                for k in (Event.SWITCH, Event.WAKEUP, Event.WAKEUP_NEW, Event.LAUNCH)
            ]
        )
        .group_by("tid")
        .agg(pl.col("ts_ns").min().alias("first_ns"))
    )


def join(recording: Trace, paths: list[str | Path]) -> Trace:
    """RECORDING with the GPU activity of the profiler traces at PATHS, put on its clock and its task ids."""
    _check_joinable(recording)
    readings = readings_of(recording.meta)
    tasks = _tasks(recording)
    first_seen = _first_seen(recording)
    probed = collect_streamed(recording.scan(Event.LAUNCH).select("ts_ns", "pid", "tid"))
    frames: dict[Event, list[pl.DataFrame]] = {k: [] for k in (*GPU_KINDS, Event.LAUNCH)}
    summaries, caveats, keys, windows = [], [], {}, []
    for path in paths:
        run = read_profiler_trace(path)
        if not run.anchored:
            raise JoinError(
                f"{path}: its times are relative and it gives no baseTimeNanoseconds, so they cannot be "
                f"put on the recording's clock"
            )
        host_pid, thread_map = host_ids(recording, run, tasks)
        for device in run.devices:
            if (host_pid, device) in keys:
                raise JoinError(
                    f"{path} and {keys[(host_pid, device)]} both hold process {host_pid}'s work on "
                    f"device {device}: give one profiler file per process and device"
                )
            keys[(host_pid, device)] = path
        clock = recorded_clock(readings, run, Path(path))
        mine = probed.filter(pl.col("pid") == host_pid)
        if mine.height:
            clock = launch_clock(clock, run, thread_map, mine)
        window = tuple(int(v) for v in clock.at(np.array(run.window, np.int64)))
        caveat = check_coverage(recording, run, window)
        if caveat:
            caveats.append(caveat)
        _check_threads_started(recording, run, thread_map, clock, first_seen)
        windows.append((host_pid, *window))
        # the profiler's calls on the recording's threads, every time on the recording's clock
        calls = run.calls.with_columns(
            pl.col("tid").replace_strict(thread_map, return_dtype=pl.Int64), pl.lit(host_pid, pl.Int64).alias("pid")
        )
        timed = {"ts_ns": clock.to_recording(pl.col("ts_ns")), "end_ns": clock.to_recording(pl.col("end_ns"))}
        calls = calls.with_columns(**timed)
        gpu = run.gpu.with_columns(**timed)
        for kind, frame in gpu_frames(gpu, calls, host_pid).items():
            frames[kind].append(frame)
        summary = profiler_summary(run)
        summary.update(
            pid=host_pid,
            window_start_ns=window[0],
            window_end_ns=window[1],
            clock=clock.summary(),
            threads={str(t): h for t, h in thread_map.items()},
            profiler_pid=run.pid,
        )
        summaries.append(summary)
    meta = {
        **recording.meta,
        MetaKey.GPU_ACTIVITY: {"recorded": True, "source": PROFILER_SOURCE, "paths": [str(p) for p in paths]},
        MetaKey.PROFILER: summaries,
        MetaKey.CAVEATS: list(recording.meta.get(MetaKey.CAVEATS) or []) + caveats,
    }
    joined = {k: pl.concat(v, how="vertical_relaxed") for k, v in frames.items() if v}
    return Trace(
        recording.path,
        meta,
        JoinedTables(recording.tables, joined, windows),
        truncated=recording.truncated,
        summary=recording.summary,
        end_ns=recording.end_ns,
        damage=recording.damage,
        format=recording.format,
    )


class JoinedTables:
    """A recording's tables with the profiler's GPU kinds beside them; inside each profiled process's window its
    launch rows are the profiler's (the same calls as its gpu_api rows, so they pair exactly)."""

    def __init__(self, base, frames: dict[Event, pl.DataFrame], windows: list[tuple[int, int, int]]):
        self._base = base
        self._frames = FrameTables(frames)
        profiled = [
            (pl.col("pid") == pid) & pl.col("ts_ns").cast(pl.Int64).is_between(lo, hi) for pid, lo, hi in windows
        ]
        self._replaced = pl.any_horizontal(profiled) if profiled else pl.lit(False)
        self._launches = frames.get(Event.LAUNCH)

    def _kept(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        return frame.filter(~self._replaced)

    def scan(self, kind: Event) -> pl.LazyFrame:
        if kind in GPU_KINDS:
            return self._frames.scan(kind)
        if kind is Event.LAUNCH and self._launches is not None:
            return pl.concat([self._kept(self._base.scan(kind)), self._frames.scan(kind)])
        return self._base.scan(kind)

    def count(self, kind: Event) -> int:
        if kind in GPU_KINDS:
            return self._frames.count(kind)
        if kind is Event.LAUNCH and self._launches is not None:
            return int(self.scan(kind).select(pl.len()).collect().item())
        return self._base.count(kind)

    def pieces(self, kind: Event) -> list[tuple[pl.LazyFrame, int | None]]:
        if kind in GPU_KINDS:
            return self._frames.pieces(kind)
        if kind is Event.LAUNCH and self._launches is not None:
            least = self._launches["ts_ns"].min() if self._launches.height else None
            return [(self._frames.scan(kind), int(least) if least is not None else None)] + [
                (self._kept(piece), low) for piece, low in self._base.pieces(kind)
            ]
        return self._base.pieces(kind)


def join_profiler_traces(recording: Trace, paths: list[str]) -> Trace:
    """The join, every failure one line (KinetoError for a file that is no profiler trace, JoinError else)."""
    if not paths:
        return recording
    return join(recording, paths)
