//! The host files `launchgap doctor` reads, captured when recording starts so
//! the report can run the doctor's checks on the host as it was during the
//! run. The set mirrors python/launchgap/doctor/facts.py (a test compares the
//! two on a live recording). Files are kept as the kernel wrote them, except
//! four, cut to what the doctor consults so the metadata stays small:
//! /proc/cpuinfo keeps its first processor, the kernel config its
//! CONFIG_NO_HZ/PREEMPT/RCU_NOCB_CPU/CPU_ISOLATION/HZ lines (decompressed),
//! a /sys/kernel/debug/irq/irqs/N file its IRQD_ state lines, and a process's
//! environment its IRQBALANCE_ variables. Under /proc only irqbalance
//! processes are listed.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{json, Value};

const FILES: &[&str] = &[
    "/proc/cmdline",
    "/proc/interrupts",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/version",
    "/proc/sys/kernel/sched_rt_runtime_us",
    "/proc/sys/kernel/sched_rt_period_us",
    "/proc/sys/kernel/timer_migration",
    "/proc/irq/default_smp_affinity",
    "/sys/devices/system/cpu/online",
    "/sys/devices/system/cpu/possible",
    "/sys/devices/system/cpu/isolated",
    "/sys/devices/system/cpu/nohz_full",
    "/sys/devices/system/cpu/smt/control",
    "/sys/devices/system/cpu/smt/active",
    "/sys/devices/virtual/workqueue/cpumask",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag",
    "/sys/kernel/realtime",
    "/sys/kernel/debug/sched/preempt",
    "/sys/kernel/security/lockdown",
    "/sys/hypervisor/type",
    "/sys/class/dmi/id/sys_vendor",
    "/sys/class/dmi/id/product_name",
    "/etc/default/irqbalance",
    "/etc/sysconfig/irqbalance",
];
const CPUINFO: &str = "/proc/cpuinfo";
const CONFIG_GZ: &str = "/proc/config.gz";
const CONFIG_PREFIXES: &[&str] =
    &["CONFIG_NO_HZ", "CONFIG_PREEMPT", "CONFIG_RCU_NOCB_CPU", "CONFIG_CPU_ISOLATION", "CONFIG_HZ"];
const IRQ_DIR: &str = "/proc/irq";
const IRQ_FILES: &[&str] = &["effective_affinity_list", "smp_affinity_list"];
const DEBUGFS: &str = "/sys/kernel/debug";
const IRQ_DEBUGFS: &str = "/sys/kernel/debug/irq/irqs";
const PCI_DEVICES: &str = "/sys/bus/pci/devices";
const PCI_FILES: &[&str] = &["vendor", "class", "numa_node", "local_cpulist", "irq"];
const CPU_DIR: &str = "/sys/devices/system/cpu";
const CPU_FILES: &[&str] = &["cpufreq/scaling_governor", "topology/thread_siblings_list"];
const IRQBALANCE: &str = "irqbalance";
const IRQBALANCE_VARIABLE: &str = "IRQBALANCE_";

#[derive(Default)]
struct Snapshot {
    files: BTreeMap<String, String>,
    errors: BTreeMap<String, i32>,
    dirs: BTreeMap<String, Vec<String>>,
}

fn errno_of(err: &std::io::Error) -> i32 {
    err.raw_os_error().unwrap_or(libc::EIO)
}

fn is_number(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

impl Snapshot {
    fn read_bytes(&mut self, path: &str) -> Option<Vec<u8>> {
        match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(err) => {
                self.errors.insert(path.to_string(), errno_of(&err));
                None
            }
        }
    }

    /// Reads PATH and keeps what `keep` returns of its text.
    fn file_with(&mut self, path: &str, keep: impl Fn(&str) -> String) -> Option<String> {
        let text = String::from_utf8_lossy(&self.read_bytes(path)?).into_owned();
        let kept = keep(&text);
        self.files.insert(path.to_string(), kept.clone());
        Some(text)
    }

    fn file(&mut self, path: &str) -> Option<String> {
        self.file_with(path, str::to_string)
    }

    fn list(&mut self, path: &str) -> Vec<String> {
        match std::fs::read_dir(path) {
            Ok(entries) => {
                let mut names: Vec<String> = entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect();
                names.sort();
                self.dirs.insert(path.to_string(), names.clone());
                names
            }
            Err(err) => {
                self.errors.insert(path.to_string(), errno_of(&err));
                Vec::new()
            }
        }
    }

    fn kernel_config(&mut self) {
        if let Some(compressed) = self.read_bytes(CONFIG_GZ) {
            let mut text = String::new();
            if flate2::read::GzDecoder::new(&compressed[..]).read_to_string(&mut text).is_ok() {
                self.files.insert(CONFIG_GZ.to_string(), config_lines(&text));
                return;
            }
            self.errors.insert(CONFIG_GZ.to_string(), libc::EINVAL);
        }
        if let Some(release) =
            self.files.get("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string())
        {
            self.file_with(&format!("/boot/config-{release}"), config_lines);
        }
    }

    fn irqbalance_processes(&mut self) {
        let mut found = Vec::new();
        for pid in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = pid.file_name().to_str().map(str::to_string) else { continue };
            if !is_number(&pid) {
                continue;
            }
            let comm = format!("/proc/{pid}/comm");
            if std::fs::read_to_string(&comm).map(|c| c.trim() == IRQBALANCE).unwrap_or(false) {
                self.file(&comm);
                self.file_with(&format!("/proc/{pid}/environ"), irqbalance_variables);
                found.push(pid);
            }
        }
        self.dirs.insert("/proc".to_string(), found);
    }
}

/// The config lines the doctor consults, "# CONFIG_X is not set" included.
fn config_lines(text: &str) -> String {
    text.lines()
        .filter(|line| {
            let option = line.strip_prefix("# ").unwrap_or(line);
            CONFIG_PREFIXES.iter().any(|p| option.starts_with(p))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The first processor's block of /proc/cpuinfo (the flags are the same on every CPU).
fn first_processor(text: &str) -> String {
    match text.find("\n\n") {
        Some(end) => text[..end + 1].to_string(),
        None => text.to_string(),
    }
}

/// The state lines of a /sys/kernel/debug/irq/irqs/N file (IRQD_AFFINITY_MANAGED among them).
fn irq_state_lines(text: &str) -> String {
    text.lines().filter(|l| l.trim_start().starts_with("IRQD_")).map(|l| format!("{l}\n")).collect()
}

/// IRQBALANCE_* entries of a NUL-separated environment, NUL-separated as the kernel shows them.
fn irqbalance_variables(text: &str) -> String {
    text.split('\0')
        .filter(|e| e.starts_with(IRQBALANCE_VARIABLE))
        .map(|e| format!("{e}\0"))
        .collect()
}

pub fn snapshot() -> Value {
    let mut s = Snapshot::default();
    for path in FILES {
        s.file(path);
    }
    s.file_with(CPUINFO, first_processor);
    s.kernel_config();
    for irq in s.list(IRQ_DIR).into_iter().filter(|n| is_number(n)) {
        for name in IRQ_FILES {
            s.file(&format!("{IRQ_DIR}/{irq}/{name}"));
        }
    }
    s.list(DEBUGFS);
    for irq in s.list(IRQ_DEBUGFS).into_iter().filter(|n| is_number(n)) {
        s.file_with(&format!("{IRQ_DEBUGFS}/{irq}"), irq_state_lines);
    }
    for device in s.list(PCI_DEVICES) {
        for name in PCI_FILES {
            s.file(&format!("{PCI_DEVICES}/{device}/{name}"));
        }
        s.list(&format!("{PCI_DEVICES}/{device}/msi_irqs"));
    }
    let cpus: Vec<String> = s
        .list(CPU_DIR)
        .into_iter()
        .filter(|n| n.strip_prefix("cpu").is_some_and(is_number))
        .collect();
    for cpu in cpus {
        for name in CPU_FILES {
            s.file(&format!("{CPU_DIR}/{cpu}/{name}"));
        }
    }
    s.irqbalance_processes();
    json!({"files": s.files, "errors": s.errors, "dirs": s.dirs})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keeps_only_the_options_the_doctor_reads() {
        let text = "CONFIG_NO_HZ_FULL=y\nCONFIG_SMP=y\n# CONFIG_PREEMPT_RT is not set\n# CONFIG_USB is not set\n";
        assert_eq!(config_lines(text), "CONFIG_NO_HZ_FULL=y\n# CONFIG_PREEMPT_RT is not set\n");
    }

    #[test]
    fn cpuinfo_keeps_the_first_processor() {
        assert_eq!(
            first_processor("processor\t: 0\nflags\t: fpu\n\nprocessor\t: 1\n"),
            "processor\t: 0\nflags\t: fpu\n"
        );
    }

    #[test]
    fn environment_keeps_only_irqbalance_variables() {
        assert_eq!(
            irqbalance_variables("PATH=/bin\0IRQBALANCE_BANNED_CPULIST=2-3\0HOME=/\0"),
            "IRQBALANCE_BANNED_CPULIST=2-3\0"
        );
    }

    #[test]
    fn snapshot_of_this_host_reads_the_command_line_and_every_irq() {
        let snap = snapshot();
        assert_eq!(
            snap["files"]["/proc/cmdline"].as_str().unwrap(),
            std::fs::read_to_string("/proc/cmdline").unwrap()
        );
        let irqs = std::fs::read_dir("/proc/irq")
            .unwrap()
            .flatten()
            .filter(|e| is_number(e.file_name().to_str().unwrap()))
            .count();
        let captured = snap["files"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("/proc/irq/") && k.ends_with("/smp_affinity_list"))
            .count();
        assert_eq!(captured, irqs);
    }
}
