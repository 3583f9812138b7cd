//! What a recording must undo however it ends early: a command still held at
//! the gate is abandoned (it exits without running, and is reaped), and every
//! attached probe is detached. A recording that ends normally detaches at its
//! chosen moment (`detach`) and has released the command (`release`), so
//! there is nothing left for the guard to do when it is dropped.

use libbpf_rs::Link;

use launchgap_record::bpf_host::detach_all;

use crate::spawn::Gated;

pub struct RecordingGuard {
    /// the command, until it is released
    gated: Option<Gated>,
    links: Vec<Link>,
}

impl RecordingGuard {
    pub fn new(gated: Option<Gated>) -> Self {
        RecordingGuard { gated, links: Vec::new() }
    }

    /// The command's pid while it waits at the gate.
    pub fn command_pid(&self) -> Option<i32> {
        self.gated.as_ref().map(|g| g.pid)
    }

    /// Where the attach puts its links, for the guard to detach.
    pub fn links(&mut self) -> &mut Vec<Link> {
        &mut self.links
    }

    /// Lets the command exec, and returns its pid: from here on it runs on
    /// its own, whatever happens to the recording (the guard never waits for it).
    pub fn release(&mut self) -> anyhow::Result<Option<i32>> {
        let Some(mut gated) = self.gated.take() else { return Ok(None) };
        gated.release()?;
        Ok(Some(gated.pid))
    }

    /// Detaches every probe now.
    pub fn detach(&mut self) {
        detach_all(std::mem::take(&mut self.links));
    }
}

impl Drop for RecordingGuard {
    fn drop(&mut self) {
        self.detach();
        if let Some(gated) = self.gated.take() {
            gated.abandon();
        }
    }
}
