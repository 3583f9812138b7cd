//! The `trace-writer` thread: what the drain sends (raw records, collector
//! frames, losses, the closing summary) decoded into rows, counted, and handed
//! to the format's `TraceSink`, so the ring-buffer drain never waits on the
//! disk. It flushes when the sink is full and at least once a segment's time.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde_json::json;

use crate::gpu_activity::accounting::GpuAccounting;
use crate::gpu_activity::channel::{Damage, FileFrames, FRAME_HEADER};
use crate::gpu_activity::frame_gate::FrameGate;
use crate::losses::Unrecorded;
use crate::records;
use crate::schema::{self, end_key, LostRow, Row, RECORD_NAMES, WRITER_THREAD_NAME};
use crate::trace_writer::TraceSink;

/// What the drain hands the writer thread.
pub enum ToWriter {
    /// Length-prefixed raw records, as drained.
    Records(Vec<u8>),
    /// Complete collector-channel frames (header and payload each), as read, file by file.
    CollectorFrames(Vec<FileFrames>),
    /// What the channel held that could not be read.
    ChannelDamage { now_ns: u64, damage: Vec<Damage> },
    /// New drops: (record type, cpu, count since the last sample), over [since, now].
    Lost { now_ns: u64, since_ns: u64, drops: Vec<(u32, usize, u64)> },
    /// Events lost before reaching the ring buffer, found at the stop, over [since, now].
    Unrecorded { now_ns: u64, since_ns: u64, losses: Vec<Unrecorded> },
    /// The cgroups there when tracing started (hierarchy, id, path), as of `now_ns`.
    Cgroups { now_ns: u64, cgroups: Vec<(&'static str, u64, String)> },
    /// The closing summary, which the writer completes with its rows and CPU time.
    End { now_ns: u64, summary: serde_json::Value },
}

pub struct WriterReport {
    pub rows: u64,
    pub rows_by_kind: BTreeMap<&'static str, u64>,
    pub undecodable: u64,
    /// processes whose CUPTI collector failed, and why (with --gpu-activity)
    pub gpu_failures: Vec<(u32, String)>,
    /// launches whose GPU work never arrived
    pub gpu_lost: u64,
    /// collector frames not believed (frame_gate.rs)
    pub frames_refused: u64,
}

/// The writer stopped on an error (a full disk): what it says, and how many
/// rows reached the disk before it, in complete segments or batches.
pub struct WriterFailure {
    pub error: anyhow::Error,
    pub rows_on_disk: u64,
}

/// The CPU time the calling thread has used.
pub fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

const FLUSH_EVERY: Duration = Duration::from_secs(schema::SEGMENT_SECONDS);

/// Counts rows by kind on their way to the writer (and, with GPU activity, launches
/// against the GPU work that arrived).
struct Counted<'a> {
    sink: &'a mut dyn TraceSink,
    by_kind: [u64; schema::Kind::ALL.len()],
    gpu: Option<GpuAccounting>,
    /// the sum of every lost row's count: end.json's lost_events
    lost: u64,
    /// with GPU activity: which collector frames are believed
    gate: Option<FrameGate>,
}

impl Counted<'_> {
    fn push(&mut self, row: &Row) {
        self.by_kind[row.kind() as usize] += 1;
        if let Row::Lost(lost) = row {
            // a count can be as large as a u64 holds: the sum stays at the top, never wraps
            self.lost = self.lost.saturating_add(lost.lost_count);
        }
        if let Some(gpu) = &mut self.gpu {
            gpu.observe(row);
        }
        if let Some(gate) = &mut self.gate {
            gate.observe(row);
        }
        self.sink.push(row);
    }

    /// The rows of each kind that has any (end.json's `rows`).
    fn rows_by_kind(&self) -> BTreeMap<&'static str, u64> {
        schema::Kind::ALL
            .iter()
            .filter(|k| self.by_kind[**k as usize] > 0)
            .map(|k| (k.name(), self.by_kind[*k as usize]))
            .collect()
    }
}

/// The writer's job: what it writes into, and whether it accounts for GPU activity.
pub struct WriterJob {
    pub sink: Box<dyn TraceSink>,
    /// with GPU activity: launches against GPU work, and the gate the collectors' frames pass
    pub gpu: Option<(GpuAccounting, FrameGate)>,
    /// when tracing started: losses found at the end happened since
    pub start_ns: u64,
}

/// The writer thread, running: the drain's end of its inbox, and the thread.
pub struct RunningWriter {
    to_writer: mpsc::Sender<ToWriter>,
    handle: std::thread::JoinHandle<Result<WriterReport, WriterFailure>>,
}

impl RunningWriter {
    pub fn start(job: WriterJob) -> std::io::Result<Self> {
        let (to_writer, inbox) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(WRITER_THREAD_NAME.into())
            .spawn(move || writer_thread(job, inbox))?;
        Ok(RunningWriter { to_writer, handle })
    }

    /// Hands the writer a message; false once it has stopped (it could not
    /// write the file), its inbox dropped: its error comes from `join`.
    pub fn send(&self, message: ToWriter) -> bool {
        self.to_writer.send(message).is_ok()
    }

    /// Whether the writer has stopped (after `ToWriter::End`, or on an error).
    pub fn stopped(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the writer to end: its report, or why it stopped early.
    pub fn join(self) -> Result<Result<WriterReport, WriterFailure>> {
        self.handle.join().map_err(|_| anyhow!("the trace writer panicked"))
    }
}

pub fn writer_thread(
    job: WriterJob,
    inbox: mpsc::Receiver<ToWriter>,
) -> Result<WriterReport, WriterFailure> {
    let WriterJob { mut sink, gpu, start_ns } = job;
    let written = write_all(sink.as_mut(), gpu, start_ns, inbox);
    written.map_err(|error| WriterFailure { error, rows_on_disk: sink.rows_on_disk() })
}

fn write_all(
    sink: &mut dyn TraceSink,
    gpu: Option<(GpuAccounting, FrameGate)>,
    start_ns: u64,
    inbox: mpsc::Receiver<ToWriter>,
) -> Result<WriterReport> {
    let (gpu, gate) = gpu.unzip();
    let counted = Counted { sink, by_kind: [0; schema::Kind::ALL.len()], gpu, lost: 0, gate };
    let mut writer = Writer { counted, start_ns, undecodable: 0, last_flush: Instant::now() };
    loop {
        // the drain sends at every poll that found records; no timer of our own to wake us
        match inbox.recv() {
            Ok(ToWriter::Records(buffer)) => writer.records(&buffer)?,
            Ok(ToWriter::CollectorFrames(files)) => {
                for file in files {
                    writer.collector_frames(file.pid, &file.frames)?;
                }
            }
            Ok(ToWriter::Cgroups { now_ns, cgroups }) => writer.cgroups(now_ns, cgroups),
            Ok(ToWriter::ChannelDamage { now_ns, damage }) => {
                writer.channel_damage(now_ns, &damage)
            }
            Ok(ToWriter::Lost { now_ns, since_ns, drops }) => writer.drops(now_ns, since_ns, drops),
            Ok(ToWriter::Unrecorded { now_ns, since_ns, losses }) => {
                writer.unrecorded(now_ns, since_ns, &losses)
            }
            Ok(ToWriter::End { now_ns, summary }) => return writer.end(now_ns, summary),
            Err(mpsc::RecvError) => bail!("the recorder stopped without closing the trace"),
        }
        if writer.last_flush.elapsed() >= FLUSH_EVERY {
            writer.flush()?;
        }
    }
}

/// The writer thread's state between messages.
struct Writer<'a> {
    counted: Counted<'a>,
    start_ns: u64,
    /// records and frames this recorder could not decode (never expected)
    undecodable: u64,
    last_flush: Instant,
}

impl Writer<'_> {
    fn flush(&mut self) -> Result<()> {
        self.counted.sink.flush()?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Writes what is held now when the sink has all it should hold.
    fn flush_if_full(&mut self) -> Result<()> {
        if self.counted.sink.full() {
            self.flush()?;
        }
        Ok(())
    }

    fn cgroups(&mut self, now_ns: u64, cgroups: Vec<(&'static str, u64, String)>) {
        for (hierarchy, id, path) in cgroups {
            records::cgroup_row(now_ns, hierarchy, id, &path, &mut |row| self.counted.push(row));
        }
    }

    /// Length-prefixed raw records, each decoded into its rows.
    fn records(&mut self, buffer: &[u8]) -> Result<()> {
        let mut at = 0;
        while at + 4 <= buffer.len() {
            let len = u32::from_ne_bytes(buffer[at..at + 4].try_into().unwrap()) as usize;
            let data = &buffer[at + 4..at + 4 + len];
            if !records::decode(data, &mut |row| self.counted.push(row)) {
                self.undecodable += 1;
            }
            at += 4 + len;
            self.flush_if_full()?;
        }
        Ok(())
    }

    /// Collector frames from the file of process PID (a little-endian payload length, then
    /// the frame type), each one row if the gate believes it (frame_gate.rs).
    fn collector_frames(&mut self, pid: u32, frames: &[u8]) -> Result<()> {
        let mut at = 0;
        while at + FRAME_HEADER <= frames.len() {
            let payload = u32::from_le_bytes(frames[at..at + 4].try_into().unwrap()) as usize;
            let frame = u16::from_le_bytes([frames[at + 4], frames[at + 5]]);
            let body = &frames[at + FRAME_HEADER..at + FRAME_HEADER + payload];
            if let Some(row) =
                self.counted.gate.as_mut().and_then(|gate| gate.admit(pid, frame, body))
            {
                self.counted.push(&row);
            }
            at += FRAME_HEADER + payload;
            self.flush_if_full()?;
        }
        Ok(())
    }

    fn channel_damage(&mut self, now_ns: u64, damage: &[Damage]) {
        for d in damage {
            let detail =
                json!({"cause": "channel_unreadable", "pid": d.pid, "what": d.detail}).to_string();
            self.counted.push(&Row::Lost(LostRow {
                ts_ns: now_ns,
                cpu: None,
                lost_event: "gpu_activity",
                lost_count: 0,
                since_ns: self.start_ns,
                detail: Some(&detail),
            }));
        }
    }

    fn drops(&mut self, now_ns: u64, since_ns: u64, drops: Vec<(u32, usize, u64)>) {
        for (kind, cpu, count) in drops {
            self.counted.push(&Row::Lost(LostRow {
                ts_ns: now_ns,
                cpu: Some(cpu as u32),
                lost_event: RECORD_NAMES.get(kind as usize).copied().unwrap_or("unknown"),
                lost_count: count,
                since_ns,
                detail: None,
            }));
        }
    }

    fn unrecorded(&mut self, now_ns: u64, since_ns: u64, losses: &[Unrecorded]) {
        for loss in losses {
            self.counted.push(&Row::Lost(LostRow {
                ts_ns: now_ns,
                cpu: loss.cpu,
                lost_event: loss.event,
                lost_count: loss.count,
                since_ns,
                detail: Some(&loss.detail),
            }));
        }
    }

    /// The closing message: GPU work that never arrived as lost rows, the
    /// summary completed with the rows and the writer's CPU time, then the
    /// format's closing write.
    fn end(mut self, now_ns: u64, mut summary: serde_json::Value) -> Result<WriterReport> {
        let mut gpu_failures = Vec::new();
        let mut gpu_lost = 0;
        let mut frames_refused = 0;
        if let Some(gpu) = self.counted.gpu.take() {
            for loss in gpu.losses() {
                self.counted.push(&Row::Lost(LostRow {
                    ts_ns: now_ns,
                    cpu: None,
                    lost_event: "gpu_kernel",
                    lost_count: loss.count,
                    since_ns: self.start_ns,
                    detail: Some(&loss.detail),
                }));
            }
            summary[end_key::GPU_ACTIVITY] = gpu.summary();
            gpu_failures = gpu.failures();
            gpu_lost = gpu.losses().iter().fold(0u64, |sum, l| sum.saturating_add(l.count));
        }
        if let Some(gate) = self.counted.gate.take() {
            for (count, detail) in gate.refusals() {
                self.counted.push(&Row::Lost(LostRow {
                    ts_ns: now_ns,
                    cpu: None,
                    lost_event: "gpu_activity",
                    lost_count: count,
                    since_ns: self.start_ns,
                    detail: Some(&detail),
                }));
            }
            frames_refused = gate.refused();
        }
        summary[end_key::LOST_EVENTS] = json!(self.counted.lost);
        let rows_by_kind = self.counted.rows_by_kind();
        let rows = rows_by_kind.values().sum();
        summary[end_key::ROWS] = json!(rows_by_kind);
        // the last encoding is the writer's too: measured after it (format 1's closing row
        // is written with it, so there the time is taken just before)
        self.counted.sink.flush()?;
        summary[end_key::CPU_NS]["writer"] = json!(thread_cpu_ns());
        self.counted.sink.finish(now_ns, &summary)?;
        Ok(WriterReport {
            rows,
            rows_by_kind,
            undecodable: self.undecodable,
            gpu_failures,
            gpu_lost,
            frames_refused,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irq_audit::Unseen;
    use crate::losses::unrecorded;
    use crate::output;
    use crate::prog_stats::ProgramMisses;
    use crate::trace_writer::format1::Format1Writer;
    use anyhow::Context;

    /// A sink on a disk that fills up after `room` flushes.
    struct DiskFillsAfter {
        room: u32,
        held: u64,
        on_disk: u64,
    }

    impl TraceSink for DiskFillsAfter {
        fn push(&mut self, _row: &Row) {
            self.held += 1;
        }
        fn full(&self) -> bool {
            false
        }
        fn flush(&mut self) -> Result<()> {
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
                    .context("writing a segment");
            }
            self.room -= 1;
            self.on_disk += std::mem::take(&mut self.held);
            Ok(())
        }
        fn finish(&mut self, _end_ns: u64, _summary: &serde_json::Value) -> Result<()> {
            self.flush()
        }
        fn rows_on_disk(&self) -> u64 {
            self.on_disk
        }
    }

    fn write_two_lost_rows(room: u32) -> Result<WriterReport, WriterFailure> {
        let (to_writer, inbox) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            writer_thread(
                WriterJob {
                    sink: Box::new(DiskFillsAfter { room, held: 0, on_disk: 0 }),
                    gpu: None,
                    start_ns: 0,
                },
                inbox,
            )
        });
        let drops = vec![(0, 0, 5), (1, 1, 7)];
        to_writer.send(ToWriter::Lost { now_ns: 20, since_ns: 10, drops }).unwrap();
        to_writer
            .send(ToWriter::End { now_ns: 30, summary: json!({"cpu_ns": {"drain": 1}}) })
            .unwrap();
        handle.join().unwrap()
    }

    #[test]
    fn a_writer_that_fails_says_how_many_rows_reached_the_disk() {
        let failure = write_two_lost_rows(0).err().unwrap();
        assert_eq!(failure.rows_on_disk, 0);
        let reason = output::write_failure(&failure.error, std::path::Path::new("run.lg")).unwrap();
        assert_eq!(reason.to_string(), "No space left on device (run.lg)");
        // the last flush made it, the closing one did not
        let failure = write_two_lost_rows(1).err().unwrap();
        assert_eq!(failure.rows_on_disk, 2);
        assert_eq!(write_two_lost_rows(2).ok().unwrap().rows, 2);
    }

    /// The rows as docs/trace-format.md describes them, read back with arrow's own reader (format 1).
    #[test]
    fn unrecorded_losses_become_lost_rows_with_their_cause() {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{UInt32Type, UInt64Type};

        let path =
            std::env::temp_dir().join(format!("launchgap-lost-rows-{}.lg", std::process::id()));
        let writer =
            Format1Writer::create(std::fs::File::create(&path).unwrap(), "{}".into()).unwrap();
        let (to_writer, inbox) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            writer_thread(WriterJob { sink: Box::new(writer), gpu: None, start_ns: 0 }, inbox)
        });
        let skipped =
            [ProgramMisses { program: "handle_sched_waking".into(), event: "wakeup", misses: 3 }];
        let unseen = [
            Unseen { cpu: 1, event: "hardirq", counter: "/proc/interrupts 36".into(), count: 30 },
            Unseen { cpu: 1, event: "softirq", counter: "/proc/softirqs BLOCK".into(), count: 30 },
        ];
        let losses = unrecorded(&skipped, &unseen);
        to_writer.send(ToWriter::Unrecorded { now_ns: 20, since_ns: 10, losses }).unwrap();
        to_writer
            .send(ToWriter::End { now_ns: 30, summary: json!({"cpu_ns": {"drain": 1}}) })
            .unwrap();
        let report = handle.join().unwrap().ok().unwrap();
        assert_eq!((report.rows, report.rows_by_kind.get("lost")), (3, Some(&3)));

        let reader =
            arrow_ipc::reader::StreamReader::try_new(std::fs::File::open(&path).unwrap(), None)
                .unwrap();
        let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
        std::fs::remove_file(&path).unwrap();
        let batch = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        let column = |name: &str| batch.column_by_name(name).unwrap().clone();
        let events: Vec<_> =
            column("event").as_string::<i32>().iter().map(|v| v.unwrap().to_string()).collect();
        assert_eq!(events, ["lost", "lost", "lost", "trace_end"]);
        let cpus: Vec<_> = column("cpu").as_primitive::<UInt32Type>().iter().take(3).collect();
        assert_eq!(cpus, [None, Some(1), Some(1)]);
        let kinds: Vec<_> = column("lost_event")
            .as_string::<i32>()
            .iter()
            .take(3)
            .map(|v| v.unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["wakeup", "hardirq", "softirq"]);
        let counts: Vec<_> = column("lost_count")
            .as_primitive::<UInt64Type>()
            .iter()
            .take(3)
            .map(Option::unwrap)
            .collect();
        assert_eq!(counts, [3, 30, 30]);
        let since: Vec<_> = column("since_ns")
            .as_primitive::<UInt64Type>()
            .iter()
            .take(3)
            .map(Option::unwrap)
            .collect();
        assert_eq!(since, [10, 10, 10]);
        let details: Vec<serde_json::Value> = column("detail")
            .as_string::<i32>()
            .iter()
            .map(|v| serde_json::from_str(v.unwrap()).unwrap())
            .collect();
        assert_eq!(
            details[0],
            json!({"cause": "recursion_misses", "program": "handle_sched_waking"})
        );
        assert_eq!(
            details[1],
            json!({"cause": "not_seen_by_probe", "counter": "/proc/interrupts 36"})
        );
        // the closing row's summary: the writer added its rows and its own CPU time
        assert_eq!(details[3]["rows"], json!({"lost": 3}));
        assert_eq!(details[3]["cpu_ns"]["drain"], json!(1));
        assert!(details[3]["cpu_ns"]["writer"].as_u64().unwrap() > 0);
    }
}
