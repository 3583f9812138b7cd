/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * State shared by every launchgap BPF program. The definitions are weak so
 * that each per-concern object can include them and the BPF static linker
 * (bpftool gen object) merges them into one map or variable each.
 */
#ifndef LAUNCHGAP_MAPS_BPF_H
#define LAUNCHGAP_MAPS_BPF_H

/* the records (generated from schema/trace.toml) */
#include "ring_records.h"
#include "targets.bpf.h"

/* Set by the loader before load. */
__weak const volatile bool system_mode = false;  /* trace every task, not only targets */
__weak const volatile __u64 wakeup_bytes = 1;    /* wake the reader past this much data */
__weak const volatile __u64 urgent_bytes = 1;    /* past this, every record wakes it */
__weak const volatile bool api_names = false;    /* runtime entry points are probed too */
/* the hierarchy id of the cgroup v1 hierarchy the cpu controller is attached to; 0: none (cgroup v2) */
__weak const volatile __u32 v1_cpu_hierarchy_id = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized by the loader */
} events SEC(".maps") __weak;

/* Events lost because the ring buffer was full, by event type, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EVENT_TYPE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps") __weak;

/* CPUs a target thread has run on: their IRQs and switches are recorded too. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} target_cpu SEC(".maps") __weak;

static __always_inline bool on_target_cpu(void)
{
	__u32 zero = 0;
	__u8 *flag = bpf_map_lookup_elem(&target_cpu, &zero);
	return flag && *flag;
}

static __always_inline void mark_target_cpu(void)
{
	__u32 zero = 0;
	__u8 *flag = bpf_map_lookup_elem(&target_cpu, &zero);
	if (flag)
		*flag = 1;
}

static __always_inline void count_drops(__u32 type, __u64 count)
{
	__u64 *n = bpf_map_lookup_elem(&dropped, &type);
	if (n)
		*n += count;
}

static __always_inline void count_drop(__u32 type)
{
	count_drops(type, 1);
}

/* Reserves a record and fills its header; counts a drop when the buffer is full. */
static __always_inline void *reserve_event(__u64 size, __u32 type, __u64 ts, __u32 pid, __u32 tid)
{
	struct event_header *hdr = bpf_ringbuf_reserve(&events, size, 0);
	if (!hdr) {
		count_drop(type);
		return NULL;
	}
	hdr->ts_ns = ts;
	hdr->type = type;
	hdr->cpu = bpf_get_smp_processor_id();
	hdr->pid = pid;
	hdr->tid = tid;
	return hdr;
}

/*
 * Never wake the reader per event (that floods the CPUs with irq_work and
 * shows up as interference). The reader drains on a timer; the record that
 * pushes unread data past wakeup_bytes wakes it early, and once the buffer
 * is nearly full every record does, since a lost event costs more.
 */
static __always_inline __u64 wakeup_flags(__u64 size)
{
	__u64 unread = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);

	if ((unread >= wakeup_bytes && unread < wakeup_bytes + size + 8) || unread >= urgent_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void submit_event(void *event, __u64 size)
{
	bpf_ringbuf_submit(event, wakeup_flags(size));
}

#endif /* LAUNCHGAP_MAPS_BPF_H */
