"""What is left when an experiment dies where no handler runs (SIGKILL, the
OOM killer): its host changes and a results file that still says "running".

- The custodian: a small process each experiment starts beside itself, in
  its own session, watching the experiment's lifeline (leash.py). When the
  experiment is gone while its results still say "running", the custodian
  waits for the leashes to end the loads and the workload, undoes every
  host change in the experiment's journal (cgroup, IRQ affinity), and marks
  the results "killed", saying what it restored and what it could not.
- The next experiment: results whose owner (pid, start time, boot) is gone
  but that still say "running" (the custodian died too: a whole-session
  kill, a reboot), or that were "killed" and not yet reported, are reported
  once, with any host change a journal still lists.

    python -m launchgap.experiments.custodian LIFELINE_FD RESULTS_DIR
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from launchgap.experiments.leash import GRACE_S, lifeline_fd
from launchgap.experiments.mitigations import HostChanges
from launchgap.output import OutputError, write_text
from launchgap.procfs import read_stat

RESULTS = "results.json"
JOURNAL = "host-changes.json"
# how long a cgroup may stay busy while the workload's last task exits
RESTORE_RETRY_S = 5.0


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


def _start_ticks(pid: int) -> int | None:
    """A process's start time (clock ticks after boot): tells it from a later one reusing its pid."""
    stat = read_stat(f"/proc/{pid}/stat")
    try:
        return int(stat.fields[19]) if stat is not None else None
    except (IndexError, ValueError):
        return None


def owner() -> dict:
    """Who runs this experiment, so that a later one can tell whether it is still running."""
    return {"pid": os.getpid(), "start_ticks": _start_ticks(os.getpid()), "boot_id": _boot_id()}


def owner_alive(record: dict) -> bool:
    if not isinstance(record, dict) or record.get("boot_id") != _boot_id():
        return False
    pid = record.get("pid")
    return isinstance(pid, int) and _start_ticks(pid) is not None and _start_ticks(pid) == record.get("start_ticks")


def start(outdir: Path, host_lock_fd: int | None = None) -> subprocess.Popen:
    """The custodian of OUTDIR's experiment (this process). HOST_LOCK_FD: the experiment's host lock
    (host_lock.py), held by the custodian too, so that after a SIGKILL no other experiment changes the host
    before the custodian has put it back."""
    fd = lifeline_fd()
    keep = (fd,) if host_lock_fd is None else (fd, host_lock_fd)
    return subprocess.Popen([sys.executable, "-m", "launchgap.experiments.custodian", str(fd), str(outdir)],
                            pass_fds=keep, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(custodian: subprocess.Popen) -> None:
    """The experiment ended on its own and put everything back: its custodian is not needed (and must let
    go of the host lock)."""
    if custodian.poll() is None:
        custodian.terminate()
        try:
            custodian.wait(timeout=5)
        except subprocess.TimeoutExpired:
            custodian.kill()
            custodian.wait()


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def take_over(outdir: Path, found_by: str) -> dict:
    """Undo the journal's host changes of a dead experiment; returns what was done."""
    changes = HostChanges.from_journal(outdir / JOURNAL)
    listed = changes.describe()
    problems = changes.restore(retry_s=RESTORE_RETRY_S) if listed else []
    left = changes.describe()
    return {"found_by": found_by, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host_changes_restored": [c for c in listed if c not in left], "host_changes_not_restored": problems}


def watch(outdir: Path, lifeline: int) -> None:
    poller = select.poll()
    poller.register(lifeline, select.POLLIN | select.POLLHUP | select.POLLERR)
    poller.poll()  # returns only when the experiment process is gone
    results = _read(outdir / RESULTS)
    running = results is not None and results.get("status") == "running"
    if not running and not (outdir / JOURNAL).exists():
        return  # it finished (or was interrupted) and cleaned up itself
    time.sleep(GRACE_S + 0.5)  # the leashes end the loads and the workload first
    done = take_over(outdir, "the experiment's custodian, when the experiment process died")
    if results is not None and running:
        results["status"] = "killed"
        results["killed"] = done
        try:
            write_text(outdir / RESULTS, json.dumps(results, indent=2))
        except (OSError, OutputError):
            pass


def stale_results(parent: Path) -> list[str]:
    """One line per experiment under PARENT that died without finishing and was not reported yet.
    Results still 'running' whose owner is gone are taken over here (their custodian died too)."""
    lines = []
    try:
        candidates = sorted(p for p in parent.glob(f"*/{RESULTS}"))
    except OSError:
        return []
    for path in candidates:
        results = _read(path)
        if results is None or results.get("stale_reported"):
            continue
        status, record = results.get("status"), results.get("owner") or {}
        if status == "running" and not owner_alive(record):
            done = take_over(path.parent, "a later experiment")
            results["status"], results["killed"] = "killed", done
            how = "its custodian died too"
        elif status == "killed":
            done = results.get("killed") or {}
            how = "its custodian stopped what it had started"
        else:
            continue
        restored, left = done.get("host_changes_restored") or [], done.get("host_changes_not_restored") or []
        line = (f"{path.parent}: experiment pid {record.get('pid', '?')} died before finishing ({how}); its "
                f"results are incomplete")
        if restored:
            shown = restored if len(restored) <= 4 else [*restored[:3], f"{len(restored) - 3} more (in {path})"]
            line += f"; host changes restored: {', '.join(shown)}"
        if left:
            line += f"; HOST CHANGES STILL IN PLACE: {'; '.join(left)}"
        lines.append(line)
        results["stale_reported"] = True
        try:
            write_text(path, json.dumps(results, indent=2))
        except (OSError, OutputError):
            pass
    return lines


def main(argv: list[str]) -> None:
    # in its own session already; a hang-up or Ctrl-C meant for the experiment must not end it early
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    watch(Path(argv[1]), int(argv[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
