//! Cgroups: resolving a --cgroup path to what the kernel programs compare
//! (hierarchy id, cgroup id), listing the processes in a cgroup tree, and
//! the cgroup and container labels of a process. Works with cgroup v2, v1
//! and the hybrid layout (v1 controllers beside a v2 tree).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// statfs(2) f_type of cgroup filesystems (include/uapi/linux/magic.h).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

/// The v2 hierarchy's id in /proc/PID/cgroup ("0::/path").
const UNIFIED_HIERARCHY_ID: u32 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTarget {
    pub path: PathBuf,
    pub hierarchy_id: u32,
    /// The kernfs node id, which is the directory's inode number.
    pub cgroup_id: u64,
}

fn filesystem_magic(path: &Path) -> Result<i64> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: statfs writes into the zeroed struct we pass.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(stat.f_type as i64)
}

/// The mount (mount point, super options) holding `path`, from mountinfo.
fn mount_of(path: &Path, mountinfo: &str) -> Option<(PathBuf, String)> {
    let mut best: Option<(PathBuf, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else { continue };
        let (Some(mount_point), Some(fs_type), Some(options)) = (fields.get(4), fields.get(dash + 1), fields.get(dash + 3))
        else {
            continue;
        };
        if !fs_type.starts_with("cgroup") {
            continue;
        }
        let mount_point = PathBuf::from(mount_point);
        let longer = best.as_ref().is_none_or(|(b, _)| mount_point.as_os_str().len() > b.as_os_str().len());
        if path.starts_with(&mount_point) && longer {
            best = Some((mount_point, options.to_string()));
        }
    }
    best
}

/// A v1 mount's hierarchy id: the /proc/self/cgroup line whose controllers
/// all appear in the mount's super options ("rw,cpu,cpuacct", "rw,xattr,name=systemd").
/// A controller is in one hierarchy only, so one line matches.
fn v1_hierarchy_id(super_options: &str, self_cgroup: &str) -> Option<u32> {
    let options: Vec<&str> = super_options.split(',').collect();
    self_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let id: u32 = parts.next()?.parse().ok()?;
        let controllers: Vec<&str> = parts.next()?.split(',').filter(|c| !c.is_empty()).collect();
        (!controllers.is_empty() && controllers.iter().all(|c| options.contains(c))).then_some(id)
    })
}

pub fn resolve(path: &Path) -> Result<CgroupTarget> {
    let canonical = path.canonicalize().with_context(|| format!("--cgroup {}: no such cgroup", path.display()))?;
    let magic = filesystem_magic(&canonical).with_context(|| format!("--cgroup {}", path.display()))?;
    let cgroup_id = std::fs::metadata(&canonical)?.ino();
    let hierarchy_id = match magic {
        CGROUP2_SUPER_MAGIC => UNIFIED_HIERARCHY_ID,
        CGROUP_SUPER_MAGIC => {
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
            let self_cgroup = std::fs::read_to_string("/proc/self/cgroup")?;
            let (_, options) = mount_of(&canonical, &mountinfo)
                .with_context(|| format!("--cgroup {}: its mount is not in /proc/self/mountinfo", path.display()))?;
            match v1_hierarchy_id(&options, &self_cgroup) {
                Some(id) => id,
                None => bail!("--cgroup {}: cannot tell which cgroup v1 hierarchy it is in", path.display()),
            }
        }
        _ => bail!("--cgroup {}: not a directory of a cgroup filesystem", path.display()),
    };
    if !canonical.join("cgroup.procs").exists() {
        bail!("--cgroup {}: not a cgroup directory (no cgroup.procs)", path.display());
    }
    Ok(CgroupTarget { path: canonical, hierarchy_id, cgroup_id })
}

/// Every process in the cgroup and the cgroups below it.
pub fn processes_in(root: &Path) -> Vec<i32> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            out.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            pending.extend(entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Labels for a process: its cgroup (the v2 path, else the first v1 path
/// that is not the root) and the container id in it, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupLabels {
    pub cgroup: String,
    pub container_id: String,
}

pub fn labels_from(proc_cgroup: &str) -> CgroupLabels {
    let mut unified = None;
    let mut first_v1 = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(_), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if id == "0" {
            unified = Some(path);
        } else if first_v1.is_none() && path != "/" {
            first_v1 = Some(path);
        }
    }
    let cgroup = match (unified, first_v1) {
        (Some("/"), Some(v1)) => v1,
        (Some(v2), _) => v2,
        (None, Some(v1)) => v1,
        (None, None) => "/",
    };
    let container_id = proc_cgroup.lines().find_map(container_id_in).unwrap_or_default();
    CgroupLabels { cgroup: cgroup.to_string(), container_id }
}

pub fn labels_of(pid: u32) -> CgroupLabels {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).map(|text| labels_from(&text)).unwrap_or_default()
}

/// Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts).
fn unified_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let dash = fields.iter().position(|f| *f == "-")?;
        (fields.get(dash + 1) == Some(&"cgroup2")).then(|| PathBuf::from(fields[4]))
    })
}

/// cgroup v2 ids (as the kernel side records them) to paths, by walking the
/// hierarchy; walked again, at most once per `refresh()`, when an id is new.
#[derive(Debug, Default)]
pub struct CgroupPaths {
    mount: Option<PathBuf>,
    by_id: std::collections::HashMap<u64, String>,
    stale: bool,
}

impl CgroupPaths {
    pub fn new() -> Self {
        let mut paths = CgroupPaths { mount: unified_mount(), ..Default::default() };
        paths.walk();
        paths
    }

    fn walk(&mut self) {
        let Some(mount) = self.mount.clone() else { return };
        self.by_id.clear();
        let mut pending = vec![mount.clone()];
        while let Some(dir) = pending.pop() {
            if let Ok(meta) = std::fs::metadata(&dir) {
                let relative = dir.strip_prefix(&mount).map(|p| format!("/{}", p.display())).unwrap_or_default();
                self.by_id.insert(meta.ino(), if relative == "/" { "/".to_string() } else { relative });
            }
            if let Ok(entries) = std::fs::read_dir(&dir) {
                pending.extend(entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()));
            }
        }
        self.stale = false;
    }

    /// Allows one more walk (called once per sweep).
    pub fn refresh(&mut self) {
        self.stale = true;
    }

    pub fn path_of(&mut self, id: u64) -> Option<String> {
        if !self.by_id.contains_key(&id) && self.stale {
            self.walk();
        }
        self.by_id.get(&id).cloned()
    }

    /// Labels from the cgroup v2 a process was recorded in; where that is the
    /// root (hosts that use v1 beside v2), from the process's /proc entry.
    pub fn labels(&mut self, cgroup_id: u64, pid: u32) -> CgroupLabels {
        match self.path_of(cgroup_id) {
            Some(path) if path != "/" => {
                let container_id = container_id_in(&path).unwrap_or_default();
                CgroupLabels { cgroup: path, container_id }
            }
            unified => {
                let from_proc = labels_of(pid);
                match (from_proc.cgroup.as_str(), unified) {
                    ("", Some(root)) => CgroupLabels { cgroup: root, container_id: String::new() },
                    _ => from_proc,
                }
            }
        }
    }
}

const CONTAINER_ID_LEN: usize = 64;

/// The last 64-hex-digit run in a cgroup path, as container runtimes name
/// their cgroups (docker/<id>, docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>).
pub fn container_id_in(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut found = None;
    let mut start = 0;
    while start < bytes.len() {
        if !bytes[start].is_ascii_hexdigit() {
            start += 1;
            continue;
        }
        let end = start + bytes[start..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if end - start == CONTAINER_ID_LEN {
            found = Some(path[start..end].to_ascii_lowercase());
        }
        start = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a8d0c1b4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";

    #[test]
    fn container_ids_are_found_in_every_runtime_layout() {
        for path in [format!("/docker/{ID}"), format!("/system.slice/docker-{ID}.scope"),
                     format!("/kubepods.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope"),
                     format!("/kubepods/burstable/pod5/crio-{ID}")] {
            assert_eq!(container_id_in(&path).as_deref(), Some(ID), "{path}");
        }
        assert_eq!(container_id_in("/user.slice/user-1000.slice/session-2.scope"), None);
        assert_eq!(container_id_in(&format!("/x/{ID}0")), None); // 65 digits: not an id
    }

    #[test]
    fn labels_prefer_the_unified_path_and_fall_back_to_v1() {
        let hybrid = "4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
        assert_eq!(labels_from(hybrid).cgroup, "/process_api/abc");
        let v2 = format!("0::/system.slice/docker-{ID}.scope\n");
        let labels = labels_from(&v2);
        assert_eq!(labels.cgroup, format!("/system.slice/docker-{ID}.scope"));
        assert_eq!(labels.container_id, ID);
        assert_eq!(labels_from("").cgroup, "/");
    }

    #[test]
    fn v1_hierarchies_match_their_controllers() {
        let self_cgroup = "9:name=systemd:/\n4:memory:/x\n3:cpu,cpuacct:/\n0::/\n";
        assert_eq!(v1_hierarchy_id("rw,cpu,cpuacct", self_cgroup), Some(3));
        assert_eq!(v1_hierarchy_id("rw,xattr,name=systemd", self_cgroup), Some(9));
        assert_eq!(v1_hierarchy_id("rw,memory", self_cgroup), Some(4));
        assert_eq!(v1_hierarchy_id("rw,blkio", self_cgroup), None);
    }

    #[test]
    fn the_deepest_cgroup_mount_holds_a_path() {
        let mountinfo = "30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                         31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                         32 30 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let (mount, options) = mount_of(Path::new("/sys/fs/cgroup/cpu/a/b"), mountinfo).unwrap();
        assert_eq!(mount, Path::new("/sys/fs/cgroup/cpu"));
        assert_eq!(options, "rw,cpu");
    }
}
