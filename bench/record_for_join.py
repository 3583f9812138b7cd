"""bench/record_for_join: what recording costs a launch-bound decode when the GPU side will come from
the PyTorch profiler's trace (`record --no-cuda-probes`, then `report --kineto`), beside recording with
the CUDA probes and with --gpu-activity (cudasim's CUPTI stand-in).

cudasim's launch-bound decode (zero-length kernels: every microsecond added to a launch shows), run
interleaved round by round (order reversed every other round): untraced; `launchgap-record
--no-cuda-probes` (scheduling and interrupts only); `launchgap-record` (the launch and sync probes too);
`launchgap-record --gpu-activity`. Tokens a second, and the median launch-to-launch interval inside a
token's burst from cudasim's own log, each the median of the rounds; the cost is each against untraced.

    sudo .venv/bin/python bench/record_for_join.py [--rounds 7] [--tokens 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.recorder_overhead import LAUNCH_BOUND, LAUNCHES_PER_TOKEN, median_launch_interval_ns  # noqa: E402

CUDASIM = REPO / "workloads" / "cudasim" / "build" / "bin" / "cudasim"
CUPTI = REPO / "workloads" / "cudasim" / "build" / "lib" / "libcupti.so.12"
RECORDER = REPO / "recorder" / "target" / "release" / "launchgap-record"
MODES = {
    "untraced": None,
    "record --no-cuda-probes": ["--no-cuda-probes"],
    "record": [],
    "record --gpu-activity": ["--gpu-activity", "--cupti", str(CUPTI)],
}


def run_once(mode: str, tokens: int, workdir: Path) -> dict:
    truth = workdir / "truth.json"
    workload = [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens), *LAUNCH_BOUND, "--truth", str(truth)]
    flags = MODES[mode]
    command = (
        workload if flags is None else [str(RECORDER), "-q", *flags, "-o", str(workdir / "run.lg"), "--", *workload]
    )
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if "tok/s:" not in proc.stdout:
        raise SystemExit(f"{mode} run failed: {proc.stderr.strip()}")
    return {
        "tokens_per_s": float(proc.stdout.split("tok/s:")[1].split()[0]),
        "interval_ns": median_launch_interval_ns(json.loads(truth.read_text())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=300)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("record_for_join: needs root (BPF)")
    order = list(MODES)
    results: dict[str, list[dict]] = {m: [] for m in order}
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        work = Path(tmp)
        run_once("untraced", args.tokens, work)  # warm-up: page cache, CPU frequency
        for r in range(args.rounds):
            for mode in order if r % 2 == 0 else list(reversed(order)):
                results[mode].append(run_once(mode, args.tokens, work))
            print(
                f"round {r + 1}/{args.rounds}: "
                + "  ".join(f"{m} {results[m][-1]['tokens_per_s']:.0f} tok/s" for m in order),
                file=sys.stderr,
            )
    print(
        f"cudasim decode (launch-bound: --kernel-us 0:0), {args.tokens} tokens x {LAUNCHES_PER_TOKEN} launches, "
        f"{args.rounds} interleaved rounds (medians)"
    )
    tps = {m: statistics.median(x["tokens_per_s"] for x in results[m]) for m in order}
    interval = {m: statistics.median(x["interval_ns"] for x in results[m]) for m in order}
    print(f"  {'mode':<24} {'tok/s':>8} {'cost':>7} {'launch interval':>16} {'added ns/launch':>16}")
    for m in order:
        cost = 100.0 * (1 - tps[m] / tps["untraced"])
        print(
            f"  {m:<24} {tps[m]:>8.1f} {cost:>6.1f}% {interval[m]:>13.0f} ns "
            f"{interval[m] - interval['untraced']:>16.0f}"
        )


if __name__ == "__main__":
    main()
