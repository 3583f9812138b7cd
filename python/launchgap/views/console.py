"""The consoles every command prints to.

On a terminal, rich fits tables and text to its width. Anywhere else (a
pipe, a log file, CI) there is no width to fit: rich would assume 80
columns, collapse table cells to "…" and wrap notes mid-sentence, which
loses text and breaks anyone who greps it. There, lines are written whole.
"""

from __future__ import annotations

from rich.console import Console

# wide enough that no table or line is ever cut; tables still take only the width they need
UNBOUNDED_WIDTH = 100_000


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=UNBOUNDED_WIDTH, soft_wrap=True)
