//! GPU activity (`--gpu-activity`): what the GPU ran, recorded by CUPTI inside each
//! CUDA process the recorder starts, and written into the trace by the recorder.
//!
//! The recorder carries the collector (../collector, built by build.rs) inside itself.
//! Before the command starts it finds a CUPTI library and checks it loads as the
//! command's user ([`preflight`]), makes the collector channel inside the trace being
//! written and writes the collector there ([`open_channel`]), and starts the command with
//! CUDA_INJECTION64_PATH naming it ([`environment`]): NVIDIA's driver loads it at cuInit.
//! While recording, [`channel::ChannelReader`] reads what each process's collector
//! wrote; the writer decodes the frames (schema::decode_collector_frame) and
//! [`accounting::GpuAccounting`] counts, per process, launches against GPU work, so
//! what never arrived becomes `lost` rows.

pub mod accounting;
pub mod channel;
pub mod frame_gate;
pub mod preflight;

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use launchgap_record::discover;

use crate::held_dir::{self, HeldDir};
use crate::output::TraceOutput;
use crate::spawn::RunAs;
use crate::trace_writer::Format;

/// The collector library, built from ../collector/cupti_collector.c by build.rs.
pub const COLLECTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/liblaunchgap-cupti.so"));
/// The channel: a directory inside the trace being written, removed before it is moved into place.
pub const CHANNEL_DIR: &str = ".gpu-channel";
const COLLECTOR_FILE: &str = "liblaunchgap-cupti.so";
/// NVIDIA's injection hook: the driver loads the library it names at cuInit.
pub const INJECTION_VARIABLE: &str = "CUDA_INJECTION64_PATH";

/// The CUPTI library the collector will load.
#[derive(Debug, Clone)]
pub struct Cupti {
    pub path: PathBuf,
    pub found_via: &'static str,
    /// cuptiGetVersion's answer, from the check made as the command's user
    pub version: u32,
}

/// What a recording with GPU activity needs, found and checked before anything is touched.
#[derive(Debug)]
pub struct Plan {
    pub cupti: Cupti,
    /// a collector library given instead of the one built in (for tests)
    pub collector_override: Option<PathBuf>,
}

/// Why GPU activity cannot be recorded the way it was asked for, if it cannot.
pub fn refusal(command: bool, pids: bool, format: Format) -> Option<&'static str> {
    if pids || !command {
        return Some(
            "--gpu-activity needs a command to start (`-- COMMAND`): CUDA loads the collector (CUDA_INJECTION64_PATH) \
             only into processes started with it, so a process attached with -p, or --system alone, cannot get one",
        );
    }
    if format == Format::One {
        return Some("--gpu-activity writes format 2 only: the collector's channel lives in the trace directory");
    }
    None
}

/// Finds CUPTI (--cupti, or discovery) and checks it, as RUN_AS would load it.
pub fn plan(
    cupti_arg: Option<&Path>,
    collector_override: Option<PathBuf>,
    search: &discover::CuptiSearch,
    run_as: Option<&RunAs>,
) -> Result<Plan> {
    if let Some(value) = std::env::var_os(INJECTION_VARIABLE) {
        bail!(
            "--gpu-activity: {INJECTION_VARIABLE} is already set ({}): another tool injects into CUDA (Nsight Systems?); \
             unset it to record GPU activity",
            value.to_string_lossy()
        );
    }
    let (path, found_via) = match cupti_arg {
        Some(path) => {
            if let Some(why) = discover::why_not_cupti(path) {
                bail!("--cupti {}: {why}", path.display());
            }
            (path.canonicalize().unwrap_or_else(|_| path.to_path_buf()), "--cupti")
        }
        None => discover::discover_cupti(search).map(|(p, via)| (p.canonicalize().unwrap_or(p), via)).with_context(|| {
            "--gpu-activity: no CUPTI library found (looked beside the CUDA libraries the command uses, in pip's \
             nvidia-cuda-cupti-cu12, in CUDA_HOME, CUDA_PATH and /usr/local/cuda (extras/CUPTI/lib64), LD_LIBRARY_PATH \
             and the loader cache); install nvidia-cuda-cupti-cu12 or give --cupti PATH"
        })?,
    };
    let driver = search.cuda.driver.first().map(PathBuf::as_path);
    let version = preflight::check(&path, driver, run_as).map_err(|why| {
        anyhow::anyhow!(
            "--gpu-activity: the CUPTI library {} cannot be used: {why}",
            path.display()
        )
    })?;
    if let Some(collector) = &collector_override {
        if !collector.is_file() {
            bail!("--gpu-collector {}: no such file", collector.display());
        }
    }
    Ok(Plan { cupti: Cupti { path, found_via, version }, collector_override })
}

/// The channel made for one recording.
#[derive(Debug)]
pub struct Channel {
    /// its path, for the collectors (they reach it by name)
    pub dir: PathBuf,
    /// the channel, held since it was made: the recorder reads and removes what is in it
    /// through this handle only (the command's user owns it, and everything in it)
    pub held: HeldDir,
    pub collector: PathBuf,
}

/// Makes the channel inside the trace being written, owned by the command's user (its
/// collectors write there), and puts the collector in it. The trace directory itself stays
/// root's: the user may pass through it to the channel, and do nothing else there.
pub fn open_channel(output: &TraceOutput, run_as: Option<&RunAs>, plan: &Plan) -> Result<Channel> {
    let trace = output.directory()?;
    let dir = output.writing_to().join(CHANNEL_DIR);
    let held = trace
        .make_dir(OsStr::new(CHANNEL_DIR), 0o700)
        .with_context(|| format!("creating {}", dir.display()))?;
    if let Some(user) = run_as {
        held_dir::hand_over(&held, Some((user.uid, user.gid)), 0o700)
            .with_context(|| format!("handing {} to uid {}", dir.display(), user.uid))?;
    }
    output.let_collectors_through()?;
    let collector = match &plan.collector_override {
        Some(path) => {
            path.canonicalize().with_context(|| format!("--gpu-collector {}", path.display()))?
        }
        None => {
            let mut file = held
                .create_file(OsStr::new(COLLECTOR_FILE), 0o755)
                .with_context(|| format!("writing {}/{COLLECTOR_FILE}", dir.display()))?;
            held_dir::hand_over(&file, None, 0o755)?;
            file.write_all(COLLECTOR)
                .with_context(|| format!("writing {}/{COLLECTOR_FILE}", dir.display()))?;
            dir.join(COLLECTOR_FILE)
        }
    };
    Ok(Channel { dir, held, collector })
}

/// Writes the built-in collector to PATH (a new file: nothing there is replaced or followed).
pub fn write_collector(path: &Path) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(COLLECTOR).with_context(|| format!("writing {}", path.display()))
}

/// What the command's environment gets.
pub fn environment(channel: &Channel, plan: &Plan) -> Vec<(String, String)> {
    // preloaded too, so that a profiler in the workload calling CUPTI's activity API reaches the
    // collector's entry points first and the two are kept apart (collector/cupti_clients.h)
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(theirs) if !theirs.is_empty() => format!("{} {theirs}", channel.collector.display()),
        _ => channel.collector.display().to_string(),
    };
    vec![
        ("LD_PRELOAD".to_string(), preload),
        (INJECTION_VARIABLE.to_string(), channel.collector.display().to_string()),
        ("LAUNCHGAP_GPU_CHANNEL".to_string(), channel.dir.display().to_string()),
        ("LAUNCHGAP_CUPTI".to_string(), plan.cupti.path.display().to_string()),
    ]
}

/// meta.json's `gpu_activity`: whether it was recorded, how, and if not why.
pub fn metadata(plan: Option<&Plan>, why_not: &str) -> Value {
    match plan {
        Some(plan) => json!({
            "recorded": true,
            "cupti": {"path": plan.cupti.path, "found_via": plan.cupti.found_via, "version": plan.cupti.version},
            "collector": plan.collector_override.as_ref().map_or_else(|| json!("built in"), |p| json!(p)),
            "channel": CHANNEL_DIR,
        }),
        None => json!({"recorded": false, "why": why_not}),
    }
}
