/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A task's cgroups, read the same way by the recorder and the monitor. An id
 * is the cgroup's kernfs node id, which is the inode number of its directory
 * in the cgroup filesystem (kernfs_ino() on 64-bit), unique within one
 * hierarchy only.
 */
#ifndef LAUNCHGAP_CGROUP_HELPERS_BPF_H
#define LAUNCHGAP_CGROUP_HELPERS_BPF_H

/* include/linux/cgroup-defs.h: a task's cgroup v2 is css_set->dfl_cgrp. */
static __always_inline __u64 task_cgroup_v2_id(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/*
 * Its cgroup in the hierarchy the cpu controller is attached to: the css
 * of cpu_cgrp_id in its css_set (include/linux/cgroup_subsys.h numbers the
 * controllers; CO-RE takes this kernel's number). Meaningful where that
 * hierarchy is a cgroup v1 one (on v2 it is the nearest ancestor of its v2
 * cgroup with the controller enabled); 0 on a kernel without the cpu
 * controller (CONFIG_CGROUP_SCHED off).
 */
static __always_inline __u64 task_cgroup_cpu_id(struct task_struct *task)
{
	struct cgroup_subsys_state *css;
	struct css_set *cset;
	int index;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return 0;
	index = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	if (index < 0 || index >= CGROUP_SUBSYS_COUNT)
		return 0;
	cset = BPF_CORE_READ(task, cgroups);
	if (bpf_core_read(&css, sizeof(css), &cset->subsys[index]) || !css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

/*
 * The task group the fair scheduler puts TASK in (task->sched_task_group;
 * kernel/sched/sched.h), which splits a CPU between groups by their weight
 * before it splits a group's share among its tasks: an autogroup (a
 * session's, with sched_autogroup on, for tasks in the root cgroup) or the
 * cgroup of the cpu controller. AUTOGROUP: the autogroup's id, as
 * /proc/PID/autogroup's "/autogroup-N"; else CGROUP: the group's cgroup id
 * (kernfs id). WEIGHT: the group's weight in nice-0 units of 1024
 * (tg->shares is kept scale_load()ed, 10 bits up on 64-bit kernels). All
 * left 0 on a kernel without group scheduling (CONFIG_FAIR_GROUP_SCHED off).
 */
#define TASK_GROUP_SHARES_SHIFT 10

static __always_inline void task_sched_group(struct task_struct *task, __u64 *autogroup, __u64 *cgroup,
					     __u32 *weight)
{
	struct task_group *tg;
	struct autogroup *ag = NULL;

	if (!bpf_core_field_exists(task->sched_task_group))
		return;
	tg = BPF_CORE_READ(task, sched_task_group);
	if (!tg)
		return;
	*weight = (__u32)(BPF_CORE_READ(tg, shares) >> TASK_GROUP_SHARES_SHIFT);
	if (bpf_core_field_exists(tg->autogroup))
		ag = BPF_CORE_READ(tg, autogroup);
	if (ag) {
		*autogroup = BPF_CORE_READ(ag, id);
		return;
	}
	*cgroup = BPF_CORE_READ(tg, css.cgroup, kn, id);
}

#endif /* LAUNCHGAP_CGROUP_HELPERS_BPF_H */
