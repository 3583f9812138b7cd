"""Launch gaps of a trace of any length, in the memory of the launches in
flight: every gap classified (analysis/gaps.py), from launches read in time
order a few segments at a time (Trace.in_time_order); the same numbers as
the in-memory reference, which holds every gap (tests/analysis/reference_gaps.py).

Each thread's launches are taken chunk by chunk, each chunk preceded by the
thread's last launch of the chunk before, so every gap is whole inside one
chunk; what is placed into gaps (off-CPU stretches, interrupts, syncs: the
scheduling side, held in memory) is placed chunk by chunk the same way.
What is kept of the gaps themselves: how many of each length in each class
(quantiles and sums are exact from those counts), and the time interference
took. Bursts need the median clean gap before any burst can be cut, so the
launches are read a second time for them: timestamps only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl

from launchgap.analysis.gaps import (
    BREAK_RULE,
    BURST_BREAK_FACTOR,
    CLASSES,
    CLEAN,
    IRQ,
    SYNC_CALL,
    SYNC_OR_BLOCK,
    classify,
    interference_ns,
    nearest_quantile,
)
from launchgap.analysis.records import Bursts, GapClass, GapTail, TailShare
from launchgap.trace import Event, Trace
from launchgap.trace.schema import ThreadState

# a chunk's (class, length) counts are merged into the running counts once this many have piled up
MERGE_EVERY = 1 << 20
CLASS_BITS = 3  # room for every class index
assert len(CLASSES) <= 1 << CLASS_BITS


@dataclass(frozen=True)
class Histogram:
    """Sorted distinct values and how many times each occurred."""

    values: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def at_rank(self, rank: int) -> float:
        """The value at 0-based RANK of the sorted values."""
        return float(self.values[np.searchsorted(np.cumsum(self.counts), rank, side="right")])

    def median(self) -> float:
        """numpy's median: the middle value, or the mean of the two middle ones."""
        n = self.n
        if n % 2:
            return self.at_rank(n // 2)
        return (self.at_rank(n // 2 - 1) + self.at_rank(n // 2)) / 2

    def nearest(self, q: float) -> float:
        """gaps.nearest_quantile: the value at rank q*(n-1), rounded half to even."""
        return self.at_rank(int(np.around(q * (self.n - 1))))

    def total(self) -> int:
        return int((self.values.astype(np.int64) * self.counts).sum()) if self.values.size else 0

    def at_least(self, threshold: float) -> Histogram:
        keep = self.values >= threshold
        return Histogram(self.values[keep], self.counts[keep])


def _histogram(values: np.ndarray) -> Histogram:
    distinct, counts = np.unique(values, return_counts=True)
    return Histogram(distinct, counts.astype(np.int64))


class _Counts:
    """(class, gap length) -> count, merged as chunks come. A pair is one int64 key, length << 3 | class."""

    def __init__(self):
        self._keys: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._pending = 0

    def add(self, klass: np.ndarray, gap_ns: np.ndarray) -> None:
        if not gap_ns.size:
            return
        keys, counts = np.unique((gap_ns.astype(np.int64) << CLASS_BITS) | klass.astype(np.int64), return_counts=True)
        self._keys.append(keys)
        self._counts.append(counts.astype(np.int64))
        self._pending += keys.size
        if self._pending >= MERGE_EVERY:
            self._merge()

    def _merge(self) -> None:
        if len(self._keys) > 1:
            keys, where = np.unique(np.concatenate(self._keys), return_inverse=True)
            counts = np.bincount(where, weights=np.concatenate(self._counts)).astype(np.int64)
            self._keys, self._counts = [keys], [counts]
        self._pending = 0

    def by_class(self) -> dict[int, Histogram]:
        self._merge()
        if not self._keys:
            return {}
        keys, counts = self._keys[0], self._counts[0]
        klass, values = keys & ((1 << CLASS_BITS) - 1), keys >> CLASS_BITS
        return {int(k): Histogram(values[klass == k], counts[klass == k]) for k in np.unique(klass)}


@dataclass(frozen=True)
class GapStats:
    """Every launch gap, as counts: what the report's gaps section and verdict need."""

    by_class: dict[int, Histogram]
    interference: int
    burst_sizes: np.ndarray  # gaps in each burst, threads one after another
    idle: Histogram  # the gaps that broke bursts

    @property
    def count(self) -> int:
        return sum(h.n for h in self.by_class.values())

    def _all(self) -> Histogram:
        parts = [h for h in self.by_class.values()]
        if not parts:
            return Histogram(np.zeros(0, np.int64), np.zeros(0, np.int64))
        merged = (
            pl.concat([pl.DataFrame({"v": h.values, "n": h.counts}) for h in parts])
            .group_by("v")
            .agg(pl.col("n").sum())
            .sort("v")
        )
        return Histogram(merged["v"].to_numpy(), merged["n"].to_numpy())

    def class_table(self) -> list[GapClass]:
        """Per class: count, share, p50/p90/p99 of the gap, penalty vs the median clean gap."""
        if self.count == 0:
            return []
        clean = self.by_class.get(CLEAN)
        clean_median = clean.median() if clean is not None else None
        rows = []
        for index, name in enumerate(CLASSES):
            values = self.by_class.get(index)
            if values is None or values.n == 0:
                continue
            p50 = values.median()
            rows.append(
                GapClass(
                    klass=name,
                    count=values.n,
                    share=values.n / self.count,
                    p50_ns=p50,
                    p90_ns=values.nearest(0.9),
                    p99_ns=values.nearest(0.99),
                    total_ns=values.total(),
                    penalty_ns=(p50 - clean_median) if clean_median is not None else None,
                )
            )
        return rows

    def tail_attribution(self) -> list[GapTail]:
        """Of the gaps at or above p95 and p99: what share each class explains (by count and time)."""
        out = []
        if self.count == 0:
            return out
        everything = self._all()
        for q in (0.95, 0.99):
            threshold = everything.nearest(q)
            tails = {index: h.at_least(threshold) for index, h in self.by_class.items()}
            total_time = float(sum(t.total() for t in tails.values())) or 1.0
            n = sum(t.n for t in tails.values())
            shares = {}
            for index, name in enumerate(CLASSES):
                mine = tails.get(index)
                count = mine.n if mine is not None else 0
                time = float(mine.total()) if mine is not None else 0.0
                shares[name] = TailShare(count=count, share=count / n, time_share=time / total_time)
            out.append(GapTail(percentile=int(q * 100), threshold_ns=threshold, gaps=n, by_class=shares))
        return out

    def bursts(self) -> Bursts:
        """Launch bursts: separated by a gap holding a sync or block, or one far above a clean gap."""
        if self.count == 0:
            return Bursts(bursts=0)
        launches_per_burst = self.burst_sizes + 1
        idle = self.idle
        return Bursts(
            bursts=int(launches_per_burst.size),
            launches_per_burst_p50=float(np.median(launches_per_burst)),
            launches_per_burst_p90=nearest_quantile(launches_per_burst, 0.9),
            idle_between_bursts_p50_ns=idle.median() if idle.n else None,
            idle_between_bursts_p90_ns=idle.nearest(0.9) if idle.n else None,
            break_rule=BREAK_RULE,
        )

    def interference_ns(self) -> int:
        """Preemption, run-queue and IRQ time inside launch gaps: what delayed launches directly."""
        return self.interference


class _Items:
    """One kind of thing placed into gaps, per thread, sorted by when it starts."""

    def __init__(self, frame: Callable[[], pl.DataFrame], start: str):
        self._frame = frame
        self._start = start

    @functools.cached_property
    def _by_tid(self) -> dict[int, pl.DataFrame]:
        # split on first use: a trace with no launches (a --system storm) never pays for it
        parts = self._frame().partition_by("tid", as_dict=True)
        return {tid: part.sort(self._start) for (tid,), part in parts.items()}

    def within(self, tid: int, lo: int, hi: int) -> pl.DataFrame | None:
        """The thread's items starting in [LO, HI)."""
        part = self._by_tid.get(tid)
        if part is None:
            return None
        starts = part[self._start]
        a, b = starts.search_sorted(lo, side="left"), starts.search_sorted(hi, side="left")
        return part.slice(a, b - a) if b > a else None


def _by_thread(chunks: Iterator[pl.DataFrame]) -> Iterator[tuple[int, np.ndarray]]:
    for chunk in chunks:
        tids = chunk["tid"]
        if tids.n_unique() == 1:  # the common case: one launching thread
            yield int(tids[0]), chunk["ts_ns"].to_numpy().astype(np.int64)
            continue
        for (tid,), part in chunk.partition_by("tid", as_dict=True, maintain_order=True).items():
            yield int(tid), part["ts_ns"].to_numpy().astype(np.int64)


def launch_chunks(trace: Trace, pids: set[int]) -> Callable[[], Iterator[pl.DataFrame]]:
    """gap_stats' LAUNCH_CHUNKS for the processes PIDS: a fresh iterator over their launches (tid, ts_ns) in
    time order each call, a few segments at a time."""
    wanted = list(pids)
    return lambda: (
        chunk.filter(pl.col("pid").is_in(wanted)).select("tid", "ts_ns")
        for chunk in trace.in_time_order(Event.LAUNCH, "ts_ns", "pid", "tid")
    )


def gap_stats(
    launch_chunks: Callable[[], Iterator[pl.DataFrame]], segments: pl.DataFrame, irqs: pl.DataFrame, syncs: pl.DataFrame
) -> GapStats:
    """launch_chunks: a fresh iterator over (tid, ts_ns) frames in time order each call (read twice);
    segments: tid, state, segment_start, segment_end; irqs: tid, irq_start, exclusive_ns; syncs: tid, ts_ns."""
    off_cpu_states = [ThreadState.PREEMPTED, ThreadState.RUNQUEUE, ThreadState.BLOCKED, ThreadState.OFFCPU]
    off_cpu = _Items(
        lambda: (
            segments.filter(pl.col("state").is_in(off_cpu_states))
            # the state as a string: the gaps' other rows (IRQ, SYNC_CALL) are no segment states
            .select("tid", pl.col("state").cast(pl.Utf8), "segment_start", "segment_end")
        ),
        "segment_start",
    )
    irq_items = _Items(lambda: irqs.select("tid", "irq_start", "exclusive_ns"), "irq_start")
    sync_items = _Items(lambda: syncs.select("tid", pl.col("ts_ns").cast(pl.Int64)), "ts_ns")
    counts = _Counts()
    last: dict[int, int] = {}
    done: dict[int, int] = {}  # gaps of each thread so far
    # the thread's gaps (by index) that hold a sync or a block: bursts break there whatever their length
    sync_or_block: dict[int, list[np.ndarray]] = {}
    interference = 0
    for tid, ts in _by_thread(launch_chunks()):
        if tid in last:
            ts = np.concatenate(([last[tid]], ts))
        last[tid] = int(ts[-1])
        if ts.size < 2:
            done.setdefault(tid, 0)  # one launch: a burst of its own
            continue
        base = done.get(tid, 0)
        gap_ns = np.diff(ts)
        done[tid] = base + gap_ns.size
        lo, hi = int(ts[0]), int(ts[-1])
        placed = []
        mine = off_cpu.within(tid, lo, hi)
        if mine is not None:
            start, end = mine["segment_start"].to_numpy(), mine["segment_end"].to_numpy()
            at = np.searchsorted(ts, start, side="right") - 1
            overlap = np.minimum(end, ts[at + 1]) - np.maximum(start, ts[at])
            placed.append(pl.DataFrame({"gap_id": at, "state": mine["state"], "ns": np.clip(overlap, 0, None)}))
        mine = irq_items.within(tid, lo, hi)
        if mine is not None:
            at = np.searchsorted(ts, mine["irq_start"].to_numpy(), side="right") - 1
            placed.append(
                pl.DataFrame({"gap_id": at, "state": np.full(at.size, IRQ), "ns": mine["exclusive_ns"].to_numpy()})
            )
        mine = sync_items.within(tid, lo, hi)
        if mine is not None:
            at = np.searchsorted(ts, mine["ts_ns"].to_numpy(), side="right") - 1
            placed.append(
                pl.DataFrame({"gap_id": at, "state": np.full(at.size, SYNC_CALL), "ns": np.zeros(at.size, np.int64)})
            )
        klass = np.full(gap_ns.size, CLEAN, np.int8)
        affected = classify(placed)
        if affected.height:
            klass[affected["gap_id"].to_numpy()] = affected["class_index"].to_numpy()
        interference += interference_ns(affected)
        counts.add(klass, gap_ns)
        breaking = np.flatnonzero(np.isin(klass, SYNC_OR_BLOCK))
        if breaking.size:
            sync_or_block.setdefault(tid, []).append(base + breaking)
    by_class = counts.by_class()
    clean = by_class.get(CLEAN)
    limit = clean.median() * BURST_BREAK_FACTOR if clean is not None and clean.n else float("inf")
    sizes, idle = _bursts(launch_chunks, limit, done, {t: np.concatenate(p) for t, p in sync_or_block.items()})
    return GapStats(by_class, interference, sizes, idle)


def _bursts(
    launch_chunks: Callable[[], Iterator[pl.DataFrame]],
    limit: float,
    gaps_of: dict[int, int],
    sync_or_block: dict[int, np.ndarray],
) -> tuple[np.ndarray, Histogram]:
    """Second pass: the gaps that break bursts (longer than LIMIT, or holding a sync or block), where
    each thread's are; burst sizes in gaps, threads one after another in order of first launch."""
    last: dict[int, int] = {}
    done: dict[int, int] = {}
    breaks: dict[int, list[np.ndarray]] = {}
    idle_parts = []
    for tid, ts in _by_thread(launch_chunks()):
        if tid in last:
            ts = np.concatenate(([last[tid]], ts))
        last[tid] = int(ts[-1])
        if ts.size < 2:
            continue
        base = done.get(tid, 0)
        gap_ns = np.diff(ts)
        done[tid] = base + gap_ns.size
        mine = sync_or_block.get(tid)
        breaking = gap_ns > limit
        if mine is not None:
            here = mine[np.searchsorted(mine, base) : np.searchsorted(mine, base + gap_ns.size)]
            breaking[here - base] = True
        where = np.flatnonzero(breaking)
        if where.size:
            breaks.setdefault(tid, []).append(base + where)
            idle_parts.append(_histogram(gap_ns[where]))
    sizes = []
    for tid, n in gaps_of.items():
        where = np.concatenate(breaks[tid]) if tid in breaks else np.zeros(0, np.int64)
        edges = np.concatenate(([-1], where, [n]))
        sizes.append(np.diff(edges) - 1)
    if idle_parts:
        merged = (
            pl.concat([pl.DataFrame({"v": h.values, "n": h.counts}) for h in idle_parts])
            .group_by("v")
            .agg(pl.col("n").sum())
            .sort("v")
        )
        idle = Histogram(merged["v"].to_numpy(), merged["n"].to_numpy())
    else:
        idle = Histogram(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return (np.concatenate(sizes) if sizes else np.zeros(0, np.int64)), idle
