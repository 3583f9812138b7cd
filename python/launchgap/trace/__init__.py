"""Reading launchgap trace files (docs/trace-format.md)."""

from launchgap.trace.reader import Trace, TraceError, read_trace

__all__ = ["Trace", "TraceError", "read_trace"]
