//! The monitor's view of its targets, rebuilt from the kernel's maps: live
//! threads' counters summed by process, plus what exited threads left
//! (folded in the kernel into `retired`, then taken here once the process
//! is gone and kept for --retain-exited). Sums only ever grow while a
//! process is exported, so every counter stays a Prometheus counter.
//! Pure: maps in, series out; the I/O is the caller's.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::skel::types::{culprit_key, process_remains, thread_counters, thread_stats};
use launchgap_record::cgroups::CgroupLabels;
use launchgap_record::vocabulary::{INTERFERENCE_CAUSES, WAITING_RUN_STATES};

/// A process, told apart from a later one with the same pid by its start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessKey {
    pub pid: u32,
    /// The leader's start time, ns since boot (start_boottime: /proc's starttime).
    pub start_ns: u64,
}

/// The name of the cause a culprit is charged under: its waiting thread's enum run_state.
pub fn cause_name(cause: u8) -> &'static str {
    WAITING_RUN_STATES.iter().find(|(c, _)| *c == cause).map_or("unknown", |(_, n)| n)
}

/// enum drain_state in bpf/monitor.h: the index of `delay_ns` held while the thread's GPU work was drained.
pub const DRAINED: usize = 1;
pub type ByCause = [u64; INTERFERENCE_CAUSES];

const COUNTER_WORDS: usize = std::mem::size_of::<thread_counters>() / 8;
const _: () =
    assert!(std::mem::size_of::<thread_counters>().is_multiple_of(8), "thread_counters is all u64");

fn words(c: &thread_counters) -> &[u64] {
    // SAFETY: thread_counters (bpf/monitor.h) is only u64 fields and arrays of them.
    unsafe { std::slice::from_raw_parts(c as *const thread_counters as *const u64, COUNTER_WORDS) }
}

fn words_mut(c: &mut thread_counters) -> &mut [u64] {
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(c as *mut thread_counters as *mut u64, COUNTER_WORDS) }
}

pub fn add(into: &mut thread_counters, from: &thread_counters) {
    for (a, b) in words_mut(into).iter_mut().zip(words(from)) {
        *a = a.wrapping_add(*b);
    }
}

/// A kernel task name up to its NUL, escaped as the trace escapes it (a name
/// that is not UTF-8 keeps its bytes, so a recording and the monitor agree).
pub fn comm_string(comm: &[i8]) -> String {
    let bytes: Vec<u8> = comm.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
    launchgap_record::names::escape_name(&bytes).into_owned()
}

pub fn process_of(t: &thread_stats) -> ProcessKey {
    ProcessKey { pid: t.state.pid, start_ns: t.state.process_start_ns }
}

/// (command, cgroup v2 id) as the kernel side saw a thread.
pub fn identity_of(t: &thread_stats) -> (String, u64) {
    (comm_string(&t.state.comm), t.state.cgroup_id)
}

/// (command, cgroup v2 id) as the kernel side kept them for an exited process.
pub fn remains_identity(r: &process_remains) -> (String, u64) {
    (comm_string(&r.command), r.cgroup_id)
}

/// What is kept about a process between scrapes.
#[derive(Debug, Default)]
pub struct ProcessRecord {
    pub command: String,
    pub labels: CgroupLabels,
    /// Counters of threads (and retired entries) taken out of the kernel.
    pub taken: thread_counters,
    /// Culprit ns taken out of the kernel: (cause, command) -> ns.
    pub culprits_taken: BTreeMap<(u8, String), u64>,
    /// When it was first found gone (it stays exported until --retain-exited after).
    pub gone_since: Option<Instant>,
    /// Each of its series' GPU-time lower bound (by tid; None: the process,
    /// or its exited threads with --per-thread) when last seen with at most
    /// one launching thread: what it stays at once a second thread launches.
    pub lower_while_one_launcher: HashMap<Option<u32>, ByCause>,
}

/// One exported set of counters: a process, or a thread with --per-thread.
#[derive(Debug)]
pub struct TargetSeries {
    pub process: ProcessKey,
    pub tid: Option<(u32, String)>,
    pub counters: thread_counters,
    pub live_threads: u64,
    /// The GPU idle its interference caused, at least (set by `gpu_idle_lower_bounds`).
    pub gpu_idle_lower_ns: ByCause,
}

impl TargetSeries {
    fn new(
        process: ProcessKey,
        tid: Option<(u32, String)>,
        counters: thread_counters,
        live_threads: u64,
    ) -> Self {
        TargetSeries { process, tid, counters, live_threads, gpu_idle_lower_ns: ByCause::default() }
    }

    /// The GPU idle its interference caused, at most: every delay between its
    /// threads' first GPU work and their latest launch, each at most its length.
    pub fn gpu_idle_upper_ns(&self) -> ByCause {
        let mut upper = ByCause::default();
        for by_cause in &self.counters.delay_ns {
            for (sum, ns) in upper.iter_mut().zip(by_cause) {
                *sum += ns;
            }
        }
        upper
    }
}

fn series_of(
    out: &mut BTreeMap<ProcessKey, TargetSeries>,
    process: ProcessKey,
) -> &mut TargetSeries {
    out.entry(process)
        .or_insert_with(|| TargetSeries::new(process, None, thread_counters::default(), 0))
}

/// Sums per process: live threads + retired in the kernel + taken here.
pub fn by_process(
    records: &HashMap<ProcessKey, ProcessRecord>,
    threads: &[(u32, thread_stats)],
    retired: &[(ProcessKey, thread_counters)],
) -> Vec<TargetSeries> {
    let mut out: BTreeMap<ProcessKey, TargetSeries> = BTreeMap::new();
    for (key, record) in records {
        add(&mut series_of(&mut out, *key).counters, &record.taken);
    }
    for (key, counters) in retired {
        add(&mut series_of(&mut out, *key).counters, counters);
    }
    for (_, t) in threads {
        let series = series_of(&mut out, process_of(t));
        add(&mut series.counters, &t.counters);
        series.live_threads += 1;
    }
    out.into_values().collect()
}

/// One series per live thread (--per-thread).
pub fn by_thread(threads: &[(u32, thread_stats)]) -> Vec<TargetSeries> {
    let mut out: Vec<TargetSeries> = threads
        .iter()
        .map(|(tid, t)| {
            TargetSeries::new(
                process_of(t),
                Some((*tid, comm_string(&t.state.comm))),
                t.counters,
                1,
            )
        })
        .collect();
    out.sort_by_key(|s| (s.process, s.tid.as_ref().map(|(tid, _)| *tid)));
    out
}

/// Each series' GPU-time lower bound: the interference of its threads while
/// their GPU work was drained, which cost the GPU one for one only where the
/// drained thread is its process's one launching thread (with several,
/// another's queued work may have kept the GPU busy). So it is counted
/// while the process has had at most one launching thread (`launching`,
/// by process, from the processes' summed counters), and stays where it
/// was then once a second thread launches: a counter never falls.
pub fn gpu_idle_lower_bounds(
    series: &mut [TargetSeries],
    launching: &HashMap<ProcessKey, u64>,
    records: &mut HashMap<ProcessKey, ProcessRecord>,
) {
    for s in series {
        let Some(record) = records.get_mut(&s.process) else { continue };
        let key = s.tid.as_ref().map(|(tid, _)| *tid);
        if launching.get(&s.process).copied().unwrap_or(0) <= 1 {
            s.gpu_idle_lower_ns = s.counters.delay_ns[DRAINED];
            record.lower_while_one_launcher.insert(key, s.gpu_idle_lower_ns);
        } else {
            s.gpu_idle_lower_ns =
                record.lower_while_one_launcher.get(&key).copied().unwrap_or_default();
        }
    }
}

/// Culprits of one process and cause: the top K by time, the rest summed as `other`.
#[derive(Debug, PartialEq)]
pub struct Culprit {
    pub process: ProcessKey,
    pub cause: u8,
    pub command: String,
    pub ns: u64,
}

pub const OTHER_CULPRITS: &str = "other";

/// Kernel culprit entries (by pid) and the ones taken here (by process):
/// per process and cause, the `top` largest named, the rest as `other`.
/// A pid's kernel entries belong to its live process, the one not gone.
pub fn top_culprits(
    records: &HashMap<ProcessKey, ProcessRecord>,
    kernel: &[(culprit_key, u64)],
    top: usize,
) -> Vec<Culprit> {
    let live: HashMap<u32, ProcessKey> =
        records.iter().filter(|(_, r)| r.gone_since.is_none()).map(|(k, _)| (k.pid, *k)).collect();
    let mut sums: BTreeMap<(ProcessKey, u8), HashMap<String, u64>> = BTreeMap::new();
    for (key, record) in records {
        for ((cause, command), ns) in &record.culprits_taken {
            *sums.entry((*key, *cause)).or_default().entry(command.clone()).or_default() += ns;
        }
    }
    for (key, ns) in kernel {
        let Some(process) = live.get(&key.pid) else { continue };
        *sums
            .entry((*process, key.cause))
            .or_default()
            .entry(comm_string(&key.comm))
            .or_default() += ns;
    }
    let mut out = Vec::new();
    for ((process, cause), by_command) in sums {
        let mut ranked: Vec<(String, u64)> = by_command.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rest: u64 = ranked.iter().skip(top).map(|(_, ns)| ns).sum();
        for (command, ns) in ranked.into_iter().take(top) {
            out.push(Culprit { process, cause, command, ns });
        }
        if rest > 0 {
            out.push(Culprit { process, cause, command: OTHER_CULPRITS.to_string(), ns: rest });
        }
    }
    out
}

/// Processes gone longer than `retain`, and past `max_gone` the oldest gone: dropped.
pub fn expired(
    records: &HashMap<ProcessKey, ProcessRecord>,
    now: Instant,
    retain: Duration,
    max_gone: usize,
) -> Vec<ProcessKey> {
    let mut gone: Vec<(Instant, ProcessKey)> =
        records.iter().filter_map(|(k, r)| r.gone_since.map(|t| (t, *k))).collect();
    gone.sort();
    let over = gone.len().saturating_sub(max_gone);
    gone.iter()
        .enumerate()
        .filter(|(i, (since, _))| *i < over || now.duration_since(*since) >= retain)
        .map(|(_, (_, k))| *k)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(pid: u32, tid: u32, start: u64, launches: u64) -> (u32, thread_stats) {
        let mut t = thread_stats::default();
        t.state.pid = pid;
        t.state.tid = tid;
        t.state.process_start_ns = start;
        t.counters.calls[0] = launches;
        t.counters.gaps[1][3] = launches;
        (tid, t)
    }

    #[test]
    fn processes_sum_live_retired_and_taken_counters() {
        let key = ProcessKey { pid: 10, start_ns: 5 };
        let mut records = HashMap::new();
        let mut taken = thread_counters::default();
        taken.calls[0] = 7;
        records.insert(key, ProcessRecord { taken, ..Default::default() });
        let mut retired = thread_counters::default();
        retired.calls[0] = 100;
        let threads = [thread(10, 10, 5, 1), thread(10, 11, 5, 2), thread(20, 20, 9, 4)];
        let series = by_process(&records, &threads, &[(key, retired)]);
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].process, key);
        assert_eq!(series[0].counters.calls[0], 7 + 100 + 1 + 2);
        assert_eq!(series[0].counters.gaps[1][3], 3);
        assert_eq!(series[0].live_threads, 2);
        assert_eq!(series[1].counters.calls[0], 4);
    }

    fn launcher(pid: u32, tid: u32, drained_ns: u64, other_ns: u64) -> (u32, thread_stats) {
        let (tid, mut t) = thread(pid, tid, 5, 1);
        t.counters.launching_threads = 1;
        t.counters.delay_ns[DRAINED][0] = drained_ns;
        t.counters.delay_ns[1 - DRAINED][2] = other_ns;
        (tid, t)
    }

    fn lower_bounds(
        records: &mut HashMap<ProcessKey, ProcessRecord>,
        threads: &[(u32, thread_stats)],
    ) -> Vec<ByCause> {
        let mut series = by_process(records, threads, &[]);
        let launching = series.iter().map(|s| (s.process, s.counters.launching_threads)).collect();
        gpu_idle_lower_bounds(&mut series, &launching, records);
        series.iter().map(|s| s.gpu_idle_lower_ns).collect()
    }

    #[test]
    fn the_lower_bound_is_the_one_launchers_drained_delay_and_stays_once_a_second_thread_launches()
    {
        let key = ProcessKey { pid: 10, start_ns: 5 };
        let mut records = HashMap::from([(key, ProcessRecord::default())]);
        let one = [launcher(10, 10, 700, 50)];
        assert_eq!(lower_bounds(&mut records, &one), vec![[700, 0, 0]]);
        assert_eq!(by_process(&records, &one, &[])[0].gpu_idle_upper_ns(), [700, 0, 50]);
        // a second launching thread: the drained delays may hide behind its work
        let two = [launcher(10, 10, 900, 50), launcher(10, 11, 300, 0)];
        assert_eq!(lower_bounds(&mut records, &two), vec![[700, 0, 0]]);
        assert_eq!(by_process(&records, &two, &[])[0].gpu_idle_upper_ns(), [1200, 0, 50]);
        // a thread that never launched does not count as a launcher
        let with_idle = [launcher(10, 10, 900, 50), thread(10, 12, 5, 0)];
        let mut fresh = HashMap::from([(key, ProcessRecord::default())]);
        assert_eq!(lower_bounds(&mut fresh, &with_idle), vec![[900, 0, 0]]);
    }

    #[test]
    fn a_reused_pid_is_another_process() {
        let threads = [thread(10, 10, 5, 1), thread(10, 12, 6, 1)];
        assert_eq!(by_process(&HashMap::new(), &threads, &[]).len(), 2);
    }

    fn culprit(pid: u32, cause: u8, comm: &str) -> culprit_key {
        let mut key = culprit_key { pid, cause, ..Default::default() };
        for (i, b) in comm.bytes().enumerate() {
            key.comm[i] = b as i8;
        }
        key
    }

    #[test]
    fn culprits_beyond_the_top_k_are_summed_as_other() {
        let key = ProcessKey { pid: 10, start_ns: 5 };
        let mut records = HashMap::new();
        records.insert(key, ProcessRecord::default());
        let kernel = [
            (culprit(10, 2, "stress-ng"), 500),
            (culprit(10, 2, "kworker"), 30),
            (culprit(10, 2, "sshd"), 20),
            (culprit(10, 3, "swapper"), 7),
            (culprit(99, 2, "x"), 1),
        ];
        let out = top_culprits(&records, &kernel, 1);
        assert_eq!(
            out,
            vec![
                Culprit { process: key, cause: 2, command: "stress-ng".into(), ns: 500 },
                Culprit { process: key, cause: 2, command: OTHER_CULPRITS.into(), ns: 50 },
                Culprit { process: key, cause: 3, command: "swapper".into(), ns: 7 },
            ]
        );
    }

    #[test]
    fn gone_processes_expire_by_age_and_by_count() {
        let now = Instant::now();
        let mut records = HashMap::new();
        for (pid, age) in [(1, 10), (2, 1), (3, 2), (4, 0)] {
            let gone_since = (pid != 4).then(|| now - Duration::from_secs(age));
            records.insert(
                ProcessKey { pid, start_ns: 0 },
                ProcessRecord { gone_since, ..Default::default() },
            );
        }
        let mut dropped = expired(&records, now, Duration::from_secs(5), 10);
        dropped.sort();
        assert_eq!(dropped, vec![ProcessKey { pid: 1, start_ns: 0 }]);
        let mut dropped = expired(&records, now, Duration::from_secs(60), 1);
        dropped.sort();
        assert_eq!(dropped.iter().map(|k| k.pid).collect::<Vec<_>>(), vec![1, 3]);
    }
}
