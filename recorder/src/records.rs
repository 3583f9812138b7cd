//! Raw ring-buffer records (layouts in bpf/events.h, Rust types from the
//! skeleton) decoded into trace rows. Pure: bytes in, rows out.

use crate::cuda_api;
use crate::skel::types::{
    comm_event, event_header, exec_event, exit_event, fork_event, irq_event, launch_batch, launch_event,
    migrate_event, runtime_only_event, switch_event, sync_event, wakeup_event,
};
use crate::trace_writer::Row;

// SAFETY: plain C structs of integers and byte arrays; any bit pattern is valid.
unsafe impl plain::Plain for event_header {}
unsafe impl plain::Plain for launch_event {}
unsafe impl plain::Plain for launch_batch {}
unsafe impl plain::Plain for sync_event {}
unsafe impl plain::Plain for switch_event {}
unsafe impl plain::Plain for wakeup_event {}
unsafe impl plain::Plain for migrate_event {}
unsafe impl plain::Plain for fork_event {}
unsafe impl plain::Plain for exec_event {}
unsafe impl plain::Plain for exit_event {}
unsafe impl plain::Plain for comm_event {}
unsafe impl plain::Plain for irq_event {}
unsafe impl plain::Plain for runtime_only_event {}

/// enum event_type in events.h
pub mod event_type {
    pub const LAUNCH: u32 = 1;
    pub const SYNC: u32 = 2;
    pub const SWITCH: u32 = 3;
    pub const WAKEUP: u32 = 4;
    pub const MIGRATE: u32 = 5;
    pub const FORK: u32 = 6;
    pub const EXEC: u32 = 7;
    pub const EXIT: u32 = 8;
    pub const COMM: u32 = 9;
    pub const HARDIRQ: u32 = 10;
    pub const SOFTIRQ: u32 = 11;
    pub const IRQ_VECTOR: u32 = 12;
    pub const RUNTIME_ONLY: u32 = 13;
    pub const COUNT: u32 = 14;
}

/// RECORD_LAUNCH_BATCH in events.h: staged launches written together (not an event type).
pub const RECORD_LAUNCH_BATCH: u32 = 100;

/// The trace's `event` value for each event type (index = enum event_type).
pub const EVENT_NAMES: [&str; event_type::COUNT as usize] = [
    "unknown", "launch", "sync", "switch", "wakeup", "migrate", "fork", "exec", "exit", "comm", "hardirq",
    "softirq", "irq_vector", "runtime_only",
];

const WAKEUP_VARIANTS: [&str; 3] = ["waking", "wakeup", "wakeup_new"];

/// include/linux/interrupt.h softirq vectors.
pub const SOFTIRQ_NAMES: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// enum irq_vector_kind in events.h
pub const VECTOR_NAMES: [&str; 5] =
    ["LOCAL_TIMER", "RESCHEDULE", "CALL_FUNCTION", "CALL_FUNCTION_SINGLE", "IRQ_WORK"];

fn c_str(bytes: &[i8]) -> &str {
    // SAFETY: i8 and u8 have the same layout.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len()) };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).unwrap_or("?")
}

fn copy_of<T: plain::Plain + Default + Copy>(data: &[u8]) -> Option<T> {
    let mut value = T::default();
    plain::copy_from_bytes(&mut value, data).ok()?;
    Some(value)
}

fn header_row(h: &event_header, event: &'static str) -> Row<'static> {
    Row { ts_ns: h.ts_ns, event, cpu: Some(h.cpu), pid: Some(h.pid), tid: Some(h.tid), ..Default::default() }
}

/// The type of a raw record, or None if it is too short to have a header.
pub fn record_type(data: &[u8]) -> Option<u32> {
    copy_of::<event_header>(data).map(|h| h.r#type)
}

/// Decodes one record and hands its row to `emit`. Returns false for a
/// record this recorder does not understand (never expected).
pub fn decode(data: &[u8], emit: &mut impl FnMut(&Row)) -> bool {
    let Some(kind) = record_type(data) else { return false };
    match kind {
        RECORD_LAUNCH_BATCH => return decode_launch_batch(data, emit),
        event_type::LAUNCH => {
            let Some(e) = copy_of::<launch_event>(data) else { return false };
            emit(&Row {
                api: cuda_api::name_of(e.api),
                runtime_api: cuda_api::name_of(e.runtime_api),
                func: Some(e.func),
                stream: Some(e.stream),
                grid: Some(e.grid),
                block: Some(e.block),
                shared_mem: Some(e.shared_mem),
                ..header_row(&e.hdr, "launch")
            });
        }
        event_type::SYNC => {
            let Some(e) = copy_of::<sync_event>(data) else { return false };
            emit(&Row {
                duration_ns: Some(e.duration_ns),
                api: cuda_api::name_of(e.api),
                runtime_api: cuda_api::name_of(e.runtime_api),
                stream: Some(e.stream),
                bytes: Some(e.bytes),
                ..header_row(&e.hdr, "sync")
            });
        }
        event_type::RUNTIME_ONLY => {
            let Some(e) = copy_of::<runtime_only_event>(data) else { return false };
            emit(&Row {
                duration_ns: Some(e.duration_ns),
                runtime_api: cuda_api::name_of(e.runtime_api),
                return_code: Some(e.return_code),
                ..header_row(&e.hdr, "runtime_only")
            });
        }
        event_type::SWITCH => {
            let Some(e) = copy_of::<switch_event>(data) else { return false };
            emit(&Row {
                comm: Some(c_str(&e.prev_comm)),
                prev_state: Some(e.prev_state),
                preempt: Some(e.preempt != 0),
                voluntary: Some(e.voluntary != 0),
                nvcsw: Some(e.prev_nvcsw),
                nivcsw: Some(e.prev_nivcsw),
                prio: Some(e.prev_prio),
                next_pid: Some(e.next_pid),
                next_tid: Some(e.next_tid),
                next_comm: Some(c_str(&e.next_comm)),
                next_prio: Some(e.next_prio),
                ..header_row(&e.hdr, "switch")
            });
        }
        event_type::WAKEUP => {
            let Some(e) = copy_of::<wakeup_event>(data) else { return false };
            let Some(&variant) = WAKEUP_VARIANTS.get(e.variant as usize) else { return false };
            emit(&Row {
                comm: Some(c_str(&e.comm)),
                target_cpu: Some(e.target_cpu),
                waker_tid: Some(e.waker_tid),
                prio: Some(e.prio),
                ..header_row(&e.hdr, variant)
            });
        }
        event_type::MIGRATE => {
            let Some(e) = copy_of::<migrate_event>(data) else { return false };
            emit(&Row { orig_cpu: Some(e.orig_cpu), dest_cpu: Some(e.dest_cpu), ..header_row(&e.hdr, "migrate") });
        }
        event_type::FORK => {
            let Some(e) = copy_of::<fork_event>(data) else { return false };
            emit(&Row {
                comm: Some(c_str(&e.comm)),
                child_pid: Some(e.child_pid),
                child_tid: Some(e.child_tid),
                ..header_row(&e.hdr, "fork")
            });
        }
        event_type::EXEC => {
            let Some(e) = copy_of::<exec_event>(data) else { return false };
            emit(&Row { comm: Some(c_str(&e.comm)), filename: Some(c_str(&e.filename)), ..header_row(&e.hdr, "exec") });
        }
        event_type::EXIT => {
            let Some(e) = copy_of::<exit_event>(data) else { return false };
            emit(&Row { comm: Some(c_str(&e.comm)), exit_code: Some(e.exit_code), ..header_row(&e.hdr, "exit") });
        }
        event_type::COMM => {
            let Some(e) = copy_of::<comm_event>(data) else { return false };
            emit(&Row {
                comm: Some(c_str(&e.new_comm)),
                old_comm: Some(c_str(&e.old_comm)),
                ..header_row(&e.hdr, "comm")
            });
        }
        event_type::HARDIRQ | event_type::SOFTIRQ | event_type::IRQ_VECTOR => {
            let Some(e) = copy_of::<irq_event>(data) else { return false };
            let name = match kind {
                event_type::HARDIRQ => c_str(&e.name),
                event_type::SOFTIRQ => SOFTIRQ_NAMES.get(e.irq as usize).copied().unwrap_or("?"),
                _ => VECTOR_NAMES.get(e.irq as usize).copied().unwrap_or("?"),
            };
            emit(&Row {
                duration_ns: Some(e.duration_ns),
                irq: Some(e.irq),
                irq_name: Some(name),
                ..header_row(&e.hdr, EVENT_NAMES[kind as usize])
            });
        }
        _ => return false,
    }
    true
}

/// LAUNCH_BATCH_SIZE in events.h, from the layout itself.
const LAUNCH_BATCH_CAPACITY: usize = (std::mem::size_of::<launch_batch>() - std::mem::offset_of!(launch_batch, launches))
    / std::mem::size_of::<launch_event>();

/// A batch holds `count` complete launch records after its own header.
fn decode_launch_batch(data: &[u8], emit: &mut impl FnMut(&Row)) -> bool {
    let start = std::mem::offset_of!(launch_batch, launches);
    let count_at = std::mem::offset_of!(launch_batch, count);
    let Some(count) = data.get(count_at..count_at + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]])) else {
        return false;
    };
    let size = std::mem::size_of::<launch_event>();
    let count = count as usize;
    if count > LAUNCH_BATCH_CAPACITY || data.len() < start + count * size {
        return false;
    }
    data[start..start + count * size].chunks_exact(size).all(|launch| decode(launch, emit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of<T: Copy>(value: &T) -> Vec<u8> {
        // SAFETY: reading the bytes of a plain C struct.
        unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>()) }.to_vec()
    }

    fn comm(name: &str) -> [i8; 16] {
        let mut out = [0i8; 16];
        for (i, b) in name.bytes().take(15).enumerate() {
            out[i] = b as i8;
        }
        out
    }

    #[test]
    fn launch_record_becomes_a_launch_row_with_both_api_names() {
        let mut e = launch_event::default();
        e.hdr = event_header { ts_ns: 42, r#type: event_type::LAUNCH, cpu: 1, pid: 100, tid: 101 };
        e.func = 0xdead;
        e.stream = 7;
        e.grid = [4, 2, 1];
        e.block = [128, 1, 1];
        e.shared_mem = 4096;
        e.api = cuda_api::cookie_of(0) as u16; // cuLaunchKernel
        e.runtime_api = cuda_api::cookie_of(16) as u16; // cudaLaunchKernel
        let mut rows = 0;
        assert!(decode(&bytes_of(&e), &mut |row| {
            rows += 1;
            assert_eq!((row.ts_ns, row.event, row.pid, row.tid), (42, "launch", Some(100), Some(101)));
            assert_eq!(row.api, Some("cuLaunchKernel"));
            assert_eq!(row.runtime_api, Some("cudaLaunchKernel"));
            assert_eq!((row.grid, row.block, row.shared_mem), (Some([4, 2, 1]), Some([128, 1, 1]), Some(4096)));
        }));
        assert_eq!(rows, 1);
    }

    #[test]
    fn launch_batch_becomes_its_launches_in_order() {
        let mut batch = launch_batch::default();
        batch.hdr = event_header { ts_ns: 99, r#type: RECORD_LAUNCH_BATCH, cpu: 0, pid: 100, tid: 101 };
        batch.count = 3;
        for (i, launch) in batch.launches.iter_mut().take(3).enumerate() {
            launch.hdr = event_header { ts_ns: 10 + i as u64, r#type: event_type::LAUNCH, cpu: i as u32, pid: 100, tid: 101 };
            launch.func = 0x100 + i as u64;
            launch.api = cuda_api::cookie_of(0) as u16;
        }
        // the record holds only the launches it counts
        let start = std::mem::offset_of!(launch_batch, launches);
        let bytes = bytes_of(&batch)[..start + 3 * std::mem::size_of::<launch_event>()].to_vec();
        let mut seen = Vec::new();
        assert!(decode(&bytes, &mut |row| seen.push((row.ts_ns, row.cpu, row.func))));
        assert_eq!(seen, vec![(10, Some(0), Some(0x100)), (11, Some(1), Some(0x101)), (12, Some(2), Some(0x102))]);
        assert_eq!(LAUNCH_BATCH_CAPACITY, 16); // LAUNCH_BATCH_SIZE in events.h
        // a count the record cannot hold is refused, not read past its end
        assert!(!decode(&bytes[..start + 2 * std::mem::size_of::<launch_event>()], &mut |_| {}));
    }

    #[test]
    fn runtime_only_record_keeps_the_name_and_the_return_code() {
        let mut e = runtime_only_event::default();
        e.hdr = event_header { ts_ns: 5, r#type: event_type::RUNTIME_ONLY, cpu: 0, pid: 10, tid: 11 };
        e.duration_ns = 700;
        e.return_code = 100; // cudaErrorNoDevice
        e.runtime_api = cuda_api::cookie_of(16) as u16;
        let mut rows = 0;
        assert!(decode(&bytes_of(&e), &mut |row| {
            rows += 1;
            assert_eq!((row.event, row.runtime_api, row.api), ("runtime_only", Some("cudaLaunchKernel"), None));
            assert_eq!((row.return_code, row.duration_ns, row.tid), (Some(100), Some(700), Some(11)));
        }));
        assert_eq!(rows, 1);
    }

    #[test]
    fn switch_record_keeps_both_tasks_and_the_classification() {
        let mut e = switch_event::default();
        e.hdr = event_header { ts_ns: 9, r#type: event_type::SWITCH, cpu: 0, pid: 5, tid: 6 };
        e.next_pid = 7;
        e.next_tid = 8;
        e.voluntary = 0;
        e.preempt = 1;
        e.prev_comm = comm("cudasim");
        e.next_comm = comm("stress-ng-cpu");
        assert!(decode(&bytes_of(&e), &mut |row| {
            assert_eq!(row.event, "switch");
            assert_eq!((row.comm, row.next_comm), (Some("cudasim"), Some("stress-ng-cpu")));
            assert_eq!((row.voluntary, row.preempt, row.next_tid), (Some(false), Some(true), Some(8)));
        }));
    }

    #[test]
    fn softirq_vectors_are_named() {
        let mut e = irq_event::default();
        e.hdr = event_header { ts_ns: 1, r#type: event_type::SOFTIRQ, cpu: 0, pid: 0, tid: 0 };
        e.irq = 3;
        e.duration_ns = 1500;
        assert!(decode(&bytes_of(&e), &mut |row| {
            assert_eq!((row.event, row.irq_name, row.duration_ns), ("softirq", Some("NET_RX"), Some(1500)));
        }));
    }

    #[test]
    fn truncated_and_unknown_records_are_refused() {
        assert!(!decode(&[1, 2, 3], &mut |_| panic!("no row expected")));
        let h = event_header { ts_ns: 1, r#type: 99, cpu: 0, pid: 0, tid: 0 };
        assert!(!decode(&bytes_of(&h), &mut |_| panic!("no row expected")));
    }
}
