//! The recorder's command line.

use std::path::PathBuf;

use clap::{ArgGroup, Parser};

/// Records CUDA launches and syncs, scheduling and interrupts with eBPF into
/// a trace: a directory of Parquet tables, one per event kind
/// (docs/trace-format.md). Needs root (or CAP_BPF and CAP_PERFMON). The
/// command runs as the invoking user under sudo.
#[derive(Parser, Debug)]
#[command(name = "launchgap-record", version)]
#[command(after_help = OUTPUT_HELP)]
#[command(group(ArgGroup::new("target").args(["pid", "system", "command", "list_probes", "print_schema", "write_collector"]).required(true).multiple(true)))]
pub struct Args {
    /// Trace to write. It is replaced only when the recording ends
    /// (see "The trace" below).
    #[arg(short, long, default_value = "launchgap.lg")]
    pub output: PathBuf,

    /// Trace format: 2, a directory of Parquet tables (one per event kind);
    /// 1, the legacy single Arrow IPC stream.
    #[arg(long, value_name = "N", default_value = "2", value_parser = parse_format)]
    pub format: u32,

    /// Permissions of the trace's files, in octal (its directories get the
    /// same plus search where reading is allowed: 700 for 600). The owner
    /// must keep read and write (6xx): a trace its owner cannot read or
    /// remove is refused. Under sudo it belongs to the invoking user
    /// (SUDO_UID/SUDO_GID). The umask does not apply.
    #[arg(long, value_name = "OCTAL", default_value = "600", value_parser = parse_mode)]
    pub mode: u32,

    /// Stop recording after this many seconds, more than 0 (the command keeps running).
    #[arg(short, long, value_name = "SECS", value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<f64>,

    /// Trace this running process and all its threads and descendants
    /// (repeatable; not with --system, which traces every task already).
    #[arg(short, long = "pid", value_name = "PID", conflicts_with_all = ["command", "system"])]
    pub pid: Vec<i32>,

    /// Trace every task on every CPU (for per-core timelines).
    #[arg(long)]
    pub system: bool,

    /// Also probe the CUDA runtime's entry points, so each launch names the
    /// API the application called (costs a second uprobe hit per launch).
    #[arg(long)]
    pub api_names: bool,

    /// Also record what the GPU ran (kernels, graphs, copies, memsets, syncs, with
    /// the API calls that made them) through CUPTI, loaded into every CUDA process
    /// the command starts by NVIDIA's injection hook (CUDA_INJECTION64_PATH). Costs
    /// what CUPTI costs on the GPU node (docs/benchmarks.md). Needs a command (not
    /// -p) and format 2; fails before the command starts when no usable CUPTI is found.
    #[arg(long)]
    pub gpu_activity: bool,

    /// The CUPTI library to load (libcupti.so.*) instead of the one found beside
    /// the CUDA libraries, in pip's nvidia-cuda-cupti-cu12 or in the CUDA toolkit.
    #[arg(long, value_name = "PATH", requires = "gpu_activity")]
    pub cupti: Option<PathBuf>,

    /// A collector library to inject instead of the built-in one (for tests).
    #[arg(long, value_name = "PATH", requires = "gpu_activity", hide = true)]
    pub gpu_collector: Option<PathBuf>,

    /// Trace scheduling and interrupts only, no CUDA probes: for a run whose GPU
    /// side comes from the PyTorch profiler's trace, which holds the launches
    /// already (join them with `launchgap report RUN.lg --kineto TRACE`). Costs
    /// a launch-bound workload almost nothing (docs/benchmarks.md).
    #[arg(long, conflicts_with_all = ["api_names", "gpu_activity", "cuda_lib", "list_probes"])]
    pub no_cuda_probes: bool,

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

    /// Trace nothing: print as JSON the trace schema this binary was built
    /// with (schema/trace.toml), for checking it against the readers.
    #[arg(long, hide = true, conflicts_with_all = ["system", "list_probes"])]
    pub print_schema: bool,

    /// Trace nothing: write the CUPTI collector this recorder injects (a shared
    /// library) to PATH, for benchmarks and tests that load it themselves.
    #[arg(long, value_name = "PATH", hide = true, conflicts_with_all = ["system", "list_probes", "print_schema"])]
    pub write_collector: Option<PathBuf>,

    /// Print nothing but errors: no progress, no warnings, no LOST summary
    /// (losses stay in the trace as `lost` rows).
    #[arg(short, long)]
    pub quiet: bool,

    /// The command to run and trace, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

const OUTPUT_HELP: &str = "\
The trace:
  A directory NAME (the -o path): meta.json, one subdirectory of Parquet
  segments per event kind (launch/000001.parquet, ...), end.json when the
  recorder stopped cleanly. DuckDB, polars, pandas, pyarrow and Spark read
  it as it is: read_parquet('NAME/launch/*.parquet').
  The recorder writes into .NAME.partial-PID beside NAME and renames it to
  NAME when the recording ends: when the command exits, at --duration, at
  Ctrl-C or SIGTERM, when the disk fills up, and when the command fails.
  Until then an earlier NAME is left as it was, and it stays when the disk
  was full before a single event was written (the recorder then fails).
  An -o that is the command, a file it names, a --cuda-lib or a probed
  library (the same file by device and inode) is refused, and so is one
  that is a directory or a file but not a launchgap trace (an empty file
  aside): nothing but an earlier trace is ever replaced. A recorder killed by SIGKILL
  leaves .NAME.partial-PID, readable up to its last segment (segments close
  at least once a second). While recording, .NAME.lock beside NAME holds the
  recorder's pid: a second recorder writing the same NAME is refused. Under
  sudo the trace belongs to the invoking user, mode 0600 (as perf writes;
  directories 0700), whatever the umask; --mode 640 or 644 shares it.";

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
    let value: u64 =
        digits.parse().map_err(|_| format!("'{text}': use a size like 512K, 64M or 1G"))?;
    let bytes = value * scale;
    if bytes < u64::from(PAGE) || bytes > u64::from(MAX_BUFFER) {
        return Err(format!("'{text}': the ring buffer must be between 4K and 1G"));
    }
    Ok(bytes as u32)
}

/// Seconds to record: a finite number above 0. Anything else is refused
/// here, before a probe is loaded or the command started.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let seconds: f64 =
        text.trim().parse().map_err(|_| "use a number of seconds, e.g. 10 or 0.5".to_string())?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err("use a number of seconds above 0, e.g. 10 or 0.5".to_string());
    }
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| "use a number of seconds below 2^64".to_string())?;
    Ok(seconds)
}

/// "1" or "2": the trace formats this recorder writes.
pub fn parse_format(text: &str) -> Result<u32, String> {
    match text.trim() {
        "1" => Ok(1),
        "2" => Ok(2),
        _ => Err("use 2 (Parquet tables, the default) or 1 (the legacy Arrow stream)".to_string()),
    }
}

/// What the trace's owner must keep: read, to use the trace at all, and
/// write, since a directory trace's directories follow the mode and a
/// directory its owner cannot write is one whose files it cannot remove.
const OWNER_READ_WRITE: u32 = 0o600;

/// "600", "0640" or "0o644" -> permission bits (no setuid, setgid or sticky),
/// the owner keeping read and write.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let digits = text.trim().trim_start_matches("0o");
    let mode = u32::from_str_radix(digits, 8)
        .map_err(|_| "use octal permission bits, e.g. 600 or 644".to_string())?;
    if mode > 0o777 {
        return Err("use permission bits between 000 and 777".to_string());
    }
    if mode & OWNER_READ_WRITE != OWNER_READ_WRITE {
        return Err(format!(
            "the trace's owner could not {} it: use a mode that starts with 6 or 7, e.g. 600 or 640",
            if mode & 0o400 == 0 { "read" } else { "remove" }
        ));
    }
    Ok(mode)
}

/// Parses the command line; a usage error is one line (`launchgap-record:
/// invalid value ...`) and exit status 2; --help and --version print as usual.
pub fn parse_args() -> Args {
    match Args::try_parse() {
        Ok(args) => args,
        Err(err) if !err.use_stderr() => err.exit(),
        Err(err) => {
            eprintln!("launchgap-record: {}", one_line(&err.render().to_string()));
            std::process::exit(2);
        }
    }
}

/// clap's message without its "error:" prefix, usage and "--help" hint, on one line.
fn one_line(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    parts.join(" ")
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
    fn durations_must_be_finite_and_positive() {
        assert_eq!(parse_duration("10"), Ok(10.0));
        assert_eq!(parse_duration("0.5"), Ok(0.5));
        for bad in ["0", "-1", "inf", "-inf", "nan", "NaN", "1e300", "", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn modes_are_octal_permission_bits() {
        assert_eq!(parse_mode("600"), Ok(0o600));
        assert_eq!(parse_mode("0644"), Ok(0o644));
        assert_eq!(parse_mode("0o640"), Ok(0o640));
        assert!(parse_mode("888").is_err());
        assert!(parse_mode("4755").is_err());
        assert!(parse_mode("rw").is_err());
    }

    #[test]
    fn a_mode_the_owner_cannot_read_or_remove_is_refused() {
        let read = "the trace's owner could not read it: use a mode that starts with 6 or 7, e.g. 600 or 640";
        let remove = "the trace's owner could not remove it: use a mode that starts with 6 or 7, e.g. 600 or 640";
        assert_eq!(parse_mode("000"), Err(read.to_string()));
        assert_eq!(parse_mode("044"), Err(read.to_string()));
        assert_eq!(parse_mode("200"), Err(read.to_string()));
        assert_eq!(parse_mode("400"), Err(remove.to_string()));
        assert_eq!(parse_mode("0o444"), Err(remove.to_string()));
        assert_eq!(parse_mode("700"), Ok(0o700));
        let err =
            Args::try_parse_from(["launchgap-record", "--mode", "000", "--", "true"]).unwrap_err();
        assert_eq!(
            one_line(&err.render().to_string()),
            format!("invalid value '000' for '--mode <OCTAL>': {read}")
        );
    }

    #[test]
    fn system_and_pids_do_not_mix() {
        let err = Args::try_parse_from(["launchgap-record", "--system", "-p", "1"]).unwrap_err();
        assert_eq!(
            one_line(&err.render().to_string()),
            "the argument '--system' cannot be used with '--pid <PID>'"
        );
    }

    #[test]
    fn usage_errors_are_one_line() {
        let err = Args::try_parse_from(["launchgap-record", "--duration", "inf", "--", "true"])
            .unwrap_err();
        assert_eq!(
            one_line(&err.render().to_string()),
            "invalid value 'inf' for '--duration <SECS>': use a number of seconds above 0, e.g. 10 or 0.5"
        );
        let err = Args::try_parse_from(["launchgap-record"]).unwrap_err();
        assert!(!one_line(&err.render().to_string()).contains('\n'));
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
