"""The doctor over a trace: its checks run on the host files the recorder
captured at the start (metadata `host_files`), with the CPUs the workload's
launching threads ran on as the target. The report keeps the verdicts that
bear on the run."""

from __future__ import annotations

import polars as pl

from launchgap.doctor.host import SnapshotHost
from launchgap.doctor.model import Status, Target
from launchgap.doctor.run import run_doctor
from launchgap.trace import Trace

SOURCE = "host files captured when recording started"


def workload_cpus(trace: Trace, tids: set[int]) -> frozenset[int]:
    """Every CPU the threads issued a launch on or were switched in on."""
    wanted = list(tids)
    launched = trace.of("launch", "cpu", "tid").filter(pl.col("tid").is_in(wanted))["cpu"]
    ran = trace.of("switch", "cpu", "next_tid").filter(pl.col("next_tid").is_in(wanted))["cpu"]
    return frozenset(int(c) for c in pl.concat([launched, ran]).drop_nulls().unique().to_list())


def host_checks(trace: Trace, launching: set[int], threads: set[int]) -> dict | None:
    """None when the trace carries no host files (imported traces, older recorders)."""
    snapshot = trace.meta.get("host_files")
    if not snapshot:
        return None
    tids, whose = (launching, "the launching threads' CPUs") if launching else (threads, "the workload threads' CPUs")
    cpus = workload_cpus(trace, tids)
    target = Target(cpus, whose) if cpus else None
    result = run_doctor(SnapshotHost(snapshot, "the recorded host"), target)
    bearing = [c for c in result.checks
               if c.status in (Status.WARN, Status.FAIL) or (c.about_target and target is not None)]
    return {"source": SOURCE, "target": target.to_dict() if target else {"cpus": [], "description": whose},
            "counts": result.counts(), "checks": [c.to_dict() for c in bearing]}
