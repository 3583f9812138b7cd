//! Finding the CUDA driver and runtime a workload will use, before it runs.
//!
//! Sources, in order: --cuda-lib, the maps of running targets, the command's
//! own ELF dependencies (resolved like the loader: RPATH/RUNPATH,
//! LD_LIBRARY_PATH, the loader cache), LD_LIBRARY_PATH directories, the loader
//! cache, pip-installed nvidia-* packages, and runtime symbols inside
//! executables (nvcc links cudart statically by default).

use std::collections::{BTreeSet, VecDeque};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectKind};

use crate::cuda_api::{DRIVER_MARKER, RUNTIME_MARKER};
use crate::elf_symbols::{defines_function, open_elf};
use crate::names::escape_name;

#[derive(Debug, Default)]
pub struct CudaLibraries {
    /// Files defining the driver entry points (libcuda.so.*).
    pub driver: Vec<PathBuf>,
    /// Shared runtimes (libcudart.so.*).
    pub runtime: Vec<PathBuf>,
    /// Executables with the runtime linked in.
    pub static_runtime: Vec<PathBuf>,
    /// Where each file was found, for the trace's metadata.
    pub found_via: Vec<(PathBuf, &'static str)>,
    /// What kept a -p target's libraries from being found at all (its maps
    /// unreadable): an error for whoever asked for that process.
    pub errors: Vec<String>,
    /// Libraries found but not usable, and why.
    pub warnings: Vec<String>,
}

/// found_via for a library the process maps but whose file was deleted or
/// replaced on disk since (a driver upgrade under a running job): it is
/// reached, and probed, through /proc/PID/map_files.
pub const VIA_DELETED_MAPPING: &str = "target maps (deleted on disk)";

pub struct DiscoveryInput<'a> {
    pub command: Option<&'a [String]>,
    pub pids: &'a [i32],
    pub extra: &'a [PathBuf],
    pub ld_library_path: Option<String>,
    /// Home of the invoking user (for ~/.local site-packages under sudo).
    pub user_home: Option<PathBuf>,
}

fn is_driver_name(name: &str) -> bool {
    name.starts_with("libcuda.so")
}

fn is_runtime_name(name: &str) -> bool {
    name.starts_with("libcudart.so")
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

impl CudaLibraries {
    /// The same file (device and inode) is taken once, whatever path reached it.
    fn seen(&self, canonical: &Path) -> bool {
        let identity = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        let this = identity(canonical);
        self.found_via
            .iter()
            .any(|(p, _)| p == canonical || (this.is_some() && identity(p) == this))
    }

    /// Classifies a candidate by what it defines, not by its name.
    fn consider(&mut self, path: &Path, via: &'static str) {
        let Ok(canonical) = path.canonicalize() else { return };
        self.consider_at(canonical, via);
    }

    /// Takes `canonical` as it is: a /proc/PID/map_files path, which
    /// canonicalize would turn into a name that no longer exists.
    fn consider_at(&mut self, canonical: PathBuf, via: &'static str) {
        if self.seen(&canonical) {
            return;
        }
        let is_executable = elf_kind(&canonical) == Some(ObjectKind::Executable)
            || (elf_kind(&canonical) == Some(ObjectKind::Dynamic)
                && !file_name(&canonical).contains(".so"));
        if defines_function(&canonical, DRIVER_MARKER) {
            self.driver.push(canonical.clone());
        } else if defines_function(&canonical, RUNTIME_MARKER) {
            if is_executable {
                self.static_runtime.push(canonical.clone());
            } else {
                self.runtime.push(canonical.clone());
            }
        } else {
            return;
        }
        self.found_via.push((canonical, via));
    }
}

fn elf_kind(path: &Path) -> Option<ObjectKind> {
    let data = open_elf(path).ok()?;
    object::File::parse(&data).ok().map(|f| f.kind())
}

fn split_paths(list: &str) -> Vec<PathBuf> {
    list.split(':').filter(|p| !p.is_empty()).map(PathBuf::from).collect()
}

/// Where ldconfig is: by its absolute path, never through PATH (the recorder runs as root, and the
/// invoking user's PATH can name any program `ldconfig`). Debian, Ubuntu and RHEL keep it in /sbin
/// (/usr/sbin where /sbin is a link to it).
const LDCONFIG: [&str; 2] = ["/sbin/ldconfig", "/usr/sbin/ldconfig"];

/// `ldconfig -p`: soname -> path, for the loader cache.
fn loader_cache() -> Vec<(String, PathBuf)> {
    let Some(ldconfig) = LDCONFIG.iter().find(|p| Path::new(p).is_file()) else {
        return Vec::new();
    };
    let Ok(out) = Command::new(ldconfig).arg("-p").output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (left, path) = line.split_once(" => ")?;
            let soname = left.split_whitespace().next()?;
            Some((soname.to_string(), PathBuf::from(path.trim())))
        })
        .collect()
}

/// Resolves a command name the way execvp would.
pub fn resolve_executable(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    split_paths(&path).into_iter().map(|dir| dir.join(name)).find(|p| p.is_file())
}

struct ElfDeps {
    needed: Vec<String>,
    /// DT_RPATH: searched before LD_LIBRARY_PATH (ignored when DT_RUNPATH is present).
    rpath: Vec<PathBuf>,
    /// DT_RUNPATH: searched after LD_LIBRARY_PATH.
    runpath: Vec<PathBuf>,
}

impl ElfDeps {
    /// Where ld.so looks for this file's dependencies, in its order (ld.so(8)).
    fn search_order<'a>(
        &'a self,
        ld_library_path: &'a [PathBuf],
    ) -> impl Iterator<Item = &'a PathBuf> {
        let rpath = if self.runpath.is_empty() { &self.rpath[..] } else { &[] };
        rpath.iter().chain(ld_library_path).chain(&self.runpath)
    }
}

/// DT_NEEDED and the RPATH/RUNPATH directories ($ORIGIN expanded) of an ELF file.
fn elf_dependencies(path: &Path) -> Option<ElfDeps> {
    let cache = open_elf(path).ok()?;
    let data = &cache;
    let elf = object::read::elf::ElfFile64::<object::Endianness, _>::parse(data).ok()?;
    let origin = path.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let endian = elf.endian();
    let mut deps = ElfDeps { needed: Vec::new(), rpath: Vec::new(), runpath: Vec::new() };
    let sections = elf.elf_section_table();
    let Ok(Some((dynamic, index))) = sections.dynamic(endian, data) else {
        return Some(deps);
    };
    let Ok(strings) = sections.strings(endian, data, index) else {
        return Some(deps);
    };
    use object::read::elf::Dyn;
    for entry in dynamic {
        let tag = entry.d_tag(endian) as u32;
        if !matches!(tag, object::elf::DT_NEEDED | object::elf::DT_RPATH | object::elf::DT_RUNPATH)
        {
            continue;
        }
        // Dyn::string wants a table over a byte slice; this one reads the file on demand
        let Ok(offset) = u32::try_from(Into::<u64>::into(entry.d_val(endian))) else { continue };
        let Ok(value) = strings.get(offset) else { continue };
        let value = String::from_utf8_lossy(value).into_owned();
        let expanded =
            || split_paths(&value.replace("$ORIGIN", &origin).replace("${ORIGIN}", &origin));
        match tag {
            object::elf::DT_NEEDED => deps.needed.push(value.clone()),
            object::elf::DT_RPATH => deps.rpath.extend(expanded()),
            object::elf::DT_RUNPATH => deps.runpath.extend(expanded()),
            _ => {}
        }
    }
    Some(deps)
}

/// Follows an executable's shared-library dependencies, breadth first.
fn dependency_closure(
    exe: &Path,
    ld_library_path: &[PathBuf],
    cache: &[(String, PathBuf)],
) -> Vec<PathBuf> {
    const MAX_FILES: usize = 512;
    let mut out = Vec::new();
    let mut visited = BTreeSet::new();
    let mut queue = VecDeque::from([exe.to_path_buf()]);
    while let Some(file) = queue.pop_front() {
        if out.len() >= MAX_FILES || !visited.insert(file.clone()) {
            continue;
        }
        let Some(deps) = elf_dependencies(&file) else { continue };
        out.push(file.clone());
        for soname in &deps.needed {
            let from_dirs =
                deps.search_order(ld_library_path).map(|d| d.join(soname)).find(|p| p.is_file());
            let resolved = from_dirs
                .or_else(|| cache.iter().find(|(s, _)| s == soname).map(|(_, p)| p.clone()));
            if let Some(path) = resolved {
                queue.push_back(path);
            }
        }
    }
    out
}

/// site-packages directories where pip puts nvidia-cuda-runtime-cu* wheels.
fn python_site_dirs(command_exe: Option<&Path>, user_home: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        roots.push(PathBuf::from(venv).join("lib"));
    }
    if let Some(exe) = command_exe {
        // .../venv/bin/python -> .../venv/lib
        if let Some(prefix) = exe.parent().and_then(|bin| bin.parent()) {
            roots.push(prefix.join("lib"));
        }
    }
    if let Some(home) = user_home {
        roots.push(home.join(".local/lib"));
    }
    roots.extend(
        ["/usr/lib", "/usr/local/lib", "/usr/lib64", "/usr/local/lib64"].map(PathBuf::from),
    );
    let mut dirs = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().starts_with("python3") {
                continue;
            }
            for sub in ["site-packages", "dist-packages"] {
                let dir = entry.path().join(sub).join("nvidia");
                if dir.is_dir() {
                    dirs.push(dir);
                }
            }
        }
    }
    dirs
}

fn files_matching(dir: &Path, matches: fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| matches(file_name(p)) && p.is_file())
        .collect();
    out.sort();
    out
}

/// One file-backed line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// "7f00-7f10": the name of its entry in /proc/PID/map_files.
    pub range: String,
    /// The path as the process saw it when mapping (in its mount namespace),
    /// shown as the trace shows names (bytes that are not UTF-8 as `\xHH`).
    pub path: String,
    /// The same path, its own bytes: what is opened.
    pub file: PathBuf,
    /// The kernel marks a mapping whose file was unlinked since: a library
    /// replaced on disk (a driver upgrade) while the process runs.
    pub deleted: bool,
}

const DELETED_SUFFIX: &[u8] = b" (deleted)";

/// The file-backed mappings of a maps text, one per file, in order. Read as
/// bytes: a path may hold bytes that are not UTF-8.
pub fn parse_maps(maps: &[u8]) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for line in maps.split(|&b| b == b'\n') {
        // five single-space-separated fields, then padding and the path, which may hold spaces
        let mut fields = line.splitn(6, |&b| b == b' ');
        let Some(range) = fields.next() else { continue };
        let Some(path) = fields.nth(4).map(|p| p.trim_ascii_start()) else { continue };
        if !path.starts_with(b"/") {
            continue;
        }
        let (path, deleted) = match path.strip_suffix(DELETED_SUFFIX) {
            Some(path) => (path, true),
            None => (path, false),
        };
        let file = PathBuf::from(std::ffi::OsStr::from_bytes(path));
        if !out.iter().any(|m| m.file == file && m.deleted == deleted) {
            let range = String::from_utf8_lossy(range).into_owned();
            out.push(Mapping { range, path: escape_name(path).into_owned(), file, deleted });
        }
    }
    out
}

/// The file a process maps, reachable from here: through /proc/PID/root (a
/// container's own files), or for a deleted file through
/// /proc/PID/map_files/RANGE, which opens the very inode the process maps
/// (and where a uprobe is placed on it). Opening map_files needs
/// CAP_SYS_ADMIN: without it a deleted file is out of reach.
pub fn reach(pid: i32, mapping: &Mapping) -> PathBuf {
    if mapping.deleted {
        PathBuf::from(format!("/proc/{pid}/map_files/{}", mapping.range))
    } else {
        let mut reached = std::ffi::OsString::from(format!("/proc/{pid}/root"));
        reached.push(&mapping.file);
        PathBuf::from(reached)
    }
}

/// A process's maps, or why they cannot be read, in words.
pub fn read_maps(pid: i32) -> Result<Vec<Mapping>, String> {
    let path = format!("/proc/{pid}/maps");
    match std::fs::read(&path) {
        Ok(bytes) => Ok(parse_maps(&bytes)),
        Err(e) => {
            let reason = match e.raw_os_error() {
                Some(errno) => nix::errno::Errno::from_raw(errno).desc().to_string(),
                None => e.to_string(),
            };
            let hint = match e.kind() {
                std::io::ErrorKind::PermissionDenied => {
                    format!(" (pid {pid} belongs to another user: run as root or as its owner)")
                }
                std::io::ErrorKind::NotFound => format!(" (pid {pid} has exited)"),
                _ => String::new(),
            };
            Err(format!("cannot read {path}: {reason}{hint}"))
        }
    }
}

/// The CUDA libraries (by file name) a process maps, each reachable from here.
pub fn mapped_cuda_files(
    pid: i32,
    wanted: fn(&str) -> bool,
) -> Result<Vec<(Mapping, PathBuf)>, String> {
    Ok(read_maps(pid)?
        .into_iter()
        .filter(|m| wanted(m.path.rsplit('/').next().unwrap_or("")))
        .map(|m| {
            let reached = reach(pid, &m);
            (m, reached)
        })
        .collect())
}

/// Whether a library file name is the CUDA driver's (libcuda.so, .so.1, .so.535.x).
pub fn is_driver_file(name: &str) -> bool {
    is_driver_name(name)
}

fn why_unreachable(pid: i32, mapping: &Mapping, reached: &Path) -> Option<String> {
    match std::fs::File::open(reached) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "pid {pid} maps {}, deleted on disk since it was loaded (replaced while the process runs): it can only be \
             read and probed through {}, which needs root (CAP_SYS_ADMIN): {}",
            mapping.path,
            reached.display(),
            e.raw_os_error().map(|n| nix::errno::Errno::from_raw(n).desc().to_string()).unwrap_or_else(|| e.to_string())
        )),
    }
}

/// Why a --cuda-lib path is not taken, in words (it is not one of `found`).
pub fn why_not_a_cuda_library(path: &Path) -> String {
    match open_elf(path) {
        Err(reason) => reason.0,
        Ok(_) => format!(
            "defines no CUDA driver or runtime entry point ({DRIVER_MARKER} or {RUNTIME_MARKER})"
        ),
    }
}

/// A file name the driver or a runtime goes by.
fn is_cuda_name(name: &str) -> bool {
    is_driver_name(name) || is_runtime_name(name)
}

/// Every CUDA library the inputs lead to, each with the first way it was
/// found, in this order: --cuda-lib, what -p targets map, the command's
/// executables and their dependencies, drivers beside each runtime found,
/// LD_LIBRARY_PATH, the loader cache, and pip's nvidia packages.
pub fn discover(input: &DiscoveryInput) -> CudaLibraries {
    let mut found = CudaLibraries::default();
    let ld_library_path = input.ld_library_path.as_deref().map(split_paths).unwrap_or_default();
    let cache = loader_cache();
    for path in input.extra {
        found.consider(path, "--cuda-lib");
    }
    for &pid in input.pids {
        found.consider_target(pid);
    }
    for exe in &command_executables(input.command) {
        found.consider_executable(exe, &ld_library_path, &cache);
    }
    found.consider_beside_runtimes();
    for dir in &ld_library_path {
        for path in files_matching(dir, is_cuda_name) {
            found.consider(&path, "LD_LIBRARY_PATH");
        }
    }
    for (soname, path) in &cache {
        if is_cuda_name(soname) {
            found.consider(path, "loader cache");
        }
    }
    let command_exe = input.command.and_then(|cmd| cmd.first()).and_then(|c| resolve_executable(c));
    for nvidia_dir in python_site_dirs(command_exe.as_deref(), input.user_home.as_deref()) {
        let Ok(packages) = std::fs::read_dir(&nvidia_dir) else { continue };
        for package in packages.flatten() {
            for path in files_matching(&package.path().join("lib"), is_cuda_name) {
                found.consider(&path, "pip nvidia package");
            }
        }
    }
    found
}

/// Every argument that names an executable, not only the first: wrappers
/// (taskset, nice, env, chrt, python -m ...) put the real program later.
fn command_executables(command: Option<&[String]>) -> Vec<PathBuf> {
    let mut executables: Vec<PathBuf> = Vec::new();
    for arg in command.unwrap_or(&[]) {
        if let Some(path) = resolve_executable(arg).filter(|p| p.is_file()) {
            if !executables.contains(&path) {
                executables.push(path);
            }
        }
    }
    executables
}

impl CudaLibraries {
    /// The executable and the CUDA files a -p target maps; a mapping deleted
    /// on disk is taken through /proc where it can be read, else a warning.
    fn consider_target(&mut self, pid: i32) {
        self.consider(Path::new(&format!("/proc/{pid}/exe")), "target executable");
        let mapped = match mapped_cuda_files(pid, is_cuda_name) {
            Ok(mapped) => mapped,
            Err(e) => {
                self.errors.push(e);
                return;
            }
        };
        for (mapping, reached) in mapped {
            if !mapping.deleted {
                self.consider(&reached, "target maps");
            } else if let Some(why) = why_unreachable(pid, &mapping, &reached) {
                self.warnings.push(why);
            } else {
                self.consider_at(reached, VIA_DELETED_MAPPING);
            }
        }
    }

    /// A command's executable, the CUDA libraries among its dependencies, and
    /// any driver in a directory one of them is in.
    fn consider_executable(
        &mut self,
        exe: &Path,
        ld_library_path: &[PathBuf],
        cache: &[(String, PathBuf)],
    ) {
        self.consider(exe, "command executable");
        let dependencies = dependency_closure(exe, ld_library_path, cache);
        for dep in &dependencies {
            if is_cuda_name(file_name(dep)) {
                self.consider(dep, "command dependencies");
            }
        }
        for dep_dir in dependencies.iter().filter_map(|d| d.parent()) {
            for path in files_matching(dep_dir, is_driver_name) {
                self.consider(&path, "command dependencies");
            }
        }
    }

    /// libcudart dlopens libcuda.so.1: look beside every runtime found so far.
    fn consider_beside_runtimes(&mut self) {
        let runtimes: Vec<PathBuf> = self.runtime.clone();
        for rt in runtimes {
            if let Some(dir) = rt.parent() {
                for path in files_matching(dir, is_driver_name) {
                    self.consider(&path, "beside the runtime");
                }
            }
        }
    }
}

/// A CUPTI library: named libcupti.so* and defining the activity API's entry point.
fn is_cupti(path: &Path) -> bool {
    file_name(path).starts_with("libcupti.so")
        && path.is_file()
        && defines_function(path, CUPTI_MARKER)
}

const CUPTI_MARKER: &str = "cuptiActivityEnable";

/// Where to look for CUPTI, for `--gpu-activity`.
pub struct CuptiSearch<'a> {
    /// The CUDA libraries found for the recording: CUPTI ships beside them.
    pub cuda: &'a CudaLibraries,
    pub command: Option<&'a [String]>,
    pub ld_library_path: Option<String>,
    pub user_home: Option<PathBuf>,
    /// CUDA_HOME, CUDA_PATH: a toolkit's root.
    pub toolkit_roots: Vec<PathBuf>,
}

/// The CUPTI library a recording with GPU activity loads into the workload, and how it
/// was found; None when there is none. In order: beside the CUDA libraries the workload
/// uses (CUDA_HOME/lib64 or a pip package's lib), the pip package nvidia-cuda-cupti-cu*
/// beside a pip runtime (nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib) or in any
/// site-packages, a CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda: extras/CUPTI/lib64),
/// LD_LIBRARY_PATH, and the loader cache.
pub fn discover_cupti(search: &CuptiSearch) -> Option<(PathBuf, &'static str)> {
    let first_in = |dir: &Path| {
        files_matching(dir, |name| name.starts_with("libcupti.so"))
            .into_iter()
            .find(|p| is_cupti(p))
    };
    let cuda_dirs =
        search.cuda.found_via.iter().filter_map(|(p, _)| p.parent().map(Path::to_path_buf));
    for dir in cuda_dirs.clone() {
        if let Some(path) = first_in(&dir) {
            return Some((path, "beside the CUDA libraries"));
        }
    }
    for dir in cuda_dirs {
        // pip: .../nvidia/cuda_runtime/lib/libcudart.so.12 -> .../nvidia/cuda_cupti/lib/
        if let Some(nvidia) = dir.parent().and_then(Path::parent) {
            if let Some(path) = first_in(&nvidia.join("cuda_cupti").join("lib")) {
                return Some((path, "pip nvidia-cuda-cupti package"));
            }
        }
    }
    let command_exe =
        search.command.and_then(|cmd| cmd.first()).and_then(|c| resolve_executable(c));
    for nvidia in python_site_dirs(command_exe.as_deref(), search.user_home.as_deref()) {
        if let Some(path) = first_in(&nvidia.join("cuda_cupti").join("lib")) {
            return Some((path, "pip nvidia-cuda-cupti package"));
        }
    }
    let toolkits = search
        .toolkit_roots
        .iter()
        .cloned()
        .chain(std::iter::once(PathBuf::from("/usr/local/cuda")));
    for root in toolkits {
        for sub in ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"] {
            if let Some(path) = first_in(&root.join(sub)) {
                return Some((path, "CUDA toolkit"));
            }
        }
    }
    for dir in search.ld_library_path.as_deref().map(split_paths).unwrap_or_default() {
        if let Some(path) = first_in(&dir) {
            return Some((path, "LD_LIBRARY_PATH"));
        }
    }
    loader_cache()
        .into_iter()
        .find(|(soname, path)| soname.starts_with("libcupti.so") && is_cupti(path))
        .map(|(_, path)| (path, "loader cache"))
}

/// Why PATH, given as --cupti, is not a CUPTI library; None when it is one.
pub fn why_not_cupti(path: &Path) -> Option<String> {
    if !path.exists() {
        return Some("no such file".to_string());
    }
    if !path.is_file() {
        return Some("not a regular file".to_string());
    }
    if !defines_function(path, CUPTI_MARKER) {
        return Some(format!("not a CUPTI library (it does not define {CUPTI_MARKER})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_give_each_file_once_with_its_range_and_whether_it_was_deleted() {
        let maps = "7f00-7f10 r-xp 00000000 fd:01 123 /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n\
                    7f10-7f20 r--p 00010000 fd:01 123 /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n\
                    7f20-7f30 r-xp 00000000 fd:01 124 /usr/lib/libcudart.so.12\n\
                    7f30-7f40 r-xp 00000000 fd:01 125                          /opt/my libs/libcuda.so.1\n\
                    7f40-7f50 rw-p 00000000 00:00 0 [heap]\n\
                    7f50-7f60 r-xp 00000000 fd:01 126 /usr/lib/libcuda.so.550.54.14 (deleted)\n\
                    7f60-7f70 r--p 00001000 fd:01 126 /usr/lib/libcuda.so.550.54.14 (deleted)\n\
                    7f70-7f80 rw-p 00000000 00:00 0\n";
        let maps = maps.as_bytes();
        let mapping = |range: &str, path: &str, deleted| Mapping {
            range: range.into(),
            path: path.into(),
            file: path.into(),
            deleted,
        };
        assert_eq!(
            parse_maps(maps),
            vec![
                mapping("7f00-7f10", "/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03", false),
                mapping("7f20-7f30", "/usr/lib/libcudart.so.12", false),
                mapping("7f30-7f40", "/opt/my libs/libcuda.so.1", false),
                mapping("7f50-7f60", "/usr/lib/libcuda.so.550.54.14", true),
            ]
        );
        assert_eq!(
            reach(42, &parse_maps(maps)[0]),
            PathBuf::from("/proc/42/root/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03")
        );
        assert_eq!(reach(42, &parse_maps(maps)[3]), PathBuf::from("/proc/42/map_files/7f50-7f60"));
    }

    /// A library under a directory whose name is not UTF-8 (the issue's `/tmp/x/\xffodd`): its
    /// mapping is read, shown escaped, and reached by its own bytes.
    #[test]
    fn a_mapped_path_that_is_not_utf8_is_reached_by_its_bytes() {
        let maps = b"7f00-7f10 r-xp 00000000 fd:01 123 /tmp/\xffodd/libcuda.so.1\n7f10-7f20 r-xp 00000000 fd:01 124 /usr/lib/libc.so.6\n";
        let mappings = parse_maps(maps);
        assert_eq!(mappings.len(), 2);
        assert_eq!(mappings[0].path, "/tmp/\\xffodd/libcuda.so.1");
        assert_eq!(mappings[0].file.as_os_str().as_bytes(), b"/tmp/\xffodd/libcuda.so.1");
        assert_eq!(
            reach(42, &mappings[0]).as_os_str().as_bytes(),
            b"/proc/42/root/tmp/\xffodd/libcuda.so.1"
        );
    }

    #[test]
    fn unreadable_maps_say_why() {
        assert_eq!(read_maps(999_999_999), Err("cannot read /proc/999999999/maps: No such file or directory (pid 999999999 has exited)".to_string()));
        assert!(read_maps(std::process::id() as i32).unwrap().iter().any(|m| !m.deleted));
    }

    #[test]
    fn a_cuda_lib_that_is_not_one_says_why() {
        assert_eq!(
            why_not_a_cuda_library(Path::new("/dev/zero")),
            "not a regular file (a character device)"
        );
        assert_eq!(why_not_a_cuda_library(Path::new("/proc/self/status")), "not an ELF file");
        let me = std::env::current_exe().unwrap();
        assert_eq!(
            why_not_a_cuda_library(&me),
            "defines no CUDA driver or runtime entry point (cuLaunchKernel or cudaLaunchKernel)"
        );
    }
}
