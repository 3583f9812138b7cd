//! What launchgap's two programs do the same way as processes on the host
//! they measure: a stop signal is only noted (the handler stores it; the
//! program's own loop sees it and ends cleanly, everything detached), and
//! their threads run as SCHED_BATCH work, so they never preempt a task they
//! measure.

use std::sync::atomic::{AtomicI32, Ordering};

/// The last stop signal received, 0 before any.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(signal: libc::c_int) {
    STOP_SIGNAL.store(signal, Ordering::SeqCst);
}

/// Each of `signals` from now on asks the program to stop (`stop_signal`), no more.
pub fn stop_on(signals: &[libc::c_int]) {
    for &signal in signals {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as usize;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The signal that asked the program to stop, if one has.
pub fn stop_signal() -> Option<libc::c_int> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// SCHED_BATCH: a woken recorder or monitor thread never preempts the running
/// task (a measured workload would see that as interference), yet keeps its
/// fair share of the CPU under load, so the ring buffer is still drained and
/// scrapes are still answered. Changes the calling thread only; threads it
/// spawns later inherit it, and a command forked before keeps its own policy.
pub fn become_background_batch_work() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes the calling thread's policy only.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
}
