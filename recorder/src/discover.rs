//! Finding the CUDA driver and runtime a workload will use, before it runs.
//!
//! Sources, in order: --cuda-lib, the maps of running targets, the command's
//! own ELF dependencies (resolved like the loader: RPATH/RUNPATH,
//! LD_LIBRARY_PATH, the loader cache), LD_LIBRARY_PATH directories, the loader
//! cache, pip-installed nvidia-* packages, and runtime symbols inside
//! executables (nvcc links cudart statically by default).

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectKind};

use crate::cuda_api::{DRIVER_MARKER, RUNTIME_MARKER};
use crate::elf_symbols::defines_function;

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
}

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
    fn seen(&self, canonical: &Path) -> bool {
        self.found_via.iter().any(|(p, _)| p == canonical)
    }

    /// Classifies a candidate by what it defines, not by its name.
    fn consider(&mut self, path: &Path, via: &'static str) {
        let Ok(canonical) = path.canonicalize() else { return };
        if self.seen(&canonical) {
            return;
        }
        let is_executable = elf_kind(&canonical) == Some(ObjectKind::Executable)
            || (elf_kind(&canonical) == Some(ObjectKind::Dynamic) && !file_name(&canonical).contains(".so"));
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
    let data = std::fs::read(path).ok()?;
    object::File::parse(&*data).ok().map(|f| f.kind())
}

fn split_paths(list: &str) -> Vec<PathBuf> {
    list.split(':').filter(|p| !p.is_empty()).map(PathBuf::from).collect()
}

/// `ldconfig -p`: soname -> path, for the loader cache.
fn loader_cache() -> Vec<(String, PathBuf)> {
    let Ok(out) = Command::new("ldconfig").arg("-p").output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (left, path) = line.split_once(" => ")?;
            let soname = left.trim().split_whitespace().next()?;
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
    fn search_order<'a>(&'a self, ld_library_path: &'a [PathBuf]) -> impl Iterator<Item = &'a PathBuf> {
        let rpath = if self.runpath.is_empty() { &self.rpath[..] } else { &[] };
        rpath.iter().chain(ld_library_path).chain(&self.runpath)
    }
}

/// DT_NEEDED and the RPATH/RUNPATH directories ($ORIGIN expanded) of an ELF file.
fn elf_dependencies(path: &Path) -> Option<ElfDeps> {
    let data = std::fs::read(path).ok()?;
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&*data).ok()?;
    let origin = path.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let endian = elf.endian();
    let mut deps = ElfDeps { needed: Vec::new(), rpath: Vec::new(), runpath: Vec::new() };
    let sections = elf.elf_section_table();
    let Ok(Some((dynamic, index))) = sections.dynamic(endian, &*data) else {
        return Some(deps);
    };
    let Ok(strings) = sections.strings(endian, &*data, index) else {
        return Some(deps);
    };
    use object::read::elf::Dyn;
    for entry in dynamic {
        let tag = entry.d_tag(endian) as u32;
        let Ok(value) = entry.string(endian, strings) else { continue };
        let value = String::from_utf8_lossy(value).into_owned();
        let expanded = || split_paths(&value.replace("$ORIGIN", &origin).replace("${ORIGIN}", &origin));
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
fn dependency_closure(exe: &Path, ld_library_path: &[PathBuf], cache: &[(String, PathBuf)]) -> Vec<PathBuf> {
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
            let from_dirs = deps.search_order(ld_library_path).map(|d| d.join(soname)).find(|p| p.is_file());
            let resolved = from_dirs.or_else(|| cache.iter().find(|(s, _)| s == soname).map(|(_, p)| p.clone()));
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
    roots.extend(["/usr/lib", "/usr/local/lib", "/usr/lib64", "/usr/local/lib64"].map(PathBuf::from));
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

fn mapped_files(pid: i32) -> Vec<PathBuf> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return Vec::new() };
    let mut out: BTreeSet<PathBuf> = BTreeSet::new();
    for line in maps.lines() {
        if let Some(path) = line.split_whitespace().nth(5) {
            if path.starts_with('/') {
                out.insert(PathBuf::from(path));
            }
        }
    }
    out.into_iter().collect()
}

pub fn discover(input: &DiscoveryInput) -> CudaLibraries {
    let mut found = CudaLibraries::default();
    let ld_library_path = input.ld_library_path.as_deref().map(split_paths).unwrap_or_default();
    let cache = loader_cache();
    let cuda_named = |name: &str| is_driver_name(name) || is_runtime_name(name);

    for path in input.extra {
        found.consider(path, "--cuda-lib");
    }
    for &pid in input.pids {
        found.consider(Path::new(&format!("/proc/{pid}/exe")), "target executable");
        for path in mapped_files(pid).iter().filter(|p| cuda_named(file_name(p))) {
            found.consider(path, "target maps");
        }
    }
    let command_exe = input.command.and_then(|cmd| cmd.first()).and_then(|c| resolve_executable(c));
    // Every argument that names an executable, not only the first: wrappers
    // (taskset, nice, env, chrt, python -m ...) put the real program later.
    let mut executables: Vec<PathBuf> = Vec::new();
    for arg in input.command.unwrap_or(&[]) {
        if let Some(path) = resolve_executable(arg).filter(|p| p.is_file()) {
            if !executables.contains(&path) {
                executables.push(path);
            }
        }
    }
    for exe in &executables {
        found.consider(exe, "command executable");
        let dependencies = dependency_closure(exe, &ld_library_path, &cache);
        for dep in &dependencies {
            if cuda_named(file_name(dep)) {
                found.consider(dep, "command dependencies");
            }
        }
        for dep_dir in dependencies.iter().filter_map(|d| d.parent()) {
            for path in files_matching(dep_dir, is_driver_name) {
                found.consider(&path, "command dependencies");
            }
        }
    }
    // libcudart dlopens libcuda.so.1: look beside every runtime we found.
    let runtimes: Vec<PathBuf> = found.runtime.clone();
    for rt in runtimes {
        if let Some(dir) = rt.parent() {
            for path in files_matching(dir, is_driver_name) {
                found.consider(&path, "beside the runtime");
            }
        }
    }
    for dir in &ld_library_path {
        for path in files_matching(dir, cuda_named) {
            found.consider(&path, "LD_LIBRARY_PATH");
        }
    }
    for (soname, path) in &cache {
        if cuda_named(soname) {
            found.consider(path, "loader cache");
        }
    }
    for nvidia_dir in python_site_dirs(command_exe.as_deref(), input.user_home.as_deref()) {
        let Ok(packages) = std::fs::read_dir(&nvidia_dir) else { continue };
        for package in packages.flatten() {
            for path in files_matching(&package.path().join("lib"), cuda_named) {
                found.consider(&path, "pip nvidia package");
            }
        }
    }
    found
}
