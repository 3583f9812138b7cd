/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which threads are targets: shared by the recorder and the monitor. The
 * definitions are weak so that each per-concern object can include them and
 * the BPF static linker merges them into one map each.
 */
#ifndef LAUNCHGAP_TARGETS_BPF_H
#define LAUNCHGAP_TARGETS_BPF_H

#define MAX_TARGET_THREADS 65536
#define MAX_TARGET_PROCESSES 4096
#define MAX_CPUS 4096

/* Thread ids being traced, and process ids whose every thread is traced. */
#define TARGET_FLAG 1

/*
 * A flag per thread id, indexed directly (the loader sizes it to pid_max):
 * the check runs on every probed launch and twice per context switch, and
 * an array lookup is inlined by the verifier, with no hashing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 22); /* resized to pid_max by the loader */
	__type(key, __u32); /* tid */
	__type(value, __u8);
} target_threads SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} target_processes SEC(".maps") __weak;

static __always_inline void set_target_thread(__u32 tid, __u8 value)
{
	__u8 *flag = bpf_map_lookup_elem(&target_threads, &tid);
	if (flag)
		*flag = value;
}

static __always_inline bool is_target(__u32 pid, __u32 tid)
{
	__u8 *flag = bpf_map_lookup_elem(&target_threads, &tid);
	if (flag && *flag)
		return true;
	if (bpf_map_lookup_elem(&target_processes, &pid)) {
		/* a thread of a traced process we had not met yet */
		set_target_thread(tid, TARGET_FLAG);
		return true;
	}
	return false;
}

static __always_inline bool task_is_target(struct task_struct *task)
{
	return is_target(BPF_CORE_READ(task, tgid), BPF_CORE_READ(task, pid));
}

#endif /* LAUNCHGAP_TARGETS_BPF_H */
