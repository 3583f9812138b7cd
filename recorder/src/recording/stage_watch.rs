//! Saying what a slow start or end waits for. Beside a `nice -19` busy loop
//! on its CPU the recorder's set-up took tens of seconds, silently: it was
//! runnable, and the loop, 70 times its weight, ran instead (issue 34, item
//! 8). The main thread names each stage as it enters it; a thread of the
//! watch's own sleeps until a stage has lasted `SAY_AFTER`, then reads from
//! the kernel's schedstat what the main thread did meanwhile (ran, waited
//! runnable for a CPU, or neither: blocked; then, when another thread of ours
//! waited for a CPU instead, as the writer does at the ending, that one), and
//! says it in one line, once a recording, with the tasks runnable on that CPU
//! when the wait was for one. Nothing under -q. Between stages (the drain)
//! the watch thread only sleeps.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use launchgap_record::names;

/// A stage that has lasted this long is said.
pub const SAY_AFTER: Duration = Duration::from_secs(2);

/// What /proc/<pid>/task/<tid>/schedstat counts for a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedStat {
    /// time on a CPU
    pub ran_ns: u64,
    /// time runnable, waiting on a run queue
    pub waited_ns: u64,
}

impl SchedStat {
    fn parse(text: &str) -> Option<Self> {
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        Some(SchedStat { ran_ns: fields.next()??, waited_ns: fields.next()?? })
    }

    fn of_thread(tid: i32) -> Option<Self> {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
            .ok()
            .and_then(|t| Self::parse(&t))
    }

    /// Every thread of ours, by tid.
    fn of_our_threads() -> Vec<(i32, Self)> {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
        let tids = tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()));
        tids.filter_map(|tid| Self::of_thread(tid).map(|s| (tid, s))).collect()
    }

    fn since(self, then: Self) -> Self {
        SchedStat {
            ran_ns: self.ran_ns.saturating_sub(then.ran_ns),
            waited_ns: self.waited_ns.saturating_sub(then.waited_ns),
        }
    }
}

/// A task runnable on a CPU (from its /proc stat), named in the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runnable {
    pub pid: i32,
    pub comm: String,
    pub nice: i64,
    /// SCHED_FIFO (1) or SCHED_RR (2) rather than a nice level
    pub policy: u32,
    cpu_ticks: u64,
}

/// One task's stat line: (comm, state, nice, processor, policy, utime + stime).
fn parse_task_stat(stat: &str) -> Option<(String, char, i64, u32, u32, u64)> {
    let comm = stat
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(c, _)| c.to_string())?;
    // after the name: state is field 3, utime 14, stime 15, nice 19, processor 39, policy 41
    let fields: Vec<&str> = names::stat_fields_after_name(stat)?.collect();
    let field = |n: usize| fields.get(n - 3).copied();
    let number = |n: usize| field(n).and_then(|f| f.parse::<u64>().ok());
    Some((
        comm,
        field(3)?.chars().next()?,
        field(19)?.parse().ok()?,
        number(39)? as u32,
        number(41)? as u32,
        number(14)? + number(15)?,
    ))
}

/// The tasks other than ours runnable on `cpu` now, the heaviest first (real-time, then lowest nice, then
/// most CPU time), at most `most`.
fn runnable_on(cpu: u32, most: usize) -> Vec<Runnable> {
    let own = std::process::id() as i32;
    let mut found = Vec::new();
    let Ok(processes) = std::fs::read_dir("/proc") else { return found };
    for process in processes.flatten() {
        let Some(pid) = process.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(process.path().join("task")) else { continue };
        for task in tasks.flatten() {
            let Some((comm, state, nice, processor, policy, cpu_ticks)) =
                names::read_stat(task.path().join("stat")).as_deref().and_then(parse_task_stat)
            else {
                continue;
            };
            if state == 'R' && processor == cpu {
                found.push(Runnable { pid, comm, nice, policy, cpu_ticks });
            }
        }
    }
    let realtime = |r: &Runnable| matches!(r.policy, 1 | 2);
    found.sort_by_key(|r| (!realtime(r), r.nice, std::cmp::Reverse(r.cpu_ticks)));
    found.truncate(most);
    found
}

/// The CPU a thread of ours last ran on, and the kernel function it sleeps in.
fn cpu_and_wchan(tid: i32) -> (Option<u32>, Option<String>) {
    let stat = names::read_stat(format!("/proc/self/task/{tid}/stat"));
    let cpu = stat.as_deref().and_then(parse_task_stat).map(|(_, _, _, cpu, _, _)| cpu);
    let wchan = std::fs::read_to_string(format!("/proc/self/task/{tid}/wchan"))
        .ok()
        .filter(|w| !w.is_empty() && w != "0");
    (cpu, wchan)
}

/// What the main thread did over a stage that has lasted `elapsed` (or, while it waited on another
/// thread of ours that waited for a CPU, what that one did).
pub struct Observed {
    pub elapsed: Duration,
    /// the other thread's name, when the line is of another thread
    pub thread: Option<String>,
    /// the schedstat change over the stage (None where the kernel keeps none)
    pub sched: Option<SchedStat>,
    /// the CPU it last ran on
    pub cpu: Option<u32>,
    /// the tasks runnable there (asked only when it waited for a CPU)
    pub runnable: Vec<Runnable>,
    /// where in the kernel it sleeps
    pub wchan: Option<String>,
}

/// The line for a stage (`what`, "loading the BPF programs") that has lasted long: what it waits for.
pub fn line(what: &str, seen: &Observed) -> String {
    let s = |ns: u64| ns as f64 / 1e9;
    let elapsed = seen.elapsed.as_secs_f64();
    let head = format!("still {what} after {elapsed:.1} s");
    let Some(sched) = seen.sched else {
        return format!("{head} (this kernel keeps no schedstat to say why)");
    };
    let share = |ns: u64| s(ns) / elapsed.max(1e-9);
    let whose = match &seen.thread {
        Some(name) => format!("its {} thread is ", names::escape_name(name.as_bytes())),
        None => String::new(),
    };
    if share(sched.waited_ns) >= 0.5 {
        let on = seen.cpu.map(|c| format!(" {c}")).unwrap_or_default();
        let holders: Vec<String> = seen
            .runnable
            .iter()
            .map(|r| {
                let weight = match r.policy {
                    1 => "SCHED_FIFO".to_string(),
                    2 => "SCHED_RR".to_string(),
                    _ => format!("nice {}", r.nice),
                };
                format!("pid {} ({}, {weight})", r.pid, names::escape_name(r.comm.as_bytes()))
            })
            .collect();
        let by = if holders.is_empty() {
            String::new()
        } else {
            format!(", taken by {}", holders.join(" and "))
        };
        return format!(
            "{head}: {whose}waiting for CPU{on}{by} (runnable but not running {:.1} s of it, ran {:.2} s)",
            s(sched.waited_ns),
            s(sched.ran_ns)
        );
    }
    if share(sched.ran_ns) >= 0.5 {
        return format!("{head}: working (it ran {:.1} s of it)", s(sched.ran_ns));
    }
    let inside = seen.wchan.as_deref().map(|w| format!(" in the kernel ({w})")).unwrap_or_default();
    format!(
        "{head}: blocked{inside} (ran {:.2} s, waited for a CPU {:.2} s of it)",
        s(sched.ran_ns),
        s(sched.waited_ns)
    )
}

struct Stage {
    what: &'static str,
    since: Instant,
    /// every thread of ours when it began
    sched: Vec<(i32, SchedStat)>,
}

#[derive(Default)]
struct State {
    stage: Option<Stage>,
    /// a line has been said this recording
    said: bool,
    /// the watch thread is to end
    stop: bool,
}

/// Where the line goes: stderr, or a test's buffer.
type Say = Box<dyn Fn(&str) + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    say_after: Duration,
    say: Say,
    /// the thread that does the stages
    tid: i32,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The stages of a recording as the main thread goes through them.
pub struct StageWatch {
    /// None under -q: nothing is said
    shared: Option<Arc<Shared>>,
    thread: Option<JoinHandle<()>>,
}

impl StageWatch {
    /// Watches the calling thread's stages; says nothing when `quiet`.
    pub fn start(quiet: bool) -> Self {
        let say: Say = Box::new(|line| eprintln!("launchgap-record: {line}"));
        Self::saying(quiet, SAY_AFTER, say)
    }

    fn saying(quiet: bool, say_after: Duration, say: Say) -> Self {
        if quiet {
            return StageWatch { shared: None, thread: None };
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            say_after,
            say,
            tid,
        });
        let mut watch = StageWatch { shared: Some(shared), thread: None };
        watch.spawn();
        watch
    }

    fn spawn(&mut self) {
        let Some(shared) = self.shared.clone() else { return };
        // without a thread the stages go on unwatched
        self.thread = std::thread::Builder::new().spawn(move || watch(&shared)).ok();
    }

    /// The main thread enters a stage.
    pub fn enter(&self, what: &'static str) {
        if let Some(shared) = &self.shared {
            let sched = SchedStat::of_our_threads();
            let mut state = shared.lock();
            // a watch thread timing a stage wakes when that one is due and finds this one: woken only
            // when it waits for no stage, the set-up costs it no wakeup a stage
            let waits_for_none = state.stage.is_none();
            state.stage = Some(Stage { what, since: Instant::now(), sched });
            if waits_for_none {
                shared.changed.notify_one();
            }
        }
    }

    /// Between stages: the recording runs, nothing is timed.
    pub fn idle(&self) {
        if let Some(shared) = &self.shared {
            shared.lock().stage = None;
            shared.changed.notify_one();
        }
    }

    /// Runs `f` with no watch thread alive, unwatched: a fork whose child does
    /// more than async-signal-safe calls (the CUPTI check, which times its
    /// child itself) must find no other thread that could hold a lock.
    pub fn paused<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.idle();
        self.end_thread();
        let result = f();
        if let Some(shared) = &self.shared {
            shared.lock().stop = false;
        }
        self.spawn();
        result
    }

    fn end_thread(&mut self) {
        if let Some(shared) = &self.shared {
            shared.lock().stop = true;
            shared.changed.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for StageWatch {
    fn drop(&mut self) {
        self.end_thread();
    }
}

/// The watch thread: sleeps until a stage has lasted `say_after`, then says it, once.
fn watch(shared: &Shared) {
    loop {
        let (what, since, sched_then) = {
            let mut state = shared.lock();
            loop {
                if state.stop {
                    return;
                }
                let due = match &state.stage {
                    Some(stage) if !state.said => stage.since + shared.say_after,
                    _ => {
                        state = shared.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                        continue;
                    }
                };
                let now = Instant::now();
                if now >= due {
                    break;
                }
                state = shared
                    .changed
                    .wait_timeout(state, due - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            state.said = true;
            let stage = state.stage.as_ref().expect("a stage is due");
            (stage.what, stage.since, stage.sched.clone())
        };
        // read and said outside the lock: the main thread never waits on the watch
        let elapsed = since.elapsed();
        let half = elapsed.as_nanos() as u64 / 2;
        let over_stage = |tid: i32| {
            let then = sched_then.iter().find(|(t, _)| *t == tid).map(|(_, s)| *s);
            then.zip(SchedStat::of_thread(tid)).map(|(then, now)| now.since(then))
        };
        let main = over_stage(shared.tid);
        // a main thread neither running nor waiting for a CPU waits on something: at the ending, the writer
        // thread; when another thread of ours waited for a CPU, the line is of it
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        let other = main
            .filter(|m| m.ran_ns < half && m.waited_ns < half)
            .and_then(|_| {
                sched_then
                    .iter()
                    .filter(|(tid, _)| *tid != shared.tid && *tid != me)
                    .filter_map(|(tid, _)| over_stage(*tid).map(|s| (*tid, s)))
                    .max_by_key(|(_, s)| s.waited_ns)
            })
            .filter(|(_, s)| s.waited_ns >= half);
        let (subject, sched, thread) = match other {
            Some((tid, s)) => {
                (tid, Some(s), names::read_comm(format!("/proc/self/task/{tid}/comm")))
            }
            None => (shared.tid, main, None),
        };
        let (cpu, wchan) = cpu_and_wchan(subject);
        let runnable = match cpu {
            Some(cpu) if sched.is_some_and(|s| s.waited_ns >= half) => runnable_on(cpu, 2),
            _ => Vec::new(),
        };
        let seen = Observed { elapsed, thread, sched, cpu, runnable, wchan };
        (shared.say)(&line(what, &seen));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hog(pid: i32, comm: &str, nice: i64, policy: u32) -> Runnable {
        Runnable { pid, comm: comm.to_string(), nice, policy, cpu_ticks: 0 }
    }

    #[test]
    fn a_wait_for_a_cpu_names_the_cpu_and_who_runs_there() {
        let mut seen = Observed {
            elapsed: Duration::from_millis(2_040),
            thread: None,
            sched: Some(SchedStat { ran_ns: 30_000_000, waited_ns: 1_970_000_000 }),
            cpu: Some(1),
            runnable: vec![hog(4242, "bash", -19, 0), hog(77, "irq/rt", 0, 1)],
            wchan: None,
        };
        assert_eq!(
            line("loading the BPF programs", &seen),
            "still loading the BPF programs after 2.0 s: waiting for CPU 1, taken by pid 4242 (bash, nice -19) and \
             pid 77 (irq/rt, SCHED_FIFO) (runnable but not running 2.0 s of it, ran 0.03 s)"
        );
        // the main thread waiting on the writer, which waits for the CPU
        seen.thread = Some("trace-writer".into());
        seen.runnable.truncate(1);
        assert_eq!(
            line("writing the trace", &seen),
            "still writing the trace after 2.0 s: its trace-writer thread is waiting for CPU 1, taken by pid 4242 \
             (bash, nice -19) (runnable but not running 2.0 s of it, ran 0.03 s)"
        );
    }

    #[test]
    fn work_and_a_block_are_told_apart_from_a_wait_for_a_cpu() {
        let mut seen = Observed {
            elapsed: Duration::from_secs(3),
            thread: None,
            sched: Some(SchedStat { ran_ns: 2_500_000_000, waited_ns: 100_000_000 }),
            cpu: Some(0),
            runnable: Vec::new(),
            wchan: Some("anon_pipe_read".into()),
        };
        assert_eq!(
            line("writing the trace", &seen),
            "still writing the trace after 3.0 s: working (it ran 2.5 s of it)"
        );
        seen.sched = Some(SchedStat { ran_ns: 10_000_000, waited_ns: 20_000_000 });
        assert_eq!(
            line("starting the command", &seen),
            "still starting the command after 3.0 s: blocked in the kernel (anon_pipe_read) (ran 0.01 s, waited for a CPU 0.02 s of it)"
        );
        seen.sched = None;
        assert_eq!(
            line("starting the command", &seen),
            "still starting the command after 3.0 s (this kernel keeps no schedstat to say why)"
        );
    }

    #[test]
    fn stat_lines_are_read_past_a_name_with_spaces_and_parentheses() {
        // /proc/<pid>/stat as Linux 6.x writes it (fs/proc/array.c do_task_stat), the name `a) b (c`
        let stat = "4242 (a) b (c) R 1 4242 4242 0 -1 4194304 95 0 0 0 1500 20 0 0 1 -19 1 0 9000 2584576 \
                    200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert_eq!(parse_task_stat(stat), Some(("a) b (c".to_string(), 'R', -19, 1, 0, 1520)));
        assert_eq!(
            SchedStat::parse("190307 3177204 2\n"),
            Some(SchedStat { ran_ns: 190_307, waited_ns: 3_177_204 })
        );
        assert_eq!(SchedStat::parse("x"), None);
    }

    /// The lines a watch said, and a way to wait for them.
    type Said = Arc<(Mutex<Vec<String>>, Condvar)>;

    /// A watch saying into a buffer.
    fn watch_into(quiet: bool, say_after: Duration) -> (StageWatch, Said) {
        let said = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let into = Arc::clone(&said);
        let say: Say = Box::new(move |line| {
            into.0.lock().unwrap().push(line.to_string());
            into.1.notify_all();
        });
        (StageWatch::saying(quiet, say_after, say), said)
    }

    fn spin(how_long: Duration) {
        let start = Instant::now();
        while start.elapsed() < how_long {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_long_stage_is_said_once_and_a_short_one_never() {
        let (mut watch, said) = watch_into(false, Duration::from_millis(200));
        watch.enter("a short stage");
        spin(Duration::from_millis(20));
        watch.enter("a long stage");
        // until the line comes (the watch thread may be slow to run on a loaded machine)
        let lines = said
            .1
            .wait_timeout_while(said.0.lock().unwrap(), Duration::from_secs(60), |l| l.is_empty())
            .unwrap()
            .0
            .clone();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("still a long stage after "), "{lines:?}");
        // a later long stage, and one held past the first's line: nothing more is said
        watch.enter("another long stage");
        spin(Duration::from_millis(500));
        watch.idle();
        watch.paused(|| spin(Duration::from_millis(300)));
        watch.enter("a stage after the pause");
        spin(Duration::from_millis(500));
        drop(watch);
        assert_eq!(*said.0.lock().unwrap(), lines);
    }

    #[test]
    fn a_quiet_watch_says_nothing() {
        let (mut watch, said) = watch_into(true, Duration::from_millis(1));
        watch.enter("a long stage");
        spin(Duration::from_millis(100));
        watch.paused(|| ());
        watch.enter("another");
        spin(Duration::from_millis(100));
        drop(watch);
        assert!(said.0.lock().unwrap().is_empty());
    }

    #[test]
    fn the_first_line_is_said_after_a_pause_too() {
        // the thread ended for a fork and started again still says a stage after it
        let (mut watch, said) = watch_into(false, Duration::from_millis(100));
        watch.paused(|| ());
        watch.enter("after the pause");
        let lines = said
            .1
            .wait_timeout_while(said.0.lock().unwrap(), Duration::from_secs(60), |l| l.is_empty())
            .unwrap()
            .0
            .clone();
        assert!(
            lines.len() == 1 && lines[0].starts_with("still after the pause after "),
            "{lines:?}"
        );
    }

    #[test]
    fn schedstat_counts_what_the_thread_ran() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let cpu_clock = || launchgap_record::metadata::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        let (sched_then, clock_then) =
            (SchedStat::of_thread(tid).expect("this kernel keeps schedstat"), cpu_clock());
        while cpu_clock() - clock_then < 50_000_000 {
            std::hint::spin_loop();
        }
        let (sched_now, clock_now) = (SchedStat::of_thread(tid).unwrap(), cpu_clock());
        // both are the thread's sum_exec_runtime, read a moment apart; schedstat's may lag by the slice
        // still running (a tick or so)
        let (ran, clocked) = (sched_now.ran_ns - sched_then.ran_ns, clock_now - clock_then);
        assert!(
            ran.abs_diff(clocked) < 20_000_000,
            "schedstat {ran} ns, the thread's CPU clock {clocked} ns"
        );
    }

    #[test]
    fn a_busy_process_on_a_cpu_is_found_runnable_there() {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() } as u32;
        // SAFETY: the child only pins itself and spins (no allocation, no locks) until it is killed.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu as usize, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                loop {
                    std::hint::spin_loop();
                }
            }
        }
        let start = Instant::now();
        let mut found = Vec::new();
        // until it has been placed on the CPU: a busy loop is runnable from then on
        while start.elapsed() < Duration::from_secs(30) {
            found = runnable_on(cpu, usize::MAX);
            if found.iter().any(|r| r.pid == pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        let child =
            found.iter().find(|r| r.pid == pid).expect("the spinning child is runnable on its CPU");
        assert_eq!(child.comm, names::read_comm("/proc/thread-self/comm").unwrap());
        assert!(found.iter().all(|r| r.pid != std::process::id() as i32));
    }
}
