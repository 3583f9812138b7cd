"""/proc/PID/stat read as a process may have made it: its name (comm) is
whatever the process chose, any bytes but NUL, parentheses and bytes that
are not UTF-8 included (`printf '\\xff' > /proc/self/comm`). Read as text,
one such process anywhere on the host made every scan of /proc fail with
UnicodeDecodeError (and with it every experiment). Here the name is cut out
at the first "(" and the last ")" and decoded with every byte that is not
UTF-8 written as its escape (\\xff); the fields after it are numbers."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Stat(NamedTuple):
    name: str            # the comm, a byte that is not UTF-8 as \xNN
    fields: list[str]    # after the name: state(0) ppid(1) pgrp(2) ... (proc(5)'s numbering less 3)


def read_stat(path: str | Path) -> Stat | None:
    """The stat line at PATH (/proc/PID/stat or /proc/PID/task/TID/stat), or None when it cannot be read
    (the process is gone) or is not one."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    head, closing, tail = data.rpartition(b")")
    opening = head.find(b"(")
    if not closing or opening < 0:
        return None
    return Stat(head[opening + 1:].decode("utf-8", "backslashreplace"), tail.decode("ascii", "replace").split())
