//! Loading the BPF programs and attaching them, with a report of every
//! probe: where it went, what its first instruction costs, whether it took.

use launchgap_record::bpf_host::{explain_load_error, pid_max};
use std::mem::MaybeUninit;
use std::path::Path;

use anyhow::{anyhow, Result};
use libbpf_rs::btf::types::Typedef;
use libbpf_rs::btf::Btf;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, ProgramAttachType};

use launchgap_record::cuda_api::{Layer, ProbeShape};
use launchgap_record::cuda_attach::{attach_library, Direction};
use launchgap_record::discover::CudaLibraries;
use launchgap_record::kernel_features::KernelSupport;
use launchgap_record::probe_plan::plan_library;
use launchgap_record::probe_report::Probe;

use crate::skel::{LaunchgapSkel, LaunchgapSkelBuilder};

pub struct LoadOptions {
    pub system_mode: bool,
    pub api_names: bool,
    pub ring_buffer_bytes: u32,
    /// the cgroup v1 hierarchy whose cpu controller cgroups are recorded (0: none)
    pub v1_cpu_hierarchy_id: u32,
}

pub struct Loaded<'obj> {
    pub skel: LaunchgapSkel<'obj>,
    /// CUDA probes go in as uprobe_multi links.
    pub uprobe_multi: bool,
}

/// Tracepoints this kernel has, judged from its BTF (tp_btf needs btf_trace_<name>).
fn kernel_has_tracepoint(btf: &Btf, name: &str) -> bool {
    btf.type_by_name::<Typedef>(&format!("btf_trace_{name}")).is_some()
}

/// Opens and loads the programs for this kernel (`kernel`, checked before): CO-RE relocates
/// against the BTF the check read, and tracepoints the kernel lacks are left out.
pub fn load<'obj>(
    storage: &'obj mut MaybeUninit<OpenObject>,
    opts: &LoadOptions,
    kernel: &KernelSupport,
    probes: &mut Vec<Probe>,
) -> Result<Loaded<'obj>> {
    let btf = Btf::from_path(&kernel.btf).map_err(|e| anyhow!("reading kernel BTF: {e}"))?;
    let mut builder = LaunchgapSkelBuilder::default();
    if let Some(path) = &kernel.core_btf {
        builder.object_builder_mut().btf_custom_path(path)?;
    }
    let mut open = builder.open(storage).map_err(|e| explain_load_error(&e))?;
    if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
        rodata.system_mode = opts.system_mode;
        rodata.api_names = opts.api_names;
        rodata.v1_cpu_hierarchy_id = opts.v1_cpu_hierarchy_id;
        rodata.wakeup_bytes = u64::from(opts.ring_buffer_bytes / 4);
        rodata.urgent_bytes = u64::from(opts.ring_buffer_bytes / 4 * 3);
    }
    open.maps.events.set_max_entries(opts.ring_buffer_bytes)?;
    open.maps.target_threads.set_max_entries(pid_max())?;
    let uprobe_multi = kernel.uprobe_multi();
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        if uprobe_multi && CUDA_PROGRAMS.contains(&name.as_str()) {
            prog.set_attach_type(ProgramAttachType::TraceUprobeMulti);
        }
        let section = prog.section().to_string_lossy().into_owned();
        let Some(tracepoint) = section.strip_prefix("tp_btf/") else { continue };
        if !kernel_has_tracepoint(&btf, tracepoint) {
            prog.set_autoload(false);
            probes.push(Probe::tracepoint(tracepoint, Err("not in this kernel".to_string())));
        }
    }
    let skel = open.load().map_err(|e| explain_load_error(&e))?;
    Ok(Loaded { skel, uprobe_multi })
}

/// Attaches every loaded tracepoint program.
pub fn attach_tracepoints(
    skel: &mut LaunchgapSkel,
    links: &mut Vec<Link>,
    probes: &mut Vec<Probe>,
) -> Result<()> {
    use libbpf_rs::skel::Skel;
    for prog in skel.object_mut().progs_mut() {
        let section = prog.section().to_string_lossy().into_owned();
        let Some(tracepoint) = section.strip_prefix("tp_btf/") else { continue };
        if prog.autoload() {
            match prog.attach() {
                Ok(link) => {
                    links.push(link);
                    probes.push(Probe::tracepoint(tracepoint, Ok(())));
                }
                Err(e) => return Err(anyhow!("attaching tracepoint {tracepoint}: {e}")),
            }
        }
    }
    Ok(())
}

/// A one-line warning per uprobe that will cost more, or never fire.
pub struct ProbeWarning(pub String);

/// The CUDA programs, which take uprobe_multi links where the kernel has them.
const CUDA_PROGRAMS: [&str; 8] = [
    "launch_kernel",
    "launch_kernel_ex",
    "graph_launch",
    "runtime_entry",
    "runtime_exit",
    "sync_enter",
    "memcpy_enter",
    "sync_exit",
];

/// The program that takes an entry point of this shape, at its entry or its return.
fn program<'a, 'obj>(
    skel: &'a LaunchgapSkel<'obj>,
    shape: ProbeShape,
    direction: Direction,
) -> Option<(&'a libbpf_rs::ProgramMut<'obj>, &'static str)> {
    let progs = &skel.progs;
    Some(match (shape, direction) {
        (ProbeShape::Launch, Direction::Entry) => (&progs.launch_kernel, "launch_kernel"),
        (ProbeShape::LaunchEx, Direction::Entry) => (&progs.launch_kernel_ex, "launch_kernel_ex"),
        (ProbeShape::GraphLaunch, Direction::Entry) => (&progs.graph_launch, "graph_launch"),
        (ProbeShape::Sync, Direction::Entry) => (&progs.sync_enter, "sync_enter"),
        (ProbeShape::Memcpy, Direction::Entry) => (&progs.memcpy_enter, "memcpy_enter"),
        (ProbeShape::RuntimeName, Direction::Entry) => (&progs.runtime_entry, "runtime_entry"),
        (ProbeShape::RuntimeName, Direction::Return) => (&progs.runtime_exit, "runtime_exit"),
        (ProbeShape::Sync | ProbeShape::Memcpy, Direction::Return) => {
            (&progs.sync_exit, "sync_exit")
        }
        (
            ProbeShape::Launch | ProbeShape::LaunchEx | ProbeShape::GraphLaunch,
            Direction::Return,
        ) => return None,
    })
}

/// Attaches the CUDA uprobes to every library found: driver entry points
/// always, runtime entry points with `api_names` (cuda_attach places and
/// describes them).
pub fn attach_cuda(
    skel: &LaunchgapSkel,
    libraries: &CudaLibraries,
    api_names: bool,
    multi: bool,
    links: &mut Vec<Link>,
    probes: &mut Vec<Probe>,
) -> Vec<ProbeWarning> {
    let mut warnings = Vec::new();
    let mut targets: Vec<(&Path, Layer)> =
        libraries.driver.iter().map(|p| (p.as_path(), Layer::Driver)).collect();
    if api_names {
        targets.extend(
            libraries
                .runtime
                .iter()
                .chain(&libraries.static_runtime)
                .map(|p| (p.as_path(), Layer::Runtime)),
        );
    }
    for (file, layer) in targets {
        match plan_library(file, layer) {
            Ok(plan) => attach_library(
                &plan,
                file,
                &|shape, direction| program(skel, shape, direction),
                multi,
                links,
                probes,
                &mut warnings,
            ),
            Err(e) => warnings.push(format!("cannot read {}: {e:#}", file.display())),
        }
    }
    warnings.into_iter().map(ProbeWarning).collect()
}

/// Marks a process (all its threads, present and future) as a target.
pub fn add_target_process(skel: &LaunchgapSkel, pid: i32) -> Result<()> {
    let one = [1u8];
    skel.maps.target_processes.update(&pid.to_ne_bytes(), &one, MapFlags::ANY)?;
    let threads: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_else(|_| vec![pid]);
    const TARGET_FLAG: u8 = 1; // bpf/maps.bpf.h
    for tid in threads {
        skel.maps.target_threads.update(&tid.to_ne_bytes(), &[TARGET_FLAG], MapFlags::ANY)?;
    }
    Ok(())
}

/// Events lost so far: (event type, cpu) -> count.
pub fn read_drops(skel: &LaunchgapSkel, event_types: u32) -> Vec<(u32, usize, u64)> {
    let mut out = Vec::new();
    for kind in 0..event_types {
        let Ok(Some(per_cpu)) = skel.maps.dropped.lookup_percpu(&kind.to_ne_bytes(), MapFlags::ANY)
        else {
            continue;
        };
        for (cpu, bytes) in per_cpu.iter().enumerate() {
            let count =
                bytes.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap())).unwrap_or(0);
            if count > 0 {
                out.push((kind, cpu, count));
            }
        }
    }
    out
}

/// After the probes are detached: writes the launches still staged in any
/// thread's task storage (the task iterator in cuda.bpf.c), so none is lost.
pub fn flush_staged_launches(skel: &LaunchgapSkel) -> Result<()> {
    let link = skel.progs.flush_staged_launches.attach()?;
    let mut iter = libbpf_rs::Iter::new(&link)?;
    std::io::copy(&mut iter, &mut std::io::sink())?;
    Ok(())
}
