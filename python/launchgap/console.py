"""The consoles every command prints to, and the one way text from outside
launchgap reaches them.

On a terminal, rich fits tables and text to its width. Anywhere else (a
pipe, a log file, CI) there is no width to fit: rich would assume 80
columns, collapse table cells to "…" and wrap notes mid-sentence, which
loses text and breaks anyone who greps it. There, lines are written whole.

Text launchgap did not write itself (a process name, an IRQ or function
name, a path, a value read from /proc, a trace, results.json) is hostile:
any user can name a process `[/]` (rich markup, which stops the command) or
put an escape sequence in it (which would reach the terminal and act on it).
Every such value goes through `shown` (printed without markup) or `literal`
(placed inside rich markup: tables, titles, progress lines), which show it
as the characters it holds: control characters as visible escapes (\\x1b,
\\n), markup as text. Emoji codes (:name:) are never expanded.
"""

from __future__ import annotations

import os
import re

from rich.console import Console
from rich.markup import escape
from rich.table import Table

# wide enough that no table or line is ever cut; tables still take only the width they need
UNBOUNDED_WIDTH = 100_000

# past this many characters a value from outside is cut (the kernel's names are 15, a path at most 4095)
SHOWN_CHARS = 4096

# What a terminal acts on rather than shows: C0 and C1 controls and DEL, the separators and invisible
# formatting marks that reorder or hide text (bidirectional overrides, zero-width characters), and lone
# surrogates (a byte that was not UTF-8, kept by Python's surrogateescape), which no terminal can encode.
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def _visible(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value: object) -> str:
    """VALUE as text safe to print without markup: every control character (and the other characters listed
    above) as a visible escape such as \\x1b, the rest as it is; cut past SHOWN_CHARS characters."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > SHOWN_CHARS:
        text = f"{text[:SHOWN_CHARS]}... ({len(text) - SHOWN_CHARS:,} more characters)"
    return _UNSHOWABLE.sub(lambda m: _visible(m.group()), text)


def literal(value: object) -> str:
    """VALUE for a place rich reads as markup (console.print, a table cell, a title, a progress line):
    shown() with rich's markup escaped, so that it prints as the characters it holds, whatever markup comes
    after it."""
    text = shown(value)
    body = text.rstrip("\\")
    trailing = len(text) - len(body)
    # backslashes count as escapes only before a tag, which the caller's markup may put right after the
    # value: inside a no-op style they are always followed by one, so doubled they always print as they are
    return escape(body) + ("[none]" + "\\" * (2 * trailing) + "[/none]" if trailing else "")


# the width a report's tables and paragraphs are fitted to where there is no terminal (a pipe, a log), unless
# COLUMNS says another: lines a reader, a pager and a diff can take
PIPE_WIDTH = 100


class _FoldingConsole(Console):
    """A console whose tables fold a value too long for its column onto more lines, never cutting it to "…"
    (rich's default): a name or a number shown in part is text lost."""

    def print(self, *objects, **kwargs) -> None:  # noqa: ANN003
        for table in objects:
            if isinstance(table, Table):
                for column in table.columns:
                    if column.overflow == "ellipsis":
                        column.overflow = "fold"
        super().print(*objects, **kwargs)


def fitting_console() -> Console:
    """A console whose tables fit: the terminal's width, or in a pipe PIPE_WIDTH (COLUMNS where it asks for wider,
    up to 1000; a narrower one, often inherited from some other terminal, would cut table cells to "…"). Cells wrap
    inside it rather than running off; a report reads better so, where another command's output must keep every
    line whole (make_console)."""
    console = _FoldingConsole(emoji=False)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and PIPE_WIDTH <= int(columns) <= 1000 else PIPE_WIDTH
    return _FoldingConsole(width=width, emoji=False)


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, emoji=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=UNBOUNDED_WIDTH, soft_wrap=True, emoji=False)
