"""Synthetic traces shaped like a noisy cudasim decode run, built column-wise
(numpy, no per-event Python) for the analysis benchmark.

Per token on one launching thread (cudasim's shape): 478 launches 2.5 us
apart, a 4 ms sync that blocks (switch-out, wakeup, switch-in), a CPU hog
preempting the thread for 3 ms every tenth token, and a local-timer interrupt
every 4 ms on its CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from launchgap.trace import Event
from launchgap.trace.columns import polars_type
from launchgap.trace.format2 import _write_options, kind_table, segment_name
from launchgap.trace.schema import END_FILE, FORMAT_NAME, FORMAT_VERSION, META_FILE
from launchgap.trace.writer import write_trace

LAUNCHES_PER_TOKEN = 478
LAUNCH_SPACING_NS = 2_500
SYNC_NS = 4_000_000
PREEMPT_NS = 3_000_000
TIMER_PERIOD_NS = 4_000_000
PID, TID, HOG = 1000, 1001, 2000
START_NS = 1_000_000_000


PER_TOKEN = LAUNCHES_PER_TOKEN + 4 + 1  # launches, sync + 3 scheduling events, ~1 timer IRQ
TOKEN_NS = LAUNCHES_PER_TOKEN * LAUNCH_SPACING_NS + SYNC_NS + 200_000
# tokens made at a time when writing format 2: ~2M events, a few hundred MB however long the trace
CHUNK_TOKENS = 4096


def _token_start(k: np.ndarray) -> np.ndarray:
    # every tenth token (k % 10 == 0) is preempted: the tokens before k lost (k + 9) // 10 preemptions
    return START_NS + k * TOKEN_NS + (k + 9) // 10 * PREEMPT_NS


def _end_ns(tokens: int) -> int:
    last = np.array([tokens - 1], np.int64)
    return int(
        _token_start(last)[0]
        + (LAUNCHES_PER_TOKEN - 1) * LAUNCH_SPACING_NS
        + (last[0] % 10 == 0) * PREEMPT_NS
        + 1_000
        + SYNC_NS
        - 2_000
        + 1_000_000
    )


def make(events: int) -> tuple[dict[Event, pl.DataFrame], dict, int]:
    """One frame per kind, the metadata, and the end time."""
    tokens = max(1, events // PER_TOKEN)
    end_ns = _end_ns(tokens)
    return _frames(0, tokens, START_NS, end_ns), META, end_ns


def _frames(first: int, last: int, from_ns: int, to_ns: int) -> dict[Event, pl.DataFrame]:
    """Tokens FIRST..LAST-1 and the timer interrupts in [FROM_NS, TO_NS), one frame per kind."""
    tokens = last - first
    k = np.arange(first, last, dtype=np.int64)
    preempted = k % 10 == 0
    token_start = _token_start(k)

    idx = np.arange(LAUNCHES_PER_TOKEN, dtype=np.int64)
    launch_ts = (
        token_start[:, None]
        + idx[None, :] * LAUNCH_SPACING_NS
        + (preempted[:, None] & (idx[None, :] >= 200)) * PREEMPT_NS
    ).ravel()
    burst_end = token_start + (LAUNCHES_PER_TOKEN - 1) * LAUNCH_SPACING_NS + preempted * PREEMPT_NS
    sync_ts = burst_end + 1_000
    block_ts = sync_ts + 500
    wake_ts = sync_ts + SYNC_NS - 10_000
    run_ts = wake_ts + 8_000
    pre_out = token_start[preempted] + 200 * LAUNCH_SPACING_NS - 1_000
    pre_in = pre_out + PREEMPT_NS - 500
    # the first timer tick at or after FROM_NS on the START_NS + n * period grid
    first_tick = START_NS + -(-(from_ns - START_NS) // TIMER_PERIOD_NS) * TIMER_PERIOD_NS
    timer_ts = np.arange(first_tick, to_ns, TIMER_PERIOD_NS, dtype=np.int64)

    parts = []

    def part(kind: Event, ts: np.ndarray, **cols) -> None:
        parts.append((kind, ts, cols))

    n_l = launch_ts.size
    part(
        Event.LAUNCH,
        launch_ts,
        api=np.full(n_l, "cuLaunchKernel"),
        func=np.full(n_l, 7, np.uint64),
        stream=np.full(n_l, 9, np.uint64),
        grid_x=(np.arange(n_l) % 1024 + 1).astype(np.uint32),
        grid_y=np.ones(n_l, np.uint32),
        grid_z=np.ones(n_l, np.uint32),
        block_x=np.full(n_l, 128, np.uint32),
        block_y=np.ones(n_l, np.uint32),
        block_z=np.ones(n_l, np.uint32),
        shared_mem=np.zeros(n_l, np.uint32),
    )
    part(
        Event.SYNC,
        sync_ts,
        api=np.full(tokens, "cuMemcpyDtoH_v2"),
        duration_ns=np.full(tokens, SYNC_NS, np.uint64),
        stream=np.zeros(tokens, np.uint64),
        bytes=np.full(tokens, 607744, np.uint64),
    )
    part(
        Event.SWITCH,
        block_ts,
        comm=np.full(tokens, "decode"),
        voluntary=np.ones(tokens, bool),
        preempt=np.zeros(tokens, bool),
        prev_state=np.ones(tokens, np.int64),
        next_pid=np.zeros(tokens, np.uint32),
        next_tid=np.zeros(tokens, np.uint32),
        next_comm=np.full(tokens, "swapper/0"),
    )
    part(Event.WAKEUP, wake_ts, comm=np.full(tokens, "decode"), target_cpu=np.zeros(tokens, np.uint32))
    part(
        Event.SWITCH,
        run_ts,
        pid=0,
        tid=0,
        comm=np.full(tokens, "swapper/0"),
        voluntary=np.zeros(tokens, bool),
        preempt=np.zeros(tokens, bool),
        prev_state=np.zeros(tokens, np.int64),
        next_pid=np.full(tokens, PID, np.uint32),
        next_tid=np.full(tokens, TID, np.uint32),
        next_comm=np.full(tokens, "decode"),
    )
    n_p = pre_out.size
    part(
        Event.SWITCH,
        pre_out,
        comm=np.full(n_p, "decode"),
        voluntary=np.zeros(n_p, bool),
        preempt=np.zeros(n_p, bool),
        prev_state=np.zeros(n_p, np.int64),
        next_pid=np.full(n_p, HOG, np.uint32),
        next_tid=np.full(n_p, HOG, np.uint32),
        next_comm=np.full(n_p, "stress-ng-cpu"),
    )
    part(
        Event.SWITCH,
        pre_in,
        pid=HOG,
        tid=HOG,
        comm=np.full(n_p, "stress-ng-cpu"),
        voluntary=np.zeros(n_p, bool),
        preempt=np.zeros(n_p, bool),
        prev_state=np.zeros(n_p, np.int64),
        next_pid=np.full(n_p, PID, np.uint32),
        next_tid=np.full(n_p, TID, np.uint32),
        next_comm=np.full(n_p, "decode"),
    )
    n_t = timer_ts.size
    part(
        Event.IRQ_VECTOR,
        timer_ts,
        irq=np.zeros(n_t, np.int32),
        irq_name=np.full(n_t, "LOCAL_TIMER"),
        duration_ns=np.full(n_t, 2_000, np.uint64),
    )

    by_kind: dict[Event, list[pl.DataFrame]] = {}
    for kind, ts, cols in parts:
        n = ts.size
        pid = cols.pop("pid", PID)
        tid = cols.pop("tid", TID)
        base = {
            "ts_ns": ts.astype(np.uint64),
            "cpu": np.zeros(n, np.uint32),
            "pid": np.full(n, pid, np.uint32),
            "tid": np.full(n, tid, np.uint32),
            **cols,
        }
        by_kind.setdefault(kind, []).append(
            pl.DataFrame({name: pl.Series(name, values, dtype=polars_type(name)) for name, values in base.items()})
        )
    return {kind: pl.concat(parts, how="diagonal_relaxed").sort("ts_ns") for kind, parts in by_kind.items()}


META = {
    "start_ns": START_NS,
    "mode": "command",
    "command": ["synthetic"],
    "command_pid": PID,
    "pids": [],
    "host": {"hostname": "synthetic"},
    "topology": {"count": 2},
}


def write(path, events: int, version: int = FORMAT_VERSION) -> int:
    """Writes a synthetic trace of about EVENTS events in format VERSION; returns its rows. Format 2 is
    written a few thousand tokens at a time, each kind's rows of a chunk one segment, as a recorder
    writes segments: a 100M-event trace takes the memory of one chunk."""
    tokens = max(1, events // PER_TOKEN)
    end_ns = _end_ns(tokens)
    summary = {"end_ns": end_ns, "stop_reason": "synthetic", "lost_events": 0}
    if version != 2:
        frames = _frames(0, tokens, START_NS, end_ns)
        write_trace(path, frames, META, summary, version=version)
        return sum(frame.height for frame in frames.values())
    path = Path(path)
    path.mkdir()
    (path / META_FILE).write_text(json.dumps({**META, "format": FORMAT_NAME, "version": 2}))
    numbers: dict[Event, int] = {}
    rows = 0
    for first in range(0, tokens, CHUNK_TOKENS):
        last = min(tokens, first + CHUNK_TOKENS)
        from_ns = START_NS if first == 0 else int(_token_start(np.array([first]))[0])
        to_ns = end_ns if last == tokens else int(_token_start(np.array([last]))[0])
        for kind, frame in _frames(first, last, from_ns, to_ns).items():
            numbers[kind] = numbers.get(kind, 0) + 1
            (path / kind.value).mkdir(exist_ok=True)
            table = kind_table(kind, frame)
            pq.write_table(
                table, path / kind.value / segment_name(numbers[kind]), **_write_options(kind, table.schema.names)
            )
            rows += frame.height
    (path / END_FILE).write_text(json.dumps(summary, indent=1))
    return rows
