// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

pub const FORMAT_NAME: &str = "launchgap-trace";
pub const FORMAT_VERSION: u32 = 2;
pub const META_FILE: &str = "meta.json";
pub const END_FILE: &str = "end.json";
pub const SEGMENT_DIGITS: usize = 6;
pub const SEGMENT_SUFFIX: &str = ".parquet";
pub const PARTIAL_SUFFIX: &str = ".partial";
pub const SEGMENT_SECONDS: u64 = 1;
pub const SEGMENT_ROWS: usize = 262144;
pub const FORMAT1_END_EVENT: &str = "trace_end";
/// bytes kept of the path of a cgroup made while recording, NUL included: what the kernel's cgroup tracepoints give (TRACE_CGROUP_PATH_LEN), which cut a longer path there
pub const CGROUP_PATH_LEN: u32 = 1024;
/// bytes kept of an exec's filename
pub const EXEC_FILENAME_LEN: u32 = 128;
/// bytes kept of a hard IRQ handler's name
pub const IRQ_NAME_LEN: u32 = 32;
/// launches a thread stages before they go to the ring buffer as one record
pub const LAUNCH_BATCH_SIZE: u32 = 16;
/// the record type of a launch batch: not an event kind (its drops count as launches)
pub const RECORD_LAUNCH_BATCH: u32 = 100;
/// bytes of a task name, NUL included (the kernel's TASK_COMM_LEN)
pub const TASK_COMM_LEN: u32 = 16;
/// the CPU a wakeup's target_cpu or a migration's orig_cpu holds on a kernel whose task_struct has no CPU field launchgap knows ((u32)-1: a number no CPU has; core_fixes.bpf.h task_cpu_of); the readers take it as unknown, not as an impossible CPU
pub const TASK_CPU_UNKNOWN: u32 = 4294967295;
/// the prev_state bit of a task's last switch-out (include/linux/sched.h)
pub const TASK_DEAD: u32 = 128;
/// Every constant, by name.
pub const CONSTANTS: [(&str, u32); 8] = [("CGROUP_PATH_LEN", CGROUP_PATH_LEN), ("EXEC_FILENAME_LEN", EXEC_FILENAME_LEN), ("IRQ_NAME_LEN", IRQ_NAME_LEN), ("LAUNCH_BATCH_SIZE", LAUNCH_BATCH_SIZE), ("RECORD_LAUNCH_BATCH", RECORD_LAUNCH_BATCH), ("TASK_COMM_LEN", TASK_COMM_LEN), ("TASK_CPU_UNKNOWN", TASK_CPU_UNKNOWN), ("TASK_DEAD", TASK_DEAD)];

/// enum event_type: the record types BPF programs put in the ring buffer.
pub mod record {
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
    pub const TASK_CGROUP: u32 = 14;
    pub const CGROUP_MADE: u32 = 15;
    pub const COUNT: u32 = 16;
}
/// The name of each record type (`lost_event` values), by id.
pub const RECORD_NAMES: [&str; 16] = ["unknown", "launch", "sync", "switch", "wakeup", "migrate", "fork", "exec", "exit", "comm", "hardirq", "softirq", "irq_vector", "runtime_only", "task_cgroup", "cgroup_made"];
/// The name tables: the library's (trace_names.rs), written once.
pub use launchgap_record::schema_names::*;

/// An event kind: one table in format 2, one `event` value in format 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Launch,
    Sync,
    RuntimeOnly,
    Switch,
    Waking,
    Wakeup,
    WakeupNew,
    Migrate,
    Fork,
    Exec,
    Exit,
    Comm,
    Hardirq,
    Softirq,
    IrqVector,
    Lost,
    TaskCgroup,
    Cgroup,
    GpuKernel,
    GpuGraph,
    GpuMemcpy,
    GpuMemset,
    GpuSync,
    GpuApi,
    GpuCollector,
    GpuCollectorThread,
}

impl Kind {
    pub const ALL: [Kind; 26] = [Kind::Launch, Kind::Sync, Kind::RuntimeOnly, Kind::Switch, Kind::Waking, Kind::Wakeup, Kind::WakeupNew, Kind::Migrate, Kind::Fork, Kind::Exec, Kind::Exit, Kind::Comm, Kind::Hardirq, Kind::Softirq, Kind::IrqVector, Kind::Lost, Kind::TaskCgroup, Kind::Cgroup, Kind::GpuKernel, Kind::GpuGraph, Kind::GpuMemcpy, Kind::GpuMemset, Kind::GpuSync, Kind::GpuApi, Kind::GpuCollector, Kind::GpuCollectorThread];
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Launch => "launch",
            Kind::Sync => "sync",
            Kind::RuntimeOnly => "runtime_only",
            Kind::Switch => "switch",
            Kind::Waking => "waking",
            Kind::Wakeup => "wakeup",
            Kind::WakeupNew => "wakeup_new",
            Kind::Migrate => "migrate",
            Kind::Fork => "fork",
            Kind::Exec => "exec",
            Kind::Exit => "exit",
            Kind::Comm => "comm",
            Kind::Hardirq => "hardirq",
            Kind::Softirq => "softirq",
            Kind::IrqVector => "irq_vector",
            Kind::Lost => "lost",
            Kind::TaskCgroup => "task_cgroup",
            Kind::Cgroup => "cgroup",
            Kind::GpuKernel => "gpu_kernel",
            Kind::GpuGraph => "gpu_graph",
            Kind::GpuMemcpy => "gpu_memcpy",
            Kind::GpuMemset => "gpu_memset",
            Kind::GpuSync => "gpu_sync",
            Kind::GpuApi => "gpu_api",
            Kind::GpuCollector => "gpu_collector",
            Kind::GpuCollectorThread => "gpu_collector_thread",
        }
    }

    /// The columns of the kind's table (format 2), in order.
    pub fn columns(self) -> &'static [ColumnSpec] {
        KIND_COLUMNS[self as usize]
    }

    /// The kind a wakeup record of this variant (enum wakeup_variant) is.
    pub fn of_wakeup_variant(variant: u32) -> Option<Kind> {
        match variant {
            0 => Some(Kind::Waking),
            1 => Some(Kind::Wakeup),
            2 => Some(Kind::WakeupNew),
            _ => None,
        }
    }

    /// The record type the kind is decoded from (None: made in user space).
    pub const fn record(self) -> Option<u32> {
        match self {
            Kind::Launch => Some(record::LAUNCH),
            Kind::Sync => Some(record::SYNC),
            Kind::RuntimeOnly => Some(record::RUNTIME_ONLY),
            Kind::Switch => Some(record::SWITCH),
            Kind::Waking => Some(record::WAKEUP),
            Kind::Wakeup => Some(record::WAKEUP),
            Kind::WakeupNew => Some(record::WAKEUP),
            Kind::Migrate => Some(record::MIGRATE),
            Kind::Fork => Some(record::FORK),
            Kind::Exec => Some(record::EXEC),
            Kind::Exit => Some(record::EXIT),
            Kind::Comm => Some(record::COMM),
            Kind::Hardirq => Some(record::HARDIRQ),
            Kind::Softirq => Some(record::SOFTIRQ),
            Kind::IrqVector => Some(record::IRQ_VECTOR),
            Kind::Lost => None,
            Kind::TaskCgroup => Some(record::TASK_CGROUP),
            Kind::Cgroup => Some(record::CGROUP_MADE),
            Kind::GpuKernel => None,
            Kind::GpuGraph => None,
            Kind::GpuMemcpy => None,
            Kind::GpuMemset => None,
            Kind::GpuSync => None,
            Kind::GpuApi => None,
            Kind::GpuCollector => None,
            Kind::GpuCollectorThread => None,
        }
    }
}

/// Each kind's columns (format 2), by Kind as usize; optional ones last written by other sources.
pub const KIND_COLUMNS: [&[ColumnSpec]; 26] = [
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: true, optional: true, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "api", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "runtime_api", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "func", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_x", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_y", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_z", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_x", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_y", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_z", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "shared_mem", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: true, optional: true, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("duration"), encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "api", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "runtime_api", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "bytes", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("duration"), encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "runtime_api", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "return_code", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "prev_state", arrow: ArrowType::Int64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "preempt", arrow: ArrowType::Boolean, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "voluntary", arrow: ArrowType::Boolean, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "nvcsw", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "nivcsw", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "prio", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "next_pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "next_tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "next_comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "next_prio", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "prio", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "target_cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "waker_tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "prio", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "target_cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "waker_tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "prio", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "target_cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "waker_tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: true, optional: true, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "orig_cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "dest_cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "child_pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "child_tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "filename", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "exit_code", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "old_comm", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("duration"), encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "irq", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "irq_name", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("duration"), encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "irq", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "irq_name", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("duration"), encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "irq", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "irq_name", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: true, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "lost_event", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "lost_count", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "since_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "detail", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("cpu"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "cgroup_id", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "v1_cpu_cgroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "ns_pid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "ns_tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "autogroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "sched_cgroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "group_weight", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "cgroup_id", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "hierarchy", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "cgroup_path", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "container_id", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "pod", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_x", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_y", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "grid_z", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_x", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_y", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "block_z", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "shared_mem", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "device_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "kernel_name", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "graph_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "device_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "graph_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "bytes", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "device_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "copy_kind", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "bytes", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "device_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
        ColumnSpec { name: "sync_type", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "api", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "return_code", arrow: ArrowType::Int32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "detail", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "state", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Dictionary },
    ],
    &[
        ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: Some("time"), encoding: ColumnEncoding::Delta },
        ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
        ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: false, optional: false, role: Some("task"), encoding: ColumnEncoding::Dictionary },
    ],
];

/// Format 1's wide table: every column, nullable but ts_ns and event.
pub const FORMAT1_COLUMNS: &[ColumnSpec] = &[
    ColumnSpec { name: "ts_ns", arrow: ArrowType::UInt64, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "event", arrow: ArrowType::Utf8, nullable: false, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "cpu", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "pid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "comm", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "duration_ns", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "api", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "runtime_api", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "func", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "stream", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "grid_x", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "grid_y", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "grid_z", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "block_x", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "block_y", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "block_z", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "shared_mem", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "bytes", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "prev_state", arrow: ArrowType::Int64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "preempt", arrow: ArrowType::Boolean, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "voluntary", arrow: ArrowType::Boolean, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "nvcsw", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "nivcsw", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "prio", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "next_pid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "next_tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "next_comm", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "next_prio", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "target_cpu", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "waker_tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "orig_cpu", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "dest_cpu", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "child_pid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "child_tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "filename", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "old_comm", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "exit_code", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "irq", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "irq_name", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "lost_event", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "lost_count", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "since_ns", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "detail", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "return_code", arrow: ArrowType::Int32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "end_ns", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "device_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "context_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "stream_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "correlation_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "kernel_name", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "graph_id", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "copy_kind", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "sync_type", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "state", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "cgroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "v1_cpu_cgroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "hierarchy", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "cgroup_path", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "container_id", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "pod", arrow: ArrowType::Utf8, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "ns_pid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "ns_tid", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "autogroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "sched_cgroup_id", arrow: ArrowType::UInt64, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
    ColumnSpec { name: "group_weight", arrow: ArrowType::UInt32, nullable: true, optional: false, role: None, encoding: ColumnEncoding::Plain },
];

/// A `launch` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub api: &'a str,
    pub runtime_api: Option<&'a str>,
    pub func: Option<u64>,
    pub stream: u64,
    pub grid_x: u32,
    pub grid_y: u32,
    pub grid_z: u32,
    pub block_x: u32,
    pub block_y: u32,
    pub block_z: u32,
    pub shared_mem: u32,
}

/// A `sync` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub duration_ns: u64,
    pub api: &'a str,
    pub runtime_api: Option<&'a str>,
    pub stream: Option<u64>,
    pub bytes: Option<u64>,
}

/// A `runtime_only` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RuntimeOnlyRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub duration_ns: u64,
    pub runtime_api: &'a str,
    pub return_code: i32,
}

/// A `switch` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SwitchRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub prev_state: i64,
    pub preempt: Option<bool>,
    pub voluntary: Option<bool>,
    pub nvcsw: Option<u64>,
    pub nivcsw: Option<u64>,
    pub prio: Option<i32>,
    pub next_pid: u32,
    pub next_tid: u32,
    pub next_comm: &'a str,
    pub next_prio: Option<i32>,
}

/// A `waking` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WakingRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub prio: i32,
    pub target_cpu: u32,
    pub waker_tid: u32,
}

/// A `wakeup` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WakeupRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub prio: i32,
    pub target_cpu: u32,
    pub waker_tid: u32,
}

/// A `wakeup_new` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WakeupNewRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub prio: i32,
    pub target_cpu: u32,
    pub waker_tid: u32,
}

/// A `migrate` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MigrateRow {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub orig_cpu: u32,
    pub dest_cpu: u32,
}

/// A `fork` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ForkRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub child_pid: u32,
    pub child_tid: u32,
}

/// A `exec` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExecRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub filename: &'a str,
}

/// A `exit` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExitRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub exit_code: Option<i32>,
}

/// A `comm` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CommRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub old_comm: &'a str,
}

/// A `hardirq` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HardirqRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub duration_ns: u64,
    pub irq: i32,
    pub irq_name: &'a str,
}

/// A `softirq` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SoftirqRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub duration_ns: u64,
    pub irq: i32,
    pub irq_name: &'a str,
}

/// A `irq_vector` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IrqVectorRow<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub duration_ns: u64,
    pub irq: i32,
    pub irq_name: &'a str,
}

/// A `lost` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LostRow<'a> {
    pub ts_ns: u64,
    pub cpu: Option<u32>,
    pub lost_event: &'a str,
    pub lost_count: u64,
    pub since_ns: u64,
    pub detail: Option<&'a str>,
}

/// A `task_cgroup` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskCgroupRow {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub cgroup_id: u64,
    pub v1_cpu_cgroup_id: Option<u64>,
    pub ns_pid: Option<u32>,
    pub ns_tid: Option<u32>,
    pub autogroup_id: Option<u64>,
    pub sched_cgroup_id: Option<u64>,
    pub group_weight: Option<u32>,
}

/// A `cgroup` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CgroupRow<'a> {
    pub ts_ns: u64,
    pub cgroup_id: u64,
    pub hierarchy: &'a str,
    pub cgroup_path: &'a str,
    pub container_id: Option<&'a str>,
    pub pod: Option<&'a str>,
}

/// A `gpu_kernel` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuKernelRow<'a> {
    pub ts_ns: u64,
    pub pid: u32,
    pub grid_x: u32,
    pub grid_y: u32,
    pub grid_z: u32,
    pub block_x: u32,
    pub block_y: u32,
    pub block_z: u32,
    pub shared_mem: u32,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub kernel_name: &'a str,
    pub graph_id: Option<u32>,
}

/// A `gpu_graph` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuGraphRow {
    pub ts_ns: u64,
    pub pid: u32,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub graph_id: u32,
}

/// A `gpu_memcpy` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuMemcpyRow<'a> {
    pub ts_ns: u64,
    pub pid: u32,
    pub bytes: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub copy_kind: &'a str,
}

/// A `gpu_memset` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuMemsetRow {
    pub ts_ns: u64,
    pub pid: u32,
    pub bytes: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
}

/// A `gpu_sync` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuSyncRow<'a> {
    pub ts_ns: u64,
    pub pid: u32,
    pub end_ns: u64,
    pub context_id: u32,
    pub stream_id: Option<u32>,
    pub correlation_id: u32,
    pub sync_type: &'a str,
}

/// A `gpu_api` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuApiRow<'a> {
    pub ts_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub api: &'a str,
    pub return_code: i32,
    pub end_ns: u64,
    pub correlation_id: u32,
}

/// A `gpu_collector` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuCollectorRow<'a> {
    pub ts_ns: u64,
    pub pid: u32,
    pub detail: &'a str,
    pub state: &'a str,
}

/// A `gpu_collector_thread` row; `None` is null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuCollectorThreadRow {
    pub ts_ns: u64,
    pub pid: u32,
    pub tid: u32,
}

/// One event of any kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Row<'a> {
    Launch(LaunchRow<'a>),
    Sync(SyncRow<'a>),
    RuntimeOnly(RuntimeOnlyRow<'a>),
    Switch(SwitchRow<'a>),
    Waking(WakingRow<'a>),
    Wakeup(WakeupRow<'a>),
    WakeupNew(WakeupNewRow<'a>),
    Migrate(MigrateRow),
    Fork(ForkRow<'a>),
    Exec(ExecRow<'a>),
    Exit(ExitRow<'a>),
    Comm(CommRow<'a>),
    Hardirq(HardirqRow<'a>),
    Softirq(SoftirqRow<'a>),
    IrqVector(IrqVectorRow<'a>),
    Lost(LostRow<'a>),
    TaskCgroup(TaskCgroupRow),
    Cgroup(CgroupRow<'a>),
    GpuKernel(GpuKernelRow<'a>),
    GpuGraph(GpuGraphRow),
    GpuMemcpy(GpuMemcpyRow<'a>),
    GpuMemset(GpuMemsetRow),
    GpuSync(GpuSyncRow<'a>),
    GpuApi(GpuApiRow<'a>),
    GpuCollector(GpuCollectorRow<'a>),
    GpuCollectorThread(GpuCollectorThreadRow),
}

impl Row<'_> {
    pub fn kind(&self) -> Kind {
        match self {
            Row::Launch(_) => Kind::Launch,
            Row::Sync(_) => Kind::Sync,
            Row::RuntimeOnly(_) => Kind::RuntimeOnly,
            Row::Switch(_) => Kind::Switch,
            Row::Waking(_) => Kind::Waking,
            Row::Wakeup(_) => Kind::Wakeup,
            Row::WakeupNew(_) => Kind::WakeupNew,
            Row::Migrate(_) => Kind::Migrate,
            Row::Fork(_) => Kind::Fork,
            Row::Exec(_) => Kind::Exec,
            Row::Exit(_) => Kind::Exit,
            Row::Comm(_) => Kind::Comm,
            Row::Hardirq(_) => Kind::Hardirq,
            Row::Softirq(_) => Kind::Softirq,
            Row::IrqVector(_) => Kind::IrqVector,
            Row::Lost(_) => Kind::Lost,
            Row::TaskCgroup(_) => Kind::TaskCgroup,
            Row::Cgroup(_) => Kind::Cgroup,
            Row::GpuKernel(_) => Kind::GpuKernel,
            Row::GpuGraph(_) => Kind::GpuGraph,
            Row::GpuMemcpy(_) => Kind::GpuMemcpy,
            Row::GpuMemset(_) => Kind::GpuMemset,
            Row::GpuSync(_) => Kind::GpuSync,
            Row::GpuApi(_) => Kind::GpuApi,
            Row::GpuCollector(_) => Kind::GpuCollector,
            Row::GpuCollectorThread(_) => Kind::GpuCollectorThread,
        }
    }

    pub fn ts_ns(&self) -> u64 {
        match self {
            Row::Launch(r) => r.ts_ns,
            Row::Sync(r) => r.ts_ns,
            Row::RuntimeOnly(r) => r.ts_ns,
            Row::Switch(r) => r.ts_ns,
            Row::Waking(r) => r.ts_ns,
            Row::Wakeup(r) => r.ts_ns,
            Row::WakeupNew(r) => r.ts_ns,
            Row::Migrate(r) => r.ts_ns,
            Row::Fork(r) => r.ts_ns,
            Row::Exec(r) => r.ts_ns,
            Row::Exit(r) => r.ts_ns,
            Row::Comm(r) => r.ts_ns,
            Row::Hardirq(r) => r.ts_ns,
            Row::Softirq(r) => r.ts_ns,
            Row::IrqVector(r) => r.ts_ns,
            Row::Lost(r) => r.ts_ns,
            Row::TaskCgroup(r) => r.ts_ns,
            Row::Cgroup(r) => r.ts_ns,
            Row::GpuKernel(r) => r.ts_ns,
            Row::GpuGraph(r) => r.ts_ns,
            Row::GpuMemcpy(r) => r.ts_ns,
            Row::GpuMemset(r) => r.ts_ns,
            Row::GpuSync(r) => r.ts_ns,
            Row::GpuApi(r) => r.ts_ns,
            Row::GpuCollector(r) => r.ts_ns,
            Row::GpuCollectorThread(r) => r.ts_ns,
        }
    }
}

/// Arrow arrays of `launch` rows.
pub struct LaunchBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    api: StringBuilder,
    runtime_api: StringBuilder,
    func: UInt64Builder,
    stream: UInt64Builder,
    grid_x: UInt32Builder,
    grid_y: UInt32Builder,
    grid_z: UInt32Builder,
    block_x: UInt32Builder,
    block_y: UInt32Builder,
    block_z: UInt32Builder,
    shared_mem: UInt32Builder,
}

impl LaunchBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            api: StringBuilder::new(),
            runtime_api: StringBuilder::new(),
            func: UInt64Builder::new(),
            stream: UInt64Builder::new(),
            grid_x: UInt32Builder::new(),
            grid_y: UInt32Builder::new(),
            grid_z: UInt32Builder::new(),
            block_x: UInt32Builder::new(),
            block_y: UInt32Builder::new(),
            block_z: UInt32Builder::new(),
            shared_mem: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &LaunchRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.api.append_value(row.api);
        self.runtime_api.append_option(row.runtime_api);
        self.func.append_option(row.func);
        self.stream.append_value(row.stream);
        self.grid_x.append_value(row.grid_x);
        self.grid_y.append_value(row.grid_y);
        self.grid_z.append_value(row.grid_z);
        self.block_x.append_value(row.block_x);
        self.block_y.append_value(row.block_y);
        self.block_z.append_value(row.block_z);
        self.shared_mem.append_value(row.shared_mem);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.api.finish()) as ArrayRef,
            Arc::new(self.runtime_api.finish()) as ArrayRef,
            Arc::new(self.func.finish()) as ArrayRef,
            Arc::new(self.stream.finish()) as ArrayRef,
            Arc::new(self.grid_x.finish()) as ArrayRef,
            Arc::new(self.grid_y.finish()) as ArrayRef,
            Arc::new(self.grid_z.finish()) as ArrayRef,
            Arc::new(self.block_x.finish()) as ArrayRef,
            Arc::new(self.block_y.finish()) as ArrayRef,
            Arc::new(self.block_z.finish()) as ArrayRef,
            Arc::new(self.shared_mem.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `sync` rows.
pub struct SyncBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    duration_ns: UInt64Builder,
    api: StringBuilder,
    runtime_api: StringBuilder,
    stream: UInt64Builder,
    bytes: UInt64Builder,
}

impl SyncBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            duration_ns: UInt64Builder::new(),
            api: StringBuilder::new(),
            runtime_api: StringBuilder::new(),
            stream: UInt64Builder::new(),
            bytes: UInt64Builder::new(),
        }
    }

    pub fn append(&mut self, row: &SyncRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.duration_ns.append_value(row.duration_ns);
        self.api.append_value(row.api);
        self.runtime_api.append_option(row.runtime_api);
        self.stream.append_option(row.stream);
        self.bytes.append_option(row.bytes);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.api.finish()) as ArrayRef,
            Arc::new(self.runtime_api.finish()) as ArrayRef,
            Arc::new(self.stream.finish()) as ArrayRef,
            Arc::new(self.bytes.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `runtime_only` rows.
pub struct RuntimeOnlyBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    duration_ns: UInt64Builder,
    runtime_api: StringBuilder,
    return_code: Int32Builder,
}

impl RuntimeOnlyBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            duration_ns: UInt64Builder::new(),
            runtime_api: StringBuilder::new(),
            return_code: Int32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &RuntimeOnlyRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.duration_ns.append_value(row.duration_ns);
        self.runtime_api.append_value(row.runtime_api);
        self.return_code.append_value(row.return_code);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.runtime_api.finish()) as ArrayRef,
            Arc::new(self.return_code.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `switch` rows.
pub struct SwitchBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    prev_state: Int64Builder,
    preempt: BooleanBuilder,
    voluntary: BooleanBuilder,
    nvcsw: UInt64Builder,
    nivcsw: UInt64Builder,
    prio: Int32Builder,
    next_pid: UInt32Builder,
    next_tid: UInt32Builder,
    next_comm: StringBuilder,
    next_prio: Int32Builder,
}

impl SwitchBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            prev_state: Int64Builder::new(),
            preempt: BooleanBuilder::new(),
            voluntary: BooleanBuilder::new(),
            nvcsw: UInt64Builder::new(),
            nivcsw: UInt64Builder::new(),
            prio: Int32Builder::new(),
            next_pid: UInt32Builder::new(),
            next_tid: UInt32Builder::new(),
            next_comm: StringBuilder::new(),
            next_prio: Int32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &SwitchRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.prev_state.append_value(row.prev_state);
        self.preempt.append_option(row.preempt);
        self.voluntary.append_option(row.voluntary);
        self.nvcsw.append_option(row.nvcsw);
        self.nivcsw.append_option(row.nivcsw);
        self.prio.append_option(row.prio);
        self.next_pid.append_value(row.next_pid);
        self.next_tid.append_value(row.next_tid);
        self.next_comm.append_value(row.next_comm);
        self.next_prio.append_option(row.next_prio);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.prev_state.finish()) as ArrayRef,
            Arc::new(self.preempt.finish()) as ArrayRef,
            Arc::new(self.voluntary.finish()) as ArrayRef,
            Arc::new(self.nvcsw.finish()) as ArrayRef,
            Arc::new(self.nivcsw.finish()) as ArrayRef,
            Arc::new(self.prio.finish()) as ArrayRef,
            Arc::new(self.next_pid.finish()) as ArrayRef,
            Arc::new(self.next_tid.finish()) as ArrayRef,
            Arc::new(self.next_comm.finish()) as ArrayRef,
            Arc::new(self.next_prio.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `waking` rows.
pub struct WakingBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    prio: Int32Builder,
    target_cpu: UInt32Builder,
    waker_tid: UInt32Builder,
}

impl WakingBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            prio: Int32Builder::new(),
            target_cpu: UInt32Builder::new(),
            waker_tid: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &WakingRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.prio.append_value(row.prio);
        self.target_cpu.append_value(row.target_cpu);
        self.waker_tid.append_value(row.waker_tid);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.prio.finish()) as ArrayRef,
            Arc::new(self.target_cpu.finish()) as ArrayRef,
            Arc::new(self.waker_tid.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `wakeup` rows.
pub struct WakeupBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    prio: Int32Builder,
    target_cpu: UInt32Builder,
    waker_tid: UInt32Builder,
}

impl WakeupBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            prio: Int32Builder::new(),
            target_cpu: UInt32Builder::new(),
            waker_tid: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &WakeupRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.prio.append_value(row.prio);
        self.target_cpu.append_value(row.target_cpu);
        self.waker_tid.append_value(row.waker_tid);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.prio.finish()) as ArrayRef,
            Arc::new(self.target_cpu.finish()) as ArrayRef,
            Arc::new(self.waker_tid.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `wakeup_new` rows.
pub struct WakeupNewBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    prio: Int32Builder,
    target_cpu: UInt32Builder,
    waker_tid: UInt32Builder,
}

impl WakeupNewBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            prio: Int32Builder::new(),
            target_cpu: UInt32Builder::new(),
            waker_tid: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &WakeupNewRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.prio.append_value(row.prio);
        self.target_cpu.append_value(row.target_cpu);
        self.waker_tid.append_value(row.waker_tid);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.prio.finish()) as ArrayRef,
            Arc::new(self.target_cpu.finish()) as ArrayRef,
            Arc::new(self.waker_tid.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `migrate` rows.
pub struct MigrateBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    orig_cpu: UInt32Builder,
    dest_cpu: UInt32Builder,
}

impl MigrateBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            orig_cpu: UInt32Builder::new(),
            dest_cpu: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &MigrateRow) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.orig_cpu.append_value(row.orig_cpu);
        self.dest_cpu.append_value(row.dest_cpu);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.orig_cpu.finish()) as ArrayRef,
            Arc::new(self.dest_cpu.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `fork` rows.
pub struct ForkBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    child_pid: UInt32Builder,
    child_tid: UInt32Builder,
}

impl ForkBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            child_pid: UInt32Builder::new(),
            child_tid: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &ForkRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.child_pid.append_value(row.child_pid);
        self.child_tid.append_value(row.child_tid);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.child_pid.finish()) as ArrayRef,
            Arc::new(self.child_tid.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `exec` rows.
pub struct ExecBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    filename: StringBuilder,
}

impl ExecBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            filename: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &ExecRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.filename.append_value(row.filename);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.filename.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `exit` rows.
pub struct ExitBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    exit_code: Int32Builder,
}

impl ExitBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            exit_code: Int32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &ExitRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.exit_code.append_option(row.exit_code);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.exit_code.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `comm` rows.
pub struct CommBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    old_comm: StringBuilder,
}

impl CommBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            old_comm: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &CommRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.comm.append_value(row.comm);
        self.old_comm.append_value(row.old_comm);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.old_comm.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `hardirq` rows.
pub struct HardirqBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    duration_ns: UInt64Builder,
    irq: Int32Builder,
    irq_name: StringBuilder,
}

impl HardirqBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            duration_ns: UInt64Builder::new(),
            irq: Int32Builder::new(),
            irq_name: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &HardirqRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.duration_ns.append_value(row.duration_ns);
        self.irq.append_value(row.irq);
        self.irq_name.append_value(row.irq_name);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.irq.finish()) as ArrayRef,
            Arc::new(self.irq_name.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `softirq` rows.
pub struct SoftirqBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    duration_ns: UInt64Builder,
    irq: Int32Builder,
    irq_name: StringBuilder,
}

impl SoftirqBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            duration_ns: UInt64Builder::new(),
            irq: Int32Builder::new(),
            irq_name: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &SoftirqRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.duration_ns.append_value(row.duration_ns);
        self.irq.append_value(row.irq);
        self.irq_name.append_value(row.irq_name);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.irq.finish()) as ArrayRef,
            Arc::new(self.irq_name.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `irq_vector` rows.
pub struct IrqVectorBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    duration_ns: UInt64Builder,
    irq: Int32Builder,
    irq_name: StringBuilder,
}

impl IrqVectorBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            duration_ns: UInt64Builder::new(),
            irq: Int32Builder::new(),
            irq_name: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &IrqVectorRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.duration_ns.append_value(row.duration_ns);
        self.irq.append_value(row.irq);
        self.irq_name.append_value(row.irq_name);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.irq.finish()) as ArrayRef,
            Arc::new(self.irq_name.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `lost` rows.
pub struct LostBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    lost_event: StringBuilder,
    lost_count: UInt64Builder,
    since_ns: UInt64Builder,
    detail: StringBuilder,
}

impl LostBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            lost_event: StringBuilder::new(),
            lost_count: UInt64Builder::new(),
            since_ns: UInt64Builder::new(),
            detail: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &LostRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_option(row.cpu);
        self.lost_event.append_value(row.lost_event);
        self.lost_count.append_value(row.lost_count);
        self.since_ns.append_value(row.since_ns);
        self.detail.append_option(row.detail);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.lost_event.finish()) as ArrayRef,
            Arc::new(self.lost_count.finish()) as ArrayRef,
            Arc::new(self.since_ns.finish()) as ArrayRef,
            Arc::new(self.detail.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `task_cgroup` rows.
pub struct TaskCgroupBuilder {
    ts_ns: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    cgroup_id: UInt64Builder,
    v1_cpu_cgroup_id: UInt64Builder,
    ns_pid: UInt32Builder,
    ns_tid: UInt32Builder,
    autogroup_id: UInt64Builder,
    sched_cgroup_id: UInt64Builder,
    group_weight: UInt32Builder,
}

impl TaskCgroupBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            cgroup_id: UInt64Builder::new(),
            v1_cpu_cgroup_id: UInt64Builder::new(),
            ns_pid: UInt32Builder::new(),
            ns_tid: UInt32Builder::new(),
            autogroup_id: UInt64Builder::new(),
            sched_cgroup_id: UInt64Builder::new(),
            group_weight: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &TaskCgroupRow) {
        self.ts_ns.append_value(row.ts_ns);
        self.cpu.append_value(row.cpu);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.cgroup_id.append_value(row.cgroup_id);
        self.v1_cpu_cgroup_id.append_option(row.v1_cpu_cgroup_id);
        self.ns_pid.append_option(row.ns_pid);
        self.ns_tid.append_option(row.ns_tid);
        self.autogroup_id.append_option(row.autogroup_id);
        self.sched_cgroup_id.append_option(row.sched_cgroup_id);
        self.group_weight.append_option(row.group_weight);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.cgroup_id.finish()) as ArrayRef,
            Arc::new(self.v1_cpu_cgroup_id.finish()) as ArrayRef,
            Arc::new(self.ns_pid.finish()) as ArrayRef,
            Arc::new(self.ns_tid.finish()) as ArrayRef,
            Arc::new(self.autogroup_id.finish()) as ArrayRef,
            Arc::new(self.sched_cgroup_id.finish()) as ArrayRef,
            Arc::new(self.group_weight.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `cgroup` rows.
pub struct CgroupBuilder {
    ts_ns: UInt64Builder,
    cgroup_id: UInt64Builder,
    hierarchy: StringBuilder,
    cgroup_path: StringBuilder,
    container_id: StringBuilder,
    pod: StringBuilder,
}

impl CgroupBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            cgroup_id: UInt64Builder::new(),
            hierarchy: StringBuilder::new(),
            cgroup_path: StringBuilder::new(),
            container_id: StringBuilder::new(),
            pod: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &CgroupRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.cgroup_id.append_value(row.cgroup_id);
        self.hierarchy.append_value(row.hierarchy);
        self.cgroup_path.append_value(row.cgroup_path);
        self.container_id.append_option(row.container_id);
        self.pod.append_option(row.pod);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.cgroup_id.finish()) as ArrayRef,
            Arc::new(self.hierarchy.finish()) as ArrayRef,
            Arc::new(self.cgroup_path.finish()) as ArrayRef,
            Arc::new(self.container_id.finish()) as ArrayRef,
            Arc::new(self.pod.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_kernel` rows.
pub struct GpuKernelBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    grid_x: UInt32Builder,
    grid_y: UInt32Builder,
    grid_z: UInt32Builder,
    block_x: UInt32Builder,
    block_y: UInt32Builder,
    block_z: UInt32Builder,
    shared_mem: UInt32Builder,
    end_ns: UInt64Builder,
    device_id: UInt32Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
    kernel_name: StringBuilder,
    graph_id: UInt32Builder,
}

impl GpuKernelBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            grid_x: UInt32Builder::new(),
            grid_y: UInt32Builder::new(),
            grid_z: UInt32Builder::new(),
            block_x: UInt32Builder::new(),
            block_y: UInt32Builder::new(),
            block_z: UInt32Builder::new(),
            shared_mem: UInt32Builder::new(),
            end_ns: UInt64Builder::new(),
            device_id: UInt32Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
            kernel_name: StringBuilder::new(),
            graph_id: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuKernelRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.grid_x.append_value(row.grid_x);
        self.grid_y.append_value(row.grid_y);
        self.grid_z.append_value(row.grid_z);
        self.block_x.append_value(row.block_x);
        self.block_y.append_value(row.block_y);
        self.block_z.append_value(row.block_z);
        self.shared_mem.append_value(row.shared_mem);
        self.end_ns.append_value(row.end_ns);
        self.device_id.append_value(row.device_id);
        self.context_id.append_value(row.context_id);
        self.stream_id.append_value(row.stream_id);
        self.correlation_id.append_value(row.correlation_id);
        self.kernel_name.append_value(row.kernel_name);
        self.graph_id.append_option(row.graph_id);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.grid_x.finish()) as ArrayRef,
            Arc::new(self.grid_y.finish()) as ArrayRef,
            Arc::new(self.grid_z.finish()) as ArrayRef,
            Arc::new(self.block_x.finish()) as ArrayRef,
            Arc::new(self.block_y.finish()) as ArrayRef,
            Arc::new(self.block_z.finish()) as ArrayRef,
            Arc::new(self.shared_mem.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.device_id.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
            Arc::new(self.kernel_name.finish()) as ArrayRef,
            Arc::new(self.graph_id.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_graph` rows.
pub struct GpuGraphBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    end_ns: UInt64Builder,
    device_id: UInt32Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
    graph_id: UInt32Builder,
}

impl GpuGraphBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            end_ns: UInt64Builder::new(),
            device_id: UInt32Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
            graph_id: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuGraphRow) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.end_ns.append_value(row.end_ns);
        self.device_id.append_value(row.device_id);
        self.context_id.append_value(row.context_id);
        self.stream_id.append_value(row.stream_id);
        self.correlation_id.append_value(row.correlation_id);
        self.graph_id.append_value(row.graph_id);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.device_id.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
            Arc::new(self.graph_id.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_memcpy` rows.
pub struct GpuMemcpyBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    bytes: UInt64Builder,
    end_ns: UInt64Builder,
    device_id: UInt32Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
    copy_kind: StringBuilder,
}

impl GpuMemcpyBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            bytes: UInt64Builder::new(),
            end_ns: UInt64Builder::new(),
            device_id: UInt32Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
            copy_kind: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuMemcpyRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.bytes.append_value(row.bytes);
        self.end_ns.append_value(row.end_ns);
        self.device_id.append_value(row.device_id);
        self.context_id.append_value(row.context_id);
        self.stream_id.append_value(row.stream_id);
        self.correlation_id.append_value(row.correlation_id);
        self.copy_kind.append_value(row.copy_kind);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.bytes.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.device_id.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
            Arc::new(self.copy_kind.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_memset` rows.
pub struct GpuMemsetBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    bytes: UInt64Builder,
    end_ns: UInt64Builder,
    device_id: UInt32Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
}

impl GpuMemsetBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            bytes: UInt64Builder::new(),
            end_ns: UInt64Builder::new(),
            device_id: UInt32Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuMemsetRow) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.bytes.append_value(row.bytes);
        self.end_ns.append_value(row.end_ns);
        self.device_id.append_value(row.device_id);
        self.context_id.append_value(row.context_id);
        self.stream_id.append_value(row.stream_id);
        self.correlation_id.append_value(row.correlation_id);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.bytes.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.device_id.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_sync` rows.
pub struct GpuSyncBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    end_ns: UInt64Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
    sync_type: StringBuilder,
}

impl GpuSyncBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            end_ns: UInt64Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
            sync_type: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuSyncRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.end_ns.append_value(row.end_ns);
        self.context_id.append_value(row.context_id);
        self.stream_id.append_option(row.stream_id);
        self.correlation_id.append_value(row.correlation_id);
        self.sync_type.append_value(row.sync_type);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
            Arc::new(self.sync_type.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_api` rows.
pub struct GpuApiBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    api: StringBuilder,
    return_code: Int32Builder,
    end_ns: UInt64Builder,
    correlation_id: UInt32Builder,
}

impl GpuApiBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            api: StringBuilder::new(),
            return_code: Int32Builder::new(),
            end_ns: UInt64Builder::new(),
            correlation_id: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuApiRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
        self.api.append_value(row.api);
        self.return_code.append_value(row.return_code);
        self.end_ns.append_value(row.end_ns);
        self.correlation_id.append_value(row.correlation_id);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.api.finish()) as ArrayRef,
            Arc::new(self.return_code.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_collector` rows.
pub struct GpuCollectorBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    detail: StringBuilder,
    state: StringBuilder,
}

impl GpuCollectorBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            detail: StringBuilder::new(),
            state: StringBuilder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuCollectorRow<'_>) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.detail.append_value(row.detail);
        self.state.append_value(row.state);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.detail.finish()) as ArrayRef,
            Arc::new(self.state.finish()) as ArrayRef,
        ]
    }
}

/// Arrow arrays of `gpu_collector_thread` rows.
pub struct GpuCollectorThreadBuilder {
    ts_ns: UInt64Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
}

impl GpuCollectorThreadBuilder {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
        }
    }

    pub fn append(&mut self, row: &GpuCollectorThreadRow) {
        self.ts_ns.append_value(row.ts_ns);
        self.pid.append_value(row.pid);
        self.tid.append_value(row.tid);
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    /// The arrays of the rows appended since the last finish, in column order.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
        ]
    }
}

/// One builder per kind.
pub struct KindBuilders {
    pub launch: LaunchBuilder,
    pub sync: SyncBuilder,
    pub runtime_only: RuntimeOnlyBuilder,
    pub switch: SwitchBuilder,
    pub waking: WakingBuilder,
    pub wakeup: WakeupBuilder,
    pub wakeup_new: WakeupNewBuilder,
    pub migrate: MigrateBuilder,
    pub fork: ForkBuilder,
    pub exec: ExecBuilder,
    pub exit: ExitBuilder,
    pub comm: CommBuilder,
    pub hardirq: HardirqBuilder,
    pub softirq: SoftirqBuilder,
    pub irq_vector: IrqVectorBuilder,
    pub lost: LostBuilder,
    pub task_cgroup: TaskCgroupBuilder,
    pub cgroup: CgroupBuilder,
    pub gpu_kernel: GpuKernelBuilder,
    pub gpu_graph: GpuGraphBuilder,
    pub gpu_memcpy: GpuMemcpyBuilder,
    pub gpu_memset: GpuMemsetBuilder,
    pub gpu_sync: GpuSyncBuilder,
    pub gpu_api: GpuApiBuilder,
    pub gpu_collector: GpuCollectorBuilder,
    pub gpu_collector_thread: GpuCollectorThreadBuilder,
}

impl KindBuilders {
    pub fn new() -> Self {
        Self {
            launch: LaunchBuilder::new(),
            sync: SyncBuilder::new(),
            runtime_only: RuntimeOnlyBuilder::new(),
            switch: SwitchBuilder::new(),
            waking: WakingBuilder::new(),
            wakeup: WakeupBuilder::new(),
            wakeup_new: WakeupNewBuilder::new(),
            migrate: MigrateBuilder::new(),
            fork: ForkBuilder::new(),
            exec: ExecBuilder::new(),
            exit: ExitBuilder::new(),
            comm: CommBuilder::new(),
            hardirq: HardirqBuilder::new(),
            softirq: SoftirqBuilder::new(),
            irq_vector: IrqVectorBuilder::new(),
            lost: LostBuilder::new(),
            task_cgroup: TaskCgroupBuilder::new(),
            cgroup: CgroupBuilder::new(),
            gpu_kernel: GpuKernelBuilder::new(),
            gpu_graph: GpuGraphBuilder::new(),
            gpu_memcpy: GpuMemcpyBuilder::new(),
            gpu_memset: GpuMemsetBuilder::new(),
            gpu_sync: GpuSyncBuilder::new(),
            gpu_api: GpuApiBuilder::new(),
            gpu_collector: GpuCollectorBuilder::new(),
            gpu_collector_thread: GpuCollectorThreadBuilder::new(),
        }
    }

    pub fn push(&mut self, row: &Row) {
        match row {
            Row::Launch(r) => self.launch.append(r),
            Row::Sync(r) => self.sync.append(r),
            Row::RuntimeOnly(r) => self.runtime_only.append(r),
            Row::Switch(r) => self.switch.append(r),
            Row::Waking(r) => self.waking.append(r),
            Row::Wakeup(r) => self.wakeup.append(r),
            Row::WakeupNew(r) => self.wakeup_new.append(r),
            Row::Migrate(r) => self.migrate.append(r),
            Row::Fork(r) => self.fork.append(r),
            Row::Exec(r) => self.exec.append(r),
            Row::Exit(r) => self.exit.append(r),
            Row::Comm(r) => self.comm.append(r),
            Row::Hardirq(r) => self.hardirq.append(r),
            Row::Softirq(r) => self.softirq.append(r),
            Row::IrqVector(r) => self.irq_vector.append(r),
            Row::Lost(r) => self.lost.append(r),
            Row::TaskCgroup(r) => self.task_cgroup.append(r),
            Row::Cgroup(r) => self.cgroup.append(r),
            Row::GpuKernel(r) => self.gpu_kernel.append(r),
            Row::GpuGraph(r) => self.gpu_graph.append(r),
            Row::GpuMemcpy(r) => self.gpu_memcpy.append(r),
            Row::GpuMemset(r) => self.gpu_memset.append(r),
            Row::GpuSync(r) => self.gpu_sync.append(r),
            Row::GpuApi(r) => self.gpu_api.append(r),
            Row::GpuCollector(r) => self.gpu_collector.append(r),
            Row::GpuCollectorThread(r) => self.gpu_collector_thread.append(r),
        }
    }

    pub fn len(&self, kind: Kind) -> usize {
        match kind {
            Kind::Launch => self.launch.len(),
            Kind::Sync => self.sync.len(),
            Kind::RuntimeOnly => self.runtime_only.len(),
            Kind::Switch => self.switch.len(),
            Kind::Waking => self.waking.len(),
            Kind::Wakeup => self.wakeup.len(),
            Kind::WakeupNew => self.wakeup_new.len(),
            Kind::Migrate => self.migrate.len(),
            Kind::Fork => self.fork.len(),
            Kind::Exec => self.exec.len(),
            Kind::Exit => self.exit.len(),
            Kind::Comm => self.comm.len(),
            Kind::Hardirq => self.hardirq.len(),
            Kind::Softirq => self.softirq.len(),
            Kind::IrqVector => self.irq_vector.len(),
            Kind::Lost => self.lost.len(),
            Kind::TaskCgroup => self.task_cgroup.len(),
            Kind::Cgroup => self.cgroup.len(),
            Kind::GpuKernel => self.gpu_kernel.len(),
            Kind::GpuGraph => self.gpu_graph.len(),
            Kind::GpuMemcpy => self.gpu_memcpy.len(),
            Kind::GpuMemset => self.gpu_memset.len(),
            Kind::GpuSync => self.gpu_sync.len(),
            Kind::GpuApi => self.gpu_api.len(),
            Kind::GpuCollector => self.gpu_collector.len(),
            Kind::GpuCollectorThread => self.gpu_collector_thread.len(),
        }
    }

    pub fn finish(&mut self, kind: Kind) -> Vec<ArrayRef> {
        match kind {
            Kind::Launch => self.launch.finish(),
            Kind::Sync => self.sync.finish(),
            Kind::RuntimeOnly => self.runtime_only.finish(),
            Kind::Switch => self.switch.finish(),
            Kind::Waking => self.waking.finish(),
            Kind::Wakeup => self.wakeup.finish(),
            Kind::WakeupNew => self.wakeup_new.finish(),
            Kind::Migrate => self.migrate.finish(),
            Kind::Fork => self.fork.finish(),
            Kind::Exec => self.exec.finish(),
            Kind::Exit => self.exit.finish(),
            Kind::Comm => self.comm.finish(),
            Kind::Hardirq => self.hardirq.finish(),
            Kind::Softirq => self.softirq.finish(),
            Kind::IrqVector => self.irq_vector.finish(),
            Kind::Lost => self.lost.finish(),
            Kind::TaskCgroup => self.task_cgroup.finish(),
            Kind::Cgroup => self.cgroup.finish(),
            Kind::GpuKernel => self.gpu_kernel.finish(),
            Kind::GpuGraph => self.gpu_graph.finish(),
            Kind::GpuMemcpy => self.gpu_memcpy.finish(),
            Kind::GpuMemset => self.gpu_memset.finish(),
            Kind::GpuSync => self.gpu_sync.finish(),
            Kind::GpuApi => self.gpu_api.finish(),
            Kind::GpuCollector => self.gpu_collector.finish(),
            Kind::GpuCollectorThread => self.gpu_collector_thread.finish(),
        }
    }
}

/// The collector channel's largest frame, header included ([collector] max_frame).
pub const COLLECTOR_MAX_FRAME: usize = 8192;
/// CUPTI's entry points the collector cannot work without.
pub const CUPTI_REQUIRED: [&str; 9] = ["cuptiGetVersion", "cuptiGetResultString", "cuptiGetTimestamp", "cuptiSetThreadIdType", "cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityGetNextRecord", "cuptiActivityGetNumDroppedRecords", "cuptiActivityFlushAll"];
/// The collector channel's frames: (kind, frame id).
pub const COLLECTOR_FRAMES: [(&str, u16); 9] = [("gpu_kernel", 1), ("gpu_graph", 2), ("gpu_memcpy", 3), ("gpu_memset", 4), ("gpu_sync", 5), ("gpu_api", 6), ("gpu_collector", 7), ("lost", 8), ("gpu_collector_thread", 9)];
/// The collector channel's frame ids ([collector] frames), by kind.
pub mod collector_frame {
    pub const GPU_KERNEL: u16 = 1;
    pub const GPU_GRAPH: u16 = 2;
    pub const GPU_MEMCPY: u16 = 3;
    pub const GPU_MEMSET: u16 = 4;
    pub const GPU_SYNC: u16 = 5;
    pub const GPU_API: u16 = 6;
    pub const GPU_COLLECTOR: u16 = 7;
    pub const LOST: u16 = 8;
    pub const GPU_COLLECTOR_THREAD: u16 = 9;
}

/// No collector file grows past this many bytes ([collector] file_bytes + staging_bytes).
pub const COLLECTOR_MAX_FILE: u64 = 67174400;

/// Why ROW, decoded from a frame in the channel file of process FILE_PID, is not one that process's
/// collector sends ([collector] values; a `pid` that is not the file's); None when it may be.
pub fn collector_frame_refusal(row: &Row, file_pid: u32) -> Option<&'static str> {
    match row {
        Row::GpuKernel(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuGraph(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuMemcpy(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuMemset(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuSync(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuApi(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuCollector(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuCollector(r) if !COLLECTOR_STATE_NAMES.contains(&r.state) => Some("its state is not one its collector sends"),
        Row::Lost(r) if !["gpu_activity"].contains(&r.lost_event) => Some("its lost_event is not one its collector sends"),
        Row::GpuCollectorThread(r) if r.pid != file_pid => Some("its pid is not its file's"),
        Row::GpuKernel(_) | Row::GpuGraph(_) | Row::GpuMemcpy(_) | Row::GpuMemset(_) | Row::GpuSync(_) | Row::GpuApi(_) | Row::GpuCollector(_) | Row::Lost(_) | Row::GpuCollectorThread(_) => None,
        _ => Some("not a kind the collector sends"),
    }
}

/// Decodes a collector frame's payload into its row: None for an unknown frame id, a
/// payload too short or too long for its kind, a flag byte other than 0 or 1, or text that is not UTF-8.
pub fn decode_collector_frame(frame: u16, payload: &[u8]) -> Option<Row<'_>> {
    let mut r = WireReader::new(payload);
    let row = match frame {
        1 => Row::GpuKernel(GpuKernelRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            grid_x: r.u32()?,
            grid_y: r.u32()?,
            grid_z: r.u32()?,
            block_x: r.u32()?,
            block_y: r.u32()?,
            block_z: r.u32()?,
            shared_mem: r.u32()?,
            end_ns: r.u64()?,
            device_id: r.u32()?,
            context_id: r.u32()?,
            stream_id: r.u32()?,
            correlation_id: r.u32()?,
            kernel_name: r.str()?,
            graph_id: if r.present()? { Some(r.u32()?) } else { None },
        }),
        2 => Row::GpuGraph(GpuGraphRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            end_ns: r.u64()?,
            device_id: r.u32()?,
            context_id: r.u32()?,
            stream_id: r.u32()?,
            correlation_id: r.u32()?,
            graph_id: r.u32()?,
        }),
        3 => Row::GpuMemcpy(GpuMemcpyRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            bytes: r.u64()?,
            end_ns: r.u64()?,
            device_id: r.u32()?,
            context_id: r.u32()?,
            stream_id: r.u32()?,
            correlation_id: r.u32()?,
            copy_kind: r.str()?,
        }),
        4 => Row::GpuMemset(GpuMemsetRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            bytes: r.u64()?,
            end_ns: r.u64()?,
            device_id: r.u32()?,
            context_id: r.u32()?,
            stream_id: r.u32()?,
            correlation_id: r.u32()?,
        }),
        5 => Row::GpuSync(GpuSyncRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            end_ns: r.u64()?,
            context_id: r.u32()?,
            stream_id: if r.present()? { Some(r.u32()?) } else { None },
            correlation_id: r.u32()?,
            sync_type: r.str()?,
        }),
        6 => Row::GpuApi(GpuApiRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            tid: r.u32()?,
            api: r.str()?,
            return_code: r.i32()?,
            end_ns: r.u64()?,
            correlation_id: r.u32()?,
        }),
        7 => Row::GpuCollector(GpuCollectorRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            detail: r.str()?,
            state: r.str()?,
        }),
        8 => Row::Lost(LostRow {
            ts_ns: r.u64()?,
            cpu: if r.present()? { Some(r.u32()?) } else { None },
            lost_event: r.str()?,
            lost_count: r.u64()?,
            since_ns: r.u64()?,
            detail: if r.present()? { Some(r.str()?) } else { None },
        }),
        9 => Row::GpuCollectorThread(GpuCollectorThreadRow {
            ts_ns: r.u64()?,
            pid: r.u32()?,
            tid: r.u32()?,
        }),
        _ => return None,
    };
    r.is_empty().then_some(row)
}

/// Format 1's wide table: one row per event, the columns a kind lacks null.
pub struct WideBuilders {
    ts_ns: UInt64Builder,
    event: StringBuilder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    tid: UInt32Builder,
    comm: StringBuilder,
    duration_ns: UInt64Builder,
    api: StringBuilder,
    runtime_api: StringBuilder,
    func: UInt64Builder,
    stream: UInt64Builder,
    grid_x: UInt32Builder,
    grid_y: UInt32Builder,
    grid_z: UInt32Builder,
    block_x: UInt32Builder,
    block_y: UInt32Builder,
    block_z: UInt32Builder,
    shared_mem: UInt32Builder,
    bytes: UInt64Builder,
    prev_state: Int64Builder,
    preempt: BooleanBuilder,
    voluntary: BooleanBuilder,
    nvcsw: UInt64Builder,
    nivcsw: UInt64Builder,
    prio: Int32Builder,
    next_pid: UInt32Builder,
    next_tid: UInt32Builder,
    next_comm: StringBuilder,
    next_prio: Int32Builder,
    target_cpu: UInt32Builder,
    waker_tid: UInt32Builder,
    orig_cpu: UInt32Builder,
    dest_cpu: UInt32Builder,
    child_pid: UInt32Builder,
    child_tid: UInt32Builder,
    filename: StringBuilder,
    old_comm: StringBuilder,
    exit_code: Int32Builder,
    irq: Int32Builder,
    irq_name: StringBuilder,
    lost_event: StringBuilder,
    lost_count: UInt64Builder,
    since_ns: UInt64Builder,
    detail: StringBuilder,
    return_code: Int32Builder,
    end_ns: UInt64Builder,
    device_id: UInt32Builder,
    context_id: UInt32Builder,
    stream_id: UInt32Builder,
    correlation_id: UInt32Builder,
    kernel_name: StringBuilder,
    graph_id: UInt32Builder,
    copy_kind: StringBuilder,
    sync_type: StringBuilder,
    state: StringBuilder,
    cgroup_id: UInt64Builder,
    v1_cpu_cgroup_id: UInt64Builder,
    hierarchy: StringBuilder,
    cgroup_path: StringBuilder,
    container_id: StringBuilder,
    pod: StringBuilder,
    ns_pid: UInt32Builder,
    ns_tid: UInt32Builder,
    autogroup_id: UInt64Builder,
    sched_cgroup_id: UInt64Builder,
    group_weight: UInt32Builder,
}

impl WideBuilders {
    pub fn new() -> Self {
        Self {
            ts_ns: UInt64Builder::new(),
            event: StringBuilder::new(),
            cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            tid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            duration_ns: UInt64Builder::new(),
            api: StringBuilder::new(),
            runtime_api: StringBuilder::new(),
            func: UInt64Builder::new(),
            stream: UInt64Builder::new(),
            grid_x: UInt32Builder::new(),
            grid_y: UInt32Builder::new(),
            grid_z: UInt32Builder::new(),
            block_x: UInt32Builder::new(),
            block_y: UInt32Builder::new(),
            block_z: UInt32Builder::new(),
            shared_mem: UInt32Builder::new(),
            bytes: UInt64Builder::new(),
            prev_state: Int64Builder::new(),
            preempt: BooleanBuilder::new(),
            voluntary: BooleanBuilder::new(),
            nvcsw: UInt64Builder::new(),
            nivcsw: UInt64Builder::new(),
            prio: Int32Builder::new(),
            next_pid: UInt32Builder::new(),
            next_tid: UInt32Builder::new(),
            next_comm: StringBuilder::new(),
            next_prio: Int32Builder::new(),
            target_cpu: UInt32Builder::new(),
            waker_tid: UInt32Builder::new(),
            orig_cpu: UInt32Builder::new(),
            dest_cpu: UInt32Builder::new(),
            child_pid: UInt32Builder::new(),
            child_tid: UInt32Builder::new(),
            filename: StringBuilder::new(),
            old_comm: StringBuilder::new(),
            exit_code: Int32Builder::new(),
            irq: Int32Builder::new(),
            irq_name: StringBuilder::new(),
            lost_event: StringBuilder::new(),
            lost_count: UInt64Builder::new(),
            since_ns: UInt64Builder::new(),
            detail: StringBuilder::new(),
            return_code: Int32Builder::new(),
            end_ns: UInt64Builder::new(),
            device_id: UInt32Builder::new(),
            context_id: UInt32Builder::new(),
            stream_id: UInt32Builder::new(),
            correlation_id: UInt32Builder::new(),
            kernel_name: StringBuilder::new(),
            graph_id: UInt32Builder::new(),
            copy_kind: StringBuilder::new(),
            sync_type: StringBuilder::new(),
            state: StringBuilder::new(),
            cgroup_id: UInt64Builder::new(),
            v1_cpu_cgroup_id: UInt64Builder::new(),
            hierarchy: StringBuilder::new(),
            cgroup_path: StringBuilder::new(),
            container_id: StringBuilder::new(),
            pod: StringBuilder::new(),
            ns_pid: UInt32Builder::new(),
            ns_tid: UInt32Builder::new(),
            autogroup_id: UInt64Builder::new(),
            sched_cgroup_id: UInt64Builder::new(),
            group_weight: UInt32Builder::new(),
        }
    }

    pub fn push(&mut self, row: &Row) {
        match row {
            Row::Launch(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("launch");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_value(r.api);
                self.runtime_api.append_option(r.runtime_api);
                self.func.append_option(r.func);
                self.stream.append_value(r.stream);
                self.grid_x.append_value(r.grid_x);
                self.grid_y.append_value(r.grid_y);
                self.grid_z.append_value(r.grid_z);
                self.block_x.append_value(r.block_x);
                self.block_y.append_value(r.block_y);
                self.block_z.append_value(r.block_z);
                self.shared_mem.append_value(r.shared_mem);
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Sync(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("sync");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_value(r.duration_ns);
                self.api.append_value(r.api);
                self.runtime_api.append_option(r.runtime_api);
                self.func.append_null();
                self.stream.append_option(r.stream);
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_option(r.bytes);
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::RuntimeOnly(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("runtime_only");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_value(r.duration_ns);
                self.api.append_null();
                self.runtime_api.append_value(r.runtime_api);
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_value(r.return_code);
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Switch(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("switch");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_value(r.prev_state);
                self.preempt.append_option(r.preempt);
                self.voluntary.append_option(r.voluntary);
                self.nvcsw.append_option(r.nvcsw);
                self.nivcsw.append_option(r.nivcsw);
                self.prio.append_option(r.prio);
                self.next_pid.append_value(r.next_pid);
                self.next_tid.append_value(r.next_tid);
                self.next_comm.append_value(r.next_comm);
                self.next_prio.append_option(r.next_prio);
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Waking(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("waking");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_value(r.prio);
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_value(r.target_cpu);
                self.waker_tid.append_value(r.waker_tid);
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Wakeup(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("wakeup");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_value(r.prio);
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_value(r.target_cpu);
                self.waker_tid.append_value(r.waker_tid);
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::WakeupNew(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("wakeup_new");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_value(r.prio);
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_value(r.target_cpu);
                self.waker_tid.append_value(r.waker_tid);
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Migrate(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("migrate");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_value(r.orig_cpu);
                self.dest_cpu.append_value(r.dest_cpu);
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Fork(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("fork");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_value(r.child_pid);
                self.child_tid.append_value(r.child_tid);
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Exec(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("exec");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_value(r.filename);
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Exit(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("exit");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_option(r.exit_code);
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Comm(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("comm");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_value(r.comm);
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_value(r.old_comm);
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Hardirq(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("hardirq");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_value(r.duration_ns);
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_value(r.irq);
                self.irq_name.append_value(r.irq_name);
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Softirq(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("softirq");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_value(r.duration_ns);
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_value(r.irq);
                self.irq_name.append_value(r.irq_name);
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::IrqVector(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("irq_vector");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_value(r.duration_ns);
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_value(r.irq);
                self.irq_name.append_value(r.irq_name);
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::Lost(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("lost");
                self.cpu.append_option(r.cpu);
                self.pid.append_null();
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_value(r.lost_event);
                self.lost_count.append_value(r.lost_count);
                self.since_ns.append_value(r.since_ns);
                self.detail.append_option(r.detail);
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::TaskCgroup(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("task_cgroup");
                self.cpu.append_value(r.cpu);
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_value(r.cgroup_id);
                self.v1_cpu_cgroup_id.append_option(r.v1_cpu_cgroup_id);
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_option(r.ns_pid);
                self.ns_tid.append_option(r.ns_tid);
                self.autogroup_id.append_option(r.autogroup_id);
                self.sched_cgroup_id.append_option(r.sched_cgroup_id);
                self.group_weight.append_option(r.group_weight);
            }
            Row::Cgroup(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("cgroup");
                self.cpu.append_null();
                self.pid.append_null();
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_value(r.cgroup_id);
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_value(r.hierarchy);
                self.cgroup_path.append_value(r.cgroup_path);
                self.container_id.append_option(r.container_id);
                self.pod.append_option(r.pod);
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuKernel(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_kernel");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_value(r.grid_x);
                self.grid_y.append_value(r.grid_y);
                self.grid_z.append_value(r.grid_z);
                self.block_x.append_value(r.block_x);
                self.block_y.append_value(r.block_y);
                self.block_z.append_value(r.block_z);
                self.shared_mem.append_value(r.shared_mem);
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_value(r.device_id);
                self.context_id.append_value(r.context_id);
                self.stream_id.append_value(r.stream_id);
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_value(r.kernel_name);
                self.graph_id.append_option(r.graph_id);
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuGraph(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_graph");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_value(r.device_id);
                self.context_id.append_value(r.context_id);
                self.stream_id.append_value(r.stream_id);
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_null();
                self.graph_id.append_value(r.graph_id);
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuMemcpy(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_memcpy");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_value(r.bytes);
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_value(r.device_id);
                self.context_id.append_value(r.context_id);
                self.stream_id.append_value(r.stream_id);
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_value(r.copy_kind);
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuMemset(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_memset");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_value(r.bytes);
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_value(r.device_id);
                self.context_id.append_value(r.context_id);
                self.stream_id.append_value(r.stream_id);
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuSync(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_sync");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_null();
                self.context_id.append_value(r.context_id);
                self.stream_id.append_option(r.stream_id);
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_value(r.sync_type);
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuApi(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_api");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_value(r.api);
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_value(r.return_code);
                self.end_ns.append_value(r.end_ns);
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_value(r.correlation_id);
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuCollector(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_collector");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_null();
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_value(r.detail);
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_value(r.state);
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
            Row::GpuCollectorThread(r) => {
                self.ts_ns.append_value(r.ts_ns);
                self.event.append_value("gpu_collector_thread");
                self.cpu.append_null();
                self.pid.append_value(r.pid);
                self.tid.append_value(r.tid);
                self.comm.append_null();
                self.duration_ns.append_null();
                self.api.append_null();
                self.runtime_api.append_null();
                self.func.append_null();
                self.stream.append_null();
                self.grid_x.append_null();
                self.grid_y.append_null();
                self.grid_z.append_null();
                self.block_x.append_null();
                self.block_y.append_null();
                self.block_z.append_null();
                self.shared_mem.append_null();
                self.bytes.append_null();
                self.prev_state.append_null();
                self.preempt.append_null();
                self.voluntary.append_null();
                self.nvcsw.append_null();
                self.nivcsw.append_null();
                self.prio.append_null();
                self.next_pid.append_null();
                self.next_tid.append_null();
                self.next_comm.append_null();
                self.next_prio.append_null();
                self.target_cpu.append_null();
                self.waker_tid.append_null();
                self.orig_cpu.append_null();
                self.dest_cpu.append_null();
                self.child_pid.append_null();
                self.child_tid.append_null();
                self.filename.append_null();
                self.old_comm.append_null();
                self.exit_code.append_null();
                self.irq.append_null();
                self.irq_name.append_null();
                self.lost_event.append_null();
                self.lost_count.append_null();
                self.since_ns.append_null();
                self.detail.append_null();
                self.return_code.append_null();
                self.end_ns.append_null();
                self.device_id.append_null();
                self.context_id.append_null();
                self.stream_id.append_null();
                self.correlation_id.append_null();
                self.kernel_name.append_null();
                self.graph_id.append_null();
                self.copy_kind.append_null();
                self.sync_type.append_null();
                self.state.append_null();
                self.cgroup_id.append_null();
                self.v1_cpu_cgroup_id.append_null();
                self.hierarchy.append_null();
                self.cgroup_path.append_null();
                self.container_id.append_null();
                self.pod.append_null();
                self.ns_pid.append_null();
                self.ns_tid.append_null();
                self.autogroup_id.append_null();
                self.sched_cgroup_id.append_null();
                self.group_weight.append_null();
            }
        }
    }

    /// Format 1's closing row: its detail is the closing summary's JSON.
    pub fn push_end(&mut self, ts_ns: u64, detail: &str) {
        self.ts_ns.append_value(ts_ns);
        self.event.append_value(FORMAT1_END_EVENT);
        self.cpu.append_null();
        self.pid.append_null();
        self.tid.append_null();
        self.comm.append_null();
        self.duration_ns.append_null();
        self.api.append_null();
        self.runtime_api.append_null();
        self.func.append_null();
        self.stream.append_null();
        self.grid_x.append_null();
        self.grid_y.append_null();
        self.grid_z.append_null();
        self.block_x.append_null();
        self.block_y.append_null();
        self.block_z.append_null();
        self.shared_mem.append_null();
        self.bytes.append_null();
        self.prev_state.append_null();
        self.preempt.append_null();
        self.voluntary.append_null();
        self.nvcsw.append_null();
        self.nivcsw.append_null();
        self.prio.append_null();
        self.next_pid.append_null();
        self.next_tid.append_null();
        self.next_comm.append_null();
        self.next_prio.append_null();
        self.target_cpu.append_null();
        self.waker_tid.append_null();
        self.orig_cpu.append_null();
        self.dest_cpu.append_null();
        self.child_pid.append_null();
        self.child_tid.append_null();
        self.filename.append_null();
        self.old_comm.append_null();
        self.exit_code.append_null();
        self.irq.append_null();
        self.irq_name.append_null();
        self.lost_event.append_null();
        self.lost_count.append_null();
        self.since_ns.append_null();
        self.detail.append_value(detail);
        self.return_code.append_null();
        self.end_ns.append_null();
        self.device_id.append_null();
        self.context_id.append_null();
        self.stream_id.append_null();
        self.correlation_id.append_null();
        self.kernel_name.append_null();
        self.graph_id.append_null();
        self.copy_kind.append_null();
        self.sync_type.append_null();
        self.state.append_null();
        self.cgroup_id.append_null();
        self.v1_cpu_cgroup_id.append_null();
        self.hierarchy.append_null();
        self.cgroup_path.append_null();
        self.container_id.append_null();
        self.pod.append_null();
        self.ns_pid.append_null();
        self.ns_tid.append_null();
        self.autogroup_id.append_null();
        self.sched_cgroup_id.append_null();
        self.group_weight.append_null();
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.ts_ns.finish()) as ArrayRef,
            Arc::new(self.event.finish()) as ArrayRef,
            Arc::new(self.cpu.finish()) as ArrayRef,
            Arc::new(self.pid.finish()) as ArrayRef,
            Arc::new(self.tid.finish()) as ArrayRef,
            Arc::new(self.comm.finish()) as ArrayRef,
            Arc::new(self.duration_ns.finish()) as ArrayRef,
            Arc::new(self.api.finish()) as ArrayRef,
            Arc::new(self.runtime_api.finish()) as ArrayRef,
            Arc::new(self.func.finish()) as ArrayRef,
            Arc::new(self.stream.finish()) as ArrayRef,
            Arc::new(self.grid_x.finish()) as ArrayRef,
            Arc::new(self.grid_y.finish()) as ArrayRef,
            Arc::new(self.grid_z.finish()) as ArrayRef,
            Arc::new(self.block_x.finish()) as ArrayRef,
            Arc::new(self.block_y.finish()) as ArrayRef,
            Arc::new(self.block_z.finish()) as ArrayRef,
            Arc::new(self.shared_mem.finish()) as ArrayRef,
            Arc::new(self.bytes.finish()) as ArrayRef,
            Arc::new(self.prev_state.finish()) as ArrayRef,
            Arc::new(self.preempt.finish()) as ArrayRef,
            Arc::new(self.voluntary.finish()) as ArrayRef,
            Arc::new(self.nvcsw.finish()) as ArrayRef,
            Arc::new(self.nivcsw.finish()) as ArrayRef,
            Arc::new(self.prio.finish()) as ArrayRef,
            Arc::new(self.next_pid.finish()) as ArrayRef,
            Arc::new(self.next_tid.finish()) as ArrayRef,
            Arc::new(self.next_comm.finish()) as ArrayRef,
            Arc::new(self.next_prio.finish()) as ArrayRef,
            Arc::new(self.target_cpu.finish()) as ArrayRef,
            Arc::new(self.waker_tid.finish()) as ArrayRef,
            Arc::new(self.orig_cpu.finish()) as ArrayRef,
            Arc::new(self.dest_cpu.finish()) as ArrayRef,
            Arc::new(self.child_pid.finish()) as ArrayRef,
            Arc::new(self.child_tid.finish()) as ArrayRef,
            Arc::new(self.filename.finish()) as ArrayRef,
            Arc::new(self.old_comm.finish()) as ArrayRef,
            Arc::new(self.exit_code.finish()) as ArrayRef,
            Arc::new(self.irq.finish()) as ArrayRef,
            Arc::new(self.irq_name.finish()) as ArrayRef,
            Arc::new(self.lost_event.finish()) as ArrayRef,
            Arc::new(self.lost_count.finish()) as ArrayRef,
            Arc::new(self.since_ns.finish()) as ArrayRef,
            Arc::new(self.detail.finish()) as ArrayRef,
            Arc::new(self.return_code.finish()) as ArrayRef,
            Arc::new(self.end_ns.finish()) as ArrayRef,
            Arc::new(self.device_id.finish()) as ArrayRef,
            Arc::new(self.context_id.finish()) as ArrayRef,
            Arc::new(self.stream_id.finish()) as ArrayRef,
            Arc::new(self.correlation_id.finish()) as ArrayRef,
            Arc::new(self.kernel_name.finish()) as ArrayRef,
            Arc::new(self.graph_id.finish()) as ArrayRef,
            Arc::new(self.copy_kind.finish()) as ArrayRef,
            Arc::new(self.sync_type.finish()) as ArrayRef,
            Arc::new(self.state.finish()) as ArrayRef,
            Arc::new(self.cgroup_id.finish()) as ArrayRef,
            Arc::new(self.v1_cpu_cgroup_id.finish()) as ArrayRef,
            Arc::new(self.hierarchy.finish()) as ArrayRef,
            Arc::new(self.cgroup_path.finish()) as ArrayRef,
            Arc::new(self.container_id.finish()) as ArrayRef,
            Arc::new(self.pod.finish()) as ArrayRef,
            Arc::new(self.ns_pid.finish()) as ArrayRef,
            Arc::new(self.ns_tid.finish()) as ArrayRef,
            Arc::new(self.autogroup_id.finish()) as ArrayRef,
            Arc::new(self.sched_cgroup_id.finish()) as ArrayRef,
            Arc::new(self.group_weight.finish()) as ArrayRef,
        ]
    }
}
