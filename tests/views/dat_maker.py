"""Real trace-cmd .dat files made on this machine: events enabled in a
private ftrace instance under /sys/kernel/tracing (so the host's own tracing
settings are never touched), a workload run, then `trace-cmd extract`.
(`trace-cmd record` does not work in this sandbox; extract does.)"""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = [
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_waking",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
    "sched/sched_process_exec",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
]


@contextmanager
def tracefs_mounted():
    """Mounts tracefs if it is not (and unmounts it afterwards)."""
    mounted_here = False
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
        mounted_here = True
    try:
        yield
    finally:
        if mounted_here:
            subprocess.run(["umount", str(TRACEFS)], check=False)


def make_dat(out: Path, command: list[str]) -> Path:
    name = f"launchgap-test-{os.getpid()}"
    instance = TRACEFS / "instances" / name
    with tracefs_mounted():
        instance.mkdir()
        try:
            for event in EVENTS:
                (instance / "events" / event / "enable").write_text("1")
            (instance / "tracing_on").write_text("1")
            try:
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=120)
            finally:
                (instance / "tracing_on").write_text("0")
            subprocess.run(
                ["trace-cmd", "extract", "-B", name, "-o", str(out)], check=True, capture_output=True, timeout=120
            )
        finally:
            # trace-cmd extract removes the instance itself; on any earlier failure we do
            if instance.exists():
                instance.rmdir()
    return out


def report_counts(dat: Path) -> dict[str, int]:
    """Events per name, as `trace-cmd report` lists them."""
    text = subprocess.run(["trace-cmd", "report", "-i", str(dat)], capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        head, sep, _ = line.partition("]")
        if not sep:
            continue
        parts = line[len(head) + 1 :].split(":")
        if len(parts) >= 3:
            name = parts[1].strip()
            counts[name] = counts.get(name, 0) + 1
    return counts
