//! Names from the kernel and from /proc are bytes, not text: anyone may name a
//! process with any bytes (prctl, or the executable's file name), and a path
//! may hold any byte but `/` and NUL. Reading them as UTF-8 fails on such a
//! name, and a failed read of /proc/PID/stat looks like a process that has
//! exited. So they are read as bytes, and shown as the trace shows them.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The trace's escaping of a name's bytes (docs/trace-format.md, "Names"):
/// UTF-8 as it is, every byte that is not part of valid UTF-8 as `\xHH`, and a
/// backslash as `\\`, so that the bytes can be read back exactly. Borrowed in
/// the usual case (valid, no backslash).
pub fn escape_name(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\\') => Cow::Borrowed(text),
        _ => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    if c == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(c);
                    }
                }
                for byte in chunk.invalid() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            Cow::Owned(out)
        }
    }
}

/// serde's `serialize_with` for a path written into a trace's JSON (meta.json, probe listings): its bytes
/// as the trace shows names, so that a path that is not UTF-8 (a library under such a folder, mapped by
/// a process attached with -p) is written, escaped, rather than refused by serde.
pub fn serialize_path<P: AsRef<Path>, S: serde::Serializer>(
    path: &P,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&escape_name(path.as_ref().as_os_str().as_bytes()))
}

/// serialize_path, for a path that may be absent (written as null; skip it with skip_serializing_if).
pub fn serialize_optional_path<P: AsRef<Path>, S: serde::Serializer>(
    path: &Option<P>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => serialize_path(path, serializer),
        None => serializer.serialize_none(),
    }
}

/// A /proc/PID/stat line, readable whatever bytes the process's name holds:
/// the fields that follow the parenthesised name are ASCII, so a name's
/// bytes replaced where they are not UTF-8 change none of them.
pub fn read_stat(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// The fields of a stat line after the parenthesised name (state first): the
/// name may hold spaces and parentheses, so it is cut at the last `)`.
pub fn stat_fields_after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace())
}

/// A task's name from /proc/PID/comm (or a thread's), as the trace shows it.
pub fn read_comm(path: impl AsRef<Path>) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    Some(escape_name(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_bytes_escaped() {
        assert!(matches!(escape_name(b"cudasim"), Cow::Borrowed("cudasim")));
        assert_eq!(escape_name(b"\xffodd"), "\\xffodd");
        assert_eq!(escape_name(b"a\\xff\xc3\xa9\xc3"), "a\\\\xff\u{e9}\\xc3");
    }

    #[test]
    fn a_path_that_is_not_utf8_is_written_escaped() {
        use std::os::unix::ffi::OsStrExt;

        #[derive(serde::Serialize)]
        struct Library<'a> {
            #[serde(serialize_with = "serialize_path")]
            path: &'a Path,
            #[serde(serialize_with = "serialize_optional_path")]
            beside: Option<std::path::PathBuf>,
        }
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xffodd/libcuda.so.1"));
        let json = serde_json::to_string(&Library { path: odd, beside: None }).unwrap();
        assert_eq!(json, r#"{"path":"/tmp/\\xffodd/libcuda.so.1","beside":null}"#);
    }

    /// A thread of this process renamed to bytes that are not UTF-8 (as the
    /// issue's `cp /bin/sleep $'\xffodd'` names a process): its stat and comm
    /// are still read, and its name kept.
    #[test]
    fn a_thread_named_in_bytes_is_read() {
        let (tell, told) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // SAFETY: names the calling thread; the name is NUL-terminated.
            unsafe { libc::prctl(libc::PR_SET_NAME, c"\xffodd".as_ptr()) };
            // SAFETY: gettid has no arguments.
            tell.send(unsafe { libc::syscall(libc::SYS_gettid) }).unwrap();
            wait.recv().unwrap();
        });
        let tid = told.recv().unwrap();
        let task = format!("/proc/self/task/{tid}");
        assert!(
            std::fs::read_to_string(format!("{task}/stat")).is_err(),
            "the name should not be UTF-8"
        );
        let stat = read_stat(format!("{task}/stat")).unwrap();
        // running or, once it waits for the test to end, sleeping
        let state = stat_fields_after_name(&stat).unwrap().next();
        assert!(matches!(state, Some("R") | Some("S")), "{state:?}");
        assert_eq!(read_comm(format!("{task}/comm")).unwrap(), "\\xffodd");
        done.send(()).unwrap();
        thread.join().unwrap();
    }
}
