"""bench/render: a synthetic `--system` trace of 1M scheduling slices on 64
CPUs, drawn by `launchgap timeline` as PNG and as HTML, each timed end to
end (reading the trace, building the slices, decimating, drawing, writing).

Targets (issue #6): PNG under 5 s, HTML under 10 s and small enough to open
in a browser. The HTML carries every slice (it is decimated by pixel as it
is drawn, at every zoom), so its size grows with the slice count: printed.

    .venv/bin/python bench/render.py [--slices 1000000] [--cpus 64]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from launchgap.trace import Event
from launchgap.trace.writer import write_trace

REPO = Path(__file__).resolve().parent.parent
START_NS = 1_000_000_000
TASKS = 512  # tasks that wander over the CPUs
IDLE_SHARE = 0.2  # one switch in five goes to idle


def synthetic_system_trace(path: Path, slices: int, cpus: int, seed: int = 1) -> float:
    """Per CPU, back-to-back run slices of random tasks (exponential lengths,
    mean 200 us), some of them idle. Returns the trace's length in seconds."""
    rng = np.random.default_rng(seed)
    per_cpu = slices // cpus
    length = rng.exponential(200_000, size=(cpus, per_cpu)).astype(np.int64) + 1_000
    ts = START_NS + np.cumsum(length, axis=1)
    nxt = rng.integers(1, TASKS + 1, size=(cpus, per_cpu))
    nxt[rng.random((cpus, per_cpu)) < IDLE_SHARE] = 0
    prev = np.concatenate([np.zeros((cpus, 1), np.int64), nxt[:, :-1]], axis=1)
    cpu = np.repeat(np.arange(cpus), per_cpu)

    def comm(tid):
        return (
            pl.when(tid == 0)
            .then(pl.lit("swapper"))
            .otherwise(  # noqa: E731
                pl.format("worker-{}", tid % 16)
            )
        )

    frame = (
        pl.DataFrame({"ts_ns": ts.ravel(), "cpu": cpu, "tid": prev.ravel(), "next_tid": nxt.ravel()})
        .with_columns(
            pl.col("tid").alias("pid"),
            pl.col("next_tid").alias("next_pid"),
            comm(pl.col("tid")).alias("comm"),
            comm(pl.col("next_tid")).alias("next_comm"),
            pl.lit(0, pl.Int64).alias("prev_state"),
            pl.lit(False).alias("voluntary"),
        )
        .sort("ts_ns")
    )
    end_ns = int(ts.max()) + 1
    meta = {
        "start_ns": START_NS,
        "mode": "system",
        "host": {"hostname": "synthetic", "kernel_release": "synthetic"},
        "topology": {"count": cpus, "cpus": [{"cpu": c, "package": c % 2, "core": c // 2} for c in range(cpus)]},
    }
    write_trace(path, {Event.SWITCH: frame}, meta, {"end_ns": end_ns, "stop_reason": "bench", "lost_events": 0})
    return (end_ns - START_NS) / 1e9


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{proc.stderr}")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--cpus", type=int, default=64)
    args = parser.parse_args()
    launchgap = [sys.executable, "-m", "launchgap.cli"]
    with tempfile.TemporaryDirectory(prefix="launchgap-render-") as tmp:
        trace = Path(tmp) / "system.lg"
        seconds = synthetic_system_trace(trace, args.slices, args.cpus)
        size = sum(p.stat().st_size for p in trace.rglob("*") if p.is_file())
        print(
            f"synthetic --system trace: {args.slices:,} switches on {args.cpus} CPUs over {seconds:.1f} s "
            f"({size / 1e6:.1f} MB)"
        )
        png, html = Path(tmp) / "cores.png", Path(tmp) / "cores.html"
        png_s = timed([*launchgap, "timeline", str(trace), "-o", str(png), "--socket-order"])
        html_s = timed([*launchgap, "timeline", str(trace), "-o", str(html), "--socket-order"])
        print(
            f"PNG:  {png_s:5.2f} s, {png.stat().st_size / 1e6:5.1f} MB (target: under 5 s)  "
            f"{'met' if png_s < 5 else 'NOT met'}"
        )
        print(
            f"HTML: {html_s:5.2f} s, {html.stat().st_size / 1e6:5.1f} MB (target: under 10 s)  "
            f"{'met' if html_s < 10 else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
