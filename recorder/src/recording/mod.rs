//! One recording, start to end. `run` reads as the recording happens: the
//! set-up (setup.rs), the drain (../drain.rs) until something ends it, then
//! the ending (ending.rs). Whatever ends it early, the guard (guard.rs)
//! abandons a command still held at its gate and detaches the probes.

mod ending;
mod guard;
mod setup;
mod stage_watch;

use std::mem::MaybeUninit;
use std::time::Instant;

use anyhow::Result;

use launchgap_record::host_process::become_background_batch_work;
use launchgap_record::metadata;

use crate::drain::{Drain, StopWhen};
use crate::gpu_activity::channel::ChannelReader;
use crate::record_config::RecordConfig;
use crate::trace_writer::thread::{thread_cpu_ns, ToWriter};

use ending::{DrainTotals, LossBaseline};
use guard::RecordingGuard;
pub use setup::discover_libraries;
use setup::Prepared;
use stage_watch::StageWatch;

pub fn run(config: RecordConfig) -> Result<i32> {
    // each stage that lasts long is said, with what it waits for (stage_watch.rs)
    let mut watch = StageWatch::start(config.quiet);
    let prepared = setup::prepare(&config, &mut watch)?;
    watch.enter("starting the command");
    let mut guard = RecordingGuard::new(setup::start_command(&config, &prepared)?);
    let mut storage = MaybeUninit::uninit();
    let attached = setup::load_and_attach(&config, &prepared, &mut storage, &mut guard, &watch)?;

    let start_ns = metadata::monotonic_ns();
    // after cgroup_mkdir is attached: a cgroup made meanwhile is in both, never in neither
    let cgroups_at_start = prepared.hierarchies.existing();
    // the main thread's CPU clock runs from the process's start, and execve does not reset it: it holds
    // whatever ran before exec (`launchgap record`'s Python start-up) and the set-up; the drain's is from here
    let drain_cpu_at_start = thread_cpu_ns();
    watch.enter("reading the host's settings");
    let meta =
        setup::trace_meta(&config, &prepared, &attached.probes, start_ns, guard.command_pid());
    // From here on the recorder's threads must not preempt what they measure
    // (set after the command is forked, so the command keeps its own policy;
    // the writer thread spawned next inherits it).
    become_background_batch_work();
    watch.enter("writing the trace's metadata");
    let writer = setup::start_writer(&config, &prepared, &meta, start_ns, guard.command_pid())?;
    writer.send(ToWriter::Cgroups { now_ns: start_ns, cgroups: cgroups_at_start });
    setup::announce(&config, &prepared, guard.command_pid(), &attached);

    let mut skel = attached.skel;
    let baseline = LossBaseline::take(&mut skel);
    watch.idle();
    let command_pid = guard.release()?;
    let mut drain = Drain::new(&skel, config.poll(), start_ns, channel_reader(&prepared))?;
    let stop =
        StopWhen { command_pid, pids: &config.pids, deadline: config.deadline(Instant::now()) };
    let stopped = drain.until_stop(&skel, &writer, &stop)?;

    watch.enter("detaching the probes");
    let losses = baseline.at_stop(&skel, &mut guard, config.system);
    watch.enter("writing the trace");
    drain.last_drain(&skel, &writer, &config);
    let totals = DrainTotals {
        drops: drain.drops_seen().clone(),
        dropped: drain.dropped(),
        cpu_at_start_ns: drain_cpu_at_start,
    };
    let ending = ending::close_trace(
        &config,
        writer,
        start_ns,
        stopped,
        totals,
        losses,
        prepared.earlier.as_deref(),
    )?;
    // unload the programs and free the ring buffer before waiting for the command
    drop(drain);
    drop(skel);
    let Prepared { output, gpu_channel, .. } = prepared;
    watch.enter("putting the trace in place");
    let committed = ending::commit(output, gpu_channel.as_ref(), ending.keep);
    drop(watch);
    ending::tell(&config, &ending);
    Ok(ending::exit_code(&config, command_pid, &ending, &committed))
}

/// With --gpu-activity: the reader of the collectors' channel files, owned by the command's user.
fn channel_reader(prepared: &Prepared) -> Option<ChannelReader> {
    // SAFETY: geteuid has no preconditions.
    let owner = prepared.run_as.as_ref().map_or_else(|| unsafe { libc::geteuid() }, |r| r.uid);
    prepared
        .gpu_channel
        .as_ref()
        .and_then(|c| c.held.try_clone().ok())
        .map(|dir| ChannelReader::new(dir, owner))
}
