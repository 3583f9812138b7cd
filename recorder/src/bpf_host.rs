//! What both BPF loaders (the recorder's and the monitor's) ask of the host
//! before and while loading: kernel BTF, the thread-id range, and errors a
//! user can act on.

use anyhow::{anyhow, Result};
use std::path::Path;

/// Thread ids run below /proc/sys/kernel/pid_max: the size of the per-thread flag array.
pub fn pid_max() -> u32 {
    const LINUX_PID_MAX_LIMIT: u32 = 1 << 22;
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(LINUX_PID_MAX_LIMIT)
}

/// CO-RE needs the kernel's BTF; the path is overridable so that tests can play a kernel without it.
pub fn require_kernel_btf() -> Result<()> {
    let btf_path = std::env::var("LAUNCHGAP_VMLINUX_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".into());
    if !Path::new(&btf_path).exists() {
        return Err(anyhow!("this kernel exposes no BTF ({btf_path}): it needs CONFIG_DEBUG_INFO_BTF=y"));
    }
    Ok(())
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
