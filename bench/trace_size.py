"""bench/trace_size: what a recording costs on disk and in the recorder's own
CPU, trace format 1 (one wide Arrow IPC stream, `--format 1`) against format 2
(per-kind Parquet segments, the default), side by side in one run.

Two recordings, each made in both formats, one after the other in every round
(the order alternates by round):
  launch-bound: cudasim decode made launch-bound as in bench/recorder_overhead.py
    (zero-length kernels, 100 us of host work a token), 12,400 tokens by default:
    ~5.9M launches, ~6.2M events in all;
  storm --system: workloads/storm's thread pairs ping-ponging over pipes,
    recorded with --system: switches and wakeups of every task, no launches.
For each: rows written (the recorder's closing summary), bytes on disk (the
file, or every file of the directory), bytes an event, and the CPU time of the
recorder's writer thread (decoding records and writing the trace; the closing
summary's cpu_ns.writer) and of its drain thread (reading the ring buffer), per
million events. Each trace is read back and must hold the rows it says.
Goals (issue #13): <= 16 bytes an event on the launch-bound recording in
format 2, and less writer CPU per event than format 1. Needs root (BPF).

    .venv/bin/python bench/trace_size.py [--rounds 1] [--tokens 12400] [--storm-seconds 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDER = REPO / "recorder" / "target" / "release" / "launchgap-record"
CUDASIM = REPO / "workloads" / "cudasim" / "build" / "bin" / "cudasim"
STORM = REPO / "workloads" / "storm" / "build" / "storm"
# as bench/recorder_overhead.py: zero-length kernels, so launching is all the decode does
LAUNCH_BOUND = ["--kernel-us", "0:0", "--host-us", "100"]
GOAL_BYTES_PER_EVENT = 16.0
FORMATS = (1, 2)


def size_on_disk(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def record(out: Path, version: int, command: list[str], system: bool) -> dict:
    from launchgap.trace import Event, read_trace

    flags = ["--system"] if system else []
    proc = subprocess.run(
        [str(RECORDER), "-q", "--format", str(version), *flags, "-o", str(out), "--", *command],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"trace_size: recording failed: {proc.stderr.strip()}")
    trace = read_trace(out)
    summary = trace.end
    rows = sum(summary["rows"].values())
    read_back = sum(trace.count(kind) for kind in Event)
    if read_back != rows or trace.damage:
        raise SystemExit(f"trace_size: {out} holds {read_back:,} rows, the recorder says {rows:,} ({trace.damage})")
    result = {
        "format": version,
        "events": rows,
        "bytes": size_on_disk(out),
        "writer_ns": summary["cpu_ns"]["writer"],
        "drain_ns": summary["cpu_ns"]["drain"],
        "seconds": (summary["end_ns"] - trace.meta["start_ns"]) / 1e9,
        "rows": summary["rows"],
    }
    result["bytes_per_event"] = result["bytes"] / rows
    result["writer_ms_per_m"] = result["writer_ns"] / rows * 1e6 / 1e6
    result["drain_ms_per_m"] = result["drain_ns"] / rows * 1e6 / 1e6
    return result


def workloads(args) -> dict[str, tuple[list[str], bool]]:
    return {
        "launch-bound": ([str(CUDASIM), "decode", "--quiet", *LAUNCH_BOUND, "--tokens", str(args.tokens)], False),
        "storm --system": ([str(STORM), "--pairs", "2", "--seconds", str(args.storm_seconds)], True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=12_400)
    parser.add_argument("--storm-seconds", type=float, default=2.0)
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("trace_size: needs root (BPF)")
    runs: dict[str, dict[int, list[dict]]] = {name: {v: [] for v in FORMATS} for name in workloads(args)}
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        for round_ in range(args.rounds):
            for name, (command, system) in workloads(args).items():
                order = FORMATS if round_ % 2 == 0 else FORMATS[::-1]
                for version in order:
                    out = Path(tmp) / f"r{round_}-{name.split()[0]}-f{version}.lg"
                    run = record(out, version, command, system)
                    runs[name][version].append(run)
                    subprocess.run(["rm", "-rf", str(out)], check=True)
                    print(
                        f"round {round_ + 1} {name:<15} format {version}: {run['events']:>10,} events "
                        f"{run['bytes']:>14,} bytes {run['bytes_per_event']:>8.2f} B/event, writer "
                        f"{run['writer_ms_per_m']:>7.1f} ms CPU per M events, drain {run['drain_ms_per_m']:>6.1f}",
                        flush=True,
                    )
    print()
    print(
        f"{'recording':<16} {'format':>6} {'events':>11} {'bytes':>15} {'B/event':>9} {'writer ms/M ev':>15} "
        f"{'drain ms/M ev':>14}"
    )
    verdicts = []
    for name, by_format in runs.items():
        med = {
            v: {
                k: statistics.median(r[k] for r in rs)
                for k in ("events", "bytes", "bytes_per_event", "writer_ms_per_m", "drain_ms_per_m")
            }
            for v, rs in by_format.items()
        }
        for v in FORMATS:
            m = med[v]
            print(
                f"{name:<16} {v:>6} {m['events']:>11,.0f} {m['bytes']:>15,.0f} {m['bytes_per_event']:>9.2f} "
                f"{m['writer_ms_per_m']:>15.1f} {m['drain_ms_per_m']:>14.1f}"
            )
        size_ratio = med[1]["bytes_per_event"] / med[2]["bytes_per_event"]
        cpu_ratio = med[2]["writer_ms_per_m"] / med[1]["writer_ms_per_m"]
        print(
            f"{name:<16} format 2 is {size_ratio:.0f}x smaller an event; its writer takes {cpu_ratio:.2f}x "
            f"format 1's CPU an event"
        )
        if name == "launch-bound":
            verdicts.append(
                f"goal <= {GOAL_BYTES_PER_EVENT:g} bytes an event (format 2, launch-bound): "
                f"{med[2]['bytes_per_event']:.2f}: {'met' if med[2]['bytes_per_event'] <= GOAL_BYTES_PER_EVENT else 'NOT met'}"
            )
        verdicts.append(
            f"goal less writer CPU an event than format 1 ({name}): {cpu_ratio:.2f}x: "
            f"{'met' if cpu_ratio < 1 else 'NOT met'}"
        )
    print()
    for line in verdicts:
        print(line)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
