#!/usr/bin/env python3
"""A CPU hog pinned to one CPU, under a name a report can be checked for.

Part (c) of scripts/gpu-validate.sh starts it beside a launching thread pinned
to the same CPU; `launchgap report` should then name it (command name
`lg-cpu-hog`, this process's pid) as who took that thread's time. One process,
one thread, always runnable, at the default nice: the case the scheduler must
share fairly. It runs until SIGTERM or SIGINT, or --seconds.

    python3 workloads/gpu/cpu_hog.py --cpu 3 [--seconds 60]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import time

COMM = b"lg-cpu-hog"
PR_SET_NAME = 15  # prctl(2): the thread's command name, as the kernel's sched events carry it


def set_comm(name: bytes) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", type=int, required=True, help="the CPU to burn")
    parser.add_argument("--seconds", type=float, default=600.0, help="stop after this long (default 600)")
    args = parser.parse_args(argv)
    try:
        os.sched_setaffinity(0, {args.cpu})
    except OSError as err:
        print(f"cpu_hog: cannot pin to CPU {args.cpu}: {err.strerror}", file=sys.stderr)
        return 2
    set_comm(COMM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"cpu_hog: pid {os.getpid()} burning CPU {args.cpu}", flush=True)
    deadline = time.monotonic() + args.seconds
    try:
        while time.monotonic() < deadline:
            for _ in range(100_000):
                pass
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
