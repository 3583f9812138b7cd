/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records the BPF programs put in the ring buffer. The Rust side decodes
 * the same structs through the generated skeleton types, so this file is
 * the only definition of the wire layout.
 */
#ifndef LAUNCHGAP_EVENTS_H
#define LAUNCHGAP_EVENTS_H

/*
 * Record types, name-table enums (wakeup variants, x86 system vectors) and
 * the sizes below come from schema/trace.toml, the trace's one definition:
 * scripts/gen_schema.py generates trace_schema.h (recorder/src/generated/) from it.
 */
#include "trace_schema.h"

/* Every record starts with this. pid/tid is the task the event is about. */
struct event_header {
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 type;  /* enum event_type */
	__u32 cpu;
	__u32 pid; /* tgid */
	__u32 tid;
};

/* One logical kernel launch: exactly one driver-entry uprobe hit. */
struct launch_event {
	struct event_header hdr;
	__u64 func; /* CUfunction, or CUgraphExec for graph launches */
	__u64 stream;
	__u32 grid[3];
	__u32 block[3];
	__u32 shared_mem;
	__u16 api;         /* attach cookie of the driver probe */
	__u16 runtime_api; /* runtime probe that led here (--api-names), else 0 */
};

/*
 * Launches staged per thread and written together: one ring-buffer record
 * for up to LAUNCH_BATCH_SIZE launches, each a complete launch_event with
 * its own header. Not an event type of its own (its drops count as
 * launches): hdr.type is RECORD_LAUNCH_BATCH, hdr.ts_ns the flush.
 */
struct launch_batch {
	struct event_header hdr;
	__u32 count;
	__u32 pad;
	struct launch_event launches[LAUNCH_BATCH_SIZE];
};

/* A blocking sync or synchronous copy, emitted at return with its duration. */
struct sync_event {
	struct event_header hdr; /* ts_ns is the entry time */
	__u64 duration_ns;
	__u64 stream;
	__u64 bytes;
	__u16 api;
	__u16 runtime_api;
	__u32 pad;
};

/*
 * With --api-names: a runtime call that returned without reaching any driver
 * entry point launchgap probes. With a nonzero return code, an attempt that
 * failed inside the runtime (say, a launch with no device); with 0, a call
 * that went through a driver function not probed. hdr.ts_ns is the runtime entry.
 */
struct runtime_only_event {
	struct event_header hdr;
	__u64 duration_ns;
	__s32 return_code; /* the runtime's return value (cudaError_t) */
	__u16 runtime_api; /* attach cookie of the runtime probe */
	__u16 pad;
};

/* hdr.pid/tid is the task switched out. */
struct switch_event {
	struct event_header hdr;
	__s64 prev_state;
	__u64 prev_nvcsw; /* the kernel's own counters after this switch */
	__u64 prev_nivcsw;
	__u32 next_pid;
	__u32 next_tid;
	__s32 prev_prio;
	__s32 next_prio;
	__u8 preempt;   /* the scheduler preempted prev (tracepoint argument) */
	__u8 voluntary; /* counted in prev's nvcsw: it blocked; else nivcsw: still runnable */
	__u8 pad[6];
	char prev_comm[TASK_COMM_LEN];
	char next_comm[TASK_COMM_LEN];
};

/* hdr.pid/tid is the task woken; hdr.cpu is where the waker ran. */
struct wakeup_event {
	struct event_header hdr;
	__u32 target_cpu;
	__u32 waker_tid;
	__u32 variant; /* enum wakeup_variant */
	__s32 prio;
	char comm[TASK_COMM_LEN];
};

struct migrate_event {
	struct event_header hdr;
	__u32 orig_cpu;
	__u32 dest_cpu;
};

/* hdr.pid/tid is the parent. */
struct fork_event {
	struct event_header hdr;
	__u32 child_pid;
	__u32 child_tid;
	char comm[TASK_COMM_LEN];
};

struct exec_event {
	struct event_header hdr;
	char comm[TASK_COMM_LEN];
	char filename[EXEC_FILENAME_LEN];
};

struct exit_event {
	struct event_header hdr;
	__s32 exit_code;
	__u32 pad;
	char comm[TASK_COMM_LEN];
};

struct comm_event {
	struct event_header hdr;
	char old_comm[TASK_COMM_LEN];
	char new_comm[TASK_COMM_LEN];
};

/*
 * A task's cgroups: at the first recorded switch it takes part in, and at
 * the first after they change. hdr.pid/tid is the task.
 */
struct task_cgroup_event {
	struct event_header hdr;
	__u64 cgroup_id;        /* its cgroup v2 */
	__u64 v1_cpu_cgroup_id; /* its cgroup in the v1 cpu controller's hierarchy; 0: not recorded */
	__u32 ns_pid;           /* its process id in its own pid namespace (NSpid's last field); 0: not read */
	__u32 ns_tid;           /* its thread id there */
	__u64 autogroup_id;     /* its scheduler group's autogroup id; 0: not in an autogroup */
	__u64 sched_cgroup_id;  /* else its scheduler group's cgroup (kernfs id); 0: not read */
	__u32 group_weight;     /* that group's weight (nice 0: 1024); 0: no group scheduling */
	__u32 reserved;
};

/* A cgroup made while recording. hdr.pid/tid is the task that made it. */
struct cgroup_event {
	struct event_header hdr;
	__u64 cgroup_id;
	__u32 hierarchy; /* enum cgroup_hierarchy */
	__u32 pad;
	char path[CGROUP_PATH_LEN]; /* from the hierarchy's root */
};

/*
 * Hard IRQ, softirq or system vector, emitted at exit. hdr.ts_ns is the
 * entry time; hdr.pid/tid is the task it interrupted (0 for idle).
 */
struct irq_event {
	struct event_header hdr;
	__u64 duration_ns;
	__s32 irq; /* IRQ line, softirq vector, or enum irq_vector_kind */
	__u32 pad;
	char name[IRQ_NAME_LEN]; /* hard IRQs: the handler's name */
};

#endif /* LAUNCHGAP_EVENTS_H */
