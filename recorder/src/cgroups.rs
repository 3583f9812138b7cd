//! Cgroups, for the monitor and the recorder alike: resolving a --cgroup path
//! to what the kernel programs compare (hierarchy id, cgroup id), listing the
//! processes in a cgroup tree, walking a hierarchy for its ids and paths, and
//! the names read from a cgroup path (the container id and the Kubernetes pod
//! in it: the monitor's labels and the trace's `cgroup` rows are made by the
//! same functions here). Works with cgroup v2, v1 and the hybrid layout (v1
//! controllers beside a v2 tree).

#[cfg(test)]
use std::os::unix::ffi::OsStrExt;
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
        let (Some(mount_point), Some(fs_type), Some(options)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 3))
        else {
            continue;
        };
        if !fs_type.starts_with("cgroup") {
            continue;
        }
        let mount_point = PathBuf::from(mount_point);
        let longer =
            best.as_ref().is_none_or(|(b, _)| mount_point.as_os_str().len() > b.as_os_str().len());
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
    let canonical = path
        .canonicalize()
        .with_context(|| format!("--cgroup {}: no such cgroup", path.display()))?;
    let magic =
        filesystem_magic(&canonical).with_context(|| format!("--cgroup {}", path.display()))?;
    let cgroup_id = std::fs::metadata(&canonical)?.ino();
    let hierarchy_id = match magic {
        CGROUP2_SUPER_MAGIC => UNIFIED_HIERARCHY_ID,
        CGROUP_SUPER_MAGIC => {
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
            let self_cgroup = std::fs::read_to_string("/proc/self/cgroup")?;
            let (_, options) = mount_of(&canonical, &mountinfo).with_context(|| {
                format!("--cgroup {}: its mount is not in /proc/self/mountinfo", path.display())
            })?;
            match v1_hierarchy_id(&options, &self_cgroup) {
                Some(id) => id,
                None => bail!(
                    "--cgroup {}: cannot tell which cgroup v1 hierarchy it is in",
                    path.display()
                ),
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
            pending.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
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
        let (Some(id), Some(_), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
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

/// PID's labels, its cgroup paths escaped as the trace escapes names (a cgroup may be named with any bytes).
pub fn labels_of(pid: u32) -> CgroupLabels {
    std::fs::read(format!("/proc/{pid}/cgroup"))
        .map(|bytes| labels_from(&crate::names::escape_name(&bytes)))
        .unwrap_or_default()
}

/// Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts).
pub fn unified_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    unified_mount_in(&mountinfo)
}

fn unified_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let dash = fields.iter().position(|f| *f == "-")?;
        (fields.get(dash + 1) == Some(&"cgroup2")).then(|| PathBuf::from(fields[4]))
    })
}

/// The cgroup v1 hierarchy of the cpu controller, where the host mounts one:
/// its mount point and its hierarchy id (as /proc/PID/cgroup numbers it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1CpuHierarchy {
    pub mount: PathBuf,
    pub hierarchy_id: u32,
}

pub fn v1_cpu_hierarchy() -> Option<V1CpuHierarchy> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let proc_cgroups = std::fs::read_to_string("/proc/cgroups").ok()?;
    v1_cpu_hierarchy_in(&mountinfo, &proc_cgroups)
}

/// From /proc/self/mountinfo and /proc/cgroups: a `cgroup` (v1) mount whose
/// super options name the cpu controller ("rw,cpu" or "rw,cpu,cpuacct"; not
/// cpuset or cpuacct alone), and the controller's hierarchy in /proc/cgroups
/// (0 there: the controller is on cgroup v2, or not mounted).
fn v1_cpu_hierarchy_in(mountinfo: &str, proc_cgroups: &str) -> Option<V1CpuHierarchy> {
    let hierarchy_id: u32 = proc_cgroups.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.first() == Some(&"cpu") && fields.get(3) == Some(&"1"))
            .then(|| fields.get(1)?.parse().ok())?
    })?;
    if hierarchy_id == 0 {
        return None;
    }
    let mount = mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let dash = fields.iter().position(|f| *f == "-")?;
        let (fs_type, options) = (fields.get(dash + 1)?, fields.get(dash + 3)?);
        (*fs_type == "cgroup" && options.split(',').any(|o| o == "cpu"))
            .then(|| PathBuf::from(fields[4]))
    })?;
    Some(V1CpuHierarchy { mount, hierarchy_id })
}

/// Bounds on a walk of a cgroup filesystem, which holds what the kernel
/// lets anyone with the right to mkdir there make: a node with more
/// cgroups than this is named in part (the rest are counted, not named).
pub const MAX_CGROUPS_WALKED: usize = 1 << 20;

/// Every cgroup of the hierarchy mounted at MOUNT: (id, path from the root).
/// The id is the kernfs node id, which the directory's inode number is; a
/// name that is not UTF-8 is shown with U+FFFD in its place. Links are not
/// followed (a cgroup filesystem has none; a bind mount of one might).
pub fn walk(mount: &Path) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut pending = vec![mount.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if out.len() >= MAX_CGROUPS_WALKED {
            break;
        }
        if let Ok(meta) = std::fs::symlink_metadata(&dir) {
            out.push((meta.ino(), relative_path(mount, &dir)));
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            pending.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    out
}

/// DIR's path below MOUNT as /proc/PID/cgroup shows it ("/" for the root).
fn relative_path(mount: &Path, dir: &Path) -> String {
    match dir.strip_prefix(mount) {
        Ok(rest) if rest.as_os_str().is_empty() => "/".to_string(),
        // as the trace escapes names: a byte that is not UTF-8 as \xHH, never replaced (two cgroups would merge)
        Ok(rest) => format!("/{}", crate::names::escape_name(rest.as_os_str().as_encoded_bytes())),
        Err(_) => String::new(),
    }
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
        self.by_id = walk(&mount).into_iter().collect();
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

/// What a cgroup path names: the container and the Kubernetes pod in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathNames {
    pub container_id: Option<String>,
    pub pod: Option<String>,
}

pub fn names_in(path: &str) -> PathNames {
    PathNames { container_id: container_id_in(path), pod: pod_uid_in(path) }
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

/// The Kubernetes pod UID in a cgroup path, as the kubelet names pod
/// cgroups: `pod<uid>` (cgroupfs driver: /kubepods/burstable/pod<uid>/...)
/// or `kubepods-<qos>-pod<uid>.slice` (systemd driver, the UID's dashes
/// written as underscores). The UID is a UUID, or 32 hex digits for static
/// pods (a hash of their manifest). Given with dashes, lower case; the last
/// one in the path, where several are.
pub fn pod_uid_in(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut found = None;
    for (at, _) in path.match_indices("pod") {
        let starts_component = at == 0 || matches!(bytes[at - 1], b'/' | b'-');
        let rest = &path[at + 3..];
        let Some(uid) = uid_prefix(rest) else { continue };
        let ends_component = rest[uid.len()..].chars().next().is_none_or(|c| c == '/' || c == '.');
        if starts_component && ends_component {
            found = Some(uid.replace('_', "-").to_ascii_lowercase());
        }
    }
    found
}

/// The UID that TEXT starts with: 8-4-4-4-12 hex digits separated by one
/// kind of separator ('-' or '_'), or 32 hex digits.
fn uid_prefix(text: &str) -> Option<&str> {
    let hex_run = |from: usize| {
        text.as_bytes()[from.min(text.len())..].iter().take_while(|b| b.is_ascii_hexdigit()).count()
    };
    if hex_run(0) == 32 {
        return Some(&text[..32]);
    }
    let separator = *text.as_bytes().get(8)?;
    if separator != b'-' && separator != b'_' {
        return None;
    }
    let mut at = 0;
    for (i, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if hex_run(at) < len || (i < 4 && text.as_bytes().get(at + len) != Some(&separator)) {
            return None;
        }
        at += len + usize::from(i < 4);
    }
    Some(&text[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_names_that_are_not_utf8_are_escaped_never_merged() {
        let mount = Path::new("/sys/fs/cgroup");
        let path = |name: &[u8]| mount.join(std::ffi::OsStr::from_bytes(name));
        assert_eq!(relative_path(mount, &path(b"lg\xffa")), "/lg\\xffa");
        assert_eq!(relative_path(mount, &path(b"lg\xfea")), "/lg\\xfea");
        assert_eq!(relative_path(mount, &path(b"plain")), "/plain");
        let labels = labels_from(&crate::names::escape_name(b"0::/kubepods/a\xff\n"));
        assert_eq!(labels.cgroup, "/kubepods/a\\xff");
    }

    const ID: &str = "3f2a8d0c1b4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";

    #[test]
    fn container_ids_are_found_in_every_runtime_layout() {
        for path in [
            format!("/docker/{ID}"),
            format!("/system.slice/docker-{ID}.scope"),
            format!("/kubepods.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope"),
            format!("/kubepods/burstable/pod5/crio-{ID}"),
        ] {
            assert_eq!(container_id_in(&path).as_deref(), Some(ID), "{path}");
        }
        assert_eq!(container_id_in("/user.slice/user-1000.slice/session-2.scope"), None);
        assert_eq!(container_id_in(&format!("/x/{ID}0")), None); // 65 digits: not an id
    }

    const POD: &str = "6b0f3f5e-6f9a-4b8e-9d0e-3c1a2b4c5d6e";

    #[test]
    fn pods_are_found_in_both_kubelet_cgroup_drivers() {
        let systemd_uid = POD.replace('-', "_");
        for path in [format!("/kubepods/burstable/pod{POD}/{ID}"), format!("/kubepods/pod{POD}"),
                     format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{systemd_uid}.slice/cri-containerd-{ID}.scope"),
                     format!("/kubepods.slice/kubepods-pod{systemd_uid}.slice")] {
            assert_eq!(pod_uid_in(&path).as_deref(), Some(POD), "{path}");
        }
        // a static pod's UID is a hash of its manifest
        let hashed = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            pod_uid_in(&format!("/kubepods/burstable/pod{hashed}/{ID}")).as_deref(),
            Some(hashed)
        );
        assert_eq!(
            names_in(&format!("/kubepods/besteffort/pod{POD}/{ID}")),
            PathNames { container_id: Some(ID.to_string()), pod: Some(POD.to_string()) }
        );
        for not_a_pod in [
            "/system.slice/ipod.service",
            "/podcast/x",
            &format!("/x/mypod{POD}"),
            &format!("/x/pod{POD}0"),
            &format!("/x/pod{}", POD.replacen('-', "_", 1)),
            "/x/pod",
            &format!("/x/pod{}", &POD[..35]),
        ] {
            assert_eq!(pod_uid_in(not_a_pod), None, "{not_a_pod}");
        }
    }

    #[test]
    fn the_cpu_controller_hierarchy_is_found_only_on_v1() {
        let mountinfo =
            "31 30 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
                         33 30 0:29 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n\
                         32 30 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let proc_cgroups = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t2\t1\ncpu\t4\t9\t1\ncpuacct\t4\t9\t1\n";
        assert_eq!(
            v1_cpu_hierarchy_in(mountinfo, proc_cgroups),
            Some(V1CpuHierarchy {
                mount: PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"),
                hierarchy_id: 4
            })
        );
        assert_eq!(unified_mount_in(mountinfo), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        // cgroup v2 only: the controller's hierarchy is 0
        let v2 = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t80\t1\n";
        assert_eq!(
            v1_cpu_hierarchy_in("40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", v2),
            None
        );
        // disabled (cgroup_disable=cpu)
        assert_eq!(v1_cpu_hierarchy_in(mountinfo, "cpu\t4\t1\t0\n"), None);
    }

    #[test]
    fn walks_name_each_cgroup_by_its_path_and_inode() {
        let root = std::env::temp_dir().join(format!("launchgap-walk-{}", std::process::id()));
        let odd = std::ffi::OsStr::from_bytes(b"b\xff[red]x");
        std::fs::create_dir_all(root.join("a").join(odd)).unwrap();
        std::os::unix::fs::symlink("/", root.join("a").join("link")).unwrap();
        let mut found = walk(&root);
        found.sort_by(|x, y| x.1.cmp(&y.1));
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let expected = vec![
            (ino(&root), "/".to_string()),
            (ino(&root.join("a")), "/a".to_string()),
            (ino(&root.join("a").join(odd)), "/a/b\\xff[red]x".to_string()),
        ];
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(found, expected);
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
