//! The /metrics page: a snapshot of the series, encoded in the OpenMetrics
//! text format by the prometheus-client crate. Every metric and label is
//! described in docs/monitor.md (a test checks the two agree).

use std::collections::HashMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use launchgap_record::cuda_api::{ProbeShape, APIS};
use launchgap_record::vocabulary::{
    GAP_FIRST_BOUND_LOG2, INTERFERENCE_CAUSE_NAMES, MONITOR_GAP_CLASSES,
};

use crate::skel::types::thread_counters;
use crate::stats::{cause_name, ByCause, Culprit, ProcessKey, ProcessRecord, TargetSeries};

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// enum irq_kind in bpf/monitor.h
const IRQ_KINDS: [&str; 3] = ["hardirq", "softirq", "vector"];
/// enum lost_update in bpf/monitor.h
pub const LOST_UPDATE_REASONS: [&str; 6] = [
    "thread_map_full",
    "uncounted_calls",
    "process_map_full",
    "retired_map_full",
    "culprit_map_full",
    "waiter_slots_full",
];

const NS_PER_S: f64 = 1e9;

fn seconds(ns: u64) -> f64 {
    ns as f64 / NS_PER_S
}

/// Every gap bucket's upper bound in seconds, the last +Inf.
pub fn gap_bucket_bounds(buckets: usize) -> Vec<f64> {
    (0..buckets)
        .map(|b| {
            if b + 1 == buckets {
                f64::INFINITY
            } else {
                2f64.powi(GAP_FIRST_BOUND_LOG2 + b as i32) / NS_PER_S
            }
        })
        .collect()
}

type Labels = Vec<(String, String)>;

/// What one scrape shows; built from the maps, then encoded.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub targets: Vec<(Labels, TargetSeries)>,
    pub culprits: Vec<(Labels, f64)>,
    pub lost_updates: Vec<u64>,
    pub lost_culprit_ns: u64,
    /// (map, entries, capacity)
    pub maps: Vec<(&'static str, u64, u64)>,
    pub target_processes: u64,
    pub probes_attached: u64,
    pub probes_failed: u64,
    pub libraries: Vec<String>,
    pub target_mode: String,
    pub per_thread: bool,
    pub last_scrape_seconds: f64,
    pub http: crate::http::Health,
    /// Pushes by result, with --otlp-endpoint.
    pub otlp: Option<crate::otlp::Health>,
}

/// The labels of a process's series (and a thread's, with --per-thread).
pub fn target_labels(
    process: &ProcessKey,
    record: Option<&ProcessRecord>,
    tid: Option<&(u32, String)>,
) -> Labels {
    let (command, cgroup, container) = match record {
        Some(r) => (r.command.clone(), r.labels.cgroup.clone(), r.labels.container_id.clone()),
        None => (String::new(), String::new(), String::new()),
    };
    let mut labels = vec![
        ("pid".to_string(), process.pid.to_string()),
        ("command".to_string(), command),
        ("cgroup".to_string(), cgroup),
        ("container_id".to_string(), container),
    ];
    if let Some((tid, thread)) = tid {
        labels.push(("tid".to_string(), tid.to_string()));
        labels.push(("thread".to_string(), thread.clone()));
    }
    labels
}

pub fn culprit_labels(culprit: &Culprit, records: &HashMap<ProcessKey, ProcessRecord>) -> Labels {
    let mut labels = target_labels(&culprit.process, records.get(&culprit.process), None);
    labels.push(("culprit".to_string(), culprit.command.clone()));
    labels.push(("cause".to_string(), cause_name(culprit.cause).to_string()));
    labels
}

fn with(labels: &Labels, key: &str, value: &str) -> Labels {
    let mut out = labels.clone();
    out.push((key.to_string(), value.to_string()));
    out
}

fn is_launch(shape: ProbeShape) -> bool {
    matches!(shape, ProbeShape::Launch | ProbeShape::LaunchEx | ProbeShape::GraphLaunch)
}

fn is_sync(shape: ProbeShape) -> bool {
    matches!(shape, ProbeShape::Sync | ProbeShape::Memcpy)
}

/// A family of series: name (without unit or _total), help, unit, type.
struct Family<'a> {
    name: &'a str,
    help: &'a str,
    unit: Option<Unit>,
    kind: MetricType,
}

fn counter_family<V: prometheus_client::encoding::EncodeCounterValue>(
    encoder: &mut DescriptorEncoder,
    family: Family,
    series: impl IntoIterator<Item = (Labels, V)>,
) -> Result<(), std::fmt::Error> {
    let mut metric =
        encoder.encode_descriptor(family.name, family.help, family.unit.as_ref(), family.kind)?;
    for (labels, value) in series {
        metric.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

fn gauge_family<V: prometheus_client::encoding::EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    family: Family,
    series: impl IntoIterator<Item = (Labels, V)>,
) -> Result<(), std::fmt::Error> {
    let mut metric =
        encoder.encode_descriptor(family.name, family.help, family.unit.as_ref(), family.kind)?;
    for (labels, value) in series {
        metric.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

fn counter(name: &'static str, help: &'static str, unit: Option<Unit>) -> Family<'static> {
    Family { name, help, unit, kind: MetricType::Counter }
}

fn gauge(name: &'static str, help: &'static str) -> Family<'static> {
    Family { name, help, unit: None, kind: MetricType::Gauge }
}

impl Snapshot {
    /// (labels + extra label, value) for every target and every index of one per-api counter array.
    fn per_api(
        &self,
        keep: fn(ProbeShape) -> bool,
        values: fn(&thread_counters) -> &[u64],
        scale: fn(u64) -> f64,
    ) -> Vec<(Labels, f64)> {
        let mut out = Vec::new();
        for (labels, series) in &self.targets {
            for (slot, &value) in values(&series.counters).iter().enumerate() {
                let Some(api) = APIS.get(slot) else { continue };
                if keep(api.shape) && value > 0 {
                    out.push((with(labels, "api", api.name), scale(value)));
                }
            }
        }
        out
    }

    fn each<V>(&self, value: impl Fn(&TargetSeries) -> V) -> Vec<(Labels, V)> {
        self.targets.iter().map(|(labels, series)| (labels.clone(), value(series))).collect()
    }

    fn by_cause(&self, value: impl Fn(&TargetSeries) -> ByCause) -> Vec<(Labels, f64)> {
        self.by_kind(&INTERFERENCE_CAUSE_NAMES, "cause", |s, i| seconds(value(s)[i]))
    }

    fn by_kind<V>(
        &self,
        kinds: &[&str],
        key: &str,
        value: impl Fn(&TargetSeries, usize) -> V,
    ) -> Vec<(Labels, V)> {
        let mut out = Vec::new();
        for (labels, series) in &self.targets {
            for (i, kind) in kinds.iter().enumerate() {
                out.push((with(labels, key, kind), value(series, i)));
            }
        }
        out
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let e = &mut encoder;
        self.encode_cuda_calls(e)?;
        self.encode_gpu_idle(e)?;
        self.encode_scheduling(e)?;
        self.encode_launch_gaps(e)?;
        self.encode_threads(e)?;
        self.encode_monitor_health(e)?;
        self.encode_info(e)?;
        Ok(())
    }
}

impl Snapshot {
    /// The CUDA calls each target made, by driver entry point.
    fn encode_cuda_calls(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        counter_family(
            e,
            counter(
                "launchgap_kernel_launches",
                "Kernel launches (one per driver launch call), by driver entry point.",
                None,
            ),
            self.per_api(is_launch, |c| &c.calls, |v| v as f64),
        )?;
        counter_family(
            e,
            counter(
                "launchgap_syncs",
                "Blocking syncs and synchronous copies that returned, by driver entry point.",
                None,
            ),
            self.per_api(is_sync, |c| &c.calls, |v| v as f64),
        )?;
        counter_family(
            e,
            counter(
                "launchgap_sync",
                "Time inside those syncs and copies, entry to return.",
                Some(Unit::Seconds),
            ),
            self.per_api(is_sync, |c| &c.sync_ns, seconds),
        )?;
        counter_family(e, counter("launchgap_blocked_syncs", "Of those syncs and copies, the ones during which the thread was switched out voluntarily (it blocked, waiting for the GPU), by driver entry point.", None),
                       self.per_api(is_sync, |c| &c.blocked_syncs, |v| v as f64))?;
        Ok(())
    }

    /// The two bounds of the GPU idle time CPU interference caused.
    fn encode_gpu_idle(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        counter_family(e, counter("launchgap_gpu_idle_caused_lower", "A lower bound, not a measurement (the monitor never sees the GPU), of the GPU idle time the CPU interference of the process's launching thread caused, by cause: its preempted, run-queue and interrupt time after it returned from a sync that waits for all its GPU work and before its next launch, when its GPU had nothing to run. Counted while the process has one launching thread; stays where it was once a second one launches.", Some(Unit::Seconds)),
                       self.by_cause(|s| s.gpu_idle_lower_ns))?;
        counter_family(e, counter("launchgap_gpu_idle_caused_upper", "An upper bound, not a measurement (the monitor never sees the GPU), of the GPU idle time the CPU interference of the process's launching threads caused, by cause: every preempted, run-queue and interrupt delay between a thread's first GPU work and its latest launch, each costing at most its own length. It includes delays the GPU never noticed (hidden behind queued work).", Some(Unit::Seconds)),
                       self.by_cause(TargetSeries::gpu_idle_upper_ns))?;
        Ok(())
    }

    /// What the scheduler and interrupts did to each target.
    fn encode_scheduling(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        counter_family(
            e,
            counter(
                "launchgap_preempted",
                "Time switched out while still runnable (involuntary).",
                Some(Unit::Seconds),
            ),
            self.each(|s| seconds(s.counters.preempted_ns)),
        )?;
        counter_family(
            e,
            counter(
                "launchgap_runqueue_wait",
                "Time woken but not yet running.",
                Some(Unit::Seconds),
            ),
            self.each(|s| seconds(s.counters.runqueue_ns)),
        )?;
        counter_family(e, counter("launchgap_blocked", "Time switched out voluntarily: the workload's own waits (syncs, I/O, locks, sleeps).", Some(Unit::Seconds)),
                       self.each(|s| seconds(s.counters.blocked_ns)))?;
        counter_family(
            e,
            counter(
                "launchgap_irq",
                "Time in interrupts that interrupted the thread while it ran, each counted once.",
                Some(Unit::Seconds),
            ),
            self.by_kind(&IRQ_KINDS, "kind", |s, i| seconds(s.counters.irq_ns[i])),
        )?;
        counter_family(
            e,
            counter(
                "launchgap_interrupts",
                "Interrupts that interrupted the thread while it ran.",
                None,
            ),
            self.by_kind(&IRQ_KINDS, "kind", |s, i| s.counters.irq_count[i]),
        )?;
        counter_family(
            e,
            counter("launchgap_migrations", "Moves to another CPU.", None),
            self.each(|s| s.counters.migrations),
        )?;
        counter_family(e, counter("launchgap_context_switches", "Switches out: voluntary (blocked) or involuntary (preempted), as the kernel counts them.", None),
                       self.by_kind(&["voluntary", "involuntary"], "kind", |s, i| {
                           if i == 0 { s.counters.voluntary_switches } else { s.counters.involuntary_switches }
                       }))?;
        Ok(())
    }

    /// The gaps between launches: one histogram per target and gap class.
    fn encode_launch_gaps(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut metric = e.encode_descriptor(
            "launchgap_launch_gap",
            "Time between consecutive launches of a thread, by class: the cause that took most of the gap (clean if none).",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (labels, series) in &self.targets {
            for (class, name) in MONITOR_GAP_CLASSES.iter().enumerate() {
                let counts = &series.counters.gaps[class];
                let bounds = gap_bucket_bounds(counts.len());
                let buckets: Vec<(f64, u64)> =
                    bounds.into_iter().zip(counts.iter().copied()).collect();
                let count: u64 = counts.iter().sum();
                let sum = seconds(series.counters.gap_sum_ns[class]);
                metric
                    .encode_family(&with(labels, "class", name))?
                    .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
            }
        }
        Ok(())
    }

    /// Threads counted, and who ran while targets waited.
    fn encode_threads(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        gauge_family(
            e,
            gauge("launchgap_threads", "Live threads being counted."),
            self.each(|s| s.live_threads as i64),
        )?;
        gauge_family(e, gauge("launchgap_launching_threads", "Threads that have launched a kernel, exited ones included: the GPU-time lower bound is counted while the process has one."),
                     self.each(|s| s.counters.launching_threads as i64))?;
        counter_family(e, counter("launchgap_culprit", "Time each command (top K per process and cause, the rest as `other`; swapper: the CPU was idle) ran on a target's CPU while the target waited there.", Some(Unit::Seconds)),
                       self.culprits.iter().cloned())?;
        Ok(())
    }

    /// The monitor's own health: what it lost, how full its maps are, its probes, its serving and pushing.
    fn encode_monitor_health(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        counter_family(e, counter("launchgap_monitor_lost_updates", "Updates the kernel side could not make, by reason (a map was full): what they would have counted is missing.", None),
                       LOST_UPDATE_REASONS.iter().zip(&self.lost_updates)
                           .map(|(reason, n)| (vec![("reason".to_string(), reason.to_string())], *n)))?;
        counter_family(
            e,
            counter(
                "launchgap_monitor_lost_culprit",
                "Culprit time not attributed because the culprit map was full.",
                Some(Unit::Seconds),
            ),
            [(Labels::new(), seconds(self.lost_culprit_ns))],
        )?;
        gauge_family(
            e,
            gauge(
                "launchgap_monitor_map_entries",
                "Entries in each map whose use depends on the workload.",
            ),
            self.maps.iter().map(|(m, n, _)| (vec![("map".to_string(), m.to_string())], *n as i64)),
        )?;
        gauge_family(
            e,
            gauge("launchgap_monitor_map_capacity", "Each map's fixed capacity (set at start)."),
            self.maps.iter().map(|(m, _, c)| (vec![("map".to_string(), m.to_string())], *c as i64)),
        )?;
        gauge_family(
            e,
            gauge("launchgap_monitor_target_processes", "Processes being watched now."),
            [(Labels::new(), self.target_processes as i64)],
        )?;
        gauge_family(
            e,
            gauge("launchgap_monitor_probes", "CUDA uprobes, by state."),
            [
                (vec![("state".to_string(), "attached".to_string())], self.probes_attached as i64),
                (vec![("state".to_string(), "failed".to_string())], self.probes_failed as i64),
            ],
        )?;
        gauge_family(
            e,
            gauge(
                "launchgap_monitor_last_scrape_duration_seconds",
                "How long the previous scrape took to read the maps and encode.",
            ),
            [(Labels::new(), self.last_scrape_seconds)],
        )?;
        gauge_family(
            e,
            gauge(
                "launchgap_monitor_http_connections",
                "HTTP connections open now, this scrape's included.",
            ),
            [(Labels::new(), self.http.open as i64)],
        )?;
        counter_family(
            e,
            counter(
                "launchgap_monitor_http_dropped_connections",
                "HTTP connections the monitor closed before their exchange was done, by reason.",
                None,
            ),
            crate::http::DROP_REASONS
                .iter()
                .zip(&self.http.dropped)
                .map(|(reason, n)| (vec![("reason".to_string(), reason.to_string())], *n)),
        )?;
        if let Some(otlp) = &self.otlp {
            counter_family(
                e,
                counter(
                    "launchgap_monitor_otlp_pushes",
                    "OTLP pushes (--otlp-endpoint), by result: ok, or how one failed.",
                    None,
                ),
                crate::otlp::RESULTS
                    .iter()
                    .zip(&otlp.pushes)
                    .map(|(result, n)| (vec![("result".to_string(), result.to_string())], *n)),
            )?;
        }
        Ok(())
    }

    /// The monitor's version and settings, as an info metric.
    fn encode_info(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut metric = e.encode_descriptor(
            "launchgap_monitor",
            "The monitor's version and settings.",
            None,
            MetricType::Info,
        )?;
        let info = vec![
            ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ("targets".to_string(), self.target_mode.clone()),
            ("per_thread".to_string(), self.per_thread.to_string()),
            ("libraries".to_string(), self.libraries.join(",")),
        ];
        metric.encode_info(&info)?;
        Ok(())
    }
}

/// The page for one snapshot.
pub fn render(snapshot: Snapshot) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(snapshot));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_buckets_double_from_512_ns_to_infinity() {
        let bounds = gap_bucket_bounds(28);
        assert_eq!(bounds[0], 512e-9);
        assert_eq!(bounds[1], 1024e-9);
        assert_eq!(bounds[26], 2f64.powi(35) / 1e9);
        assert!(bounds[27].is_infinite());
    }

    #[test]
    fn the_kernels_counters_have_a_slot_for_each_class_cause_and_bucket_the_schema_names() {
        let counters = thread_counters::default();
        assert_eq!(counters.delay_ns[0].len(), INTERFERENCE_CAUSE_NAMES.len());
        assert_eq!(counters.gaps.len(), MONITOR_GAP_CLASSES.len());
        assert_eq!(counters.gaps[0].len(), launchgap_record::vocabulary::GAP_BUCKETS);
    }

    #[test]
    fn the_first_apis_are_the_driver_entry_points_the_kernel_counts() {
        // the kernel's per-API arrays are DRIVER_API_SLOTS long, indexed by cookie - 1
        let slots = thread_counters::default().calls.len();
        assert!(APIS[..slots].iter().all(|a| a.layer == launchgap_record::cuda_api::Layer::Driver));
        assert!(APIS[slots..].iter().all(|a| a.layer != launchgap_record::cuda_api::Layer::Driver));
    }
}
