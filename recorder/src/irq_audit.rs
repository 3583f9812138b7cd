//! Interrupts the kernel counted that no probe saw. Each IRQ entry program
//! counts its hits per CPU (irq_seen in bpf/irq.bpf.c) while the audit
//! window is open: the recorder opens it for a table just before its first
//! read of the kernel's counter table and closes it just after its last
//! (a store into the mmapped .bss, no system call), so the probes count over
//! the kernel's counting window and barely more. Where the kernel counted
//! more (/proc/interrupts for IRQ lines and system vectors, /proc/softirqs
//! for softirqs), the difference never reached a probe: no ring-buffer drop,
//! no recursion miss, nothing in the trace would show it. Under heavy block
//! I/O in this VM about one recording in ten loses a few dozen disk
//! interrupts and their BLOCK softirqs this way; the trace records them as
//! `lost` rows (cause `not_seen_by_probe`).

use libbpf_rs::{MapCore, MapFlags};
use serde_json::Value;

use crate::proc_counters::Edge;
use crate::schema::{record, IRQ_VECTOR_NAMES as VECTOR_NAMES, RECORD_NAMES, SOFTIRQ_NAMES};
use crate::skel::types::irq_seen;
use crate::skel::LaunchgapSkel;

// SAFETY: arrays of u32; any bit pattern is valid.
unsafe impl plain::Plain for irq_seen {}

/// Opens and closes the probes' audit window (the `audit_*` flags in the
/// BPF programs' .bss, which libbpf maps into our memory).
pub struct Window {
    interrupts: *mut bool,
    softirqs: *mut bool,
}

/// Which reads of the kernel's counters a `Window::around` call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Start,
    End,
}

impl Window {
    /// None when the object has no writable .bss (never, with irq.bpf.c).
    pub fn new(skel: &mut LaunchgapSkel) -> Option<Self> {
        let bss = skel.maps.bss_data.as_deref_mut()?;
        Some(Self { interrupts: &mut bss.audit_interrupts, softirqs: &mut bss.audit_softirqs })
    }

    /// For proc_counters::snapshot: opens a table's window before its
    /// start read, closes it after its end read.
    pub fn around(&self, read: Read, table: &str, edge: Edge) {
        let flag = if table == "softirqs" { self.softirqs } else { self.interrupts };
        let open = match (read, edge) {
            (Read::Start, Edge::Before) => true,
            (Read::End, Edge::After) => false,
            _ => return,
        };
        // SAFETY: the pointer is into the mmapped .bss, alive as long as the
        // skeleton; the BPF side only reads the flag.
        unsafe { std::ptr::write_volatile(flag, open) };
    }
}

/// The entry programs' hit counts in the audit window, per CPU (index = CPU number).
pub struct ProbeCounts(Vec<irq_seen>);

pub fn counts(skel: &LaunchgapSkel) -> ProbeCounts {
    let zero = 0u32.to_ne_bytes();
    let per_cpu =
        skel.maps.irq_seen.lookup_percpu(&zero, MapFlags::ANY).ok().flatten().unwrap_or_default();
    ProbeCounts(
        per_cpu
            .iter()
            .map(|bytes| plain::from_bytes::<irq_seen>(bytes).copied().unwrap_or_default())
            .collect(),
    )
}

/// CPUs a target has run on (target mode records IRQs there only), by CPU number.
pub fn target_cpus(skel: &LaunchgapSkel) -> Vec<bool> {
    let zero = 0u32.to_ne_bytes();
    let per_cpu =
        skel.maps.target_cpu.lookup_percpu(&zero, MapFlags::ANY).ok().flatten().unwrap_or_default();
    per_cpu.iter().map(|flag| flag.first().is_some_and(|&f| f != 0)).collect()
}

/// What one /proc row counts, as the probes count it.
fn probe_count(seen: &irq_seen, table: &str, row: &str) -> Option<u32> {
    let vector = |name: &str| VECTOR_NAMES.iter().position(|v| *v == name).map(|i| seen.vector[i]);
    match (table, row) {
        ("softirqs", name) => {
            SOFTIRQ_NAMES.iter().position(|n| *n == name).and_then(|i| seen.soft.get(i).copied())
        }
        ("interrupts", "LOC") => vector("LOCAL_TIMER"),
        ("interrupts", "RES") => vector("RESCHEDULE"),
        ("interrupts", "CAL") => {
            Some(vector("CALL_FUNCTION")?.wrapping_add(vector("CALL_FUNCTION_SINGLE")?))
        }
        ("interrupts", "IWI") => vector("IRQ_WORK"),
        ("interrupts", line) => line.parse::<usize>().ok().and_then(|l| seen.hard.get(l).copied()),
        _ => None,
    }
}

/// The trace event a /proc row's interrupts would have been.
fn event_of(table: &str, row: &str) -> &'static str {
    let id = match (table, row) {
        ("softirqs", _) => record::SOFTIRQ,
        (_, "LOC" | "RES" | "CAL" | "IWI") => record::IRQ_VECTOR,
        _ => record::HARDIRQ,
    };
    RECORD_NAMES[id as usize]
}

/// Interrupts of one kind on one CPU that the kernel counted and no probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unseen {
    pub cpu: u32,
    pub event: &'static str,
    /// where the kernel counted them: "/proc/interrupts 36", "/proc/softirqs BLOCK"
    pub counter: String,
    pub count: u64,
}

/// Compares the kernel's counts between two proc_counters snapshots with
/// the probes' counts in the audit window around them, on the CPUs given
/// (every CPU in system mode).
pub fn unseen(
    kernel_start: &Value,
    kernel_end: &Value,
    probes: &ProbeCounts,
    audited_cpu: impl Fn(u32) -> bool,
) -> Vec<Unseen> {
    let mut out = Vec::new();
    for table in ["interrupts", "softirqs"] {
        let (start, end) = (&kernel_start[table], &kernel_end[table]);
        let (Some(cpus), Some(rows)) = (end["cpus"].as_array(), end["rows"].as_object()) else {
            continue;
        };
        for (row, counts) in rows {
            let Some(before_row) = start["rows"][row].as_array() else { continue };
            for (column, cpu) in cpus.iter().enumerate() {
                let Some(cpu) = cpu.as_u64().map(|c| c as u32).filter(|&c| audited_cpu(c)) else {
                    continue;
                };
                let (Some(before), Some(after)) =
                    (before_row.get(column).and_then(Value::as_u64), counts[column].as_u64())
                else {
                    continue;
                };
                let Some(seen) =
                    probes.0.get(cpu as usize).and_then(|s| probe_count(s, table, row))
                else {
                    continue;
                };
                let counted = after.saturating_sub(before);
                let seen = u64::from(seen);
                if counted > seen {
                    out.push(Unseen {
                        cpu,
                        event: event_of(table, row),
                        counter: format!("/proc/{table} {row}"),
                        count: counted - seen,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn probes(hard36: [u32; 2], block: [u32; 2], loc: [u32; 2]) -> ProbeCounts {
        ProbeCounts(
            (0..2)
                .map(|cpu| {
                    let mut s = irq_seen::default();
                    s.hard[36] = hard36[cpu];
                    s.soft[4] = block[cpu];
                    s.vector[0] = loc[cpu];
                    s
                })
                .collect(),
        )
    }

    fn kernel(hard36: [u64; 2], block: [u64; 2], loc: [u64; 2]) -> Value {
        json!({
            "interrupts": {"cpus": [0, 1], "rows": {"36": hard36, "LOC": loc}},
            "softirqs": {"cpus": [0, 1], "rows": {"BLOCK": block, "TIMER": [5, 5]}},
        })
    }

    #[test]
    fn what_the_kernel_counted_beyond_the_probes_is_unseen() {
        let found = unseen(
            &kernel([0, 100], [0, 100], [10, 10]),
            &kernel([0, 150], [0, 150], [20, 20]),
            &probes([0, 20], [0, 20], [10, 8]),
            |_| true,
        );
        assert_eq!(
            found,
            vec![
                Unseen {
                    cpu: 1,
                    event: "hardirq",
                    counter: "/proc/interrupts 36".into(),
                    count: 30
                },
                Unseen {
                    cpu: 1,
                    event: "irq_vector",
                    counter: "/proc/interrupts LOC".into(),
                    count: 2
                },
                Unseen {
                    cpu: 1,
                    event: "softirq",
                    counter: "/proc/softirqs BLOCK".into(),
                    count: 30
                },
            ]
        );
    }

    #[test]
    fn probes_that_saw_as_many_or_more_report_nothing() {
        let found = unseen(
            &kernel([0, 0], [0, 0], [0, 0]),
            &kernel([0, 10], [3, 0], [0, 0]),
            &probes([0, 12], [3, 0], [0, 0]),
            |_| true,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn only_audited_cpus_count() {
        let found = unseen(
            &kernel([0, 0], [0, 0], [0, 0]),
            &kernel([5, 5], [0, 0], [0, 0]),
            &probes([0, 0], [0, 0], [0, 0]),
            |cpu| cpu == 0,
        );
        assert_eq!(
            found,
            vec![Unseen {
                cpu: 0,
                event: "hardirq",
                counter: "/proc/interrupts 36".into(),
                count: 5
            }]
        );
    }
}
