//! launchgap-record: the standalone eBPF recorder (copy it to a GPU node;
//! no Python needed there). Arguments are parsed here, the pure pieces live
//! in their modules, and the trace is written by a thread of its own so the
//! ring-buffer drain never waits on the disk.

mod cgroup_rows;
mod cli;
mod gpu_activity;
mod irq_audit;
mod losses;
mod output;
mod privileges;
mod probe_listing;
mod proc_counters;
mod prog_stats;
mod records;
mod same_file;
mod schema;
mod spawn;
mod trace_writer;
mod tracer;

mod skel {
    #![allow(clippy::all, unused_imports, dead_code, non_camel_case_types, non_snake_case, non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/launchgap.skel.rs"));
}

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use libbpf_rs::RingBufferBuilder;
use serde_json::json;

use launchgap_record::bpf_host::{detach_all, route_libbpf_messages};
use launchgap_record::host_process::{become_background_batch_work, stop_on, stop_signal};
use launchgap_record::kernel_features::{self, Program};
use launchgap_record::{cuda_api, discover, metadata, probe_plan, probe_report};

use crate::cli::Args;
use crate::gpu_activity::accounting::GpuAccounting;
use crate::gpu_activity::channel::ChannelReader;
use crate::losses::{lost_line, unrecorded};
use crate::output::{Layout, Ownership, TraceOutput};
use crate::schema::{record, RECORD_NAMES};
use crate::spawn::{CommandNotRunnable, Gated};
use crate::trace_writer::format1::Format1Writer;
use crate::trace_writer::format2::Format2Writer;
use crate::trace_writer::thread::{thread_cpu_ns, writer_thread, ToWriter, WriterJob};
use crate::trace_writer::{Format, TraceSink};

/// SIGTERM and SIGHUP are passed on to the command; SIGINT comes from the
/// terminal to both. Each ends the recording cleanly, the trace in place.
const FORWARDED_SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGHUP];

/// Alive means running or sleeping: an exited process waiting to be reaped
/// (a zombie) is gone as far as tracing goes.
fn process_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // the state follows the parenthesised command name, which may hold spaces
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

fn check_pids(pids: &[i32]) -> Result<()> {
    for &pid in pids {
        if pid <= 0 || !PathBuf::from(format!("/proc/{pid}")).exists() {
            bail!("no such process: {pid}");
        }
    }
    Ok(())
}

fn user_home() -> Option<PathBuf> {
    let user = std::env::var("SUDO_USER").ok().filter(|u| u != "root");
    match user {
        Some(user) => std::fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
            passwd.lines().find(|l| l.starts_with(&format!("{user}:"))).and_then(|l| l.split(':').nth(5)).map(PathBuf::from)
        }),
        None => std::env::var_os("HOME").map(PathBuf::from),
    }
}

/// Every --cuda-lib must have been taken as a CUDA library.
fn check_cuda_libs(extra: &[PathBuf], libraries: &discover::CudaLibraries) -> Result<()> {
    for path in extra {
        if !libraries.found_via.iter().any(|(p, _)| Some(p) == path.canonicalize().ok().as_ref()) {
            bail!("--cuda-lib {}: {}", path.display(), discover::why_not_a_cuda_library(path));
        }
    }
    Ok(())
}

/// The CUDA libraries for the recording (or the listing) the arguments ask
/// for: every --cuda-lib must be one, and every -p target's maps readable.
fn discover_libraries(args: &Args) -> Result<discover::CudaLibraries> {
    let command = (!args.command.is_empty()).then_some(args.command.as_slice());
    let libraries = discover::discover(&discover::DiscoveryInput {
        command,
        pids: &args.pid,
        extra: &args.cuda_lib,
        ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
        user_home: user_home(),
    });
    check_cuda_libs(&args.cuda_lib, &libraries)?;
    if let Some(error) = libraries.errors.first() {
        bail!("{error}");
    }
    Ok(libraries)
}

/// With --gpu-activity: the CUPTI library found and checked (None without the flag).
fn plan_gpu_activity(args: &Args, libraries: &discover::CudaLibraries, run_as: Option<&spawn::RunAs>) -> Result<Option<gpu_activity::Plan>> {
    if !args.gpu_activity {
        return Ok(None);
    }
    if let Some(why) = gpu_activity::refusal(!args.command.is_empty(), !args.pid.is_empty(), args.format) {
        bail!("{why}");
    }
    let search = discover::CuptiSearch {
        cuda: libraries,
        command: (!args.command.is_empty()).then_some(args.command.as_slice()),
        ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
        user_home: user_home(),
        toolkit_roots: ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|v| std::env::var_os(v)).map(PathBuf::from).collect(),
    };
    gpu_activity::plan(args.cupti.as_deref(), args.gpu_collector.clone(), &search, run_as).map(Some)
}

/// Why a trace without --gpu-activity has no GPU activity (meta.json says it).
fn why_no_gpu_activity(args: &Args) -> &'static str {
    if !args.pid.is_empty() {
        "attached with -p: CUPTI can only be injected into processes the recorder starts"
    } else if args.command.is_empty() {
        "no command was started (--system alone): CUPTI can only be injected into processes the recorder starts"
    } else {
        "not asked for (record with --gpu-activity)"
    }
}

fn say(quiet: bool, message: impl AsRef<str>) {
    if !quiet {
        eprintln!("launchgap-record: {}", message.as_ref());
    }
}

fn run(args: Args) -> Result<i32> {
    // Everything that can be checked is checked before the -o file, the
    // probes or the command are touched.
    check_pids(&args.pid)?;
    let run_as = spawn::invoking_user()?;
    privileges::check()?;
    let kernel = kernel_features::check(Program::Recorder)?;
    let command = (!args.command.is_empty()).then_some(args.command.as_slice());
    let libraries = discover_libraries(&args)?;
    // before any thread exists: the CUPTI check forks
    let gpu_plan = plan_gpu_activity(&args, &libraries, run_as.as_ref())?;
    let probed: Vec<PathBuf> = libraries.found_via.iter().map(|(p, _)| p.clone()).collect();
    same_file::refuse_output_among_inputs(
        &args.output,
        &same_file::inputs(&args.command, &args.cuda_lib, &args.pid, &probed),
    )?;
    let ownership = Ownership { owner: run_as.as_ref().map(|r| (r.uid, r.gid)), mode: args.mode };
    let format = if args.format == 1 { Format::One } else { Format::Two };
    let layout = if format == Format::One { Layout::File } else { Layout::Directory };
    let output = TraceOutput::prepare(&args.output, ownership, layout)?;
    // the collector channel lives in the trace being written (format 2: a directory)
    let gpu_channel = match &gpu_plan {
        Some(plan) => Some(gpu_activity::open_channel(output.writing_to(), run_as.as_ref(), plan)?),
        None => None,
    };
    let command_env = match (&gpu_plan, &gpu_channel) {
        (Some(plan), Some(channel)) => gpu_activity::environment(channel, plan),
        _ => Vec::new(),
    };
    // an earlier recording the new one would replace (not a device written in place)
    let earlier = (output.writing_to() != output.final_path() && std::fs::symlink_metadata(output.final_path()).is_ok())
        .then(|| args.output.clone());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let ring_buffer_bytes = args.ring_buffer_bytes(cpus);

    // The command waits at the gate until every probe is attached.
    let mut child = match command {
        Some(cmd) => Some(Gated::spawn(cmd, run_as.as_ref(), &command_env)?),
        None => None,
    };

    let mut probes = Vec::new();
    let mut storage = MaybeUninit::uninit();
    let hierarchies = cgroup_rows::Hierarchies::of_host();
    let load_opts = tracer::LoadOptions {
        system_mode: args.system,
        api_names: args.api_names,
        ring_buffer_bytes,
        v1_cpu_hierarchy_id: hierarchies.v1_cpu_hierarchy_id(),
    };
    let (mut skel, uprobe_multi) = match tracer::load(&mut storage, &load_opts, &kernel, &mut probes) {
        Ok(loaded) => (loaded.skel, loaded.uprobe_multi),
        Err(e) => {
            if let Some(c) = child.take() {
                c.abandon();
            }
            return Err(e);
        }
    };
    let mut links = Vec::new();
    let setup = (|| -> Result<Vec<tracer::ProbeWarning>> {
        if let Some(c) = &child {
            tracer::add_target_process(&skel, c.pid)?;
        }
        for &pid in &args.pid {
            tracer::add_target_process(&skel, pid)?;
        }
        tracer::attach_tracepoints(&mut skel, &mut links, &mut probes)?;
        Ok(tracer::attach_cuda(&skel, &libraries, args.api_names, uprobe_multi, &mut links, &mut probes))
    })();
    let warnings = match setup {
        Ok(w) => w,
        Err(e) => {
            drop(links);
            if let Some(c) = child.take() {
                c.abandon();
            }
            return Err(e);
        }
    };

    let start_ns = metadata::monotonic_ns();
    // after cgroup_mkdir is attached: a cgroup made meanwhile is in both, never in neither
    let cgroups_at_start = hierarchies.existing();
    // the main thread's CPU clock runs from the process's start, and execve does not reset it: it holds
    // whatever ran before exec (`launchgap record`'s Python start-up) and the set-up; the drain's is from here
    let drain_cpu_at_start = thread_cpu_ns();
    let meta = json!({
        "format": schema::FORMAT_NAME,
        "version": format.version(),
        "recorder": {"name": "launchgap-record", "version": env!("CARGO_PKG_VERSION")},
        "start_ns": start_ns,
        "clock": metadata::clocks(),
        "host": metadata::host(),
        "kernel_support": kernel.metadata(),
        "host_files": metadata::host_files::snapshot(),
        "topology": metadata::cpu_topology(),
        "mode": if args.system { "system" } else if command.is_some() { "command" } else { "pids" },
        "command": args.command,
        "command_pid": child.as_ref().map(|c| c.pid),
        "recorder_pid": std::process::id(),
        "pids": args.pid,
        "options": {"api_names": args.api_names, "ring_buffer_bytes": ring_buffer_bytes,
                    "poll_ms": args.poll_ms, "duration_s": args.duration},
        "cuda_libraries": libraries.found_via.iter().map(|(p, via)| json!({"path": p, "found_via": via})).collect::<Vec<_>>(),
        "gpu_activity": gpu_activity::metadata(gpu_plan.as_ref(), why_no_gpu_activity(&args)),
        "probes": probes,
        "cgroups": hierarchies.metadata(),
    });
    // From here on the recorder's threads must not preempt what they measure
    // (set after the command is forked, so the command keeps its own policy;
    // the writer thread spawned next inherits it).
    become_background_batch_work();
    let created = match format {
        Format::One => output.file().and_then(|file| Format1Writer::create(file, meta.to_string())).map(|w| Box::new(w) as Box<dyn TraceSink>),
        Format::Two => Format2Writer::create(output.writing_to(), output.ownership(), &meta.to_string())
            .map(|w| Box::new(w) as Box<dyn TraceSink>),
    };
    let writer = match created {
        Ok(writer) => writer,
        Err(e) => {
            detach_all(links);
            if let Some(c) = child.take() {
                c.abandon();
            }
            return Err(match output::write_failure(&e, &args.output) {
                Some(reason) => anyhow!("{}", output::failed_write_ending(&format!("{reason:#}"), 0, earlier.as_deref()).line),
                None => e,
            });
        }
    };
    let (to_writer, inbox) = mpsc::channel();
    let job = WriterJob { sink: writer, gpu: gpu_plan.as_ref().map(|_| GpuAccounting::default()), start_ns };
    let writer_handle = std::thread::Builder::new().name("trace-writer".into()).spawn(move || writer_thread(job, inbox))?;
    let _ = to_writer.send(ToWriter::Cgroups { now_ns: start_ns, cgroups: cgroups_at_start });

    for w in &libraries.warnings {
        say(args.quiet, format!("warning: {w}"));
    }
    for w in &warnings {
        say(args.quiet, format!("warning: {}", w.0));
    }
    if libraries.driver.is_empty() {
        say(args.quiet, "warning: no CUDA driver library (libcuda.so.*) found: tracing scheduling and IRQs only (use --cuda-lib PATH)");
    }
    let cuda_probes = probes.iter().filter(|p| p.is_uprobe() && p.took()).count();
    let tracepoints = probes.iter().filter(|p| !p.is_uprobe() && p.took()).count();
    let what = match (&child, args.system) {
        (_, true) => "every task".to_string(),
        (Some(c), _) => format!("{} (pid {})", args.command.join(" "), c.pid),
        (None, _) => format!("pid {}", args.pid.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let via = match output.writing_to() {
        partial if partial != output.final_path() => format!(" (written to {} until the end)", partial.display()),
        _ => String::new(),
    };
    // before the line a caller waits for, so a signal sent after it ends the recording cleanly
    stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
    let gpu = gpu_plan.as_ref().map(|p| format!(", GPU activity through CUPTI ({})", p.cupti.path.display())).unwrap_or_default();
    say(args.quiet, format!("tracing {what}: {cuda_probes} CUDA probes, {tracepoints} tracepoints{gpu} -> {}{via}", args.output.display()));

    // the probes count IRQ hits from just before the kernel's counters are first read
    let audit_window = irq_audit::Window::new(&mut skel);
    let audit_since_ns = metadata::monotonic_ns();
    let counters_at_start = proc_counters::snapshot(|table, edge| {
        if let Some(w) = &audit_window {
            w.around(irq_audit::Read::Start, table, edge)
        }
    });
    let misses_at_start = prog_stats::snapshot(&skel);
    if let Some(c) = child.as_mut() {
        c.release()?;
    }

    // ---- drain ----------------------------------------------------------
    let pending = RefCell::new(Vec::<u8>::with_capacity(1 << 20));
    let mut builder = RingBufferBuilder::new();
    builder.add(&skel.maps.events, |data: &[u8]| {
        let mut buffer = pending.borrow_mut();
        buffer.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        buffer.extend_from_slice(data);
        0
    })?;
    let ring = builder.build()?;
    let poll = Duration::from_millis(args.poll_ms.max(1));
    // cli::parse_duration let through only what a Duration holds; an instant
    // too far to represent is a deadline never reached
    let deadline = args.duration.and_then(|s| Instant::now().checked_add(Duration::from_secs_f64(s)));
    let mut drops_seen: BTreeMap<(u32, usize), u64> = BTreeMap::new();
    let mut last_drop_sample = start_ns;
    let mut child_exit: Option<i32> = None;
    let mut lost_total = 0u64;

    let mut sample_drops = |to_writer: &mpsc::Sender<ToWriter>, lost_total: &mut u64| {
        let now_ns = metadata::monotonic_ns();
        let mut fresh = Vec::new();
        for (kind, cpu, count) in tracer::read_drops(&skel, record::COUNT) {
            let seen = drops_seen.entry((kind, cpu)).or_default();
            if count > *seen {
                fresh.push((kind, cpu, count - *seen));
                *lost_total += count - *seen;
                *seen = count;
            }
        }
        if !fresh.is_empty() {
            // a writer that has stopped is noticed by `ship`
            let _ = to_writer.send(ToWriter::Lost { now_ns, since_ns: last_drop_sample, drops: fresh });
        }
        last_drop_sample = now_ns;
    };
    // the collectors' channel files, owned by the command's user
    let channel_owner = run_as.as_ref().map_or_else(|| unsafe { libc::geteuid() }, |r| r.uid);
    let mut channel_reader = gpu_channel.as_ref().map(|c| ChannelReader::new(&c.dir, channel_owner));
    let mut read_channel = |to_writer: &mpsc::Sender<ToWriter>| {
        let Some(reader) = channel_reader.as_mut() else { return };
        let mut frames = Vec::new();
        let damage = reader.poll(&mut frames);
        if !frames.is_empty() {
            let _ = to_writer.send(ToWriter::CollectorFrames(frames));
        }
        if !damage.is_empty() {
            let _ = to_writer.send(ToWriter::ChannelDamage { now_ns: metadata::monotonic_ns(), damage });
        }
    };
    // false once the writer has stopped (it could not write the file)
    let ship = |to_writer: &mpsc::Sender<ToWriter>| -> bool {
        let batch = std::mem::take(&mut *pending.borrow_mut());
        batch.is_empty() || to_writer.send(ToWriter::Records(batch)).is_ok()
    };

    let stop_reason = loop {
        // poll() only consumes rings that signalled, and records are submitted
        // without a wakeup, so drain explicitly every time the timer fires
        let polled = ring.poll(poll).and_then(|()| ring.consume());
        if let Err(e) = polled {
            // a signal that is not a stop (a tracer's, a handler's) interrupts the poll: poll again
            if stop_signal().is_none() && e.kind() != libbpf_rs::ErrorKind::Interrupted {
                return Err(anyhow!("reading the ring buffer: {e}"));
            }
        }
        if !ship(&to_writer) || writer_handle.is_finished() {
            break "the trace could not be written".to_string();
        }
        read_channel(&to_writer);
        sample_drops(&to_writer, &mut lost_total);
        if let Some(signal) = stop_signal() {
            if let Some(c) = child.as_ref().filter(|_| FORWARDED_SIGNALS.contains(&signal)) {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(c.pid, signal) };
            }
            break format!("signal {signal}");
        }
        if let Some(c) = &child {
            if let Some(code) = spawn::try_wait(c.pid) {
                child_exit = Some(code);
                break "the command exited".to_string();
            }
        }
        if !args.pid.is_empty() && args.pid.iter().all(|&p| !process_alive(p)) {
            break "the traced processes exited".to_string();
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break "the duration elapsed".to_string();
        }
    };

    let counters_at_end = proc_counters::snapshot(|table, edge| {
        if let Some(w) = &audit_window {
            w.around(irq_audit::Read::End, table, edge)
        }
    });
    let audit_until_ns = metadata::monotonic_ns();
    // Detach first, then take what is still in the buffer.
    detach_all(links);
    let misses = prog_stats::misses_between(&misses_at_start, &prog_stats::snapshot(&skel));
    let target_cpus = irq_audit::target_cpus(&skel);
    let unseen = irq_audit::unseen(&counters_at_start, &counters_at_end, &irq_audit::counts(&skel), |cpu| {
        args.system || target_cpus.get(cpu as usize).copied().unwrap_or(false)
    });
    let _ = ring.consume();
    if let Err(e) = tracer::flush_staged_launches(&skel) {
        say(args.quiet, format!("warning: could not write the launches staged at the stop: {e}"));
    }
    let _ = ring.consume();
    ship(&to_writer);
    // what the collectors flushed as their processes exited
    read_channel(&to_writer);
    sample_drops(&to_writer, &mut lost_total);
    let end_ns = metadata::monotonic_ns();
    let unrecorded_total: u64 = misses.iter().map(|m| m.misses).sum::<u64>() + unseen.iter().map(|u| u.count).sum::<u64>();
    if !misses.is_empty() {
        let losses = unrecorded(&misses, &[]);
        let _ = to_writer.send(ToWriter::Unrecorded { now_ns: end_ns, since_ns: start_ns, losses });
    }
    if !unseen.is_empty() {
        let losses = unrecorded(&[], &unseen);
        let _ = to_writer.send(ToWriter::Unrecorded { now_ns: audit_until_ns, since_ns: audit_since_ns, losses });
    }
    let summary = json!({"end_ns": end_ns, "stop_reason": stop_reason, "command_exit_code": child_exit,
                         "lost_events": lost_total + unrecorded_total,
                         "proc_counters": {"start": counters_at_start, "end": counters_at_end},
                         "cpu_ns": {"drain": thread_cpu_ns() - drain_cpu_at_start}});
    // a writer that stopped early has dropped its inbox: its error comes from join
    let _ = to_writer.send(ToWriter::End { now_ns: end_ns, summary });
    let written = writer_handle.join().map_err(|_| anyhow!("the trace writer panicked"))?;
    let (report, keep) = match written {
        Ok(report) => (Some(report), true),
        Err(failure) => {
            let reason = output::write_failure(&failure.error, &args.output).unwrap_or(failure.error);
            let ending = output::failed_write_ending(&format!("{reason:#}"), failure.rows_on_disk, earlier.as_deref());
            eprintln!("launchgap-record: {}", ending.line);
            (None, ending.keep)
        }
    };
    // unload the programs and free the ring buffer before waiting for the command
    drop(ring);
    drop(skel);
    // the recording ends here, whatever ended it: it replaces the earlier file,
    // unless nothing at all reached the disk (dropped, the partial is removed)
    if let Some(channel) = &gpu_channel {
        // the channel is the collectors', not the trace's
        let _ = std::fs::remove_dir_all(&channel.dir);
    }
    let committed = if keep {
        let committed = output.commit();
        if let Err(e) = &committed {
            eprintln!("launchgap-record: {e:#}");
        }
        committed
    } else {
        drop(output);
        Err(anyhow!("nothing recorded"))
    };

    if let (false, Some(report)) = (args.quiet, &report) {
        let seconds = (end_ns - start_ns) as f64 / 1e9;
        let counts: Vec<String> = report.rows_by_kind.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!("launchgap-record: stopped ({stop_reason}) after {seconds:.2} s; {} rows: {}", report.rows, counts.join(", "));
    }
    // a loss is a warning: with -q it stays in the trace's `lost` rows and end summary only
    if lost_total + unrecorded_total > 0 && !args.quiet {
        let drops = drops_seen.iter().map(|((kind, _), count)| (RECORD_NAMES.get(*kind as usize).copied().unwrap_or("?"), *count));
        eprintln!("launchgap-record: {}", lost_line(drops, &misses, &unseen));
    }
    if let Some(report) = report.as_ref() {
        for (pid, why) in &report.gpu_failures {
            say(args.quiet, format!("warning: GPU activity was not recorded in pid {pid}: {why}"));
        }
        if report.gpu_lost > 0 {
            say(args.quiet, format!("warning: the GPU work of {} launches never arrived (the trace's lost rows say why)", report.gpu_lost));
        }
    }
    if let Some(report) = report.as_ref().filter(|r| r.undecodable > 0) {
        eprintln!("launchgap-record: {} records could not be decoded", report.undecodable);
    }

    let command_code = match (&child, child_exit) {
        (Some(_), Some(code)) => code,
        (Some(c), None) => {
            say(args.quiet, format!("waiting for {} (pid {}) to finish", args.command[0], c.pid));
            spawn::wait(c.pid)
        }
        (None, _) => stop_signal().map_or(0, |signal| 128 + signal),
    };
    Ok(match committed {
        Ok(()) => command_code,
        Err(_) if command_code != 0 => command_code,
        Err(_) => 1,
    })
}

fn main() {
    let args = cli::parse_args();
    route_libbpf_messages();
    if args.print_schema {
        println!("{}", serde_json::to_string_pretty(&schema::as_json()).expect("the schema as JSON"));
        std::process::exit(0);
    }
    if let Some(path) = &args.write_collector {
        if let Err(e) = gpu_activity::write_collector(path) {
            eprintln!("launchgap-record: {e:#}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    let result = if args.list_probes { probe_listing::run(&args) } else { run(args) };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("launchgap-record: {e:#}");
            let code = e.downcast_ref::<CommandNotRunnable>().map_or(1, |c| c.exit_code);
            std::process::exit(code);
        }
    }
}
