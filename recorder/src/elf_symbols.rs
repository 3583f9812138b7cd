//! Reading ELF files: where a function lives (the file offset a uprobe
//! needs) and its first bytes, for probe placement. Files are opened
//! without blocking, refused unless regular and starting with an ELF
//! header, and read piecemeal as the parser asks (never whole into memory):
//! a path given by a user may be /dev/zero, a FIFO, or a huge file.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use object::read::ReadCache;
use object::{Object, ObjectSegment, ObjectSymbol, ReadRef, SymbolKind};

#[derive(Clone, Debug)]
pub struct FunctionSite {
    pub file_offset: u64,
    /// Its virtual address (for printing branch targets).
    pub address: u64,
    /// Its first bytes: up to the symbol's size, and at most MAX_CODE_BYTES.
    pub code: Vec<u8>,
}

/// Enough to decode past any entry prefix worth moving a probe over.
const MAX_CODE_BYTES: u64 = 64;

/// Larger than any CUDA library or application binary shipped (libcuda is
/// about 100 MiB, libtorch_cuda about 1.5 GiB): a bigger "library" is a
/// mistake, and its tables would be read into memory.
const MAX_ELF_BYTES: u64 = 8 << 30;

const ELF_MAGIC: [u8; 4] = *b"\x7fELF";

/// An ELF file opened for reading on demand: the parser reads the ranges it
/// needs (headers, symbol tables, a few code bytes) and nothing else.
pub type ElfData = ReadCache<File>;

/// Why a path is not an ELF file that can be read, as a short phrase
/// ("not a regular file (a FIFO)", "not an ELF file", "Permission denied").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotElf(pub String);

impl std::fmt::Display for NotElf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotElf {}

fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

fn os_reason(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(errno) => nix::errno::Errno::from_raw(errno).desc().to_string(),
        None => err.to_string(),
    }
}

/// Opens an ELF file for reading: without blocking (a FIFO's open waits for
/// a writer otherwise), regular files only, the ELF header checked first.
pub fn open_elf(path: &Path) -> std::result::Result<ElfData, NotElf> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| NotElf(os_reason(&e)))?;
    let meta = file.metadata().map_err(|e| NotElf(os_reason(&e)))?;
    if !meta.file_type().is_file() {
        return Err(NotElf(format!("not a regular file ({})", kind_of(meta.file_type()))));
    }
    if meta.len() > MAX_ELF_BYTES {
        return Err(NotElf(format!("{} GiB, larger than any CUDA library", meta.len() >> 30)));
    }
    let mut magic = [0u8; ELF_MAGIC.len()];
    match file.read_exact(&mut magic) {
        Ok(()) if magic == ELF_MAGIC => {}
        Ok(()) => return Err(NotElf("not an ELF file".to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(NotElf("not an ELF file".to_string()))
        }
        Err(e) => return Err(NotElf(os_reason(&e))),
    }
    Ok(ReadCache::new(file))
}

/// Defined function symbols of an ELF file (both .symtab and .dynsym) with
/// their file offsets, for the names asked for.
pub fn find_functions(path: &Path, names: &[&str]) -> Result<HashMap<String, FunctionSite>> {
    let cache = open_elf(path).with_context(|| format!("reading {}", path.display()))?;
    let data = &cache;
    let file =
        object::File::parse(data).with_context(|| format!("parsing ELF {}", path.display()))?;
    let file_len = data.len().unwrap_or(0);
    let mut out = HashMap::new();
    for symbol in file.symbols().chain(file.dynamic_symbols()) {
        if !symbol.is_definition() || symbol.kind() != SymbolKind::Text {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if !names.contains(&name) || out.contains_key(name) {
            continue;
        }
        let address = symbol.address();
        let segment = file
            .segments()
            .find(|seg| address >= seg.address() && address < seg.address() + seg.size());
        let Some(segment) = segment else { continue };
        let (segment_offset, _) = segment.file_range();
        let file_offset = address - segment.address() + segment_offset;
        // a symbol without a size (hand-written assembly) is read to the limit
        let length = match symbol.size() {
            0 => MAX_CODE_BYTES,
            size => size.min(MAX_CODE_BYTES),
        };
        let length = length.min(file_len.saturating_sub(file_offset));
        let code = data.read_bytes_at(file_offset, length).map(<[u8]>::to_vec).unwrap_or_default();
        out.insert(name.to_string(), FunctionSite { file_offset, address, code });
    }
    Ok(out)
}

/// Whether an ELF file defines a function of that name.
pub fn defines_function(path: &Path, name: &str) -> bool {
    find_functions(path, &[name]).map(|found| found.contains_key(name)).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("launchgap-elf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_without_reading_or_blocking() {
        let dir = scratch("special");
        let fifo = dir.join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let started = Instant::now();
        assert_eq!(
            open_elf(Path::new("/dev/zero")).err(),
            Some(NotElf("not a regular file (a character device)".into()))
        );
        assert_eq!(open_elf(&fifo).err(), Some(NotElf("not a regular file (a FIFO)".into())));
        assert_eq!(open_elf(&dir).err(), Some(NotElf("not a regular file (a directory)".into())));
        assert!(started.elapsed() < Duration::from_secs(5), "nothing blocks");
        assert_eq!(
            open_elf(&dir.join("missing")).err(),
            Some(NotElf("No such file or directory".into()))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_files_with_an_elf_header_are_read() {
        let dir = scratch("header");
        std::fs::write(dir.join("text"), b"hello, not a library\n").unwrap();
        std::fs::write(dir.join("short"), b"\x7fEL").unwrap();
        std::fs::write(dir.join("empty"), b"").unwrap();
        for name in ["text", "short", "empty"] {
            assert_eq!(
                open_elf(&dir.join(name)).err(),
                Some(NotElf("not an ELF file".into())),
                "{name}"
            );
        }
        // a header and nothing after it: opened, then the parser says what is wrong
        std::fs::write(dir.join("header-only"), b"\x7fELF").unwrap();
        assert!(open_elf(&dir.join("header-only")).is_ok());
        assert!(find_functions(&dir.join("header-only"), &["cuInit"]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_real_elf_file_is_read_on_demand() {
        // this test binary is an ELF file defining functions of its own
        let me = std::env::current_exe().unwrap();
        let data = open_elf(&me).unwrap();
        let file = object::File::parse(&data).unwrap();
        assert!(file
            .symbols()
            .chain(file.dynamic_symbols())
            .any(|s| s.name() == Ok("malloc") || s.name() == Ok("main")));
        assert!(find_functions(&me, &["no_such_function_here"]).unwrap().is_empty());
    }
}
