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
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path

from launchgap.experiments.levers import LeverHost

LOCK_PATH = "/run/launchgap/levers.lock"


class HostBusy(RuntimeError):
    """Another experiment holds the host lock (the message names it, on one line)."""


def _holder(handle) -> str:
    try:
        handle.seek(0)
        who = json.loads(handle.read() or "{}")
    except (OSError, ValueError):
        who = {}
    if not isinstance(who, dict) or not who:
        return "another process"
    parts = [f"pid {who.get('pid', '?')}"]
    if who.get("command"):
        parts.append(f"`{who['command']}`")
    if who.get("since"):
        parts.append(f"since {who['since']}")
    if who.get("results"):
        parts.append(f"results in {who['results']}")
    return "another launchgap experiment (" + ", ".join(parts) + ")"


class HostLock:
    """The host lock, taken by acquire(), released by release() (or by the process's exit)."""

    def __init__(self, host: LeverHost | None = None) -> None:
        self.path = (host or LeverHost()).path(LOCK_PATH)
        self.handle = None

    @property
    def fd(self) -> int | None:
        return None if self.handle is None else self.handle.fileno()

    def acquire(self, results: Path | None = None) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # not truncated on open: the holder's own description must survive a refused second open
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise HostBusy(f"{self.path}: cannot open the host lock ({err.strerror or err})") from None
        handle = os.fdopen(fd, "r+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise HostBusy(f"host settings are being changed by {holder}; it holds {self.path}: run again when it "
                           f"has finished (two at once would each save the other's changes as the host's "
                           f"own)") from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "command": " ".join(["launchgap", *sys.argv[1:]])[:300],
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                 "results": str(results) if results else None}))
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
