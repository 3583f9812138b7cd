//! The drain: while a recording runs, the ring buffer is read into batches
//! for the writer thread, the kernel's drop counters sampled, and the GPU
//! collectors' channel read, until something ends the recording (py-spy's
//! sampler.rs: the loop in a module of its own, its stop conditions in one
//! place). It never decodes or writes: the writer does, so a slow disk never
//! holds the ring buffer up.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use libbpf_rs::{RingBuffer, RingBufferBuilder};

use launchgap_record::host_process::stop_signal;
use launchgap_record::{metadata, names};

use crate::gpu_activity::channel::ChannelReader;
use crate::record_config::RecordConfig;
use crate::schema::record;
use crate::skel::LaunchgapSkel;
use crate::trace_writer::thread::{RunningWriter, ToWriter};
use crate::{spawn, tracer};

/// Each ends the recording cleanly, the trace in place.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// SIGTERM and SIGHUP are passed on to the command; SIGINT comes from the
/// terminal to both.
const FORWARDED_SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGHUP];

/// Alive means running or sleeping: an exited process waiting to be reaped
/// (a zombie) is gone as far as tracing goes.
fn process_alive(pid: i32) -> bool {
    let Some(stat) = names::read_stat(format!("/proc/{pid}/stat")) else { return false };
    let state = names::stat_fields_after_name(&stat).and_then(|mut fields| fields.next());
    !matches!(state, None | Some("Z") | Some("X"))
}

/// What ends a recording, besides a stop signal and a writer that stopped.
pub struct StopWhen<'a> {
    /// the command started, ending when it exits
    pub command_pid: Option<i32>,
    /// -p processes, ending when all have exited
    pub pids: &'a [i32],
    /// --duration
    pub deadline: Option<Instant>,
}

/// Why the recording ended.
pub struct Stopped {
    /// end.json's stop_reason
    pub reason: String,
    /// the command's exit status, when its exit ended the recording
    pub command_exit: Option<i32>,
}

pub struct Drain {
    ring: RingBuffer<'static>,
    /// records drained since the last ship, each after its length
    pending: Rc<RefCell<Vec<u8>>>,
    poll: Duration,
    channel: Option<ChannelReader>,
    /// drops counted so far, by (record type, cpu)
    drops_seen: BTreeMap<(u32, usize), u64>,
    last_drop_sample: u64,
    /// the sum of every drop counted
    dropped: u64,
}

impl Drain {
    /// Opens the ring buffer of `skel`; drops are counted from `start_ns`.
    pub fn new(
        skel: &LaunchgapSkel,
        poll: Duration,
        start_ns: u64,
        channel: Option<ChannelReader>,
    ) -> Result<Self> {
        let pending = Rc::new(RefCell::new(Vec::<u8>::with_capacity(1 << 20)));
        let into = Rc::clone(&pending);
        let mut builder = RingBufferBuilder::new();
        builder.add(&skel.maps.events, move |data: &[u8]| {
            let mut buffer = into.borrow_mut();
            buffer.extend_from_slice(&(data.len() as u32).to_ne_bytes());
            buffer.extend_from_slice(data);
            0
        })?;
        let ring = builder.build()?;
        Ok(Drain {
            ring,
            pending,
            poll,
            channel,
            drops_seen: BTreeMap::new(),
            last_drop_sample: start_ns,
            dropped: 0,
        })
    }

    /// Drains until something ends the recording; a stop signal for the
    /// command is passed on to it.
    pub fn until_stop(
        &mut self,
        skel: &LaunchgapSkel,
        writer: &RunningWriter,
        stop: &StopWhen,
    ) -> Result<Stopped> {
        let stopped = |reason: &str| Ok(Stopped { reason: reason.to_string(), command_exit: None });
        loop {
            self.wait_and_consume()?;
            if !self.ship(writer) || writer.stopped() {
                return stopped("the trace could not be written");
            }
            self.read_channel(writer);
            self.sample_drops(skel, writer);
            if let Some(signal) = stop_signal() {
                if let Some(pid) = stop.command_pid.filter(|_| FORWARDED_SIGNALS.contains(&signal))
                {
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(pid, signal) };
                }
                return stopped(&format!("signal {signal}"));
            }
            if let Some(code) = stop.command_pid.and_then(spawn::try_wait) {
                return Ok(Stopped {
                    reason: "the command exited".to_string(),
                    command_exit: Some(code),
                });
            }
            if !stop.pids.is_empty() && stop.pids.iter().all(|&p| !process_alive(p)) {
                return stopped("the traced processes exited");
            }
            if stop.deadline.is_some_and(|d| Instant::now() >= d) {
                return stopped("the duration elapsed");
            }
        }
    }

    /// Waits for records, at most one poll period, and takes what is there.
    fn wait_and_consume(&mut self) -> Result<()> {
        // poll() only consumes rings that signalled, and records are submitted
        // without a wakeup, so drain explicitly every time the timer fires
        let polled = self.ring.poll(self.poll).and_then(|()| self.ring.consume());
        match polled {
            // a signal that is not a stop (a tracer's, a handler's) interrupts the poll: poll again
            Err(e) if stop_signal().is_none() && e.kind() != libbpf_rs::ErrorKind::Interrupted => {
                Err(anyhow!("reading the ring buffer: {e}"))
            }
            _ => Ok(()),
        }
    }

    /// After the probes are detached: what is still in the buffer, the
    /// launches still staged in the threads, what the collectors flushed as
    /// their processes exited, and the last drops.
    pub fn last_drain(
        &mut self,
        skel: &LaunchgapSkel,
        writer: &RunningWriter,
        config: &RecordConfig,
    ) {
        let _ = self.ring.consume();
        if let Err(e) = tracer::flush_staged_launches(skel) {
            config.say(format!("warning: could not write the launches staged at the stop: {e}"));
        }
        let _ = self.ring.consume();
        self.ship(writer);
        self.read_channel(writer);
        self.sample_drops(skel, writer);
    }

    /// Sends what was drained; false once the writer has stopped (it could not write the file).
    fn ship(&mut self, writer: &RunningWriter) -> bool {
        let batch = std::mem::take(&mut *self.pending.borrow_mut());
        batch.is_empty() || writer.send(ToWriter::Records(batch))
    }

    /// The collectors' frames, and what in their channel could not be read.
    fn read_channel(&mut self, writer: &RunningWriter) {
        let Some(reader) = self.channel.as_mut() else { return };
        let mut files = Vec::new();
        let damage = reader.poll(&mut files);
        if !files.is_empty() {
            writer.send(ToWriter::CollectorFrames(files));
        }
        if !damage.is_empty() {
            writer.send(ToWriter::ChannelDamage { now_ns: metadata::monotonic_ns(), damage });
        }
    }

    /// The drops counted since the last sample, as `lost` rows over the time between.
    fn sample_drops(&mut self, skel: &LaunchgapSkel, writer: &RunningWriter) {
        let now_ns = metadata::monotonic_ns();
        let mut fresh = Vec::new();
        for (kind, cpu, count) in tracer::read_drops(skel, record::COUNT) {
            let seen = self.drops_seen.entry((kind, cpu)).or_default();
            if count > *seen {
                fresh.push((kind, cpu, count - *seen));
                self.dropped += count - *seen;
                *seen = count;
            }
        }
        if !fresh.is_empty() {
            // a writer that has stopped is noticed by `ship`
            writer.send(ToWriter::Lost { now_ns, since_ns: self.last_drop_sample, drops: fresh });
        }
        self.last_drop_sample = now_ns;
    }

    /// Every drop counted, in all.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The drops counted, by (record type, cpu).
    pub fn drops_seen(&self) -> &BTreeMap<(u32, usize), u64> {
        &self.drops_seen
    }
}
