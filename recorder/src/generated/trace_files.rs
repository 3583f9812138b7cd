// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

/// meta.json's keys the recorder writes (schema/trace.toml [meta]), each with the JSON types its value may
/// have: TraceMeta serializes to exactly these.
pub const META_KEYS: [(&str, &[&str]); 19] = [("format", &["string"]), ("version", &["integer"]), ("recorder", &["object"]), ("start_ns", &["integer"]), ("mode", &["string"]), ("command", &["array", "null"]), ("command_pid", &["integer", "null"]), ("pids", &["array"]), ("recorder_pid", &["integer", "null"]), ("host", &["object"]), ("topology", &["object"]), ("clock", &["object"]), ("kernel_support", &["object"]), ("host_files", &["object"]), ("options", &["object"]), ("cuda_libraries", &["array"]), ("gpu_activity", &["object"]), ("cgroups", &["object"]), ("probes", &["array"])];

/// The closing summary's keys (end.json; format 1's closing row's detail).
pub mod end_key {
    /// CLOCK_MONOTONIC when the recorder stopped tracing
    pub const END_NS: &str = "end_ns";
    /// what ended the recording (the command exited, signal N, the duration elapsed, ...)
    pub const STOP_REASON: &str = "stop_reason";
    /// the traced command's exit code (null in -p and --system mode, or when it was still running)
    pub const COMMAND_EXIT_CODE: &str = "command_exit_code";
    /// the sum of every lost row's lost_count
    pub const LOST_EVENTS: &str = "lost_events";
    /// /proc/softirqs and /proc/interrupts right after attaching and right before detaching (below)
    pub const PROC_COUNTERS: &str = "proc_counters";
    /// rows written, by kind
    pub const ROWS: &str = "rows";
    /// CPU time of the recorder's own threads while tracing, from start_ns on: drain (the ring-buffer reader) and writer (decoding and writing the trace)
    pub const CPU_NS: &str = "cpu_ns";
    /// with --gpu-activity: collectors_started, collectors_stopped, collectors_failed, launching_processes_without_collector, launches and gpu_executions (kernels alone and graphs), over every process
    pub const GPU_ACTIVITY: &str = "gpu_activity";
}

/// The recorder's binary: its main thread's name, which the threads it leaves unnamed inherit.
pub const RECORDER_BINARY: &str = "launchgap-record";
/// The name of the recorder's writer thread.
pub const WRITER_THREAD_NAME: &str = "trace-writer";
