/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a context switch means for the task switched out, shared by the
 * recorder's and the monitor's scheduling programs so both classify a
 * switch the same way (each kernel quirk a named helper, in core_fixes.bpf.h).
 */
#ifndef LAUNCHGAP_SCHED_HELPERS_BPF_H
#define LAUNCHGAP_SCHED_HELPERS_BPF_H

/* TASK_DEAD (the prev_state bit of a task's last switch-out) and the record
 * names come from schema/trace.toml through the generated header */
#include "trace_schema.h"

#include "core_fixes.bpf.h"

/* The kernel's switch counters as of a task's previous switch-out. */
struct switch_counts {
	__u64 nvcsw;
	__u64 nivcsw;
	bool known;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct switch_counts);
} last_switch_counts SEC(".maps") __weak;

/*
 * Voluntary means the switch was counted in nvcsw (the task blocked), as
 * /proc/PID/task/TID/status counts it. Comparing the counters is exact; the
 * (preempt, prev_state) rule is the fallback for a task's first switch, and
 * it errs only when a pending signal aborted a block.
 */
static __always_inline bool switch_was_voluntary(struct task_struct *prev, bool preempt,
						 unsigned int prev_state, __u64 nvcsw, __u64 nivcsw)
{
	struct switch_counts *last;
	bool voluntary = !preempt && prev_state != 0;

	last = bpf_task_storage_get(&last_switch_counts, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last)
		return voluntary;
	if (last->known && (nvcsw - last->nvcsw) + (nivcsw - last->nivcsw) == 1)
		voluntary = nvcsw != last->nvcsw;
	last->nvcsw = nvcsw;
	last->nivcsw = nivcsw;
	last->known = true;
	return voluntary;
}

#endif /* LAUNCHGAP_SCHED_HELPERS_BPF_H */
