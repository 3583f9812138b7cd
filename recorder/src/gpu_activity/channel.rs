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

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::schema::COLLECTOR_MAX_FRAME;

/// A frame's header: u32 payload length, u16 frame id, u16 zero.
pub const FRAME_HEADER: usize = 8;

/// Something in the channel that was not read, and why (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub pid: Option<u32>,
    pub detail: String,
}

#[derive(Debug, Default)]
struct FileState {
    /// bytes read and handed on (complete frames only)
    offset: u64,
    /// reading stopped: the file is damaged
    stopped: bool,
}

pub struct ChannelReader {
    dir: PathBuf,
    /// the uid the files must belong to
    owner: u32,
    /// by (pid, sequence number)
    files: BTreeMap<(u32, u32), FileState>,
    /// names already reported as not read
    refused: std::collections::BTreeSet<String>,
}

/// `PID-NNNNNN.lgc` -> (pid, sequence number).
pub fn parse_name(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".lgc")?;
    let (pid, seq) = stem.split_once('-')?;
    let digits = |s: &str, max: usize| !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit());
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
        return Err(format!("a frame header reads {payload} bytes of frame {}", u16::from_le_bytes([header[4], header[5]])));
    }
    Ok((bytes.len() >= FRAME_HEADER + payload).then_some(FRAME_HEADER + payload))
}

impl ChannelReader {
    pub fn new(dir: &Path, owner: u32) -> Self {
        Self { dir: dir.to_path_buf(), owner, files: BTreeMap::new(), refused: Default::default() }
    }

    /// Appends to OUT every complete frame written since the last poll, file by file in
    /// order (a process's frames stay in the order it wrote them); returns what could not be read.
    pub fn poll(&mut self, out: &mut Vec<u8>) -> Vec<Damage> {
        let mut damage = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(key) = parse_name(&name) {
                    self.files.entry(key).or_default();
                }
            }
        }
        let keys: Vec<(u32, u32)> = self.files.keys().copied().collect();
        for (index, &(pid, seq)) in keys.iter().enumerate() {
            let name = format!("{pid}-{seq:06}.lgc");
            let state = self.files.get_mut(&(pid, seq)).unwrap();
            if state.stopped {
                continue;
            }
            match read_new(&self.dir.join(&name), self.owner, state.offset, out) {
                Ok(ReadOutcome { consumed, at_end }) => {
                    state.offset += consumed;
                    let later_file = keys.get(index + 1).is_some_and(|&(p, _)| p == pid);
                    if at_end && later_file {
                        // the collector moved on: nothing more comes here
                        let _ = std::fs::remove_file(self.dir.join(&name));
                        self.files.remove(&(pid, seq));
                    }
                }
                Err(ReadError::Refused(why)) => {
                    state.stopped = true;
                    if self.refused.insert(name.clone()) {
                        damage.push(Damage { pid: Some(pid), detail: format!("{name}: {why}") });
                    }
                }
                Err(ReadError::Damaged(consumed, why)) => {
                    state.offset += consumed;
                    state.stopped = true;
                    damage.push(Damage { pid: Some(pid), detail: format!("{name} at byte {}: {why}", state.offset) });
                }
            }
        }
        damage
    }
}

struct ReadOutcome {
    /// complete frames handed on, in bytes
    consumed: u64,
    /// nothing but a partial frame (or nothing) is left
    at_end: bool,
}

enum ReadError {
    /// not opened or not read at all
    Refused(String),
    /// read up to a frame that cannot be: (bytes handed on before it, why)
    Damaged(u64, String),
}

fn read_new(path: &Path, owner: u32, offset: u64, out: &mut Vec<u8>) -> Result<ReadOutcome, ReadError> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| ReadError::Refused(format!("cannot open it: {e}")))?;
    let meta = file.metadata().map_err(|e| ReadError::Refused(format!("cannot stat it: {e}")))?;
    if !meta.file_type().is_file() {
        return Err(ReadError::Refused("not a regular file".to_string()));
    }
    if meta.uid() != owner {
        return Err(ReadError::Refused(format!("it belongs to uid {}, not the command's user ({owner})", meta.uid())));
    }
    if meta.len() <= offset {
        return Ok(ReadOutcome { consumed: 0, at_end: true });
    }
    file.seek(SeekFrom::Start(offset)).map_err(|e| ReadError::Refused(format!("cannot seek in it: {e}")))?;
    let mut fresh = Vec::with_capacity((meta.len() - offset) as usize);
    file.take(meta.len() - offset).read_to_end(&mut fresh).map_err(|e| ReadError::Refused(format!("cannot read it: {e}")))?;
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
    Ok(ReadOutcome { consumed: at as u64, at_end: at == fresh.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_collectors_names_are_read() {
        assert_eq!(parse_name("1234-000001.lgc"), Some((1234, 1)));
        assert_eq!(parse_name("1-000002.lgc"), Some((1, 2)));
        for bad in ["1234-1.lgc", "x-000001.lgc", "1234-000001.lgc.tmp", "../1-000001.lgc", "-000001.lgc", "12345678901-000001.lgc", "1234_000001.lgc"] {
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

    #[test]
    fn the_reader_takes_complete_frames_keeps_partial_ones_and_stops_at_damage() {
        let dir = std::env::temp_dir().join(format!("launchgap-channel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let me = unsafe { libc::geteuid() };
        let mut reader = ChannelReader::new(&dir, me);
        let a = frame(b"first", 1);
        let b = frame(b"second", 2);
        let mut bytes = a.clone();
        bytes.extend(&b[..5]);
        std::fs::write(dir.join("42-000001.lgc"), &bytes).unwrap();
        let mut out = Vec::new();
        assert!(reader.poll(&mut out).is_empty());
        assert_eq!(out, a);
        bytes.extend(&b[5..]);
        std::fs::write(dir.join("42-000001.lgc"), &bytes).unwrap();
        out.clear();
        assert!(reader.poll(&mut out).is_empty());
        assert_eq!(out, b);
        // the next file exists: the first, read to its end, is removed
        let mut damaged = frame(b"third", 3);
        damaged.extend([0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]);
        std::fs::write(dir.join("42-000002.lgc"), &damaged).unwrap();
        out.clear();
        let damage = reader.poll(&mut out);
        assert_eq!(out, frame(b"third", 3));
        assert!(!dir.join("42-000001.lgc").exists());
        assert_eq!(damage.len(), 1);
        assert!(damage[0].detail.starts_with("42-000002.lgc at byte 13: a frame header reads 4294967295 bytes"), "{:?}", damage);
        // a link is never followed
        std::os::unix::fs::symlink("/etc/passwd", dir.join("43-000001.lgc")).unwrap();
        out.clear();
        let damage = reader.poll(&mut out);
        assert!(out.is_empty());
        assert_eq!(damage.len(), 1);
        assert!(damage[0].detail.starts_with("43-000001.lgc: cannot open it"), "{damage:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
