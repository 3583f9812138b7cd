/* generated from schema/trace.toml by scripts/gen_schema.py; do not edit */
/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records the BPF programs put in the ring buffer (schema/trace.toml's [ring_record]
 * tables). The recorder decodes the same layout through its generated Rust structs
 * (ring_records.rs); each side asserts, when compiled, that every size and offset is the
 * schema's, so the wire cannot change on one side alone.
 */
#ifndef LAUNCHGAP_RING_RECORDS_H
#define LAUNCHGAP_RING_RECORDS_H

/* record types, name-table enums (wakeup variants, x86 system vectors) and the sizes below */
#include "trace_schema.h"

/* Fail the build where a compiler lays a record out other than the schema does */
#define RING_RECORD_SIZE(s, n) _Static_assert(sizeof(struct s) == n, #s "'s size")
#define RING_RECORD_AT(s, f, n) _Static_assert(__builtin_offsetof(struct s, f) == n, #s "." #f)

/* Every record starts with this. pid/tid is the task the event is about. */
struct event_header {
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 type; /* enum event_type */
	__u32 cpu;
	__u32 pid; /* tgid */
	__u32 tid;
};
RING_RECORD_SIZE(event_header, 24);
RING_RECORD_AT(event_header, ts_ns, 0);
RING_RECORD_AT(event_header, type, 8);
RING_RECORD_AT(event_header, cpu, 12);
RING_RECORD_AT(event_header, pid, 16);
RING_RECORD_AT(event_header, tid, 20);

/* One logical kernel launch: exactly one driver-entry uprobe hit. */
struct launch_event {
	struct event_header hdr;
	__u64 func; /* CUfunction, or CUgraphExec for graph launches */
	__u64 stream;
	__u32 grid[3];
	__u32 block[3];
	__u32 shared_mem;
	__u16 api; /* attach cookie of the driver probe */
	__u16 runtime_api; /* runtime probe that led here (--api-names), else 0 */
};
RING_RECORD_SIZE(launch_event, 72);
RING_RECORD_AT(launch_event, hdr, 0);
RING_RECORD_AT(launch_event, func, 24);
RING_RECORD_AT(launch_event, stream, 32);
RING_RECORD_AT(launch_event, grid, 40);
RING_RECORD_AT(launch_event, block, 52);
RING_RECORD_AT(launch_event, shared_mem, 64);
RING_RECORD_AT(launch_event, api, 68);
RING_RECORD_AT(launch_event, runtime_api, 70);

/*
 * Launches staged per thread and written together: one ring-buffer record for up to
 * LAUNCH_BATCH_SIZE launches, each a complete launch_event with its own header. Not an event type
 * of its own (its drops count as launches): hdr.type is RECORD_LAUNCH_BATCH, hdr.ts_ns the flush.
 * Only the first `count` launches are written.
 */
struct launch_batch {
	struct event_header hdr;
	__u32 count;
	__u32 pad;
	struct launch_event launches[LAUNCH_BATCH_SIZE];
};
RING_RECORD_SIZE(launch_batch, 1184);
RING_RECORD_AT(launch_batch, hdr, 0);
RING_RECORD_AT(launch_batch, count, 24);
RING_RECORD_AT(launch_batch, pad, 28);
RING_RECORD_AT(launch_batch, launches, 32);

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
RING_RECORD_SIZE(sync_event, 56);
RING_RECORD_AT(sync_event, hdr, 0);
RING_RECORD_AT(sync_event, duration_ns, 24);
RING_RECORD_AT(sync_event, stream, 32);
RING_RECORD_AT(sync_event, bytes, 40);
RING_RECORD_AT(sync_event, api, 48);
RING_RECORD_AT(sync_event, runtime_api, 50);
RING_RECORD_AT(sync_event, pad, 52);

/*
 * With --api-names: a runtime call that returned without reaching any driver entry point launchgap
 * probes. With a nonzero return code, an attempt that failed inside the runtime (say, a launch
 * with no device); with 0, a call that went through a driver function not probed. hdr.ts_ns is the
 * runtime entry.
 */
struct runtime_only_event {
	struct event_header hdr;
	__u64 duration_ns;
	__s32 return_code; /* the runtime's return value (cudaError_t) */
	__u16 runtime_api; /* attach cookie of the runtime probe */
	__u16 pad;
};
RING_RECORD_SIZE(runtime_only_event, 40);
RING_RECORD_AT(runtime_only_event, hdr, 0);
RING_RECORD_AT(runtime_only_event, duration_ns, 24);
RING_RECORD_AT(runtime_only_event, return_code, 32);
RING_RECORD_AT(runtime_only_event, runtime_api, 36);
RING_RECORD_AT(runtime_only_event, pad, 38);

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
	__u8 preempt; /* the scheduler preempted prev (tracepoint argument) */
	__u8 voluntary; /* counted in prev's nvcsw: it blocked; else nivcsw: still runnable */
	__u8 pad[6];
	char prev_comm[TASK_COMM_LEN];
	char next_comm[TASK_COMM_LEN];
};
RING_RECORD_SIZE(switch_event, 104);
RING_RECORD_AT(switch_event, hdr, 0);
RING_RECORD_AT(switch_event, prev_state, 24);
RING_RECORD_AT(switch_event, prev_nvcsw, 32);
RING_RECORD_AT(switch_event, prev_nivcsw, 40);
RING_RECORD_AT(switch_event, next_pid, 48);
RING_RECORD_AT(switch_event, next_tid, 52);
RING_RECORD_AT(switch_event, prev_prio, 56);
RING_RECORD_AT(switch_event, next_prio, 60);
RING_RECORD_AT(switch_event, preempt, 64);
RING_RECORD_AT(switch_event, voluntary, 65);
RING_RECORD_AT(switch_event, pad, 66);
RING_RECORD_AT(switch_event, prev_comm, 72);
RING_RECORD_AT(switch_event, next_comm, 88);

/* hdr.pid/tid is the task woken; hdr.cpu is where the waker ran. */
struct wakeup_event {
	struct event_header hdr;
	__u32 target_cpu;
	__u32 waker_tid;
	__u32 variant; /* enum wakeup_variant */
	__s32 prio;
	char comm[TASK_COMM_LEN];
};
RING_RECORD_SIZE(wakeup_event, 56);
RING_RECORD_AT(wakeup_event, hdr, 0);
RING_RECORD_AT(wakeup_event, target_cpu, 24);
RING_RECORD_AT(wakeup_event, waker_tid, 28);
RING_RECORD_AT(wakeup_event, variant, 32);
RING_RECORD_AT(wakeup_event, prio, 36);
RING_RECORD_AT(wakeup_event, comm, 40);

/* A task moves to another CPU's run queue. */
struct migrate_event {
	struct event_header hdr;
	__u32 orig_cpu;
	__u32 dest_cpu;
};
RING_RECORD_SIZE(migrate_event, 32);
RING_RECORD_AT(migrate_event, hdr, 0);
RING_RECORD_AT(migrate_event, orig_cpu, 24);
RING_RECORD_AT(migrate_event, dest_cpu, 28);

/* hdr.pid/tid is the parent. */
struct fork_event {
	struct event_header hdr;
	__u32 child_pid;
	__u32 child_tid;
	char comm[TASK_COMM_LEN];
};
RING_RECORD_SIZE(fork_event, 48);
RING_RECORD_AT(fork_event, hdr, 0);
RING_RECORD_AT(fork_event, child_pid, 24);
RING_RECORD_AT(fork_event, child_tid, 28);
RING_RECORD_AT(fork_event, comm, 32);

/* A task executes a file. */
struct exec_event {
	struct event_header hdr;
	char comm[TASK_COMM_LEN];
	char filename[EXEC_FILENAME_LEN];
};
RING_RECORD_SIZE(exec_event, 168);
RING_RECORD_AT(exec_event, hdr, 0);
RING_RECORD_AT(exec_event, comm, 24);
RING_RECORD_AT(exec_event, filename, 40);

/* A thread exits. */
struct exit_event {
	struct event_header hdr;
	__s32 exit_code;
	__u32 pad;
	char comm[TASK_COMM_LEN];
};
RING_RECORD_SIZE(exit_event, 48);
RING_RECORD_AT(exit_event, hdr, 0);
RING_RECORD_AT(exit_event, exit_code, 24);
RING_RECORD_AT(exit_event, pad, 28);
RING_RECORD_AT(exit_event, comm, 32);

/* A task renames itself. */
struct comm_event {
	struct event_header hdr;
	char old_comm[TASK_COMM_LEN];
	char new_comm[TASK_COMM_LEN];
};
RING_RECORD_SIZE(comm_event, 56);
RING_RECORD_AT(comm_event, hdr, 0);
RING_RECORD_AT(comm_event, old_comm, 24);
RING_RECORD_AT(comm_event, new_comm, 40);

/*
 * A task's cgroups: at the first recorded switch it takes part in, and at the first after they
 * change. hdr.pid/tid is the task.
 */
struct task_cgroup_event {
	struct event_header hdr;
	__u64 cgroup_id; /* its cgroup v2 */
	__u64 v1_cpu_cgroup_id; /* its cgroup in the v1 cpu controller's hierarchy; 0: not recorded */
	__u32 ns_pid; /* its process id in its own pid namespace (NSpid's last field); 0: not read */
	__u32 ns_tid; /* its thread id there */
	__u64 autogroup_id; /* its scheduler group's autogroup id; 0: not in an autogroup */
	__u64 sched_cgroup_id; /* else its scheduler group's cgroup (kernfs id); 0: not read */
	__u32 group_weight; /* that group's weight (nice 0: 1024); 0: no group scheduling */
	__u32 reserved;
};
RING_RECORD_SIZE(task_cgroup_event, 72);
RING_RECORD_AT(task_cgroup_event, hdr, 0);
RING_RECORD_AT(task_cgroup_event, cgroup_id, 24);
RING_RECORD_AT(task_cgroup_event, v1_cpu_cgroup_id, 32);
RING_RECORD_AT(task_cgroup_event, ns_pid, 40);
RING_RECORD_AT(task_cgroup_event, ns_tid, 44);
RING_RECORD_AT(task_cgroup_event, autogroup_id, 48);
RING_RECORD_AT(task_cgroup_event, sched_cgroup_id, 56);
RING_RECORD_AT(task_cgroup_event, group_weight, 64);
RING_RECORD_AT(task_cgroup_event, reserved, 68);

/* A cgroup made while recording. hdr.pid/tid is the task that made it. */
struct cgroup_event {
	struct event_header hdr;
	__u64 cgroup_id;
	__u32 hierarchy; /* enum cgroup_hierarchy */
	__u32 pad;
	char path[CGROUP_PATH_LEN]; /* from the hierarchy's root */
};
RING_RECORD_SIZE(cgroup_event, 1064);
RING_RECORD_AT(cgroup_event, hdr, 0);
RING_RECORD_AT(cgroup_event, cgroup_id, 24);
RING_RECORD_AT(cgroup_event, hierarchy, 32);
RING_RECORD_AT(cgroup_event, pad, 36);
RING_RECORD_AT(cgroup_event, path, 40);

/*
 * Hard IRQ, softirq or system vector, emitted at exit. hdr.ts_ns is the entry time; hdr.pid/tid is
 * the task it interrupted (0 for idle).
 */
struct irq_event {
	struct event_header hdr;
	__u64 duration_ns;
	__s32 irq; /* IRQ line, softirq vector, or enum irq_vector_kind */
	__u32 pad;
	char name[IRQ_NAME_LEN]; /* hard IRQs: the handler's name */
};
RING_RECORD_SIZE(irq_event, 72);
RING_RECORD_AT(irq_event, hdr, 0);
RING_RECORD_AT(irq_event, duration_ns, 24);
RING_RECORD_AT(irq_event, irq, 32);
RING_RECORD_AT(irq_event, pad, 36);
RING_RECORD_AT(irq_event, name, 40);

#endif /* LAUNCHGAP_RING_RECORDS_H */
