"""Reading launchgap trace files (docs/trace-format.md)."""

from launchgap.trace.reader import Trace, TraceError, read_trace
from launchgap.trace.loader import open_trace  # noqa: E402  (after the reader it uses)

__all__ = ["Trace", "TraceError", "open_trace", "read_trace"]
