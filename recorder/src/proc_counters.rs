//! The kernel's own interrupt counters (/proc/softirqs, /proc/interrupts),
//! snapshot right after the probes attach and right before they detach, so
//! the trace carries its own cross-check.

use serde_json::{json, Map, Value};

/// Parses the shared layout: a header of CPU columns, then `LABEL: n n n ...`.
pub fn parse_per_cpu_table(text: &str) -> Value {
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut rows = Map::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else { continue };
        let counts: Vec<u64> =
            rest.split_whitespace().take(cpus.len()).map_while(|n| n.parse().ok()).collect();
        if counts.len() == cpus.len() {
            rows.insert(label.trim().to_string(), json!(counts));
        }
    }
    json!({"cpus": cpus, "rows": rows})
}

/// Which side of a table's read `around` is called on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Before,
    After,
}

/// The snapshot, with `around(table, edge)` called just before and just after
/// each table's read ("softirqs", "interrupts"): the recorder opens and
/// closes its own count of IRQ probe hits there (irq_audit.rs), so that the
/// probes' window covers the kernel's and barely more.
pub fn snapshot(mut around: impl FnMut(&'static str, Edge)) -> Value {
    // Reading a table takes time (milliseconds on a busy machine), during
    // which interrupts keep coming: each table gets the clock before and
    // after its read, so a comparison knows exactly which events may or may
    // not be in the counts.
    let mut read = |name: &'static str| {
        around(name, Edge::Before);
        let before = crate::metadata::monotonic_ns();
        let table = std::fs::read_to_string(format!("/proc/{name}"))
            .map(|t| parse_per_cpu_table(&t))
            .unwrap_or(Value::Null);
        let after = crate::metadata::monotonic_ns();
        around(name, Edge::After);
        (table, json!([before, after]))
    };
    let monotonic_ns = crate::metadata::monotonic_ns();
    let (softirqs, softirqs_read) = read("softirqs");
    let (interrupts, interrupts_read) = read("interrupts");
    json!({
        "monotonic_ns": monotonic_ns,
        "softirqs": softirqs,
        "interrupts": interrupts,
        "read_ns": {"softirqs": softirqs_read, "interrupts": interrupts_read},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_softirqs_and_interrupts_layouts() {
        let softirqs = "                    CPU0       CPU1\n          HI:          1          0\n       TIMER:     123456      65432\n      NET_RX:         10         20\n";
        let v = parse_per_cpu_table(softirqs);
        assert_eq!(v["cpus"], json!([0, 1]));
        assert_eq!(v["rows"]["TIMER"], json!([123456, 65432]));
        assert_eq!(v["rows"]["NET_RX"], json!([10, 20]));

        let interrupts = "           CPU0       CPU1       \n  1:          9          0   IO-APIC   1-edge      i8042\n 24:        100         50   PCI-MSI 49152-edge      virtio0-config\nLOC:       5000       4000   Local timer interrupts\nERR:          0\n";
        let v = parse_per_cpu_table(interrupts);
        assert_eq!(v["rows"]["24"], json!([100, 50]));
        assert_eq!(v["rows"]["LOC"], json!([5000, 4000]));
        assert!(v["rows"].get("ERR").is_none(), "rows without a count per CPU are skipped");
    }
}
