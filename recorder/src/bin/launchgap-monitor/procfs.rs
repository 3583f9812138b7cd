//! What /proc says about processes: which map a CUDA driver library (and
//! the file, reachable from here even in another mount namespace), their
//! start times (to tell a live process from a reused pid), their names.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use launchgap_record::{discover, names};

/// Every process id now in /proc.
pub fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// The CUDA driver libraries a process maps, reachable from here: the maps
/// are read as the recorder reads them (launchgap_record::discover), a
/// container's own files through /proc/PID/root, and a library deleted on
/// disk since it was mapped (a driver upgraded under a running job) through
/// /proc/PID/map_files, so its probes sit on the inode the process runs.
pub fn mapped_drivers(pid: i32) -> Vec<PathBuf> {
    discover::mapped_cuda_files(pid, discover::is_driver_file)
        .map(|mapped| mapped.into_iter().map(|(_, reached)| reached).collect())
        .unwrap_or_default()
}

/// (device, inode): one file whatever path reaches it. Uprobes are placed
/// on the inode, so a library is probed once however many paths lead to it.
pub fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf reads a constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// Field 22 of a /proc stat line (starttime, in clock ticks since boot).
fn start_ticks(stat: &str) -> Option<u64> {
    // the fields after the name begin with the state, field 3
    names::stat_fields_after_name(stat)?.nth(19)?.parse().ok()
}

/// A task's start time in ns since boot (the kernel's start_boottime) in
/// /proc's clock ticks: the two agree exactly for the same task.
pub fn same_start(stat_path: &str, start_ns: u64) -> bool {
    // read as bytes: a process named with bytes that are not UTF-8 is alive too
    let Some(stat) = names::read_stat(stat_path) else { return false };
    let ns_per_tick = 1_000_000_000 / clock_ticks_per_second();
    start_ticks(&stat) == Some(start_ns / ns_per_tick)
}

/// The process (pid, started at start_ns) still exists.
pub fn process_alive(pid: u32, start_ns: u64) -> bool {
    same_start(&format!("/proc/{pid}/stat"), start_ns)
}

/// The thread still exists.
pub fn thread_alive(pid: u32, tid: u32, start_ns: u64) -> bool {
    same_start(&format!("/proc/{pid}/task/{tid}/stat"), start_ns)
}

/// A process's name, escaped as the trace escapes it.
pub fn command_of(pid: u32) -> Option<String> {
    names::read_comm(format!("/proc/{pid}/comm"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_read_past_names_with_spaces() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 123456 1000 10";
        assert_eq!(start_ticks(stat), Some(123456));
    }

    #[test]
    fn this_process_is_alive_by_its_own_start_time() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let ticks = start_ticks(&stat).unwrap();
        let start_ns = ticks * (1_000_000_000 / clock_ticks_per_second());
        assert!(process_alive(std::process::id(), start_ns));
        assert!(!process_alive(std::process::id(), start_ns + 10_000_000_000));
    }

    /// A thread named with bytes that are not UTF-8 is alive and named as the trace names it: read as
    /// text, its stat failed and the sweep took it for exited.
    #[test]
    fn a_thread_named_in_bytes_is_alive_and_named() {
        let (tell, told) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // SAFETY: names the calling thread; the name is NUL-terminated.
            unsafe { libc::prctl(libc::PR_SET_NAME, c"\xffodd".as_ptr()) };
            // SAFETY: gettid has no arguments.
            tell.send(unsafe { libc::syscall(libc::SYS_gettid) } as u32).unwrap();
            wait.recv().unwrap();
        });
        let tid = told.recv().unwrap();
        let pid = std::process::id();
        let stat = names::read_stat(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
        let start_ns = start_ticks(&stat).unwrap() * (1_000_000_000 / clock_ticks_per_second());
        assert!(thread_alive(pid, tid, start_ns));
        assert_eq!(
            names::read_comm(format!("/proc/{pid}/task/{tid}/comm")).as_deref(),
            Some("\\xffodd")
        );
        done.send(()).unwrap();
        thread.join().unwrap();
    }
}
