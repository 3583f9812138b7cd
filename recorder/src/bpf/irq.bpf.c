// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Interrupts: hard IRQs, softirqs and the x86 system vectors (local timer,
 * IPIs, irq_work), which never pass through irq_handler_entry. Each class
 * has its own per-CPU slot, so a hard IRQ that lands inside a softirq
 * leaves both durations intact. Recorded on every CPU a target has run on
 * (whether or not the target is current), or everywhere with system_mode.
 *
 * Every entry program also counts its hits per CPU (irq_seen), in every
 * mode, while the recorder holds the audit window open: from just before
 * its first read of the kernel's counters (/proc/interrupts,
 * /proc/softirqs) to just after its last. At the stop the recorder records
 * as lost what the kernel counted and no probe saw: under heavy I/O that
 * happens, with no ring-buffer drop and no recursion miss (irq_audit.rs).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "irq_programs.bpf.h"
#include "maps.bpf.h"

struct irq_slot {
	__u64 ts_ns; /* 0: no entry seen */
	__s32 irq;
	__u32 pid; /* the interrupted task */
	__u32 tid;
	__u32 pad;
};

struct irq_slots {
	struct irq_slot hard;
	struct irq_slot soft;
	struct irq_slot vector[VECTOR_KIND_COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_slots);
} irq_slots SEC(".maps");

struct irq_event irq_event_layout = {};

/* IRQ lines counted one by one; a line above this is not audited. */
#define AUDITED_IRQ_LINES 4096
/* NR_SOFTIRQS is 10; room for a kernel that adds one. */
#define AUDITED_SOFTIRQ_VECTORS 16

/* Set by the recorder around its reads of the kernel's counters (irq_audit.rs). */
bool audit_interrupts = false; /* IRQ lines and system vectors: /proc/interrupts */
bool audit_softirqs = false;   /* /proc/softirqs */

/* Entry-program hits on one CPU inside the audit window; 32-bit, compared by wrapping difference. */
struct irq_seen {
	__u32 hard[AUDITED_IRQ_LINES];
	__u32 soft[AUDITED_SOFTIRQ_VECTORS];
	__u32 vector[VECTOR_KIND_COUNT];
	/* this CPU's current system vector was counted at its entry */
	__u8 vector_counted[VECTOR_KIND_COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_seen);
} irq_seen SEC(".maps");

static __always_inline struct irq_seen *this_cpu_seen(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&irq_seen, &zero);
}

static __always_inline struct irq_slots *this_cpu_slots(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&irq_slots, &zero);
}

static __always_inline void open_slot(struct irq_slot *slot, __s32 irq)
{
	__u64 id;

	if (!system_mode && !on_target_cpu()) {
		slot->ts_ns = 0;
		return;
	}
	id = bpf_get_current_pid_tgid();
	slot->ts_ns = bpf_ktime_get_ns();
	slot->irq = irq;
	slot->pid = id >> 32;
	slot->tid = (__u32)id;
}

/* Emits the interval opened in `slot`; returns the record to name, or NULL. */
static __always_inline struct irq_event *close_slot(struct irq_slot *slot, __u32 type, __s32 irq)
{
	struct irq_event *e;
	__u64 start = slot->ts_ns;

	if (!start || slot->irq != irq)
		return NULL; /* entry happened before tracing began, or was not for us */
	slot->ts_ns = 0;
	e = reserve_event(sizeof(*e), type, start, slot->pid, slot->tid);
	if (!e)
		return NULL;
	e->duration_ns = bpf_ktime_get_ns() - start;
	e->irq = irq;
	e->pad = 0;
	e->name[0] = '\0';
	return e;
}

static __always_inline void hardirq_entry(int irq)
{
	struct irq_slots *slots = this_cpu_slots();
	struct irq_seen *seen = this_cpu_seen();
	__u32 line = irq;

	if (audit_interrupts && seen && line < AUDITED_IRQ_LINES)
		seen->hard[line]++;
	if (slots)
		open_slot(&slots->hard, irq);
}

static __always_inline void hardirq_exit(int irq, struct irqaction *action)
{
	struct irq_slots *slots = this_cpu_slots();
	struct irq_event *e;

	if (!slots)
		return;
	e = close_slot(&slots->hard, EVENT_HARDIRQ, irq);
	if (!e)
		return;
	bpf_probe_read_kernel_str(e->name, sizeof(e->name), BPF_CORE_READ(action, name));
	submit_event(e, sizeof(*e));
}

static __always_inline void softirq_entry(unsigned int vec)
{
	struct irq_slots *slots = this_cpu_slots();
	struct irq_seen *seen = this_cpu_seen();

	if (audit_softirqs && seen && vec < AUDITED_SOFTIRQ_VECTORS)
		seen->soft[vec]++;
	if (slots)
		open_slot(&slots->soft, vec);
}

static __always_inline void softirq_exit(unsigned int vec)
{
	struct irq_slots *slots = this_cpu_slots();
	struct irq_event *e;

	if (!slots)
		return;
	e = close_slot(&slots->soft, EVENT_SOFTIRQ, vec);
	if (e)
		submit_event(e, sizeof(*e));
}

/*
 * The kernel counts a system vector (inc_irq_stat) between its entry and
 * exit tracepoints, so a vector is counted once, at whichever of the two
 * falls inside the audit window: a window opening or closing between the
 * entry and the count then never looks like a loss.
 */
static __always_inline void count_vector(struct irq_seen *seen, enum irq_vector_kind kind, bool entry)
{
	if (!seen || kind >= VECTOR_KIND_COUNT)
		return;
	if (entry) {
		seen->vector_counted[kind] = audit_interrupts;
		if (audit_interrupts)
			seen->vector[kind]++;
	} else if (audit_interrupts && !seen->vector_counted[kind]) {
		seen->vector[kind]++;
	}
}

static __always_inline void vector_entry(enum irq_vector_kind kind)
{
	struct irq_slots *slots = this_cpu_slots();

	count_vector(this_cpu_seen(), kind, true);
	if (slots && kind < VECTOR_KIND_COUNT)
		open_slot(&slots->vector[kind], kind);
}

static __always_inline void vector_exit(enum irq_vector_kind kind)
{
	struct irq_slots *slots = this_cpu_slots();
	struct irq_event *e;

	count_vector(this_cpu_seen(), kind, false);
	if (!slots || kind >= VECTOR_KIND_COUNT)
		return;
	e = close_slot(&slots->vector[kind], EVENT_IRQ_VECTOR, kind);
	if (e)
		submit_event(e, sizeof(*e));
}

/* handle_irq_entry ... handle_irq_work_exit: each tracepoint's program, calling the functions above */
IRQ_PROGRAMS(handle)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
