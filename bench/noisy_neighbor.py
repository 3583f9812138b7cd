"""bench/noisy_neighbor: the study's experiment on this machine, and whether
it shows what issue #5 asks of it: the cpu scenario's slowdown interval
excludes zero, stress-ng is named as the culprit, and the pinned scenario
loses less time to preemption than cpu. Run and read rather than asserted in
CI: the last criterion compares two small, noisy quantities (see
docs/benchmarks.md for every run so far).

Runs every built-in scenario, three repeats, on a CPU-bound cudasim decode
(zero-length kernels, 2 ms of host work a token besides its 478 launches:
CPU time is what limits it, as for small models, and at ~160k launches/s
the recorder's own cost stays small beside the effect), then prints the
three criteria with their numbers. Needs root.

    sudo .venv/bin/python bench/noisy_neighbor.py [--repeat 3] [--seed 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

from launchgap.views.words import speed, speed_interval  # noqa: E402

CUDASIM = REPO / "workloads" / "cudasim" / "build" / "bin" / "cudasim"
WORKLOAD = [str(CUDASIM), "decode", "--tokens", "600", "--kernel-us", "0:0", "--host-us", "2000"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("noisy_neighbor: needs root (BPF, host settings)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-", dir=REPO) as tmp:
        out = Path(tmp) / "results"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "launchgap.cli",
                "experiment",
                "noisy-neighbor",
                "--repeat",
                str(args.repeat),
                "--seed",
                str(args.seed),
                "--disk-dir",
                tmp,
                "-o",
                str(out),
                "--",
                *WORKLOAD,
            ],
            cwd=REPO,
            env={**os.environ, "COLUMNS": "200"},
        )
        if proc.returncode != 0:
            raise SystemExit(f"the experiment failed (exit {proc.returncode})")
        summary = json.loads((out / "summary.json").read_text())
    cpu, pinned = summary["cpu"], summary["pinned"]
    v = cpu["vs_baseline"]
    lost = lambda s: s["preempted_ms"] + s["runqueue_ms"]  # noqa: E731
    checks = [
        (
            f"cpu: {speed(v['slowdown_percent'])} than baseline, 95% interval "
            f"{speed_interval(v['slowdown_ci_low'], v['slowdown_ci_high'])}",
            v["slowdown_ci_low"] > 0,
            "the interval excludes zero",
        ),
        (f"cpu top culprit: {cpu['top_culprit']}", str(cpu["top_culprit"]).startswith("stress-ng"), "stress-ng named"),
        (
            f"preempted: pinned {pinned['preempted_ms']:.0f} ms, cpu {cpu['preempted_ms']:.0f} ms",
            pinned["preempted_ms"] < cpu["preempted_ms"],
            "pinning loses less to preemption",
        ),
        (
            f"runnable but off the CPU (preempted + run-queue wait): pinned {lost(pinned):.0f} ms, "
            f"cpu {lost(cpu):.0f} ms",
            lost(pinned) < lost(cpu),
            "pinning loses less to the scheduler",
        ),
    ]
    for text, ok, what in checks:
        print(f"{'met' if ok else 'NOT met':>8}: {what}: {text}")


if __name__ == "__main__":
    main()
