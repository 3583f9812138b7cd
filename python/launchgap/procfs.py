"""Reading what the kernel shows in /proc and /sys, whatever bytes it holds.

A task's name is up to 15 bytes its owner chose (prctl(PR_SET_NAME), the
executable's file name): anything but NUL, valid UTF-8 or not. Read as text
with Python's default strict decoding, one process named b"\\xffodd" anywhere
on the host made every scan of /proc raise UnicodeDecodeError. So /proc is
read as bytes, and a name becomes text by the trace's one escaping
(docs/trace-format.md, "Names"), the same the recorder applies: UTF-8 as it
is, every byte that is not part of valid UTF-8 as \\xHH, a backslash as \\\\.
"""

from __future__ import annotations

from pathlib import Path


def escape_name(raw: bytes) -> str:
    """A name's bytes as the trace keeps them (reversible: codecs.escape_decode(name.encode())[0] gives the bytes back)."""
    # a backslash byte is never part of a multi-byte UTF-8 sequence, so doubling it first is safe
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def read_text(path: str | Path) -> str:
    """A /proc or /sys file as text, bytes that are not UTF-8 as \\xHH (OSError is the caller's)."""
    return Path(path).read_bytes().decode("utf-8", "backslashreplace")


def read_stat(path: str | Path) -> tuple[str, list[str]]:
    """A /proc/PID[/task/TID]/stat file: (the task's name, escaped; the fields after it, from `state` on).
    OSError is the caller's; a file that is not a stat line raises ValueError."""
    raw = Path(path).read_bytes()
    # the name sits between the first "(" and the last ")": it may hold either, and spaces
    open_at, close_at = raw.find(b"("), raw.rfind(b")")
    if open_at < 0 or close_at < open_at:
        raise ValueError(f"{path}: not a stat line")
    return escape_name(raw[open_at + 1 : close_at]), raw[close_at + 1 :].decode("ascii", "replace").split()
