// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Scheduling: switches, wakeups, migrations and task lifetime, for every
 * thread of the targets (keyed by thread id, with the process id beside it),
 * or for every task with system_mode.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgroup_helpers.bpf.h"
#include "launch_stage.bpf.h"
#include "maps.bpf.h"
#include "sched_helpers.bpf.h"

struct switch_event switch_event_layout = {};
struct wakeup_event wakeup_event_layout = {};
struct migrate_event migrate_event_layout = {};
struct fork_event fork_event_layout = {};
struct exec_event exec_event_layout = {};
struct exit_event exit_event_layout = {};
struct comm_event comm_event_layout = {};
struct task_cgroup_event task_cgroup_event_layout = {};
struct cgroup_event cgroup_event_layout = {};

/* The cgroups each task was last recorded in (its last task_cgroup record). */
struct recorded_cgroups {
	__u64 cgroup_id;
	__u64 v1_cpu_cgroup_id;
	__u64 autogroup_id;
	__u64 sched_cgroup_id;
	__u32 group_weight;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct recorded_cgroups);
} recorded_cgroups SEC(".maps");

/*
 * A task_cgroup record when the task's cgroups differ from those last
 * recorded for it (a new task storage reads as none: no cgroup has id 0).
 * Once per task and per move, not a column of every switch: the check is a
 * task-storage lookup and a few loads. The ids are
 * compared, not the css_set pointer, which a freed and reallocated css_set
 * could repeat; they are kept only once the record is in the buffer, so a
 * record the full buffer dropped is made again at the task's next switch.
 * The idle tasks (pid 0) are no culprit of any cgroup: left out.
 */
/*
 * TASK's id in its own (innermost) pid namespace: struct pid's numbers[level], level being
 * the namespace's depth (0 on the host), as /proc/PID/status's NSpid ends. A container's
 * programs (a profiler among them) see these, not the host's. numbers[] is a flexible array:
 * the element is read at its offset, the element's size and the fields' offsets relocated.
 */
static __always_inline __u32 ns_id_of(struct pid *pid)
{
	unsigned int level;
	struct upid up = {};

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (level > 32) /* the kernel's MAX_PID_NS_LEVEL */
		return 0;
	if (bpf_core_read(&up, sizeof(up), (void *)&pid->numbers[0] + level * bpf_core_type_size(struct upid)))
		return 0;
	return (__u32)up.nr;
}

static __always_inline void record_cgroups(struct task_struct *task, __u64 ts)
{
	__u32 tid = task->pid;
	struct recorded_cgroups *last;
	struct task_cgroup_event *e;
	__u64 v2, v1_cpu = 0, autogroup = 0, sched_cgroup = 0;
	__u32 weight = 0;

	if (!tid)
		return;
	v2 = task_cgroup_v2_id(task);
	if (v1_cpu_hierarchy_id)
		v1_cpu = task_cgroup_cpu_id(task);
	/* a new session (setsid: a new autogroup) or its nice changed makes a new row too */
	task_sched_group(task, &autogroup, &sched_cgroup, &weight);
	last = bpf_task_storage_get(&recorded_cgroups, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last || (last->cgroup_id == v2 && last->v1_cpu_cgroup_id == v1_cpu && last->autogroup_id == autogroup &&
		      last->sched_cgroup_id == sched_cgroup && last->group_weight == weight))
		return;
	e = reserve_event(sizeof(*e), EVENT_TASK_CGROUP, ts, task->tgid, tid);
	if (!e)
		return;
	e->cgroup_id = v2;
	e->v1_cpu_cgroup_id = v1_cpu;
	e->ns_tid = ns_id_of(BPF_CORE_READ(task, thread_pid));
	e->ns_pid = ns_id_of(BPF_CORE_READ(task, group_leader, thread_pid));
	e->autogroup_id = autogroup;
	e->sched_cgroup_id = sched_cgroup;
	e->group_weight = weight;
	e->reserved = 0;
	submit_event(e, sizeof(*e));
	last->cgroup_id = v2;
	last->v1_cpu_cgroup_id = v1_cpu;
	last->autogroup_id = autogroup;
	last->sched_cgroup_id = sched_cgroup;
	last->group_weight = weight;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	unsigned int prev_state = sched_switch_prev_state(ctx, prev);
	__u32 prev_pid = prev->tgid, prev_tid = prev->pid;
	bool prev_target = task_is_target(prev);
	bool next_target = task_is_target(next);
	__u64 nvcsw = prev->nvcsw, nivcsw = prev->nivcsw;
	bool voluntary = switch_was_voluntary(prev, preempt, prev_state, nvcsw, nivcsw);
	struct switch_event *e;
	__u64 ts;

	if (prev_target || next_target)
		mark_target_cpu();
	if (!system_mode && !prev_target && !next_target && !on_target_cpu())
		return 0;

	ts = bpf_ktime_get_ns();
	e = reserve_event(sizeof(*e), EVENT_SWITCH, ts, prev_pid, prev_tid);
	if (e) {
		e->prev_state = prev_state;
		e->prev_nvcsw = nvcsw;
		e->prev_nivcsw = nivcsw;
		e->next_pid = next->tgid;
		e->next_tid = next->pid;
		e->prev_prio = prev->prio;
		e->next_prio = next->prio;
		e->preempt = preempt;
		e->voluntary = voluntary;
		__builtin_memset(e->pad, 0, sizeof(e->pad));
		bpf_probe_read_kernel_str(e->prev_comm, sizeof(e->prev_comm), prev->comm);
		bpf_probe_read_kernel_str(e->next_comm, sizeof(e->next_comm), next->comm);
		submit_event(e, sizeof(*e));
	}
	record_cgroups(prev, ts);
	record_cgroups(next, ts);
	if (prev_target && (prev_state & TASK_DEAD))
		set_target_thread(prev_tid, 0); /* the id may be reused by an unrelated task */
	return 0;
}

static __always_inline int emit_wakeup(struct task_struct *p, __u32 variant)
{
	struct wakeup_event *e;

	if (!system_mode && !task_is_target(p))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_WAKEUP, bpf_ktime_get_ns(), p->tgid, p->pid);
	if (!e)
		return 0;
	e->target_cpu = task_cpu_of(p); /* TASK_CPU_UNKNOWN where the kernel has no CPU field we know */
	e->waker_tid = (__u32)bpf_get_current_pid_tgid();
	e->variant = variant;
	e->prio = p->prio;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	submit_event(e, sizeof(*e));
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(handle_sched_waking, struct task_struct *p)
{
	return emit_wakeup(p, WAKEUP_WAKING);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_sched_wakeup, struct task_struct *p)
{
	return emit_wakeup(p, WAKEUP_WAKEUP);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_sched_wakeup_new, struct task_struct *p)
{
	return emit_wakeup(p, WAKEUP_NEW);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(handle_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct migrate_event *e;

	if (!system_mode && !task_is_target(p))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_MIGRATE, bpf_ktime_get_ns(), p->tgid, p->pid);
	if (!e)
		return 0;
	e->orig_cpu = task_cpu_of(p); /* TASK_CPU_UNKNOWN, as target_cpu */
	e->dest_cpu = dest_cpu;
	submit_event(e, sizeof(*e));
	return 0;
}

/* Children of targets become targets: new processes wholly, new threads by id. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 child_pid = child->tgid, child_tid = child->pid;
	struct fork_event *e;

	if (!system_mode && !task_is_target(parent))
		return 0;
	if (!system_mode) {
		__u8 one = 1;
		set_target_thread(child_tid, TARGET_FLAG);
		if (child_pid != parent->tgid)
			bpf_map_update_elem(&target_processes, &child_pid, &one, BPF_ANY);
	}
	e = reserve_event(sizeof(*e), EVENT_FORK, bpf_ktime_get_ns(), parent->tgid, parent->pid);
	if (!e)
		return 0;
	e->child_pid = child_pid;
	e->child_tid = child_tid;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), child->comm);
	submit_event(e, sizeof(*e));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_sched_process_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	struct exec_event *e;

	if (!system_mode && !task_is_target(p))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_EXEC, bpf_ktime_get_ns(), p->tgid, p->pid);
	if (!e)
		return 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
	submit_event(e, sizeof(*e));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_sched_process_exit, struct task_struct *p)
{
	struct launch_batch *stage;
	struct exit_event *e;

	if (!system_mode && !task_is_target(p))
		return 0;
	/* the exiting thread itself: its staged launches go out before its exit */
	stage = bpf_task_storage_get(&launch_stages, p, 0, 0);
	if (stage)
		flush_launches(stage, p->tgid, p->pid);
	e = reserve_event(sizeof(*e), EVENT_EXIT, bpf_ktime_get_ns(), p->tgid, p->pid);
	if (!e)
		return 0;
	e->exit_code = p->exit_code;
	e->pad = 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	submit_event(e, sizeof(*e));
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(handle_task_rename, struct task_struct *task, const char *comm)
{
	struct comm_event *e;

	if (!system_mode && !task_is_target(task))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_COMM, bpf_ktime_get_ns(), task->tgid, task->pid);
	if (!e)
		return 0;
	bpf_probe_read_kernel_str(e->old_comm, sizeof(e->old_comm), task->comm);
	bpf_probe_read_kernel_str(e->new_comm, sizeof(e->new_comm), comm);
	submit_event(e, sizeof(*e));
	return 0;
}

/*
 * A cgroup made while recording, with its path (the kernel computes it for
 * the tracepoint, cut at TRACE_CGROUP_PATH_LEN): one that is made and
 * removed before the recording ends is named too. Only the hierarchies the
 * task_cgroup records refer to: v2 (hierarchy id 0, as /proc/PID/cgroup's
 * "0::") and the v1 cpu controller's.
 */
SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(handle_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	__u32 hierarchy_id = BPF_CORE_READ(cgrp, root, hierarchy_id);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct cgroup_event *e;
	__u32 hierarchy;

	if (hierarchy_id == 0)
		hierarchy = HIERARCHY_v2;
	else if (v1_cpu_hierarchy_id && hierarchy_id == v1_cpu_hierarchy_id)
		hierarchy = HIERARCHY_v1_cpu;
	else
		return 0;
	e = reserve_event(sizeof(*e), EVENT_CGROUP_MADE, bpf_ktime_get_ns(), pid_tgid >> 32, (__u32)pid_tgid);
	if (!e)
		return 0;
	e->cgroup_id = BPF_CORE_READ(cgrp, kn, id);
	e->hierarchy = hierarchy;
	e->pad = 0;
	if (bpf_probe_read_kernel_str(e->path, sizeof(e->path), path) < 0)
		e->path[0] = 0;
	submit_event(e, sizeof(*e));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
