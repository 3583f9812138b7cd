"""One experiment at a time may change host settings.

Two experiments that change the same setting (timer_migration, say) each
save what they find as the value to put back: the second saves the first's
change, and restores it, so the host is left changed (timer_migration left
0). An exclusive flock on LOCK_PATH (under LAUNCHGAP_LEVER_ROOT in tests) is
held for the whole time an experiment may change host settings; a second
one is refused at once, in one line naming the holder.

flock belongs to the open file: the experiment's custodian inherits the
descriptor, so after a SIGKILL the host stays locked until the custodian has
put everything back; the kernel drops the lock when the last holder exits,
so a lock is never left behind by a dead process.

flock needs only read access to the file: the lock is root's alone (the file
0600 in /run/launchgap, 0700: run_dir.py), or any user could lock every lever
experiment out. The refusal names the processes that really hold the lock
now (the kernel's view, /proc/PID/fdinfo), never a pid the file merely
mentions: that experiment may be long gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path

from launchgap.experiments.journal import owner
from launchgap.experiments.levers import LeverHost
from launchgap.experiments.run_dir import RUN_DIR, RunDirError, open_private_file, run_dir

LOCK_PATH = f"{RUN_DIR}/levers.lock"
# what the refusal shows of a holder's command line
SHOWN_COMMAND = 300


class HostBusy(RuntimeError):
    """Another experiment holds the host lock, or the lock must not be used (the message says why, on one
    line)."""


def _lock_id(fd: int) -> str:
    """How the kernel names the file's locks: MAJOR:MINOR:INODE, as in /proc/locks and fdinfo."""
    st = os.fstat(fd)
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def _holds(pid: int, lock_id: str) -> bool:
    """Whether one of PID's open files holds the flock on the file LOCK_ID (fdinfo lists the locks of its
    own open file alone)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return False
    for fd in fds:
        try:
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in info.splitlines():
            fields = line.split()
            if fields[:1] == ["lock:"] and "FLOCK" in fields and lock_id in fields:
                return True
    return False


def holders(fd: int) -> list[int]:
    """The live processes holding the flock on FD's file: first those /proc/locks names (the one that took it),
    then, if none of them still does (it died; its custodian holds it now), every process."""
    lock_id = _lock_id(fd)
    named = []
    try:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "FLOCK" in fields and lock_id in fields:
                at = fields.index(lock_id)
                if fields[at - 1].isdigit():
                    named.append(int(fields[at - 1]))
    except OSError:
        pass
    found = [pid for pid in named if _holds(pid, lock_id)]
    if found:
        return found
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in named and _holds(int(e), lock_id)]


def _printable(text: str, limit: int) -> str:
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


def _command(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    return _printable(" ".join(a.decode("utf-8", "replace") for a in argv), SHOWN_COMMAND)


def _holder(handle) -> str:
    """Who holds the lock: the experiment the file describes if it is alive and holds it, else the processes
    that do."""
    try:
        handle.seek(0)
        who = json.loads(handle.read(64 << 10) or "{}")
    except (OSError, ValueError, RecursionError):
        who = {}
    who = who if isinstance(who, dict) else {}
    live = holders(handle.fileno())
    pid = who.get("pid")
    described = (
        type(pid) is int
        and pid in live
        and (who.get("start_ticks") is None or owner(who["pid"])["start_ticks"] == who.get("start_ticks"))
    )
    if described:
        parts = [f"pid {who['pid']}"]
        if who.get("command"):
            parts.append(f"`{_printable(str(who['command']), SHOWN_COMMAND)}`")
        if who.get("since"):
            parts.append(f"since {_printable(str(who['since']), 40)}")
        if who.get("results"):
            parts.append(f"results in {_printable(str(who['results']), 300)}")
        return "another launchgap experiment (" + ", ".join(parts) + ")"
    if not live:
        return "another process"
    shown = []
    for pid in live[:3]:
        command = _command(pid)
        what = (
            "the custodian of a killed launchgap experiment, putting the host back"
            if "launchgap.experiments.custodian" in command
            else f"`{command}`"
        )
        shown.append(f"pid {pid}, {what}")
    return "another process (" + "; ".join(shown) + (f"; {len(live) - 3} more" if len(live) > 3 else "") + ")"


class HostLock:
    """The host lock, taken by acquire(), released by release() (or by the process's exit)."""

    def __init__(self, host: LeverHost | None = None) -> None:
        self.host = host or LeverHost()
        self.path = self.host.path(LOCK_PATH)
        self.handle = None

    @property
    def fd(self) -> int | None:
        return None if self.handle is None else self.handle.fileno()

    def acquire(self, results: Path | None = None) -> None:
        try:
            run_dir(self.host)
            # not truncated on open: the holder's own description must survive a refused second open
            fd = open_private_file(self.path, os.O_RDWR | os.O_CREAT)
        except RunDirError as err:
            raise HostBusy(f"the host lock: {err}") from None
        except OSError as err:
            raise HostBusy(f"{self.path}: cannot open the host lock ({err.strerror or err})") from None
        handle = os.fdopen(fd, "r+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise HostBusy(
                f"host settings are being changed by {holder}; it holds {self.path}: run again when it "
                f"has finished (two at once would each save the other's changes as the host's "
                f"own)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    **owner(),
                    "command": " ".join(["launchgap", *sys.argv[1:]])[:SHOWN_COMMAND],
                    "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "results": str(results) if results else None,
                }
            )
        )
        handle.flush()
        self.handle = handle

    def release(self) -> None:
        if self.handle is None:
            return
        try:
            self.handle.seek(0)
            self.handle.truncate()
        except OSError:
            pass
        self.handle.close()  # closing the last descriptor releases the flock
        self.handle = None
