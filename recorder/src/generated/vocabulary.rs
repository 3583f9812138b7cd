// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

/// The thread states a culprit is charged under (waiting for a CPU another task holds):
/// (its number in enum run_state, its name).
pub const WAITING_RUN_STATES: [(u8, &str); 2] = [(2, "preempted"), (3, "runqueue")];
/// enum gap_class: the launch-gap classes the monitor counts, by number.
pub const MONITOR_GAP_CLASSES: [&str; 6] = ["clean", "preempted", "runqueue", "irq", "sync", "blocked"];
/// The interference causes (another task's or an interrupt's doing), enum gap_cause's first, by number:
/// the first of names.gpu_idle_cause, which the GPU-time bounds are split by.
pub const INTERFERENCE_CAUSE_NAMES: [&str; 3] = ["preempted", "runqueue", "irq"];
pub const INTERFERENCE_CAUSES: usize = 3;
/// The launch-gap histograms: bucket b below the last holds gaps up to 2^(GAP_FIRST_BOUND_LOG2 + b) ns;
/// the last, +Inf.
pub const GAP_FIRST_BOUND_LOG2: i32 = 9;
pub const GAP_BUCKETS: usize = 28;
