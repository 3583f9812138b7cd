"""Reading and writing launchgap traces (docs/trace-format.md).

Names are imported when first used, so that `launchgap.trace.schema` (the
generated contract) can be imported where polars is missing (the GPU node's
checks, launchgap/gpu_validation.py)."""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Event": "launchgap.trace.schema",
    "Trace": "launchgap.trace.model",
    "TraceError": "launchgap.trace.model",
    "read_trace": "launchgap.trace.reader",
    "open_trace": "launchgap.trace.loader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
