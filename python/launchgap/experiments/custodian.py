"""What is left when an experiment dies where no handler runs (SIGKILL, the
OOM killer): its host changes and a results file that still says "running".

- The custodian: a small process each experiment starts beside itself, in
  its own session, watching the experiment's lifeline (leash.py). When the
  experiment is gone while its journal (journal.py) is still registered, the
  custodian waits for the leashes to end the loads and the workload, undoes
  every host change in the journal that a lever may make (cgroup, IRQ
  affinity, fio's files; levers.LeverFiles), and marks the journal and the
  results "killed", saying what it restored, what it could not, and what it
  refused.
- The next experiment: a registered journal whose owner (pid, start time,
  boot) is gone is reported once, in one line, and removed; if it still
  says "running" (the custodian died too: a whole-session kill), the next
  experiment undoes its changes itself first.

Only journals in the root-only registry are ever read: a results directory
beside the new one, whatever it holds, is never acted on.

    python -m launchgap.experiments.custodian LIFELINE_FD JOURNAL LEVER_FILES_JSON
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from launchgap.experiments import journal as journals
from launchgap.experiments.journal import Journal, owner, owner_alive
from launchgap.experiments.leash import GRACE_S, lifeline_fd
from launchgap.experiments.levers import LeverFiles, LeverHost
from launchgap.experiments.mitigations import HostChanges
from launchgap.experiments.results import RESULTS_FILE
from launchgap.experiments.run_dir import RunDirError
from launchgap.output import OutputError, write_text

__all__ = ["RESULTS", "owner", "owner_alive", "stale_results", "start", "stop", "take_over"]

RESULTS = RESULTS_FILE
# how long a cgroup may stay busy while the workload's last task exits
RESTORE_RETRY_S = 5.0
# a results file of ours: runs, verifications and the doctor's checks stay far below this
MAX_RESULTS_BYTES = 64 << 20


def start(journal: Journal, host: LeverHost, host_lock_fd: int | None = None) -> subprocess.Popen:
    """The custodian of JOURNAL's experiment (this process), undoing only what a lever on HOST may change.
    HOST_LOCK_FD: the experiment's host lock (host_lock.py), held by the custodian too, so that after a SIGKILL
    no other experiment changes the host before the custodian has put it back."""
    fd = lifeline_fd()
    keep = (fd,) if host_lock_fd is None else (fd, host_lock_fd)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launchgap.experiments.custodian",
            str(fd),
            str(journal.path),
            LeverFiles.of(host).to_json(),
        ],
        pass_fds=keep,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


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


def _read_results(path: Path) -> dict | None:
    """A results file, if it is a regular one of reasonable size holding a JSON object: it is in a directory
    its user owns, who may have put anything there (a FIFO would block the open, a deep nesting the parser)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as source:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RESULTS_BYTES:
                return None
            data = journals.parse_json(source.read(MAX_RESULTS_BYTES + 1))
        except (OSError, ValueError):
            return None
    return data if isinstance(data, dict) else None


def _mark_killed(journal: Journal, done: dict) -> None:
    """The experiment's results say it was killed, and what was done about it; only results that are its
    own (the same owner) and still say "running". An edit of two keys in the object as it is, not a read
    through results.py's records: whatever else the file holds is written back untouched."""
    results = journal.results
    if results is None:
        return
    found = _read_results(results / RESULTS)
    if found is None or found.get("status") != "running" or found.get("owner") != journal.record.get("owner"):
        return
    found["status"], found["killed"] = "killed", done
    try:
        write_text(results / RESULTS, json.dumps(found, indent=2))
    except (OSError, OutputError):
        pass


def take_over(journal: Journal, allowed: LeverFiles, found_by: str) -> dict:
    """Undoes the host changes a dead experiment's journal lists, those a lever may make (ALLOWED) alone;
    returns what was done, and what was refused."""
    changes, refused = HostChanges.recovered(journal.changes, allowed, journal=journal)
    listed = changes.describe()
    problems = changes.restore(retry_s=RESTORE_RETRY_S) if listed else []
    if not listed:
        journal.save_changes([])  # the refused entries are not kept either
    left = changes.describe()
    done = {
        "found_by": found_by,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host_changes_restored": [c for c in listed if c not in left],
        "host_changes_not_restored": problems,
        "journal_entries_refused": refused,
    }
    # the journal first: whoever sees the results say "killed" finds the journal saying so too
    journal.record["status"], journal.record["killed"] = "killed", done
    journal.save()
    _mark_killed(journal, done)
    return done


def watch(path: Path, lifeline: int, allowed: LeverFiles) -> None:
    poller = select.poll()
    poller.register(lifeline, select.POLLIN | select.POLLHUP | select.POLLERR)
    poller.poll()  # returns only when the experiment process is gone
    if not path.exists():
        return  # it finished (or was interrupted) and put everything back itself
    time.sleep(GRACE_S + 0.5)  # the leashes end the loads and the workload first
    try:
        journal = journals.read(path)
    except (OSError, RunDirError):
        return  # gone meanwhile; or not one launchgap wrote: never acted on
    take_over(journal, allowed, "the experiment's custodian, when the experiment process died")


def _shown(items: list[str], where: Path) -> str:
    return ", ".join(items if len(items) <= 4 else [*items[:3], f"{len(items) - 3} more (in {where})"])


def stale_results(host: LeverHost) -> list[str]:
    """One line per experiment that died without finishing (its journal still registered on HOST, its owner
    gone), each reported once; a journal still "running" (its custodian died too) is taken over here.
    Files in the registry that are not journals launchgap wrote are left alone and said so."""
    journal_list, lines = journals.registered(host)
    allowed = LeverFiles.of(host)
    for journal in journal_list:
        record = journal.record
        status, who = record.get("status"), record.get("owner") or {}
        if owner_alive(who) or (status == "running" and owner_alive(record.get("custodian"))):
            continue  # still running, or its custodian is putting things back now
        if status == "killed" and isinstance(record.get("killed"), dict):
            done = record["killed"]
            how = "its custodian stopped what it had started"
        else:
            done = take_over(journal, allowed, "a later experiment")
            how = "its custodian died too"
        restored, left = done.get("host_changes_restored") or [], done.get("host_changes_not_restored") or []
        refused = done.get("journal_entries_refused") or []
        results = journal.results or "(no results directory)"
        line = (
            f"{results}: experiment pid {who.get('pid', '?') if isinstance(who, dict) else '?'} died before "
            f"finishing ({how}); its results are incomplete"
        )
        if restored:
            line += f"; host changes restored: {_shown(restored, Path(results) / RESULTS)}"
        if left:
            line += f"; HOST CHANGES STILL IN PLACE: {'; '.join(left)}"
        if refused:
            line += (
                f"; journal entries refused, left alone (not changes launchgap makes): "
                f"{_shown(refused, Path(results) / RESULTS)}"
            )
        lines.append(line)
        journal.unregister()
    return lines


def main(argv: list[str]) -> None:
    # in its own session already; a hang-up or Ctrl-C meant for the experiment must not end it early
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    watch(Path(argv[1]), int(argv[0]), LeverFiles.from_json(argv[2]))


if __name__ == "__main__":
    main(sys.argv[1:])
