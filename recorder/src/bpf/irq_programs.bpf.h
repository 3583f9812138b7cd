/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The interrupt tracepoints' programs, written once for the recorder
 * (irq.bpf.c) and the monitor (monitor_irq.bpf.c): hard IRQs, softirqs, and
 * an entry and an exit program for each x86 system vector of
 * schema/trace.toml's irq_vector table (IRQ_VECTORS, trace_schema.h), which
 * never pass through irq_handler_entry. The two differ only in what each
 * program does, so the including file defines that, as
 *
 *	static __always_inline void hardirq_entry(int irq);
 *	static __always_inline void hardirq_exit(int irq, struct irqaction *action);
 *	static __always_inline void softirq_entry(unsigned int vec);
 *	static __always_inline void softirq_exit(unsigned int vec);
 *	static __always_inline void vector_entry(enum irq_vector_kind kind);
 *	static __always_inline void vector_exit(enum irq_vector_kind kind);
 *
 * and expands IRQ_PROGRAMS(prefix) once after them. The programs are named
 * prefix_irq_entry, prefix_softirq_exit, prefix_local_timer_entry, ...: the
 * names the kernel and the recorder's lost rows know them by.
 */
#ifndef LAUNCHGAP_IRQ_PROGRAMS_BPF_H
#define LAUNCHGAP_IRQ_PROGRAMS_BPF_H

#include "trace_schema.h"

/* One vector's pair: IRQ_VECTORS expands it for each vector. */
#define VECTOR_PROGRAMS(prefix, KIND, tracepoint)                                      \
	SEC("tp_btf/" #tracepoint "_entry")                                            \
	int BPF_PROG(prefix##_##tracepoint##_entry, int vector)                        \
	{                                                                              \
		vector_entry(VECTOR_##KIND);                                           \
		return 0;                                                              \
	}                                                                              \
	SEC("tp_btf/" #tracepoint "_exit")                                             \
	int BPF_PROG(prefix##_##tracepoint##_exit, int vector)                         \
	{                                                                              \
		vector_exit(VECTOR_##KIND);                                            \
		return 0;                                                              \
	}

#define IRQ_PROGRAMS(prefix)                                                           \
	SEC("tp_btf/irq_handler_entry")                                                \
	int BPF_PROG(prefix##_irq_entry, int irq, struct irqaction *action)            \
	{                                                                              \
		hardirq_entry(irq);                                                    \
		return 0;                                                              \
	}                                                                              \
	SEC("tp_btf/irq_handler_exit")                                                 \
	int BPF_PROG(prefix##_irq_exit, int irq, struct irqaction *action, int ret)    \
	{                                                                              \
		hardirq_exit(irq, action);                                             \
		return 0;                                                              \
	}                                                                              \
	SEC("tp_btf/softirq_entry")                                                    \
	int BPF_PROG(prefix##_softirq_entry, unsigned int vec)                         \
	{                                                                              \
		softirq_entry(vec);                                                    \
		return 0;                                                              \
	}                                                                              \
	SEC("tp_btf/softirq_exit")                                                     \
	int BPF_PROG(prefix##_softirq_exit, unsigned int vec)                          \
	{                                                                              \
		softirq_exit(vec);                                                     \
		return 0;                                                              \
	}                                                                              \
	IRQ_VECTORS(VECTOR_PROGRAMS, prefix)

#endif /* LAUNCHGAP_IRQ_PROGRAMS_BPF_H */
