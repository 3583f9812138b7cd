"""Everything computed from a trace: plain functions over polars frames.

targets   which threads are the workload
timeline  per-thread state segments and per-CPU run slices
intervals overlap of interval lists, n log n
taken     time taken from the workload, by cause, with culprits
irqs      interrupt time, nested interrupts counted once
gaps      launch-gap analysis and tail attribution
report    all of it as one JSON-ready dict (docs/report-schema.md)
"""

import launchgap.quiet_blas  # noqa: F401,E402  (before numpy: see its docstring)
