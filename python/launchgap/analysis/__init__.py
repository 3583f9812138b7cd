"""Everything computed from a trace: plain functions over polars frames.

targets          which threads are the workload
timeline         per-thread state segments, per-CPU run slices, the CPUs whose switches do not chain
intervals        overlap of interval lists, n log n
taken            time taken from the workload, by cause, with culprits
irqs             interrupt time, nested interrupts counted once
gaps             launch-gap classes, and the rule that gives a gap its class
gap_stream       launch-gap analysis and tail attribution, the launches streamed a few segments at a time
gpu_activity     what GPU activity (CUPTI) the trace holds, launches joined to their GPU work
gpu_time         GPU idle gaps and their causes: exact with GPU activity, bounds without
core_map         what ran on which CPU when (timeline, running-waiting)
running_waiting  running and runnable tasks against the CPU count
side_by_side     two independent analysis steps run at once, one in a worker thread
diff             two reports compared
verdict          the verdict's level and the facts it rests on (its words: views/verdict_words.py)
records          the typed records every report section is (docs/report-schema.md), and the facts
                 the report states in words (views/verdict_words.py says them)
report           build_report: all of it, as a Report record, one builder a section
"""

import launchgap.quiet_blas  # noqa: F401,E402  (before numpy: see its docstring)
