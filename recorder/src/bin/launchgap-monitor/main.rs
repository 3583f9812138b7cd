//! launchgap-monitor: always-on, in-kernel aggregation of CUDA launches,
//! launch gaps, scheduling and interrupts, served to Prometheus. The BPF
//! side keeps counters per target thread in preallocated maps; nothing is
//! sent per event. This side reads the maps when /metrics is scraped, takes
//! what exited threads left once their process is gone, and looks for new
//! CUDA processes and libraries now and then. Runs until SIGINT or SIGTERM,
//! then detaches everything.

mod bpf;
mod cli;
mod exposition;
mod http;
mod otlp;
mod procfs;
mod stats;

mod skel {
    #![allow(
        clippy::all,
        unused_imports,
        dead_code,
        non_camel_case_types,
        non_snake_case,
        non_upper_case_globals
    )]
    include!(concat!(env!("OUT_DIR"), "/monitor.skel.rs"));
}

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use clap::Parser;
use libbpf_rs::Link;

use launchgap_record::bpf_host::{detach_all, route_libbpf_messages};
use launchgap_record::cgroups;
use launchgap_record::cuda_api::Layer;
use launchgap_record::discover;
use launchgap_record::host_process::{become_background_batch_work, stop_on, stop_signal};
use launchgap_record::kernel_features::{self, Program};
use launchgap_record::probe_plan::plan_library;
use launchgap_record::probe_report::Probe;

use crate::cli::{Args, Config, Targets};
use crate::exposition::{Snapshot, LOST_UPDATE_REASONS};
use crate::skel::MonitorSkel;
use crate::stats::{ProcessKey, ProcessRecord};

/// How often exited threads and processes are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How long one wait for a request lasts, so signals and timers are seen.
const WAIT_FOR_REQUEST: Duration = Duration::from_millis(100);

struct Monitor<'obj> {
    config: Config,
    skel: MonitorSkel<'obj>,
    links: Vec<Link>,
    uprobe_multi: bool,
    /// Probed driver files by (device, inode), with the path first used.
    libraries: Vec<((u64, u64), PathBuf)>,
    probes: Vec<Probe>,
    records: HashMap<ProcessKey, ProcessRecord>,
    /// Thread entries (tid, start) and retired processes found gone at the
    /// last sweep: taken at the next one, so a last update in flight lands first.
    threads_gone: HashSet<(u32, u64)>,
    processes_gone: HashSet<ProcessKey>,
    cgroups: Vec<cgroups::CgroupTarget>,
    cgroup_paths: cgroups::CgroupPaths,
    last_scrape_seconds: f64,
    otlp: Option<otlp::Pusher>,
}

fn say(quiet: bool, message: impl AsRef<str>) {
    if !quiet {
        eprintln!("launchgap-monitor: {}", message.as_ref());
    }
}

impl<'obj> Monitor<'obj> {
    /// Probes a driver library unless its file is probed already.
    fn probe_library(&mut self, path: &std::path::Path) -> Vec<String> {
        let mut warnings = Vec::new();
        let Some(identity) = procfs::file_identity(path) else { return warnings };
        if self.libraries.iter().any(|(id, _)| *id == identity) {
            return warnings;
        }
        match plan_library(path, Layer::Driver) {
            Ok(plan) if !plan.probes.is_empty() => {
                bpf::attach_driver(
                    &self.skel,
                    &plan,
                    path,
                    self.uprobe_multi,
                    &mut self.links,
                    &mut self.probes,
                    &mut warnings,
                );
                self.libraries.push((identity, path.to_path_buf()));
            }
            Ok(_) => {}
            Err(e) => warnings.push(format!("cannot read {}: {e:#}", path.display())),
        }
        warnings
    }

    /// Processes to watch now, by the chosen targets (for CUDA callers: those
    /// mapping a driver library).
    fn current_targets(&self) -> Vec<i32> {
        match &self.config.targets {
            Targets::Pids(pids) => pids.clone(),
            Targets::Cgroups(_) => {
                self.cgroups.iter().flat_map(|c| cgroups::processes_in(&c.path)).collect()
            }
            Targets::CudaCallers => {
                let me = std::process::id() as i32;
                procfs::all_pids()
                    .into_iter()
                    .filter(|&pid| pid != me && !bpf::is_target_process(&self.skel, pid as u32))
                    .filter(|&pid| !procfs::mapped_drivers(pid).is_empty())
                    .collect()
            }
        }
    }

    /// Adds new target processes and probes the driver libraries they map.
    fn rescan(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        if !matches!(self.config.targets, Targets::Pids(_)) {
            for pid in self.current_targets() {
                let _ = bpf::add_target_process(&self.skel, pid);
            }
        }
        for pid in bpf::target_processes(&self.skel) {
            for path in procfs::mapped_drivers(pid as i32) {
                warnings.extend(self.probe_library(&path));
            }
        }
        warnings
    }

    /// The record of a process, made on first sight: named from /proc while
    /// it lives, else from what the kernel side kept (`known`: command, cgroup id).
    fn record_for(&mut self, key: ProcessKey, known: Option<(String, u64)>) -> &mut ProcessRecord {
        if !self.records.contains_key(&key) {
            let (command, cgroup_id) = known.unwrap_or_default();
            let record = ProcessRecord {
                command: procfs::command_of(key.pid)
                    .filter(|_| procfs::process_alive(key.pid, key.start_ns))
                    .unwrap_or(command),
                labels: self.cgroup_paths.labels(cgroup_id, key.pid),
                ..Default::default()
            };
            self.records.insert(key, record);
        }
        self.records.get_mut(&key).expect("inserted above")
    }

    /// Takes what exited threads and processes left in the kernel's maps into
    /// their records, frees those entries, and forgets processes gone longer
    /// than --retain-exited.
    fn sweep(&mut self) {
        self.cgroup_paths.refresh();
        let mut in_kernel = self.take_dead_threads();
        in_kernel.extend(self.take_dead_processes());
        self.mark_gone(&in_kernel);
        let now = Instant::now();
        for key in stats::expired(
            &self.records,
            now,
            self.config.retain_exited,
            self.config.max_processes as usize,
        ) {
            self.records.remove(&key);
        }
        for pid in bpf::target_processes(&self.skel) {
            if !PathBuf::from(format!("/proc/{pid}")).exists() {
                bpf::forget_target_process(&self.skel, pid);
            }
        }
    }

    /// Thread entries whose thread is gone (its last switch went unseen):
    /// taken at the second sweep that finds them gone. Returns the processes
    /// that still have thread entries.
    fn take_dead_threads(&mut self) -> HashSet<ProcessKey> {
        let mut kept = HashSet::new();
        let mut seen_gone = HashSet::new();
        for (tid, t) in bpf::read_threads(&self.skel) {
            let key = stats::process_of(&t);
            self.record_for(key, Some(stats::identity_of(&t)));
            let id = (tid, t.state.start_ns);
            if procfs::thread_alive(t.state.pid, tid, t.state.start_ns) {
                kept.insert(key);
            } else if self.threads_gone.contains(&id) {
                stats::add(&mut self.record_for(key, None).taken, &t.counters);
                bpf::delete_thread(&self.skel, tid);
            } else {
                seen_gone.insert(id);
                kept.insert(key);
            }
        }
        self.threads_gone = seen_gone;
        kept
    }

    /// What exited threads left (`retired`), taken at the second sweep that
    /// finds their process gone, so a last thread's fold in flight lands
    /// first. Returns the processes that still have such an entry.
    fn take_dead_processes(&mut self) -> HashSet<ProcessKey> {
        let mut kept = HashSet::new();
        let mut seen_gone = HashSet::new();
        for (kernel_key, remains) in bpf::read_retired(&self.skel) {
            let key = ProcessKey { pid: kernel_key.pid, start_ns: kernel_key.start_ns };
            self.record_for(key, Some(stats::remains_identity(&remains)));
            if procfs::process_alive(key.pid, key.start_ns) {
                kept.insert(key);
            } else if self.processes_gone.contains(&key) {
                stats::add(&mut self.record_for(key, None).taken, &remains.counters);
                bpf::delete_retired(&self.skel, &kernel_key);
            } else {
                seen_gone.insert(key);
                kept.insert(key);
            }
        }
        self.processes_gone = seen_gone;
        kept
    }

    /// A process is gone once it has left /proc and nothing of it is left in
    /// the kernel's maps: its culprits are taken then, and its record kept
    /// for --retain-exited. Live ones get their name refreshed (exec renames).
    fn mark_gone(&mut self, in_kernel: &HashSet<ProcessKey>) {
        let now = Instant::now();
        let culprits = bpf::read_culprits(&self.skel);
        for (key, record) in self.records.iter_mut().filter(|(_, r)| r.gone_since.is_none()) {
            if procfs::process_alive(key.pid, key.start_ns) {
                if let Some(command) = procfs::command_of(key.pid) {
                    record.command = command;
                }
                continue;
            }
            if in_kernel.contains(key) {
                continue;
            }
            record.gone_since = Some(now);
            for (culprit, ns) in culprits.iter().filter(|(c, _)| c.pid == key.pid) {
                *record
                    .culprits_taken
                    .entry((culprit.cause, stats::comm_string(&culprit.comm)))
                    .or_default() += ns;
                bpf::delete_culprit(&self.skel, culprit);
            }
        }
    }

    fn snapshot(&mut self) -> Snapshot {
        let threads = bpf::read_threads(&self.skel);
        let remains = bpf::read_retired(&self.skel);
        for (_, t) in &threads {
            self.record_for(stats::process_of(t), Some(stats::identity_of(t)));
        }
        for (key, r) in &remains {
            self.record_for(
                ProcessKey { pid: key.pid, start_ns: key.start_ns },
                Some(stats::remains_identity(r)),
            );
        }
        let retired: Vec<(ProcessKey, skel::types::thread_counters)> = remains
            .into_iter()
            .map(|(k, r)| (ProcessKey { pid: k.pid, start_ns: k.start_ns }, r.counters))
            .collect();
        let processes = stats::by_process(&self.records, &threads, &retired);
        let launching: HashMap<ProcessKey, u64> =
            processes.iter().map(|s| (s.process, s.counters.launching_threads)).collect();
        let mut series = if self.config.per_thread {
            // each process's series split by live thread, plus one (tid "") for its exited threads
            let mut split = stats::by_process(&self.records, &[], &retired);
            split.extend(stats::by_thread(&threads));
            split
        } else {
            processes
        };
        stats::gpu_idle_lower_bounds(&mut series, &launching, &mut self.records);
        let none = (0u32, String::new());
        let targets = series
            .into_iter()
            .map(|series| {
                let exited = self.config.per_thread && series.tid.is_none();
                let mut labels = exposition::target_labels(
                    &series.process,
                    self.records.get(&series.process),
                    if exited { Some(&none) } else { series.tid.as_ref() },
                );
                if exited {
                    labels.iter_mut().filter(|(k, _)| k == "tid").for_each(|(_, v)| v.clear());
                }
                (labels, series)
            })
            .collect();
        let culprits = stats::top_culprits(
            &self.records,
            &bpf::read_culprits(&self.skel),
            self.config.top_culprits,
        )
        .iter()
        .map(|c| (exposition::culprit_labels(c, &self.records), c.ns as f64 / 1e9))
        .collect();
        let attached = self.probes.iter().filter(|p| p.took()).count() as u64;
        Snapshot {
            targets,
            culprits,
            lost_updates: bpf::read_lost(&self.skel, LOST_UPDATE_REASONS.len() as u32),
            lost_culprit_ns: bpf::read_lost_culprit_ns(&self.skel),
            maps: bpf::map_fill(&self.skel),
            target_processes: bpf::target_processes(&self.skel).len() as u64,
            probes_attached: attached,
            probes_failed: self.probes.len() as u64 - attached,
            libraries: self.libraries.iter().map(|(_, p)| p.display().to_string()).collect(),
            target_mode: match &self.config.targets {
                Targets::CudaCallers => "all-cuda".to_string(),
                Targets::Pids(_) => "pids".to_string(),
                Targets::Cgroups(_) => "cgroups".to_string(),
            },
            per_thread: self.config.per_thread,
            last_scrape_seconds: self.last_scrape_seconds,
            http: http::Health::default(),
            otlp: self.otlp.as_ref().map(otlp::Pusher::health),
        }
    }

    /// The /metrics page, with the HTTP server's own health.
    fn page(&mut self, server: &http::Health) -> String {
        let started = Instant::now();
        let snapshot = Snapshot { http: server.clone(), ..self.snapshot() };
        let page = exposition::render(snapshot);
        self.last_scrape_seconds = started.elapsed().as_secs_f64();
        page
    }

    /// Hands the page to the OTLP pushing thread when its interval has passed (never waits for the push).
    fn push_otlp(&mut self, server: &http::Health) {
        if self.otlp.as_ref().is_some_and(otlp::Pusher::due) {
            let taken = std::time::SystemTime::now();
            let page = self.page(server);
            if let Some(pusher) = &mut self.otlp {
                pusher.push(page, taken);
            }
        }
    }
}

fn cuda_lib_problems(extra: &[PathBuf], libraries: &discover::CudaLibraries) -> Result<()> {
    for path in extra {
        if !libraries.driver.iter().any(|p| Some(p) == path.canonicalize().ok().as_ref()) {
            // the recorder's reasons (not a regular file, not ELF, unreadable), or the monitor's own
            let why = match launchgap_record::elf_symbols::open_elf(path) {
                Err(reason) => reason.to_string(),
                Ok(_) => "not a file defining the CUDA driver's entry points".to_string(),
            };
            bail!("--cuda-lib {}: {why}", path.display());
        }
    }
    Ok(())
}

fn run(config: Config) -> Result<i32> {
    // before anything touches the system: one line if this kernel cannot run the monitor
    let kernel = kernel_features::check(Program::Monitor)?;
    become_background_batch_work();
    // the address first: a port in use is found before anything is loaded
    let mut server = http::Server::bind(config.listen)
        .map_err(|e| anyhow!("cannot listen on {}: {e}", config.listen))?;
    // with port 0 the kernel picked one: say which
    let listening = server.local_addr().unwrap_or(config.listen);
    let cgroup_targets = match &config.targets {
        Targets::Cgroups(paths) => {
            paths.iter().map(|p| cgroups::resolve(p)).collect::<Result<Vec<_>>>()?
        }
        _ => Vec::new(),
    };
    let mut storage = MaybeUninit::uninit();
    let mut monitor = Monitor::load(&mut storage, config, &kernel, cgroup_targets)?;
    let tracepoints = monitor.attach()?;
    monitor.announce(listening, tracepoints);
    monitor.start_otlp()?;
    stop_on(&[libc::SIGINT, libc::SIGTERM]);
    let signal = monitor.serve(&mut server)?;
    drop(server);
    detach_all(std::mem::take(&mut monitor.links));
    say(monitor.config.quiet, format!("stopped (signal {signal}); everything detached"));
    Ok(0)
}

impl<'obj> Monitor<'obj> {
    /// Loads the programs, sized by `config`; nothing is attached yet.
    fn load(
        storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
        config: Config,
        kernel: &kernel_features::KernelSupport,
        cgroup_targets: Vec<cgroups::CgroupTarget>,
    ) -> Result<Self> {
        let loaded = bpf::load(storage, &config, kernel)?;
        if !loaded.missing_tracepoints.is_empty() {
            say(
                config.quiet,
                format!(
                    "warning: this kernel lacks the tracepoints {}: what they count stays 0",
                    loaded.missing_tracepoints.join(", ")
                ),
            );
        }
        Ok(Monitor {
            skel: loaded.skel,
            uprobe_multi: loaded.uprobe_multi,
            links: Vec::new(),
            libraries: Vec::new(),
            probes: Vec::new(),
            records: HashMap::new(),
            threads_gone: HashSet::new(),
            processes_gone: HashSet::new(),
            cgroups: cgroup_targets,
            cgroup_paths: cgroups::CgroupPaths::new(),
            last_scrape_seconds: 0.0,
            otlp: None,
            config,
        })
    }

    /// Attaches the tracepoints, marks the targets there are now, and probes
    /// the driver libraries they map (and --cuda-lib's). Returns how many
    /// tracepoints took.
    fn attach(&mut self) -> Result<usize> {
        let tracepoints = bpf::attach_tracepoints(&mut self.skel, &mut self.links)?;
        for target in &self.cgroups {
            bpf::add_target_cgroup(&self.skel, target.hierarchy_id, target.cgroup_id)?;
        }
        let initial = self.current_targets();
        for &pid in &initial {
            // a process may exit between being listed and being added: not an error
            let _ = bpf::add_target_process(&self.skel, pid);
        }
        let libraries = discover::discover(&discover::DiscoveryInput {
            command: None,
            pids: &initial,
            extra: &self.config.cuda_libs,
            ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
            user_home: std::env::var_os("HOME").map(PathBuf::from),
        });
        cuda_lib_problems(&self.config.cuda_libs, &libraries)?;
        let mut warnings = Vec::new();
        for path in &libraries.driver {
            warnings.extend(self.probe_library(path));
        }
        warnings.extend(self.rescan());
        for warning in &warnings {
            say(self.config.quiet, format!("warning: {warning}"));
        }
        if self.libraries.is_empty() {
            say(self.config.quiet, "warning: no CUDA driver library (libcuda.so.*) found yet: counting scheduling and \
                                    interrupts only until one is mapped (or use --cuda-lib PATH)");
        }
        Ok(tracepoints)
    }

    /// The line a caller waits for: where /metrics is served, what is watched, with how many probes.
    fn announce(&self, listening: std::net::SocketAddr, tracepoints: usize) {
        let attached = self.probes.iter().filter(|p| p.took()).count();
        let watching = match &self.config.targets {
            Targets::CudaCallers => {
                format!("every CUDA process ({} now)", bpf::target_processes(&self.skel).len())
            }
            Targets::Pids(pids) => {
                format!("pid {}", pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "))
            }
            Targets::Cgroups(paths) => format!(
                "cgroup {}",
                paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        say(self.config.quiet, format!("serving http://{listening}/metrics: watching {watching}; {attached} CUDA probes on {} \
                                        libraries, {tracepoints} tracepoints", self.libraries.len()));
    }

    /// With --otlp-endpoint: starts the pushing thread.
    fn start_otlp(&mut self) -> Result<()> {
        let Some(otlp) = self.config.otlp.clone() else { return Ok(()) };
        let endpoint = otlp.endpoint.url.clone();
        let every = otlp.interval;
        self.otlp = Some(
            otlp::Pusher::start(otlp, std::time::SystemTime::now(), self.config.quiet)
                .map_err(|e| anyhow!("cannot start pushing to {endpoint}: {e}"))?,
        );
        say(
            self.config.quiet,
            format!("pushing OTLP to {endpoint} every {} s", every.as_secs_f64()),
        );
        Ok(())
    }

    /// Answers scrapes, pushes, sweeps and rescans, each on its own timer,
    /// until a stop signal: returns the signal.
    fn serve(&mut self, server: &mut http::Server) -> Result<i32> {
        let mut next_sweep = Instant::now() + SWEEP_EVERY;
        let mut next_rescan = Instant::now() + self.config.rescan;
        loop {
            if let Some(signal) = stop_signal() {
                return Ok(signal);
            }
            server
                .turn(WAIT_FOR_REQUEST, |health| self.page(health))
                .map_err(|e| anyhow!("serving {}: {e}", self.config.listen))?;
            self.push_otlp(server.health());
            let now = Instant::now();
            if now >= next_sweep {
                self.sweep();
                next_sweep = now + SWEEP_EVERY;
            }
            if now >= next_rescan {
                for warning in self.rescan() {
                    say(self.config.quiet, format!("warning: {warning}"));
                }
                next_rescan = now + self.config.rescan;
            }
        }
    }
}

/// clap's first line, without its "error: " prefix: a user's mistake is one line.
fn one_line(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    format!("{} (see --help)", first.trim_start_matches("error: "))
}

fn main() {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("launchgap-monitor: {}", one_line(&e));
            std::process::exit(2);
        }
    };
    route_libbpf_messages();
    let config = match args.validate() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("launchgap-monitor: {e:#}");
            std::process::exit(2);
        }
    };
    match run(config) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("launchgap-monitor: {e:#}");
            std::process::exit(1);
        }
    }
}
