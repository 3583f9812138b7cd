// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

/// the cgroup hierarchy a cgroup id belongs to (ids are unique within one hierarchy only): v2, the unified hierarchy; v1_cpu, the cgroup v1 hierarchy of the cpu controller, on hosts that mount one
pub const CGROUP_HIERARCHY_NAMES: [&str; 2] = ["v2", "v1_cpu"];
/// a CUPTI collector's life in one process (gpu_collector rows); contended: another CUPTI client in the process (the workload's profiler) changed CUPTI's process-wide activity state, and detail says what and what the collector did (docs/gpu-time.md, "PyTorch users")
pub const COLLECTOR_STATE_NAMES: [&str; 4] = ["started", "stopped", "failed", "contended"];
/// what a copy moved between (CUPTI's CUpti_ActivityMemcpyKind, in its order: H host, D device, A array, P peer)
pub const COPY_KIND_NAMES: [&str; 11] = ["UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA", "ATOD", "DTOA", "DTOD", "HTOH", "PTOP"];
/// the driver syncs after whose return the calling thread's GPU work has all finished (its GPU is drained until its next launch): a context sync, a stream sync (taken to be of the stream the thread launches on), a synchronous copy (which waits for the work before it); an event sync waits only for the work before its event, so it is not one. The report's bounds without GPU activity and the monitor's count from them (docs/monitor.md)
pub const DRAIN_API_NAMES: [&str; 7] = ["cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2_ptds"];
/// why a GPU sat idle, the report's GPU time (docs/gpu-time.md): while the launch that ended the idle was not yet made, what its thread was doing (preempted, runqueue and irq are interference; host_work is the app's own code; launch_call the driver's CPU cost; blocked a wait of its own); gpu_side: the launch was made and the GPU had not started it; before_first and after_last: outside the process's GPU work; unknown: the thread's state is not in the trace; measurement: launchgap's own threads ran instead (the recorder's, the collector's and the thread CUPTI calls it on): the cost of measuring, not interference; wakeup_latency: the thread waited to run while its CPU was idle (the CPU waking up, from an idle state or an interrupt's end): no task to blame
pub const GPU_IDLE_CAUSE_NAMES: [&str; 12] = ["preempted", "runqueue", "irq", "host_work", "launch_call", "blocked", "gpu_side", "before_first", "after_last", "unknown", "measurement", "wakeup_latency"];
/// x86 system vectors, traced through the irq_vectors tracepoints
pub const IRQ_VECTOR_NAMES: [&str; 5] = ["LOCAL_TIMER", "RESCHEDULE", "CALL_FUNCTION", "CALL_FUNCTION_SINGLE", "IRQ_WORK"];
/// softirq vectors (include/linux/interrupt.h)
pub const SOFTIRQ_NAMES: [&str; 10] = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
/// what a synchronization waited for (CUPTI's CUpti_ActivitySynchronizationType, in its order)
pub const SYNC_TYPE_NAMES: [&str; 5] = ["UNKNOWN", "EVENT_SYNCHRONIZE", "STREAM_WAIT_EVENT", "STREAM_SYNCHRONIZE", "CONTEXT_SYNCHRONIZE"];
/// which wakeup tracepoint a wakeup record came from
pub const WAKEUP_VARIANT_NAMES: [&str; 3] = ["WAKING", "WAKEUP", "NEW"];
/// Every name table, by name.
pub const NAME_TABLES: [(&str, &[&str]); 9] = [("cgroup_hierarchy", &CGROUP_HIERARCHY_NAMES), ("collector_state", &COLLECTOR_STATE_NAMES), ("copy_kind", &COPY_KIND_NAMES), ("drain_api", &DRAIN_API_NAMES), ("gpu_idle_cause", &GPU_IDLE_CAUSE_NAMES), ("irq_vector", &IRQ_VECTOR_NAMES), ("softirq", &SOFTIRQ_NAMES), ("sync_type", &SYNC_TYPE_NAMES), ("wakeup_variant", &WAKEUP_VARIANT_NAMES)];
