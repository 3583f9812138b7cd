//! The trace's cgroup rows made in user space: every cgroup of the
//! hierarchies the task_cgroup records refer to, as they are when tracing
//! starts (those made later come from the cgroup_mkdir program, with their
//! paths). Which hierarchies those are is decided here, once, for the BPF
//! side (v1_cpu_hierarchy_id) and for meta.json alike.

use std::path::PathBuf;

use launchgap_record::cgroups::{self, V1CpuHierarchy};
use serde_json::{json, Value};

use crate::schema::CGROUP_HIERARCHY_NAMES;

/// names.cgroup_hierarchy, by its enum's order (bpf: enum cgroup_hierarchy).
const V2: &str = CGROUP_HIERARCHY_NAMES[0];
const V1_CPU: &str = CGROUP_HIERARCHY_NAMES[1];

/// Where this host mounts the hierarchies a task's cgroups are recorded in.
#[derive(Debug, Clone, Default)]
pub struct Hierarchies {
    /// the unified (v2) hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid hosts
    pub v2: Option<PathBuf>,
    /// the cgroup v1 hierarchy of the cpu controller, on hosts that mount one
    pub v1_cpu: Option<V1CpuHierarchy>,
}

impl Hierarchies {
    pub fn of_host() -> Self {
        Hierarchies { v2: cgroups::unified_mount(), v1_cpu: cgroups::v1_cpu_hierarchy() }
    }

    /// The hierarchy id the BPF side records v1 cpu cgroups of (0: none).
    pub fn v1_cpu_hierarchy_id(&self) -> u32 {
        self.v1_cpu.as_ref().map_or(0, |h| h.hierarchy_id)
    }

    /// meta.json's `cgroups`.
    pub fn metadata(&self) -> Value {
        json!({
            "v2_mount": self.v2,
            "v1_cpu_mount": self.v1_cpu.as_ref().map(|h| &h.mount),
            "v1_cpu_hierarchy_id": self.v1_cpu.as_ref().map(|h| h.hierarchy_id),
        })
    }

    /// Every cgroup there now: (hierarchy name, id, path).
    pub fn existing(&self) -> Vec<(&'static str, u64, String)> {
        let mut out = Vec::new();
        if let Some(mount) = &self.v2 {
            out.extend(cgroups::walk(mount).into_iter().map(|(id, path)| (V2, id, path)));
        }
        if let Some(v1) = &self.v1_cpu {
            out.extend(cgroups::walk(&v1.mount).into_iter().map(|(id, path)| (V1_CPU, id, path)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hierarchy_names_are_the_bpf_enum_order() {
        assert_eq!((V2, V1_CPU), ("v2", "v1_cpu"));
    }

    /// This host's hierarchies, walked: each path resolves to the directory whose inode is its id. The
    /// truth is the cgroup filesystem itself: every mounted hierarchy's root directory is listed (it can
    /// never be removed, so it is always checked), and so is every directory the test reads there now.
    #[test]
    fn existing_cgroups_are_those_in_the_cgroup_filesystem() {
        let host = Hierarchies::of_host();
        let mounts: Vec<(&str, PathBuf)> = host
            .v2
            .iter()
            .map(|m| (V2, m.clone()))
            .chain(host.v1_cpu.iter().map(|h| (V1_CPU, h.mount.clone())))
            .collect();
        assert!(!mounts.is_empty(), "no cgroup hierarchy mounted here: nothing to compare with");
        let existing = host.existing();
        let mut checked = 0;
        for (hierarchy, id, path) in &existing {
            let mount = &mounts.iter().find(|(h, _)| h == hierarchy).unwrap().1;
            let dir = mount.join(path.trim_start_matches('/'));
            // one gone since is another test's cgroup, removed
            if let Ok(meta) = std::fs::metadata(&dir) {
                assert_eq!(std::os::unix::fs::MetadataExt::ino(&meta), *id, "{}", dir.display());
                checked += 1;
            }
        }
        for (hierarchy, mount) in &mounts {
            let root = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(mount).unwrap());
            assert!(
                existing.contains(&(*hierarchy, root, "/".to_string())),
                "{hierarchy}: its root is not listed"
            );
        }
        assert!(checked >= mounts.len(), "checked {checked} of {} listed", existing.len());
        // every cgroup directory there now (one made since the walk aside) is listed
        for (hierarchy, mount) in &mounts {
            for entry in std::fs::read_dir(mount).unwrap().flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_dir() {
                    let ino = std::os::unix::fs::MetadataExt::ino(&meta);
                    let name = format!("/{}", entry.file_name().to_string_lossy());
                    let listed = existing
                        .iter()
                        .any(|(h, id, p)| h == hierarchy && *id == ino && *p == name);
                    let made_since = existing.iter().all(|(h, id, _)| h != hierarchy || *id != ino);
                    assert!(
                        listed || made_since,
                        "{}: listed under another name",
                        entry.path().display()
                    );
                }
            }
        }
    }
}
