"""Every file launchgap writes goes through here, so that:

- an output is never the same file as one of the command's inputs (the
  trace reader memory-maps its input: truncating it while mapped kills the
  process with SIGBUS, after destroying the trace). Compared by device and
  inode when the output exists (hard links and symlinks included), by
  resolved path when it does not yet;
- a failure (ENOSPC, Ctrl-C, an exception in the writer) never leaves a
  partial or empty file: the writer fills a hidden temporary file in the
  target directory, which is flushed to disk and renamed over the target
  only when complete;
- a file written under sudo belongs to the user who ran sudo
  (SUDO_UID/SUDO_GID), not root, and is private: mode 0600 (as perf writes
  perf.data) unless LAUNCHGAP_FILE_MODE asks for another (e.g. 0644). A
  recording of a node shows every user's commands; it is not for everyone.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

FILE_MODE_ENV = "LAUNCHGAP_FILE_MODE"
DEFAULT_FILE_MODE = 0o600
# the hidden name a file has while it is being written: .NAME.RANDOM.partial.SUFFIX
# (the suffix stays last: matplotlib picks the image format from it)
PARTIAL_MARK = ".partial"

PERMISSIONS_HELP = (
    f"Files launchgap writes (exports, imported traces, views, experiment results) are private: mode "
    f"{DEFAULT_FILE_MODE:04o}, and under sudo they belong to the invoking user (SUDO_UID/SUDO_GID), not root. "
    f"Set {FILE_MODE_ENV}=0644 (octal) to let others read them. An output is never written over one of "
    f"the command's inputs, and is renamed into place only once complete."
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


def refuse_inputs(output: str | Path, inputs: Iterable[str | Path]) -> None:
    """Raises OutputError if OUTPUT is one of INPUTS. Call it before anything
    is opened for writing."""
    for source in inputs:
        if same_file(output, source):
            what = "the input" if str(source) == str(output) else f"the same file as the input {source}"
            raise OutputError(f"{output}: this is {what}; refusing to write over it (choose another output)")


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
        raise OutputError(f"SUDO_UID={uid!r} / SUDO_GID={gid!r}: not both user and group numbers; refusing to "
                          f"write files that would belong to root (unset both to write as root)")
    return int(uid), int(gid)


def hand_over(path: str | Path, directory: bool = False) -> None:
    """Gives PATH launchgap's permissions and, under sudo, the invoking user."""
    path = Path(path)
    os.chmod(path, directory_mode() if directory else file_mode())
    user = invoking_user()
    if user is not None:
        os.chown(path, *user)


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


@contextmanager
def atomic_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> Iterator[Path]:
    """Yields a temporary path beside PATH for the writer to fill; on success
    the file is flushed, given launchgap's permissions and renamed to PATH.
    On any failure (an exception, Ctrl-C) PATH is left as it was and the
    temporary file removed."""
    path = Path(path)
    refuse_inputs(path, inputs)
    mode = file_mode()
    user = invoking_user()
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(f"{parent}: no such directory")
    if path.is_dir():
        raise OutputError(f"{path}: is a directory")
    if path.exists() and not stat.S_ISREG(os.stat(path).st_mode):
        raise OutputError(f"{path}: not a regular file; refusing to replace it")
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f"{PARTIAL_MARK}{path.suffix}", dir=parent)
    os.close(fd)
    partial = Path(name)
    try:
        yield partial
        # a full disk may only show when the data is flushed: before the rename, not after
        with open(partial, "rb+") as written:
            os.fsync(written.fileno())
        os.chmod(partial, mode)
        if user is not None:
            os.chown(partial, *user)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str, inputs: Iterable[str | Path] = ()) -> None:
    with atomic_output(path, inputs) as partial:
        partial.write_text(text)
