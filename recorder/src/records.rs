//! Raw ring-buffer records decoded into trace rows. Both are generated from
//! schema/trace.toml: the records' layouts (its [ring_record] tables, the same
//! ones the BPF programs' C structs are written from) and one row type per event
//! kind. What is written here is how a record becomes its rows. Pure: bytes in,
//! rows out.

use std::borrow::Cow;

use crate::cuda_api;
use launchgap_record::cgroups;
use launchgap_record::names::escape_name;

use crate::schema::{
    record, CgroupEvent, CgroupRow, CommEvent, CommRow, EventHeader, ExecEvent, ExecRow, ExitEvent,
    ExitRow, ForkEvent, ForkRow, HardirqRow, IrqEvent, IrqVectorRow, Kind, LaunchBatch,
    LaunchEvent, LaunchRow, MigrateEvent, MigrateRow, Row, RuntimeOnlyEvent, RuntimeOnlyRow,
    SoftirqRow, SwitchEvent, SwitchRow, SyncEvent, SyncRow, TaskCgroupEvent, TaskCgroupRow,
    WakeupEvent, WakeupNewRow, WakeupRow, WakingRow, CGROUP_HIERARCHY_NAMES, IRQ_VECTOR_NAMES,
    RECORD_LAUNCH_BATCH, SOFTIRQ_NAMES,
};

/// A kernel string (a task name, a file name) up to its NUL, as the trace keeps
/// it: UTF-8 as it is, every byte that is not part of valid UTF-8 as `\xHH`, and
/// a backslash as `\\`, so that the bytes can be read back exactly
/// (docs/trace-format.md, "Names"). Borrowed in the usual case (valid, no backslash).
fn c_str(bytes: &[u8]) -> Cow<'_, str> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    escape_name(&bytes[..end])
}

/// A cgroup's row: its path, and the container and pod the path names (cgroups::names_in, as the monitor's labels).
pub fn cgroup_row(
    ts_ns: u64,
    hierarchy: &'static str,
    cgroup_id: u64,
    path: &str,
    emit: &mut impl FnMut(&Row),
) {
    let names = cgroups::names_in(path);
    emit(&Row::Cgroup(CgroupRow {
        ts_ns,
        hierarchy,
        cgroup_id,
        cgroup_path: path,
        container_id: names.container_id.as_deref(),
        pod: names.pod.as_deref(),
    }));
}

fn copy_of<T: plain::Plain + Default + Copy>(data: &[u8]) -> Option<T> {
    let mut value = T::default();
    plain::copy_from_bytes(&mut value, data).ok()?;
    Some(value)
}

/// The type of a raw record, or None if it is too short to have a header.
pub fn record_type(data: &[u8]) -> Option<u32> {
    copy_of::<EventHeader>(data).map(|h| h.r#type)
}

/// Decodes one record and hands its rows to `emit`. Returns false for a
/// record this recorder does not understand (never expected): too short, an
/// unknown type, variant or probe cookie.
pub fn decode(data: &[u8], emit: &mut impl FnMut(&Row)) -> bool {
    let Some(kind) = record_type(data) else { return false };
    let decoded = match kind {
        RECORD_LAUNCH_BATCH => return decode_launch_batch(data, emit),
        record::LAUNCH => launch(data, emit),
        record::SYNC => sync(data, emit),
        record::RUNTIME_ONLY => runtime_only(data, emit),
        record::SWITCH => switch(data, emit),
        record::WAKEUP => wakeup(data, emit),
        record::MIGRATE => migrate(data, emit),
        record::FORK => fork(data, emit),
        record::EXEC => exec(data, emit),
        record::EXIT => exit(data, emit),
        record::COMM => comm(data, emit),
        record::TASK_CGROUP => task_cgroup(data, emit),
        record::CGROUP_MADE => cgroup_made(data, emit),
        record::HARDIRQ | record::SOFTIRQ | record::IRQ_VECTOR => irq(kind, data, emit),
        _ => None,
    };
    decoded.is_some()
}

// One decoder per record type: None for a record too short for its type, or
// holding a value no row can (an unknown probe cookie, variant or hierarchy).

fn launch(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<LaunchEvent>(data)?;
    let api = cuda_api::name_of(e.api)?;
    let h = &e.hdr;
    emit(&Row::Launch(LaunchRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        api,
        runtime_api: cuda_api::name_of(e.runtime_api),
        func: Some(e.func),
        stream: e.stream,
        grid_x: e.grid[0],
        grid_y: e.grid[1],
        grid_z: e.grid[2],
        block_x: e.block[0],
        block_y: e.block[1],
        block_z: e.block[2],
        shared_mem: e.shared_mem,
    }));
    Some(())
}

fn sync(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<SyncEvent>(data)?;
    let api = cuda_api::name_of(e.api)?;
    let h = &e.hdr;
    emit(&Row::Sync(SyncRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        api,
        runtime_api: cuda_api::name_of(e.runtime_api),
        duration_ns: e.duration_ns,
        stream: Some(e.stream),
        bytes: Some(e.bytes),
    }));
    Some(())
}

fn runtime_only(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<RuntimeOnlyEvent>(data)?;
    let runtime_api = cuda_api::name_of(e.runtime_api)?;
    let h = &e.hdr;
    emit(&Row::RuntimeOnly(RuntimeOnlyRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        runtime_api,
        return_code: e.return_code,
        duration_ns: e.duration_ns,
    }));
    Some(())
}

fn switch(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<SwitchEvent>(data)?;
    let h = &e.hdr;
    let (comm, next_comm) = (c_str(&e.prev_comm), c_str(&e.next_comm));
    emit(&Row::Switch(SwitchRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        comm: &comm,
        prev_state: e.prev_state,
        preempt: Some(e.preempt != 0),
        voluntary: Some(e.voluntary != 0),
        nvcsw: Some(e.prev_nvcsw),
        nivcsw: Some(e.prev_nivcsw),
        prio: Some(e.prev_prio),
        next_pid: e.next_pid,
        next_tid: e.next_tid,
        next_comm: &next_comm,
        next_prio: Some(e.next_prio),
    }));
    Some(())
}

/// One record type, three kinds: the variant says which.
fn wakeup(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<WakeupEvent>(data)?;
    let h = &e.hdr;
    let name = c_str(&e.comm);
    let (comm, prio, target_cpu, waker_tid) = (&*name, e.prio, e.target_cpu, e.waker_tid);
    let (ts_ns, cpu, pid, tid) = (h.ts_ns, h.cpu, h.pid, h.tid);
    let row = match Kind::of_wakeup_variant(e.variant)? {
        Kind::Waking => {
            Row::Waking(WakingRow { ts_ns, cpu, pid, tid, comm, prio, target_cpu, waker_tid })
        }
        Kind::Wakeup => {
            Row::Wakeup(WakeupRow { ts_ns, cpu, pid, tid, comm, prio, target_cpu, waker_tid })
        }
        Kind::WakeupNew => {
            Row::WakeupNew(WakeupNewRow { ts_ns, cpu, pid, tid, comm, prio, target_cpu, waker_tid })
        }
        _ => return None,
    };
    emit(&row);
    Some(())
}

fn migrate(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<MigrateEvent>(data)?;
    let h = &e.hdr;
    emit(&Row::Migrate(MigrateRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        orig_cpu: e.orig_cpu,
        dest_cpu: e.dest_cpu,
    }));
    Some(())
}

fn fork(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<ForkEvent>(data)?;
    let h = &e.hdr;
    let comm = c_str(&e.comm);
    emit(&Row::Fork(ForkRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        comm: &comm,
        child_pid: e.child_pid,
        child_tid: e.child_tid,
    }));
    Some(())
}

fn exec(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<ExecEvent>(data)?;
    let h = &e.hdr;
    let (comm, filename) = (c_str(&e.comm), c_str(&e.filename));
    emit(&Row::Exec(ExecRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        comm: &comm,
        filename: &filename,
    }));
    Some(())
}

fn exit(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<ExitEvent>(data)?;
    let h = &e.hdr;
    let comm = c_str(&e.comm);
    emit(&Row::Exit(ExitRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        comm: &comm,
        exit_code: Some(e.exit_code),
    }));
    Some(())
}

fn comm(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<CommEvent>(data)?;
    let h = &e.hdr;
    let (comm, old_comm) = (c_str(&e.new_comm), c_str(&e.old_comm));
    emit(&Row::Comm(CommRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        comm: &comm,
        old_comm: &old_comm,
    }));
    Some(())
}

fn task_cgroup(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<TaskCgroupEvent>(data)?;
    let h = &e.hdr;
    emit(&Row::TaskCgroup(TaskCgroupRow {
        ts_ns: h.ts_ns,
        cpu: h.cpu,
        pid: h.pid,
        tid: h.tid,
        cgroup_id: e.cgroup_id,
        v1_cpu_cgroup_id: (e.v1_cpu_cgroup_id != 0).then_some(e.v1_cpu_cgroup_id),
        // 0: the kernel's pid could not be read (no task has id 0 in any namespace)
        ns_pid: (e.ns_pid != 0).then_some(e.ns_pid),
        ns_tid: (e.ns_tid != 0).then_some(e.ns_tid),
        // 0: not in an autogroup, not read, no group scheduling (ids start at 1, weights at 2)
        autogroup_id: (e.autogroup_id != 0).then_some(e.autogroup_id),
        sched_cgroup_id: (e.sched_cgroup_id != 0).then_some(e.sched_cgroup_id),
        group_weight: (e.group_weight != 0).then_some(e.group_weight),
    }));
    Some(())
}

fn cgroup_made(data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<CgroupEvent>(data)?;
    let hierarchy = *CGROUP_HIERARCHY_NAMES.get(e.hierarchy as usize)?;
    cgroup_row(e.hdr.ts_ns, hierarchy, e.cgroup_id, &c_str(&e.path), emit);
    Some(())
}

/// Hard IRQs (named by their handler), softirqs and system vectors (named from the schema's tables).
fn irq(kind: u32, data: &[u8], emit: &mut impl FnMut(&Row)) -> Option<()> {
    let e = copy_of::<IrqEvent>(data)?;
    let h = &e.hdr;
    let (ts_ns, cpu, pid, tid, irq, duration_ns) =
        (h.ts_ns, h.cpu, h.pid, h.tid, e.irq, e.duration_ns);
    let named = |names: &'static [&'static str]| names.get(e.irq as usize).copied().unwrap_or("?");
    let row = match kind {
        record::HARDIRQ => Row::Hardirq(HardirqRow {
            ts_ns,
            cpu,
            pid,
            tid,
            irq,
            irq_name: &c_str(&e.name),
            duration_ns,
        }),
        record::SOFTIRQ => Row::Softirq(SoftirqRow {
            ts_ns,
            cpu,
            pid,
            tid,
            irq,
            irq_name: named(&SOFTIRQ_NAMES),
            duration_ns,
        }),
        _ => Row::IrqVector(IrqVectorRow {
            ts_ns,
            cpu,
            pid,
            tid,
            irq,
            irq_name: named(&IRQ_VECTOR_NAMES),
            duration_ns,
        }),
    };
    emit(&row);
    Some(())
}

/// LAUNCH_BATCH_SIZE in the schema, from the layout itself.
const LAUNCH_BATCH_CAPACITY: usize = (std::mem::size_of::<LaunchBatch>()
    - std::mem::offset_of!(LaunchBatch, launches))
    / std::mem::size_of::<LaunchEvent>();
const _: () = assert!(LAUNCH_BATCH_CAPACITY == crate::schema::LAUNCH_BATCH_SIZE as usize);

/// A batch holds `count` complete launch records after its own header.
fn decode_launch_batch(data: &[u8], emit: &mut impl FnMut(&Row)) -> bool {
    let start = std::mem::offset_of!(LaunchBatch, launches);
    let count_at = std::mem::offset_of!(LaunchBatch, count);
    let Some(count) =
        data.get(count_at..count_at + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return false;
    };
    let size = std::mem::size_of::<LaunchEvent>();
    let count = count as usize;
    if count > LAUNCH_BATCH_CAPACITY || data.len() < start + count * size {
        return false;
    }
    data[start..start + count * size].chunks_exact(size).all(|launch| decode(launch, emit))
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)] // a zeroed BPF record, then the fields a test sets
mod tests {
    use super::*;

    fn bytes_of<T: Copy>(value: &T) -> Vec<u8> {
        // SAFETY: reading the bytes of a plain C struct.
        unsafe {
            std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>())
        }
        .to_vec()
    }

    fn comm(name: &str) -> [u8; 16] {
        comm_bytes(name.as_bytes())
    }

    /// The cookie a record carries for the entry point named `name`, as the BPF side writes it.
    fn cookie(name: &str) -> u16 {
        cuda_api::cookie_named(name).unwrap_or_else(|| panic!("{name} is not probed")) as u16
    }

    fn rows_of(data: &[u8]) -> Vec<String> {
        let mut rows = Vec::new();
        assert!(decode(data, &mut |row| rows.push(format!("{row:?}"))));
        rows
    }

    #[test]
    fn launch_record_becomes_a_launch_row_with_both_api_names() {
        let mut e = LaunchEvent::default();
        e.hdr = EventHeader { ts_ns: 42, r#type: record::LAUNCH, cpu: 1, pid: 100, tid: 101 };
        e.func = 0xdead;
        e.stream = 7;
        e.grid = [4, 2, 1];
        e.block = [128, 1, 1];
        e.shared_mem = 4096;
        e.api = cookie("cuLaunchKernel");
        e.runtime_api = cookie("cudaLaunchKernel");
        let expected = LaunchRow {
            ts_ns: 42,
            cpu: 1,
            pid: 100,
            tid: 101,
            api: "cuLaunchKernel",
            runtime_api: Some("cudaLaunchKernel"),
            func: Some(0xdead),
            stream: 7,
            grid_x: 4,
            grid_y: 2,
            grid_z: 1,
            block_x: 128,
            block_y: 1,
            block_z: 1,
            shared_mem: 4096,
        };
        assert_eq!(rows_of(&bytes_of(&e)), [format!("{:?}", Row::Launch(expected))]);
    }

    #[test]
    fn launch_batch_becomes_its_launches_in_order() {
        let mut batch = LaunchBatch::default();
        batch.hdr =
            EventHeader { ts_ns: 99, r#type: RECORD_LAUNCH_BATCH, cpu: 0, pid: 100, tid: 101 };
        batch.count = 3;
        for (i, launch) in batch.launches.iter_mut().take(3).enumerate() {
            launch.hdr = EventHeader {
                ts_ns: 10 + i as u64,
                r#type: record::LAUNCH,
                cpu: i as u32,
                pid: 100,
                tid: 101,
            };
            launch.func = 0x100 + i as u64;
            launch.api = cookie("cuLaunchKernel");
        }
        // the record holds only the launches it counts
        let start = std::mem::offset_of!(LaunchBatch, launches);
        let bytes = bytes_of(&batch)[..start + 3 * std::mem::size_of::<LaunchEvent>()].to_vec();
        let mut seen = Vec::new();
        assert!(decode(&bytes, &mut |row| match row {
            Row::Launch(l) => seen.push((l.ts_ns, l.cpu, l.func)),
            other => panic!("{other:?}"),
        }));
        assert_eq!(seen, vec![(10, 0, Some(0x100)), (11, 1, Some(0x101)), (12, 2, Some(0x102))]);
        // a count the record cannot hold is refused, not read past its end
        assert!(!decode(&bytes[..start + 2 * std::mem::size_of::<LaunchEvent>()], &mut |_| {}));
    }

    /// Bytes put where C's rules place each field of the records, worked out by hand from
    /// the programs' structs (not from the generated layout, which a change to the schema
    /// would move on both sides at once).
    fn laid_out_by_hand(size: usize, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut bytes = vec![0u8; size];
        for (at, value) in fields {
            bytes[*at..*at + value.len()].copy_from_slice(value);
        }
        bytes
    }

    #[test]
    fn a_switch_record_as_the_wire_lays_it_out_decodes() {
        // the 24-byte header; prev_state, the two counters, the four 32-bit ids and
        // priorities, the two flags, 6 bytes of padding, the two names: 104 bytes
        let bytes = laid_out_by_hand(
            104,
            &[
                (0, &9u64.to_ne_bytes()),
                (8, &record::SWITCH.to_ne_bytes()),
                (12, &1u32.to_ne_bytes()),
                (16, &5u32.to_ne_bytes()),
                (20, &6u32.to_ne_bytes()),
                (24, &1i64.to_ne_bytes()),
                (32, &11u64.to_ne_bytes()),
                (40, &12u64.to_ne_bytes()),
                (48, &7u32.to_ne_bytes()),
                (52, &8u32.to_ne_bytes()),
                (56, &120i32.to_ne_bytes()),
                (60, &100i32.to_ne_bytes()),
                (64, &[1]),
                (65, &[0]),
                (72, b"cudasim"),
                (88, b"stress-ng-cpu"),
            ],
        );
        let expected = SwitchRow {
            ts_ns: 9,
            cpu: 1,
            pid: 5,
            tid: 6,
            comm: "cudasim",
            prev_state: 1,
            preempt: Some(true),
            voluntary: Some(false),
            nvcsw: Some(11),
            nivcsw: Some(12),
            prio: Some(120),
            next_pid: 7,
            next_tid: 8,
            next_comm: "stress-ng-cpu",
            next_prio: Some(100),
        };
        assert_eq!(rows_of(&bytes), [format!("{:?}", Row::Switch(expected))]);
        // one byte short of its struct is refused
        assert!(!decode(&bytes[..103], &mut |_| panic!("no row expected")));
    }

    #[test]
    fn a_launch_batch_as_the_wire_lays_it_out_decodes() {
        // the batch's header, count and padding (32 bytes), then 72-byte launches: each its
        // header, func, stream, grid, block (12 bytes each), shared_mem, the two cookies
        let launch = 32;
        let bytes = laid_out_by_hand(
            launch + 72,
            &[
                (8, &RECORD_LAUNCH_BATCH.to_ne_bytes()),
                (24, &1u32.to_ne_bytes()),
                (launch, &42u64.to_ne_bytes()),
                (launch + 8, &record::LAUNCH.to_ne_bytes()),
                (launch + 20, &101u32.to_ne_bytes()),
                (launch + 24, &0xdeadu64.to_ne_bytes()),
                (launch + 32, &7u64.to_ne_bytes()),
                (launch + 40, &4u32.to_ne_bytes()),
                (launch + 44, &2u32.to_ne_bytes()),
                (launch + 48, &1u32.to_ne_bytes()),
                (launch + 52, &128u32.to_ne_bytes()),
                (launch + 64, &4096u32.to_ne_bytes()),
                (launch + 68, &cookie("cuLaunchKernel").to_ne_bytes()),
                (launch + 70, &cookie("cudaLaunchKernel").to_ne_bytes()),
            ],
        );
        let mut seen = Vec::new();
        assert!(decode(&bytes, &mut |row| {
            let Row::Launch(l) = row else { panic!("{row:?}") };
            seen.push((l.ts_ns, l.tid, l.func, l.stream, (l.grid_x, l.grid_y, l.grid_z)));
            assert_eq!((l.block_x, l.shared_mem), (128, 4096));
            assert_eq!(l.api, "cuLaunchKernel");
            assert_eq!(l.runtime_api, Some("cudaLaunchKernel"));
        }));
        assert_eq!(seen, [(42, 101, Some(0xdead), 7, (4, 2, 1))]);
    }

    #[test]
    fn runtime_only_record_keeps_the_name_and_the_return_code() {
        let mut e = RuntimeOnlyEvent::default();
        e.hdr = EventHeader { ts_ns: 5, r#type: record::RUNTIME_ONLY, cpu: 0, pid: 10, tid: 11 };
        e.duration_ns = 700;
        e.return_code = 100; // cudaErrorNoDevice
        e.runtime_api = cookie("cudaLaunchKernel");
        assert_eq!(
            rows_of(&bytes_of(&e)),
            [format!(
                "{:?}",
                Row::RuntimeOnly(RuntimeOnlyRow {
                    ts_ns: 5,
                    cpu: 0,
                    pid: 10,
                    tid: 11,
                    runtime_api: "cudaLaunchKernel",
                    return_code: 100,
                    duration_ns: 700
                })
            )]
        );
    }

    #[test]
    fn switch_record_keeps_both_tasks_and_the_classification() {
        let mut e = SwitchEvent::default();
        e.hdr = EventHeader { ts_ns: 9, r#type: record::SWITCH, cpu: 0, pid: 5, tid: 6 };
        e.next_pid = 7;
        e.next_tid = 8;
        e.voluntary = 0;
        e.preempt = 1;
        e.prev_comm = comm("cudasim");
        e.next_comm = comm("stress-ng-cpu");
        assert!(decode(&bytes_of(&e), &mut |row| {
            let Row::Switch(s) = row else { panic!("{row:?}") };
            assert_eq!((s.comm, s.next_comm), ("cudasim", "stress-ng-cpu"));
            assert_eq!((s.voluntary, s.preempt, s.next_tid), (Some(false), Some(true), 8));
        }));
    }

    fn comm_bytes(name: &[u8]) -> [u8; 16] {
        let mut out = [0u8; 16];
        let n = name.len().min(15);
        out[..n].copy_from_slice(&name[..n]);
        out
    }

    #[test]
    fn names_that_are_not_utf8_keep_their_bytes_escaped() {
        let mut e = SwitchEvent::default();
        e.hdr = EventHeader { ts_ns: 9, r#type: record::SWITCH, cpu: 0, pid: 5, tid: 6 };
        // a lone 0xff; a backslash (escaped too, so "\xff" typed as text stays distinguishable);
        // a UTF-8 sequence cut by the kernel's 15-byte limit ("é" is c3 a9)
        e.prev_comm = comm_bytes(b"\xffodd");
        e.next_comm = comm_bytes(b"a\\xff\xc3\xa9\xc3");
        assert!(decode(&bytes_of(&e), &mut |row| {
            let Row::Switch(s) = row else { panic!("{row:?}") };
            assert_eq!((s.comm, s.next_comm), ("\\xffodd", "a\\\\xff\u{e9}\\xc3"));
        }));
        assert!(matches!(escape_name(b"cudasim"), Cow::Borrowed("cudasim")));
    }

    #[test]
    fn each_wakeup_variant_is_its_own_kind_and_an_unknown_one_is_refused() {
        let mut e = WakeupEvent::default();
        e.hdr = EventHeader { ts_ns: 3, r#type: record::WAKEUP, cpu: 1, pid: 5, tid: 6 };
        let kinds: Vec<Kind> = (0..3)
            .map(|variant| {
                e.variant = variant;
                let mut kind = None;
                assert!(decode(&bytes_of(&e), &mut |row| kind = Some(row.kind())));
                kind.unwrap()
            })
            .collect();
        assert_eq!(kinds, [Kind::Waking, Kind::Wakeup, Kind::WakeupNew]);
        e.variant = 3;
        assert!(!decode(&bytes_of(&e), &mut |_| panic!("no row expected")));
    }

    #[test]
    fn softirq_vectors_are_named() {
        let mut e = IrqEvent::default();
        e.hdr = EventHeader { ts_ns: 1, r#type: record::SOFTIRQ, cpu: 0, pid: 0, tid: 0 };
        e.irq = 3;
        e.duration_ns = 1500;
        assert_eq!(
            rows_of(&bytes_of(&e)),
            [format!(
                "{:?}",
                Row::Softirq(SoftirqRow {
                    ts_ns: 1,
                    cpu: 0,
                    pid: 0,
                    tid: 0,
                    irq: 3,
                    irq_name: "NET_RX",
                    duration_ns: 1500
                })
            )]
        );
    }

    #[test]
    fn task_cgroup_records_keep_both_ids_and_a_missing_v1_id_is_null() {
        let mut e = TaskCgroupEvent::default();
        e.hdr = EventHeader { ts_ns: 4, r#type: record::TASK_CGROUP, cpu: 1, pid: 20, tid: 21 };
        e.cgroup_id = 5071;
        let row = |e: &TaskCgroupEvent| {
            let mut out = None;
            assert!(decode(&bytes_of(e), &mut |row| {
                let Row::TaskCgroup(t) = row else { panic!("{row:?}") };
                out = Some((t.ts_ns, t.cpu, t.pid, t.tid, t.cgroup_id, t.v1_cpu_cgroup_id));
            }));
            out.unwrap()
        };
        assert_eq!(row(&e), (4, 1, 20, 21, 5071, None));
        e.v1_cpu_cgroup_id = 88;
        assert_eq!(row(&e), (4, 1, 20, 21, 5071, Some(88)));
    }

    #[test]
    fn task_cgroup_records_carry_the_namespace_ids_and_none_read_is_null() {
        let mut e = TaskCgroupEvent::default();
        e.hdr = EventHeader { ts_ns: 4, r#type: record::TASK_CGROUP, cpu: 1, pid: 4120, tid: 4121 };
        let ids = |e: &TaskCgroupEvent| {
            let mut out = None;
            assert!(decode(&bytes_of(e), &mut |row| {
                let Row::TaskCgroup(t) = row else { panic!("{row:?}") };
                out = Some((t.ns_pid, t.ns_tid));
            }));
            out.unwrap()
        };
        assert_eq!(ids(&e), (None, None));
        (e.ns_pid, e.ns_tid) = (1, 7);
        assert_eq!(ids(&e), (Some(1), Some(7)));
    }

    #[test]
    fn cgroup_records_name_the_container_and_pod_of_their_path() {
        let id = "3f2a8d0c1b4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";
        let pod = "6b0f3f5e-6f9a-4b8e-9d0e-3c1a2b4c5d6e";
        let path = format!("/kubepods/burstable/pod{pod}/{id}");
        let mut e = CgroupEvent::default();
        e.hdr = EventHeader { ts_ns: 8, r#type: record::CGROUP_MADE, cpu: 0, pid: 30, tid: 30 };
        e.cgroup_id = 9001;
        e.hierarchy = 1;
        e.path[..path.len()].copy_from_slice(path.as_bytes());
        let mut seen = Vec::new();
        assert!(decode(&bytes_of(&e), &mut |row| {
            let Row::Cgroup(c) = row else { panic!("{row:?}") };
            seen.push((
                c.ts_ns,
                c.hierarchy.to_string(),
                c.cgroup_id,
                c.cgroup_path.to_string(),
                c.container_id.map(str::to_string),
                c.pod.map(str::to_string),
            ));
        }));
        assert_eq!(
            seen,
            [(
                8,
                "v1_cpu".to_string(),
                9001,
                path.clone(),
                Some(id.to_string()),
                Some(pod.to_string())
            )]
        );
        // bytes that are not UTF-8 are escaped as the trace escapes names (never replaced: two cgroups would merge)
        e.path = [0; crate::schema::CGROUP_PATH_LEN as usize];
        e.path[..4].copy_from_slice(b"/a\xffb");
        e.hierarchy = 0;
        assert!(decode(&bytes_of(&e), &mut |row| {
            let Row::Cgroup(c) = row else { panic!("{row:?}") };
            assert_eq!(
                (c.hierarchy, c.cgroup_path, c.container_id, c.pod),
                ("v2", "/a\\xffb", None, None)
            );
        }));
        e.hierarchy = 2; // no such hierarchy
        assert!(!decode(&bytes_of(&e), &mut |_| panic!("no row expected")));
    }

    #[test]
    fn truncated_and_unknown_records_are_refused() {
        assert!(!decode(&[1, 2, 3], &mut |_| panic!("no row expected")));
        let h = EventHeader { ts_ns: 1, r#type: 99, cpu: 0, pid: 0, tid: 0 };
        assert!(!decode(&bytes_of(&h), &mut |_| panic!("no row expected")));
    }
}
