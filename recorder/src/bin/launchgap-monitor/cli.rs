//! The monitor's command line, validated once into `Config`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{ArgGroup, Parser};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// Serves in-kernel aggregates of CUDA launches, launch gaps, scheduling
/// and interrupts to Prometheus, until stopped (SIGINT or SIGTERM). Needs
/// root (or CAP_BPF and CAP_PERFMON). Metrics: docs/monitor.md.
#[derive(Parser, Debug)]
#[command(name = "launchgap-monitor", version)]
#[command(group(ArgGroup::new("targets").args(["pid", "cgroup", "all_cuda"]).multiple(false)))]
pub struct Args {
    /// Address and port to serve /metrics on. Loopback by default: expose it
    /// beyond the host only on purpose (e.g. 0.0.0.0:9464 behind a firewall).
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: String,

    /// Watch these processes, their threads and descendants (repeatable).
    #[arg(short, long = "pid", value_name = "PID")]
    pub pid: Vec<i32>,

    /// Watch the tasks in these cgroups and below, and those moved in later
    /// (repeatable; a cgroup v2 directory, or a v1 one on hosts that have v1).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Vec<PathBuf>,

    /// Watch every process that uses a CUDA driver library, and new ones as
    /// they initialise CUDA (the default).
    #[arg(long)]
    pub all_cuda: bool,

    /// Split each process's series by live thread (labels tid, thread; the
    /// series with tid "" holds its exited threads); off by default to bound
    /// the number of series.
    #[arg(long)]
    pub per_thread: bool,

    /// A CUDA driver library to probe besides those found (repeatable).
    #[arg(long = "cuda-lib", value_name = "PATH")]
    pub cuda_lib: Vec<PathBuf>,

    /// Target threads counted at once; memory is fixed by it (about 2 KiB each).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_threads: u32,

    /// Target processes at once (also bounds the exited processes kept).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_processes: u32,

    /// (target process, culprit command, cause) entries kept in the kernel.
    #[arg(long, value_name = "N", default_value_t = 16384)]
    pub max_culprits: u32,

    /// Culprits named per process and cause; the rest are summed as `other`.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub top_culprits: usize,

    /// How often to look for new CUDA processes and libraries (and cgroup
    /// members), in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub rescan: f64,

    /// How long an exited process's final counters stay exported, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub retain_exited: f64,

    /// Also push the metrics as OTLP (HTTP/protobuf) to this OpenTelemetry
    /// collector endpoint, e.g. http://127.0.0.1:4318/v1/metrics (port 4318
    /// and path /v1/metrics if left out; plain http only).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Seconds between OTLP pushes [default: 60, the OpenTelemetry SDKs'].
    #[arg(long, value_name = "SECS")]
    pub otlp_interval: Option<f64>,

    /// Seconds one OTLP push may take, connecting to answer; it never holds
    /// up /metrics [default: 10].
    #[arg(long, value_name = "SECS")]
    pub otlp_timeout: Option<f64>,

    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    CudaCallers,
    Pids(Vec<i32>),
    Cgroups(Vec<PathBuf>),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub targets: Targets,
    pub per_thread: bool,
    pub cuda_libs: Vec<PathBuf>,
    pub max_threads: u32,
    pub max_processes: u32,
    pub max_culprits: u32,
    pub top_culprits: usize,
    pub rescan: Duration,
    pub retain_exited: Duration,
    pub quiet: bool,
    pub otlp: Option<crate::otlp::OtlpConfig>,
}

/// "127.0.0.1:9464", "[::1]:9464", "localhost:9464" -> one address.
pub fn parse_listen(text: &str) -> Result<SocketAddr> {
    let hint = "use ADDR:PORT, e.g. 127.0.0.1:9464";
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        bail!("--listen '{text}': no port ({hint})")
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        bail!("--listen '{text}': not an address and port ({hint})");
    }
    match text.to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(addr)) => Ok(addr),
        _ => bail!("--listen '{text}': cannot resolve '{host}' ({hint})"),
    }
}

fn seconds(name: &str, value: f64, at_least: f64) -> Result<Duration> {
    if !value.is_finite() || value < at_least {
        bail!("--{name} {value}: must be at least {at_least} s");
    }
    Ok(Duration::from_secs_f64(value))
}

impl Args {
    pub fn validate(self) -> Result<Config> {
        let listen = parse_listen(&self.listen)?;
        for &pid in &self.pid {
            if pid <= 0 || !PathBuf::from(format!("/proc/{pid}")).exists() {
                bail!("no such process: {pid}");
            }
        }
        for (name, value) in [
            ("max-threads", self.max_threads),
            ("max-processes", self.max_processes),
            ("max-culprits", self.max_culprits),
        ] {
            if value == 0 {
                bail!("--{name} must be at least 1");
            }
        }
        let otlp = match &self.otlp_endpoint {
            Some(url) => Some(crate::otlp::OtlpConfig {
                endpoint: crate::otlp::parse_endpoint(url)?,
                interval: seconds(
                    "otlp-interval",
                    self.otlp_interval.unwrap_or(crate::otlp::DEFAULT_INTERVAL_S),
                    0.1,
                )?,
                timeout: seconds(
                    "otlp-timeout",
                    self.otlp_timeout.unwrap_or(crate::otlp::DEFAULT_TIMEOUT_S),
                    0.1,
                )?,
            }),
            None if self.otlp_interval.is_some() => bail!("--otlp-interval needs --otlp-endpoint"),
            None if self.otlp_timeout.is_some() => bail!("--otlp-timeout needs --otlp-endpoint"),
            None => None,
        };
        let targets = if !self.pid.is_empty() {
            Targets::Pids(self.pid)
        } else if !self.cgroup.is_empty() {
            Targets::Cgroups(self.cgroup)
        } else {
            Targets::CudaCallers
        };
        Ok(Config {
            listen,
            targets,
            per_thread: self.per_thread,
            cuda_libs: self.cuda_lib,
            max_threads: self.max_threads,
            max_processes: self.max_processes,
            max_culprits: self.max_culprits,
            top_culprits: self.top_culprits,
            rescan: seconds("rescan", self.rescan, 0.1)?,
            retain_exited: seconds("retain-exited", self.retain_exited, 0.0)?,
            quiet: self.quiet,
            otlp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_addresses_and_refuses_the_rest() {
        assert_eq!(parse_listen("127.0.0.1:9464").unwrap(), "127.0.0.1:9464".parse().unwrap());
        assert_eq!(parse_listen("[::1]:80").unwrap(), "[::1]:80".parse().unwrap());
        assert!(parse_listen("localhost:9464").unwrap().ip().is_loopback());
        for bad in ["9464", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", ":9464", "nonsense"] {
            let message = parse_listen(bad).unwrap_err().to_string();
            assert!(message.starts_with("--listen"), "{bad}: {message}");
            assert!(!message.contains('\n'));
        }
    }

    #[test]
    fn one_kind_of_target_at_a_time() {
        assert!(Args::try_parse_from(["m", "-p", "1", "--cgroup", "/x"]).is_err());
        assert!(Args::try_parse_from(["m", "--all-cuda", "-p", "1"]).is_err());
        let args = Args::try_parse_from(["m"]).unwrap();
        assert_eq!(args.validate().unwrap().targets, Targets::CudaCallers);
        let args = Args::try_parse_from(["m", "-p", "1"]).unwrap();
        assert_eq!(args.validate().unwrap().targets, Targets::Pids(vec![1]));
    }

    #[test]
    fn sizes_and_periods_are_checked() {
        let args = Args::try_parse_from(["m", "--max-threads", "0"]).unwrap();
        assert!(args.validate().is_err());
        let args = Args::try_parse_from(["m", "--rescan", "0"]).unwrap();
        assert!(args.validate().unwrap_err().to_string().contains("--rescan"));
        let args =
            Args::try_parse_from(["m", "--otlp-endpoint", "http://c", "--otlp-interval", "0"])
                .unwrap();
        assert!(args.validate().unwrap_err().to_string().contains("--otlp-interval"));
        let args = Args::try_parse_from(["m", "--otlp-endpoint", "https://c"]).unwrap();
        assert!(args.validate().unwrap_err().to_string().contains("--otlp-endpoint"));
        let args = Args::try_parse_from(["m", "--otlp-interval", "2"]).unwrap();
        assert_eq!(
            args.validate().unwrap_err().to_string(),
            "--otlp-interval needs --otlp-endpoint"
        );
        assert!(Args::try_parse_from(["m"]).unwrap().validate().unwrap().otlp.is_none());
        let args =
            Args::try_parse_from(["m", "--otlp-endpoint", "http://c:1/x", "--otlp-interval", "2"])
                .unwrap();
        let otlp = args.validate().unwrap().otlp.unwrap();
        assert_eq!(
            (otlp.endpoint.url.as_str(), otlp.interval),
            ("http://c:1/x", Duration::from_secs(2))
        );
    }
}
