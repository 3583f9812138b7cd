"""bench/analysis_speed: what `launchgap report` costs, in time and peak
memory (the max RSS of a fresh `launchgap report --json` process, read with
/usr/bin/time), side by side in one run with what a recording costs
(bench/trace_size: bytes an event and writer CPU, format 1 against 2).

  real launch-bound: cudasim decode made launch-bound, 12,400 tokens (~5.9M
    launches, as bench/trace_size records it), recorded in format 1 and 2;
    the report of the format-2 recording. Goal: peak <= 1 GiB.
  synthetic: launch-dominated traces shaped like a noisy cudasim decode
    (bench/synthetic_trace.py, format 2) of 6M and 100M events. Goal at 100M:
    under 60 s and peak <= 2 GiB on this 2-CPU machine.
  storm --system: workloads/storm recorded system-wide by launchgap, and the
    same storm recorded by `perf sched record`; `launchgap report` against
    `perf sched timehist` on them, in events a second (each tool's own
    events; each the median of three runs, the tools taking turns). Goal: at
    least perf's events a second.

The load average is printed at the start and the end: the machine is shared.
Needs root (BPF, perf).

    sudo .venv/bin/python bench/analysis_speed.py [--sizes 6000000 100000000] [--tokens 12400] [--storm-seconds 2]
        [--peer-pairs 500] [--skip-recording] [--storm-only] [--storm-repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic_trace  # noqa: E402
import trace_size  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
GIB = 1 << 30
GOALS = {"real": (None, 1 * GIB), "100M": (60.0, 2 * GIB)}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measured(argv: list[str]) -> tuple[float, int, str]:
    """Runs ARGV under /usr/bin/time: wall seconds, peak RSS in bytes, stdout."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"analysis_speed: {' '.join(argv)} failed: {proc.stderr.strip()[-2000:]}")
    seconds, kib = proc.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kib) * 1024, proc.stdout


def compile_bytecode() -> None:
    """Writes launchgap's bytecode, as installing a package does: under PYTHONDONTWRITEBYTECODE (set in
    some shells and CI images) an editable checkout has none, and every timed report would then spend
    ~0.1 s compiling launchgap's own modules, a cost no installed copy pays."""
    subprocess.run(
        [str(PYTHON), "-m", "compileall", "-q", str(REPO / "python" / "launchgap")],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def report_cost(path: Path) -> tuple[float, int]:
    seconds, peak, _ = measured([str(PYTHON), "-m", "launchgap.cli", "report", "--json", str(path)])
    return seconds, peak


def events_in(path: Path) -> int:
    from launchgap.trace import Event, read_trace

    trace = read_trace(path)
    return sum(trace.count(kind) for kind in Event)


def time_peer(path: Path, sample_pairs: int) -> tuple[float, int]:
    """The study tool's launch-pair analysis (pandas, a boolean filter over the whole switch table for
    each pair of consecutive launches): seconds for all pairs, extrapolated from SAMPLE_PAIRS, and the
    sample. Its cost per pair is constant; all pairs would take hours."""
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
        with_switch += not switches[(switches["ts_ns"] > a) & (switches["ts_ns"] < b)].empty
    return load_s + (time.perf_counter() - start) / sample * pairs, sample


def storm(tmp: Path, seconds: float, repeats: int) -> list[tuple[str, int, float, int]]:
    """(tool, events, seconds, peak) for launchgap report and perf sched timehist on a storm each recorded:
    each tool's median of REPEATS runs, the two tools taking turns, so a burst of load elsewhere on the
    host falls on both and one slow run decides nothing."""
    command = [str(trace_size.STORM), "--pairs", "2", "--seconds", str(seconds)]
    ours = tmp / "storm.lg"
    trace_size.record(ours, 2, command, system=True)
    perf_data = tmp / "storm.perf.data"
    proc = subprocess.run(
        ["perf", "sched", "record", "-o", str(perf_data), "--", *command], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"analysis_speed: perf sched record failed: {proc.stderr.strip()[-500:]}")
    counted = subprocess.run(["perf", "report", "-i", str(perf_data), "--stats"], capture_output=True, text=True).stdout
    # "SAMPLE events:    4283690  (99.9%)": the sched tracepoints' records (the first table is the
    # aggregate; the ones after it repeat the counts)
    perf_events = int(re.search(r"^\s*SAMPLE events:\s+(\d+)", counted, re.M).group(1))
    # both recordings written back before either tool is timed: perf.data is ~0.7 GB, and its writeback
    # (kernel threads, on these same 2 CPUs) would otherwise fall on whichever runs first
    os.sync()
    ours_runs, perf_runs = [], []
    for _ in range(repeats):
        ours_runs.append(report_cost(ours))
        perf_runs.append(measured(["perf", "sched", "timehist", "-i", str(perf_data)])[:2])
    print(
        "storm runs (s): launchgap report "
        + ", ".join(f"{s:.2f}" for s, _ in ours_runs)
        + "; perf sched timehist "
        + ", ".join(f"{s:.2f}" for s, _ in perf_runs),
        flush=True,
    )
    (ours_s, ours_peak), (perf_s, perf_peak) = (sorted(runs)[len(runs) // 2] for runs in (ours_runs, perf_runs))
    return [
        ("launchgap report", events_in(ours), ours_s, ours_peak),
        ("perf sched timehist", perf_events, perf_s, perf_peak),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[6_000_000, 100_000_000])
    parser.add_argument("--tokens", type=int, default=12_400)
    parser.add_argument("--storm-seconds", type=float, default=2.0)
    parser.add_argument(
        "--storm-repeats",
        type=int,
        default=3,
        help="runs of each tool on the storm, taking turns; the median of each is compared",
    )
    parser.add_argument("--skip-recording", action="store_true", help="synthetic traces only (no root needed)")
    parser.add_argument(
        "--storm-only",
        action="store_true",
        help="only the storm against perf sched (a quick check; the recorded run is the whole bench)",
    )
    parser.add_argument(
        "--peer-pairs",
        type=int,
        default=0,
        help="also time the study tool's approach on the smallest synthetic trace, on this many "
        "launch pairs (extrapolated; the earlier target: launchgap at least 20x its events/s)",
    )
    args = parser.parse_args()
    print(f"load average at start: {load()}", flush=True)
    compile_bytecode()
    rows = []
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.storm_only:
            args.sizes = []
        if not args.skip_recording and os.geteuid() != 0:
            raise SystemExit("analysis_speed: recording needs root (or pass --skip-recording)")
        if not args.skip_recording and not args.storm_only:
            command = [
                str(trace_size.CUDASIM),
                "decode",
                "--quiet",
                *trace_size.LAUNCH_BOUND,
                "--tokens",
                str(args.tokens),
            ]
            recorded = {}
            for version in trace_size.FORMATS:
                out = tmp / f"launch-bound-f{version}.lg"
                recorded[version] = trace_size.record(out, version, command, system=False)
                r = recorded[version]
                print(
                    f"recorded launch-bound, format {version}: {r['events']:,} events, {r['bytes_per_event']:.2f} "
                    f"B/event, writer {r['writer_ms_per_m']:.1f} ms CPU per M events",
                    flush=True,
                )
                if version == 1:
                    subprocess.run(["rm", "-rf", str(out)], check=True)
            seconds, peak = report_cost(tmp / "launch-bound-f2.lg")
            rows.append(("real launch-bound (f2)", recorded[2]["events"], seconds, peak))
            verdicts.append(
                f"goal real launch-bound report peak <= 1 GiB: {peak / GIB:.2f} GiB: "
                f"{'met' if peak <= GIB else 'NOT met'}"
            )
            print()
            print(f"{'recording':<16} {'format':>6} {'events':>11} {'B/event':>9} {'writer ms/M ev':>15}")
            for version, r in recorded.items():
                print(
                    f"{'launch-bound':<16} {version:>6} {r['events']:>11,} {r['bytes_per_event']:>9.2f} "
                    f"{r['writer_ms_per_m']:>15.1f}"
                )
            print(
                f"format 2 is {recorded[1]['bytes_per_event'] / recorded[2]['bytes_per_event']:.0f}x smaller an "
                f"event; its writer takes {recorded[2]['writer_ms_per_m'] / recorded[1]['writer_ms_per_m']:.2f}x "
                f"format 1's CPU an event",
                flush=True,
            )
            subprocess.run(["rm", "-rf", str(tmp / "launch-bound-f2.lg")], check=True)
        for size in args.sizes:
            path = tmp / f"synthetic-{size}.lg"
            events = synthetic_trace.write(path, size)
            seconds, peak = report_cost(path)
            label = f"synthetic {size / 1e6:g}M"
            rows.append((label, events, seconds, peak))
            if size >= 100_000_000:
                verdicts.append(
                    f"goal 100M-event report under 60 s and peak <= 2 GiB: {seconds:.1f} s, "
                    f"{peak / GIB:.2f} GiB: {'met' if seconds < 60 and peak <= 2 * GIB else 'NOT met'}"
                )
            print(f"{label}: {events:,} events, report {seconds:.1f} s, peak {peak / GIB:.2f} GiB", flush=True)
            if args.peer_pairs and size == min(args.sizes):
                peer_s, sample = time_peer(path, args.peer_pairs)
                rows.append((f"peer (pandas, per pair) {size / 1e6:g}M", events, peer_s, 0))
                print(
                    f"peer on {label}: {peer_s:.1f} s (timed on {sample:,} pairs, extrapolated): launchgap is "
                    f"{peer_s / seconds:,.0f}x its events per second",
                    flush=True,
                )
            subprocess.run(["rm", "-rf", str(path)], check=True)
        if not args.skip_recording:
            pair = storm(tmp, args.storm_seconds, args.storm_repeats)
            rows += [(f"storm: {tool}", n, s, peak) for tool, n, s, peak in pair]
            ours, perf = (n / s for _, n, s, _ in pair)
            verdicts.append(
                f"goal storm events/s at least perf sched timehist's: {ours / 1e6:.2f}M vs "
                f"{perf / 1e6:.2f}M: {'met' if ours >= perf else 'NOT met'}"
            )
    print()
    print(f"{'trace':<34} {'events':>12} {'seconds':>8} {'M events/s':>11} {'peak MiB':>9}")
    for label, events, seconds, peak in rows:
        print(f"{label:<34} {events:>12,} {seconds:>8.2f} {events / seconds / 1e6:>11.2f} {peak / (1 << 20):>9.0f}")
    print()
    for line in verdicts:
        print(line)
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
