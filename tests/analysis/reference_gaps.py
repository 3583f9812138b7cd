"""The launch-gap analysis in memory: every launch of the workload held at
once and every gap classified together. It was the report's `in_memory`
path; kept here as the reference the streamed analysis the report uses
(analysis/gap_stream.py) is compared against, whole report to whole report
(tests/analysis/test_bounded_report.py). Not used by the product.

A thread cannot launch while it is off the CPU, so every off-CPU stretch,
interrupt and sync falls inside exactly one gap: each is placed by a binary
search over the thread's launch times. Only gaps with something inside are
materialised; the rest are clean by construction. Cost: one sort of the
launches per thread, then linear.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from launchgap.analysis.gaps import (
    BREAK_RULE,
    BURST_BREAK_FACTOR,
    CLASSES,
    CLEAN,
    SYNC_OR_BLOCK,
    classify,
    interference_ns,
    nearest_quantile,
)
from launchgap.analysis.records import Bursts, GapClass, Gaps, GapTail, Report, TailShare
from launchgap.analysis.report import report_from, workload_of
from launchgap.trace import Event, Trace


@dataclass(frozen=True)
class LaunchGaps:
    gap_ns: np.ndarray  # every gap, threads one after another
    thread_offsets: np.ndarray  # where each thread's gaps start in gap_ns (and the end)
    klass: np.ndarray  # index into CLASSES for each gap
    affected: pl.DataFrame  # gap_id and ns by cause, for the gaps that are not clean (gaps.classify)

    @property
    def count(self) -> int:
        return int(self.gap_ns.size)


def in_memory_report(trace: Trace) -> Report:
    """build_report with the workload's launches counted and their gaps classified in memory."""
    workload = workload_of(trace)
    launches = (
        trace.scan(Event.LAUNCH)
        .filter(pl.col("pid").is_in(list(workload.pids)))
        .select("ts_ns", "pid", "tid", "api", "runtime_api")
        .collect()
    )
    counted = launches.group_by("tid", "api", "runtime_api").agg(pl.len().alias("launches"))
    workload = replace(workload, launches=counted)
    gaps = launch_gaps(launches, workload.segments, workload.target_irqs, workload.syncs)
    section = Gaps(classes=class_table(gaps), tail=tail_attribution(gaps), bursts=bursts(gaps), count=gaps.count)
    return report_from(workload, section, interference_ns(gaps.affected))


def _place(ts: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Index of the gap of `ts` that holds each time in `at`; -1 outside every gap."""
    index = np.searchsorted(ts, at, side="right") - 1
    index[(index < 0) | (index >= ts.size - 1)] = -1
    return index


def launch_gaps(launches: pl.DataFrame, segments: pl.DataFrame, irqs: pl.DataFrame, syncs: pl.DataFrame) -> LaunchGaps:
    """launches: tid, ts_ns; segments: tid, state, segment_start, segment_end; irqs: tid, irq_start, exclusive_ns;
    syncs: tid, ts_ns."""
    gap_parts, offsets, placed = [], [0], []
    # the state as a string: the gaps' other rows (irq, sync_call) are no segment states
    off_cpu = segments.filter(pl.col("state").is_in(["preempted", "runqueue", "blocked", "offcpu"])).with_columns(
        pl.col("state").cast(pl.Utf8)
    )
    for tid, group in launches.select("tid", "ts_ns").partition_by("tid", as_dict=True).items():
        tid = tid[0]
        ts = np.sort(group["ts_ns"].to_numpy().astype(np.int64))
        base = offsets[-1]
        gap_parts.append(np.diff(ts))
        offsets.append(base + max(0, ts.size - 1))
        mine = off_cpu.filter(pl.col("tid") == tid)
        if mine.height:
            start, end = mine["segment_start"].to_numpy(), mine["segment_end"].to_numpy()
            at = _place(ts, start)
            ok = at >= 0
            overlap = np.minimum(end[ok], ts[at[ok] + 1]) - np.maximum(start[ok], ts[at[ok]])
            placed.append(
                pl.DataFrame(
                    {
                        "gap_id": base + at[ok],
                        "state": mine["state"].filter(pl.Series(ok)),
                        "ns": np.clip(overlap, 0, None),
                    }
                )
            )
        mine = irqs.filter(pl.col("tid") == tid)
        if mine.height:
            at = _place(ts, mine["irq_start"].to_numpy())
            ok = at >= 0
            placed.append(
                pl.DataFrame(
                    {
                        "gap_id": base + at[ok],
                        "state": np.full(ok.sum(), "irq"),
                        "ns": mine["exclusive_ns"].to_numpy()[ok],
                    }
                )
            )
        mine = syncs.filter(pl.col("tid") == tid)
        if mine.height:
            at = _place(ts, mine["ts_ns"].to_numpy().astype(np.int64))
            ok = at >= 0
            placed.append(
                pl.DataFrame(
                    {
                        "gap_id": base + at[ok],
                        "state": np.full(ok.sum(), "sync_call"),
                        "ns": np.zeros(ok.sum(), np.int64),
                    }
                )
            )
    gap_ns = np.concatenate(gap_parts) if gap_parts else np.zeros(0, np.int64)
    klass = np.full(gap_ns.size, CLEAN, np.int8)
    affected = classify(placed)
    if affected.height:
        klass[affected["gap_id"].to_numpy()] = affected["class_index"].to_numpy()
    return LaunchGaps(gap_ns, np.array(offsets), klass, affected)


def class_table(gaps: LaunchGaps) -> list[GapClass]:
    """Per class: count, share, p50/p90/p99 of the gap, penalty vs the median clean gap."""
    if gaps.count == 0:
        return []
    clean = gaps.gap_ns[gaps.klass == CLEAN]
    clean_median = float(np.median(clean)) if clean.size else None
    rows = []
    for index, name in enumerate(CLASSES):
        values = clean if index == CLEAN else gaps.gap_ns[gaps.klass == index]
        if values.size == 0:
            continue
        p50 = float(np.median(values))
        rows.append(
            GapClass(
                klass=name,
                count=int(values.size),
                share=values.size / gaps.count,
                p50_ns=p50,
                p90_ns=nearest_quantile(values, 0.9),
                p99_ns=nearest_quantile(values, 0.99),
                total_ns=int(values.sum()),
                penalty_ns=(p50 - clean_median) if clean_median is not None else None,
            )
        )
    return rows


def tail_attribution(gaps: LaunchGaps) -> list[GapTail]:
    """Of the gaps at or above p95 and p99: what share each class explains (by count and time)."""
    out = []
    if gaps.count == 0:
        return out
    for q in (0.95, 0.99):
        threshold = nearest_quantile(gaps.gap_ns, q)
        tail = gaps.gap_ns >= threshold
        total_time = float(gaps.gap_ns[tail].sum()) or 1.0
        n = int(tail.sum())
        shares = {}
        for index, name in enumerate(CLASSES):
            mine = tail & (gaps.klass == index)
            count = int(mine.sum())
            shares[name] = TailShare(
                count=count, share=count / n, time_share=float(gaps.gap_ns[mine].sum()) / total_time
            )
        out.append(GapTail(percentile=int(q * 100), threshold_ns=threshold, gaps=n, by_class=shares))
    return out


def bursts(gaps: LaunchGaps) -> Bursts:
    """Launch bursts: separated by a gap holding a sync or block, or one far above a clean gap."""
    if gaps.count == 0:
        return Bursts(bursts=0)
    clean = gaps.gap_ns[gaps.klass == CLEAN]
    limit = float(np.median(clean)) * BURST_BREAK_FACTOR if clean.size else float("inf")
    sync_or_block = np.isin(gaps.klass, SYNC_OR_BLOCK)
    breaks = sync_or_block | (gaps.gap_ns > limit)
    sizes = []
    for start, end in zip(gaps.thread_offsets[:-1], gaps.thread_offsets[1:]):
        # a breaking gap separates two bursts and belongs to neither
        where = np.flatnonzero(breaks[start:end])
        edges = np.concatenate(([-1], where, [end - start]))
        sizes.append(np.diff(edges) - 1)
    gaps_per_burst = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    launches_per_burst = gaps_per_burst + 1  # a burst of n gaps holds n + 1 launches
    idle = gaps.gap_ns[breaks]
    return Bursts(
        bursts=int(launches_per_burst.size),
        launches_per_burst_p50=float(np.median(launches_per_burst)),
        launches_per_burst_p90=nearest_quantile(launches_per_burst, 0.9),
        idle_between_bursts_p50_ns=float(np.median(idle)) if idle.size else None,
        idle_between_bursts_p90_ns=nearest_quantile(idle, 0.9) if idle.size else None,
        break_rule=BREAK_RULE,
    )
