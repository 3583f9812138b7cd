"""Runs a command under a scenario's mitigations: joins a cgroup, pins, sets
nice and a scheduler policy, reads every one of them back, then execs it.
The recorder runs this, so only the workload is affected, never the recorder.

    python -m launchgap.experiments.enter [--cgroup DIR] [--cpus 1,2] [--nice N]
        [--policy other|batch|idle|fifo:P|rr:P] [--report FILE] -- COMMAND...

--report FILE: what the process reads back about itself just before exec
(its pid, which the command keeps; the CLOCK_MONOTONIC time, as a trace's; policy, RT priority, nice,
CPUs, cpuset),
as JSON. A setting that does not read back as asked is an error (exit 126),
so the workload never runs under settings other than the ones asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from launchgap.experiments.levers import POLICY_BY_NUMBER, MitigationError, cpuset_of_process
from launchgap.experiments.mitigations import Mitigations, child_setup

# the shell's "found but could not run" status: the settings, not the command, failed
EXIT_NOT_IN_EFFECT = 126


def read_back(m: Mitigations, cgroup: Path | None) -> tuple[dict, list[str]]:
    """This process's settings as the kernel shows them, and every one that differs from what was asked."""
    policy = m.sched_policy
    seen = {
        "pid": os.getpid(),
        "monotonic_ns": time.monotonic_ns(),
        "policy": POLICY_BY_NUMBER.get(os.sched_getscheduler(0), "unknown"),
        "rt_priority": os.sched_getparam(0).sched_priority,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "cpus": sorted(os.sched_getaffinity(0)),
        "cpuset": cpuset_of_process(),
    }
    wrong = []
    if policy is not None and (seen["policy"], seen["rt_priority"]) != (policy.name, policy.priority):
        wrong.append(f"policy {seen['policy']}:{seen['rt_priority']}, not {policy}")
    if m.cpus and seen["cpus"] != sorted(m.cpus):
        wrong.append(f"CPUs {seen['cpus']}, not {sorted(m.cpus)}")
    if m.nice is not None and seen["nice"] != m.nice:
        wrong.append(f"nice {seen['nice']}, not {m.nice}")
    if cgroup is not None and seen["cpuset"] is not None and not seen["cpuset"].endswith("/" + cgroup.name):
        wrong.append(f"cpuset {seen['cpuset']}, not {cgroup.name}")
    return seen, wrong


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="launchgap-enter")
    parser.add_argument("--cgroup", type=Path)
    parser.add_argument("--cpus", type=lambda s: [int(c) for c in s.split(",")])
    parser.add_argument("--nice", type=int)
    parser.add_argument("--policy")
    parser.add_argument("--rt", choices=["fifo", "rr"])
    parser.add_argument("--rt-priority", type=int, default=10)
    parser.add_argument("--report", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run is required after --")
    policy = args.policy or (f"{args.rt}:{args.rt_priority}" if args.rt else None)
    m = Mitigations(cpus=args.cpus, nice=args.nice, policy=policy)
    try:
        m.sched_policy  # noqa: B018 (parses and bounds it)
    except MitigationError as err:
        print(f"launchgap-enter: {err}", file=sys.stderr)
        sys.exit(EXIT_NOT_IN_EFFECT)
    try:
        child_setup(m, args.cgroup)()
    except OSError as err:
        print(f"launchgap-enter: cannot apply {m.describe()}: {err.strerror or err}", file=sys.stderr)
        sys.exit(EXIT_NOT_IN_EFFECT)
    seen, wrong = read_back(m, args.cgroup)
    if args.report is not None:
        args.report.write_text(json.dumps({**seen, "asked": m.describe(), "not_in_effect": wrong}))
    if wrong:
        print(f"launchgap-enter: not in effect: {'; '.join(wrong)}", file=sys.stderr)
        sys.exit(EXIT_NOT_IN_EFFECT)
    try:
        os.execvp(command[0], command)
    except OSError as err:
        print(f"launchgap-enter: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
