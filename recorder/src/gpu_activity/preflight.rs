//! Checking a CUPTI library before the command starts: it loads (its own dependencies
//! resolve), it defines every entry point the collector needs, cuptiGetVersion answers,
//! and, beside the CUDA driver the command will use, it can enable kernel activity
//! records (NVIDIA's CUPTI refuses with CUPTI_ERROR_NOT_INITIALIZED beside a driver it
//! cannot work with: then the command is not started at all). The check runs in a forked child that first becomes the command's user, so a
//! library in that user's site-packages never runs code as root, and it sees the file as
//! the collector will. It is made before the recorder starts any thread (fork then
//! dlopen is safe only in a single-threaded process; with threads it says so and skips).

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::schema::CUPTI_REQUIRED;
use crate::spawn::RunAs;

/// What the child reports: the version, or one line why not.
const REPORT_BYTES: usize = 512;
/// A CUPTI whose loading hangs (a constructor waiting on something) is not one to use.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

fn threads_in_this_process() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(1)
}

/// Whether this process is down to its one thread, waiting up to a second for
/// it: a thread just joined (the stage watch, paused for this check) has left
/// user space but stays listed in /proc/self/task until the kernel has
/// finished its exit, which on a loaded machine takes a while.
fn alone_in_this_process() -> bool {
    for _ in 0..100 {
        if threads_in_this_process() <= 1 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// cuptiGetVersion's answer from PATH, loaded as RUN_AS beside DRIVER (when known); or
/// why it cannot be used.
pub fn check(path: &Path, driver: Option<&Path>, run_as: Option<&RunAs>) -> Result<u32, String> {
    if !alone_in_this_process() {
        // never expected: the recorder checks before starting threads
        return Err("the recorder could not check it (it already runs threads)".to_string());
    }
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| "a path with a NUL byte".to_string())?;
    let c_driver = match driver {
        Some(d) => Some(
            CString::new(d.as_os_str().as_bytes())
                .map_err(|_| "a driver path with a NUL byte".to_string())?,
        ),
        None => None,
    };
    let symbols: Vec<CString> = CUPTI_REQUIRED.iter().map(|s| CString::new(*s).unwrap()).collect();
    let identity = run_as.map(|r| (r.uid, r.gid, r.groups.clone()));
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("cannot create a pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: single-threaded (checked above): the child may allocate, dlopen and format.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: the child writes one report to the pipe and exits without returning.
        unsafe {
            libc::close(fds[0]);
            let report = child_check(&c_path, c_driver.as_ref(), &symbols, identity.as_ref());
            let bytes = report.as_bytes();
            libc::write(fds[1], bytes.as_ptr().cast(), bytes.len().min(REPORT_BYTES));
            libc::_exit(0);
        }
    }
    // SAFETY: our end of the pipe, owned from here.
    let reader = unsafe {
        libc::close(fds[1]);
        OwnedFd::from_raw_fd(fds[0])
    };
    let report = read_report(reader, pid);
    match report.split_once(' ') {
        Some(("ok", version)) => {
            version.trim().parse().map_err(|_| format!("it answered {report:?}"))
        }
        Some(("error", why)) => Err(why.trim().to_string()),
        _ if report.is_empty() => Err("loading it crashed the process that tried".to_string()),
        _ => Err(format!("it answered {report:?}")),
    }
}

/// The child's report, waiting at most CHECK_TIMEOUT (then the child is killed).
fn read_report(reader: OwnedFd, pid: i32) -> String {
    use std::io::Read;
    let mut file = std::fs::File::from(reader);
    let started = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: our own child.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid;
        if done {
            break;
        }
        if started.elapsed() > CHECK_TIMEOUT {
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return "error loading it did not finish within 30 s".to_string();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    text
}

unsafe fn dlerror_text() -> String {
    let error = libc::dlerror();
    if error.is_null() {
        "dlopen failed".to_string()
    } else {
        std::ffi::CStr::from_ptr(error).to_string_lossy().into_owned()
    }
}

/// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (cupti_activity.h)
const KIND_CONCURRENT_KERNEL: i32 = 10;

/// In the child: becomes the user, loads the driver and the library, resolves the entry
/// points, asks the version, and with the driver there enables kernel records.
unsafe fn child_check(
    path: &CString,
    driver: Option<&CString>,
    symbols: &[CString],
    identity: Option<&(u32, u32, Vec<u32>)>,
) -> String {
    if let Some((uid, gid, groups)) = identity {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0
            || libc::setgid(*gid) != 0
            || libc::setuid(*uid) != 0
        {
            return format!(
                "error cannot become uid {uid} to load it: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    // the driver first, as in the command: CUPTI finds the loaded one
    let driver_loaded = driver
        .is_some_and(|d| !libc::dlopen(d.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL).is_null());
    let library = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
    if library.is_null() {
        return format!("error it does not load: {}", dlerror_text());
    }
    for symbol in symbols {
        if libc::dlsym(library, symbol.as_ptr()).is_null() {
            return format!(
                "error it lacks {}, which the collector needs",
                symbol.to_string_lossy()
            );
        }
    }
    let get_version = libc::dlsym(library, c"cuptiGetVersion".as_ptr());
    let get_version: extern "C" fn(*mut u32) -> i32 = std::mem::transmute(get_version);
    let mut version = 0u32;
    let code = get_version(&mut version);
    if code != 0 {
        return format!("error cuptiGetVersion returned {code}");
    }
    if driver_loaded {
        let enable: extern "C" fn(i32) -> i32 =
            std::mem::transmute(libc::dlsym(library, c"cuptiActivityEnable".as_ptr()));
        let code = enable(KIND_CONCURRENT_KERNEL);
        if code != 0 {
            let result_string: extern "C" fn(i32, *mut *const libc::c_char) -> i32 =
                std::mem::transmute(libc::dlsym(library, c"cuptiGetResultString".as_ptr()));
            let mut text: *const libc::c_char = std::ptr::null();
            let name = if result_string(code, &mut text) == 0 && !text.is_null() {
                std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned()
            } else {
                format!("error {code}")
            };
            let driver = driver.map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
            return format!("error it cannot record kernels beside the CUDA driver {driver} (cuptiActivityEnable: {name})");
        }
    }
    format!("ok {version}")
}
