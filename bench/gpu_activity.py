"""bench/gpu_activity: what recording GPU activity (record --gpu-activity) adds to a
launch-bound workload, side by side with recording without it, and what the collector
itself spends.

cudasim's launch-bound decode (zero-length kernels: every microsecond added to a launch
shows) runs, interleaved round by round, in four ways:
  untraced;
  collector: the CUPTI collector injected (CUDA_INJECTION64_PATH, as the recorder does)
    with cudasim's CUPTI stand-in, and no recorder: what CUPTI and the collector cost alone;
  record: `launchgap-record` (scheduling and IRQ tracing on), no GPU activity;
  record+gpu: `launchgap-record --gpu-activity`.
The cost per launch is the median launch-to-launch interval inside a token's burst
(cudasim's own log) minus the untraced one. The collector's own CPU (turning CUPTI's
buffers into channel frames and writing them) is what its `stopped` row states, per
million kernels.

The shape measured: cudasim's stand-in libcupti records each activity synchronously in
the launching thread, under one lock, into the collector's buffers. NVIDIA's CUPTI
records kernels from the GPU's side and costs what it costs on the node (users report
10-70% of vLLM-like throughput with every kind on): the per-launch figures here are
the stand-in's and the recorder's, not NVIDIA's; the collector's CPU per record is ours
on any CUPTI.

    .venv/bin/python bench/gpu_activity.py [--rounds 5] [--tokens 300]
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
MODES = ["untraced", "collector", "record", "record+gpu"]


def write_collector(workdir: Path) -> Path:
    """The collector built into the recorder, the very library it injects."""
    path = workdir / "liblaunchgap-cupti.so"
    proc = subprocess.run([str(RECORDER), "--write-collector", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"gpu_activity: cannot get the collector: {proc.stderr.strip()}")
    return path


def run_once(mode: str, tokens: int, workdir: Path, collector: Path) -> dict:
    truth = workdir / f"truth-{mode}.json"
    workload = [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens), *LAUNCH_BOUND, "--truth", str(truth)]
    env = dict(os.environ)
    trace = workdir / "bench.lg"
    channel = workdir / "channel"
    if mode == "untraced":
        command = workload
    elif mode == "collector":
        channel.mkdir(exist_ok=True)
        for old in channel.iterdir():
            old.unlink()
        env.update(CUDA_INJECTION64_PATH=str(collector), LAUNCHGAP_GPU_CHANNEL=str(channel), LAUNCHGAP_CUPTI=str(CUPTI))
        command = workload
    elif mode == "record":
        command = [str(RECORDER), "-q", "-o", str(trace), "--", *workload]
    else:
        command = [str(RECORDER), "-q", "-o", str(trace), "--gpu-activity", "--", *workload]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if "tok/s:" not in proc.stdout:
        raise SystemExit(f"{mode} run failed: {proc.stderr.strip()}")
    data = json.loads(truth.read_text())
    out = {
        "tokens_per_s": float(proc.stdout.split("tok/s:")[1].split()[0]),
        "interval_ns": median_launch_interval_ns(data),
        "launches": data["totals"]["launches"],
    }
    if mode == "record+gpu":
        from launchgap.analysis.gpu_activity import collector_states
        from launchgap.trace import read_trace

        stopped = [s for s in collector_states(read_trace(trace)) if s.state == "stopped"]
        out["collector_cpu_ns"] = sum(s.detail.get("cpu_ns", 0) for s in stopped)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=300)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("gpu_activity: needs root (BPF)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        work = Path(tmp)
        collector = write_collector(work)
        results: dict[str, list[dict]] = {m: [] for m in MODES}
        run_once("untraced", args.tokens, work, collector)  # warm-up: page cache, CPU frequency
        for r in range(args.rounds):
            for mode in MODES if r % 2 == 0 else list(reversed(MODES)):
                results[mode].append(run_once(mode, args.tokens, work, collector))
            print(
                f"round {r + 1}/{args.rounds}: "
                + "  ".join(f"{m} {results[m][-1]['interval_ns']:.0f} ns" for m in MODES),
                file=sys.stderr,
            )

    print(
        f"cudasim decode (launch-bound: --kernel-us 0:0), {args.tokens} tokens x {LAUNCHES_PER_TOKEN} launches, "
        f"{args.rounds} interleaved rounds (medians); cost per launch from the median launch interval inside bursts; "
        f"CUPTI: cudasim's stand-in"
    )
    interval = {m: statistics.median(x["interval_ns"] for x in results[m]) for m in MODES}
    print(f"  {'mode':<11} {'tok/s':>8} {'launch interval':>16} {'added ns/launch':>16}")
    for m in MODES:
        tps = statistics.median(x["tokens_per_s"] for x in results[m])
        print(f"  {m:<11} {tps:>8.1f} {interval[m]:>13.0f} ns {interval[m] - interval['untraced']:>16.0f}")
    added_by_gpu = interval["record+gpu"] - interval["record"]
    print(
        f"  --gpu-activity adds {added_by_gpu:.0f} ns a launch to recording "
        f"({interval['record+gpu'] - interval['untraced']:.0f} against {interval['record'] - interval['untraced']:.0f}"
        f" ns); the collector with the stand-in alone adds {interval['collector'] - interval['untraced']:.0f} ns"
    )
    per_million = statistics.median(x["collector_cpu_ns"] / x["launches"] * 1e6 / 1e9 for x in results["record+gpu"])
    print(f"  the collector's own CPU: {per_million:.3f} s per million kernels (converting and writing their records)")


if __name__ == "__main__":
    main()
