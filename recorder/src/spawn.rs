//! Starting the traced command: as the invoking user when run through sudo,
//! held at a gate until every probe is attached, so that nothing it does
//! escapes the trace.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{bail, Context, Result};

pub struct Gated {
    pub pid: i32,
    gate: Option<OwnedFd>,
}

/// The uid/gid to run the command as: SUDO_UID/SUDO_GID when root via sudo.
pub fn invoking_user() -> Option<(libc::uid_t, libc::gid_t)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let uid = std::env::var("SUDO_UID").ok()?.parse().ok()?;
    let gid = std::env::var("SUDO_GID").ok()?.parse().ok()?;
    Some((uid, gid))
}

impl Gated {
    /// Forks the command; it waits at the gate and then execs.
    pub fn spawn(command: &[String], run_as: Option<(libc::uid_t, libc::gid_t)>) -> Result<Self> {
        let argv: Vec<CString> = command
            .iter()
            .map(|a| CString::new(a.as_str()).context("command arguments must not contain NUL bytes"))
            .collect::<Result<_>>()?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let not_found = CString::new(format!("launchgap-record: cannot run {}\n", command[0])).unwrap();

        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!("cannot create a pipe: {}", std::io::Error::last_os_error());
        }
        let (read_end, write_end) = (fds[0], fds[1]);
        // SAFETY: after fork the child only calls async-signal-safe functions
        // on memory prepared before the fork, then execs or exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork failed: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            unsafe {
                libc::close(write_end);
                let mut byte = 0u8;
                let n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
                if n != 1 {
                    libc::_exit(125); // the recorder gave up before releasing us
                }
                if let Some((uid, gid)) = run_as {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0
                    {
                        libc::_exit(126);
                    }
                }
                libc::execvp(argv_ptrs[0], argv_ptrs.as_ptr());
                libc::write(2, not_found.as_ptr().cast(), not_found.as_bytes().len());
                libc::_exit(127);
            }
        }
        // SAFETY: closing our copy of the child's end; owning the write end.
        unsafe { libc::close(read_end) };
        Ok(Self { pid, gate: Some(unsafe { OwnedFd::from_raw_fd(write_end) }) })
    }

    /// Closes the gate unopened: the command exits without running; reaps it.
    pub fn abandon(mut self) {
        drop(self.gate.take());
        wait(self.pid);
    }

    /// Lets the command exec.
    pub fn release(&mut self) -> Result<()> {
        if let Some(gate) = self.gate.take() {
            let file = std::fs::File::from(gate);
            use std::io::Write;
            (&file).write_all(&[1]).context("releasing the command")?;
        }
        Ok(())
    }
}

/// Exit status of a finished child as a shell would report it.
pub fn exit_code_of(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Non-blocking check: Some(exit code) once the child has finished.
pub fn try_wait(pid: i32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r == pid).then(|| exit_code_of(status))
}

pub fn wait(pid: i32) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return exit_code_of(status);
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
}
