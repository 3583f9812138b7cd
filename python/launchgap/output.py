"""Every file launchgap writes goes through here, so that:

- an output is never the same file as one of the command's inputs (the
  trace reader memory-maps its input: truncating it while mapped kills the
  process with SIGBUS, after destroying the trace). Compared by device and
  inode when the output exists (hard links and symlinks included), by
  resolved path when it does not yet. Nor is it a directory that holds an
  input (replacing it would remove the input);
- a failure (ENOSPC, Ctrl-C, an exception in the writer) never leaves a
  partial or empty file: the writer fills a hidden temporary file in the
  target directory, which is flushed to disk and renamed over the target
  only when complete. A trace in format 2 is a directory: it is filled the
  same way (a hidden temporary directory, every file flushed) and swapped
  into place atomically (renameat2 RENAME_EXCHANGE) over an earlier trace,
  directory or file, which is then removed; a directory or a file that is
  not a launchgap trace (an empty file aside) is never replaced by one. The
  temporary's name carries the writer's pid, and the writer holds an flock
  on it: one left by a killed writer (SIGKILL, power loss) is removed by
  the next write of the same output once its pid is gone and no one holds
  its lock;
- a file written under sudo belongs to the user who ran sudo
  (SUDO_UID/SUDO_GID), not root, and is private: mode 0600 (as perf writes
  perf.data) unless LAUNCHGAP_FILE_MODE asks for another (e.g. 0644). A
  recording of a node shows every user's commands; it is not for everyone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from launchgap.trace.directory import is_trace_directory

FILE_MODE_ENV = "LAUNCHGAP_FILE_MODE"
DEFAULT_FILE_MODE = 0o600
# the hidden name a file has while it is being written: .NAME.PID.RANDOM.partial.SUFFIX (a directory:
# .NAME.PID.RANDOM.partial); the suffix stays last: matplotlib picks the image format from it
PARTIAL_MARK = ".partial"
# in a temporary's name: the writer's pid (pid_max is at most 2^22: 7 digits), then tempfile's random part
_PID = r"(\d{1,7})\."
_RANDOM = r"[a-z0-9_]{8}"

PERMISSIONS_HELP = (
    f"Files launchgap writes (exports, imported traces, views, experiment results) are private: mode "
    f"{DEFAULT_FILE_MODE:04o}, and under sudo they belong to the invoking user (SUDO_UID/SUDO_GID), not root. "
    f"Set {FILE_MODE_ENV}=0644 (octal) to let others read them. An output is never written over one of "
    f"the command's inputs or a directory holding one, and is renamed into place only once complete; a trace "
    f"replaces only an earlier trace (or an empty file)."
)


class OutputError(ValueError):
    """An output that must not or cannot be written (message says why, on one line)."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when writing A would replace B: the same inode (through any hard
    link or symlink), or, if either does not exist, the same resolved path."""
    ia, ib = _identity(Path(a)), _identity(Path(b))
    if ia is not None and ib is not None:
        return ia == ib
    return Path(a).resolve() == Path(b).resolve()


def contains(directory: str | Path, path: str | Path) -> bool:
    """True when PATH lies inside DIRECTORY, both with every symlink resolved (replacing DIRECTORY would
    remove it)."""
    return Path(os.path.realpath(directory)) in Path(os.path.realpath(path)).parents


def refuse_inputs(output: str | Path, inputs: Iterable[str | Path]) -> None:
    """Raises OutputError if OUTPUT is one of INPUTS, or holds one (a trace directory the input lies in).
    Call it before anything is opened for writing."""
    for source in inputs:
        if same_file(output, source):
            what = "the input" if str(source) == str(output) else f"the same file as the input {source}"
            raise OutputError(f"{output}: this is {what}; refusing to write over it (choose another output)")
        if contains(output, source):
            raise OutputError(f"{output}: holds the input {source}; refusing to replace it (choose another output)")


def file_mode() -> int:
    """The permission bits for files launchgap writes: LAUNCHGAP_FILE_MODE (octal), else 0600."""
    text = os.environ.get(FILE_MODE_ENV, "").strip()
    if not text:
        return DEFAULT_FILE_MODE
    try:
        mode = int(text, 8)
    except ValueError:
        raise OutputError(f"{FILE_MODE_ENV}={text!r}: expected octal permission bits such as 0600 or 0644") from None
    if not 0 <= mode <= 0o777:
        raise OutputError(f"{FILE_MODE_ENV}={text!r}: expected octal permission bits between 0000 and 0777")
    return mode


def directory_mode() -> int:
    """Directories launchgap makes: the file mode plus search (x) wherever it allows reading."""
    mode = file_mode()
    return mode | ((mode & 0o444) >> 2)


def invoking_user() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran sudo, when running as root through sudo."""
    if os.geteuid() != 0:
        return None
    uid, gid = os.environ.get("SUDO_UID", ""), os.environ.get("SUDO_GID", "")
    if not uid and not gid:
        return None
    if not (uid.isdigit() and gid.isdigit()):
        raise OutputError(
            f"SUDO_UID={uid!r} / SUDO_GID={gid!r}: not both user and group numbers; refusing to "
            f"write files that would belong to root (unset both to write as root)"
        )
    return int(uid), int(gid)


def hand_over(path: str | Path, directory: bool = False) -> None:
    """Gives PATH launchgap's permissions and, under sudo, the invoking user."""
    path = Path(path)
    os.chmod(path, directory_mode() if directory else file_mode())
    user = invoking_user()
    if user is not None:
        os.chown(path, *user)


def hand_over_trace(path: str | Path) -> None:
    """A trace's permissions and owner, as hand_over gives a file: format 2's directory, every
    directory and file in it."""
    path = Path(path)
    if path.is_dir():
        _finish_tree(path, file_mode(), invoking_user(), sync=False)
    else:
        hand_over(path)


def make_directory(path: str | Path) -> Path:
    """Makes PATH (and missing parents) with launchgap's permissions and owner."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    for made in reversed(missing):
        hand_over(made, directory=True)
    return path


# the kernel's own file systems: nothing launchgap writes belongs there
KERNEL_TREES = (Path("/proc"), Path("/sys"))
# names that stand for an open file descriptor (the shell's redirection, a pipe, a terminal): an output
# written there through a temporary file and a rename would replace the name, not write to the descriptor
DESCRIPTOR_NAMES = (
    Path("/dev/stdin"),
    Path("/dev/stdout"),
    Path("/dev/stderr"),
    Path("/dev/fd"),
    Path("/proc/self/fd"),
    Path("/proc/thread-self/fd"),
)


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def real_target(path: str | Path) -> Path:
    """Where an output really goes: PATH with every symlink resolved (a symlink the user made is kept and the
    file it names is replaced, never the link itself). Refuses, in one line, a name for a file descriptor
    (/dev/stdout, /dev/fd/N, /proc/self/fd/N) and anything in /proc or /sys, and (later, _check_target) a
    device or other file that is not a regular file."""
    given = Path(os.path.abspath(path))
    resolved = Path(os.path.realpath(given))
    if (
        _under(given, DESCRIPTOR_NAMES)
        or re.fullmatch(r"/proc/\d+/fd(/.*)?", str(given))
        or not resolved.is_absolute()
        or ":[" in resolved.name
    ):
        raise OutputError(
            f"{path}: names an open file descriptor, not a file; launchgap writes its outputs to "
            f"files (give a file path)"
        )
    if _under(resolved, KERNEL_TREES):
        raise OutputError(
            f"{path}: is in the kernel's {resolved.parts[1]} file system, not a place for files; give a file path"
        )
    return resolved


def is_replaceable_trace_file(path: Path) -> bool:
    """A regular file a new trace may replace: a format-1 trace, or an empty file (nothing in it to lose)."""
    from launchgap.trace.format1 import is_format1_trace

    return os.stat(path).st_size == 0 or is_format1_trace(path)


def _check_target(path: Path, directory: bool, replaces_trace: bool) -> None:
    if path.is_dir():
        if not (replaces_trace and is_trace_directory(path)):
            raise OutputError(
                f"{path}: is a directory"
                + (" (and not a launchgap trace); refusing to replace it" if replaces_trace else "")
            )
    elif path.exists() and not stat.S_ISREG(os.stat(path).st_mode):
        raise OutputError(f"{path}: not a regular file; refusing to replace it")
    elif replaces_trace and path.exists() and not is_replaceable_trace_file(path):
        raise OutputError(f"{path}: is a file (and not a launchgap trace); refusing to replace it")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _lock(fd: int) -> bool:
    """An exclusive flock on FD without waiting: False when another holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _partial_names(path: Path) -> re.Pattern:
    """The names of PATH's temporaries, of either kind (a trace may change format); the group that matched
    holds the writer's pid."""
    directory = re.escape(f".{path.name}.") + _PID + _RANDOM + re.escape(PARTIAL_MARK)
    file = re.escape(f".{path.stem}.") + _PID + _RANDOM + re.escape(PARTIAL_MARK + path.suffix)
    return re.compile(f"{directory}|{file}")


def remove_stale_partials(path: Path) -> list[Path]:
    """Removes the temporaries of PATH that killed writers left (SIGKILL, power loss) and returns them.
    One is stale when its name is one of ours for PATH, it is a plain directory or regular file (not a
    link), it belongs to us (or, under sudo, to the invoking user), the pid in its name is not running,
    and no process holds its lock (a writer in another pid namespace or on another host keeps it)."""
    pattern = _partial_names(path)
    owners = {os.geteuid()} | ({invoking_user()[0]} if invoking_user() else set())
    removed = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if not match:
            continue
        pid = int(next(g for g in match.groups() if g is not None))
        if pid == os.getpid() or _pid_alive(pid):
            continue
        candidate = path.parent / name
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or st.st_uid not in owners:
                continue
            if not _lock(fd):
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(candidate)
            else:
                candidate.unlink()
            removed.append(candidate)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


_RENAME_EXCHANGE = 2  # include/uapi/linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swaps two paths atomically (renameat2 RENAME_EXCHANGE, Linux 3.15+)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    rc = libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))


def _move_into_place(partial: Path, path: Path) -> None:
    """PARTIAL replaces PATH: a file over a file by rename, anything else by an atomic swap, after which the
    earlier one (now at PARTIAL) is removed."""
    if not path.exists() or (partial.is_file() and path.is_file()):
        os.replace(partial, path)
        return
    try:
        _exchange(partial, path)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
        # a filesystem without RENAME_EXCHANGE: the earlier one steps aside for a moment
        aside = partial.with_name(partial.name + ".earlier")
        os.rename(path, aside)
        os.rename(partial, path)
        partial = aside
    if partial.is_dir():
        shutil.rmtree(partial, ignore_errors=True)
    else:
        partial.unlink(missing_ok=True)


def _finish_tree(root: Path, mode: int, user: tuple[int, int] | None, sync: bool = True) -> None:
    """Flushes every file under ROOT to disk (SYNC) and gives everything launchgap's permissions and owner."""
    dir_mode = mode | ((mode & 0o444) >> 2)
    for current, _dirs, files in os.walk(root):
        for name in files:
            path = Path(current) / name
            if sync:
                with open(path, "rb+") as written:
                    os.fsync(written.fileno())
            os.chmod(path, mode)
            if user is not None:
                os.chown(path, *user)
        os.chmod(current, dir_mode)
        if user is not None:
            os.chown(current, *user)


@contextmanager
def atomic_output(
    path: str | Path, inputs: Iterable[str | Path] = (), *, directory: bool = False, replaces_trace: bool = False
) -> Iterator[Path]:
    """Yields a temporary path beside PATH for the writer to fill (an empty
    directory with DIRECTORY); on success everything is flushed, given
    launchgap's permissions and moved to PATH. On any failure (an exception,
    Ctrl-C) PATH is left as it was and the temporary file or directory removed.
    REPLACES_TRACE: PATH may be an earlier trace of either format (a file or a
    trace directory), which is replaced."""
    refuse_inputs(path, inputs)
    path = real_target(path)
    mode = file_mode()
    user = invoking_user()
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(f"{parent}: no such directory")
    _check_target(path, directory, replaces_trace)
    remove_stale_partials(path)
    pid = os.getpid()
    if directory:
        partial = Path(tempfile.mkdtemp(prefix=f".{path.name}.{pid}.", suffix=PARTIAL_MARK, dir=parent))
        held = os.open(partial, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        held, name = tempfile.mkstemp(prefix=f".{path.stem}.{pid}.", suffix=f"{PARTIAL_MARK}{path.suffix}", dir=parent)
        partial = Path(name)
    # held until the end: a later writer's remove_stale_partials leaves a locked partial alone
    _lock(held)
    try:
        yield partial
        # a full disk may only show when the data is flushed: before the rename, not after
        if directory:
            _finish_tree(partial, mode, user)
        else:
            with open(partial, "rb+") as written:
                os.fsync(written.fileno())
            os.chmod(partial, mode)
            if user is not None:
                os.chown(partial, *user)
        _move_into_place(partial, path)
    except BaseException:
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)
        raise
    finally:
        os.close(held)


def write_text(path: str | Path, text: str, inputs: Iterable[str | Path] = ()) -> None:
    with atomic_output(path, inputs) as partial:
        partial.write_text(text)
