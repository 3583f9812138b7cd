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

#include "monitor_maps.bpf.h"

/* x86 system vectors, each with its own slot (as irq.bpf.c's enum irq_vector_kind). */
enum system_vector {
	SYSTEM_VECTOR_LOCAL_TIMER = 0,
	SYSTEM_VECTOR_RESCHEDULE,
	SYSTEM_VECTOR_CALL_FUNCTION,
	SYSTEM_VECTOR_CALL_FUNCTION_SINGLE,
	SYSTEM_VECTOR_IRQ_WORK,
	SYSTEM_VECTOR_COUNT,
};

struct open_irq {
	__u64 ts_ns; /* 0: none open (or not a target's) */
	__u64 nested_ns;
	__s32 irq;
	__u32 tid;
};

struct monitor_irq_slots {
	struct open_irq hard;
	struct open_irq soft;
	struct open_irq vector[SYSTEM_VECTOR_COUNT];
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

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(monitor_irq_entry, int irq, struct irqaction *action)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		open_irq(&slots->hard, irq);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(monitor_irq_exit, int irq, struct irqaction *action, int ret)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		nested_in_softirq(slots, close_irq(&slots->hard, irq, IRQ_HARD));
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(monitor_softirq_entry, unsigned int vec)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		open_irq(&slots->soft, vec);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(monitor_softirq_exit, unsigned int vec)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots)
		close_irq(&slots->soft, vec, IRQ_SOFT);
	return 0;
}

static __always_inline int vector_entry(enum system_vector vector)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots && vector < SYSTEM_VECTOR_COUNT)
		open_irq(&slots->vector[vector], vector);
	return 0;
}

static __always_inline int vector_exit(enum system_vector vector)
{
	struct monitor_irq_slots *slots = this_cpu_slots();
	if (slots && vector < SYSTEM_VECTOR_COUNT)
		nested_in_softirq(slots, close_irq(&slots->vector[vector], vector, IRQ_VECTOR));
	return 0;
}

SEC("tp_btf/local_timer_entry")
int BPF_PROG(monitor_local_timer_entry, int vector) { return vector_entry(SYSTEM_VECTOR_LOCAL_TIMER); }

SEC("tp_btf/local_timer_exit")
int BPF_PROG(monitor_local_timer_exit, int vector) { return vector_exit(SYSTEM_VECTOR_LOCAL_TIMER); }

SEC("tp_btf/reschedule_entry")
int BPF_PROG(monitor_reschedule_entry, int vector) { return vector_entry(SYSTEM_VECTOR_RESCHEDULE); }

SEC("tp_btf/reschedule_exit")
int BPF_PROG(monitor_reschedule_exit, int vector) { return vector_exit(SYSTEM_VECTOR_RESCHEDULE); }

SEC("tp_btf/call_function_entry")
int BPF_PROG(monitor_call_function_entry, int vector) { return vector_entry(SYSTEM_VECTOR_CALL_FUNCTION); }

SEC("tp_btf/call_function_exit")
int BPF_PROG(monitor_call_function_exit, int vector) { return vector_exit(SYSTEM_VECTOR_CALL_FUNCTION); }

SEC("tp_btf/call_function_single_entry")
int BPF_PROG(monitor_call_function_single_entry, int vector)
{
	return vector_entry(SYSTEM_VECTOR_CALL_FUNCTION_SINGLE);
}

SEC("tp_btf/call_function_single_exit")
int BPF_PROG(monitor_call_function_single_exit, int vector)
{
	return vector_exit(SYSTEM_VECTOR_CALL_FUNCTION_SINGLE);
}

SEC("tp_btf/irq_work_entry")
int BPF_PROG(monitor_irq_work_entry, int vector) { return vector_entry(SYSTEM_VECTOR_IRQ_WORK); }

SEC("tp_btf/irq_work_exit")
int BPF_PROG(monitor_irq_work_exit, int vector) { return vector_exit(SYSTEM_VECTOR_IRQ_WORK); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
