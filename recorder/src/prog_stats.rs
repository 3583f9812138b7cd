//! Events the kernel never let a program see. A BPF program is skipped,
//! without a trace of it in the ring buffer, when it would run again on a
//! CPU where it is already running (a tracepoint hit from an interrupt that
//! arrived while the program ran in task context, say): the kernel counts
//! each such skip in the program's `recursion_misses` (bpf_prog_info, read
//! with BPF_OBJ_GET_INFO_BY_FD). The recorder reads the counts when tracing
//! starts and when it stops and writes the difference into the trace as
//! `lost` rows, one per program, so that such a loss is never silent.

use std::collections::BTreeMap;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::Skel;
use libbpf_rs::AsRawLibbpf;

use crate::schema::{record, IRQ_VECTOR_NAMES, RECORD_NAMES};
use crate::skel::LaunchgapSkel;

/// Which record type a program makes, so a skip counts against it: the
/// `lost_event` of its `lost` rows (schema::RECORD_NAMES; "unknown" otherwise).
pub fn event_of_program(name: &str, section: &str) -> &'static str {
    let id = if let Some(tracepoint) = section.strip_prefix("tp_btf/") {
        match tracepoint {
            "sched_switch" => record::SWITCH,
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => record::WAKEUP,
            "sched_migrate_task" => record::MIGRATE,
            "sched_process_fork" => record::FORK,
            "sched_process_exec" => record::EXEC,
            "sched_process_exit" => record::EXIT,
            "task_rename" => record::COMM,
            "cgroup_mkdir" => record::CGROUP_MADE,
            "irq_handler_entry" | "irq_handler_exit" => record::HARDIRQ,
            "softirq_entry" | "softirq_exit" => record::SOFTIRQ,
            // a system vector's: its name in lower case, then _entry or _exit (irq_programs.bpf.h)
            t if t.strip_suffix("_entry").or_else(|| t.strip_suffix("_exit")).is_some_and(
                |vector| IRQ_VECTOR_NAMES.iter().any(|v| v.eq_ignore_ascii_case(vector)),
            ) =>
            {
                record::IRQ_VECTOR
            }
            _ => 0,
        }
    } else {
        match name {
            "launch_kernel" | "launch_kernel_ex" | "graph_launch" | "runtime_entry" => {
                record::LAUNCH
            }
            "sync_enter" | "memcpy_enter" | "sync_exit" => record::SYNC,
            _ => 0,
        }
    };
    RECORD_NAMES[id as usize]
}

/// A program's skips so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramMisses {
    pub program: String,
    pub event: &'static str,
    pub misses: u64,
}

/// bpf_prog_info.recursion_misses of one loaded program (libbpf-rs's
/// ProgramInfo reads it only while walking every program on the host).
fn recursion_misses(prog_fd: i32) -> Option<u64> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: the kernel fills at most `len` bytes of `info`, which we own.
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(prog_fd, &mut info, &mut len) };
    (rc == 0).then_some(info.recursion_misses)
}

/// Every loaded program's recursion_misses now, by program name.
pub fn snapshot(skel: &LaunchgapSkel) -> BTreeMap<String, ProgramMisses> {
    let mut out = BTreeMap::new();
    for prog in skel.object().progs() {
        // SAFETY: the descriptor of a program of this object; negative if never loaded
        let fd = unsafe { libbpf_sys::bpf_program__fd(prog.as_libbpf_object().as_ptr()) };
        let Some(misses) = (fd >= 0).then(|| recursion_misses(fd)).flatten() else { continue };
        let program = prog.name().to_string_lossy().into_owned();
        let event = event_of_program(&program, &prog.section().to_string_lossy());
        out.insert(program.clone(), ProgramMisses { program, event, misses });
    }
    out
}

/// Skips between two snapshots, for the programs that had any.
pub fn misses_between(
    start: &BTreeMap<String, ProgramMisses>,
    end: &BTreeMap<String, ProgramMisses>,
) -> Vec<ProgramMisses> {
    end.values()
        .filter_map(|e| {
            let before = start.get(&e.program).map_or(0, |s| s.misses);
            let misses = e.misses.saturating_sub(before);
            (misses > 0).then(|| ProgramMisses { misses, ..e.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_map_to_the_events_they_record() {
        assert_eq!(event_of_program("handle_irq_exit", "tp_btf/irq_handler_exit"), "hardirq");
        assert_eq!(event_of_program("handle_softirq_entry", "tp_btf/softirq_entry"), "softirq");
        assert_eq!(event_of_program("x", "tp_btf/call_function_single_entry"), "irq_vector");
        assert_eq!(event_of_program("x", "tp_btf/irq_work_exit"), "irq_vector");
        assert_eq!(event_of_program("x", "tp_btf/sched_wakeup_new"), "wakeup");
        assert_eq!(event_of_program("sync_exit", "uretprobe"), "sync");
        assert_eq!(event_of_program("launch_kernel_ex", "uprobe"), "launch");
        assert_eq!(event_of_program("something_new", "uprobe"), "unknown");
        for vector in IRQ_VECTOR_NAMES {
            for end in ["entry", "exit"] {
                assert_eq!(
                    event_of_program("x", &format!("tp_btf/{}_{end}", vector.to_lowercase())),
                    "irq_vector"
                );
            }
        }
    }

    #[test]
    fn only_new_misses_count() {
        let at = |misses| {
            BTreeMap::from([
                ("a".to_string(), ProgramMisses { program: "a".into(), event: "hardirq", misses }),
                (
                    "b".to_string(),
                    ProgramMisses { program: "b".into(), event: "wakeup", misses: 4 },
                ),
            ])
        };
        assert_eq!(
            misses_between(&at(2), &at(5)),
            vec![ProgramMisses { program: "a".into(), event: "hardirq", misses: 3 }]
        );
        assert!(misses_between(&at(5), &at(5)).is_empty());
    }
}
