//! What the trace cannot hold, and why: the rows for losses found at the
//! stop (programs the kernel skipped, interrupts no probe saw) and the
//! recorder's LOST line over every cause (docs/trace-format.md, "lost").

use std::collections::BTreeMap;

use serde_json::json;

use crate::irq_audit::Unseen;
use crate::prog_stats::ProgramMisses;

/// A `lost` row with its cause in `detail` (docs/trace-format.md).
pub struct Unrecorded {
    pub cpu: Option<u32>,
    pub event: &'static str,
    pub count: u64,
    pub detail: String,
}

/// Program skips (CPU unknown) and interrupts no probe saw, as `lost` rows.
pub fn unrecorded(misses: &[ProgramMisses], unseen: &[Unseen]) -> Vec<Unrecorded> {
    let skipped = misses.iter().map(|m| Unrecorded {
        cpu: None,
        event: m.event,
        count: m.misses,
        detail: json!({"cause": "recursion_misses", "program": m.program}).to_string(),
    });
    let never_seen = unseen.iter().map(|u| Unrecorded {
        cpu: Some(u.cpu),
        event: u.event,
        count: u.count,
        detail: json!({"cause": "not_seen_by_probe", "counter": u.counter}).to_string(),
    });
    skipped.chain(never_seen).collect()
}

/// The LOST line: what was lost, by event, and each cause with its count.
pub fn lost_line<'a>(
    drops: impl Iterator<Item = (&'a str, u64)>,
    skipped: &[ProgramMisses],
    unseen: &[Unseen],
) -> String {
    let mut by_event: BTreeMap<&str, u64> = BTreeMap::new();
    let mut dropped = 0;
    for (event, count) in drops {
        *by_event.entry(event).or_default() += count;
        dropped += count;
    }
    for miss in skipped {
        *by_event.entry(miss.event).or_default() += miss.misses;
    }
    for u in unseen {
        *by_event.entry(u.event).or_default() += u.count;
    }
    let total: u64 = by_event.values().sum();
    let events: Vec<String> = by_event.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let mut causes = Vec::new();
    if dropped > 0 {
        causes.push(format!("{dropped} because the ring buffer was full (try a larger --buffer)"));
    }
    if !skipped.is_empty() {
        let programs: Vec<String> =
            skipped.iter().map(|m| format!("{} {}", m.program, m.misses)).collect();
        let count: u64 = skipped.iter().map(|m| m.misses).sum();
        causes.push(format!(
            "{count} skipped by the kernel as BPF recursion (recursion_misses: {})",
            programs.join(", ")
        ));
    }
    if !unseen.is_empty() {
        let mut by_counter: BTreeMap<&str, u64> = BTreeMap::new();
        for u in unseen {
            *by_counter.entry(u.counter.rsplit(' ').next().unwrap_or("?")).or_default() += u.count;
        }
        let counters: Vec<String> = by_counter.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let count: u64 = unseen.iter().map(|u| u.count).sum();
        causes.push(format!(
            "{count} counted by the kernel but never seen by a probe ({})",
            counters.join(", ")
        ));
    }
    format!(
        "LOST {total} events ({}): {}; the trace records them as lost rows",
        events.join(", "),
        causes.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped() -> Vec<ProgramMisses> {
        vec![ProgramMisses { program: "handle_sched_waking".into(), event: "wakeup", misses: 3 }]
    }

    fn unseen() -> Vec<Unseen> {
        vec![
            Unseen { cpu: 1, event: "hardirq", counter: "/proc/interrupts 36".into(), count: 30 },
            Unseen { cpu: 1, event: "softirq", counter: "/proc/softirqs BLOCK".into(), count: 30 },
        ]
    }

    #[test]
    fn the_lost_line_names_every_cause() {
        let drops = [("switch", 5u64), ("wakeup", 2)];
        assert_eq!(
            lost_line(drops.into_iter(), &skipped(), &unseen()),
            "LOST 70 events (hardirq 30, softirq 30, switch 5, wakeup 5): 7 because the ring buffer was full \
             (try a larger --buffer); 3 skipped by the kernel as BPF recursion (recursion_misses: handle_sched_waking 3); \
             60 counted by the kernel but never seen by a probe (36 30, BLOCK 30); the trace records them as lost rows"
        );
        assert_eq!(
            lost_line(std::iter::empty(), &skipped(), &[]),
            "LOST 3 events (wakeup 3): 3 skipped by the kernel as BPF recursion (recursion_misses: handle_sched_waking 3); \
             the trace records them as lost rows"
        );
    }
}
