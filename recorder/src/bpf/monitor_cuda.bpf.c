// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The monitor's CUDA uprobes: counts, not records. A launch reads none of
 * its arguments: it counts the call by entry point (the attach cookie) and
 * closes the thread's launch gap, classifying it by what took most of it.
 * Placed like the recorder's probes (probe_placement.rs): one emulated hit
 * a launch.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "monitor_maps.bpf.h"

/* Lets the skeleton generate Rust types for the map values. */
struct thread_stats thread_stats_layout = {};
struct process_key process_key_layout = {};
struct process_remains process_remains_layout = {};
struct culprit_key culprit_key_layout = {};
struct cgroup_key cgroup_key_layout = {};
struct cpu_waiters cpu_waiters_layout = {};

/*
 * Set by the loader: bit s for the driver entry point in slot s (cookie - 1)
 * after whose return the thread's GPU work has all finished
 * (schema/trace.toml's drain_api).
 */
const volatile __u32 drain_api_slots = 0;

/* floor(log2(v)) for v > 0, without a loop. */
static __always_inline __u32 log2_floor(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

/* The histogram bucket whose inclusive upper bound is the first >= gap (monitor.h). */
static __always_inline __u32 gap_bucket(__u64 gap_ns)
{
	__u32 bound_log2 = gap_ns <= 1 ? 0 : log2_floor(gap_ns - 1) + 1; /* least k with gap <= 2^k */

	if (bound_log2 <= GAP_FIRST_BOUND_LOG2)
		return 0;
	bound_log2 -= GAP_FIRST_BOUND_LOG2;
	return bound_log2 < GAP_BUCKETS - 1 ? bound_log2 : GAP_BUCKETS - 1;
}

/*
 * gaps.py's rule: the cause with the most time, ties to the earlier of
 * preempted, runqueue, irq, sync, blocked; clean if nothing took any time.
 * A gap's voluntary block is the sync's if the gap holds a sync.
 */
static __always_inline __u32 gap_class_of(const struct thread_state *s)
{
	__u64 blocked = s->gap_cause_ns[CAUSE_BLOCKED];
	__u64 by_class[GAP_CLASS_COUNT] = {
		[GAP_PREEMPTED] = s->gap_cause_ns[CAUSE_PREEMPTED],
		[GAP_RUNQUEUE] = s->gap_cause_ns[CAUSE_RUNQUEUE],
		[GAP_IRQ] = s->gap_cause_ns[CAUSE_IRQ],
		[GAP_SYNC] = s->gap_has_sync ? blocked : 0,
		[GAP_BLOCKED] = s->gap_has_sync ? 0 : blocked,
	};
	__u32 klass = GAP_CLEAN;
	__u64 largest = 0;

	for (int c = GAP_PREEMPTED; c < GAP_CLASS_COUNT; c++) {
		if (by_class[c] > largest) {
			largest = by_class[c];
			klass = c;
		}
	}
	return klass;
}

/* A launch ends the gap open since the thread's previous launch. */
static __always_inline void close_gap(struct thread_stats *t, __u64 now)
{
	struct thread_state *s = &t->state;
	__u32 klass, bucket;
	__u64 gap;

	if (s->last_launch_ns && now > s->last_launch_ns) {
		gap = now - s->last_launch_ns;
		klass = gap_class_of(s);
		bucket = gap_bucket(gap);
		if (klass < GAP_CLASS_COUNT && bucket < GAP_BUCKETS) {
			t->counters.gaps[klass][bucket] += 1;
			t->counters.gap_sum_ns[klass] += gap;
		}
	}
	s->last_launch_ns = now;
	__builtin_memset(s->gap_cause_ns, 0, sizeof(s->gap_cause_ns));
	s->gap_has_sync = 0;
}

/*
 * A launch shows the thread still had launches to make: the interference
 * held since its previous launch (or its first GPU work) is counted, by
 * the drain state it came in, and its GPU has work of it again.
 */
static __always_inline void count_held_interference(struct thread_stats *t)
{
	struct thread_state *s = &t->state;

	for (int drain = 0; drain < DRAIN_STATES; drain++)
		for (int cause = 0; cause < INTERFERENCE_CAUSES; cause++)
			t->counters.delay_ns[drain][cause] += s->pending_delay_ns[drain][cause];
	__builtin_memset(s->pending_delay_ns, 0, sizeof(s->pending_delay_ns));
	s->drain_state = NOT_DRAINED;
	s->gpu_work_started = 1;
}

static __always_inline __u32 api_slot(struct pt_regs *ctx)
{
	return (__u32)bpf_get_attach_cookie(ctx) - 1; /* cookie 0 would wrap: out of range */
}

/*
 * The calling thread's counters, if it is (or just became) a target. A
 * launch or sync of a target that no counters could take is counted lost.
 */
static __always_inline struct thread_stats *calling_target(bool counted_call)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct thread_stats *t;

	if (!target_or_adopted(id >> 32, (__u32)id))
		return NULL;
	t = thread_of(bpf_get_current_task_btf());
	if (!t && counted_call)
		count_lost(LOST_UNCOUNTED_CALLS);
	return t;
}

/* Every launch entry point: cuLaunchKernel, Ex, cooperative, graph, and _ptsz. */
SEC("uprobe")
int BPF_UPROBE(monitor_launch)
{
	struct thread_stats *t = calling_target(true);
	__u32 slot = api_slot(ctx);

	if (!t)
		return 0;
	if (slot < DRIVER_API_SLOTS)
		t->counters.calls[slot] += 1;
	if (!t->state.last_launch_ns)
		t->counters.launching_threads = 1; /* its first launch */
	close_gap(t, bpf_ktime_get_ns());
	count_held_interference(t);
	return 0;
}

/* Blocking syncs and synchronous copies: timed from entry to return. */
SEC("uprobe")
int BPF_UPROBE(monitor_sync_enter)
{
	struct thread_stats *t = calling_target(true);

	if (!t)
		return 0;
	t->state.sync_start_ns = bpf_ktime_get_ns();
	t->state.sync_slot = (__u16)api_slot(ctx);
	t->state.sync_blocked = 0;
	/* gaps.py places a sync in the gap that holds its entry */
	t->state.gap_has_sync = 1;
	/* the upper bound counts from a thread's first GPU work: a launch, or a copy or sync before it */
	t->state.gpu_work_started = 1;
	return 0;
}

/* CUresult: CUDA_SUCCESS is 0. A failed sync waited for nothing. */
SEC("uretprobe")
int BPF_URETPROBE(monitor_sync_exit, int result)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_stats *t = lookup_thread(tid);
	__u32 slot;

	if (!t || !t->state.sync_start_ns)
		return 0;
	slot = t->state.sync_slot;
	if (slot < DRIVER_API_SLOTS) {
		t->counters.calls[slot] += 1;
		t->counters.sync_ns[slot] += bpf_ktime_get_ns() - t->state.sync_start_ns;
		if (t->state.sync_blocked)
			t->counters.blocked_syncs[slot] += 1;
		if (result == 0 && (drain_api_slots >> slot) & 1)
			t->state.drain_state = DRAINED;
	}
	t->state.sync_start_ns = 0;
	return 0;
}

/* cuInit: a process becoming a CUDA process is adopted before its first launch. */
SEC("uprobe")
int BPF_UPROBE(monitor_cuda_init)
{
	calling_target(false);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
