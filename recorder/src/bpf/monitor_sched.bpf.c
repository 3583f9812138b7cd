// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The monitor's scheduling programs: each target thread's time preempted,
 * waiting in the run queue and blocked, its switches and migrations, the
 * same state rules as the trace analysis (docs/metrics.md, "Thread
 * states"), and who ran on its CPU while it waited. Task lifetime keeps the
 * target set and the maps current: children of targets are targets, a dead
 * thread's counters are folded into its process and its entry freed.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "monitor_maps.bpf.h"
#include "sched_helpers.bpf.h"

#define IDLE_COMM "swapper"

static __always_inline bool waiting(const struct thread_stats *t)
{
	return t->state.run_state == RUN_PREEMPTED || t->state.run_state == RUN_RUNQUEUE;
}

static __always_inline void charge_culprit(__u32 pid, __u8 cause, struct task_struct *ran, __u64 ns)
{
	struct culprit_key key = {.pid = pid, .cause = cause};
	__u64 zero = 0, *total;
	__u32 first = 0;

	/* the idle task has one name per CPU (swapper/N); as a culprit it is one thing */
	if (ran->pid == 0)
		__builtin_memcpy(key.comm, IDLE_COMM, sizeof(IDLE_COMM));
	else
		BPF_CORE_READ_STR_INTO(&key.comm, ran, comm);
	total = bpf_map_lookup_elem(&culprits, &key);
	if (!total) {
		bpf_map_update_elem(&culprits, &key, &zero, BPF_NOEXIST);
		total = bpf_map_lookup_elem(&culprits, &key);
	}
	if (total) {
		__sync_fetch_and_add(total, ns);
		return;
	}
	count_lost(LOST_CULPRIT_MAP_FULL);
	total = bpf_map_lookup_elem(&lost_culprit_ns, &first);
	if (total)
		*total += ns;
}

/*
 * `ran` is leaving this CPU after running since run_start: that time is
 * charged to every target waiting here, from when each began waiting here.
 * A slot whose thread no longer waits here (it ran, migrated, died) is freed.
 */
static __always_inline void charge_waiters(struct cpu_waiters *w, __u32 cpu, struct task_struct *ran, __u64 now)
{
	__u32 ran_tid = ran->pid;
	__u64 run_start = w->run_start_ns;

	for (int i = 0; i < MAX_WAITERS_PER_CPU; i++) {
		__u32 tid = w->tids[i];
		struct thread_stats *t;
		__u64 from;

		if (!tid || tid == ran_tid)
			continue;
		t = lookup_thread(tid);
		if (!t || !waiting(t) || t->state.cpu != cpu) {
			__sync_val_compare_and_swap(&w->tids[i], tid, 0);
			continue;
		}
		from = max_u64(run_start, t->state.waiting_here_since_ns);
		if (run_start && now > from)
			charge_culprit(t->state.pid, t->state.run_state, ran, now - from);
	}
}

static __always_inline void switched_out(struct task_struct *prev, bool preempt, unsigned int prev_state,
					 __u32 cpu, __u64 now)
{
	bool voluntary = switch_was_voluntary(prev, preempt, prev_state, prev->nvcsw, prev->nivcsw);
	struct thread_stats *t = thread_of(prev);

	if (!t)
		return;
	if (voluntary) {
		t->counters.voluntary_switches += 1;
		if (t->state.sync_start_ns)
			t->state.sync_blocked = 1;
	} else {
		t->counters.involuntary_switches += 1;
	}
	if (prev_state & TASK_DEAD) {
		/* its last switch: the id may be reused by an unrelated task */
		set_target_thread(t->state.tid, 0);
		retire_thread(t, prev);
		return;
	}
	t->state.since_ns = now;
	t->state.cpu = cpu;
	if (voluntary) {
		t->state.run_state = RUN_BLOCKED;
	} else {
		t->state.run_state = RUN_PREEMPTED;
		register_waiter(t, cpu, now);
	}
}

static __always_inline void switched_in(struct task_struct *next, __u32 cpu, __u64 now)
{
	struct thread_stats *t = thread_of(next);
	__u64 waited;

	if (!t)
		return;
	waited = now > t->state.since_ns ? now - t->state.since_ns : 0;
	if (t->state.run_state == RUN_PREEMPTED) {
		t->counters.preempted_ns += waited;
		add_interference(t, CAUSE_PREEMPTED, waited);
	} else if (t->state.run_state == RUN_RUNQUEUE) {
		t->counters.runqueue_ns += waited;
		add_interference(t, CAUSE_RUNQUEUE, waited);
	}
	unregister_waiter(t);
	t->state.run_state = RUN_RUNNING;
	t->state.since_ns = now;
	t->state.cpu = cpu;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(monitor_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_waiters *w = waiters_on(cpu);
	__u64 now = bpf_ktime_get_ns();

	if (w) {
		charge_waiters(w, cpu, prev, now);
		w->run_start_ns = now;
	}
	if (target_task(prev))
		switched_out(prev, preempt, sched_switch_prev_state(ctx, prev), cpu, now);
	if (target_task(next))
		switched_in(next, cpu, now);
	return 0;
}

/* sched_wakeup and sched_wakeup_new: a blocked (or new) thread becomes runnable on `cpu`. */
static __always_inline int woken(struct task_struct *p)
{
	struct thread_stats *t;
	__u64 now;

	if (!target_task(p))
		return 0;
	t = thread_of(p);
	if (!t)
		return 0;
	/* the kernel also traces wakeups of tasks already runnable: those change nothing */
	if (t->state.run_state != RUN_BLOCKED && t->state.run_state != RUN_UNKNOWN)
		return 0;
	now = bpf_ktime_get_ns();
	if (t->state.run_state == RUN_BLOCKED && now > t->state.since_ns) {
		t->counters.blocked_ns += now - t->state.since_ns;
		add_gap_cause(t, CAUSE_BLOCKED, now - t->state.since_ns);
	}
	t->state.run_state = RUN_RUNQUEUE;
	t->state.since_ns = now;
	/* TASK_CPU_UNKNOWN (no CPU field we know) has no waiter slots: not registered anywhere */
	register_waiter(t, task_cpu_of(p), now);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(monitor_sched_wakeup, struct task_struct *p)
{
	return woken(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(monitor_sched_wakeup_new, struct task_struct *p)
{
	return woken(p);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(monitor_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct thread_stats *t;

	if (!target_task(p))
		return 0;
	t = thread_of(p);
	if (!t)
		return 0;
	t->counters.migrations += 1;
	if (waiting(t))
		register_waiter(t, dest_cpu, bpf_ktime_get_ns()); /* it now waits there */
	else
		t->state.cpu = dest_cpu;
	return 0;
}

/* Children of targets are targets: new processes wholly, new threads by id. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(monitor_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 child_pid = child->tgid;

	if (!target_task(parent))
		return 0;
	set_target_thread(child->pid, TARGET_FLAG);
	if (child_pid != parent->tgid)
		add_target_process(child_pid);
	return 0;
}

/* exec renames the thread: the counters carry the new command name. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(monitor_sched_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct thread_stats *t;

	if (!target_task(p))
		return 0;
	t = thread_of(p);
	if (t)
		BPF_CORE_READ_STR_INTO(&t->state.comm, p, comm);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(monitor_task_rename, struct task_struct *task, const char *comm)
{
	struct thread_stats *t;

	if (!target_task(task))
		return 0;
	t = lookup_thread(task->pid);
	if (t)
		bpf_probe_read_kernel_str(t->state.comm, sizeof(t->state.comm), comm);
	return 0;
}

/* include/linux/sched/signal.h: live threads of a thread group; 0 once the last one exits. */
static __always_inline bool last_thread_of_process(struct task_struct *p)
{
	return BPF_CORE_READ(p, signal, live.counter) == 0;
}

/*
 * The last thread of a process leaves: the process stops being a target,
 * so the target set (like the thread map) holds only the living. Threads
 * are retired at their final switch (above), which comes after this.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(monitor_sched_process_exit, struct task_struct *p)
{
	__u32 pid = p->tgid;

	if (target_task(p) && last_thread_of_process(p))
		bpf_map_delete_elem(&target_processes, &pid);
	return 0;
}

/* include/linux/cgroup.h: cgroup_parent(), the parent's css is the first member */
static __always_inline struct cgroup *parent_cgroup(struct cgroup *cgrp)
{
	return (struct cgroup *)BPF_CORE_READ(cgrp, self.parent);
}

/* The cgroup, or one above it, is a --cgroup target. */
static __always_inline bool cgroup_is_target(struct cgroup *cgrp, __u32 hierarchy_id)
{
	struct cgroup_key key = {.hierarchy_id = hierarchy_id};

	for (int depth = 0; depth < MAX_CGROUP_DEPTH && cgrp; depth++) {
		key.cgroup_id = BPF_CORE_READ(cgrp, kn, id);
		if (bpf_map_lookup_elem(&target_cgroups, &key))
			return true;
		cgrp = parent_cgroup(cgrp);
	}
	return false;
}

/*
 * A task moved between cgroups (every hierarchy, v1 and v2, reports here).
 * Its counters follow its cgroup v2 (for the labels). With --cgroup: into a
 * target cgroup it becomes a target (its whole process when the move is of
 * the thread group); out of one, in a hierarchy a target is in, it stops
 * being one.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(monitor_cgroup_attach_task, struct cgroup *dst_cgrp, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	__u32 hierarchy_id = BPF_CORE_READ(dst_cgrp, root, hierarchy_id);
	__u32 pid = task->tgid, tid = task->pid;
	struct cgroup_key hierarchy = {.hierarchy_id = hierarchy_id};
	struct thread_stats *t;

	if (hierarchy_id == UNIFIED_HIERARCHY_ID) {
		t = lookup_thread(tid);
		if (t)
			t->state.cgroup_id = BPF_CORE_READ(dst_cgrp, kn, id);
	}
	if (target_mode != TARGET_CGROUPS)
		return 0;
	if (cgroup_is_target(dst_cgrp, hierarchy_id)) {
		set_target_thread(tid, TARGET_FLAG);
		if (threadgroup)
			add_target_process(pid);
		return 0;
	}
	if (bpf_map_lookup_elem(&target_cgroups, &hierarchy) && is_target(pid, tid)) {
		set_target_thread(tid, 0);
		if (threadgroup)
			bpf_map_delete_elem(&target_processes, &pid);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
