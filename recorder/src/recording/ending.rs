//! A recording's end, in the order it happens: the kernel's counters read
//! again and the probes detached (`LossBaseline::at_stop`), the losses found
//! and the closing summary handed to the writer (`close_trace`), the trace
//! moved into place (`commit`), then the user told how it went (`tell`) and
//! the exit status chosen (`exit_code`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use launchgap_record::host_process::stop_signal;
use launchgap_record::metadata;

use crate::drain::Stopped;
use crate::gpu_activity;
use crate::irq_audit::{self, Unseen};
use crate::losses::{lost_line, unrecorded};
use crate::output::{self, TraceOutput};
use crate::proc_counters;
use crate::prog_stats::{self, ProgramMisses};
use crate::record_config::RecordConfig;
use crate::recording::guard::RecordingGuard;
use crate::schema::{end_key, RECORD_NAMES};
use crate::skel::LaunchgapSkel;
use crate::spawn;
use crate::trace_writer::thread::{thread_cpu_ns, RunningWriter, ToWriter, WriterReport};

/// What the kernel had counted when tracing started, to find at the stop
/// the events no probe saw.
pub struct LossBaseline {
    audit_window: Option<irq_audit::Window>,
    /// when the probes started counting IRQ hits for the audit
    since_ns: u64,
    counters: Value,
    misses: BTreeMap<String, ProgramMisses>,
}

/// The losses found at the stop, and the counters they were found from.
pub struct Losses {
    since_ns: u64,
    until_ns: u64,
    counters_at_start: Value,
    counters_at_end: Value,
    /// events the kernel skipped a program for
    misses: Vec<ProgramMisses>,
    /// interrupts the kernel counted and no probe saw
    unseen: Vec<Unseen>,
}

impl LossBaseline {
    /// The probes count IRQ hits from just before the kernel's counters are first read.
    pub fn take(skel: &mut LaunchgapSkel) -> Self {
        let audit_window = irq_audit::Window::new(skel);
        let since_ns = metadata::monotonic_ns();
        let counters = proc_counters::snapshot(|table, edge| {
            if let Some(w) = &audit_window {
                w.around(irq_audit::Read::Start, table, edge)
            }
        });
        let misses = prog_stats::snapshot(skel);
        LossBaseline { audit_window, since_ns, counters, misses }
    }

    /// Reads the kernel's counters again, detaches every probe (`guard`), and
    /// compares: the interrupts no probe saw on the CPUs audited (every CPU
    /// with --system, else the targets'), and the programs' skips.
    pub fn at_stop(self, skel: &LaunchgapSkel, guard: &mut RecordingGuard, system: bool) -> Losses {
        let counters_at_end = proc_counters::snapshot(|table, edge| {
            if let Some(w) = &self.audit_window {
                w.around(irq_audit::Read::End, table, edge)
            }
        });
        let until_ns = metadata::monotonic_ns();
        // Detach first, then take what is still in the buffer.
        guard.detach();
        let misses = prog_stats::misses_between(&self.misses, &prog_stats::snapshot(skel));
        let target_cpus = irq_audit::target_cpus(skel);
        let unseen =
            irq_audit::unseen(&self.counters, &counters_at_end, &irq_audit::counts(skel), |cpu| {
                system || target_cpus.get(cpu as usize).copied().unwrap_or(false)
            });
        Losses {
            since_ns: self.since_ns,
            until_ns,
            counters_at_start: self.counters,
            counters_at_end,
            misses,
            unseen,
        }
    }
}

impl Losses {
    /// Events lost before reaching the ring buffer.
    fn total(&self) -> u64 {
        self.misses.iter().map(|m| m.misses).sum::<u64>()
            + self.unseen.iter().map(|u| u.count).sum::<u64>()
    }

    /// Hands the writer the losses as `lost` rows: the skips over the whole
    /// recording, the interrupts over the audit window.
    fn send(&self, writer: &RunningWriter, start_ns: u64, end_ns: u64) {
        if !self.misses.is_empty() {
            let losses = unrecorded(&self.misses, &[]);
            writer.send(ToWriter::Unrecorded { now_ns: end_ns, since_ns: start_ns, losses });
        }
        if !self.unseen.is_empty() {
            let losses = unrecorded(&[], &self.unseen);
            writer.send(ToWriter::Unrecorded {
                now_ns: self.until_ns,
                since_ns: self.since_ns,
                losses,
            });
        }
    }
}

/// How the recording went, for the ending's messages.
pub struct Ending {
    pub start_ns: u64,
    pub end_ns: u64,
    pub stopped: Stopped,
    pub drain: DrainTotals,
    pub losses: Losses,
    /// the writer's report; None when it stopped early
    pub report: Option<WriterReport>,
    /// whether the trace replaces what is at -o
    pub keep: bool,
}

/// What the drain counted.
pub struct DrainTotals {
    /// drops by (record type, cpu)
    pub drops: BTreeMap<(u32, usize), u64>,
    /// their sum
    pub dropped: u64,
    /// the drain thread's CPU clock when tracing started
    pub cpu_at_start_ns: u64,
}

/// Hands the writer the losses and the closing summary, and waits for it.
/// A writer that stopped early (a full disk) is said here, in one line.
pub fn close_trace(
    config: &RecordConfig,
    writer: RunningWriter,
    start_ns: u64,
    stopped: Stopped,
    drain: DrainTotals,
    losses: Losses,
    earlier: Option<&Path>,
) -> Result<Ending> {
    let end_ns = metadata::monotonic_ns();
    losses.send(&writer, start_ns, end_ns);
    // the drain's part of the summary; the writer adds the rest (trace_writer/thread.rs)
    let summary = json!({end_key::END_NS: end_ns, end_key::STOP_REASON: stopped.reason,
                         end_key::COMMAND_EXIT_CODE: stopped.command_exit,
                         end_key::LOST_EVENTS: drain.dropped + losses.total(),
                         end_key::PROC_COUNTERS: {"start": losses.counters_at_start, "end": losses.counters_at_end},
                         end_key::CPU_NS: {"drain": thread_cpu_ns() - drain.cpu_at_start_ns}});
    // a writer that stopped early has dropped its inbox: its error comes from join
    writer.send(ToWriter::End { now_ns: end_ns, summary });
    let (report, keep) = match writer.join()? {
        Ok(report) => (Some(report), true),
        Err(failure) => {
            let reason =
                output::write_failure(&failure.error, &config.output).unwrap_or(failure.error);
            let ending =
                output::failed_write_ending(&format!("{reason:#}"), failure.rows_on_disk, earlier);
            eprintln!("launchgap-record: {}", ending.line);
            (None, ending.keep)
        }
    };
    Ok(Ending { start_ns, end_ns, stopped, drain, losses, report, keep })
}

/// The recording ends here, whatever ended it: it replaces the earlier file,
/// unless nothing at all reached the disk (dropped, the partial is removed).
pub fn commit(
    output: TraceOutput,
    gpu_channel: Option<&gpu_activity::Channel>,
    keep: bool,
) -> Result<()> {
    if let Some(channel) = gpu_channel {
        // the channel is the collectors', not the trace's: removed through the trace's
        // handle (its contents are the command's user's, read as hostile: held_dir.rs)
        if let Err(e) = output.directory().and_then(|trace| {
            Ok(trace.remove_tree(std::ffi::OsStr::new(gpu_activity::CHANNEL_DIR))?)
        }) {
            eprintln!(
                "launchgap-record: could not remove the collector channel {}: {e:#}",
                channel.dir.display()
            );
        }
    }
    if !keep {
        drop(output);
        return Err(anyhow!("nothing recorded"));
    }
    let committed = output.commit();
    if let Err(e) = &committed {
        eprintln!("launchgap-record: {e:#}");
    }
    committed
}

/// The closing lines: how long, how many rows, what was lost, what went wrong with the GPU's record.
pub fn tell(config: &RecordConfig, ending: &Ending) {
    if let (false, Some(report)) = (config.quiet, &ending.report) {
        let seconds = (ending.end_ns - ending.start_ns) as f64 / 1e9;
        let counts: Vec<String> =
            report.rows_by_kind.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let reason = &ending.stopped.reason;
        eprintln!(
            "launchgap-record: stopped ({reason}) after {seconds:.2} s; {} rows: {}",
            report.rows,
            counts.join(", ")
        );
    }
    // a loss is a warning: with -q it stays in the trace's `lost` rows and end summary only
    if ending.drain.dropped + ending.losses.total() > 0 && !config.quiet {
        let drops = ending.drain.drops.iter().map(|((kind, _), count)| {
            (RECORD_NAMES.get(*kind as usize).copied().unwrap_or("?"), *count)
        });
        eprintln!(
            "launchgap-record: {}",
            lost_line(drops, &ending.losses.misses, &ending.losses.unseen)
        );
    }
    if let Some(report) = ending.report.as_ref() {
        for (pid, why) in &report.gpu_failures {
            config.say(format!("warning: GPU activity was not recorded in pid {pid}: {why}"));
        }
        if report.gpu_lost > 0 {
            config.say(format!("warning: the GPU work of {} launches never arrived (the trace's lost rows say why)", report.gpu_lost));
        }
    }
    if let Some(report) = ending.report.as_ref().filter(|r| r.frames_refused > 0) {
        config.say(format!(
            "warning: {} frames in the GPU collector channel were not believed and left out (the trace's lost rows say why)",
            report.frames_refused
        ));
    }
    if let Some(report) = ending.report.as_ref().filter(|r| r.undecodable > 0) {
        eprintln!("launchgap-record: {} records could not be decoded", report.undecodable);
    }
}

/// The command's exit status (waited for if it still runs), or 128 plus the
/// stop signal without a command; 1 when the trace could not be put in place
/// and nothing else failed.
pub fn exit_code(
    config: &RecordConfig,
    command_pid: Option<i32>,
    ending: &Ending,
    committed: &Result<()>,
) -> i32 {
    let command_code = match (command_pid, ending.stopped.command_exit) {
        (Some(_), Some(code)) => code,
        (Some(pid), None) => {
            config.say(format!("waiting for {} (pid {pid}) to finish", config.command[0]));
            spawn::wait(pid)
        }
        (None, _) => stop_signal().map_or(0, |signal| 128 + signal),
    };
    match committed {
        Ok(()) => command_code,
        Err(_) if command_code != 0 => command_code,
        Err(_) => 1,
    }
}
