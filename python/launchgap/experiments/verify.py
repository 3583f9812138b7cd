"""Checking that a run's settings were in effect for the workload, three ways:

- before it starts: enter.py reads back its own policy, priority, nice, CPUs
  and cpuset just before exec and refuses to exec otherwise (its --report);
- while it runs: every thread of the workload, sampled from
  /proc/PID/task/TID/stat (policy, RT priority), so threads it made itself
  are seen too;
- from the trace: every context switch of the workload's threads (and of
  the processes it starts) from the moment enter.py read its settings back
  carries the kernel prio the policy gives (RT: 99 - priority; fair
  policies: 120 + nice), on the CPUs it was pinned to.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import polars as pl

from launchgap.analysis.targets import target_pids
from launchgap.experiments.levers import DEFAULT_PRIO, read_thread_policies
from launchgap.experiments.mitigations import Mitigations
from launchgap.trace import Event, Trace

SAMPLE_INTERVAL_S = 0.02


class ThreadWatch(threading.Thread):
    """Samples the policy of every thread of the workload while it runs (its pid from enter's report)."""

    def __init__(self, report: Path) -> None:
        super().__init__(daemon=True, name="launchgap-thread-watch")
        self.report = report
        self.pid: int | None = None
        # tid -> {"comm", "seen": {(policy, rt_priority, nice), ...}, "cpus": {...}}
        self.threads: dict[int, dict] = {}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(SAMPLE_INTERVAL_S):
            if self.pid is None:
                try:
                    self.pid = int(json.loads(self.report.read_text())["pid"])
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            for tid, info in read_thread_policies(self.pid).items():
                entry = self.threads.setdefault(tid, {"comm": info["comm"], "seen": set(), "cpus": set()})
                entry["comm"] = info["comm"]
                entry["seen"].add((info["policy"], info["rt_priority"], info["nice"]))
                entry["cpus"].add(info["cpu"])

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=2)


def expected_prio(m: Mitigations) -> int | None:
    """The kernel prio every switch of the workload must show, or None when nothing fixes it."""
    policy = m.sched_policy
    if policy is not None:
        return policy.kernel_prio(m.nice or 0)
    if m.nice is not None:
        return DEFAULT_PRIO + m.nice
    return None


def sampled_problems(m: Mitigations, watch: ThreadWatch) -> list[str]:
    policy = m.sched_policy
    problems = []
    for tid, entry in sorted(watch.threads.items()):
        for name, rt_priority, nice in sorted(entry["seen"], key=str):
            if policy is not None and (name, rt_priority) != (policy.name, policy.priority):
                problems.append(f"thread {entry['comm']} ({tid}) ran as {name}:{rt_priority}, not {policy}")
            if m.nice is not None and nice != m.nice:
                problems.append(f"thread {entry['comm']} ({tid}) ran at nice {nice}, not {m.nice}")
        if m.cpus and not entry["cpus"] <= set(m.cpus):
            problems.append(f"thread {entry['comm']} ({tid}) ran on CPUs {sorted(entry['cpus'])}, not {m.cpus}")
    return problems


def trace_check(trace: Trace, pid: int, since_ns: int, m: Mitigations) -> dict:
    """What the trace shows of the workload's threads (its process, PID: enter.py's, which the workload
    keeps, and every process it started) from SINCE_NS on (CLOCK_MONOTONIC, as the trace: when enter.py
    had read its settings back, just before exec): their switches' prio values and CPUs."""
    workload = list(target_pids(trace) | {pid})
    switches = trace.of(Event.SWITCH, "ts_ns", "pid", "tid", "comm", "prio", "cpu").filter(
        pl.col("pid").is_in(workload) & (pl.col("ts_ns") > since_ns)
    )
    prios = switches.group_by("prio").len().sort("prio")
    cpus = sorted(int(c) for c in switches["cpu"].unique().to_list())
    out = {
        "switches": switches.height,
        "threads": switches["tid"].n_unique(),
        "prio": {str(p): n for p, n in prios.rows()},
        "cpus": cpus,
        "problems": [],
    }
    want = expected_prio(m)
    if want is not None:
        out["expected_prio"] = want
        wrong = switches.filter(pl.col("prio") != want)
        if wrong.height:
            shown = ", ".join(f"{n} at prio {p}" for p, n in wrong.group_by("prio").len().sort("prio").rows())
            out["problems"].append(
                f"{wrong.height} of {switches.height} switches of the workload's threads were not "
                f"at prio {want} ({shown})"
            )
    if m.cpus and not set(cpus) <= set(m.cpus):
        out["problems"].append(f"the workload's threads ran on CPUs {cpus}, not only {sorted(m.cpus)}")
    # every thread's exit is a switch: none at all means the trace lost them, so nothing is verified
    out["verified"] = not out["problems"] if switches.height else None
    return out
