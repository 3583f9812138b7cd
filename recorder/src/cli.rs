//! The recorder's command line.

use std::path::PathBuf;

use clap::{ArgGroup, Parser};


/// Records CUDA launches and syncs, scheduling and interrupts with eBPF into
/// an Arrow IPC trace (docs/trace-format.md). Needs root (or CAP_BPF and
/// CAP_PERFMON). The command runs as the invoking user under sudo.
#[derive(Parser, Debug)]
#[command(name = "launchgap-record", version)]
#[command(group(ArgGroup::new("target").args(["pid", "system", "command", "list_probes"]).required(true).multiple(true)))]
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

    /// Ring buffer size, e.g. 64M or 512K, rounded up to a power of two
    /// (default: 16M, plus 4M per CPU past four).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub buffer: Option<u32>,

    /// How often the reader drains the buffer when it is not woken earlier.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub poll_ms: u64,

    /// Trace nothing: print as JSON every CUDA library found (for the
    /// command, which is not run, or -p PIDs) and where each probe would go,
    /// the instruction it would sit on and what a hit there costs.
    #[arg(long, conflicts_with = "system")]
    pub list_probes: bool,

    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// The command to run and trace, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

const PAGE: u32 = 4096;
const MIB: u32 = 1 << 20;
const MAX_BUFFER: u32 = 1 << 30;

/// "512K", "64M", "1G" or plain bytes -> bytes, within one page and 1 GiB.
pub fn parse_size(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale: u64 = match unit.to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return Err(format!("'{text}': use a size like 512K, 64M or 1G")),
    };
    let value: u64 = digits.parse().map_err(|_| format!("'{text}': use a size like 512K, 64M or 1G"))?;
    let bytes = value * scale;
    if bytes < u64::from(PAGE) || bytes > u64::from(MAX_BUFFER) {
        return Err(format!("'{text}': the ring buffer must be between 4K and 1G"));
    }
    Ok(bytes as u32)
}

impl Args {
    pub fn ring_buffer_bytes(&self, cpus: usize) -> u32 {
        let bytes = self.buffer.unwrap_or_else(|| (16 + 4 * cpus.saturating_sub(4) as u32) * MIB);
        // the kernel wants a power-of-two number of pages
        bytes.max(PAGE).next_power_of_two()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("8192"), Ok(8192));
        assert!(parse_size("1K").is_err());
        assert!(parse_size("2T").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn default_buffer_grows_with_cpus_and_is_a_power_of_two() {
        let args = Args::parse_from(["launchgap-record", "--system"]);
        assert_eq!(args.ring_buffer_bytes(2), 16 * MIB);
        assert_eq!(args.ring_buffer_bytes(64), 256 * MIB);
        let args = Args::parse_from(["launchgap-record", "--system", "--buffer", "5000"]);
        assert_eq!(args.ring_buffer_bytes(2), 8192);
    }
}
