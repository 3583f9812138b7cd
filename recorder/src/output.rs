//! The trace on disk: an earlier recording at the -o path is replaced only
//! when this one ends, and nothing else is replaced: a directory or file at
//! -o that is not a launchgap trace (an empty file aside) is refused. The
//! recorder writes `.NAME.partial-PID` beside NAME (a directory in format 2,
//! a file in format 1) and moves it into place at the end; `.NAME.lock`
//! (flock, holding the recorder's pid) keeps a second recorder off the same
//! NAME. Under sudo all of it belongs to the invoking
//! user; files have mode --mode (0600 by default, as perf writes), whatever
//! the umask, and directories the same plus search (x) wherever it allows
//! reading (0700 for 0600).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

/// Who owns what the recorder writes, and with which permission bits.
#[derive(Debug, Clone, Copy)]
pub struct Ownership {
    /// (uid, gid) to hand the files to; None leaves them to the recorder's user.
    pub owner: Option<(u32, u32)>,
    pub mode: u32,
}

impl Ownership {
    /// Directories: the mode plus search wherever it allows reading.
    pub fn dir_mode(&self) -> u32 {
        self.mode | ((self.mode & 0o444) >> 2)
    }

    /// Owner first (chown clears set-id bits), then the exact mode, umask or not.
    pub fn apply_to_file(&self, file: &File) -> std::io::Result<()> {
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::fchown(file, Some(uid), Some(gid))?;
        }
        file.set_permissions(std::fs::Permissions::from_mode(self.mode))
    }

    pub fn apply_to_dir(&self, dir: &Path) -> std::io::Result<()> {
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::lchown(dir, Some(uid), Some(gid))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(self.dir_mode()))
    }
}

/// What the recording is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// format 1: one file
    File,
    /// format 2: a directory (schema::META_FILE marks it as a trace)
    Directory,
}

/// A directory holding a trace's metadata file: one the recorder may replace.
fn is_trace_directory(path: &Path) -> bool {
    path.join(crate::schema::META_FILE).is_file()
}

/// A regular file the recorder may replace: a format-1 trace, or an empty
/// file (nothing in it to lose). Notes, another tool's data: never.
fn is_replaceable_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.len() == 0 || crate::trace_writer::format1::is_format1_trace(path)
}

/// The names beside the final file: (`.NAME.partial-PID`, `.NAME.lock`).
pub fn sidecar_names(final_path: &Path, pid: u32) -> Option<(PathBuf, PathBuf)> {
    let name = final_path.file_name()?.to_string_lossy().into_owned();
    let dir = final_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some((dir.join(format!(".{name}.partial-{pid}")), dir.join(format!(".{name}.lock"))))
}

/// The file the user named, through a symbolic link if it is one (so that
/// the rename replaces the link's target, not the link).
fn resolve_final_path(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::read_link(path) {
            Ok(target) if target.is_absolute() => resolve_final_path(&target),
            Ok(target) => resolve_final_path(&path.parent().unwrap_or(Path::new(".")).join(target)),
            Err(_) => path.to_path_buf(),
        },
        _ => path.to_path_buf(),
    }
}

fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// An exclusive lock on `.NAME.lock`, kept until the trace is in place.
struct Lock {
    path: PathBuf,
    file: File,
}

impl Lock {
    /// Takes the lock without waiting; a held lock is one line naming its holder.
    fn take(path: &Path, final_path: &Path, ownership: &Ownership) -> Result<Self> {
        // The holder unlinks the lock file as it finishes: a lock taken on a
        // file that is no longer at `path` is worthless, so check and retry.
        for _ in 0..100 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .with_context(|| format!("cannot write {}", final_path.display()))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    let who = if holder.is_empty() { "another recorder".to_string() } else { format!("another recorder (pid {holder})") };
                    bail!("{who} is writing {}; wait for it, or choose another -o", final_path.display());
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
            let still_there = std::fs::symlink_metadata(path)
                .ok()
                .zip(file.metadata().ok())
                .is_some_and(|(now, held)| now.dev() == held.dev() && now.ino() == held.ino());
            if !still_there {
                continue;
            }
            file.set_len(0)?;
            write!(file, "{}", std::process::id())?;
            if let Some((uid, gid)) = ownership.owner {
                let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
            }
            return Ok(Self { path: path.to_path_buf(), file });
        }
        bail!("cannot lock {}: it keeps being replaced", path.display())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // unlink while still holding the lock; the next taker re-checks the path
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Where a recording goes while it is being made.
pub struct TraceOutput {
    final_path: PathBuf,
    /// None when the target is a device or pipe (e.g. /dev/null), written directly.
    partial: Option<PathBuf>,
    layout: Layout,
    /// the open file (Layout::File)
    file: Option<File>,
    ownership: Ownership,
    lock: Option<Lock>,
    committed: bool,
}

impl TraceOutput {
    /// Locks the name and creates the partial file or directory, owned and
    /// moded as asked. Nothing at `path` is touched.
    pub fn prepare(path: &Path, ownership: Ownership, layout: Layout) -> Result<Self> {
        let final_path = resolve_final_path(path);
        let cannot = || format!("cannot write {}", path.display());
        match std::fs::metadata(&final_path) {
            Ok(meta) if meta.is_dir() && !is_trace_directory(&final_path) => {
                bail!("cannot write {}: it is a directory (and not a launchgap trace)", path.display())
            }
            Ok(meta) if meta.is_file() && !is_replaceable_file(&final_path, &meta) => {
                bail!("cannot write {}: it is a file (and not a launchgap trace)", path.display())
            }
            Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                if layout == Layout::Directory {
                    bail!(
                        "cannot write {}: not a regular file, and a trace is a directory (--format 1 writes one stream)",
                        path.display()
                    );
                }
                // a character device or FIFO: a rename would replace the node itself
                let file = OpenOptions::new().write(true).open(&final_path).with_context(cannot)?;
                return Ok(Self {
                    final_path,
                    partial: None,
                    layout,
                    file: Some(file),
                    ownership,
                    lock: None,
                    committed: false,
                });
            }
            _ => {}
        }
        let pid = std::process::id();
        let Some((first_choice, lock_path)) = sidecar_names(&final_path, pid) else {
            bail!("cannot write {}: not a file name", path.display());
        };
        let lock = Lock::take(&lock_path, path, &ownership)?;
        // A partial file by this name is a killed recorder's (an earlier boot
        // or container with our pid): keep it, pick the next name.
        let mut attempt = 1;
        let (partial, file) = loop {
            let partial = if attempt == 1 { first_choice.clone() } else { numbered(&first_choice, attempt) };
            let made = match layout {
                Layout::File => OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(ownership.mode)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&partial)
                    .map(Some),
                Layout::Directory => std::fs::DirBuilder::new().mode(ownership.dir_mode()).create(&partial).map(|()| None),
            };
            match made {
                Ok(file) => break (partial, file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
                Err(e) => return Err(e).with_context(cannot),
            }
        };
        let output = Self { final_path, partial: Some(partial), layout, file, ownership, lock: Some(lock), committed: false };
        output.apply().with_context(cannot)?;
        Ok(output)
    }

    fn apply(&self) -> std::io::Result<()> {
        match (&self.file, &self.partial) {
            (Some(file), _) => self.ownership.apply_to_file(file),
            (None, Some(dir)) => self.ownership.apply_to_dir(dir),
            (None, None) => Ok(()),
        }
    }

    /// A handle on the file being written (Layout::File).
    pub fn file(&self) -> Result<File> {
        let file = self.file.as_ref().context("the trace is a directory, not a file")?;
        file.try_clone().context("duplicating the trace file's descriptor")
    }

    /// The path being written now: the partial file or directory until the end.
    pub fn writing_to(&self) -> &Path {
        self.partial.as_deref().unwrap_or(&self.final_path)
    }

    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    pub fn ownership(&self) -> Ownership {
        self.ownership
    }

    /// Moves the recording into place and releases the name. A file replaces
    /// a file by rename; anything else (a directory on either side) swaps the
    /// two atomically (RENAME_EXCHANGE) and then removes the earlier one.
    pub fn commit(mut self) -> Result<()> {
        if let Some(partial) = &self.partial {
            let cannot = || {
                format!("cannot move the trace into place at {} (it is in {})", self.final_path.display(), partial.display())
            };
            let earlier = std::fs::symlink_metadata(&self.final_path).ok();
            match earlier {
                Some(meta) if meta.is_dir() || self.layout == Layout::Directory => {
                    exchange(partial, &self.final_path).with_context(cannot)?;
                    // the earlier recording now sits at the partial name
                    let removed = if meta.is_dir() { std::fs::remove_dir_all(partial) } else { std::fs::remove_file(partial) };
                    if let Err(e) = removed {
                        eprintln!("launchgap-record: could not remove the earlier {} (now {}): {e}", self.final_path.display(), partial.display());
                    }
                }
                _ => std::fs::rename(partial, &self.final_path).with_context(cannot)?,
            }
        }
        self.committed = true;
        Ok(())
    }
}

/// Swaps two paths atomically (renameat2 RENAME_EXCHANGE, Linux 3.15+).
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: two NUL-terminated paths relative to the working directory.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl Drop for TraceOutput {
    /// A recording that never began leaves nothing behind.
    fn drop(&mut self) {
        if !self.committed {
            if let Some(partial) = &self.partial {
                let _ = match self.layout {
                    Layout::File => std::fs::remove_file(partial),
                    Layout::Directory => std::fs::remove_dir_all(partial),
                };
            }
        }
        drop(self.lock.take());
    }
}

/// How a recording ends when writing it failed part way.
#[derive(Debug, PartialEq, Eq)]
pub struct FailedWriteEnding {
    /// The one line for the user.
    pub line: String,
    /// Whether the partial recording replaces what is at -o: only when it
    /// holds something. An empty one must not replace an earlier recording.
    pub keep: bool,
}

/// `reason` is write_failure's line ("No space left on device (run.lg)");
/// `earlier` the -o path when a recording is there now.
pub fn failed_write_ending(reason: &str, rows_on_disk: u64, earlier: Option<&Path>) -> FailedWriteEnding {
    if rows_on_disk == 0 {
        let kept = earlier.map(|p| format!(", the earlier {} kept", p.display())).unwrap_or_default();
        return FailedWriteEnding { line: format!("{reason}: nothing recorded{kept}"), keep: false };
    }
    FailedWriteEnding {
        line: format!("{reason}: tracing stopped; the recording is truncated: it keeps the {rows_on_disk} rows written before"),
        keep: true,
    }
}

/// An I/O failure writing the trace as one line naming the file the user
/// asked for: "No space left on device (run.lg)". None for other errors.
pub fn write_failure(err: &anyhow::Error, path: &std::path::Path) -> Option<anyhow::Error> {
    let io = err.chain().find_map(|e| e.downcast_ref::<std::io::Error>())?;
    let reason = match io.raw_os_error() {
        Some(errno) => nix::errno::Errno::from_raw(errno).desc().to_string(),
        None => io.to_string(),
    };
    Some(anyhow!("{reason} ({})", path.display()))
}

/// A file writer that stops at its first error: after a failed write (a
/// full disk) nothing more reaches the file, not even the buffered rest a
/// BufWriter flushes when dropped, and the file can be cut back to the end
/// of the last complete write.
pub struct StopAtFirstError {
    file: File,
    failed: Option<std::io::ErrorKind>,
    /// The file's length after the last write_complete().
    good_len: u64,
}

impl StopAtFirstError {
    pub fn new(mut file: File) -> std::io::Result<Self> {
        let good_len = file.stream_position()?;
        Ok(Self { file, failed: None, good_len })
    }

    /// Everything written so far is a complete unit (a batch): remember where it ends.
    pub fn write_complete(&mut self) -> std::io::Result<()> {
        self.good_len = self.file.stream_position()?;
        Ok(())
    }

    /// Drops whatever a failed write left past the last complete unit.
    pub fn cut_to_last_complete(&mut self) -> std::io::Result<u64> {
        self.file.set_len(self.good_len)?;
        Ok(self.good_len)
    }
}

impl Write for StopAtFirstError {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(kind) = self.failed {
            return Err(std::io::Error::new(kind, "an earlier write to the trace failed"));
        }
        self.file.write(buf).inspect_err(|e| self.failed = Some(e.kind()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(kind) = self.failed {
            return Err(std::io::Error::new(kind, "an earlier write to the trace failed"));
        }
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("launchgap-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const MINE: Ownership = Ownership { owner: None, mode: 0o600 };

    /// An earlier recording in format 1 (its schema message, no rows) at PATH; returns its bytes.
    fn format1_trace(path: &Path) -> Vec<u8> {
        use arrow_schema::{DataType, Field, Schema};
        let format = format!("{}/1", crate::schema::FORMAT_NAME);
        let schema = Schema::new_with_metadata(
            vec![Field::new("ts_ns", DataType::UInt64, false)],
            std::collections::HashMap::from([("format".to_string(), format)]),
        );
        let mut bytes = Vec::new();
        arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &schema).unwrap().finish().unwrap();
        std::fs::write(path, &bytes).unwrap();
        bytes
    }

    #[test]
    fn a_failed_write_keeps_the_earlier_recording_unless_something_was_written() {
        let reason = "No space left on device (run.lg)";
        assert_eq!(
            failed_write_ending(reason, 0, Some(Path::new("run.lg"))),
            FailedWriteEnding { line: "No space left on device (run.lg): nothing recorded, the earlier run.lg kept".into(), keep: false }
        );
        assert_eq!(
            failed_write_ending(reason, 0, None),
            FailedWriteEnding { line: "No space left on device (run.lg): nothing recorded".into(), keep: false }
        );
        assert_eq!(
            failed_write_ending(reason, 1234, Some(Path::new("run.lg"))),
            FailedWriteEnding {
                line: "No space left on device (run.lg): tracing stopped; the recording is truncated: it keeps the 1234 rows written before".into(),
                keep: true
            }
        );
    }

    #[test]
    fn the_old_file_stays_until_commit_and_a_dropped_output_leaves_nothing() {
        let dir = scratch("commit");
        let target = dir.join("run.lg");
        let old = format1_trace(&target);
        {
            let out = TraceOutput::prepare(&target, MINE, Layout::File).unwrap();
            (&out.file().unwrap()).write_all(b"new").unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), old);
            assert!(out.writing_to().file_name().unwrap().to_string_lossy().starts_with(".run.lg.partial-"));
        }
        assert_eq!(std::fs::read(&target).unwrap(), old);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no partial or lock file left");

        let out = TraceOutput::prepare(&target, Ownership { owner: None, mode: 0o640 }, Layout::File).unwrap();
        (&out.file().unwrap()).write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_second_writer_of_the_same_name_is_refused_naming_the_first() {
        let dir = scratch("lock");
        let target = dir.join("run.lg");
        let first = TraceOutput::prepare(&target, MINE, Layout::File).unwrap();
        let err = TraceOutput::prepare(&target, MINE, Layout::File).err().unwrap().to_string();
        assert_eq!(
            err,
            format!("another recorder (pid {}) is writing {}; wait for it, or choose another -o", std::process::id(), target.display())
        );
        TraceOutput::prepare(&dir.join("other.lg"), MINE, Layout::File).unwrap();
        drop(first);
        TraceOutput::prepare(&target, MINE, Layout::File).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_symlink_is_followed_and_a_device_written_directly() {
        let dir = scratch("link");
        format1_trace(&dir.join("real.lg"));
        std::os::unix::fs::symlink("real.lg", dir.join("link.lg")).unwrap();
        let out = TraceOutput::prepare(&dir.join("link.lg"), MINE, Layout::File).unwrap();
        (&out.file().unwrap()).write_all(b"new").unwrap();
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(dir.join("link.lg")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(dir.join("real.lg")).unwrap(), b"new");

        let null = TraceOutput::prepare(Path::new("/dev/null"), MINE, Layout::File).unwrap();
        assert_eq!(null.writing_to(), Path::new("/dev/null"));
        null.commit().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_that_is_no_trace_is_refused() {
        let dir = scratch("dir");
        for layout in [Layout::File, Layout::Directory] {
            let err = TraceOutput::prepare(&dir, MINE, layout).err().unwrap().to_string();
            assert_eq!(err, format!("cannot write {}: it is a directory (and not a launchgap trace)", dir.display()));
        }
        let err = TraceOutput::prepare(Path::new("/dev/null"), MINE, Layout::Directory).err().unwrap().to_string();
        assert!(err.starts_with("cannot write /dev/null: not a regular file, and a trace is a directory"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_is_no_trace_is_refused_and_an_empty_one_replaced() {
        let dir = scratch("notes");
        let notes = dir.join("notes.txt");
        std::fs::write(&notes, b"precious\n").unwrap();
        // an Arrow stream, but another tool's: no launchgap metadata
        let other = dir.join("other.arrows");
        use arrow_schema::{DataType, Field, Schema};
        let schema = Schema::new(vec![Field::new("x", DataType::Int32, true)]);
        let mut bytes = Vec::new();
        arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &schema).unwrap().finish().unwrap();
        std::fs::write(&other, &bytes).unwrap();
        for layout in [Layout::File, Layout::Directory] {
            for path in [&notes, &other] {
                let err = TraceOutput::prepare(path, MINE, layout).err().unwrap().to_string();
                assert_eq!(err, format!("cannot write {}: it is a file (and not a launchgap trace)", path.display()));
            }
        }
        assert_eq!(std::fs::read(&notes).unwrap(), b"precious\n");
        assert_eq!(std::fs::read(&other).unwrap(), bytes);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "no partial or lock left");

        // the legacy writer's own file is one
        let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/format1-cudasim.lg");
        assert!(crate::trace_writer::format1::is_format1_trace(&recorded));

        let empty = dir.join("empty.lg");
        std::fs::write(&empty, b"").unwrap();
        let out = TraceOutput::prepare(&empty, MINE, Layout::Directory).unwrap();
        write_trace_dir(&out, b"new");
        out.commit().unwrap();
        assert_eq!(std::fs::read(empty.join(crate::schema::META_FILE)).unwrap(), b"new");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn write_trace_dir(out: &TraceOutput, content: &[u8]) {
        let dir = out.writing_to();
        std::fs::write(dir.join(crate::schema::META_FILE), content).unwrap();
        std::fs::create_dir(dir.join("launch")).unwrap();
    }

    #[test]
    fn a_directory_trace_replaces_a_file_or_an_earlier_trace_only_at_commit() {
        let dir = scratch("tree");
        let target = dir.join("run.lg");
        let format1 = format1_trace(&target);
        {
            let out = TraceOutput::prepare(&target, MINE, Layout::Directory).unwrap();
            write_trace_dir(&out, b"dropped");
        }
        assert_eq!(std::fs::read(&target).unwrap(), format1);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no partial directory or lock left");

        let out = TraceOutput::prepare(&target, MINE, Layout::Directory).unwrap();
        write_trace_dir(&out, b"first");
        assert_eq!(std::fs::metadata(out.writing_to()).unwrap().permissions().mode() & 0o7777, 0o700);
        out.commit().unwrap();
        assert_eq!(std::fs::read(target.join(crate::schema::META_FILE)).unwrap(), b"first");

        let out = TraceOutput::prepare(&target, Ownership { owner: None, mode: 0o640 }, Layout::Directory).unwrap();
        write_trace_dir(&out, b"second");
        assert_eq!(std::fs::read(target.join(crate::schema::META_FILE)).unwrap(), b"first");
        out.commit().unwrap();
        assert_eq!(std::fs::read(target.join(crate::schema::META_FILE)).unwrap(), b"second");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777, 0o750);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "the earlier trace is gone");

        // and format 1 replaces a directory trace the same way
        let out = TraceOutput::prepare(&target, MINE, Layout::File).unwrap();
        (&out.file().unwrap()).write_all(b"format 1 again").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"format 1 again");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
