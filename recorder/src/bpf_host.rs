//! What both BPF loaders (the recorder's and the monitor's) ask of the host
//! while loading: the thread-id range, errors a user can act on, where
//! libbpf's own messages go; and how both detach. Whether the kernel can run
//! them at all is kernel_features', decided before.

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
    if text.contains("Operation not permitted")
        || text.contains("EPERM")
        || text.contains("Permission denied")
    {
        anyhow!(
            "permission denied loading BPF programs: run as root (or with CAP_BPF and CAP_PERFMON)"
        )
    } else {
        anyhow!("loading the BPF programs failed: {text}")
    }
}

/// libbpf's own chatter repeats what our one error line says; keep it for
/// debugging (LAUNCHGAP_DEBUG set: every message, on stderr).
pub fn route_libbpf_messages() {
    fn print(level: libbpf_rs::PrintLevel, message: String) {
        eprint!("libbpf ({level:?}): {message}");
    }
    if std::env::var_os("LAUNCHGAP_DEBUG").is_some() {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, print)));
    } else {
        libbpf_rs::set_print(None);
    }
}

/// Each tracepoint detach waits out an RCU grace period; waiting for them
/// side by side takes one grace period instead of one per probe.
pub fn detach_all(links: Vec<libbpf_rs::Link>) {
    std::thread::scope(|scope| {
        for link in links {
            scope.spawn(move || drop(link));
        }
    });
}
