"""Everything computed from a trace: plain functions over polars frames.

targets          which threads are the workload
timeline         per-thread state segments and per-CPU run slices
intervals        overlap of interval lists, n log n
taken            time taken from the workload, by cause, with culprits
irqs             interrupt time, nested interrupts counted once
gaps             launch-gap classes, and the rule that gives a gap its class
gap_stream       launch-gap analysis and tail attribution, streamed a few segments at a time
gpu_activity     what GPU activity (CUPTI) the trace holds, launches joined to their GPU work
gpu_time         GPU idle gaps and their causes: exact with GPU activity, bounds without
core_map         what ran on which CPU when (timeline, running-waiting)
running_waiting  running and runnable tasks against the CPU count
side_by_side     two independent analysis steps run at once, one in a worker thread
diff             two reports compared
records          the typed records every report section is (docs/report-schema.md)
report           build_report: all of it, as a Report record, one builder a section
"""

import launchgap.quiet_blas  # noqa: F401,E402  (before numpy: see its docstring)
