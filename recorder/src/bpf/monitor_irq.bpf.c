// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The monitor's interrupt programs: time in hard IRQs, softirqs and x86
 * system vectors charged to the target thread they interrupted, each
 * counted once (irqs.py's rule: a hard IRQ or vector nested in a softirq is
 * taken out of the softirq's time). Each class has its own per-CPU slot, so
 * nesting leaves every duration intact; a slot opens only when a target is
 * the current task.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "irq_programs.bpf.h"
#include "monitor_maps.bpf.h"

struct open_irq {
	__u64 ts_ns; /* 0: none open (or not a target's) */
	__u64 nested_ns;
	__s32 irq;
	__u32 tid;
};

struct monitor_irq_slots {
	struct open_irq hard;
	struct open_irq soft;
	struct open_irq vector[VECTOR_KIND_COUNT]; /* by enum irq_vector_kind */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct monitor_irq_slots);
} monitor_irq_slots SEC(".maps");

static __always_inline struct monitor_irq_slots *this_cpu_slots(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&monitor_irq_slots, &zero);
}

static __always_inline void open_irq(struct open_irq *slot, __s32 irq)
{
	__u64 id = bpf_get_current_pid_tgid();

	slot->ts_ns = 0;
	if (!is_target(id >> 32, (__u32)id))
		return;
	slot->ts_ns = bpf_ktime_get_ns();
	slot->nested_ns = 0;
	slot->irq = irq;
	slot->tid = (__u32)id;
}

/* Closes the slot and charges the interrupted thread; returns the whole duration. */
static __always_inline __u64 close_irq(struct open_irq *slot, __s32 irq, __u32 kind)
{
	__u64 start = slot->ts_ns, duration, own;
	struct thread_stats *t;

	if (!start || slot->irq != irq)
		return 0; /* entered before the monitor attached, or not over a target */
	slot->ts_ns = 0;
	duration = bpf_ktime_get_ns() - start;
	own = duration > slot->nested_ns ? duration - slot->nested_ns : 0;
	t = lookup_thread(slot->tid);
	if (t && kind < IRQ_KIND_COUNT) {
		t->counters.irq_ns[kind] += own;
		t->counters.irq_count[kind] += 1;
		add_interference(t, CAUSE_IRQ, own);
	}
	return duration;
}

/* A hard IRQ or vector that ran inside an open softirq is not the softirq's own time. */
static __always_inline void nested_in_softirq(struct monitor_irq_slots *slots, __u64 duration)
{
	if (slots->soft.ts_ns)
		slots->soft.nested_ns += duration;
}

static __always_inline void hardirq_entry(int irq)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		open_irq(&slots->hard, irq);
}

static __always_inline void hardirq_exit(int irq, struct irqaction *action)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		nested_in_softirq(slots, close_irq(&slots->hard, irq, IRQ_HARD));
}

static __always_inline void softirq_entry(unsigned int vec)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		open_irq(&slots->soft, vec);
}

static __always_inline void softirq_exit(unsigned int vec)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		close_irq(&slots->soft, vec, IRQ_SOFT);
}

static __always_inline void vector_entry(enum irq_vector_kind kind)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots && kind < VECTOR_KIND_COUNT)
		open_irq(&slots->vector[kind], kind);
}

static __always_inline void vector_exit(enum irq_vector_kind kind)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots && kind < VECTOR_KIND_COUNT)
		nested_in_softirq(slots, close_irq(&slots->vector[kind], kind, IRQ_VECTOR));
}

/* monitor_irq_entry ... monitor_irq_work_exit: each tracepoint's program, calling the functions above */
IRQ_PROGRAMS(monitor)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
