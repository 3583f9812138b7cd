//! A directory held open, and every file operation in it made relative to that handle.
//!
//! The recorder runs as root and writes beside files the invoking user owns: the
//! directory `-o` names is usually theirs, and they (or their workload) can rename any
//! entry of it and put a symbolic link in its place at any moment. A path is therefore
//! walked once, when the recording starts (as the user named it, links and all), and
//! never again: the trace being written, its kind directories, the collectors' channel
//! and the lock are reached through descriptors held from the moment each was made
//! (`openat`, `mkdirat`, `renameat`, `unlinkat` relative to them, `O_NOFOLLOW` on every
//! last component), and ownership is handed over with `fchown`/`fchmod` on what was
//! opened. A name checked twice can change between the two looks; a descriptor cannot.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{openat, renameat, renameat2, OFlag, RenameFlags, AT_FDCWD};
use nix::sys::stat::{fchmod, fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{fchown, unlinkat, Gid, Uid, UnlinkatFlags};

/// How deep `remove_tree` goes before it gives up: the recorder's own trees are two
/// levels deep; a deeper one was built by someone else, and is left, not recursed into
/// until the stack runs out.
const REMOVE_DEPTH: usize = 16;

fn io_error(errno: Errno) -> io::Error {
    io::Error::from_raw_os_error(errno as i32)
}

/// A file's identity: (device, inode). The same pair at a name later means the same file.
pub type Identity = (u64, u64);

fn identity_of(stat: &FileStat) -> Identity {
    (stat.st_dev, stat.st_ino)
}

fn kind_of(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits())
}

/// What stands at a name, in words, for a refusal.
pub fn kind_name(stat: &FileStat) -> &'static str {
    match kind_of(stat) {
        SFlag::S_IFREG => "a regular file",
        SFlag::S_IFDIR => "a directory",
        SFlag::S_IFLNK => "a symbolic link",
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFCHR => "a character device",
        SFlag::S_IFBLK => "a block device",
        _ => "something unknown",
    }
}

/// A directory, held open.
#[derive(Debug)]
pub struct HeldDir {
    fd: OwnedFd,
}

impl AsFd for HeldDir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_CLOEXEC);

impl HeldDir {
    /// Opens PATH as the user named it: links along it are followed, this once.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = openat(AT_FDCWD, path, DIR_FLAGS, Mode::empty()).map_err(io_error)?;
        Ok(Self { fd })
    }

    /// Opens NAME, a directory in this one, without following a link.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Self> {
        let fd = openat(&self.fd, name, DIR_FLAGS | OFlag::O_NOFOLLOW, Mode::empty())
            .map_err(io_error)?;
        Ok(Self { fd })
    }

    /// A second handle on the same directory.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self { fd: self.fd.try_clone()? })
    }

    /// NAME open for reading and writing, made (0600) if it is not there: a lock file.
    /// Never through a link, and without blocking at the open.
    pub fn open_lock(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlag::O_RDWR
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_CLOEXEC;
        let fd =
            openat(&self.fd, name, flags, Mode::from_bits_truncate(0o600)).map_err(io_error)?;
        Ok(File::from(fd))
    }

    /// Makes NAME with MODE and holds it. The directory opened must be the one just made: a
    /// directory of this process's user with no entries (someone who can write here could
    /// have swapped in another between the two calls).
    pub fn make_dir(&self, name: &OsStr, mode: u32) -> io::Result<Self> {
        mkdirat(&self.fd, name, Mode::from_bits_truncate(mode)).map_err(io_error)?;
        let made = self.open_dir(name)?;
        let stat = made.stat()?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if stat.st_uid != me || !made.entries()?.is_empty() {
            return Err(io::Error::other(format!(
                "{} was replaced as it was made",
                Path::new(name).display()
            )));
        }
        Ok(made)
    }

    /// A new file NAME (never one already there, never through a link), open for writing.
    pub fn create_file(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&self.fd, name, flags, Mode::from_bits_truncate(mode)).map_err(io_error)?;
        Ok(File::from(fd))
    }

    /// NAME open for reading if it is a regular file: never through a link, and without
    /// blocking at the open (a FIFO put there would hold the reader forever).
    pub fn open_regular(&self, name: &OsStr) -> io::Result<(File, FileStat)> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = openat(&self.fd, name, flags, Mode::empty()).map_err(io_error)?;
        let stat = fstat(&fd).map_err(io_error)?;
        if kind_of(&stat) != SFlag::S_IFREG {
            return Err(io::Error::other(format!("not a regular file ({})", kind_name(&stat))));
        }
        Ok((File::from(fd), stat))
    }

    /// What NAME is now, not following a link; None when nothing is there.
    pub fn stat_at(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(io_error(e)),
        }
    }

    /// Whether NAME is (still) the file whose identity is ID.
    pub fn holds(&self, name: &OsStr, id: Identity) -> bool {
        matches!(self.stat_at(name), Ok(Some(stat)) if identity_of(&stat) == id)
    }

    pub fn stat(&self) -> io::Result<FileStat> {
        fstat(&self.fd).map_err(io_error)
    }

    pub fn identity(&self) -> io::Result<Identity> {
        self.stat().map(|s| identity_of(&s))
    }

    /// The names in this directory, `.` and `..` left out.
    pub fn entries(&self) -> io::Result<Vec<OsString>> {
        // a description of its own: reading one moves its offset
        let fd = openat(&self.fd, ".", DIR_FLAGS, Mode::empty()).map_err(io_error)?;
        let dir = Dir::from_fd(fd).map_err(io_error)?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(io_error)?;
            let name: &CStr = entry.file_name();
            if name.to_bytes() != b"." && name.to_bytes() != b".." {
                names.push(OsStr::from_bytes(name.to_bytes()).to_os_string());
            }
        }
        Ok(names)
    }

    /// Renames FROM to TO, both in this directory.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        renameat(&self.fd, from, &self.fd, to).map_err(io_error)
    }

    /// Swaps A and B, both in this directory, atomically (RENAME_EXCHANGE, Linux 3.15+).
    pub fn exchange(&self, a: &OsStr, b: &OsStr) -> io::Result<()> {
        renameat2(&self.fd, a, &self.fd, b, RenameFlags::RENAME_EXCHANGE).map_err(io_error)
    }

    /// Removes NAME, a file or a link (never what a link points to).
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir).map_err(io_error)
    }

    /// Removes NAME and, if it is a directory, everything in it, through handles: a link
    /// anywhere in the tree is removed, never followed.
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        self.remove_tree_at(name, 0)
    }

    fn remove_tree_at(&self, name: &OsStr, depth: usize) -> io::Result<()> {
        let Some(stat) = self.stat_at(name)? else { return Ok(()) };
        if kind_of(&stat) != SFlag::S_IFDIR {
            return self.unlink(name);
        }
        if depth >= REMOVE_DEPTH {
            return Err(io::Error::other(format!(
                "{} is nested deeper than the recorder writes",
                Path::new(name).display()
            )));
        }
        let inner = self.open_dir(name)?;
        let mut first_error = None;
        for entry in inner.entries()? {
            if let Err(e) = inner.remove_tree_at(&entry, depth + 1) {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir).map_err(io_error)
    }

    /// Gives this directory to OWNER (if any) with MODE: owner first (chown clears set-id bits).
    pub fn hand_over(&self, owner: Option<(u32, u32)>, mode: u32) -> io::Result<()> {
        hand_over(&self.fd, owner, mode)
    }

    /// Gives every file below this directory to OWNER with FILE_MODE, every directory with
    /// DIR_MODE (this one last, and only if ITSELF): for a tree this process made and no one
    /// else could write into while it was being made.
    pub fn hand_over_tree(
        &self,
        owner: Option<(u32, u32)>,
        file_mode: u32,
        dir_mode: u32,
    ) -> io::Result<()> {
        for name in self.entries()? {
            let Some(stat) = self.stat_at(&name)? else { continue };
            match kind_of(&stat) {
                SFlag::S_IFDIR => {
                    let inner = self.open_dir(&name)?;
                    inner.hand_over_tree(owner, file_mode, dir_mode)?;
                    inner.hand_over(owner, dir_mode)?;
                }
                SFlag::S_IFREG => {
                    let (file, _) = self.open_regular(&name)?;
                    hand_over(file.as_fd(), owner, file_mode)?;
                }
                _ => {} // the recorder makes nothing else
            }
        }
        Ok(())
    }
}

/// fchown (when OWNER is given), then fchmod, on an open file or directory.
pub fn hand_over(fd: impl AsFd, owner: Option<(u32, u32)>, mode: u32) -> io::Result<()> {
    if let Some((uid, gid)) = owner {
        fchown(fd.as_fd(), Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid))).map_err(io_error)?;
    }
    fchmod(fd.as_fd(), Mode::from_bits_truncate(mode)).map_err(io_error)
}

/// The identity of an open file.
pub fn identity_of_file(file: &File) -> io::Result<Identity> {
    fstat(file.as_fd()).map(|s| identity_of(&s)).map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("launchgap-held-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_held_directory_is_written_where_it_is_now_whatever_its_old_name_became() {
        let root = scratch("moved");
        let parent = HeldDir::open(&root).unwrap();
        let trace = parent.make_dir(OsStr::new("trace"), 0o700).unwrap();
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        // the name now leads elsewhere, through a link
        std::fs::rename(root.join("trace"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("trace")).unwrap();
        trace.create_file(OsStr::new("meta.json"), 0o600).unwrap();
        let kind = trace.make_dir(OsStr::new("switch"), 0o700).unwrap();
        kind.create_file(OsStr::new("000001.parquet"), 0o600).unwrap();
        assert!(
            root.join("moved/meta.json").is_file()
                && root.join("moved/switch/000001.parquet").is_file()
        );
        assert_eq!(
            std::fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "nothing went through the link"
        );
        assert!(!parent.holds(OsStr::new("trace"), trace.identity().unwrap()));
        assert!(parent.holds(OsStr::new("moved"), trace.identity().unwrap()));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn remove_tree_removes_links_and_never_what_they_point_to() {
        let root = scratch("remove");
        let keep = root.join("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::write(keep.join("precious"), "x").unwrap();
        let tree = root.join("tree/inner");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("file"), "y").unwrap();
        std::os::unix::fs::symlink(&keep, tree.join("link")).unwrap();
        std::os::unix::fs::symlink(&keep, root.join("tree/top-link")).unwrap();
        let parent = HeldDir::open(&root).unwrap();
        parent.remove_tree(OsStr::new("tree")).unwrap();
        assert!(!root.join("tree").exists());
        assert_eq!(std::fs::read_to_string(keep.join("precious")).unwrap(), "x");
        // a link in the place of the tree: the link goes, its target stays
        std::os::unix::fs::symlink(&keep, root.join("tree")).unwrap();
        parent.remove_tree(OsStr::new("tree")).unwrap();
        assert!(
            keep.join("precious").is_file()
                && std::fs::symlink_metadata(root.join("tree")).is_err()
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn open_regular_refuses_links_and_fifos_without_blocking() {
        let root = scratch("regular");
        std::fs::write(root.join("plain"), "z").unwrap();
        std::os::unix::fs::symlink(root.join("plain"), root.join("link")).unwrap();
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        let dir = HeldDir::open(&root).unwrap();
        let (_, stat) = dir.open_regular(OsStr::new("plain")).unwrap();
        assert_eq!(stat.st_size, 1);
        assert_eq!(
            dir.open_regular(OsStr::new("link")).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        assert_eq!(
            dir.open_regular(OsStr::new("fifo")).unwrap_err().to_string(),
            "not a regular file (a FIFO)"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_tree_is_handed_over_file_by_file_with_the_modes_asked() {
        let root = scratch("hand");
        let parent = HeldDir::open(&root).unwrap();
        let trace = parent.make_dir(OsStr::new("t"), 0o700).unwrap();
        trace.create_file(OsStr::new("a"), 0o600).unwrap();
        trace
            .make_dir(OsStr::new("k"), 0o700)
            .unwrap()
            .create_file(OsStr::new("b"), 0o600)
            .unwrap();
        trace.hand_over_tree(None, 0o640, 0o750).unwrap();
        trace.hand_over(None, 0o750).unwrap();
        let mode = |p: &str| std::fs::metadata(root.join(p)).unwrap().mode() & 0o7777;
        assert_eq!(
            (mode("t"), mode("t/a"), mode("t/k"), mode("t/k/b")),
            (0o750, 0o640, 0o750, 0o640)
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
