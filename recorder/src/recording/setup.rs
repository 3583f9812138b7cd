//! A recording's start, in the order it happens: everything that can be
//! checked is checked and found (`prepare`) before the -o file, the probes or
//! the command are touched; the command is forked and held at its gate; the
//! programs are loaded and attached; meta.json is written and the writer
//! thread started; then the user is told what is traced.

use std::mem::MaybeUninit;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use libbpf_rs::OpenObject;

use launchgap_record::discover::{self, CudaLibraries};
use launchgap_record::host_process::stop_on;
use launchgap_record::kernel_features::{self, KernelSupport, Program};
use launchgap_record::metadata;
use launchgap_record::probe_report::Probe;

use crate::cgroup_rows::Hierarchies;
use crate::drain::STOP_SIGNALS;
use crate::gpu_activity::frame_gate::{descends_from_proc, thread_of_proc, FrameGate};
use crate::gpu_activity::{self, accounting::GpuAccounting};
use crate::output::{self, Layout, Ownership, TraceOutput};
use crate::record_config::RecordConfig;
use crate::recording::guard::RecordingGuard;
use crate::recording::stage_watch::StageWatch;
use crate::schema;
use crate::skel::LaunchgapSkel;
use crate::spawn::{self, Gated, RunAs};
use crate::trace_meta::{CudaLibrary, Options, Recorder, TraceMeta};
use crate::trace_writer::format1::Format1Writer;
use crate::trace_writer::format2::Format2Writer;
use crate::trace_writer::thread::{RunningWriter, WriterJob};
use crate::trace_writer::{Format, TraceSink};
use crate::{privileges, same_file, tracer};

/// What was checked and found before anything was touched, and the trace
/// being written (not yet in place).
pub struct Prepared {
    /// who the command runs as (under sudo, the invoking user)
    pub run_as: Option<RunAs>,
    pub kernel: KernelSupport,
    pub libraries: CudaLibraries,
    pub hierarchies: Hierarchies,
    pub gpu_plan: Option<gpu_activity::Plan>,
    pub output: TraceOutput,
    /// with --gpu-activity: where the collectors write, inside the trace being written
    pub gpu_channel: Option<gpu_activity::Channel>,
    /// an earlier recording the new one would replace (not a device written in place)
    pub earlier: Option<PathBuf>,
}

pub fn prepare(config: &RecordConfig, watch: &mut StageWatch) -> Result<Prepared> {
    let run_as = spawn::invoking_user()?;
    privileges::check()?;
    watch.enter("reading the kernel's BTF");
    let kernel = kernel_features::check(Program::Recorder)?;
    watch.enter("finding the CUDA libraries");
    // --no-cuda-probes: no library is looked for, none probed
    let libraries =
        if config.cuda_probes { discover_libraries(config)? } else { CudaLibraries::default() };
    // with no other thread alive: the CUPTI check forks a child that loads libraries
    let gpu_plan = match &config.gpu_activity {
        Some(_) => watch.paused(|| plan_gpu_activity(config, &libraries, run_as.as_ref()))?,
        None => None,
    };
    watch.enter("creating the trace");
    let probed: Vec<PathBuf> = libraries.found_via.iter().map(|(p, _)| p.clone()).collect();
    same_file::refuse_output_among_inputs(
        &config.output,
        &same_file::inputs(&config.command, &config.cuda_libs, &config.pids, &probed),
    )?;
    let ownership = Ownership { owner: run_as.as_ref().map(|r| (r.uid, r.gid)), mode: config.mode };
    let layout = if config.format == Format::One { Layout::File } else { Layout::Directory };
    let output = TraceOutput::prepare(&config.output, ownership, layout)?;
    // the collector channel lives in the trace being written (format 2: a directory)
    let gpu_channel = match &gpu_plan {
        Some(plan) => Some(gpu_activity::open_channel(&output, run_as.as_ref(), plan)?),
        None => None,
    };
    let earlier = (output.writing_to() != output.final_path()
        && std::fs::symlink_metadata(output.final_path()).is_ok())
    .then(|| config.output.clone());
    let hierarchies = Hierarchies::of_host();
    Ok(Prepared { run_as, kernel, libraries, hierarchies, gpu_plan, output, gpu_channel, earlier })
}

fn user_home() -> Option<PathBuf> {
    let user = std::env::var("SUDO_USER").ok().filter(|u| u != "root");
    match user {
        Some(user) => std::fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
            passwd
                .lines()
                .find(|l| l.starts_with(&format!("{user}:")))
                .and_then(|l| l.split(':').nth(5))
                .map(PathBuf::from)
        }),
        None => std::env::var_os("HOME").map(PathBuf::from),
    }
}

/// Every --cuda-lib must have been taken as a CUDA library.
fn check_cuda_libs(extra: &[PathBuf], libraries: &CudaLibraries) -> Result<()> {
    for path in extra {
        if !libraries.found_via.iter().any(|(p, _)| Some(p) == path.canonicalize().ok().as_ref()) {
            bail!("--cuda-lib {}: {}", path.display(), discover::why_not_a_cuda_library(path));
        }
    }
    Ok(())
}

/// The CUDA libraries for the recording (or the listing) the configuration asks
/// for: every --cuda-lib must be one, and every -p target's maps readable.
pub fn discover_libraries(config: &RecordConfig) -> Result<CudaLibraries> {
    let libraries = discover::discover(&discover::DiscoveryInput {
        command: config.command(),
        pids: &config.pids,
        extra: &config.cuda_libs,
        ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
        user_home: user_home(),
    });
    check_cuda_libs(&config.cuda_libs, &libraries)?;
    if let Some(error) = libraries.errors.first() {
        bail!("{error}");
    }
    Ok(libraries)
}

/// With --gpu-activity: the CUPTI library found and checked (None without the flag).
fn plan_gpu_activity(
    config: &RecordConfig,
    libraries: &CudaLibraries,
    run_as: Option<&RunAs>,
) -> Result<Option<gpu_activity::Plan>> {
    let Some(request) = &config.gpu_activity else { return Ok(None) };
    if let Some(why) =
        gpu_activity::refusal(config.command().is_some(), !config.pids.is_empty(), config.format)
    {
        bail!("{why}");
    }
    let search = discover::CuptiSearch {
        cuda: libraries,
        command: config.command(),
        ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
        user_home: user_home(),
        toolkit_roots: ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(std::env::var_os)
            .map(PathBuf::from)
            .collect(),
    };
    gpu_activity::plan(request.cupti.as_deref(), request.collector.clone(), &search, run_as)
        .map(Some)
}

/// Forks the command, if there is one: it waits at the gate until every probe is attached.
pub fn start_command(config: &RecordConfig, prepared: &Prepared) -> Result<Option<Gated>> {
    let Some(command) = config.command() else { return Ok(None) };
    let environment = match (&prepared.gpu_plan, &prepared.gpu_channel) {
        (Some(plan), Some(channel)) => gpu_activity::environment(channel, plan),
        _ => Vec::new(),
    };
    Gated::spawn(command, prepared.run_as.as_ref(), &environment).map(Some)
}

/// The programs loaded and attached, and what the attach found.
pub struct Attached<'obj> {
    pub skel: LaunchgapSkel<'obj>,
    /// every probe, attached or not
    pub probes: Vec<Probe>,
    /// uprobes that cost more than they must, or never fire
    pub warnings: Vec<tracer::ProbeWarning>,
}

/// Loads the programs, marks the targets, and attaches every probe, the links
/// into `guard` (which detaches them if the recording stops early).
pub fn load_and_attach<'obj>(
    config: &RecordConfig,
    prepared: &Prepared,
    storage: &'obj mut MaybeUninit<OpenObject>,
    guard: &mut RecordingGuard,
    watch: &StageWatch,
) -> Result<Attached<'obj>> {
    watch.enter("loading the BPF programs");
    let mut probes = Vec::new();
    let load_opts = tracer::LoadOptions {
        system_mode: config.system,
        api_names: config.api_names,
        ring_buffer_bytes: config.ring_buffer_bytes,
        v1_cpu_hierarchy_id: prepared.hierarchies.v1_cpu_hierarchy_id(),
    };
    let loaded = tracer::load(storage, &load_opts, &prepared.kernel, &mut probes)?;
    let mut skel = loaded.skel;
    for pid in guard.command_pid().iter().chain(&config.pids) {
        tracer::add_target_process(&skel, *pid)?;
    }
    watch.enter("attaching the probes");
    tracer::attach_tracepoints(&mut skel, guard.links(), &mut probes)?;
    let warnings = tracer::attach_cuda(
        &skel,
        &prepared.libraries,
        config.api_names,
        loaded.uprobe_multi,
        guard.links(),
        &mut probes,
    );
    Ok(Attached { skel, probes, warnings })
}

/// meta.json for a recording that started at `start_ns`.
pub fn trace_meta<'a>(
    config: &'a RecordConfig,
    prepared: &'a Prepared,
    probes: &'a [Probe],
    start_ns: u64,
    command_pid: Option<i32>,
) -> TraceMeta<'a> {
    // built in the order the fields were always read, the clocks first
    TraceMeta {
        format: schema::FORMAT_NAME,
        version: config.format.version(),
        recorder: Recorder::this(),
        start_ns,
        clock: metadata::clocks(),
        host: metadata::host(),
        kernel_support: prepared.kernel.metadata(),
        host_files: metadata::host_files::snapshot(),
        topology: metadata::cpu_topology(),
        mode: config.mode_name(),
        command: &config.command,
        command_pid,
        recorder_pid: std::process::id(),
        pids: &config.pids,
        options: Options {
            api_names: config.api_names,
            cuda_probes: config.cuda_probes,
            ring_buffer_bytes: config.ring_buffer_bytes,
            poll_ms: config.poll_ms,
            duration_s: config.duration_s,
        },
        cuda_libraries: prepared
            .libraries
            .found_via
            .iter()
            .map(|(path, found_via)| CudaLibrary { path, found_via })
            .collect(),
        gpu_activity: gpu_activity::metadata(
            prepared.gpu_plan.as_ref(),
            config.why_no_gpu_activity(),
        ),
        probes,
        cgroups: prepared.hierarchies.metadata(),
    }
}

/// Writes meta.json (format 1: the stream's first batch) and starts the
/// writer thread. A disk too full for even that is said as the recording's
/// ending would say it.
pub fn start_writer(
    config: &RecordConfig,
    prepared: &Prepared,
    meta: &TraceMeta,
    start_ns: u64,
    command_pid: Option<i32>,
) -> Result<RunningWriter> {
    let meta = serde_json::to_string(meta)?;
    let output = &prepared.output;
    let created = match config.format {
        Format::One => output
            .file()
            .and_then(|file| Format1Writer::create(file, meta))
            .map(|w| Box::new(w) as Box<dyn TraceSink>),
        Format::Two => output
            .directory()
            .and_then(|dir| Format2Writer::create(dir, &meta))
            .map(|w| Box::new(w) as Box<dyn TraceSink>),
    };
    let sink = created.map_err(|e| match output::write_failure(&e, &config.output) {
        Some(reason) => anyhow!(
            "{}",
            output::failed_write_ending(&format!("{reason:#}"), 0, prepared.earlier.as_deref())
                .line
        ),
        None => e,
    })?;
    let gpu = match (&prepared.gpu_plan, command_pid) {
        (Some(_), Some(root)) => Some((
            GpuAccounting::default(),
            FrameGate::new(root as u32, Box::new(descends_from_proc), Box::new(thread_of_proc)),
        )),
        _ => None,
    };
    Ok(RunningWriter::start(WriterJob { sink, gpu, start_ns })?)
}

/// The warnings, then the line a caller waits for: what is traced, with how many
/// probes, into which file. Stop signals are taken from just before it, so one
/// sent after it ends the recording cleanly.
pub fn announce(
    config: &RecordConfig,
    prepared: &Prepared,
    command_pid: Option<i32>,
    attached: &Attached,
) {
    for w in &prepared.libraries.warnings {
        config.say(format!("warning: {w}"));
    }
    for w in &attached.warnings {
        config.say(format!("warning: {}", w.0));
    }
    if !config.cuda_probes {
        config.say("no CUDA probes (--no-cuda-probes): tracing scheduling and IRQs only; join the PyTorch profiler's trace \
                    of the same run with `launchgap report TRACE.lg --kineto PROFILER.json.gz`");
    } else if prepared.libraries.driver.is_empty() {
        config.say("warning: no CUDA driver library (libcuda.so.*) found: tracing scheduling and IRQs only (use --cuda-lib PATH)");
    }
    let cuda_probes = attached.probes.iter().filter(|p| p.is_uprobe() && p.took()).count();
    let tracepoints = attached.probes.iter().filter(|p| !p.is_uprobe() && p.took()).count();
    let what = match (command_pid, config.system) {
        (_, true) => "every task".to_string(),
        (Some(pid), _) => format!("{} (pid {pid})", config.command.join(" ")),
        (None, _) => format!(
            "pid {}",
            config.pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let output = &prepared.output;
    let via = match output.writing_to() {
        partial if partial != output.final_path() => {
            format!(" (written to {} until the end)", partial.display())
        }
        _ => String::new(),
    };
    stop_on(&STOP_SIGNALS);
    if prepared.gpu_plan.is_some() {
        config.say(
            "--gpu-activity: CUPTI is shared with any profiler the workload starts (torch.profiler): launchgap keeps \
             each one's buffers, kinds and clock apart and says so if one does; profiling anyway? record with \
             --no-cuda-probes and join its trace (launchgap report RUN.lg --kineto TRACE)",
        );
    }
    let gpu = prepared
        .gpu_plan
        .as_ref()
        .map(|p| format!(", GPU activity through CUPTI ({})", p.cupti.path.display()))
        .unwrap_or_default();
    config.say(format!(
        "tracing {what}: {cuda_probes} CUDA probes, {tracepoints} tracepoints{gpu} -> {}{via}",
        config.output.display()
    ));
}
