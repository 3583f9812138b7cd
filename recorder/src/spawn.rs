//! Starting the traced command: as the invoking user when run through sudo
//! (with that user's supplementary groups, as sudo itself would), resolved
//! and checked before anything is recorded, and held at a gate until every
//! probe is attached, so that nothing it does escapes the trace.

use std::ffi::{CString, OsStr};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use nix::unistd::{getgrouplist, Gid, Uid, User};

/// Who the command runs as: the user who ran sudo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
    /// Supplementary groups from the group database (getgrouplist, as initgroups
    /// reads it), the primary group included: on GPU nodes `video` or `render`
    /// membership can decide whether the command may open the device.
    pub groups: Vec<libc::gid_t>,
}

/// A command that cannot be started; the recorder exits as a shell would
/// (127: not found, 126: found but not executable).
#[derive(Debug)]
pub struct CommandNotRunnable {
    pub message: String,
    pub exit_code: i32,
}

impl std::fmt::Display for CommandNotRunnable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandNotRunnable {}

const EXIT_NOT_EXECUTABLE: i32 = 126;
const EXIT_NOT_FOUND: i32 = 127;
/// The recorder gave up before releasing the command.
const EXIT_ABANDONED: i32 = 125;

/// SUDO_UID/SUDO_GID as sudo sets them (decimal ids), parsed strictly: a
/// recorder that cannot tell who invoked it must not run the command as root.
fn parse_sudo_ids(
    uid: Option<&str>,
    gid: Option<&str>,
) -> Result<Option<(libc::uid_t, libc::gid_t)>> {
    let parse = |name: &str, text: &str| -> Result<u32> {
        match text.parse::<u32>() {
            // (uid_t)-1 means "no change" to setuid/setgid
            Ok(id) if id != u32::MAX && !text.starts_with('+') => Ok(id),
            _ => bail!("{name}={text:?} is not a numeric id: refusing to run the command as root (unset {name} or fix it)"),
        }
    };
    match (uid, gid) {
        (None, None) => Ok(None),
        (Some(_), None) => {
            bail!("SUDO_UID is set but SUDO_GID is not: refusing to run the command as root")
        }
        (None, Some(_)) => {
            bail!("SUDO_GID is set but SUDO_UID is not: refusing to run the command as root")
        }
        (Some(uid), Some(gid)) => Ok(Some((parse("SUDO_UID", uid)?, parse("SUDO_GID", gid)?))),
    }
}

/// The user to run the command as: the invoking user when root via sudo,
/// None when not root or not under sudo (the command then runs as we do).
pub fn invoking_user() -> Result<Option<RunAs>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let env = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    let Some((uid, gid)) = parse_sudo_ids(env("SUDO_UID").as_deref(), env("SUDO_GID").as_deref())?
    else {
        return Ok(None);
    };
    let user = User::from_uid(Uid::from_raw(uid))
        .with_context(|| format!("looking up SUDO_UID={uid}"))?
        .ok_or_else(|| {
            anyhow!("SUDO_UID={uid} is not in the user database: cannot tell its groups")
        })?;
    let name = CString::new(user.name.as_str()).context("a user name with a NUL byte")?;
    let groups = getgrouplist(&name, Gid::from_raw(gid))
        .with_context(|| format!("reading the groups of {}", user.name))?
        .into_iter()
        .map(Gid::as_raw)
        .collect();
    Ok(Some(RunAs { uid, gid, groups }))
}

/// Where execvp would look for `name`: itself when it holds a slash, else
/// each PATH directory in turn (glibc's default PATH when it is unset).
fn exec_candidates(name: &str, path_var: Option<&OsStr>) -> Vec<PathBuf> {
    if name.contains('/') {
        return vec![PathBuf::from(name)];
    }
    let path = path_var.map(|p| p.as_bytes()).unwrap_or(b"/bin:/usr/bin");
    path.split(|&b| b == b':')
        // an empty entry means the current directory, as for execvp
        .map(|dir| if dir.is_empty() { Path::new(".") } else { Path::new(OsStr::from_bytes(dir)) })
        .map(|dir| dir.join(name))
        .collect()
}

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).context("a command path must not contain NUL bytes")
}

/// What the child found, written to the parent over the report pipe.
#[repr(C)]
#[derive(Clone, Copy)]
struct Report {
    /// index into the candidates, or -1
    found: i32,
    /// errno of the best failure when none was found
    errno: i32,
    /// which step failed: 0 lookup, 1 changing identity
    step: i32,
}

const STEP_LOOKUP: i32 = 0;
const STEP_IDENTITY: i32 = 1;

/// In the forked child: async-signal-safe calls only.
unsafe fn become_user(run_as: &Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>) -> bool {
    match run_as {
        None => true,
        Some((uid, gid, groups)) => {
            libc::setgroups(groups.len(), groups.as_ptr()) == 0
                && libc::setgid(*gid) == 0
                && libc::setuid(*uid) == 0
        }
    }
}

/// In the forked child, as the user: the first candidate this user may
/// execute (a regular file with execute permission, as execve requires);
/// else the errno execvp would report (EACCES if one exists but may not be
/// run, ENOENT if none exists).
unsafe fn find_executable(candidates: &[CString]) -> Report {
    let mut errno = libc::ENOENT;
    for (index, path) in candidates.iter().enumerate() {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(path.as_ptr(), &mut st) != 0 {
            let e = *libc::__errno_location();
            if e == libc::EACCES {
                errno = e;
            }
            continue;
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            errno = libc::EACCES;
            continue;
        }
        if libc::access(path.as_ptr(), libc::X_OK) == 0 {
            return Report { found: index as i32, errno: 0, step: STEP_LOOKUP };
        }
        errno = *libc::__errno_location();
    }
    Report { found: -1, errno, step: STEP_LOOKUP }
}

pub struct Gated {
    pub pid: i32,
    gate: Option<OwnedFd>,
}

/// What the forked child needs, prepared before the fork: after it, the child
/// may only make async-signal-safe calls on memory that exists already.
struct ChildExec {
    /// argv's strings; `argv_ptrs` points into them
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    /// the environment's strings; `envp_ptrs` points into them
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    /// where execvp would look, in order
    candidates: Vec<CString>,
    identity: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>,
    /// the line written when exec fails after the lookup succeeded
    exec_failed: CString,
}

impl ChildExec {
    fn prepare(
        command: &[String],
        run_as: Option<&RunAs>,
        extra_env: &[(String, String)],
    ) -> Result<Self> {
        let argv: Vec<CString> = command
            .iter()
            .map(|a| {
                CString::new(a.as_str()).context("command arguments must not contain NUL bytes")
            })
            .collect::<Result<_>>()?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let envp: Vec<CString> = command_environment(extra_env)?;
        let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        let candidates: Vec<CString> =
            exec_candidates(&command[0], std::env::var_os("PATH").as_deref())
                .iter()
                .map(|p| c_path(p))
                .collect::<Result<_>>()?;
        let identity = run_as.map(|r| (r.uid, r.gid, r.groups.clone()));
        let exec_failed =
            CString::new(format!("launchgap-record: cannot run {}: exec failed\n", command[0]))
                .unwrap();
        Ok(ChildExec {
            _argv: argv,
            argv_ptrs,
            _envp: envp,
            envp_ptrs,
            candidates,
            identity,
            exec_failed,
        })
    }

    /// In the forked child: takes the identity, finds the executable, reports
    /// back over `report_write`, waits at the gate (`gate_read`) and execs.
    /// Async-signal-safe calls only.
    unsafe fn run(&self, gate: (i32, i32), report: (i32, i32)) -> ! {
        let ((gate_read, gate_write), (report_read, report_write)) = (gate, report);
        libc::close(gate_write);
        libc::close(report_read);
        let found = if become_user(&self.identity) {
            find_executable(&self.candidates)
        } else {
            Report { found: -1, errno: *libc::__errno_location(), step: STEP_IDENTITY }
        };
        let size = std::mem::size_of::<Report>();
        libc::write(report_write, (&found as *const Report).cast(), size);
        libc::close(report_write);
        if found.found < 0 {
            libc::_exit(EXIT_NOT_FOUND);
        }
        let mut byte = 0u8;
        if libc::read(gate_read, (&mut byte as *mut u8).cast(), 1) != 1 {
            libc::_exit(EXIT_ABANDONED);
        }
        // a path with a slash: no PATH search, but glibc still runs a
        // script without a #! line with /bin/sh, as execvp does
        libc::execvpe(
            self.candidates[found.found as usize].as_ptr(),
            self.argv_ptrs.as_ptr(),
            self.envp_ptrs.as_ptr(),
        );
        libc::write(2, self.exec_failed.as_ptr().cast(), self.exec_failed.as_bytes().len());
        libc::_exit(EXIT_NOT_FOUND);
    }
}

/// Why the child found nothing it may run (`report`: what it wrote back, if it did), as a shell would say it.
fn not_runnable(name: &str, report: Option<Report>) -> CommandNotRunnable {
    let (errno, step) = report.map(|r| (r.errno, r.step)).unwrap_or((libc::EIO, STEP_LOOKUP));
    let reason = nix::errno::Errno::from_raw(errno).desc();
    let (message, exit_code) = match (step, errno) {
        (STEP_IDENTITY, _) => {
            (format!("cannot run {name} as the invoking user: {reason}"), EXIT_NOT_EXECUTABLE)
        }
        (_, libc::ENOENT) if !name.contains('/') => {
            (format!("cannot run {name}: not found on PATH"), EXIT_NOT_FOUND)
        }
        (_, libc::ENOENT) => (format!("cannot run {name}: {reason}"), EXIT_NOT_FOUND),
        _ => (format!("cannot run {name}: {reason}"), EXIT_NOT_EXECUTABLE),
    };
    CommandNotRunnable { message, exit_code }
}

impl Gated {
    /// Forks the command. The child takes the invoking user's identity,
    /// finds the executable as that user would (PATH, permissions, noexec
    /// mounts), reports back, then waits at the gate and execs. Returns a
    /// `CommandNotRunnable` error when there is nothing it may run.
    /// `extra_env` is added to the recorder's own environment for the command
    /// (replacing a variable of the same name).
    pub fn spawn(
        command: &[String],
        run_as: Option<&RunAs>,
        extra_env: &[(String, String)],
    ) -> Result<Self> {
        let child = ChildExec::prepare(command, run_as, extra_env)?;
        let (gate_read, gate_write) = pipe()?;
        let (report_read, report_write) = pipe()?;
        // SAFETY: after fork the child only calls async-signal-safe functions
        // on memory prepared before the fork, then execs or exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork failed: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            unsafe { child.run((gate_read, gate_write), (report_read, report_write)) }
        }
        // SAFETY: closing our copies of the child's ends; owning ours.
        let (gate, report_fd) = unsafe {
            libc::close(gate_read);
            libc::close(report_write);
            (OwnedFd::from_raw_fd(gate_write), OwnedFd::from_raw_fd(report_read))
        };
        let mut raw = [0u8; std::mem::size_of::<Report>()];
        let read = std::io::Read::read(&mut std::fs::File::from(report_fd), &mut raw).unwrap_or(0);
        let report = (read == raw.len()).then(|| {
            // SAFETY: Report is plain integers and the child wrote exactly one.
            unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<Report>()) }
        });
        match report {
            Some(Report { found, .. }) if found >= 0 => Ok(Self { pid, gate: Some(gate) }),
            other => {
                wait(pid);
                Err(not_runnable(&command[0], other).into())
            }
        }
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
            match (&file).write_all(&[1]) {
                // the command died at the gate (a Ctrl-C reaches the whole
                // process group, the recorder's command with it): nothing runs,
                // and the recording ends as the command's exit says
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("releasing the command")?,
            }
        }
        Ok(())
    }
}

/// The recorder's environment with `extra` set, as `NAME=value` strings for execve.
fn command_environment(extra: &[(String, String)]) -> Result<Vec<CString>> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::new();
    for (name, value) in std::env::vars_os() {
        if extra.iter().any(|(n, _)| std::ffi::OsStr::new(n) == name) {
            continue;
        }
        let mut entry = name.into_vec();
        entry.push(b'=');
        entry.extend(value.into_vec());
        // a variable holding a NUL cannot be set at all: leave it out, as the kernel would refuse it
        if let Ok(entry) = CString::new(entry) {
            out.push(entry);
        }
    }
    for (name, value) in extra {
        out.push(
            CString::new(format!("{name}={value}"))
                .context("an environment value must not contain NUL bytes")?,
        );
    }
    Ok(out)
}

fn pipe() -> Result<(i32, i32)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("cannot create a pipe: {}", std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sudo_ids_are_both_there_and_numeric_or_an_error() {
        assert_eq!(parse_sudo_ids(None, None).unwrap(), None);
        assert_eq!(parse_sudo_ids(Some("1000"), Some("100")).unwrap(), Some((1000, 100)));
        assert_eq!(parse_sudo_ids(Some("0"), Some("0")).unwrap(), Some((0, 0)));
        for (uid, gid) in [
            (Some("abc"), Some("1")),
            (Some("-1"), Some("1")),
            (Some("4294967295"), Some("1")),
            (Some(""), Some("1")),
            (Some(" 1000"), Some("1")),
            (Some("+1000"), Some("1")),
            (Some("1000"), None),
            (None, Some("1000")),
            (Some("1000"), Some("x")),
        ] {
            assert!(parse_sudo_ids(uid, gid).is_err(), "{uid:?} {gid:?}");
        }
    }

    #[test]
    fn candidates_follow_execvp() {
        assert_eq!(exec_candidates("./x", Some(OsStr::new("/bin"))), vec![PathBuf::from("./x")]);
        assert_eq!(
            exec_candidates("ls", Some(OsStr::new("/usr/bin::/bin"))),
            vec![PathBuf::from("/usr/bin/ls"), PathBuf::from("./ls"), PathBuf::from("/bin/ls")]
        );
        assert_eq!(
            exec_candidates("ls", None),
            vec![PathBuf::from("/bin/ls"), PathBuf::from("/usr/bin/ls")]
        );
    }
}
