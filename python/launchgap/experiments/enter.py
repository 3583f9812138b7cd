"""Runs a command under a scenario's mitigations: joins a cgroup, pins, sets
nice and an RT policy, then execs it. The recorder runs this, so only the
workload is affected, never the recorder.

    python -m launchgap.experiments.enter [--cgroup DIR] [--cpus 1,2] [--nice N]
        [--rt fifo|rr --rt-priority N] -- COMMAND...
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from launchgap.experiments.mitigations import Mitigations, child_setup


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="launchgap-enter")
    parser.add_argument("--cgroup", type=Path)
    parser.add_argument("--cpus", type=lambda s: [int(c) for c in s.split(",")])
    parser.add_argument("--nice", type=int)
    parser.add_argument("--rt", choices=["fifo", "rr"])
    parser.add_argument("--rt-priority", type=int, default=10)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run is required after --")
    m = Mitigations(cpus=args.cpus, nice=args.nice, rt_policy=args.rt, rt_priority=args.rt_priority)
    child_setup(m, args.cgroup)()
    try:
        os.execvp(command[0], command)
    except OSError as err:
        print(f"launchgap-enter: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
