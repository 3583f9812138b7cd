"""bench/profiler_trace: reading a PyTorch profiler trace of 100 MB of JSON (about 6 MB gzipped),
made from the real ones in shared/real-traces/kineto, in time and peak memory.

The big file is cuda_graphs.json.gz's events written again and again, each copy moved later in
time (its events' ts) and given new correlation ids, until the JSON holds SIZE megabytes, then
gzipped. It is read in a fresh process each time (peak RSS: its VmHWM; getrusage's would count the
forked parent's pages), by:
  launchgap: trace/kineto.py read_profiler_trace (a numpy structural scan splits the stream into
    events, polars decodes them a batch at a time);
  ijson (yajl2_c), where installed: the streaming parser the issue suggested, item by item, only
    counting the events it would keep, so its figure is a floor of what it would cost.

    .venv/bin/python bench/profiler_trace.py [--megabytes 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "real-traces" / "kineto" / "cuda_graphs.json.gz"

READ = """
import sys, time
start = time.perf_counter()
from launchgap.trace.kineto import read_profiler_trace
run = read_profiler_trace(sys.argv[1])
took = time.perf_counter() - start
peak = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(took, peak, run.events, run.gpu.height, run.calls.height)
"""

READ_IJSON = """
import gzip, sys, time
start = time.perf_counter()
import ijson
events = gpu = 0
with gzip.open(sys.argv[1], "rb") as f:
    for event in ijson.items(f, "traceEvents.item"):
        events += 1
        gpu += event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
took = time.perf_counter() - start
peak = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(took, peak, events, gpu, 0)
"""


def make_big(path: Path, megabytes: int) -> tuple[int, int]:
    """The real trace's events, copied until the JSON holds MEGABYTES MB: (JSON bytes, gzipped bytes)."""
    source = json.load(gzip.open(SOURCE))
    events = source.pop("traceEvents")
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float)))
    first = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    texts, size, copy = [], 0, 0
    while size < megabytes * 1_000_000:
        shift = copy * (span - first + 1000)
        for e in events:
            moved = dict(e)
            if isinstance(moved.get("ts"), (int, float)):
                moved["ts"] = moved["ts"] + shift
            if isinstance(moved.get("args"), dict) and "correlation" in moved["args"]:
                moved["args"] = {**moved["args"], "correlation": moved["args"]["correlation"] + copy * 10_000_000}
            text = "  " + json.dumps(moved)
            texts.append(text)
            size += len(text) + 2
        copy += 1
    body = json.dumps(source)[:-1] + ', "traceEvents": [\n' + ",\n".join(texts) + "\n]}\n"
    data = body.encode()
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(data)
    return len(data), path.stat().st_size


def run(script: str, path: Path) -> tuple[float, int, int, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"},
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr.strip().splitlines()[-1])
    took, rss, events, gpu, calls = out.stdout.split()
    return float(took), int(rss), int(events), int(gpu), int(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not SOURCE.is_file():
        raise SystemExit(f"profiler_trace: {SOURCE} is absent (shared/real-traces beside the repository)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        path = Path(tmp) / "big.json.gz"
        json_bytes, gz_bytes = make_big(path, args.megabytes)
        try:
            import ijson  # noqa: F401

            readers = {"launchgap": READ, "ijson (yajl2_c)": READ_IJSON}
        except ImportError:
            readers = {"launchgap": READ}
        results = {name: [] for name in readers}
        for _ in range(args.rounds):
            for name, script in readers.items():
                results[name].append(run(script, path))
    print(
        f"a PyTorch profiler trace of {json_bytes / 1e6:.0f} MB of JSON ({gz_bytes / 1e6:.1f} MB gzipped), "
        f"from cuda_graphs.json.gz; {args.rounds} rounds, medians; a fresh process each"
    )
    for name, rows in results.items():
        took = statistics.median(r[0] for r in rows)
        peak = statistics.median(r[1] for r in rows)
        events, gpu = rows[0][2], rows[0][3]
        print(f"  {name:<16} {took:6.2f} s  peak {peak / 2**20:6.0f} MiB  ({events:,} events, {gpu:,} GPU)")


if __name__ == "__main__":
    main()
