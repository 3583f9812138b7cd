/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Launches staged per thread, in task storage, and written to the ring
 * buffer LAUNCH_BATCH_SIZE at a time: one reservation and one wake-up check
 * per batch instead of per launch, on the hottest probe.
 *
 * Only the thread itself touches its stage while tracing (its launch probes,
 * its sync entry, its exit), so a probe preempted half-way cannot race a
 * flush. After the probes are detached, the recorder runs the task iterator
 * in cuda.bpf.c to write what is left in every thread's stage.
 */
#ifndef LAUNCHGAP_LAUNCH_STAGE_BPF_H
#define LAUNCHGAP_LAUNCH_STAGE_BPF_H

#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct launch_batch);
} launch_stages SEC(".maps") __weak;

#define LAUNCH_BATCH_HEADER_BYTES (sizeof(struct launch_batch) - sizeof(((struct launch_batch *)0)->launches))

/* Writes the staged launches as one record; on a full buffer they count as lost launches. */
static __always_inline void flush_launches(struct launch_batch *stage, __u32 pid, __u32 tid)
{
	__u32 count = stage->count;
	__u64 size;

	if (count == 0)
		return;
	if (count > LAUNCH_BATCH_SIZE)
		count = LAUNCH_BATCH_SIZE;
	size = LAUNCH_BATCH_HEADER_BYTES + (__u64)count * sizeof(struct launch_event);
	stage->hdr.ts_ns = bpf_ktime_get_ns();
	stage->hdr.type = RECORD_LAUNCH_BATCH;
	stage->hdr.cpu = bpf_get_smp_processor_id();
	stage->hdr.pid = pid;
	stage->hdr.tid = tid;
	stage->count = count;
	if (bpf_ringbuf_output(&events, stage, size, wakeup_flags(size)))
		count_drops(EVENT_LAUNCH, count);
	stage->count = 0;
}

/* The current thread's stage, if it has one. */
static __always_inline struct launch_batch *own_stage(bool create)
{
	return bpf_task_storage_get(&launch_stages, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

#endif /* LAUNCHGAP_LAUNCH_STAGE_BPF_H */
