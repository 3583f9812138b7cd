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

#endif /* LAUNCHGAP_CGROUP_HELPERS_BPF_H */
