"""launchgap's own cost in a trace: the tasks it adds, and its probes' time inside each launch call.

Measuring takes time from the workload, and that time is not interference to tune away: it is the price
of the answer, shown apart and kept out of the verdict's level, advice and prediction (docs/gpu-time.md,
"What measuring costs"). Its tasks are the recorder's threads (its process: meta.json's recorder_pid, not a
name any task can take) and the threads the CUPTI collector says it runs on (gpu_collector_thread rows; the
recorder believes such a row only from that process's own channel file, and here only of a thread the
trace's own scheduler rows show in that process, so no workload can name a culprit launchgap's).

The probes' cost is an estimate: each launch fires the uprobe on its driver entry point (and, with
--api-names, the runtime entry point's entry and return probes); a hit costs what the kernel takes to trap
and run the BPF program, which depends on whether it emulates the probed instruction or single-steps it
(meta.json's probes[].probe_cost, what `--list-probes` says).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from launchgap.recorder import RECORDER_COMMS
from launchgap.trace import Event, Trace
from launchgap.trace.schema import CUDA_APIS, MetaKey

# What one uprobe hit costs, by whether the kernel emulates the probed instruction or single-steps it: measured
# in this project's VMs with a counting bpftrace uprobe on real instruction shapes (shared/MEASUREMENTS.md,
# 2026-11-22: push %rbp 0.9-1.0 us; the driver thunk's cmpl and endbr64 about 11 us). Bare metal costs less
# (about 0.3 us a hit in published BPF selftests), so on a node this overstates the cost.
HIT_NS = {"emulated": 1_000, "single-stepped": 11_000, "never-fires": 0}
HIT_NS_SOURCE = (
    "1 us a hit where the kernel emulates the probed instruction, 11 us where it single-steps it (measured on a VM)"
)


@dataclass(frozen=True)
class Measurement:
    """launchgap's tasks in a trace."""

    recorder_pid: int | None
    # (pid, tid) of the collector's threads, as the trace's scheduler rows confirm them
    collector_threads: frozenset[tuple[int, int]]

    def is_ours(self, pid: pl.Expr, tid: pl.Expr) -> pl.Expr:
        """Whether the task (PID, TID) is launchgap's own."""
        mine = pid == self.recorder_pid if self.recorder_pid is not None else pl.lit(False)
        keys = [p * (1 << 32) + t for p, t in self.collector_threads]
        if keys:
            key = pid.cast(pl.UInt64) * (1 << 32) + tid.cast(pl.UInt64)
            mine = mine | key.is_in(pl.Series(keys, dtype=pl.UInt64).implode())
        return mine.fill_null(False)

    def is_ours_by_name(self, pid: int | None, comm: str | None) -> bool:
        """Whether a culprit row (its pid, its name) is the recorder: by its pid, or, in a trace that does not
        say the recorder's pid (older ones), by its threads' names."""
        if self.recorder_pid is not None:
            return pid == self.recorder_pid
        return bool(pid) and comm in RECORDER_COMMS


NOTHING = Measurement(None, frozenset())


def measurement_of(trace: Trace, threads: bool = True) -> Measurement:
    """The recorder's pid, and (THREADS) the collector threads the trace both names and shows in their process."""
    recorder = trace.meta.get(MetaKey.RECORDER_PID)
    named = trace.of(Event.GPU_COLLECTOR_THREAD, "pid", "tid").unique() if threads else pl.DataFrame()
    if named.is_empty():
        return Measurement(recorder if isinstance(recorder, int) else None, frozenset())
    switches = trace.scan(Event.SWITCH)
    shown = pl.concat(
        [
            switches.select("pid", "tid"),
            switches.select(pl.col("next_pid").alias("pid"), pl.col("next_tid").alias("tid")),
        ]
    ).unique()
    confirmed = named.lazy().join(shown, on=["pid", "tid"], how="semi").collect()
    return Measurement(
        recorder if isinstance(recorder, int) else None, frozenset((int(p), int(t)) for p, t in confirmed.iter_rows())
    )


def collector_names(trace: Trace, m: Measurement) -> frozenset[tuple[int, str]]:
    """(pid, name) of the collector's threads as the scheduler rows name them, for tables that group a process's
    tasks by name: each name a collector thread ran under that no other thread of its process ran under (a new
    thread carries its creator's name until it names itself: that name stays the process's). A workload can
    name only threads of its own process as the collector's (the rows are confirmed in their process by the
    scheduler's), and so only its own tasks as launchgap's: never another process's."""
    if not m.collector_threads:
        return frozenset()
    pids = sorted({pid for pid, _ in m.collector_threads})
    switches = trace.scan(Event.SWITCH)
    seen = (
        pl.concat(
            [
                switches.select("pid", "tid", pl.col("comm")),
                switches.select(
                    pl.col("next_pid").alias("pid"), pl.col("next_tid").alias("tid"), pl.col("next_comm").alias("comm")
                ),
            ]
        )
        .filter(pl.col("pid").is_in(pids))
        .unique()
        .collect()
    )
    ours = m.is_ours(pl.col("pid"), pl.col("tid"))
    collector = set(seen.filter(ours).select("pid", "comm").iter_rows())
    others = set(seen.filter(~ours).select("pid", "comm").iter_rows())
    return frozenset((int(pid), comm) for pid, comm in collector - others)


# the entry points a launch goes through, by layer: a launch fires these probes, never a sync's or a copy's
LAUNCH_APIS = {
    layer: frozenset(a.name for a in CUDA_APIS if a.layer == layer and a.does == "launch")
    for layer in ("driver", "runtime")
}


def probe_ns_per_launch(trace: Trace) -> dict[str, int]:
    """What the probes a launch fires cost, by the launch row's driver entry point (api): its own probe's hit,
    and with --api-names the runtime launch entry point's two (entry and return), taken at the costliest runtime
    launch probe's price. The sync and copy entry points' probes are no launch's. Entry points the trace has no
    probe report for cost nothing here."""
    probes = [
        p
        for p in trace.meta.get(MetaKey.PROBES) or []
        if isinstance(p, dict)
        and p.get("kind") == "uprobe"
        and p.get("attached")
        and isinstance(p.get("function"), str)
    ]
    cost = {
        p["function"]: HIT_NS.get(p.get("probe_cost"), 0)
        for p in probes
        if p.get("layer") == "driver" and p["function"] in LAUNCH_APIS["driver"]
    }
    options = trace.meta.get(MetaKey.OPTIONS) or {}
    runtime = [
        HIT_NS.get(p.get("probe_cost"), 0)
        for p in probes
        if p.get("layer") == "runtime" and p["function"] in LAUNCH_APIS["runtime"]
    ]
    extra = 2 * max(runtime) if options.get("api_names") and runtime else 0
    return {api: ns + extra for api, ns in cost.items()}
