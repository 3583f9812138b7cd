"""bench/analysis_speed: how fast `launchgap report` analyses a trace.

Generates traces of 1M and 10M events shaped like a noisy cudasim run
(bench/synthetic_trace.py) and times the whole report (read + analysis +
terminal rendering). As the peer, times the study tool's approach on the 1M
trace: pandas, and for each pair of consecutive launches a boolean filter
over the whole switch table to find the switches between them. The peer's
cost per pair is constant, so it is timed on a sample of pairs and
extrapolated to all of them (it would take hours otherwise); the sample size
is printed. Targets: 10M events in under 10 s; at least 20x the peer's
events per second.

    .venv/bin/python bench/analysis_speed.py [--sizes 1000000 10000000] [--peer-pairs 2000]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic_trace  # noqa: E402
from rich.console import Console  # noqa: E402

from launchgap.analysis.report import build_report  # noqa: E402
from launchgap.trace import read_trace  # noqa: E402
from launchgap.views.terminal import render  # noqa: E402


def time_report(path: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    report = build_report(read_trace(path))
    render(report, Console(file=io.StringIO(), width=160))
    return time.perf_counter() - start, report


def time_peer(path: Path, sample_pairs: int) -> tuple[float, int]:
    """The study tool's launch-pair analysis: seconds for all pairs (extrapolated), pairs."""
    import pandas as pd  # the dev extra

    start = time.perf_counter()
    launches = pd.read_parquet(path / "launch", columns=["ts_ns"]).sort_values("ts_ns")["ts_ns"].to_numpy()
    switches = pd.read_parquet(path / "switch", columns=["ts_ns"])
    load_s = time.perf_counter() - start
    pairs = len(launches) - 1
    sample = min(sample_pairs, pairs)
    start = time.perf_counter()
    with_switch = 0
    for i in range(sample):
        a, b = launches[i], launches[i + 1]
        between = switches[(switches["ts_ns"] > a) & (switches["ts_ns"] < b)]
        with_switch += not between.empty
    per_pair = (time.perf_counter() - start) / sample
    return load_s + per_pair * pairs, sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--peer-pairs", type=int, default=2000)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"synthetic-{size}.lg"
            events = synthetic_trace.write(path, size)
            seconds, report = time_report(path)
            results[size] = (events, seconds)
            print(f"launchgap report: {events:>11,} events in {seconds:6.2f} s = {events / seconds:>12,.0f} events/s "
                  f"({report['overview']['launches']:,} launches, {report['gaps']['count']:,} gaps classified)")
            if size == min(args.sizes):
                peer_s, sample = time_peer(path, args.peer_pairs)
                print(f"peer (pandas, filter per pair): {events:>11,} events in {peer_s:6.1f} s = "
                      f"{events / peer_s:>12,.0f} events/s (timed on {sample:,} pairs, extrapolated)")
                print(f"ratio on {events:,} events: launchgap is {peer_s / seconds:,.0f}x the peer's events per "
                      f"second (target: at least 20x)")
        biggest = max(results)
        print(f"{results[biggest][0]:,} events in {results[biggest][1]:.2f} s (target: under 10 s)")


if __name__ == "__main__":
    main()
