//! Reading the collector channel: each CUDA process's collector appends frames to
//! `PID-NNNNNN.lgc` files in the channel directory (schema/trace.toml [collector]); the
//! recorder reads what was added since its last look, hands on every complete frame and
//! keeps a frame cut short for the next look. A file fully read is removed once its
//! collector has moved on to the next one, so the channel stays small however long the
//! recording.
//!
//! The directory belongs to the command's user: everything in it is read as hostile.
//! Only names of the collector's pattern are opened, without following links or
//! blocking, and only regular files owned by that user; a frame longer than the channel
//! allows stops the reading of its file, and says so.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom};

use crate::held_dir::HeldDir;
use crate::schema::{COLLECTOR_MAX_FILE, COLLECTOR_MAX_FRAME};

/// A frame's header: u32 payload length, u16 frame id, u16 zero.
pub const FRAME_HEADER: usize = 8;
/// The most read of one file in one look: the rest waits for the next (the recorder's
/// memory stays bounded whatever a file claims to hold).
const READ_PER_LOOK: u64 = 4 << 20;
/// The most files followed at once; names past it are refused (each collector keeps one
/// file open, and a file read to its end is removed once the next exists).
const MAX_FILES: usize = 4096;
/// The most files named one by one as not read; past it, one line says how many more.
const MAX_REFUSALS_NAMED: usize = 256;

/// Something in the channel that was not read, and why (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub pid: Option<u32>,
    pub detail: String,
}

/// Complete frames read from one process's file, in the order it wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFrames {
    /// the pid its file is named after
    pub pid: u32,
    pub frames: Vec<u8>,
}

#[derive(Debug, Default)]
struct FileState {
    /// bytes read and handed on (complete frames only)
    offset: u64,
    /// reading stopped: the file is damaged
    stopped: bool,
}

pub struct ChannelReader {
    /// the channel, held since it was made (held_dir.rs): never reached by path again
    dir: HeldDir,
    /// the uid the files must belong to
    owner: u32,
    /// by (pid, sequence number)
    files: BTreeMap<(u32, u32), FileState>,
    /// names already reported as not read
    refused: BTreeSet<String>,
    /// names not read past MAX_REFUSALS_NAMED, counted only
    refused_unnamed: u64,
}

/// `PID-NNNNNN.lgc` -> (pid, sequence number).
pub fn parse_name(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".lgc")?;
    let (pid, seq) = stem.split_once('-')?;
    let digits = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(pid, 10) || seq.len() != 6 || !digits(seq, 6) {
        return None;
    }
    Some((pid.parse().ok()?, seq.parse().ok()?))
}

/// The length of the first frame in BYTES if it is all there; Err when its header is impossible.
pub fn complete_frame(bytes: &[u8]) -> Result<Option<usize>, String> {
    let Some(header) = bytes.get(..FRAME_HEADER) else { return Ok(None) };
    let payload = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
    if FRAME_HEADER + payload > COLLECTOR_MAX_FRAME || header[6..8] != [0, 0] {
        return Err(format!(
            "a frame header reads {payload} bytes of frame {}",
            u16::from_le_bytes([header[4], header[5]])
        ));
    }
    Ok((bytes.len() >= FRAME_HEADER + payload).then_some(FRAME_HEADER + payload))
}

impl ChannelReader {
    pub fn new(dir: HeldDir, owner: u32) -> Self {
        Self { dir, owner, files: BTreeMap::new(), refused: BTreeSet::new(), refused_unnamed: 0 }
    }

    /// Says NAME was not read, once per name (and, past MAX_REFUSALS_NAMED names, once in all).
    fn refuse(&mut self, damage: &mut Vec<Damage>, pid: Option<u32>, name: &str, why: String) {
        if self.refused.contains(name) {
            return;
        }
        if self.refused.len() < MAX_REFUSALS_NAMED {
            self.refused.insert(name.to_string());
            damage.push(Damage { pid, detail: format!("{name}: {why}") });
        } else {
            self.refused_unnamed += 1;
            if self.refused_unnamed == 1 {
                damage.push(Damage {
                    pid: None,
                    detail: format!("more files than {MAX_REFUSALS_NAMED} were not read"),
                });
            }
        }
    }

    /// Appends to OUT every complete frame written since the last poll, file by file in
    /// order (a process's frames stay in the order it wrote them); returns what could not be read.
    pub fn poll(&mut self, out: &mut Vec<FileFrames>) -> Vec<Damage> {
        let mut damage = Vec::new();
        for entry in self.dir.entries().unwrap_or_default() {
            let Some(key) = entry.to_str().and_then(parse_name) else { continue };
            if !self.files.contains_key(&key) && self.files.len() >= MAX_FILES {
                let why = format!("more than {MAX_FILES} collector files at once: not read");
                self.refuse(&mut damage, Some(key.0), &entry.to_string_lossy(), why);
                continue;
            }
            self.files.entry(key).or_default();
        }
        let keys: Vec<(u32, u32)> = self.files.keys().copied().collect();
        for (index, &(pid, seq)) in keys.iter().enumerate() {
            let name = format!("{pid}-{seq:06}.lgc");
            let state = self.files.get_mut(&(pid, seq)).unwrap();
            if state.stopped {
                continue;
            }
            let mut frames = Vec::new();
            match read_new(&self.dir, &name, self.owner, state.offset, &mut frames) {
                Ok(ReadOutcome { consumed, at_end }) => {
                    state.offset += consumed;
                    let later_file = keys.get(index + 1).is_some_and(|&(p, _)| p == pid);
                    if at_end && later_file {
                        // the collector moved on: nothing more comes here
                        let _ = self.dir.unlink(OsStr::new(&name));
                        self.files.remove(&(pid, seq));
                    }
                }
                Err(ReadError::Refused(why)) => {
                    state.stopped = true;
                    self.refuse(&mut damage, Some(pid), &name, why);
                }
                Err(ReadError::Damaged(consumed, why)) => {
                    state.offset += consumed;
                    state.stopped = true;
                    damage.push(Damage {
                        pid: Some(pid),
                        detail: format!("{name} at byte {}: {why}", state.offset),
                    });
                }
            }
            if !frames.is_empty() {
                out.push(FileFrames { pid, frames });
            }
        }
        damage
    }
}

struct ReadOutcome {
    /// complete frames handed on, in bytes
    consumed: u64,
    /// everything in the file was handed on
    at_end: bool,
}

enum ReadError {
    /// not opened or not read at all
    Refused(String),
    /// read up to a frame that cannot be: (bytes handed on before it, why)
    Damaged(u64, String),
}

/// Reads what NAME holds past OFFSET, at most READ_PER_LOOK of it, and hands on the complete frames.
fn read_new(
    dir: &HeldDir,
    name: &str,
    owner: u32,
    offset: u64,
    out: &mut Vec<u8>,
) -> Result<ReadOutcome, ReadError> {
    let (mut file, stat) = dir
        .open_regular(OsStr::new(name))
        .map_err(|e| ReadError::Refused(format!("cannot open it: {e}")))?;
    if stat.st_uid != owner {
        return Err(ReadError::Refused(format!(
            "it belongs to uid {}, not the command's user ({owner})",
            stat.st_uid
        )));
    }
    let length = u64::try_from(stat.st_size).unwrap_or(0);
    if length > COLLECTOR_MAX_FILE {
        return Err(ReadError::Refused(format!(
            "it holds {length} bytes, more than a collector writes to one file ({COLLECTOR_MAX_FILE}): not read"
        )));
    }
    if length <= offset {
        return Ok(ReadOutcome { consumed: 0, at_end: true });
    }
    let available = length - offset;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| ReadError::Refused(format!("cannot seek in it: {e}")))?;
    let want = available.min(READ_PER_LOOK);
    let mut fresh = Vec::with_capacity(want as usize);
    file.take(want)
        .read_to_end(&mut fresh)
        .map_err(|e| ReadError::Refused(format!("cannot read it: {e}")))?;
    let mut at = 0usize;
    loop {
        match complete_frame(&fresh[at..]) {
            Ok(Some(len)) => at += len,
            Ok(None) => break,
            Err(why) => {
                out.extend_from_slice(&fresh[..at]);
                return Err(ReadError::Damaged(at as u64, why));
            }
        }
    }
    out.extend_from_slice(&fresh[..at]);
    Ok(ReadOutcome { consumed: at as u64, at_end: at as u64 == available })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_collectors_names_are_read() {
        assert_eq!(parse_name("1234-000001.lgc"), Some((1234, 1)));
        assert_eq!(parse_name("1-000002.lgc"), Some((1, 2)));
        for bad in [
            "1234-1.lgc",
            "x-000001.lgc",
            "1234-000001.lgc.tmp",
            "../1-000001.lgc",
            "-000001.lgc",
            "12345678901-000001.lgc",
            "1234_000001.lgc",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    fn frame(payload: &[u8], id: u16) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend(id.to_le_bytes());
        out.extend([0, 0]);
        out.extend(payload);
        out
    }

    #[test]
    fn a_frame_is_handed_on_only_when_all_of_it_is_there() {
        let whole = frame(&[1, 2, 3], 7);
        assert_eq!(complete_frame(&whole), Ok(Some(11)));
        assert_eq!(complete_frame(&whole[..10]), Ok(None));
        assert_eq!(complete_frame(&whole[..3]), Ok(None));
        let mut huge = whole.clone();
        huge[..4].copy_from_slice(&(COLLECTOR_MAX_FRAME as u32).to_le_bytes());
        assert!(complete_frame(&huge).is_err());
        let mut flagged = whole;
        flagged[6] = 1;
        assert!(complete_frame(&flagged).is_err());
    }

    fn one_file(pid: u32, frames: Vec<u8>) -> Vec<FileFrames> {
        vec![FileFrames { pid, frames }]
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("launchgap-channel-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn me() -> u32 {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn the_reader_takes_complete_frames_keeps_partial_ones_and_stops_at_damage() {
        let dir = scratch("frames");
        let mut reader = ChannelReader::new(HeldDir::open(&dir).unwrap(), me());
        let a = frame(b"first", 1);
        let b = frame(b"second", 2);
        let mut bytes = a.clone();
        bytes.extend(&b[..5]);
        std::fs::write(dir.join("42-000001.lgc"), &bytes).unwrap();
        let mut out = Vec::new();
        assert!(reader.poll(&mut out).is_empty());
        assert_eq!(out, one_file(42, a));
        bytes.extend(&b[5..]);
        std::fs::write(dir.join("42-000001.lgc"), &bytes).unwrap();
        out.clear();
        assert!(reader.poll(&mut out).is_empty());
        assert_eq!(out, one_file(42, b));
        // the next file exists: the first, read to its end, is removed
        let mut damaged = frame(b"third", 3);
        damaged.extend([0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]);
        std::fs::write(dir.join("42-000002.lgc"), &damaged).unwrap();
        out.clear();
        let damage = reader.poll(&mut out);
        assert_eq!(out, one_file(42, frame(b"third", 3)));
        assert!(!dir.join("42-000001.lgc").exists());
        assert_eq!(damage.len(), 1);
        assert!(
            damage[0]
                .detail
                .starts_with("42-000002.lgc at byte 13: a frame header reads 4294967295 bytes"),
            "{:?}",
            damage
        );
        // a link is never followed
        std::os::unix::fs::symlink("/etc/passwd", dir.join("43-000001.lgc")).unwrap();
        out.clear();
        let damage = reader.poll(&mut out);
        assert!(out.is_empty());
        assert_eq!(damage.len(), 1);
        assert!(damage[0].detail.starts_with("43-000001.lgc: cannot open it"), "{damage:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_larger_than_a_collector_writes_is_refused_unread_and_a_fifo_never_blocks() {
        let dir = scratch("bounds");
        let mut reader = ChannelReader::new(HeldDir::open(&dir).unwrap(), me());
        // sparse: claims 30 GiB, holds nothing (the audit's `truncate -s 30G` aborted the recorder)
        let huge = std::fs::File::create(dir.join("7-000001.lgc")).unwrap();
        huge.set_len(30 << 30).unwrap();
        nix::unistd::mkfifo(
            &dir.join("8-000001.lgc"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let mut out = Vec::new();
        let damage = reader.poll(&mut out);
        assert!(out.is_empty());
        let details: Vec<&str> = damage.iter().map(|d| d.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                format!("7-000001.lgc: it holds {} bytes, more than a collector writes to one file ({COLLECTOR_MAX_FILE}): not read", 30u64 << 30).as_str(),
                "8-000001.lgc: cannot open it: not a regular file (a FIFO)",
            ]
        );
        // said once
        assert!(reader.poll(&mut out).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_large_file_is_read_a_bounded_piece_at_a_time_and_whole_in_the_end() {
        let dir = scratch("pieces");
        let mut reader = ChannelReader::new(HeldDir::open(&dir).unwrap(), me());
        let one = frame(&[7u8; 4000], 1);
        let count = (READ_PER_LOOK as usize / one.len()) * 2 + 3;
        std::fs::write(dir.join("9-000001.lgc"), one.repeat(count)).unwrap();
        let mut sizes = Vec::new();
        loop {
            let mut out = Vec::new();
            assert!(reader.poll(&mut out).is_empty());
            let Some(read) = out.first() else { break };
            sizes.push(read.frames.len());
        }
        assert!(sizes.iter().all(|&n| n as u64 <= READ_PER_LOOK), "{sizes:?}");
        assert_eq!(sizes.len(), 3);
        assert_eq!(sizes.iter().sum::<usize>(), one.len() * count);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
