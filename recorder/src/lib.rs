//! What launchgap's two programs share: finding the CUDA libraries a
//! workload uses, reading their symbols, placing each uprobe on an
//! instruction the kernel emulates, attaching those probes and reporting
//! each (probe_report); cgroups (their ids, paths, and the containers and
//! pods their paths name); the host facts both report; which kernels they run on (kernel_features); and
//! what both do as processes beside the workload they measure (host_process:
//! stop signals, SCHED_BATCH; bpf_host: libbpf's messages, detaching).
//! `launchgap-record` (src/main.rs) writes traces; `launchgap-monitor`
//! (src/bin/launchgap-monitor/) serves in-kernel aggregates to Prometheus.

pub mod bpf_host;
pub mod cgroups;
pub mod cuda_api;
pub mod cuda_attach;
pub mod discover;
pub mod elf_symbols;
pub mod host_process;
pub mod kernel_features;
pub mod metadata;
pub mod names;
pub mod probe_placement;
pub mod probe_plan;
pub mod probe_report;

/// The trace's name tables (schema/trace.toml's `names`; scripts/gen_schema.py writes them).
pub mod schema_names {
    include!("generated/trace_names.rs");
}

/// The words the monitor shares with the analysis (schema/trace.toml's thread states and
/// launch-gap classes): the names of the numbers its kernel counts by.
pub mod vocabulary {
    include!("generated/vocabulary.rs");
}
