"""/run/launchgap: launchgap's own directory on the host, for root alone.

The lever lock (host_lock.py) and the registry of experiments' journals
(journal.py) live there. Another user able to open the lock could lock every
lever experiment out (flock needs only read access); one able to write a
journal could have root restore "host changes" to any file. So the directory
is mode 0700 and its files 0600, both belonging to root (to the user
running, when that is not root: tests under LAUNCHGAP_LEVER_ROOT), and no
symlink is ever followed into or inside it.

A directory or file that is there already is checked, never trusted: a
symlink, another user's, or one others may write is refused in one line (it
may hold what another user put there: remove it). Root's own made before
launchgap kept them private (0755, 0644) is made private.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from launchgap.experiments.levers import LeverHost

RUN_DIR = "/run/launchgap"
DIR_MODE = 0o700
FILE_MODE = 0o600


class RunDirError(RuntimeError):
    """A path under /run/launchgap that must not be used (the message says why, on one line)."""


class RunDirDenied(RunDirError):
    """This user may not use it (not root): a refusal of the kernel's, not a sign of another user's doing."""


def trusted_owner(uid: int) -> bool:
    """Whether a file belonging to UID may be trusted here: root's, or this user's own."""
    return uid in (0, os.geteuid())


def _check(path: Path, st: os.stat_result, what: str, private_mode: int, fd: int, tighten: bool) -> None:
    if not trusted_owner(st.st_uid):
        raise RunDirError(
            f"{path}: belongs to uid {st.st_uid}, not root; refusing to use it (remove it: another "
            f"user may have put it there)"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise RunDirError(
            f"{path}: others may write to this {what} (mode {mode:04o}); refusing to use it (remove "
            f"it: another user may have changed it)"
        )
    if mode != private_mode and tighten:
        os.fchmod(fd, private_mode)


def _refusal(path: Path, err: OSError, what: str) -> RunDirError:
    # O_NOFOLLOW says ELOOP for a symlink; with O_DIRECTORY, ENOTDIR
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and os.path.islink(path)):
        return RunDirError(f"{path}: is a symbolic link; refusing to follow it (remove it)")
    if err.errno == errno.ENOTDIR:
        return RunDirError(f"{path}: is not a {what}; refusing to use it (remove it)")
    if err.errno in (errno.EACCES, errno.EPERM):
        return RunDirDenied(f"{path}: cannot open it ({err.strerror or err}: run as root)")
    return RunDirError(f"{path}: cannot open it ({err.strerror or err})")


def private_directory(path: Path, create: bool = True) -> bool:
    """Makes PATH (mode 0700), or checks the one there; False if it is not there (and CREATE is False).
    Raises RunDirError for one that must not be used, or that cannot be made."""
    if create:
        try:
            os.mkdir(path, DIR_MODE)  # never through a symlink: one at PATH is "exists"
        except FileExistsError:
            pass
        except OSError as err:
            kind = RunDirDenied if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else RunDirError
            raise kind(f"{path}: cannot make it ({err.strerror or err})") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise RunDirError(f"{path}: vanished while it was being made") from None
        return False
    except OSError as err:
        raise _refusal(path, err, "directory") from None
    try:
        _check(path, os.fstat(fd), "directory", DIR_MODE, fd, tighten=True)
    finally:
        os.close(fd)
    return True


def open_private_file(path: Path, flags: int, tighten: bool = True) -> int:
    """A descriptor for PATH in a private directory, opened without following a symlink and checked: a regular
    file of root's (or this user's) that no one else may write. Raises RunDirError otherwise, or OSError as
    os.open does (FileNotFoundError, FileExistsError with O_EXCL)."""
    try:
        # O_NONBLOCK: a FIFO put there would block the open
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE)
    except (FileNotFoundError, FileExistsError):
        raise
    except OSError as err:
        raise _refusal(path, err, "file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RunDirError(f"{path}: is not a regular file; refusing to use it (remove it)")
        _check(path, st, "file", FILE_MODE, fd, tighten)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def run_dir(host: LeverHost, create: bool = True) -> Path | None:
    """/run/launchgap on HOST, made or checked; None if it is not there (and CREATE is False)."""
    path = host.path(RUN_DIR)
    if create:
        # /run itself, except under a test root, is the system's
        path.parent.mkdir(parents=True, exist_ok=True)
    return path if private_directory(path, create) else None
