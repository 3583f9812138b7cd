//! What both BPF loaders (the recorder's and the monitor's) ask of the host
//! while loading: the thread-id range, and errors a user can act on. Whether
//! the kernel can run them at all is kernel_features', decided before.

use anyhow::anyhow;

/// Thread ids run below /proc/sys/kernel/pid_max: the size of the per-thread flag array.
pub fn pid_max() -> u32 {
    const LINUX_PID_MAX_LIMIT: u32 = 1 << 22;
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(LINUX_PID_MAX_LIMIT)
}

/// Why loading failed, in words a user can act on.
pub fn explain_load_error(err: &libbpf_rs::Error) -> anyhow::Error {
    let text = format!("{err:#}");
    if text.contains("Operation not permitted") || text.contains("EPERM") || text.contains("Permission denied") {
        anyhow!("permission denied loading BPF programs: run as root (or with CAP_BPF and CAP_PERFMON)")
    } else {
        anyhow!("loading the BPF programs failed: {text}")
    }
}
