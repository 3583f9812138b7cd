// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

// The records the BPF programs put in the ring buffer (schema/trace.toml's [ring_record]
// tables), as the programs' generated ring_records.h lays them out.

/// `struct event_header`: Every record starts with this. pid/tid is the task the event is about.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventHeader {
    /// CLOCK_MONOTONIC (bpf_ktime_get_ns)
    pub ts_ns: u64,
    /// enum event_type
    pub r#type: u32,
    pub cpu: u32,
    /// tgid
    pub pid: u32,
    pub tid: u32,
}

impl EventHeader {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        ts_ns: 0,
        r#type: 0,
        cpu: 0,
        pid: 0,
        tid: 0,
    };
}

impl Default for EventHeader {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for EventHeader {}

/// `struct launch_event`: One logical kernel launch: exactly one driver-entry uprobe hit.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LaunchEvent {
    pub hdr: EventHeader,
    /// CUfunction, or CUgraphExec for graph launches
    pub func: u64,
    pub stream: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    /// attach cookie of the driver probe
    pub api: u16,
    /// runtime probe that led here (--api-names), else 0
    pub runtime_api: u16,
}

impl LaunchEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        func: 0,
        stream: 0,
        grid: [0; 3],
        block: [0; 3],
        shared_mem: 0,
        api: 0,
        runtime_api: 0,
    };
}

impl Default for LaunchEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for LaunchEvent {}

/// `struct launch_batch`: Launches staged per thread and written together: one ring-buffer record for up to LAUNCH_BATCH_SIZE launches, each a complete launch_event with its own header. Not an event type of its own (its drops count as launches): hdr.type is RECORD_LAUNCH_BATCH, hdr.ts_ns the flush. Only the first `count` launches are written.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LaunchBatch {
    pub hdr: EventHeader,
    pub count: u32,
    pub pad: u32,
    pub launches: [LaunchEvent; LAUNCH_BATCH_SIZE as usize],
}

impl LaunchBatch {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        count: 0,
        pad: 0,
        launches: [LaunchEvent::ZERO; LAUNCH_BATCH_SIZE as usize],
    };
}

impl Default for LaunchBatch {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for LaunchBatch {}

/// `struct sync_event`: A blocking sync or synchronous copy, emitted at return with its duration.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SyncEvent {
    /// ts_ns is the entry time
    pub hdr: EventHeader,
    pub duration_ns: u64,
    pub stream: u64,
    pub bytes: u64,
    pub api: u16,
    pub runtime_api: u16,
    pub pad: u32,
}

impl SyncEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        duration_ns: 0,
        stream: 0,
        bytes: 0,
        api: 0,
        runtime_api: 0,
        pad: 0,
    };
}

impl Default for SyncEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for SyncEvent {}

/// `struct runtime_only_event`: With --api-names: a runtime call that returned without reaching any driver entry point launchgap probes. With a nonzero return code, an attempt that failed inside the runtime (say, a launch with no device); with 0, a call that went through a driver function not probed. hdr.ts_ns is the runtime entry.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RuntimeOnlyEvent {
    pub hdr: EventHeader,
    pub duration_ns: u64,
    /// the runtime's return value (cudaError_t)
    pub return_code: i32,
    /// attach cookie of the runtime probe
    pub runtime_api: u16,
    pub pad: u16,
}

impl RuntimeOnlyEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        duration_ns: 0,
        return_code: 0,
        runtime_api: 0,
        pad: 0,
    };
}

impl Default for RuntimeOnlyEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for RuntimeOnlyEvent {}

/// `struct switch_event`: hdr.pid/tid is the task switched out.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SwitchEvent {
    pub hdr: EventHeader,
    pub prev_state: i64,
    /// the kernel's own counters after this switch
    pub prev_nvcsw: u64,
    pub prev_nivcsw: u64,
    pub next_pid: u32,
    pub next_tid: u32,
    pub prev_prio: i32,
    pub next_prio: i32,
    /// the scheduler preempted prev (tracepoint argument)
    pub preempt: u8,
    /// counted in prev's nvcsw: it blocked; else nivcsw: still runnable
    pub voluntary: u8,
    pub pad: [u8; 6],
    pub prev_comm: [u8; TASK_COMM_LEN as usize],
    pub next_comm: [u8; TASK_COMM_LEN as usize],
}

impl SwitchEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        prev_state: 0,
        prev_nvcsw: 0,
        prev_nivcsw: 0,
        next_pid: 0,
        next_tid: 0,
        prev_prio: 0,
        next_prio: 0,
        preempt: 0,
        voluntary: 0,
        pad: [0; 6],
        prev_comm: [0; TASK_COMM_LEN as usize],
        next_comm: [0; TASK_COMM_LEN as usize],
    };
}

impl Default for SwitchEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for SwitchEvent {}

/// `struct wakeup_event`: hdr.pid/tid is the task woken; hdr.cpu is where the waker ran.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WakeupEvent {
    pub hdr: EventHeader,
    pub target_cpu: u32,
    pub waker_tid: u32,
    /// enum wakeup_variant
    pub variant: u32,
    pub prio: i32,
    pub comm: [u8; TASK_COMM_LEN as usize],
}

impl WakeupEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        target_cpu: 0,
        waker_tid: 0,
        variant: 0,
        prio: 0,
        comm: [0; TASK_COMM_LEN as usize],
    };
}

impl Default for WakeupEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for WakeupEvent {}

/// `struct migrate_event`: A task moves to another CPU's run queue.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MigrateEvent {
    pub hdr: EventHeader,
    pub orig_cpu: u32,
    pub dest_cpu: u32,
}

impl MigrateEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        orig_cpu: 0,
        dest_cpu: 0,
    };
}

impl Default for MigrateEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for MigrateEvent {}

/// `struct fork_event`: hdr.pid/tid is the parent.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ForkEvent {
    pub hdr: EventHeader,
    pub child_pid: u32,
    pub child_tid: u32,
    pub comm: [u8; TASK_COMM_LEN as usize],
}

impl ForkEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        child_pid: 0,
        child_tid: 0,
        comm: [0; TASK_COMM_LEN as usize],
    };
}

impl Default for ForkEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for ForkEvent {}

/// `struct exec_event`: A task executes a file.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ExecEvent {
    pub hdr: EventHeader,
    pub comm: [u8; TASK_COMM_LEN as usize],
    pub filename: [u8; EXEC_FILENAME_LEN as usize],
}

impl ExecEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        comm: [0; TASK_COMM_LEN as usize],
        filename: [0; EXEC_FILENAME_LEN as usize],
    };
}

impl Default for ExecEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for ExecEvent {}

/// `struct exit_event`: A thread exits.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ExitEvent {
    pub hdr: EventHeader,
    pub exit_code: i32,
    pub pad: u32,
    pub comm: [u8; TASK_COMM_LEN as usize],
}

impl ExitEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        exit_code: 0,
        pad: 0,
        comm: [0; TASK_COMM_LEN as usize],
    };
}

impl Default for ExitEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for ExitEvent {}

/// `struct comm_event`: A task renames itself.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CommEvent {
    pub hdr: EventHeader,
    pub old_comm: [u8; TASK_COMM_LEN as usize],
    pub new_comm: [u8; TASK_COMM_LEN as usize],
}

impl CommEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        old_comm: [0; TASK_COMM_LEN as usize],
        new_comm: [0; TASK_COMM_LEN as usize],
    };
}

impl Default for CommEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for CommEvent {}

/// `struct task_cgroup_event`: A task's cgroups: at the first recorded switch it takes part in, and at the first after they change. hdr.pid/tid is the task.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TaskCgroupEvent {
    pub hdr: EventHeader,
    /// its cgroup v2
    pub cgroup_id: u64,
    /// its cgroup in the v1 cpu controller's hierarchy; 0: not recorded
    pub v1_cpu_cgroup_id: u64,
    /// its process id in its own pid namespace (NSpid's last field); 0: not read
    pub ns_pid: u32,
    /// its thread id there
    pub ns_tid: u32,
    /// its scheduler group's autogroup id; 0: not in an autogroup
    pub autogroup_id: u64,
    /// else its scheduler group's cgroup (kernfs id); 0: not read
    pub sched_cgroup_id: u64,
    /// that group's weight (nice 0: 1024); 0: no group scheduling
    pub group_weight: u32,
    pub reserved: u32,
}

impl TaskCgroupEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        cgroup_id: 0,
        v1_cpu_cgroup_id: 0,
        ns_pid: 0,
        ns_tid: 0,
        autogroup_id: 0,
        sched_cgroup_id: 0,
        group_weight: 0,
        reserved: 0,
    };
}

impl Default for TaskCgroupEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for TaskCgroupEvent {}

/// `struct cgroup_event`: A cgroup made while recording. hdr.pid/tid is the task that made it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CgroupEvent {
    pub hdr: EventHeader,
    pub cgroup_id: u64,
    /// enum cgroup_hierarchy
    pub hierarchy: u32,
    pub pad: u32,
    /// from the hierarchy's root
    pub path: [u8; CGROUP_PATH_LEN as usize],
}

impl CgroupEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        cgroup_id: 0,
        hierarchy: 0,
        pad: 0,
        path: [0; CGROUP_PATH_LEN as usize],
    };
}

impl Default for CgroupEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for CgroupEvent {}

/// `struct irq_event`: Hard IRQ, softirq or system vector, emitted at exit. hdr.ts_ns is the entry time; hdr.pid/tid is the task it interrupted (0 for idle).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IrqEvent {
    pub hdr: EventHeader,
    pub duration_ns: u64,
    /// IRQ line, softirq vector, or enum irq_vector_kind
    pub irq: i32,
    pub pad: u32,
    /// hard IRQs: the handler's name
    pub name: [u8; IRQ_NAME_LEN as usize],
}

impl IrqEvent {
    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).
    pub const ZERO: Self = Self {
        hdr: EventHeader::ZERO,
        duration_ns: 0,
        irq: 0,
        pad: 0,
        name: [0; IRQ_NAME_LEN as usize],
    };
}

impl Default for IrqEvent {
    fn default() -> Self {
        Self::ZERO
    }
}

// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.
unsafe impl plain::Plain for IrqEvent {}

// Each struct lies as the schema lays it out (and as ring_records.h asserts in C), and as the
// skeleton's type of the same name, which libbpf-cargo writes from the compiled BPF object's BTF.
const _: () = {
    use crate::skel::types as bpf;
    use std::mem::{offset_of, size_of};
    assert!(size_of::<EventHeader>() == 24);
    assert!(size_of::<bpf::event_header>() == 24);
    assert!(offset_of!(EventHeader, ts_ns) == 0);
    assert!(offset_of!(bpf::event_header, ts_ns) == 0);
    assert!(offset_of!(EventHeader, r#type) == 8);
    assert!(offset_of!(bpf::event_header, r#type) == 8);
    assert!(offset_of!(EventHeader, cpu) == 12);
    assert!(offset_of!(bpf::event_header, cpu) == 12);
    assert!(offset_of!(EventHeader, pid) == 16);
    assert!(offset_of!(bpf::event_header, pid) == 16);
    assert!(offset_of!(EventHeader, tid) == 20);
    assert!(offset_of!(bpf::event_header, tid) == 20);
    assert!(size_of::<LaunchEvent>() == 72);
    assert!(size_of::<bpf::launch_event>() == 72);
    assert!(offset_of!(LaunchEvent, hdr) == 0);
    assert!(offset_of!(bpf::launch_event, hdr) == 0);
    assert!(offset_of!(LaunchEvent, func) == 24);
    assert!(offset_of!(bpf::launch_event, func) == 24);
    assert!(offset_of!(LaunchEvent, stream) == 32);
    assert!(offset_of!(bpf::launch_event, stream) == 32);
    assert!(offset_of!(LaunchEvent, grid) == 40);
    assert!(offset_of!(bpf::launch_event, grid) == 40);
    assert!(offset_of!(LaunchEvent, block) == 52);
    assert!(offset_of!(bpf::launch_event, block) == 52);
    assert!(offset_of!(LaunchEvent, shared_mem) == 64);
    assert!(offset_of!(bpf::launch_event, shared_mem) == 64);
    assert!(offset_of!(LaunchEvent, api) == 68);
    assert!(offset_of!(bpf::launch_event, api) == 68);
    assert!(offset_of!(LaunchEvent, runtime_api) == 70);
    assert!(offset_of!(bpf::launch_event, runtime_api) == 70);
    assert!(size_of::<LaunchBatch>() == 1184);
    assert!(size_of::<bpf::launch_batch>() == 1184);
    assert!(offset_of!(LaunchBatch, hdr) == 0);
    assert!(offset_of!(bpf::launch_batch, hdr) == 0);
    assert!(offset_of!(LaunchBatch, count) == 24);
    assert!(offset_of!(bpf::launch_batch, count) == 24);
    assert!(offset_of!(LaunchBatch, pad) == 28);
    assert!(offset_of!(bpf::launch_batch, pad) == 28);
    assert!(offset_of!(LaunchBatch, launches) == 32);
    assert!(offset_of!(bpf::launch_batch, launches) == 32);
    assert!(size_of::<SyncEvent>() == 56);
    assert!(size_of::<bpf::sync_event>() == 56);
    assert!(offset_of!(SyncEvent, hdr) == 0);
    assert!(offset_of!(bpf::sync_event, hdr) == 0);
    assert!(offset_of!(SyncEvent, duration_ns) == 24);
    assert!(offset_of!(bpf::sync_event, duration_ns) == 24);
    assert!(offset_of!(SyncEvent, stream) == 32);
    assert!(offset_of!(bpf::sync_event, stream) == 32);
    assert!(offset_of!(SyncEvent, bytes) == 40);
    assert!(offset_of!(bpf::sync_event, bytes) == 40);
    assert!(offset_of!(SyncEvent, api) == 48);
    assert!(offset_of!(bpf::sync_event, api) == 48);
    assert!(offset_of!(SyncEvent, runtime_api) == 50);
    assert!(offset_of!(bpf::sync_event, runtime_api) == 50);
    assert!(offset_of!(SyncEvent, pad) == 52);
    assert!(offset_of!(bpf::sync_event, pad) == 52);
    assert!(size_of::<RuntimeOnlyEvent>() == 40);
    assert!(size_of::<bpf::runtime_only_event>() == 40);
    assert!(offset_of!(RuntimeOnlyEvent, hdr) == 0);
    assert!(offset_of!(bpf::runtime_only_event, hdr) == 0);
    assert!(offset_of!(RuntimeOnlyEvent, duration_ns) == 24);
    assert!(offset_of!(bpf::runtime_only_event, duration_ns) == 24);
    assert!(offset_of!(RuntimeOnlyEvent, return_code) == 32);
    assert!(offset_of!(bpf::runtime_only_event, return_code) == 32);
    assert!(offset_of!(RuntimeOnlyEvent, runtime_api) == 36);
    assert!(offset_of!(bpf::runtime_only_event, runtime_api) == 36);
    assert!(offset_of!(RuntimeOnlyEvent, pad) == 38);
    assert!(offset_of!(bpf::runtime_only_event, pad) == 38);
    assert!(size_of::<SwitchEvent>() == 104);
    assert!(size_of::<bpf::switch_event>() == 104);
    assert!(offset_of!(SwitchEvent, hdr) == 0);
    assert!(offset_of!(bpf::switch_event, hdr) == 0);
    assert!(offset_of!(SwitchEvent, prev_state) == 24);
    assert!(offset_of!(bpf::switch_event, prev_state) == 24);
    assert!(offset_of!(SwitchEvent, prev_nvcsw) == 32);
    assert!(offset_of!(bpf::switch_event, prev_nvcsw) == 32);
    assert!(offset_of!(SwitchEvent, prev_nivcsw) == 40);
    assert!(offset_of!(bpf::switch_event, prev_nivcsw) == 40);
    assert!(offset_of!(SwitchEvent, next_pid) == 48);
    assert!(offset_of!(bpf::switch_event, next_pid) == 48);
    assert!(offset_of!(SwitchEvent, next_tid) == 52);
    assert!(offset_of!(bpf::switch_event, next_tid) == 52);
    assert!(offset_of!(SwitchEvent, prev_prio) == 56);
    assert!(offset_of!(bpf::switch_event, prev_prio) == 56);
    assert!(offset_of!(SwitchEvent, next_prio) == 60);
    assert!(offset_of!(bpf::switch_event, next_prio) == 60);
    assert!(offset_of!(SwitchEvent, preempt) == 64);
    assert!(offset_of!(bpf::switch_event, preempt) == 64);
    assert!(offset_of!(SwitchEvent, voluntary) == 65);
    assert!(offset_of!(bpf::switch_event, voluntary) == 65);
    assert!(offset_of!(SwitchEvent, pad) == 66);
    assert!(offset_of!(bpf::switch_event, pad) == 66);
    assert!(offset_of!(SwitchEvent, prev_comm) == 72);
    assert!(offset_of!(bpf::switch_event, prev_comm) == 72);
    assert!(offset_of!(SwitchEvent, next_comm) == 88);
    assert!(offset_of!(bpf::switch_event, next_comm) == 88);
    assert!(size_of::<WakeupEvent>() == 56);
    assert!(size_of::<bpf::wakeup_event>() == 56);
    assert!(offset_of!(WakeupEvent, hdr) == 0);
    assert!(offset_of!(bpf::wakeup_event, hdr) == 0);
    assert!(offset_of!(WakeupEvent, target_cpu) == 24);
    assert!(offset_of!(bpf::wakeup_event, target_cpu) == 24);
    assert!(offset_of!(WakeupEvent, waker_tid) == 28);
    assert!(offset_of!(bpf::wakeup_event, waker_tid) == 28);
    assert!(offset_of!(WakeupEvent, variant) == 32);
    assert!(offset_of!(bpf::wakeup_event, variant) == 32);
    assert!(offset_of!(WakeupEvent, prio) == 36);
    assert!(offset_of!(bpf::wakeup_event, prio) == 36);
    assert!(offset_of!(WakeupEvent, comm) == 40);
    assert!(offset_of!(bpf::wakeup_event, comm) == 40);
    assert!(size_of::<MigrateEvent>() == 32);
    assert!(size_of::<bpf::migrate_event>() == 32);
    assert!(offset_of!(MigrateEvent, hdr) == 0);
    assert!(offset_of!(bpf::migrate_event, hdr) == 0);
    assert!(offset_of!(MigrateEvent, orig_cpu) == 24);
    assert!(offset_of!(bpf::migrate_event, orig_cpu) == 24);
    assert!(offset_of!(MigrateEvent, dest_cpu) == 28);
    assert!(offset_of!(bpf::migrate_event, dest_cpu) == 28);
    assert!(size_of::<ForkEvent>() == 48);
    assert!(size_of::<bpf::fork_event>() == 48);
    assert!(offset_of!(ForkEvent, hdr) == 0);
    assert!(offset_of!(bpf::fork_event, hdr) == 0);
    assert!(offset_of!(ForkEvent, child_pid) == 24);
    assert!(offset_of!(bpf::fork_event, child_pid) == 24);
    assert!(offset_of!(ForkEvent, child_tid) == 28);
    assert!(offset_of!(bpf::fork_event, child_tid) == 28);
    assert!(offset_of!(ForkEvent, comm) == 32);
    assert!(offset_of!(bpf::fork_event, comm) == 32);
    assert!(size_of::<ExecEvent>() == 168);
    assert!(size_of::<bpf::exec_event>() == 168);
    assert!(offset_of!(ExecEvent, hdr) == 0);
    assert!(offset_of!(bpf::exec_event, hdr) == 0);
    assert!(offset_of!(ExecEvent, comm) == 24);
    assert!(offset_of!(bpf::exec_event, comm) == 24);
    assert!(offset_of!(ExecEvent, filename) == 40);
    assert!(offset_of!(bpf::exec_event, filename) == 40);
    assert!(size_of::<ExitEvent>() == 48);
    assert!(size_of::<bpf::exit_event>() == 48);
    assert!(offset_of!(ExitEvent, hdr) == 0);
    assert!(offset_of!(bpf::exit_event, hdr) == 0);
    assert!(offset_of!(ExitEvent, exit_code) == 24);
    assert!(offset_of!(bpf::exit_event, exit_code) == 24);
    assert!(offset_of!(ExitEvent, pad) == 28);
    assert!(offset_of!(bpf::exit_event, pad) == 28);
    assert!(offset_of!(ExitEvent, comm) == 32);
    assert!(offset_of!(bpf::exit_event, comm) == 32);
    assert!(size_of::<CommEvent>() == 56);
    assert!(size_of::<bpf::comm_event>() == 56);
    assert!(offset_of!(CommEvent, hdr) == 0);
    assert!(offset_of!(bpf::comm_event, hdr) == 0);
    assert!(offset_of!(CommEvent, old_comm) == 24);
    assert!(offset_of!(bpf::comm_event, old_comm) == 24);
    assert!(offset_of!(CommEvent, new_comm) == 40);
    assert!(offset_of!(bpf::comm_event, new_comm) == 40);
    assert!(size_of::<TaskCgroupEvent>() == 72);
    assert!(size_of::<bpf::task_cgroup_event>() == 72);
    assert!(offset_of!(TaskCgroupEvent, hdr) == 0);
    assert!(offset_of!(bpf::task_cgroup_event, hdr) == 0);
    assert!(offset_of!(TaskCgroupEvent, cgroup_id) == 24);
    assert!(offset_of!(bpf::task_cgroup_event, cgroup_id) == 24);
    assert!(offset_of!(TaskCgroupEvent, v1_cpu_cgroup_id) == 32);
    assert!(offset_of!(bpf::task_cgroup_event, v1_cpu_cgroup_id) == 32);
    assert!(offset_of!(TaskCgroupEvent, ns_pid) == 40);
    assert!(offset_of!(bpf::task_cgroup_event, ns_pid) == 40);
    assert!(offset_of!(TaskCgroupEvent, ns_tid) == 44);
    assert!(offset_of!(bpf::task_cgroup_event, ns_tid) == 44);
    assert!(offset_of!(TaskCgroupEvent, autogroup_id) == 48);
    assert!(offset_of!(bpf::task_cgroup_event, autogroup_id) == 48);
    assert!(offset_of!(TaskCgroupEvent, sched_cgroup_id) == 56);
    assert!(offset_of!(bpf::task_cgroup_event, sched_cgroup_id) == 56);
    assert!(offset_of!(TaskCgroupEvent, group_weight) == 64);
    assert!(offset_of!(bpf::task_cgroup_event, group_weight) == 64);
    assert!(offset_of!(TaskCgroupEvent, reserved) == 68);
    assert!(offset_of!(bpf::task_cgroup_event, reserved) == 68);
    assert!(size_of::<CgroupEvent>() == 1064);
    assert!(size_of::<bpf::cgroup_event>() == 1064);
    assert!(offset_of!(CgroupEvent, hdr) == 0);
    assert!(offset_of!(bpf::cgroup_event, hdr) == 0);
    assert!(offset_of!(CgroupEvent, cgroup_id) == 24);
    assert!(offset_of!(bpf::cgroup_event, cgroup_id) == 24);
    assert!(offset_of!(CgroupEvent, hierarchy) == 32);
    assert!(offset_of!(bpf::cgroup_event, hierarchy) == 32);
    assert!(offset_of!(CgroupEvent, pad) == 36);
    assert!(offset_of!(bpf::cgroup_event, pad) == 36);
    assert!(offset_of!(CgroupEvent, path) == 40);
    assert!(offset_of!(bpf::cgroup_event, path) == 40);
    assert!(size_of::<IrqEvent>() == 72);
    assert!(size_of::<bpf::irq_event>() == 72);
    assert!(offset_of!(IrqEvent, hdr) == 0);
    assert!(offset_of!(bpf::irq_event, hdr) == 0);
    assert!(offset_of!(IrqEvent, duration_ns) == 24);
    assert!(offset_of!(bpf::irq_event, duration_ns) == 24);
    assert!(offset_of!(IrqEvent, irq) == 32);
    assert!(offset_of!(bpf::irq_event, irq) == 32);
    assert!(offset_of!(IrqEvent, pad) == 36);
    assert!(offset_of!(bpf::irq_event, pad) == 36);
    assert!(offset_of!(IrqEvent, name) == 40);
    assert!(offset_of!(bpf::irq_event, name) == 40);
};

/// A record's layout as this binary was compiled: its C name, its size, each field's offset.
pub struct RingRecordLayout {
    pub name: &'static str,
    pub size: usize,
    pub fields: &'static [(&'static str, usize)],
}

/// Every record's layout, as compiled (`--print-schema`).
pub const RING_RECORD_LAYOUTS: [RingRecordLayout; 15] = [
    RingRecordLayout {
        name: "event_header",
        size: std::mem::size_of::<EventHeader>(),
        fields: &[
            ("ts_ns", std::mem::offset_of!(EventHeader, ts_ns)),
            ("type", std::mem::offset_of!(EventHeader, r#type)),
            ("cpu", std::mem::offset_of!(EventHeader, cpu)),
            ("pid", std::mem::offset_of!(EventHeader, pid)),
            ("tid", std::mem::offset_of!(EventHeader, tid)),
        ],
    },
    RingRecordLayout {
        name: "launch_event",
        size: std::mem::size_of::<LaunchEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(LaunchEvent, hdr)),
            ("func", std::mem::offset_of!(LaunchEvent, func)),
            ("stream", std::mem::offset_of!(LaunchEvent, stream)),
            ("grid", std::mem::offset_of!(LaunchEvent, grid)),
            ("block", std::mem::offset_of!(LaunchEvent, block)),
            ("shared_mem", std::mem::offset_of!(LaunchEvent, shared_mem)),
            ("api", std::mem::offset_of!(LaunchEvent, api)),
            ("runtime_api", std::mem::offset_of!(LaunchEvent, runtime_api)),
        ],
    },
    RingRecordLayout {
        name: "launch_batch",
        size: std::mem::size_of::<LaunchBatch>(),
        fields: &[
            ("hdr", std::mem::offset_of!(LaunchBatch, hdr)),
            ("count", std::mem::offset_of!(LaunchBatch, count)),
            ("pad", std::mem::offset_of!(LaunchBatch, pad)),
            ("launches", std::mem::offset_of!(LaunchBatch, launches)),
        ],
    },
    RingRecordLayout {
        name: "sync_event",
        size: std::mem::size_of::<SyncEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(SyncEvent, hdr)),
            ("duration_ns", std::mem::offset_of!(SyncEvent, duration_ns)),
            ("stream", std::mem::offset_of!(SyncEvent, stream)),
            ("bytes", std::mem::offset_of!(SyncEvent, bytes)),
            ("api", std::mem::offset_of!(SyncEvent, api)),
            ("runtime_api", std::mem::offset_of!(SyncEvent, runtime_api)),
            ("pad", std::mem::offset_of!(SyncEvent, pad)),
        ],
    },
    RingRecordLayout {
        name: "runtime_only_event",
        size: std::mem::size_of::<RuntimeOnlyEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(RuntimeOnlyEvent, hdr)),
            ("duration_ns", std::mem::offset_of!(RuntimeOnlyEvent, duration_ns)),
            ("return_code", std::mem::offset_of!(RuntimeOnlyEvent, return_code)),
            ("runtime_api", std::mem::offset_of!(RuntimeOnlyEvent, runtime_api)),
            ("pad", std::mem::offset_of!(RuntimeOnlyEvent, pad)),
        ],
    },
    RingRecordLayout {
        name: "switch_event",
        size: std::mem::size_of::<SwitchEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(SwitchEvent, hdr)),
            ("prev_state", std::mem::offset_of!(SwitchEvent, prev_state)),
            ("prev_nvcsw", std::mem::offset_of!(SwitchEvent, prev_nvcsw)),
            ("prev_nivcsw", std::mem::offset_of!(SwitchEvent, prev_nivcsw)),
            ("next_pid", std::mem::offset_of!(SwitchEvent, next_pid)),
            ("next_tid", std::mem::offset_of!(SwitchEvent, next_tid)),
            ("prev_prio", std::mem::offset_of!(SwitchEvent, prev_prio)),
            ("next_prio", std::mem::offset_of!(SwitchEvent, next_prio)),
            ("preempt", std::mem::offset_of!(SwitchEvent, preempt)),
            ("voluntary", std::mem::offset_of!(SwitchEvent, voluntary)),
            ("pad", std::mem::offset_of!(SwitchEvent, pad)),
            ("prev_comm", std::mem::offset_of!(SwitchEvent, prev_comm)),
            ("next_comm", std::mem::offset_of!(SwitchEvent, next_comm)),
        ],
    },
    RingRecordLayout {
        name: "wakeup_event",
        size: std::mem::size_of::<WakeupEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(WakeupEvent, hdr)),
            ("target_cpu", std::mem::offset_of!(WakeupEvent, target_cpu)),
            ("waker_tid", std::mem::offset_of!(WakeupEvent, waker_tid)),
            ("variant", std::mem::offset_of!(WakeupEvent, variant)),
            ("prio", std::mem::offset_of!(WakeupEvent, prio)),
            ("comm", std::mem::offset_of!(WakeupEvent, comm)),
        ],
    },
    RingRecordLayout {
        name: "migrate_event",
        size: std::mem::size_of::<MigrateEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(MigrateEvent, hdr)),
            ("orig_cpu", std::mem::offset_of!(MigrateEvent, orig_cpu)),
            ("dest_cpu", std::mem::offset_of!(MigrateEvent, dest_cpu)),
        ],
    },
    RingRecordLayout {
        name: "fork_event",
        size: std::mem::size_of::<ForkEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(ForkEvent, hdr)),
            ("child_pid", std::mem::offset_of!(ForkEvent, child_pid)),
            ("child_tid", std::mem::offset_of!(ForkEvent, child_tid)),
            ("comm", std::mem::offset_of!(ForkEvent, comm)),
        ],
    },
    RingRecordLayout {
        name: "exec_event",
        size: std::mem::size_of::<ExecEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(ExecEvent, hdr)),
            ("comm", std::mem::offset_of!(ExecEvent, comm)),
            ("filename", std::mem::offset_of!(ExecEvent, filename)),
        ],
    },
    RingRecordLayout {
        name: "exit_event",
        size: std::mem::size_of::<ExitEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(ExitEvent, hdr)),
            ("exit_code", std::mem::offset_of!(ExitEvent, exit_code)),
            ("pad", std::mem::offset_of!(ExitEvent, pad)),
            ("comm", std::mem::offset_of!(ExitEvent, comm)),
        ],
    },
    RingRecordLayout {
        name: "comm_event",
        size: std::mem::size_of::<CommEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(CommEvent, hdr)),
            ("old_comm", std::mem::offset_of!(CommEvent, old_comm)),
            ("new_comm", std::mem::offset_of!(CommEvent, new_comm)),
        ],
    },
    RingRecordLayout {
        name: "task_cgroup_event",
        size: std::mem::size_of::<TaskCgroupEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(TaskCgroupEvent, hdr)),
            ("cgroup_id", std::mem::offset_of!(TaskCgroupEvent, cgroup_id)),
            ("v1_cpu_cgroup_id", std::mem::offset_of!(TaskCgroupEvent, v1_cpu_cgroup_id)),
            ("ns_pid", std::mem::offset_of!(TaskCgroupEvent, ns_pid)),
            ("ns_tid", std::mem::offset_of!(TaskCgroupEvent, ns_tid)),
            ("autogroup_id", std::mem::offset_of!(TaskCgroupEvent, autogroup_id)),
            ("sched_cgroup_id", std::mem::offset_of!(TaskCgroupEvent, sched_cgroup_id)),
            ("group_weight", std::mem::offset_of!(TaskCgroupEvent, group_weight)),
            ("reserved", std::mem::offset_of!(TaskCgroupEvent, reserved)),
        ],
    },
    RingRecordLayout {
        name: "cgroup_event",
        size: std::mem::size_of::<CgroupEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(CgroupEvent, hdr)),
            ("cgroup_id", std::mem::offset_of!(CgroupEvent, cgroup_id)),
            ("hierarchy", std::mem::offset_of!(CgroupEvent, hierarchy)),
            ("pad", std::mem::offset_of!(CgroupEvent, pad)),
            ("path", std::mem::offset_of!(CgroupEvent, path)),
        ],
    },
    RingRecordLayout {
        name: "irq_event",
        size: std::mem::size_of::<IrqEvent>(),
        fields: &[
            ("hdr", std::mem::offset_of!(IrqEvent, hdr)),
            ("duration_ns", std::mem::offset_of!(IrqEvent, duration_ns)),
            ("irq", std::mem::offset_of!(IrqEvent, irq)),
            ("pad", std::mem::offset_of!(IrqEvent, pad)),
            ("name", std::mem::offset_of!(IrqEvent, name)),
        ],
    },
];
