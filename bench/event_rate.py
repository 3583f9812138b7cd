"""bench/event_rate: how many events per second the recorder sustains, and what it loses.

A context-switch storm (workloads/storm: thread pairs ping-ponging over
pipes, each hop a wakeup and a switch) is traced in target mode and in
--system mode, spread over the CPUs and pinned to one (the densest case).
Prints events recorded per second, lost events, and the storm's own round
trips per second traced and untraced. Target: no loss at 500k events/s on
this 2-core machine. Needs root.

    .venv/bin/python bench/event_rate.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STORM = REPO / "workloads" / "storm" / "build" / "storm"
RECORDER = REPO / "recorder" / "target" / "release" / "launchgap-record"


def storm_rate(output: str) -> float:
    return float(output.split("(")[1].split("/s")[0])


def run(mode: str, pinned: bool, pairs: int, seconds: float, workdir: Path) -> dict:
    from launchgap.trace import Event, read_trace

    cpu = sorted(os.sched_getaffinity(0))[0]
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if pinned else None
    storm = [str(STORM), "--pairs", str(pairs), "--seconds", str(seconds)]
    untraced = subprocess.run(storm, capture_output=True, text=True, preexec_fn=pin, check=True)
    out = workdir / f"{mode}-{pinned}-{pairs}.lg"
    flags = ["--system"] if mode == "system" else []
    traced = subprocess.run(
        [str(RECORDER), "-q", "-o", str(out), *flags, "--", *storm], capture_output=True, text=True, preexec_fn=pin
    )
    if traced.returncode != 0:
        raise SystemExit(f"recording failed: {traced.stderr.strip()}")
    trace = read_trace(out)
    events = sum(trace.count(kind) for kind in Event if kind is not Event.LOST)
    duration = (trace.end["end_ns"] - trace.meta["start_ns"]) / 1e9
    return {
        "events_per_s": events / duration,
        "events": events,
        "lost": trace.end["lost_events"],
        "storm_untraced": storm_rate(untraced.stdout),
        "storm_traced": storm_rate(traced.stdout),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("event_rate: needs root (BPF)")
    print(
        f"{'mode':<8} {'storm':<9} {'events/s':>10} {'events':>10} {'lost':>8} "
        f"{'round trips/s untraced':>23} {'traced':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        for mode in ("target", "system"):
            # one pair on one CPU (densest), then two and four pairs over all CPUs (most events)
            for pinned, pairs in ((True, 1), (False, 2), (False, 4)):
                r = run(mode, pinned, pairs, args.seconds, Path(tmp))
                where = f"{pairs}p {'1 CPU' if pinned else 'all'}"
                print(
                    f"{mode:<8} {where:<9} {r['events_per_s']:>10.0f} "
                    f"{r['events']:>10} {r['lost']:>8} {r['storm_untraced']:>23.0f} {r['storm_traced']:>8.0f}"
                )


if __name__ == "__main__":
    main()
