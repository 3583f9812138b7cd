"""A Chrome-trace JSON file (what the PyTorch profiler writes) read as a stream: its
`traceEvents` as batches of one-line JSON texts, and the rest of its top-level object.

A profiler trace of a long job runs to gigabytes, and holding it parsed would take
several times that. The file is read a few megabytes at a time (gunzipped on the way
when it is gzip) and each piece is split at its events' boundaries by a structural
scan in numpy: the string quotes that are not escaped (an odd run of backslashes
escapes the next character), then the braces and brackets outside strings, and their
depth. An object at depth 2 inside the top-level `traceEvents` array is one event; its
text goes out on one line (a raw newline is whitespace between JSON tokens, never
inside a string) for polars to decode a batch at a time. Everything outside the
array's items (schemaVersion, baseTimeNanoseconds, deviceProperties, distributedInfo,
...) is kept and parsed at the end, bounded in size.

Measured on this machine against ijson (yajl2_c backend), the streaming parser
the brief suggested: bench/profiler_trace.py, docs/benchmarks.md.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from launchgap.inputs import JsonError, parse_json

# bytes read at a time: enough that numpy's passes dominate Python's per-piece work, small
# beside the 2 GiB a reading may take
CHUNK_BYTES = 8 << 20
# what the top-level object may hold outside traceEvents (profilers keep device properties,
# distributed info and their log lines there: kilobytes, rarely a few megabytes)
MAX_HEADER_BYTES = 64 << 20
# how far back from a top-level array's `[` its key is looked for
KEY_LOOKBACK = 4096
EVENTS_KEY = "traceEvents"

OPEN_CURLY, CLOSE_CURLY, OPEN_SQUARE, CLOSE_SQUARE = b"{}[]"
QUOTE, BACKSLASH = ord('"'), ord("\\")
# each structural byte's step in depth (0: not structural)
STEP = np.zeros(256, np.int8)
STEP[[OPEN_CURLY, OPEN_SQUARE]] = 1
STEP[[CLOSE_CURLY, CLOSE_SQUARE]] = -1
# the bytes the scan looks at: quotes, backslashes, braces and brackets (one gather and one nonzero a piece)
# a newline inside an event is whitespace between its tokens (JSON strings hold none raw): a space
NO_NEWLINES = np.arange(256, dtype=np.uint8)
NO_NEWLINES[[10, 13]] = 32
SPECIAL = np.zeros(256, np.bool_)
SPECIAL[[QUOTE, BACKSLASH, OPEN_CURLY, CLOSE_CURLY, OPEN_SQUARE, CLOSE_SQUARE]] = True
KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*$')
GZIP_MAGIC = b"\x1f\x8b"


class ChromeJsonError(ValueError):
    """The file cannot be read as a Chrome-trace JSON object (message: why, one line, no path)."""


def _chunks(path: Path) -> Iterator[bytes]:
    """PATH's bytes a piece at a time, gunzipped where it is gzip."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw) if gzipped else raw
        try:
            while True:
                piece = stream.read(CHUNK_BYTES)
                if not piece:
                    return
                yield piece
        except EOFError:
            raise ChromeJsonError("its gzip stream ends before its end marker (a copy cut short?)") from None
        except (gzip.BadGzipFile, zlib.error) as err:
            raise ChromeJsonError(f"not a readable gzip file ({' '.join(str(err).split())[:120]})") from None


def _escaped(slashes: np.ndarray, pending: bool) -> np.ndarray:
    """Positions escaped by a backslash, SLASHES being every backslash's: each one just after an odd run of
    backslashes (PENDING: an odd run ended the previous piece, so a run at the start continues it)."""
    if pending:
        slashes = np.concatenate([[-1], slashes])
    if not slashes.size:
        return slashes
    starts = np.flatnonzero(np.diff(slashes, prepend=slashes[0] - 2) != 1)
    ends = np.append(starts[1:], slashes.size) - 1
    odd = (ends - starts) % 2 == 0  # run length ends - starts + 1 is odd
    return slashes[ends[odd]] + 1


class EventSplitter:
    """Feeds on a JSON text piece by piece; hands out the complete events' texts of each, one a line."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape_pending = False
        self.carry = b""  # an event begun in an earlier piece, from its `{`
        self.header = bytearray()  # everything outside traceEvents' items
        self.in_events = False  # inside the traceEvents array
        self.events_seen = False
        self.top_array = False  # the top level is an array, not an object
        self.events = 0

    def feed(self, piece: bytes) -> bytes:
        """The complete events that PIECE ends (with any begun before it), each on a line of its own."""
        text = self.carry + piece if self.carry else piece
        data = np.frombuffer(text, np.uint8)
        special = np.flatnonzero(SPECIAL[data])
        kinds = data[special]
        escaped = _escaped(special[kinds == BACKSLASH], self.escape_pending)
        quote = kinds == QUOTE
        if escaped.size:
            quote &= ~np.isin(special, escaped)
        # inside a string just before each special byte: the quotes before it, and the state the piece began in
        opened = np.cumsum(quote, dtype=np.int64)
        inside = (opened - quote + self.in_string) % 2 == 1
        # structural bytes outside strings, and the depth before and after each
        structural = (STEP[kinds] != 0) & ~inside
        marks = special[structural]
        steps = STEP[data[marks]].astype(np.int64)
        after = self.depth + np.cumsum(steps)
        before = after - steps
        if after.size and after.min() < 0:
            raise ChromeJsonError("not JSON: a bracket closes that never opened")
        starts, ends = self._event_bounds(text, data, marks, before, after)
        # the state at the piece's end
        self.depth = int(after[-1]) if after.size else self.depth
        self.in_string = bool(((opened[-1] if opened.size else 0) + self.in_string) % 2)
        self.escape_pending = bool(escaped.size and escaped[-1] == data.size)
        out = self._lines(data, starts[: ends.size], ends)
        if ends.size < starts.size:
            # an event left open: kept from its `{`, the scan to resume there (depth 2, outside strings)
            self.carry = text[starts[-1] :]
            self.depth, self.in_string, self.escape_pending = (1 if self.top_array else 2), False, False
        else:
            self.carry = b""
        return out

    def _event_bounds(
        self, text: bytes, data: np.ndarray, marks: np.ndarray, before: np.ndarray, after: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Where this piece's events start and end (each at its braces); keeps the header's bytes."""
        if marks.size and before[0] == 0 and not self.header and not self.events_seen and data[marks[0]] == OPEN_SQUARE:
            # the JSON array form of a Chrome trace: every item an event
            self.top_array = self.in_events = self.events_seen = True
        level = 1 if self.top_array else 2
        # the first byte of the piece not yet kept in the header (None: inside the events)
        kept_from = None if self.in_events else 0
        position = 0
        starts, ends = [], []
        while True:
            if not self.in_events:
                opens = np.flatnonzero((before[position:] == 1) & (data[marks[position:]] == OPEN_SQUARE))
                if not opens.size:
                    break
                at = position + int(opens[0])
                position = at + 1
                key = KEY_BEFORE.search(bytes(self.header[-KEY_LOOKBACK:]) + text[kept_from : marks[at]])
                if self.events_seen or key is None or key.group(1) != EVENTS_KEY.encode():
                    continue
                self._keep_header(text[kept_from : marks[at] + 1])
                kept_from = None
                self.in_events = self.events_seen = True
            # inside the events array: its items, up to the `]` that closes it
            closing = np.flatnonzero((after[position:] == level - 1) & (data[marks[position:]] == CLOSE_SQUARE))
            stop = position + int(closing[0]) if closing.size else marks.size
            inside = slice(position, stop)
            starts.append(marks[inside][(before[inside] == level) & (data[marks[inside]] == OPEN_CURLY)])
            ends.append(marks[inside][(after[inside] == level) & (data[marks[inside]] == CLOSE_CURLY)])
            if not closing.size:
                break
            self.in_events = False
            kept_from = int(marks[stop])
            position = stop + 1
        if kept_from is not None and not self.top_array:
            self._keep_header(text[kept_from:])
        empty = np.zeros(0, np.int64)
        return (np.concatenate(starts) if starts else empty), (np.concatenate(ends) if ends else empty)

    def _keep_header(self, part: bytes) -> None:
        self.header += part
        if len(self.header) > MAX_HEADER_BYTES:
            raise ChromeJsonError(
                f"its top-level object holds more than {MAX_HEADER_BYTES >> 20} MB beside "
                f"{EVENTS_KEY}: not a profiler trace"
            )

    def _lines(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
        """The events [starts[i], ends[i]] as lines: newlines inside them made spaces, one after each."""
        if not starts.size:
            return b""
        self.events += int(starts.size)
        out = np.empty(data.size + 1, np.uint8)
        np.take(NO_NEWLINES, data, out=out[:-1])
        out[-1] = 32
        out[ends + 1] = 10  # the byte after each event's `}`, kept, ends its line
        # what lies between events (and before the first, after the last) is dropped: its positions, made
        # from the few gaps' starts and lengths rather than a mask as long as the piece
        gap_starts = np.concatenate([[0], ends + 2])
        lengths = np.maximum(np.concatenate([starts, [out.size]]) - gap_starts, 0)
        total = int(lengths.sum())
        if total:
            shift = np.repeat(gap_starts - (np.cumsum(lengths) - lengths), lengths)
            out = np.delete(out, np.arange(total, dtype=np.int64) + shift)
        return out.tobytes()

    def finish(self) -> dict:
        """The top-level object, its events left out (traceEvents: []), once every piece is fed."""
        if self.carry or self.depth or self.in_string:
            raise ChromeJsonError("its JSON ends inside an event or value (a copy cut short?)")
        if not self.events_seen:
            raise ChromeJsonError(f"no {EVENTS_KEY} array: not a PyTorch profiler (Chrome trace) file")
        if self.top_array:
            return {EVENTS_KEY: []}
        try:
            header = parse_json(bytes(self.header), "the top-level object")
        except JsonError as err:
            raise ChromeJsonError(f"not JSON ({err.problem})") from None
        if not isinstance(header, dict):
            raise ChromeJsonError("its top level is not a JSON object")
        return header


def event_lines(path: str | Path) -> tuple[Iterator[bytes], EventSplitter]:
    """The events of PATH as pieces of one-line JSON texts (consumed in order), and the splitter, whose
    finish() gives the top-level object once they are all consumed."""
    splitter = EventSplitter()

    def pieces() -> Iterator[bytes]:
        for chunk in _chunks(Path(path)):
            lines = splitter.feed(chunk)
            if lines:
                yield lines

    return pieces(), splitter


def lines_frame(lines: bytes) -> pl.Series:
    """One-line JSON texts as a string series, read by polars (no Python object a line)."""
    # \x01 cannot stand raw in JSON text (a control character), so no line holds a separator
    frame = pl.read_csv(
        io.BytesIO(lines),
        has_header=False,
        separator="\x01",
        quote_char=None,
        schema={"line": pl.String},
        encoding="utf8-lossy",
    )
    return frame["line"]
