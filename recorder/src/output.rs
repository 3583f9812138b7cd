//! The trace on disk: an earlier recording at the -o path is replaced only
//! when this one ends, and nothing else is replaced: a directory or file at
//! -o that is not a launchgap trace (an empty file aside) is refused. The
//! recorder writes `.NAME.partial-PID` beside NAME (a directory in format 2,
//! a file in format 1) and moves it into place at the end; `.NAME.lock`
//! (flock, holding the recorder's pid) keeps a second recorder off the same
//! NAME. Under sudo all of it ends up belonging to the invoking user; files
//! have mode --mode (0600 by default, as perf writes), whatever the umask,
//! and directories the same plus search (x) wherever it allows reading (0700
//! for 0600).
//!
//! The folder -o names is usually the invoking user's, who can rename its
//! entries at any moment (docs/security.md, "The trace being written"). So the
//! folder is opened once and held (held_dir.rs), and everything after goes
//! through handles: the partial trace stays root's, mode 0700 (0711 while a
//! collector channel inside it must be reachable), until it is complete; only
//! then is every file in it handed over (fchown/fchmod on what was opened), and
//! it is moved into place only if its name still holds the very directory or
//! file this recorder made (same device and inode).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::stat::FileStat;

use crate::held_dir::{self, HeldDir, Identity};

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
}

/// While a trace is written it is the recorder's alone: files 0600, directories 0700.
pub const WRITING_FILE_MODE: u32 = 0o600;
pub const WRITING_DIR_MODE: u32 = 0o700;

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
fn sidecar_names(final_name: &OsStr, pid: u32) -> (OsString, OsString) {
    let with = |suffix: String| {
        let mut name = OsString::from(".");
        name.push(final_name);
        name.push(suffix);
        name
    };
    (with(format!(".partial-{pid}")), with(".lock".to_string()))
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

fn numbered(name: &OsStr, n: u32) -> OsString {
    let mut name = name.to_owned();
    name.push(format!(".{n}"));
    name
}

/// "uid 65534 (nobody)", or the bare uid where it has no name.
fn user_called(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => {
            format!("uid {uid} ({})", launchgap_record::names::escape_name(user.name.as_bytes()))
        }
        _ => format!("uid {uid}"),
    }
}

/// An exclusive lock on `.NAME.lock`, kept until the trace is in place.
struct Lock {
    parent: HeldDir,
    name: OsString,
    id: Identity,
    file: File,
}

impl Lock {
    /// Why what stands at the lock's name is not a lock this recorder may take: only a
    /// regular file of root's or of the invoking user's is (another user's file there
    /// could be held by them forever, or be a link to anywhere).
    fn refusal(stat: &FileStat, lock_path: &Path, ownership: &Ownership) -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let owners = [Some(me), ownership.owner.map(|(uid, _)| uid)];
        let kind = held_dir::kind_name(stat);
        let whose = user_called(stat.st_uid);
        if kind != "a regular file" {
            return Some(format!(
                "{} is {kind} belonging to {whose}, not a lock of launchgap's",
                lock_path.display()
            ));
        }
        (!owners.contains(&Some(stat.st_uid))).then(|| {
            format!("{} belongs to {whose}: another user's file is in the way", lock_path.display())
        })
    }

    /// Takes the lock without waiting; a held lock is one line naming its holder.
    fn take(
        parent: &HeldDir,
        name: &OsStr,
        lock_path: &Path,
        final_path: &Path,
        ownership: &Ownership,
    ) -> Result<Self> {
        let in_the_way = |why: String| {
            anyhow!("cannot write {}: {why}; remove it, or choose another -o", final_path.display())
        };
        // The holder unlinks the lock file as it finishes: a lock taken on a
        // file that is no longer at its name is worthless, so check and retry.
        for _ in 0..100 {
            if let Some(stat) = parent
                .stat_at(name)
                .with_context(|| format!("cannot write {}", final_path.display()))?
            {
                if let Some(why) = Self::refusal(&stat, lock_path, ownership) {
                    return Err(in_the_way(why));
                }
            }
            let mut file = match parent.open_lock(name) {
                Ok(file) => file,
                Err(e) => {
                    // the name changed between the two looks: say what is there now
                    if let Ok(Some(stat)) = parent.stat_at(name) {
                        if let Some(why) = Self::refusal(&stat, lock_path, ownership) {
                            return Err(in_the_way(why));
                        }
                    }
                    return Err(e).with_context(|| {
                        format!(
                            "cannot write {} (its lock {})",
                            final_path.display(),
                            lock_path.display()
                        )
                    });
                }
            };
            let opened = nix::sys::stat::fstat(&file)?;
            if let Some(why) = Self::refusal(&opened, lock_path, ownership) {
                return Err(in_the_way(why));
            }
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = (&file).take(64).read_to_string(&mut holder);
                    let holder = holder.trim();
                    let who = if !holder.is_empty() && holder.bytes().all(|b| b.is_ascii_digit()) {
                        format!("another recorder (pid {holder})")
                    } else {
                        "another recorder".to_string()
                    };
                    bail!(
                        "{who} is writing {}; wait for it, or choose another -o",
                        final_path.display()
                    );
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
                }
            }
            let id = (opened.st_dev, opened.st_ino);
            if !parent.holds(name, id) {
                continue;
            }
            file.set_len(0)?;
            write!(file, "{}", std::process::id())?;
            if let Some((uid, gid)) = ownership.owner {
                let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
            }
            return Ok(Self { parent: parent.try_clone()?, name: name.to_owned(), id, file });
        }
        bail!("cannot lock {}: it keeps being replaced", lock_path.display())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // unlink while still holding the lock (the next taker re-checks the name), and
        // only the lock file itself: whatever else came to stand at its name stays
        if self.parent.holds(&self.name, self.id) {
            let _ = self.parent.unlink(&self.name);
        }
        let _ = self.file.unlock();
    }
}

/// The recording being written: a directory or a file, held from its creation.
enum Held {
    Dir(HeldDir),
    File(File),
}

/// The partial recording beside the final name.
struct Partial {
    name: OsString,
    /// its path, for messages and for the collectors (who reach it by name)
    path: PathBuf,
    id: Identity,
    held: Held,
}

/// Where a recording goes while it is being made.
pub struct TraceOutput {
    final_path: PathBuf,
    /// None when the target is a device or pipe (e.g. /dev/null), written directly.
    partial: Option<Partial>,
    /// the folder of the final name, held since the start
    parent: Option<HeldDir>,
    final_name: OsString,
    layout: Layout,
    /// the device or pipe written directly
    device: Option<File>,
    ownership: Ownership,
    lock: Option<Lock>,
    committed: bool,
}

impl TraceOutput {
    /// Locks the name and creates the partial file or directory, the recorder's own
    /// until the end. Nothing at `path` is touched.
    pub fn prepare(path: &Path, ownership: Ownership, layout: Layout) -> Result<Self> {
        let final_path = resolve_final_path(path);
        let cannot = || format!("cannot write {}", path.display());
        match std::fs::metadata(&final_path) {
            Ok(meta) if meta.is_dir() && !is_trace_directory(&final_path) => {
                bail!(
                    "cannot write {}: it is a directory (and not a launchgap trace)",
                    path.display()
                )
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
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&final_path)
                    .with_context(cannot)?;
                return Ok(Self {
                    final_path,
                    partial: None,
                    parent: None,
                    final_name: OsString::new(),
                    layout,
                    device: Some(file),
                    ownership,
                    lock: None,
                    committed: false,
                });
            }
            _ => {}
        }
        let Some(final_name) = final_path.file_name().map(OsStr::to_owned) else {
            bail!("cannot write {}: not a file name", path.display());
        };
        let folder =
            final_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let parent = HeldDir::open(folder).with_context(cannot)?;
        let (first_choice, lock_name) = sidecar_names(&final_name, std::process::id());
        let lock = Lock::take(&parent, &lock_name, &folder.join(&lock_name), path, &ownership)?;
        let partial =
            Self::make_partial(&parent, folder, &first_choice, layout).with_context(cannot)?;
        Ok(Self {
            final_path,
            partial: Some(partial),
            parent: Some(parent),
            final_name,
            layout,
            device: None,
            ownership,
            lock: Some(lock),
            committed: false,
        })
    }

    /// A partial file by the first name is a killed recorder's (an earlier boot
    /// or container with our pid): keep it, pick the next name.
    fn make_partial(
        parent: &HeldDir,
        folder: &Path,
        first_choice: &OsStr,
        layout: Layout,
    ) -> std::io::Result<Partial> {
        let mut attempt = 1;
        loop {
            let name = if attempt == 1 {
                first_choice.to_owned()
            } else {
                numbered(first_choice, attempt)
            };
            let made = match layout {
                Layout::File => parent.create_file(&name, WRITING_FILE_MODE).map(Held::File),
                Layout::Directory => parent.make_dir(&name, WRITING_DIR_MODE).map(Held::Dir),
            };
            match made {
                Ok(held) => {
                    let id = match &held {
                        Held::Dir(dir) => dir.identity()?,
                        Held::File(file) => held_dir::identity_of_file(file)?,
                    };
                    if let Held::File(file) = &held {
                        // the exact mode, whatever the umask
                        held_dir::hand_over(file, None, WRITING_FILE_MODE)?;
                    }
                    return Ok(Partial { path: folder.join(&name), name, id, held });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A handle on the file being written (Layout::File).
    pub fn file(&self) -> Result<File> {
        let file = match (&self.device, self.partial.as_ref().map(|p| &p.held)) {
            (Some(device), _) => device,
            (None, Some(Held::File(file))) => file,
            _ => bail!("the trace is a directory, not a file"),
        };
        file.try_clone().context("duplicating the trace file's descriptor")
    }

    /// A handle on the directory being written (Layout::Directory).
    pub fn directory(&self) -> Result<HeldDir> {
        match self.partial.as_ref().map(|p| &p.held) {
            Some(Held::Dir(dir)) => {
                dir.try_clone().context("duplicating the trace directory's descriptor")
            }
            _ => bail!("the trace is a file, not a directory"),
        }
    }

    /// Lets every user pass through the directory being written (mode 0711), so that the
    /// command's collectors reach the channel inside it; nothing in it can be listed or read.
    pub fn let_collectors_through(&self) -> Result<()> {
        let dir = self.directory()?;
        held_dir::hand_over(&dir, None, WRITING_DIR_MODE | 0o011)
            .context("opening the trace being written to its collectors")
    }

    /// The path being written now: the partial file or directory until the end.
    pub fn writing_to(&self) -> &Path {
        self.partial.as_ref().map_or(&self.final_path, |p| &p.path)
    }

    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Moves the recording into place and releases the name. Everything inside is handed
    /// over first (the directory is still the recorder's, so no one can have swapped
    /// anything in); then, if its name still holds what this recorder made, a file replaces
    /// a file by rename, anything else (a directory on either side) swaps the two
    /// atomically (RENAME_EXCHANGE) and the earlier one is removed; last, the recording
    /// itself is handed over, through its handle.
    pub fn commit(mut self) -> Result<()> {
        if let (Some(partial), Some(parent)) = (&self.partial, &self.parent) {
            let (owner, mode, dir_mode) =
                (self.ownership.owner, self.ownership.mode, self.ownership.dir_mode());
            let cannot = || {
                format!(
                    "cannot move the trace into place at {} (it is in {})",
                    self.final_path.display(),
                    partial.path.display()
                )
            };
            if let Held::Dir(dir) = &partial.held {
                dir.hand_over_tree(owner, mode, dir_mode).with_context(cannot)?;
            }
            if !parent.holds(&partial.name, partial.id) {
                // whatever now has its name is not this recording: neither moved nor removed
                self.committed = true;
                self.hand_over_partial()?;
                bail!(
                    "cannot move the trace into place at {}: {} was renamed or replaced while recording (by the command, or another \
                     process of its user); the recording is left wherever it was moved",
                    self.final_path.display(),
                    partial.path.display()
                );
            }
            let earlier = parent.stat_at(&self.final_name).with_context(cannot)?;
            let earlier_is_dir =
                earlier.as_ref().is_some_and(|s| held_dir::kind_name(s) == "a directory");
            match earlier {
                Some(stat) if earlier_is_dir || self.layout == Layout::Directory => {
                    parent.exchange(&partial.name, &self.final_name).with_context(cannot)?;
                    // the earlier recording now sits at the partial name, unless it was swapped meanwhile
                    let removed = if parent.holds(&partial.name, (stat.st_dev, stat.st_ino)) {
                        parent.remove_tree(&partial.name)
                    } else {
                        Err(std::io::Error::other("it was replaced as it was being moved"))
                    };
                    if let Err(e) = removed {
                        eprintln!(
                            "launchgap-record: could not remove the earlier {} (now {}): {e}",
                            self.final_path.display(),
                            partial.path.display()
                        );
                    }
                }
                _ => parent.rename(&partial.name, &self.final_name).with_context(cannot)?,
            }
        }
        self.committed = true;
        self.hand_over_partial()
    }

    /// The recording itself to its owner, with its mode.
    fn hand_over_partial(&self) -> Result<()> {
        let Some(partial) = &self.partial else { return Ok(()) };
        let (owner, mode) = (self.ownership.owner, self.ownership.mode);
        match &partial.held {
            Held::Dir(dir) => dir.hand_over(owner, self.ownership.dir_mode()),
            Held::File(file) => held_dir::hand_over(file, owner, mode),
        }
        .with_context(|| format!("handing {} to its owner", self.final_path.display()))
    }
}

impl Drop for TraceOutput {
    /// A recording that never began leaves nothing behind.
    fn drop(&mut self) {
        if !self.committed {
            if let (Some(partial), Some(parent)) = (&self.partial, &self.parent) {
                if parent.holds(&partial.name, partial.id) {
                    let _ = parent.remove_tree(&partial.name);
                } else if let Held::Dir(dir) = &partial.held {
                    // moved away: empty it through its handle (its owner can remove an empty folder)
                    for name in dir.entries().unwrap_or_default() {
                        let _ = dir.remove_tree(&name);
                    }
                }
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
pub fn failed_write_ending(
    reason: &str,
    rows_on_disk: u64,
    earlier: Option<&Path>,
) -> FailedWriteEnding {
    if rows_on_disk == 0 {
        let kept =
            earlier.map(|p| format!(", the earlier {} kept", p.display())).unwrap_or_default();
        return FailedWriteEnding {
            line: format!("{reason}: nothing recorded{kept}"),
            keep: false,
        };
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
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("launchgap-output-{name}-{}", std::process::id()));
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
            FailedWriteEnding {
                line: "No space left on device (run.lg): nothing recorded, the earlier run.lg kept"
                    .into(),
                keep: false
            }
        );
        assert_eq!(
            failed_write_ending(reason, 0, None),
            FailedWriteEnding {
                line: "No space left on device (run.lg): nothing recorded".into(),
                keep: false
            }
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
            assert!(out
                .writing_to()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".run.lg.partial-"));
        }
        assert_eq!(std::fs::read(&target).unwrap(), old);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no partial or lock file left");

        let out =
            TraceOutput::prepare(&target, Ownership { owner: None, mode: 0o640 }, Layout::File)
                .unwrap();
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
            format!(
                "another recorder (pid {}) is writing {}; wait for it, or choose another -o",
                std::process::id(),
                target.display()
            )
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
            assert_eq!(
                err,
                format!(
                    "cannot write {}: it is a directory (and not a launchgap trace)",
                    dir.display()
                )
            );
        }
        let err = TraceOutput::prepare(Path::new("/dev/null"), MINE, Layout::Directory)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with(
                "cannot write /dev/null: not a regular file, and a trace is a directory"
            ),
            "{err}"
        );
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
                assert_eq!(
                    err,
                    format!(
                        "cannot write {}: it is a file (and not a launchgap trace)",
                        path.display()
                    )
                );
            }
        }
        assert_eq!(std::fs::read(&notes).unwrap(), b"precious\n");
        assert_eq!(std::fs::read(&other).unwrap(), bytes);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "no partial or lock left");

        // the legacy writer's own file is one
        let recorded =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/format1-cudasim.lg");
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
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no partial directory or lock left"
        );

        let out = TraceOutput::prepare(&target, MINE, Layout::Directory).unwrap();
        write_trace_dir(&out, b"first");
        assert_eq!(
            std::fs::metadata(out.writing_to()).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        out.commit().unwrap();
        assert_eq!(std::fs::read(target.join(crate::schema::META_FILE)).unwrap(), b"first");

        let out = TraceOutput::prepare(
            &target,
            Ownership { owner: None, mode: 0o640 },
            Layout::Directory,
        )
        .unwrap();
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
