//! What a recording (or `--list-probes`) is asked to do, made once from the
//! command line and checked there, as ripgrep's HiArgs are made from its raw
//! flags: past `main`, nothing sees clap's `Args`. clap has checked each
//! value's form (cli.rs); what needs the host (a -p process exists) is
//! checked here, first, before anything is touched.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::cli::Args;
use crate::trace_writer::Format;

/// With --gpu-activity: which CUPTI and collector to use when not the ones found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuActivityRequest {
    /// --cupti
    pub cupti: Option<PathBuf>,
    /// the hidden --gpu-collector (tests)
    pub collector: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// -o: the trace to write
    pub output: PathBuf,
    pub format: Format,
    /// --mode: the trace's permission bits
    pub mode: u32,
    /// the command to start and trace, after `--` (empty: none)
    pub command: Vec<String>,
    /// -p: running processes to trace (each exists)
    pub pids: Vec<i32>,
    /// --system: every task on every CPU
    pub system: bool,
    pub api_names: bool,
    /// false with --no-cuda-probes: scheduling and interrupts only
    pub cuda_probes: bool,
    pub gpu_activity: Option<GpuActivityRequest>,
    /// --cuda-lib
    pub cuda_libs: Vec<PathBuf>,
    /// --buffer, or the default for this host's CPUs: a power of two
    pub ring_buffer_bytes: u32,
    pub poll_ms: u64,
    /// --duration, in seconds
    pub duration_s: Option<f64>,
    pub quiet: bool,
}

fn check_pids(pids: &[i32]) -> Result<()> {
    for &pid in pids {
        if pid <= 0 || !PathBuf::from(format!("/proc/{pid}")).exists() {
            bail!("no such process: {pid}");
        }
    }
    Ok(())
}

impl RecordConfig {
    /// The configuration the arguments ask for; an error when a -p process does not exist.
    pub fn from_args(args: Args) -> Result<Self> {
        check_pids(&args.pid)?;
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let ring_buffer_bytes = args.ring_buffer_bytes(cpus);
        Ok(RecordConfig {
            output: args.output,
            format: if args.format == 1 { Format::One } else { Format::Two },
            mode: args.mode,
            command: args.command,
            pids: args.pid,
            system: args.system,
            api_names: args.api_names,
            cuda_probes: !args.no_cuda_probes,
            gpu_activity: args
                .gpu_activity
                .then_some(GpuActivityRequest { cupti: args.cupti, collector: args.gpu_collector }),
            cuda_libs: args.cuda_lib,
            ring_buffer_bytes,
            poll_ms: args.poll_ms,
            duration_s: args.duration,
            quiet: args.quiet,
        })
    }

    /// The command to start, if there is one.
    pub fn command(&self) -> Option<&[String]> {
        (!self.command.is_empty()).then_some(self.command.as_slice())
    }

    /// meta.json's `mode`: what is traced.
    pub fn mode_name(&self) -> &'static str {
        if self.system {
            "system"
        } else if self.command().is_some() {
            "command"
        } else {
            "pids"
        }
    }

    /// How long one wait for records lasts when nothing wakes the drain earlier.
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.poll_ms.max(1))
    }

    /// When --duration ends a recording started at `start`. cli::parse_duration
    /// let through only what a Duration holds; an instant too far to represent
    /// is a deadline never reached.
    pub fn deadline(&self, start: Instant) -> Option<Instant> {
        self.duration_s.and_then(|s| start.checked_add(Duration::from_secs_f64(s)))
    }

    /// Why a trace without --gpu-activity has no GPU activity (meta.json says it).
    pub fn why_no_gpu_activity(&self) -> &'static str {
        if !self.pids.is_empty() {
            "attached with -p: CUPTI can only be injected into processes the recorder starts"
        } else if self.command.is_empty() {
            "no command was started (--system alone): CUPTI can only be injected into processes the recorder starts"
        } else {
            "not asked for (record with --gpu-activity)"
        }
    }

    /// A progress line or warning, unless -q.
    pub fn say(&self, message: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("launchgap-record: {}", message.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str]) -> Result<RecordConfig> {
        RecordConfig::from_args(
            Args::try_parse_from([&["launchgap-record"], args].concat()).unwrap(),
        )
    }

    #[test]
    fn a_pid_that_does_not_exist_is_refused_before_anything_else() {
        let err = config(&["-p", "0"]).unwrap_err();
        assert_eq!(err.to_string(), "no such process: 0");
        let me = std::process::id().to_string();
        assert_eq!(config(&["-p", &me]).unwrap().mode_name(), "pids");
    }

    #[test]
    fn the_flags_become_what_the_recording_uses() {
        let c = config(&[
            "--format",
            "1",
            "--buffer",
            "5000",
            "--gpu-activity",
            "--cupti",
            "/c.so",
            "--",
            "true",
        ])
        .unwrap();
        assert_eq!((c.format, c.ring_buffer_bytes, c.mode_name()), (Format::One, 8192, "command"));
        assert_eq!(
            c.gpu_activity,
            Some(GpuActivityRequest { cupti: Some("/c.so".into()), collector: None })
        );
        assert_eq!(c.command(), Some(&["true".to_string()][..]));
        let c = config(&["--system", "--poll-ms", "0", "--duration", "1e19"]).unwrap();
        assert_eq!(
            (c.mode_name(), c.command(), c.poll()),
            ("system", None, Duration::from_millis(1))
        );
        assert!(c.gpu_activity.is_none() && c.cuda_probes);
        assert!(!config(&["--no-cuda-probes", "--", "true"]).unwrap().cuda_probes);
        // a deadline too far to represent is never reached
        assert_eq!(c.deadline(Instant::now()), None);
    }
}
