"""Reading a user's input file safely: only a regular file (or, for a trace, a
directory), never blocking on a FIFO, never reading without bound; and JSON
that launchgap did not write itself (a trace's meta.json and end.json, an
experiment's results.json) parsed with the same care.

/dev/zero read whole raised MemoryError; a FIFO given as a scenario file or a
trace blocked for ever on open. Opening with O_NONBLOCK returns at once for a
FIFO (with no writer, open(2) would wait), and fstat on the descriptor then
says what the file is, without a race between a stat and the open. JSON
nested 100,000 deep raised RecursionError in the parser (and, a little less
deep, in every json.dumps(..., indent=...) and printer after it)."""

from __future__ import annotations

import json
import os
import re
import stat
from array import array
from itertools import accumulate
from pathlib import Path

# what a text input (a scenario file, cudasim's truth JSON, a host file under doctor --root) may weigh:
# far above any real one (cudasim's truth for a long decode is a few MB), far below what exhausts memory
MAX_TEXT_INPUT_BYTES = 256 << 20
# what a JSON file launchgap reads may weigh (a trace's meta.json and end.json, an experiment's results.json):
# the largest launchgap writes are a big host's: /proc/interrupts kept in meta.json, and its counts twice in
# end.json, a few MB at 400 CPUs and 1,000 interrupt lines; parsed, one takes several times its size in memory
MAX_JSON_BYTES = 64 << 20
# how deeply a JSON value may nest: launchgap's own files nest under 10 levels; Python's parser and printers
# recurse once a level and fail near 1,000
MAX_JSON_DEPTH = 100

KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)

# how much of a value that cannot be parsed a message shows: enough to recognise it, never a whole file
EXCERPT_CHARS = 60


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A short, printable piece of a value read from a file (a host file that cannot be parsed, a stray file's
    name), for a message: runs of whitespace as one space, every other character that does not print (a
    terminal's escape sequences, NUL, bidirectional overrides, a name's undecodable bytes) as its Python
    escape (\\x1b), at most LIMIT characters (the last three "..." when cut)."""
    raw = value if isinstance(value, str) else repr(value)
    # what lies far beyond LIMIT is never shown: neither split nor escaped
    head = raw[: 4 * limit + 8]
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(head.split()))
    if len(shown) <= limit and len(head) == len(raw):
        return shown
    return shown[: limit - 3] + "..."


class InputError(ValueError):
    """An input that cannot be read as a file (message on one line, naming the path). PROBLEM is the same
    without the path, for a caller that words the message itself."""

    def __init__(self, path: str | Path, problem: str, advice: str = "") -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}" + (f"; {advice}" if advice else ""))


class JsonError(InputError):
    """Bytes that are not the JSON launchgap reads: not UTF-8, not JSON, nested too deeply."""


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
            raise InputError(path, f"{kind_of(st.st_mode)}, not a regular file", "give a file")
        if st.st_size > limit:
            raise InputError(path, f"{st.st_size:,} bytes, more than the {limit:,} such a file may hold")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputError(path, f"more than the {limit:,} bytes such a file may hold")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_json(data: bytes | str, where: str | Path) -> object:
    """DATA parsed as JSON, or JsonError saying why not, on one line, after WHERE (the file it came from):
    not UTF-8, not JSON, nested deeper than MAX_JSON_DEPTH, or holding a lone surrogate (a \\ud800 escape,
    which no text output can print)."""
    try:
        # UTF-8 only, strictly (json.loads would take UTF-16 and UTF-32 too, and let encoded surrogates pass)
        value = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except RecursionError:
        raise JsonError(where, NESTED) from None
    except UnicodeDecodeError:
        raise JsonError(where, "not UTF-8 text") from None
    except ValueError as err:
        raise JsonError(where, " ".join(str(err).split())[:200]) from None
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _deeper_than(raw, MAX_JSON_DEPTH):
        raise JsonError(where, NESTED)
    if (b"\\u" in raw or b"\xed" in raw) and SURROGATE.search(raw) and _holds_lone_surrogate(value):
        raise JsonError(where, LONE_SURROGATE)
    return value


NESTED = f"nested deeper than {MAX_JSON_DEPTH} levels"
LONE_SURROGATE = "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), not text"
# what the nesting is read from: quotes and brackets; a string of those, from quote to quote; a bracket as
# the step it takes (+1 or -1, as a signed byte)
NOT_MARKS = bytes(b for b in range(256) if b not in b'[]{}"')
QUOTED = re.compile(rb'"[^"]*"')
STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
# a surrogate, escaped (\\ud800), or in a str given, encoded: paired, or not
SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")


def _deeper_than(text: bytes, limit: int) -> bool:
    """Whether the brackets of TEXT (JSON that parsed) nest deeper than LIMIT, counted outside its strings:
    escaped backslashes and quotes dropped (no quote left ends a string early), then all but quotes and
    brackets, then the strings; the deepest point is the largest running sum of the brackets' steps. One
    pass, in C (walking the parsed value in Python took 5 times the parse of a truth file)."""
    plain = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = QUOTED.sub(b"", plain.translate(None, NOT_MARKS))
    return bool(brackets) and max(accumulate(array("b", brackets.translate(STEPS)))) > limit


def _holds_lone_surrogate(value: object) -> bool:
    """Whether a string of VALUE (keys too) holds a surrogate that is not half of a pair: walked without
    recursion, only when the text holds a surrogate at all."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_json(path: str | Path, limit: int = MAX_JSON_BYTES) -> object:
    """The JSON value in PATH, a regular file of at most LIMIT bytes: InputError when it is not one (JsonError
    when its bytes are not JSON launchgap reads), OSError (ENOENT, EACCES) for the caller to word."""
    return parse_json(read_regular_bytes(path, limit), path)
