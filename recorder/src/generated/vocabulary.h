/* generated from schema/trace.toml by scripts/gen_schema.py; do not edit */
/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef LAUNCHGAP_VOCABULARY_H
#define LAUNCHGAP_VOCABULARY_H

/* Where a thread is, by its own switches and wakeups (docs/metrics.md "Thread states") */
enum run_state {
	RUN_UNKNOWN = 0, /* before its first event, when that event does not tell: counted nowhere */
	RUN_RUNNING = 1, /* on a CPU */
	RUN_PREEMPTED = 2, /* switched out still runnable (counted in the kernel's nivcsw): on that CPU's run queue */
	RUN_RUNQUEUE = 3, /* woken after a block, runnable, not yet running */
	RUN_BLOCKED = 4, /* switched out voluntarily (counted in nvcsw): the application's own time (sync, copy, I/O, sleep, lock) */
	RUN_STATE_COUNT = 5,
};

/* A launch gap's class: what took the most time inside it (the first of equal largest) */
enum gap_class {
	GAP_CLEAN = 0, /* nothing took time inside the gap */
	GAP_PREEMPTED = 1, /* the thread was preempted */
	GAP_RUNQUEUE = 2, /* the thread was woken and waited to run */
	GAP_IRQ = 3, /* interrupts ran over the thread (their exclusive time) */
	GAP_SYNC = 4, /* the thread blocked voluntarily inside a gap holding a sync (the sync's wait) */
	GAP_BLOCKED = 5, /* the thread blocked voluntarily, no sync in the gap */
	GAP_CLASS_COUNT = 6,
};

/* Time inside the open gap, by what took it: the interference causes first */
enum gap_cause {
	CAUSE_PREEMPTED = 0, /* the thread was preempted */
	CAUSE_RUNQUEUE = 1, /* the thread was woken and waited to run */
	CAUSE_IRQ = 2, /* interrupts ran over the thread (their exclusive time) */
	CAUSE_BLOCKED = 3, /* a voluntary block: the sync's if the gap holds one, else the thread's own */
	GAP_CAUSE_COUNT = 4,
};

/* The interference causes: enum gap_cause's first, in the order of names.gpu_idle_cause's first */
#define INTERFERENCE_CAUSES 3

/*
 * Launch-gap histograms, log2 buckets with inclusive upper bounds
 * (Prometheus' `le`): bucket b < GAP_BUCKETS - 1 holds gaps up to
 * 2^(GAP_FIRST_BOUND_LOG2 + b) ns; the last one, +Inf.
 */
#define GAP_FIRST_BOUND_LOG2 9
#define GAP_BUCKETS 28

/* The driver's entry points, by attach cookie - 1: the first of schema/trace.toml's [cuda] apis */
#define DRIVER_API_SLOTS 16

#endif /* LAUNCHGAP_VOCABULARY_H */
