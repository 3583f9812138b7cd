"""What makes a directory a trace (format 2): its metadata file. Light (no polars, no arrow), so that
the output checks (launchgap/output.py) can ask before anything heavy is loaded, and the trace writer
asks the same question of the same code."""

from __future__ import annotations

from pathlib import Path

from launchgap.trace.schema import META_FILE


def is_trace_directory(path: Path) -> bool:
    """A directory holding a trace's metadata: a format-2 trace, which a new trace may replace."""
    return path.is_dir() and (path / META_FILE).is_file()
