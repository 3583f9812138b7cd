"""Reading a user's input file safely: only a regular file (or, for a trace, a
directory), never blocking on a FIFO, never reading without bound.

/dev/zero read whole raised MemoryError; a FIFO given as a scenario file or a
trace blocked for ever on open. Opening with O_NONBLOCK returns at once for a
FIFO (with no writer, open(2) would wait), and fstat on the descriptor then
says what the file is, without a race between a stat and the open."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# what a text input (a scenario file, cudasim's truth JSON, a host file under doctor --root) may weigh:
# far above any real one (cudasim's truth for a long decode is a few MB), far below what exhausts memory
MAX_TEXT_INPUT_BYTES = 256 << 20

KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class InputError(ValueError):
    """An input that cannot be read as a file (message on one line, naming the path)."""


def kind_of(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def not_regular(path: str | Path) -> str | None:
    """Why PATH is not a regular file or a directory (a FIFO, a device, a socket), or None; a missing path
    is None (the reader says so). Never blocks: stat, not open."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return kind_of(mode)


def read_regular_bytes(path: str | Path, limit: int = MAX_TEXT_INPUT_BYTES) -> bytes:
    """PATH's bytes: a regular file of at most LIMIT bytes, else InputError. OSError (ENOENT, EACCES) is the
    caller's to word. Files in /proc and /sys show a size of 0 or 4096 whatever they hold: the read is
    bounded, not the stat."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: {kind_of(st.st_mode)}, not a regular file; give a file")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} such a file may hold")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputError(f"{path}: more than the {limit:,} bytes such a file may hold")
        return b"".join(chunks)
    finally:
        os.close(fd)
