//! Which collector frames the recorder believes. The channel belongs to the command's
//! user, so anything in it may have been written by the workload rather than by its
//! collector (docs/security.md, "The collector channel"). A frame becomes a row only if
//! it decodes, says what its collector can say (`schema::collector_frame_refusal`,
//! generated from the schema's [collector] values), carries the pid its file is named
//! after, and that process is part of the recorded command; a `lost` frame's detail must
//! be the collector's own (`cupti_dropped`, with that same pid). Everything else is
//! counted, by process and reason, and becomes `lost` rows at the end (`frames_refused`),
//! so nothing vanishes and nothing forged is shown as recorded.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Value};

use crate::schema::{self, Row};

/// Why a frame was not believed.
pub const UNDECODABLE: &str = "it does not decode as any frame the collector writes";
pub const OUTSIDE_THE_COMMAND: &str =
    "its file is named after a process that is not the recorded command's";
pub const FOREIGN_LOSS: &str =
    "its detail is not the collector's own (cupti_dropped, with its pid)";
pub const NOT_ITS_THREAD: &str = "it names a thread that is not one of its process's";

/// Whether a pid belongs to the command: read from /proc only for a pid the trace's own
/// fork rows did not show (a fork record the ring buffer dropped).
pub type Ancestry = dyn Fn(u32, u32) -> bool + Send;
/// Whether (pid, tid) may be a thread of pid: false only where /proc shows the process alive and
/// without that thread (a process gone is judged by the analysis, from the trace's own rows).
pub type Membership = dyn Fn(u32, u32) -> bool + Send;

pub struct FrameGate {
    /// the command started
    root: u32,
    /// the command and every process the fork rows showed forked from it
    workload: HashSet<u32>,
    /// pids asked of /proc, and its answer
    asked: HashMap<u32, bool>,
    descends: Box<Ancestry>,
    thread_of: Box<Membership>,
    /// frames refused, by (pid its file names, why)
    refused: BTreeMap<(u32, &'static str), u64>,
}

/// Whether TID may be a thread of PID, by /proc: a live PID must list it; a PID gone cannot say.
pub fn thread_of_proc(pid: u32, tid: u32) -> bool {
    let process = std::path::PathBuf::from(format!("/proc/{pid}/task"));
    !process.is_dir() || process.join(tid.to_string()).is_dir()
}

/// Whether PID descends from ROOT, by /proc's parent links (a live process only).
pub fn descends_from_proc(pid: u32, root: u32) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        if at == root {
            return true;
        }
        let Some(stat) = launchgap_record::names::read_stat(format!("/proc/{at}/stat")) else {
            return false;
        };
        let parent = launchgap_record::names::stat_fields_after_name(&stat)
            .and_then(|mut f| f.nth(1))
            .and_then(|p| p.parse().ok());
        match parent {
            Some(parent) if parent > 1 => at = parent,
            _ => return false,
        }
    }
    false
}

impl FrameGate {
    pub fn new(root: u32, descends: Box<Ancestry>, thread_of: Box<Membership>) -> Self {
        Self {
            root,
            workload: HashSet::from([root]),
            asked: HashMap::new(),
            descends,
            thread_of,
            refused: BTreeMap::new(),
        }
    }

    /// Every row on its way into the trace: fork rows name the command's processes.
    pub fn observe(&mut self, row: &Row) {
        if let Row::Fork(fork) = row {
            if self.workload.contains(&fork.pid) {
                self.workload.insert(fork.child_pid);
            }
        }
    }

    fn of_the_command(&mut self, pid: u32) -> bool {
        if self.workload.contains(&pid) {
            return true;
        }
        let (root, descends) = (self.root, &self.descends);
        *self.asked.entry(pid).or_insert_with(|| descends(pid, root))
    }

    /// The row a frame from FILE_PID's file holds, if it is believed; else counted.
    pub fn admit<'a>(&mut self, file_pid: u32, frame: u16, payload: &'a [u8]) -> Option<Row<'a>> {
        let verdict = match schema::decode_collector_frame(frame, payload) {
            None => Err(UNDECODABLE),
            Some(_) if !self.of_the_command(file_pid) => Err(OUTSIDE_THE_COMMAND),
            Some(row) => match schema::collector_frame_refusal(&row, file_pid) {
                Some(why) => Err(why),
                None if matches!(row, Row::Lost(ref lost) if !is_own_loss(lost.detail, file_pid)) => {
                    Err(FOREIGN_LOSS)
                }
                // a thread named launchgap's is left out of every culprit table: only one of the process's own
                None if matches!(row, Row::GpuCollectorThread(ref t) if !(self.thread_of)(t.pid, t.tid)) => {
                    Err(NOT_ITS_THREAD)
                }
                None => Ok(row),
            },
        };
        verdict.map_err(|why| *self.refused.entry((file_pid, why)).or_default() += 1).ok()
    }

    /// The frames refused, as `lost` rows' (count, detail JSON).
    pub fn refusals(&self) -> Vec<(u64, String)> {
        self.refused
            .iter()
            .map(|(&(pid, why), &count)| {
                (count, json!({"cause": "frames_refused", "pid": pid, "why": why}).to_string())
            })
            .collect()
    }

    /// All frames refused.
    pub fn refused(&self) -> u64 {
        self.refused.values().fold(0, |sum, n| sum.saturating_add(*n))
    }
}

/// A collector's `lost` frame: CUPTI's dropped records in its own process.
fn is_own_loss(detail: Option<&str>, file_pid: u32) -> bool {
    let Some(value) = detail.and_then(|d| serde_json::from_str::<Value>(d).ok()) else {
        return false;
    };
    let fields = value.as_object().map(|o| o.len());
    value.get("cause").and_then(Value::as_str) == Some("cupti_dropped")
        && value.get("pid").and_then(Value::as_u64) == Some(u64::from(file_pid))
        && fields == Some(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ForkRow, GpuKernelRow, LostRow};

    /// The frame the collector would write for ROW (the recorder's tests have no C encoder:
    /// the layout, from the schema's [collector] comment, written out for the kinds used here).
    fn kernel_payload(pid: u32) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(5u64.to_le_bytes()); // ts_ns
        out.extend(pid.to_le_bytes());
        for _ in 0..7 {
            out.extend(1u32.to_le_bytes()); // grid, block, shared_mem
        }
        out.extend(9u64.to_le_bytes()); // end_ns
        for _ in 0..4 {
            out.extend(0u32.to_le_bytes()); // device, context, stream, correlation
        }
        out.extend(1u16.to_le_bytes());
        out.push(b'k');
        out.push(0); // graph_id null
        out
    }

    fn string(out: &mut Vec<u8>, text: &str) {
        out.extend((text.len() as u16).to_le_bytes());
        out.extend(text.as_bytes());
    }

    fn lost_payload(event: &str, count: u64, detail: &str) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(5u64.to_le_bytes());
        out.push(0); // cpu null
        string(&mut out, event);
        out.extend(count.to_le_bytes());
        out.extend(1u64.to_le_bytes());
        out.push(1);
        string(&mut out, detail);
        out
    }

    fn state_payload(pid: u32, state: &str) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(5u64.to_le_bytes());
        out.extend(pid.to_le_bytes());
        string(&mut out, "{}");
        string(&mut out, state);
        out
    }

    fn gate() -> FrameGate {
        // /proc says 77 is the command's too (its fork row was dropped); nothing else is; 101's threads are 101 and 102
        FrameGate::new(
            100,
            Box::new(|pid, _| pid == 77),
            Box::new(|pid, tid| pid != 101 || tid == 101 || tid == 102),
        )
    }

    fn thread_payload(pid: u32, tid: u32) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(5u64.to_le_bytes());
        out.extend(pid.to_le_bytes());
        out.extend(tid.to_le_bytes());
        out
    }

    #[test]
    fn a_collector_thread_is_believed_only_of_its_own_process() {
        let mut gate = gate();
        gate.observe(&Row::Fork(ForkRow { pid: 100, child_pid: 101, ..Default::default() }));
        assert!(matches!(
            gate.admit(101, 9, &thread_payload(101, 102)),
            Some(Row::GpuCollectorThread(_))
        ));
        assert!(gate.admit(101, 9, &thread_payload(101, 555)).is_none(), "not a thread of 101");
        assert!(gate.admit(101, 9, &thread_payload(100, 100)).is_none(), "another process's");
        let refusal = |pid: u32, why: &str| {
            json!({"cause": "frames_refused", "pid": pid, "why": why}).to_string()
        };
        assert_eq!(
            gate.refusals(),
            vec![(1, refusal(101, NOT_ITS_THREAD)), (1, refusal(101, "its pid is not its file's"))]
        );
    }

    #[test]
    fn only_what_the_commands_collectors_can_say_is_believed_and_the_rest_counted() {
        let mut gate = gate();
        gate.observe(&Row::Fork(ForkRow { pid: 100, child_pid: 101, ..Default::default() }));
        gate.observe(&Row::Fork(ForkRow { pid: 5, child_pid: 6, ..Default::default() }));
        let kernel = kernel_payload;
        assert_eq!(
            gate.admit(101, 1, &kernel(101)).map(|r| r.kind()),
            Some(schema::Kind::GpuKernel)
        );
        assert!(matches!(
            gate.admit(100, 1, &kernel(100)),
            Some(Row::GpuKernel(GpuKernelRow { pid: 100, .. }))
        ));
        assert!(
            gate.admit(77, 1, &kernel(77)).is_some(),
            "/proc's answer counts where no fork row was seen"
        );
        assert!(gate.admit(101, 1, &kernel(1)).is_none(), "a kernel for pid 1 from 101's file");
        assert!(gate.admit(6, 1, &kernel(6)).is_none(), "a process outside the command");
        assert!(gate.admit(101, 1, &kernel(101)[..10]).is_none(), "cut short");
        assert!(gate.admit(101, 9, &kernel(101)).is_none(), "no frame 9");
        let own = r#"{"cause": "cupti_dropped", "pid": 101}"#;
        assert!(matches!(
            gate.admit(101, 8, &lost_payload("gpu_activity", 3, own)),
            Some(Row::Lost(LostRow { lost_count: 3, .. }))
        ));
        assert!(gate.admit(101, 8, &lost_payload("switch\u{1b}[2J", u64::MAX, own)).is_none());
        assert!(gate
            .admit(
                101,
                8,
                &lost_payload("gpu_activity", 4, r#"{"cause": "cupti_dropped", "pid": 1}"#)
            )
            .is_none());
        assert!(gate.admit(101, 7, &state_payload(101, "stopped")).is_some());
        assert!(gate.admit(101, 7, &state_payload(101, "hacked")).is_none());
        assert!(gate.admit(101, 7, &state_payload(1, "failed")).is_none());
        let refusal = |pid: u32, why: &str| {
            json!({"cause": "frames_refused", "pid": pid, "why": why}).to_string()
        };
        assert_eq!(
            gate.refusals(),
            vec![
                (1, refusal(6, OUTSIDE_THE_COMMAND)),
                (2, refusal(101, UNDECODABLE)),
                (1, refusal(101, FOREIGN_LOSS)),
                (1, refusal(101, "its lost_event is not one its collector sends")),
                (2, refusal(101, "its pid is not its file's")),
                (1, refusal(101, "its state is not one its collector sends")),
            ]
        );
        assert_eq!(gate.refused(), 8);
    }
}
