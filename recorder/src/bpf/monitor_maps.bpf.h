/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The monitor's maps and the helpers every monitor program shares. Every
 * map is sized by the loader before load and preallocated, so the monitor's
 * memory is fixed at start whatever its uptime; an update that does not fit
 * is counted in lost_updates, never dropped silently. Weak definitions, so
 * each per-concern object can include this and the linker merges them.
 */
#ifndef LAUNCHGAP_MONITOR_MAPS_BPF_H
#define LAUNCHGAP_MONITOR_MAPS_BPF_H

#include "cgroup_helpers.bpf.h"
#include "monitor.h"
#include "targets.bpf.h"

/* Set by the loader before load. */
__weak const volatile __u32 target_mode = TARGET_CUDA_CALLERS;

/* Counters and state of every target thread, by thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* --max-threads */
	__type(key, __u32);
	__type(value, struct thread_stats);
} threads SEC(".maps") __weak;

/* Exited threads' counters, folded into their process until user space takes them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES); /* --max-processes */
	__type(key, struct process_key);
	__type(value, struct process_remains);
} retired SEC(".maps") __weak;

/* Nanoseconds each task (by command name) ran on a target's CPU while it waited. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-culprits */
	__type(key, struct culprit_key);
	__type(value, __u64);
} culprits SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS); /* resized to the possible CPUs */
	__type(key, __u32);
	__type(value, struct cpu_waiters);
} cpu_waiters SEC(".maps") __weak;

/* --cgroup targets (and, with cgroup_id 0, the hierarchies they are in). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct cgroup_key);
	__type(value, __u8);
} target_cgroups SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_UPDATE_KIND_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} lost_updates SEC(".maps") __weak;

/* Culprit nanoseconds that found no room in `culprits`. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost_culprit_ns SEC(".maps") __weak;

/*
 * All zeros, never written: new entries are inserted from it, as map values
 * are larger than the BPF stack (and too large for an inlined memset).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct thread_stats);
} zeroes SEC(".maps") __weak;

static __always_inline void count_lost(__u32 kind)
{
	__u64 *n = bpf_map_lookup_elem(&lost_updates, &kind);
	if (n)
		*n += 1;
}

static __always_inline __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

/* A process becomes a target (all its threads, present and future). */
static __always_inline bool add_target_process(__u32 pid)
{
	__u8 one = TARGET_FLAG;

	if (bpf_map_lookup_elem(&target_processes, &pid))
		return true;
	if (bpf_map_update_elem(&target_processes, &pid, &one, BPF_NOEXIST) == 0)
		return true;
	if (bpf_map_lookup_elem(&target_processes, &pid)) /* another CPU added it first */
		return true;
	count_lost(LOST_PROCESS_MAP_FULL);
	return false;
}

/*
 * By default a process becomes a target when it initialises CUDA or calls
 * a probed driver entry point (the uprobes fire for every process mapping a
 * probed library); with -p or --cgroup only the chosen ones count.
 */
static __always_inline bool target_or_adopted(__u32 pid, __u32 tid)
{
	if (is_target(pid, tid))
		return true;
	if (target_mode != TARGET_CUDA_CALLERS || !add_target_process(pid))
		return false;
	set_target_thread(tid, TARGET_FLAG);
	return true;
}

/*
 * Every task pointer here is trusted (bpf_get_current_task_btf(), or a
 * tp_btf argument), so its fields are read with plain loads, relocated by
 * CO-RE, rather than a bpf_probe_read_kernel() call each: on the paths
 * run at every launch and switch that is most of the cost.
 */
static __always_inline bool target_task(struct task_struct *task)
{
	return is_target(task->tgid, task->pid);
}

static __always_inline void fill_thread_identity(struct thread_stats *t, struct task_struct *task)
{
	t->state.start_ns = BPF_CORE_READ(task, start_boottime);
	t->state.process_start_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	t->state.pid = BPF_CORE_READ(task, tgid);
	t->state.tid = BPF_CORE_READ(task, pid);
	BPF_CORE_READ_STR_INTO(&t->state.comm, task, comm);
	t->state.cgroup_id = task_cgroup_v2_id(task);
	t->state.waiter_cpu = -1;
}

static __always_inline struct thread_stats *lookup_thread(__u32 tid)
{
	return bpf_map_lookup_elem(&threads, &tid);
}

static __always_inline void unregister_waiter(struct thread_stats *t);
static __always_inline void retire_thread(struct thread_stats *t, struct task_struct *task);

/*
 * The counters of a target thread, made on first sight. An entry whose
 * start time differs belongs to an earlier thread with the same id (its
 * death went unseen): it is retired first, so nothing is mixed or lost.
 */
static __always_inline struct thread_stats *thread_of(struct task_struct *task)
{
	__u32 tid = task->pid;
	__u64 start_ns = task->start_boottime;
	struct thread_stats *t = lookup_thread(tid);
	__u32 zero = 0;

	if (t) {
		if (t->state.start_ns == start_ns)
			return t;
		retire_thread(t, NULL); /* the earlier thread is gone: no task to ask */
	}
	t = bpf_map_lookup_elem(&zeroes, &zero);
	if (!t)
		return NULL;
	bpf_map_update_elem(&threads, &tid, t, BPF_NOEXIST);
	t = lookup_thread(tid);
	if (!t) {
		count_lost(LOST_THREAD_MAP_FULL);
		return NULL;
	}
	fill_thread_identity(t, task);
	return t;
}

static __always_inline struct cpu_waiters *waiters_on(__u32 cpu)
{
	return bpf_map_lookup_elem(&cpu_waiters, &cpu);
}

/* The thread waits on `cpu` from now: whoever runs there until it runs is a culprit. */
static __always_inline void register_waiter(struct thread_stats *t, __u32 cpu, __u64 now)
{
	struct cpu_waiters *w;
	__u32 tid = t->state.tid;

	unregister_waiter(t);
	t->state.cpu = cpu;
	t->state.waiting_here_since_ns = now;
	w = waiters_on(cpu);
	if (!w)
		return;
	for (int i = 0; i < MAX_WAITERS_PER_CPU; i++) {
		if (__sync_val_compare_and_swap(&w->tids[i], 0, tid) == 0) {
			t->state.waiter_cpu = cpu;
			return;
		}
	}
	count_lost(LOST_WAITER_SLOTS_FULL);
}

static __always_inline void unregister_waiter(struct thread_stats *t)
{
	struct cpu_waiters *w;
	__u32 tid = t->state.tid;
	__s32 cpu = t->state.waiter_cpu;

	if (cpu < 0)
		return;
	t->state.waiter_cpu = -1;
	w = waiters_on((__u32)cpu);
	if (!w)
		return;
	for (int i = 0; i < MAX_WAITERS_PER_CPU; i++)
		if (w->tids[i] == tid)
			__sync_val_compare_and_swap(&w->tids[i], tid, 0);
}

/* Nanoseconds of the open gap taken by one cause. */
static __always_inline void add_gap_cause(struct thread_stats *t, __u32 cause, __u64 ns)
{
	if (cause < GAP_CAUSE_COUNT)
		t->state.gap_cause_ns[cause] += ns;
}

/*
 * Interference (preempted, run-queue or interrupt time) the thread just
 * had: in its open gap, and, once it has begun GPU work, held by drain
 * state until its next launch shows it still had launches to make (a
 * delay after a thread's last launch cost its GPU nothing). No launch or
 * sync runs while the thread waits or is interrupted, so a delay lies
 * wholly on one side of each and the state it is held under held all along.
 */
static __always_inline void add_interference(struct thread_stats *t, __u32 cause, __u64 ns)
{
	__u32 drain = t->state.drain_state;

	add_gap_cause(t, cause, ns);
	if (t->state.gpu_work_started && cause < INTERFERENCE_CAUSES && drain < DRAIN_STATES)
		t->state.pending_delay_ns[drain][cause] += ns;
}

/*
 * An exited thread's counters go to its process's entry in `retired` and
 * its own entry is freed: memory stays bounded by the live threads. `task`
 * is the exiting thread, when known: its leader names the process.
 */
static __always_inline void retire_thread(struct thread_stats *t, struct task_struct *task)
{
	struct process_key key = {.pid = t->state.pid, .start_ns = t->state.process_start_ns};
	__u64 *from = (__u64 *)&t->counters;
	__u32 tid = t->state.tid, zero = 0;
	struct process_remains *remains;
	struct task_struct *leader;
	void *zeroed;
	__u64 *into;

	unregister_waiter(t);
	remains = bpf_map_lookup_elem(&retired, &key);
	if (!remains) {
		/* the zeroed thread_stats is larger than process_remains: all zeros too */
		zeroed = bpf_map_lookup_elem(&zeroes, &zero);
		if (zeroed)
			bpf_map_update_elem(&retired, &key, zeroed, BPF_NOEXIST);
		remains = bpf_map_lookup_elem(&retired, &key);
	}
	if (!remains) {
		count_lost(LOST_RETIRED_MAP_FULL);
		bpf_map_delete_elem(&threads, &tid);
		return;
	}
	if (!remains->command[0]) {
		if (task) {
			leader = BPF_CORE_READ(task, group_leader);
			BPF_CORE_READ_STR_INTO(&remains->command, leader, comm);
		} else {
			__builtin_memcpy(remains->command, t->state.comm, sizeof(remains->command));
		}
		remains->cgroup_id = t->state.cgroup_id;
	}
	into = (__u64 *)&remains->counters;
	for (int i = 0; i < sizeof(struct thread_counters) / sizeof(__u64); i++)
		__sync_fetch_and_add(&into[i], from[i]);
	bpf_map_delete_elem(&threads, &tid);
}

#endif /* LAUNCHGAP_MONITOR_MAPS_BPF_H */
