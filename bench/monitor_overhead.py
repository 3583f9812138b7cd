"""bench/monitor_overhead: what launchgap-monitor costs a launch-bound workload,
side by side with the recorder, against the same bare probe floor, on both
shapes of driver entry point; and the monitor's own CPU at about 100k launches/s.

Per launch (bench/recorder_overhead's method and helpers): cudasim decode made
launch-bound runs, interleaved round by round, untraced; under the floor (a
bpftrace one-liner counting cuLaunchKernel at its cheapest spot, on a copy of the
driver marked there); under `launchgap-record`; and watched by `launchgap-monitor`
(running beforehand, watching a cgroup the workload runs in, so it touches no
other process on this shared machine: a target's launch runs the same BPF code
whichever way it became a target). The cost per launch is the median launch
interval inside a token's burst (cudasim's own log) minus the untraced one.
Goal: the monitor costs no more than the recorder.

The monitor's own CPU: a longer run at about 100k launches/s (each launch made
longer in the stand-in driver until the rate is about that), watched by the monitor in its default mode (every
CUDA process, with the /proc rescan every 5 s) and scraped once a second
(Prometheus' default is every 15 to 60 s); the CPU time of all the monitor's
threads over the run (/proc/PID/task/*/schedstat), per second, against the same
span idle.

    sudo .venv/bin/python bench/monitor_overhead.py [--rounds 5] [--tokens 300] [--cpu-seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from recorder_overhead import (
    CUDASIM,
    LAUNCH_BOUND,
    LAUNCHES_PER_TOKEN,
    SHAPES,
    cheapest_spot,
    mark_spot,
    median_launch_interval_ns,
    run_once,
)

REPO = Path(__file__).resolve().parent.parent
MONITOR = REPO / "recorder" / "target" / "release" / "launchgap-monitor"
MODES = ["untraced", "floor", "launchgap", "monitor"]
READY = "launchgap-monitor: serving http://"
SCRAPE_EVERY_S = 1.0


def cgroup2_root() -> Path:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return Path(fields[4])
    raise SystemExit("monitor_overhead: needs a cgroup v2 hierarchy to run the workload apart")


class Monitor:
    def __init__(self, *args: str):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([str(MONITOR), "--listen", "127.0.0.1:0", *args], stderr=self.log, text=True)
        deadline = time.monotonic() + 60
        while True:
            self.log.seek(0)
            ready = [line for line in self.log.read().splitlines() if line.startswith(READY)]
            if ready:
                self.url = "http://" + ready[0][len(READY) :].split("/metrics")[0] + "/metrics"
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise SystemExit(f"monitor_overhead: the monitor did not start: {self.log.read()}")
            time.sleep(0.05)

    def scrape(self) -> str:
        with urllib.request.urlopen(self.url, timeout=30) as response:
            return response.read().decode()

    def cpu_seconds(self) -> float:
        """CPU time of all its threads, in ns precision (schedstat's first field; /proc/PID/stat counts ticks)."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                pass  # a thread that just exited
        return total / 1e9

    def stop(self) -> None:
        self.proc.send_signal(2)
        self.proc.wait(timeout=60)
        self.log.close()


def watched_run(library: Path, tokens: int, workdir: Path, cgroup: Path) -> dict:
    monitor = Monitor("--cgroup", str(cgroup), "--cuda-lib", str(library))
    try:
        truth = workdir / "truth-monitor.json"
        workload = [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens), *LAUNCH_BOUND, "--truth", str(truth)]
        env = {**os.environ, "LD_LIBRARY_PATH": str(library.parent)}

        def join() -> None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

        proc = subprocess.run(workload, capture_output=True, text=True, timeout=600, env=env, preexec_fn=join)
        if "tok/s:" not in proc.stdout:
            raise SystemExit(f"monitor run failed: {proc.stderr.strip()}")
        page = monitor.scrape()
    finally:
        monitor.stop()
    data = json.loads(truth.read_text())
    pid = data["processes"][0]["pid"]
    counted = sum(
        float(line.rsplit(" ", 1)[1])
        for line in page.splitlines()
        if line.startswith("launchgap_kernel_launches_total{") and f'pid="{pid}"' in line
    )
    if counted != data["totals"]["launches"]:
        raise SystemExit(
            f"monitor_overhead: the monitor counted {counted:.0f} launches of {data['totals']['launches']}"
        )
    thread = data["processes"][0]["threads"][0]
    return {
        "tokens_per_s": float(proc.stdout.split("tok/s:")[1].split()[0]),
        "interval_ns": median_launch_interval_ns(data),
        "involuntary": thread["kernel_switches"]["nonvoluntary"],
    }


TARGET_LAUNCHES_PER_S = 100_000
DEFAULT_LAUNCH_NS = 2000  # cudasim's --launch-ns default


def about_100k_launches_a_second(library: Path, workdir: Path) -> list[str]:
    """Launch-bound cudasim options for about TARGET_LAUNCHES_PER_S: a probe run at the
    default CPU cost a launch, then each launch made that much longer in the driver."""
    probe = workdir / "probe.json"
    subprocess.run(
        [str(CUDASIM), "decode", "--quiet", "--tokens", "100", *LAUNCH_BOUND, "--truth", str(probe)],
        capture_output=True,
        check=True,
        env={**os.environ, "LD_LIBRARY_PATH": str(library.parent)},
    )
    data = json.loads(probe.read_text())
    per_launch_ns = data["wall_s"] * 1e9 / data["totals"]["launches"]
    launch_ns = max(DEFAULT_LAUNCH_NS, int(DEFAULT_LAUNCH_NS + 1e9 / TARGET_LAUNCHES_PER_S - per_launch_ns))
    return [*LAUNCH_BOUND, "--launch-ns", str(launch_ns)]


def monitor_cpu(library: Path, seconds: float, workdir: Path) -> None:
    """The monitor's CPU a second: idle, then during a run at about 100k launches/s, scraped every second."""
    workload_options = about_100k_launches_a_second(library, workdir)
    tokens = max(100, int(seconds * TARGET_LAUNCHES_PER_S / LAUNCHES_PER_TOKEN))
    monitor = Monitor("--cuda-lib", str(library))
    stop = threading.Event()
    scrape_times: list[float] = []

    def scraper() -> None:
        while not stop.wait(SCRAPE_EVERY_S):
            started = time.monotonic()
            monitor.scrape()
            scrape_times.append(time.monotonic() - started)

    thread = threading.Thread(target=scraper)
    try:
        thread.start()
        cpu0, t0 = monitor.cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        idle = (monitor.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        truth = workdir / "cpu.json"
        cpu0, t0 = monitor.cpu_seconds(), time.monotonic()
        subprocess.run(
            [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens), *workload_options, "--truth", str(truth)],
            capture_output=True,
            check=True,
            env={**os.environ, "LD_LIBRARY_PATH": str(library.parent)},
        )
        busy_s = time.monotonic() - t0
        busy = (monitor.cpu_seconds() - cpu0) / busy_s
    finally:
        stop.set()
        thread.join()
        monitor.stop()
    data = json.loads(truth.read_text())
    launches_per_s = data["totals"]["launches"] / data["wall_s"]
    print(
        f"\nthe monitor's own CPU (default mode: every CUDA process, rescan every 5 s; scraped every "
        f"{SCRAPE_EVERY_S:.0f} s, {len(scrape_times)} scrapes, median {statistics.median(scrape_times) * 1e3:.1f} ms "
        f"each as the client saw it):"
    )
    print(f"  idle, {seconds:.0f} s: {idle * 1e3:.2f} ms of CPU a second ({idle * 100:.2f}% of one CPU)")
    print(
        f"  during {data['totals']['launches']} launches in {data['wall_s']:.1f} s ({launches_per_s / 1e3:.0f}k "
        f"launches/s, cudasim {' '.join(workload_options)}): {busy * 1e3:.2f} ms of CPU a second "
        f"({busy * 100:.2f}% of one CPU)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--cpu-seconds", type=float, default=10.0)
    parser.add_argument("--cpu-only", action="store_true", help="Measure only the monitor's own CPU.")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("monitor_overhead: needs root (BPF)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        work = Path(tmp)
        if args.cpu_only:
            monitor_cpu(mark_spot(SHAPES["frame-pointer"], 0, work / "frame-pointer"), args.cpu_seconds, work)
            return
        cgroup = cgroup2_root() / f"launchgap-bench-{os.getpid()}"
        cgroup.mkdir()
        try:
            spots, libraries = {}, {}
            for shape, library in SHAPES.items():
                spots[shape] = cheapest_spot(library)
                libraries[shape] = mark_spot(library, spots[shape][0], work / shape)
            runs = [(shape, mode) for shape in SHAPES for mode in MODES]
            results: dict[tuple[str, str], list[dict]] = {run: [] for run in runs}
            run_once("untraced", libraries["frame-pointer"], args.tokens, work)  # warm-up
            for r in range(args.rounds):
                for shape, mode in runs if r % 2 == 0 else list(reversed(runs)):
                    if mode == "monitor":
                        result = watched_run(libraries[shape], args.tokens, work, cgroup)
                    else:
                        result = run_once(mode, libraries[shape], args.tokens, work)
                    results[(shape, mode)].append(result)
                print(
                    f"round {r + 1}/{args.rounds}: "
                    + "  ".join(f"{s}/{m} {results[(s, m)][-1]['interval_ns']:.0f} ns" for s, m in runs),
                    file=sys.stderr,
                )
        finally:
            for _ in range(50):
                try:
                    cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)

        print(
            f"cudasim decode, {args.tokens} tokens x {LAUNCHES_PER_TOKEN} launches, {args.rounds} interleaved rounds "
            f"(medians); cost per launch from the median launch interval inside bursts"
        )
        verdicts = {}
        for shape in SHAPES:
            offset, instruction = spots[shape]
            print(f"\n{shape}: cuLaunchKernel floor at +{offset} ({instruction})")
            print(
                f"  {'mode':<10} {'tok/s':>8} {'launch interval':>16} {'added ns/launch':>16} {'invol. switches':>16}"
            )
            interval = {m: statistics.median(x["interval_ns"] for x in results[(shape, m)]) for m in MODES}
            for m in MODES:
                tps = statistics.median(x["tokens_per_s"] for x in results[(shape, m)])
                invol = statistics.median(x["involuntary"] for x in results[(shape, m)])
                print(
                    f"  {m:<10} {tps:>8.1f} {interval[m]:>13.0f} ns {interval[m] - interval['untraced']:>16.0f} "
                    f"{invol:>16.1f}"
                )
            added = {m: interval[m] - interval["untraced"] for m in MODES}
            if added["floor"] > 0 and added["launchgap"] > 0:
                print(
                    f"  monitor / floor: {added['monitor'] / added['floor']:.2f}x; recorder / floor: "
                    f"{added['launchgap'] / added['floor']:.2f}x; monitor / recorder: "
                    f"{added['monitor'] / added['launchgap']:.2f}x"
                )
                verdicts[shape] = added["monitor"] <= added["launchgap"]
            else:
                print("  the floor or the recorder added no measurable cost per launch; ratios undefined")
        if verdicts:
            met = "met" if all(verdicts.values()) else "NOT met"
            print(
                f"\nthe monitor costs no more a launch than the recorder: {met} "
                f"({', '.join(f'{s}: {v}' for s, v in verdicts.items())})"
            )
        monitor_cpu(libraries["frame-pointer"], args.cpu_seconds, work)


if __name__ == "__main__":
    main()
