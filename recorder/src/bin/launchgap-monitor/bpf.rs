//! Loading the monitor's BPF programs (maps sized from the command line),
//! attaching them, and reading and pruning their maps.

use launchgap_record::bpf_host::{explain_load_error, pid_max};
use std::mem::MaybeUninit;
use std::path::Path;

use anyhow::{anyhow, Result};
use libbpf_rs::btf::types::Typedef;
use libbpf_rs::btf::Btf;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{
    Link, MapCore, MapFlags, OpenObject, ProgramAttachType, ProgramMut, UprobeMultiOpts, UprobeOpts,
};

use launchgap_record::cuda_api::{ProbeShape, APIS};
use launchgap_record::cuda_attach::{attach_library, AttachPath, Direction};
use launchgap_record::elf_symbols::find_functions;
use launchgap_record::kernel_features::KernelSupport;
use launchgap_record::probe_placement::{place, ProbeCost};
use launchgap_record::probe_plan::LibraryPlan;
use launchgap_record::probe_report::Probe;

use crate::cli::{Config, Targets};
use crate::skel::types::{
    cgroup_key, culprit_key, process_key, process_remains, thread_counters, thread_stats,
};
use crate::skel::{MonitorSkel, MonitorSkelBuilder};

// SAFETY: plain C structs of integers and byte arrays; any bit pattern is valid.
unsafe impl plain::Plain for thread_stats {}
unsafe impl plain::Plain for process_remains {}
unsafe impl plain::Plain for process_key {}
unsafe impl plain::Plain for culprit_key {}

/// enum target_mode in bpf/monitor.h
const TARGET_CUDA_CALLERS: u32 = 0;
const TARGET_PIDS: u32 = 1;
const TARGET_CGROUPS: u32 = 2;
/// TARGET_FLAG in bpf/targets.bpf.h
const TARGET_FLAG: u8 = 1;
/// How many entries one batched map read takes.
const BATCH: u32 = 256;

/// The CUDA programs, which take uprobe_multi links where the kernel has them.
const CUDA_PROGRAMS: [&str; 4] =
    ["monitor_launch", "monitor_sync_enter", "monitor_sync_exit", "monitor_cuda_init"];

/// The function whose call makes a process a CUDA process (adopted by default).
pub const CUDA_INIT: &str = "cuInit";

/// A bit for each of the first `slots` entry points (the kernel's per-API
/// slots, cookie - 1) after whose return the thread's GPU work is done.
pub fn drain_api_slots(slots: usize) -> u32 {
    APIS.iter()
        .take(slots.min(32))
        .enumerate()
        .filter(|(_, api)| api.drains())
        .fold(0, |mask, (slot, _)| mask | 1 << slot)
}

pub struct Loaded<'obj> {
    pub skel: MonitorSkel<'obj>,
    pub uprobe_multi: bool,
    /// Tracepoints this kernel lacks (left unloaded).
    pub missing_tracepoints: Vec<String>,
}

/// Opens and loads the programs for this kernel (`kernel`, checked before): CO-RE relocates
/// against the BTF the check read, and tracepoints the kernel lacks are left out.
pub fn load<'obj>(
    storage: &'obj mut MaybeUninit<OpenObject>,
    config: &Config,
    kernel: &KernelSupport,
) -> Result<Loaded<'obj>> {
    let btf = Btf::from_path(&kernel.btf).map_err(|e| anyhow!("reading kernel BTF: {e}"))?;
    let mut builder = MonitorSkelBuilder::default();
    if let Some(path) = &kernel.core_btf {
        builder.object_builder_mut().btf_custom_path(path)?;
    }
    let mut open = builder.open(storage).map_err(|e| explain_load_error(&e))?;
    if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
        rodata.target_mode = match config.targets {
            Targets::CudaCallers => TARGET_CUDA_CALLERS,
            Targets::Pids(_) => TARGET_PIDS,
            Targets::Cgroups(_) => TARGET_CGROUPS,
        };
        rodata.drain_api_slots = drain_api_slots(thread_counters::default().calls.len());
    }
    let cpus = libbpf_rs::num_possible_cpus()? as u32;
    open.maps.target_threads.set_max_entries(pid_max())?;
    open.maps.target_processes.set_max_entries(config.max_processes)?;
    open.maps.threads.set_max_entries(config.max_threads)?;
    open.maps.retired.set_max_entries(config.max_processes)?;
    open.maps.culprits.set_max_entries(config.max_culprits)?;
    open.maps.cpu_waiters.set_max_entries(cpus.max(1))?;
    let uprobe_multi = kernel.uprobe_multi();
    let mut missing_tracepoints = Vec::new();
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        if uprobe_multi && CUDA_PROGRAMS.contains(&name.as_str()) {
            prog.set_attach_type(ProgramAttachType::TraceUprobeMulti);
        }
        let section = prog.section().to_string_lossy().into_owned();
        let Some(tracepoint) = section.strip_prefix("tp_btf/") else { continue };
        if btf.type_by_name::<Typedef>(&format!("btf_trace_{tracepoint}")).is_none() {
            prog.set_autoload(false);
            missing_tracepoints.push(tracepoint.to_string());
        }
    }
    let skel = open.load().map_err(|e| explain_load_error(&e))?;
    Ok(Loaded { skel, uprobe_multi, missing_tracepoints })
}

pub fn attach_tracepoints(skel: &mut MonitorSkel, links: &mut Vec<Link>) -> Result<usize> {
    let mut attached = 0;
    for prog in skel.object_mut().progs_mut() {
        let section = prog.section().to_string_lossy().into_owned();
        let Some(tracepoint) = section.strip_prefix("tp_btf/") else { continue };
        if prog.autoload() {
            links.push(
                prog.attach().map_err(|e| anyhow!("attaching tracepoint {tracepoint}: {e}"))?,
            );
            attached += 1;
        }
    }
    Ok(attached)
}

/// The program for an entry point's shape: launches are only counted (no
/// argument is read), syncs and copies timed; runtime entry points are not
/// probed (one hit a launch, at the driver).
fn program<'a, 'obj>(
    skel: &'a MonitorSkel<'obj>,
    shape: ProbeShape,
    direction: Direction,
) -> Option<(&'a ProgramMut<'obj>, &'static str)> {
    let progs = &skel.progs;
    match (shape, direction) {
        (ProbeShape::Launch | ProbeShape::LaunchEx | ProbeShape::GraphLaunch, Direction::Entry) => {
            Some((&progs.monitor_launch, "monitor_launch"))
        }
        (ProbeShape::Sync | ProbeShape::Memcpy, Direction::Entry) => {
            Some((&progs.monitor_sync_enter, "monitor_sync_enter"))
        }
        (ProbeShape::Sync | ProbeShape::Memcpy, Direction::Return) => {
            Some((&progs.monitor_sync_exit, "monitor_sync_exit"))
        }
        _ => None,
    }
}

/// Attaches the driver's launch and sync probes, then cuInit's (which
/// adopts a process as it initialises CUDA), each where probe_placement
/// puts it. `file` is the path the kernel resolves (for another mount
/// namespace, through /proc/PID/root).
pub fn attach_driver(
    skel: &MonitorSkel,
    plan: &LibraryPlan,
    file: &Path,
    multi: bool,
    links: &mut Vec<Link>,
    probes: &mut Vec<Probe>,
    warnings: &mut Vec<String>,
) {
    attach_library(
        plan,
        file,
        &|shape, direction| program(skel, shape, direction),
        multi,
        links,
        probes,
        warnings,
    );
    match find_functions(file, &[CUDA_INIT]) {
        Ok(sites) => {
            let Some(site) = sites.get(CUDA_INIT) else { return };
            let placement = place(&site.code, site.address);
            // called once a process: a single-stepped hit costs nothing that matters; one that never fires does
            if placement.cost == ProbeCost::NeverFires {
                warnings.push(format!(
                    "{CUDA_INIT} in {} begins with {}, which the kernel refuses to probe: \
                                       processes are adopted at their first launch instead",
                    file.display(),
                    placement.probed
                ));
            }
            let offset = (site.file_offset + placement.offset) as usize;
            let prog = &skel.progs.monitor_cuda_init;
            let reached = AttachPath::of(file);
            let attached = if multi {
                let opts = UprobeMultiOpts { offsets: vec![offset], ..Default::default() };
                prog.attach_uprobe_multi_with_opts(-1, reached.path(), "", opts)
            } else {
                prog.attach_uprobe_with_opts(-1, reached.path(), offset, UprobeOpts::default())
            };
            match attached {
                Ok(link) => {
                    links.push(link);
                    probes.push(Probe {
                        placed_offset: Some(placement.offset),
                        attached: Some(true),
                        ..Probe::uprobe(CUDA_INIT, file)
                    });
                }
                Err(e) => warnings
                    .push(format!("uprobe on {CUDA_INIT} in {} failed: {e}", file.display())),
            }
        }
        Err(e) => warnings.push(format!("cannot read {}: {e:#}", file.display())),
    }
}

/// Marks a process (all its threads, present and future) as a target.
pub fn add_target_process(skel: &MonitorSkel, pid: i32) -> Result<()> {
    skel.maps.target_processes.update(&pid.to_ne_bytes(), &[TARGET_FLAG], MapFlags::ANY)?;
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for tid in dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
            skel.maps.target_threads.update(&tid.to_ne_bytes(), &[TARGET_FLAG], MapFlags::ANY)?;
        }
    }
    Ok(())
}

pub fn is_target_process(skel: &MonitorSkel, pid: u32) -> bool {
    matches!(skel.maps.target_processes.lookup(&pid.to_ne_bytes(), MapFlags::ANY), Ok(Some(_)))
}

pub fn target_processes(skel: &MonitorSkel) -> Vec<u32> {
    skel.maps
        .target_processes
        .keys()
        .filter_map(|k| Some(u32::from_ne_bytes(k.get(..4)?.try_into().ok()?)))
        .collect()
}

pub fn forget_target_process(skel: &MonitorSkel, pid: u32) {
    let _ = skel.maps.target_processes.delete(&pid.to_ne_bytes());
}

/// A --cgroup target, and its hierarchy (cgroup id 0), whose moves out are followed.
pub fn add_target_cgroup(skel: &MonitorSkel, hierarchy_id: u32, cgroup_id: u64) -> Result<()> {
    for id in [cgroup_id, 0] {
        let key = cgroup_key { hierarchy_id, pad: 0, cgroup_id: id };
        // SAFETY: a plain C struct viewed as its bytes.
        let bytes = unsafe { plain::as_bytes(&key) };
        skel.maps.target_cgroups.update(bytes, &[TARGET_FLAG], MapFlags::ANY)?;
    }
    Ok(())
}

unsafe impl plain::Plain for cgroup_key {}

fn batched<T: plain::Plain + Default + Clone>(
    map: &libbpf_rs::MapMut,
    key_of: impl Fn(&[u8]) -> Option<T>,
) -> Vec<(T, Vec<u8>)> {
    match map.lookup_batch(BATCH, MapFlags::ANY, MapFlags::ANY) {
        Ok(iter) => iter.filter_map(|(k, v)| Some((key_of(&k)?, v))).collect(),
        Err(_) => map
            .keys()
            .filter_map(|k| {
                let value = map.lookup(&k, MapFlags::ANY).ok()??;
                Some((key_of(&k)?, value))
            })
            .collect(),
    }
}

fn decode<T: plain::Plain + Default + Clone>(bytes: &[u8]) -> Option<T> {
    plain::from_bytes::<T>(bytes.get(..std::mem::size_of::<T>())?).ok().cloned()
}

/// Every target thread's entry: (tid, stats).
pub fn read_threads(skel: &MonitorSkel) -> Vec<(u32, thread_stats)> {
    batched(&skel.maps.threads, |k| Some(u32::from_ne_bytes(k.get(..4)?.try_into().ok()?)))
        .into_iter()
        .filter_map(|(tid, v)| Some((tid, decode::<thread_stats>(&v)?)))
        .collect()
}

pub fn delete_thread(skel: &MonitorSkel, tid: u32) {
    let _ = skel.maps.threads.delete(&tid.to_ne_bytes());
}

/// What exited threads left, by process.
pub fn read_retired(skel: &MonitorSkel) -> Vec<(process_key, process_remains)> {
    batched(&skel.maps.retired, decode::<process_key>)
        .into_iter()
        .filter_map(|(k, v)| Some((k, decode::<process_remains>(&v)?)))
        .collect()
}

pub fn delete_retired(skel: &MonitorSkel, key: &process_key) {
    // SAFETY: a plain C struct viewed as its bytes.
    let _ = skel.maps.retired.delete(unsafe { plain::as_bytes(key) });
}

pub fn read_culprits(skel: &MonitorSkel) -> Vec<(culprit_key, u64)> {
    batched(&skel.maps.culprits, decode::<culprit_key>)
        .into_iter()
        .filter_map(|(k, v)| Some((k, u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))))
        .collect()
}

pub fn delete_culprit(skel: &MonitorSkel, key: &culprit_key) {
    // SAFETY: a plain C struct viewed as its bytes.
    let _ = skel.maps.culprits.delete(unsafe { plain::as_bytes(key) });
}

fn sum_percpu(map: &libbpf_rs::MapMut, index: u32) -> u64 {
    let Ok(Some(per_cpu)) = map.lookup_percpu(&index.to_ne_bytes(), MapFlags::ANY) else {
        return 0;
    };
    per_cpu.iter().filter_map(|b| Some(u64::from_ne_bytes(b.get(..8)?.try_into().ok()?))).sum()
}

/// Updates lost, by enum lost_update (monitor.h), summed over CPUs.
pub fn read_lost(skel: &MonitorSkel, kinds: u32) -> Vec<u64> {
    (0..kinds).map(|kind| sum_percpu(&skel.maps.lost_updates, kind)).collect()
}

pub fn read_lost_culprit_ns(skel: &MonitorSkel) -> u64 {
    sum_percpu(&skel.maps.lost_culprit_ns, 0)
}

/// (map, entries now, capacity) for the maps whose size depends on the workload.
pub fn map_fill(skel: &MonitorSkel) -> Vec<(&'static str, u64, u64)> {
    let count = |map: &libbpf_rs::MapMut| map.keys().count() as u64;
    vec![
        ("threads", count(&skel.maps.threads), u64::from(skel.maps.threads.max_entries())),
        ("retired", count(&skel.maps.retired), u64::from(skel.maps.retired.max_entries())),
        ("culprits", count(&skel.maps.culprits), u64::from(skel.maps.culprits.max_entries())),
        (
            "target_processes",
            count(&skel.maps.target_processes),
            u64::from(skel.maps.target_processes.max_entries()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use launchgap_record::schema_names::DRAIN_API_NAMES;

    #[test]
    fn every_drain_api_has_its_bit_in_the_kernels_slots() {
        let slots = thread_counters::default().calls.len();
        let mask = drain_api_slots(slots);
        assert_eq!(mask.count_ones() as usize, DRAIN_API_NAMES.len());
        for (slot, api) in APIS.iter().take(slots).enumerate() {
            assert_eq!(mask >> slot & 1 == 1, DRAIN_API_NAMES.contains(&api.name), "{}", api.name);
        }
    }
}
