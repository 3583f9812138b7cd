"""Everything an experiment starts dies with it, however it dies.

A handler cannot run on SIGKILL, so the experiment cannot clean up after
itself then. Instead every child it starts (a load generator, the recorder
and through it the workload) runs under a leash: a small process that is
the leader of its own process group, starts the command in that group, and
waits for either of two things:

- the command exits: the leash ends whatever the command left in its group
  (a stress-ng worker, fio's job processes) and exits as the command did;
- the lifeline breaks: the leash holds the read end of a pipe whose only
  write end the experiment holds, so the read end reports end-of-file
  exactly when the experiment process is gone (exit, exception, SIGKILL,
  anything). The leash then ends its whole group: SIGTERM, a grace period
  for the recorder to close its trace, SIGKILL.

PR_SET_PDEATHSIG in the child alone would not do: it reaches only the
direct child, while stress-ng's workers and fio's jobs are grandchildren;
and it fires when the *thread* that forked the child exits, not the process.

    python -m launchgap.experiments.leash LIFELINE_FD -- COMMAND...
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from launchgap import procfs

GRACE_S = 3.0
# what the experiment process holds: (read end, write end) of the lifeline pipe
_lifeline: tuple[int, int] | None = None


def lifeline_fd() -> int:
    """The read end of this process's lifeline (made on first use; its write end stays here, unshared)."""
    global _lifeline
    if _lifeline is None:
        _lifeline = os.pipe()  # both ends close-on-exec: no child gets the write end
    return _lifeline[0]


def leashed(command: list[str]) -> list[str]:
    return [sys.executable, "-m", "launchgap.experiments.leash", str(lifeline_fd()), "--", *command]


def popen(command: list[str], **kwargs) -> subprocess.Popen:
    """Starts COMMAND on a leash, in a new session and process group (the leash's pid is its id)."""
    return subprocess.Popen(leashed(command), pass_fds=(lifeline_fd(),), start_new_session=True, **kwargs)


def group_members(pgid: int) -> list[int]:
    """Live processes in process group PGID."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            _, fields = procfs.read_stat(entry / "stat")
            # after the name: state ppid pgrp ...
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _end_others() -> None:
    """SIGKILL every other member of our group (what the command left behind)."""
    me = os.getpid()
    for _ in range(10):  # a member may fork while we look
        others = [p for p in group_members(os.getpgrp()) if p != me]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _end_group(child: subprocess.Popen) -> None:
    """The experiment is gone: TERM the whole group, give it a grace period, then KILL it (us included)."""
    try:
        os.killpg(0, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    os.killpg(0, signal.SIGKILL)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m launchgap.experiments.leash LIFELINE_FD -- COMMAND...", file=sys.stderr)
        sys.exit(2)
    lifeline, command = int(argv[0]), argv[2:]
    if os.getpgrp() != os.getpid():
        # the group the leash ends must be its own, whoever started it and however
        os.setpgid(0, 0)
    # a stop request for the group reaches the command too; the leash outlives it to clean up after it
    # (a Python-level handler, not SIG_IGN: the command gets the default disposition back at exec)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    try:
        child = subprocess.Popen(command)
    except OSError as err:
        print(f"launchgap: cannot run {command[0]}: {err.strerror or err}", file=sys.stderr)
        sys.exit(127)
    exited = os.pidfd_open(child.pid)
    poller = select.poll()
    poller.register(lifeline, select.POLLIN | select.POLLHUP | select.POLLERR)
    poller.register(exited, select.POLLIN)
    while True:
        ready = dict(poller.poll())
        if exited in ready:
            break
        if lifeline in ready:
            _end_group(child)
    code = child.wait()
    _end_others()
    if code < 0:
        # die of the same signal, so that our parent sees what the command saw
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
