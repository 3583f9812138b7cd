//! The recorder's command line.

use std::path::PathBuf;

use clap::{ArgGroup, Parser};

/// Records CUDA launches and syncs, scheduling and interrupts with eBPF into
/// an Arrow IPC trace (docs/trace-format.md). Needs root (or CAP_BPF and
/// CAP_PERFMON). The command runs as the invoking user under sudo.
#[derive(Parser, Debug)]
#[command(name = "launchgap-record", version, about, long_about = None)]
#[command(group(ArgGroup::new("target").args(["pid", "system", "command"]).required(true)))]
pub struct Args {
    /// Trace file to write.
    #[arg(short, long, default_value = "launchgap.lg")]
    pub output: PathBuf,

    /// Stop recording after this many seconds (the command keeps running).
    #[arg(short, long, value_name = "SECS")]
    pub duration: Option<f64>,

    /// Trace this running process and all its threads and descendants (repeatable).
    #[arg(short, long = "pid", value_name = "PID", conflicts_with = "command")]
    pub pid: Vec<i32>,

    /// Trace every task on every CPU (for per-core timelines).
    #[arg(long)]
    pub system: bool,

    /// Also probe the CUDA runtime's entry points, so each launch names the
    /// API the application called (costs a second uprobe hit per launch).
    #[arg(long)]
    pub api_names: bool,

    /// A CUDA driver or runtime library, or an executable with the runtime
    /// linked in, to probe besides those found automatically (repeatable).
    #[arg(long = "cuda-lib", value_name = "PATH")]
    pub cuda_lib: Vec<PathBuf>,

    /// Ring buffer size in MiB (default: 16 MiB, plus 4 MiB per CPU past four).
    #[arg(long, value_name = "MIB")]
    pub buffer_mib: Option<u32>,

    /// How often the reader drains the buffer when it is not woken earlier.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub poll_ms: u64,

    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// The command to run and trace, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl Args {
    pub fn ring_buffer_bytes(&self, cpus: usize) -> u32 {
        const MIB: u32 = 1 << 20;
        let mib = self.buffer_mib.unwrap_or_else(|| 16 + 4 * cpus.saturating_sub(4) as u32);
        // the kernel wants a power-of-two number of pages
        (mib.max(1) * MIB).next_power_of_two()
    }
}
