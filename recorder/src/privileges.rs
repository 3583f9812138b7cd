//! Whether this process may load and attach tracing BPF programs, checked
//! before anything is written or started: CAP_BPF with CAP_PERFMON (Linux
//! 5.8+), or CAP_SYS_ADMIN, which older kernels ask for instead.

use anyhow::{bail, Result};

/// include/uapi/linux/capability.h
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

pub const NOT_PERMITTED: &str =
    "permission denied loading BPF programs: run as root (or with CAP_BPF and CAP_PERFMON)";

/// The effective capability set from /proc/self/status's `CapEff:` line (hex).
fn effective_capabilities(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|line| line.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

fn may_trace(capabilities: u64) -> bool {
    let has = |cap: u32| capabilities & (1u64 << cap) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// One line when the recorder cannot trace; unreadable status lets the
/// kernel decide at load time (the same line comes from there).
pub fn check() -> Result<()> {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return Ok(()) };
    match effective_capabilities(&status) {
        Some(caps) if !may_trace(caps) => bail!(NOT_PERMITTED),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_effective_set_and_wants_bpf_with_perfmon_or_sys_admin() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n";
        assert_eq!(effective_capabilities(status), Some(0x1ff_ffff_ffff));
        assert!(may_trace(0x1ff_ffff_ffff));
        assert!(!may_trace(0));
        assert!(may_trace(1 << CAP_SYS_ADMIN));
        assert!(may_trace((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!may_trace(1 << CAP_BPF));
        assert_eq!(effective_capabilities("Name:\tx\n"), None);
    }
}
