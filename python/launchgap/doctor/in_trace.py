"""The doctor over a trace: its checks run on the host files the recorder
captured at the start (metadata `host_files`), with the CPUs the workload's
launching threads ran on (workload_cpus) as the target. The report keeps the
verdicts that bear on the run (analysis/report.py, host_checks_section)."""

from __future__ import annotations

import polars as pl

from launchgap.trace import Event, Trace


def workload_cpus(trace: Trace, tids: set[int], launching: bool) -> frozenset[int]:
    """Every CPU the threads launched on or were switched in on; for launching
    threads only from their first launch (before it, a thread may still be a
    wrapper such as taskset that has not yet pinned itself and exec'd)."""
    wanted = list(tids)
    launches = trace.of(Event.LAUNCH, "ts_ns", "cpu", "tid").filter(pl.col("tid").is_in(wanted))
    ran = trace.of(Event.SWITCH, "ts_ns", "cpu", "next_tid").filter(pl.col("next_tid").is_in(wanted))
    if launching:
        first = launches.group_by("tid").agg(pl.col("ts_ns").min().alias("first_ns"))
        ran = ran.join(first, left_on="next_tid", right_on="tid").filter(pl.col("ts_ns") >= pl.col("first_ns"))
    cpus = pl.concat([launches["cpu"], ran["cpu"]]).drop_nulls().unique().to_list()
    return frozenset(int(c) for c in cpus)
