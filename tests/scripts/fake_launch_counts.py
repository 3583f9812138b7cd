#!/usr/bin/env python3
"""A stand-in for workloads/gpu/launch_counts with cudasim underneath, for
testing scripts/gpu-validate.sh's parts b and c on a machine with no GPU.

It takes launch_counts' options, runs `cudasim-static decode --launch mixed`
(the runtime linked in, as nvcc links it; plain, Ex, cooperative and graph
launches on --threads threads; CPU-bound, as launch_counts is), and writes launch_counts' counts file
(schema launchgap-gpu-launch-counts/1) from cudasim's ground truth: per
thread, the calls per runtime entry point and the driver entry point each
reached. With --pin, the whole process is pinned to the first CPU listed
(cudasim cannot pin a thread), which is thread 0's, where part c puts its hog.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CUDASIM_STATIC = Path(__file__).resolve().parents[2] / "workloads" / "cudasim" / "build" / "bin" / "cudasim-static"
# CPU-bound, as launch_counts is on a GPU (its syncs spin): zero-length kernels and 2 ms of host
# work a token, so a hog on its CPU takes time from it; --per-path sets the length of the run
TOKENS_PER_PATH_CALL = 0.1
CPU_BOUND = ["--kernel-us", "0:0", "--host-us", "2000"]


def counts_from_truth(truth: dict, pinned_cpu: int | None) -> dict:
    columns = truth["launch_columns"]
    tid_at, api_at, runtime_at = columns.index("tid"), columns.index("api"), columns.index("runtime_api")
    process = truth["processes"][0]
    threads = []
    for thread in process["threads"]:
        paths: dict[tuple[str, str], int] = {}
        for row in truth["launches"]:
            if row[tid_at] == thread["tid"]:
                key = (row[runtime_at], row[api_at])
                paths[key] = paths.get(key, 0) + 1
        threads.append(
            {
                "index": thread["thread_index"],
                "tid": thread["tid"],
                "cpu": pinned_cpu if pinned_cpu is not None else -1,
                "pinned": pinned_cpu is not None,
                "elapsed_ns": thread["end_ns"] - thread["start_ns"],
                "gpu_kernels": thread["kernels"],
                "kernels_expected": thread["kernels"],
                "error": "",
                "paths": [
                    {
                        "path": runtime,
                        "runtime_api": runtime,
                        "driver_api": api,
                        "calls": n,
                        "failed": 0,
                        "skipped": False,
                        "kernels_per_call": 1,
                    }
                    for (runtime, api), n in sorted(paths.items())
                ],
            }
        )
    return {
        "schema": "launchgap-gpu-launch-counts/1",
        "program": "fake_launch_counts (cudasim)",
        "pid": process["pid"],
        "threads": threads,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--per-path", type=int, default=2000)
    parser.add_argument("--graph-kernels", type=int, default=4)
    parser.add_argument("--sync-every", type=int, default=64)
    parser.add_argument("--pin")
    parser.add_argument("--counts", required=True)
    args = parser.parse_args()
    pinned = int(args.pin.split(",")[0]) if args.pin else None
    tokens = max(2, int(args.per_path * TOKENS_PER_PATH_CALL))
    with tempfile.TemporaryDirectory() as tmp:
        truth_path = Path(tmp) / "truth.json"
        done = subprocess.run(
            [
                str(CUDASIM_STATIC),
                "decode",
                "--launch",
                "mixed",
                "--threads",
                str(args.threads),
                "--tokens",
                str(tokens),
                *CPU_BOUND,
                "--quiet",
                "--truth",
                str(truth_path),
            ],
            preexec_fn=(lambda: os.sched_setaffinity(0, {pinned})) if pinned is not None else None,
        )
        if done.returncode != 0:
            return done.returncode
        counts = counts_from_truth(json.loads(truth_path.read_text()), pinned)
    Path(args.counts).write_text(json.dumps(counts, indent=2))
    for thread in counts["threads"]:
        print(
            f"thread {thread['index']} (tid {thread['tid']}): "
            + ", ".join(f"{p['path']} {p['calls']}" for p in thread["paths"])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
