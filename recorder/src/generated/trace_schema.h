/* generated from schema/trace.toml by scripts/gen_schema.py; do not edit */
/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef LAUNCHGAP_TRACE_SCHEMA_H
#define LAUNCHGAP_TRACE_SCHEMA_H

/* bytes kept of the path of a cgroup made while recording, NUL included: what the kernel's cgroup tracepoints give (TRACE_CGROUP_PATH_LEN), which cut a longer path there */
#define CGROUP_PATH_LEN 1024
/* bytes kept of an exec's filename */
#define EXEC_FILENAME_LEN 128
/* bytes kept of a hard IRQ handler's name */
#define IRQ_NAME_LEN 32
/* launches a thread stages before they go to the ring buffer as one record */
#define LAUNCH_BATCH_SIZE 16
/* the record type of a launch batch: not an event kind (its drops count as launches) */
#define RECORD_LAUNCH_BATCH 100
/* bytes of a task name, NUL included (the kernel's TASK_COMM_LEN) */
#define TASK_COMM_LEN 16
/* the CPU a wakeup's target_cpu or a migration's orig_cpu holds on a kernel whose task_struct has no CPU field launchgap knows ((u32)-1: a number no CPU has; core_fixes.bpf.h task_cpu_of); the readers take it as unknown, not as an impossible CPU */
#define TASK_CPU_UNKNOWN 4294967295
/* the prev_state bit of a task's last switch-out (include/linux/sched.h) */
#define TASK_DEAD 128

/* the record types BPF programs put in the ring buffer */
enum event_type {
	EVENT_LAUNCH = 1,
	EVENT_SYNC = 2,
	EVENT_SWITCH = 3,
	EVENT_WAKEUP = 4,
	EVENT_MIGRATE = 5,
	EVENT_FORK = 6,
	EVENT_EXEC = 7,
	EVENT_EXIT = 8,
	EVENT_COMM = 9,
	EVENT_HARDIRQ = 10,
	EVENT_SOFTIRQ = 11,
	EVENT_IRQ_VECTOR = 12,
	EVENT_RUNTIME_ONLY = 13,
	EVENT_TASK_CGROUP = 14,
	EVENT_CGROUP_MADE = 15,
	EVENT_TYPE_COUNT = 16,
};

/* the cgroup hierarchy a cgroup id belongs to (ids are unique within one hierarchy only): v2, the unified hierarchy; v1_cpu, the cgroup v1 hierarchy of the cpu controller, on hosts that mount one */
enum cgroup_hierarchy {
	HIERARCHY_v2 = 0,
	HIERARCHY_v1_cpu = 1,
};

/* x86 system vectors, traced through the irq_vectors tracepoints */
enum irq_vector_kind {
	VECTOR_LOCAL_TIMER = 0,
	VECTOR_RESCHEDULE = 1,
	VECTOR_CALL_FUNCTION = 2,
	VECTOR_CALL_FUNCTION_SINGLE = 3,
	VECTOR_IRQ_WORK = 4,
	VECTOR_KIND_COUNT = 5,
};
/* X(arg, NAME, name) for each, arg passed through: VECTOR_NAME its enum member, name its tracepoints' prefix */
#define IRQ_VECTORS(X, arg) X(arg, LOCAL_TIMER, local_timer) X(arg, RESCHEDULE, reschedule) X(arg, CALL_FUNCTION, call_function) X(arg, CALL_FUNCTION_SINGLE, call_function_single) X(arg, IRQ_WORK, irq_work)

/* which wakeup tracepoint a wakeup record came from */
enum wakeup_variant {
	WAKEUP_WAKING = 0,
	WAKEUP_WAKEUP = 1,
	WAKEUP_NEW = 2,
};

#endif /* LAUNCHGAP_TRACE_SCHEMA_H */
