/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The monitor's map values: counters kept per target thread in the kernel
 * and read by launchgap-monitor at scrape time (no per-event records). The
 * Rust side reads these structs through the generated skeleton types, so
 * this file is the only definition of their layout.
 */
#ifndef LAUNCHGAP_MONITOR_H
#define LAUNCHGAP_MONITOR_H

/*
 * The thread states, launch-gap classes and causes the counters are kept by,
 * the gap histograms' buckets and the driver entry points' slots
 * (DRIVER_API_SLOTS) come from schema/trace.toml, where the analysis gets the
 * same words (scripts/gen_schema.py generates vocabulary.h).
 */
#include "vocabulary.h"

#define MONITOR_COMM_LEN 16

/* How many target threads may wait on one CPU's run queue at once, for culprits. */
#define MAX_WAITERS_PER_CPU 16

/* How far up the cgroup tree a --cgroup target is looked for. */
#define MAX_CGROUP_DEPTH 16

/* A thread's interference is held until its next launch, split by whether its GPU work was drained. */
enum drain_state {
	NOT_DRAINED = 0, /* it may have GPU work queued: a delay may be hidden behind it */
	DRAINED,         /* returned from a drain sync, not launched since: its GPU has nothing of it */
	DRAIN_STATES,
};

enum irq_kind {
	IRQ_HARD = 0,
	IRQ_SOFT,
	IRQ_VECTOR, /* x86 system vectors: local timer, IPIs, irq_work */
	IRQ_KIND_COUNT,
};

/* Updates that could not be made, by reason: counted, never silent. */
enum lost_update {
	LOST_THREAD_MAP_FULL = 0, /* a target thread got no counters */
	LOST_UNCOUNTED_CALLS,     /* launches and syncs of such threads */
	LOST_PROCESS_MAP_FULL,    /* a process could not become a target */
	LOST_RETIRED_MAP_FULL,    /* an exited thread's counters could not be kept */
	LOST_CULPRIT_MAP_FULL,    /* culprit time not attributed (see lost_culprit_ns) */
	LOST_WAITER_SLOTS_FULL,   /* a waiting thread's culprits not followed */
	LOST_UPDATE_KIND_COUNT,
};

/* Everything summed: a thread's counters, and an exited thread's folded into its process. */
struct thread_counters {
	__u64 calls[DRIVER_API_SLOTS];   /* launches, and syncs that returned, by entry point */
	__u64 sync_ns[DRIVER_API_SLOTS]; /* time inside those syncs, entry to return */
	__u64 preempted_ns;
	__u64 runqueue_ns;
	__u64 blocked_ns;
	__u64 irq_ns[IRQ_KIND_COUNT]; /* exclusive: nested interrupts are their own */
	__u64 irq_count[IRQ_KIND_COUNT];
	__u64 migrations;
	__u64 voluntary_switches;
	__u64 involuntary_switches;
	__u64 gap_sum_ns[GAP_CLASS_COUNT];
	__u64 gaps[GAP_CLASS_COUNT][GAP_BUCKETS];
	/* syncs that returned, of them those during which the thread was switched out voluntarily */
	__u64 blocked_syncs[DRIVER_API_SLOTS];
	/*
	 * The GPU-time bounds' terms (docs/monitor.md, "GPU time"): interference
	 * between the thread's first GPU work (a launch or a sync) and its latest
	 * launch, by cause, by whether its GPU work was drained meanwhile. Each
	 * delay cost the GPU at most its length (the upper bound); a drained one
	 * of a process's only launching thread, exactly its length (the lower).
	 */
	__u64 delay_ns[DRAIN_STATES][INTERFERENCE_CAUSES];
	__u64 launching_threads; /* 1 once the thread has launched: summed, a process's launching threads */
};

/* Where a thread stands, for the accounting; never summed. */
struct thread_state {
	__u64 start_ns;         /* task->start_boottime: tells a reused thread id apart (/proc's starttime) */
	__u64 process_start_ns; /* the thread group leader's start_boottime */
	__u32 pid;              /* tgid */
	__u32 tid;
	char comm[MONITOR_COMM_LEN];
	__u64 since_ns;               /* entered run_state */
	__u64 waiting_here_since_ns;  /* began waiting on `cpu` (a migration restarts it) */
	__u64 last_launch_ns;         /* 0: no launch yet, so no gap open */
	__u64 gap_cause_ns[GAP_CAUSE_COUNT];
	__u64 sync_start_ns;          /* 0: not inside a sync */
	__u64 cgroup_id;              /* its cgroup v2 (kernfs id = the directory's inode number) */
	/* interference since its latest launch (since its first GPU work, before one): counted at its next */
	__u64 pending_delay_ns[DRAIN_STATES][INTERFERENCE_CAUSES];
	__u32 cpu;
	__s32 waiter_cpu;             /* the CPU whose waiter slots hold it, or -1 */
	__u16 sync_slot;
	__u8 run_state;               /* enum run_state */
	__u8 gap_has_sync;
	__u8 gpu_work_started;        /* it has launched or entered a sync */
	__u8 drain_state;             /* enum drain_state */
	__u8 sync_blocked;            /* switched out voluntarily inside the open sync */
	__u8 pad;
};

struct thread_stats {
	struct thread_state state;
	struct thread_counters counters;
};

/* A process (pid, leader start time): exited threads' counters are folded into it. */
struct process_key {
	__u32 pid;
	__u32 pad;
	__u64 start_ns;
};

/*
 * What a process's exited threads leave: their counters summed, and who the
 * process was (user space may never see it alive).
 */
struct process_remains {
	char command[MONITOR_COMM_LEN]; /* the thread group leader's, at the first exit */
	__u64 cgroup_id;
	struct thread_counters counters;
};

/* Who ran on a target's CPU while it waited there. */
struct culprit_key {
	__u32 pid;   /* the waiting target's process */
	__u8 cause;  /* RUN_PREEMPTED or RUN_RUNQUEUE */
	__u8 pad[3];
	char comm[MONITOR_COMM_LEN]; /* the task that ran ("swapper": the CPU was idle) */
};

/* Per CPU, shared across CPUs: a waker registers the woken target on its CPU. */
struct cpu_waiters {
	__u64 run_start_ns; /* when the task now running on this CPU was switched in */
	__u32 tids[MAX_WAITERS_PER_CPU];
};

/* The cgroup v2 hierarchy's id (as in /proc/PID/cgroup's "0::/path"). */
#define UNIFIED_HIERARCHY_ID 0

/* A --cgroup target: (hierarchy id, cgroup id), the id being the kernfs inode number. */
struct cgroup_key {
	__u32 hierarchy_id; /* UNIFIED_HIERARCHY_ID: cgroup v2 */
	__u32 pad;
	__u64 cgroup_id;    /* 0 marks the hierarchy itself: moves out of targets are followed there */
};

/* How targets are chosen (rodata target_mode). */
enum target_mode {
	TARGET_CUDA_CALLERS = 0, /* any process that initialises CUDA or calls a probed entry point */
	TARGET_PIDS,             /* -p PIDs and their descendants */
	TARGET_CGROUPS,          /* tasks in --cgroup cgroups (and below), and those moved in */
};

#endif /* LAUNCHGAP_MONITOR_H */
