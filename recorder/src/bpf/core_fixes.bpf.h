/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the kernel changed under launchgap's programs, one named helper per
 * change (the libbpf-tools core_fixes.bpf.h pattern). Each decides by a CO-RE
 * existence check against the running kernel's BTF, which libbpf resolves at
 * load time into a constant: the verifier then prunes the branch this kernel
 * cannot take, so an older kernel never sees, say, a read of an argument its
 * tracepoint does not have. The flavoured types (___new, ___old) name each
 * layout here, so the programs build against any host's vmlinux.h.
 *
 * The loader reads the same facts from the same BTF (kernel_features.rs) to
 * write which of these fallbacks a recording used into its meta.json.
 */
#ifndef LAUNCHGAP_CORE_FIXES_BPF_H
#define LAUNCHGAP_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * commit 2f064a59a11f ("sched: Change task_struct::state", v5.14) renamed
 * task_struct::state (a long) to __state (an unsigned int). The old field is
 * read at its size on this kernel, whatever the size declared here.
 */
struct task_struct___new_state {
	unsigned int __state;
} __attribute__((preserve_access_index));

struct task_struct___old_state {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *task)
{
	struct task_struct___new_state *t = (void *)task;
	struct task_struct___old_state *old = (void *)task;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ_BITFIELD_PROBED(old, state);
}

/*
 * commit fa2c3254d7cf ("sched/tracing: Don't re-read p->state when emitting
 * sched_switch event", v5.18) passed the switched-out task's state to
 * sched_switch; commit 9c2136be0878 (v5.18) moved it after `next`, so older
 * programs' (preempt, prev, next) still read right. CO-RE compares the whole
 * prototype (argument count and types), so this typedef exists only where
 * sched_switch has the fourth argument. Before it, prev's state is read
 * from prev at the tracepoint, as those kernels' own sched_switch event did:
 * a wakeup racing the switch can already show the task running (the race the
 * commit closed).
 */
typedef void (*btf_trace_sched_switch___prev_state)(void *, bool, struct task_struct *, struct task_struct *,
						   unsigned int);

static __always_inline bool sched_switch_has_prev_state(void)
{
	return bpf_core_type_exists(btf_trace_sched_switch___prev_state);
}

/* prev's state as sched_switch saw it: its fourth argument where it has one. */
static __always_inline unsigned int sched_switch_prev_state(unsigned long long *ctx, struct task_struct *prev)
{
	if (sched_switch_has_prev_state())
		return (unsigned int)ctx[3];
	return task_state(prev);
}

/*
 * commit bcf9033e5449 ("sched: move CPU field back into thread_info if
 * THREAD_INFO_IN_TASK=y", v5.16) moved a task's CPU from task_struct::cpu to
 * thread_info::cpu (x86-64 has THREAD_INFO_IN_TASK since v4.9).
 *
 * A kernel with neither field (no layout launchgap knows of) gets
 * TASK_CPU_UNKNOWN, a CPU number no machine has, rather than 0: a silent 0
 * would name CPU 0 and be taken for it. Callers keep it visible: the
 * recorder writes it as it is into a wakeup's target_cpu and a migration's
 * orig_cpu (schema/trace.toml's docs of those columns say so), where no
 * reader can mistake it for a CPU; the monitor finds no
 * waiter slots for it (cpu_waiters has one entry per CPU), so no culprit is
 * charged to a CPU the thread never waited on.
 */
/* TASK_CPU_UNKNOWN: schema/trace.toml's constant, in the generated trace_schema.h */
#include "trace_schema.h"
struct thread_info___with_cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

struct task_struct___cpu_in_thread_info {
	struct thread_info___with_cpu thread_info;
} __attribute__((preserve_access_index));

struct task_struct___cpu_in_task {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu_of(struct task_struct *task)
{
	struct task_struct___cpu_in_thread_info *t = (void *)task;
	struct task_struct___cpu_in_task *old = (void *)task;

	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	if (bpf_core_field_exists(old->cpu))
		return BPF_CORE_READ(old, cpu);
	return TASK_CPU_UNKNOWN;
}

#endif /* LAUNCHGAP_CORE_FIXES_BPF_H */
