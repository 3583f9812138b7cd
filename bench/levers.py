"""bench/levers: the kernel-tuning study's scheduler experiment (shared/seeds/kernel-tuning-hpc.md, section
6.2, Figures 3-4) on this machine: the four workload classes (compute, memory, io, mixed: the built-in
lever-workload, 2 worker threads as the study's harness; compute, io and mixed larger than lever-workload's
defaults so that every run outlasts a disturbance period) x SCHED_OTHER, SCHED_FIFO 10
and SCHED_RR 10, N=5 each, interleaved, with the study's disturbance thread (20 ms of CPU every 300 ms,
Listing 7). Prints the experiment's table, then each class's outcome beside the study's (VM and bare
metal), and which levers this host can and cannot apply (and why), from the doctor's view of it.

The study ran chrt -f 99 / chrt -r 99; launchgap bounds RT priorities to 1..49 (the kernel's own RT threads
run at 50 and up), so this runs 10. Needs root.

    sudo .venv/bin/python bench/levers.py [--repeat 5] [--seed 12] [--disturb 20:300]
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

from launchgap.experiments.levers import LeverHost  # noqa: E402
from launchgap.experiments.mitigations import Mitigations  # noqa: E402
from launchgap.views.words import speed  # noqa: E402

# the study's Table 1 and section 6.2, per class: (VM, bare metal)
STUDY = {
    "compute": ("CFS best (6.73 s vs 7.03-7.05 s RT)", "CFS best (6.50 s vs 6.75-6.78 s)"),
    "memory": ("negligible RT edge (0.55-0.56 s)", "small RT edge (0.53 s vs 0.55 s)"),
    "io": ("RR best (1.38 s vs 1.45-1.51 s)", "RR ~11.7% faster than CFS (1.28 s vs 1.45 s)"),
    "mixed": ("flat (0.160-0.162 s)", "near-equal (0.158-0.159 s)"),
}
POLICIES = ("other", "fifo:10", "rr:10")
# about half a second a run here (memory: its default, twice the last-level cache, four passes)
SIZES = ("compute=40000", "io=512M", "mixed=20000")
# every lever the host might be asked for, on the last CPU (one left for housekeeping)
LEVERS = {
    "SCHED_FIFO 10": dict(policy="fifo:10"),
    "SCHED_RR 10": dict(policy="rr:10"),
    "SCHED_BATCH": dict(policy="batch"),
    "SCHED_IDLE": dict(policy="idle"),
    "preempt=full": dict(preempt="full"),
    "preempt=voluntary": dict(preempt="voluntary"),
    "isolate": dict(isolate="isolated"),
    "isolate=root": dict(isolate="root"),
    "irq-away": dict(irq_away=True),
    "workqueue-away": dict(workqueue_away=True),
    "timer-migration=0": dict(timer_migration=0),
}


def outcome(summary: dict, cls: str) -> str:
    cells = {p: summary.get(f"{cls}/{p}") for p in POLICIES}
    if not all(c and c.get("runs") for c in cells.values()):
        return "incomplete"
    best = min(POLICIES, key=lambda p: cells[p]["metric"]["mean"])
    parts = []
    for p in POLICIES[1:]:
        v = cells[p]["vs_baseline"]
        mark = "significant" if v["welch_p"] is not None and v["welch_p"] < 0.05 else "not significant"
        parts.append(f"{p} {speed(v['mean_slowdown_percent'])} than other (Welch p {v['welch_p']:.3f}, {mark})")
    return f"fastest mean: {best}; " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--disturb", default="20:300")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("levers: needs root (BPF, RT policies)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-", dir=REPO) as tmp:
        out = Path(tmp) / "results"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "launchgap.cli",
                "experiment",
                "levers",
                "--classes",
                "compute,memory,io,mixed",
                "--policies",
                ",".join(POLICIES),
                "--repeat",
                str(args.repeat),
                "--threads",
                str(args.threads),
                "--disturb",
                args.disturb,
                "--dir",
                tmp,
                "--seed",
                str(args.seed),
                "-o",
                str(out),
                *(a for size in SIZES for a in ("--size", size)),
            ],
            cwd=REPO,
            env={**os.environ, "COLUMNS": "250"},
        )
        if proc.returncode != 0:
            raise SystemExit(f"the experiment failed (exit {proc.returncode})")
        summary = json.loads((out / "summary.json").read_text())
        results = json.loads((out / "results.json").read_text())
    print("\nper class: here | the study on a VM | the study on bare metal")
    for cls, (vm, metal) in STUDY.items():
        print(f"  {cls}: {outcome(summary, cls)}\n      study VM: {vm}; bare metal: {metal}")
    walls = sum(r["wall_s"] for r in results["runs"])
    print(f"\n{len(results['runs'])} runs (warm-up included), {walls:.0f} s of recorded workload")
    hypervisor = next((c for c in results["doctor"]["checks"] if c["id"] == "cpu.hypervisor"), None)
    if hypervisor:
        print(f"doctor, cpu.hypervisor ({hypervisor['status']}): {hypervisor['summary']}")
    host = LeverHost()
    last = max(os.sched_getaffinity(0))
    print(f"\nwhat this host can apply (the workload on CPU {last}):")
    for name, options in LEVERS.items():
        problem = Mitigations(cpus=[last], **options).host_refusal(host)
        print(f"  {name}: {'yes' if problem is None else 'no: ' + problem}")


if __name__ == "__main__":
    main()
