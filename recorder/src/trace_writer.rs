//! The trace file: one Arrow IPC stream, one row per event, in the layout of
//! docs/trace-format.md. Columns that do not apply to an event are null.
//! A batch is written at least once a second, so a killed recorder leaves a
//! file readable up to its last batch; a write that fails (a full disk) is
//! cut back to the end of the last complete batch, so the same holds then.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::builder::{BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};

use crate::output::StopAtFirstError;

pub const FORMAT_NAME: &str = "launchgap-trace";
pub const FORMAT_VERSION: u32 = 1;
pub const METADATA_KEY: &str = "launchgap";

/// One event as a row; `None` becomes null.
#[derive(Default)]
pub struct Row<'a> {
    pub ts_ns: u64,
    pub event: &'static str,
    pub cpu: Option<u32>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub comm: Option<&'a str>,
    pub duration_ns: Option<u64>,
    pub api: Option<&'static str>,
    pub runtime_api: Option<&'static str>,
    pub func: Option<u64>,
    pub stream: Option<u64>,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_mem: Option<u32>,
    pub bytes: Option<u64>,
    pub prev_state: Option<i64>,
    pub preempt: Option<bool>,
    pub voluntary: Option<bool>,
    pub nvcsw: Option<u64>,
    pub nivcsw: Option<u64>,
    pub prio: Option<i32>,
    pub next_pid: Option<u32>,
    pub next_tid: Option<u32>,
    pub next_comm: Option<&'a str>,
    pub next_prio: Option<i32>,
    pub target_cpu: Option<u32>,
    pub waker_tid: Option<u32>,
    pub orig_cpu: Option<u32>,
    pub dest_cpu: Option<u32>,
    pub child_pid: Option<u32>,
    pub child_tid: Option<u32>,
    pub filename: Option<&'a str>,
    pub old_comm: Option<&'a str>,
    pub exit_code: Option<i32>,
    pub irq: Option<i32>,
    pub irq_name: Option<&'a str>,
    pub lost_event: Option<&'static str>,
    pub lost_count: Option<u64>,
    pub since_ns: Option<u64>,
    pub detail: Option<&'a str>,
    pub return_code: Option<i32>,
}

/// Declares the columns once: the schema, the builders and how a Row fills them.
macro_rules! columns {
    ($($name:ident: $builder:ident, $dtype:expr, $nullable:expr;)*) => {
        struct Builders { $($name: $builder,)* }

        impl Builders {
            fn new() -> Self { Self { $($name: $builder::new(),)* } }

            fn finish(&mut self) -> Vec<ArrayRef> {
                vec![$(Arc::new(self.$name.finish()) as ArrayRef,)*]
            }
        }

        pub fn schema_fields() -> Vec<Field> {
            vec![$(Field::new(stringify!($name), $dtype, $nullable),)*]
        }
    };
}

columns! {
    ts_ns: UInt64Builder, DataType::UInt64, false;
    event: StringBuilder, DataType::Utf8, false;
    cpu: UInt32Builder, DataType::UInt32, true;
    pid: UInt32Builder, DataType::UInt32, true;
    tid: UInt32Builder, DataType::UInt32, true;
    comm: StringBuilder, DataType::Utf8, true;
    duration_ns: UInt64Builder, DataType::UInt64, true;
    api: StringBuilder, DataType::Utf8, true;
    runtime_api: StringBuilder, DataType::Utf8, true;
    func: UInt64Builder, DataType::UInt64, true;
    stream: UInt64Builder, DataType::UInt64, true;
    grid_x: UInt32Builder, DataType::UInt32, true;
    grid_y: UInt32Builder, DataType::UInt32, true;
    grid_z: UInt32Builder, DataType::UInt32, true;
    block_x: UInt32Builder, DataType::UInt32, true;
    block_y: UInt32Builder, DataType::UInt32, true;
    block_z: UInt32Builder, DataType::UInt32, true;
    shared_mem: UInt32Builder, DataType::UInt32, true;
    bytes: UInt64Builder, DataType::UInt64, true;
    prev_state: Int64Builder, DataType::Int64, true;
    preempt: BooleanBuilder, DataType::Boolean, true;
    voluntary: BooleanBuilder, DataType::Boolean, true;
    nvcsw: UInt64Builder, DataType::UInt64, true;
    nivcsw: UInt64Builder, DataType::UInt64, true;
    prio: Int32Builder, DataType::Int32, true;
    next_pid: UInt32Builder, DataType::UInt32, true;
    next_tid: UInt32Builder, DataType::UInt32, true;
    next_comm: StringBuilder, DataType::Utf8, true;
    next_prio: Int32Builder, DataType::Int32, true;
    target_cpu: UInt32Builder, DataType::UInt32, true;
    waker_tid: UInt32Builder, DataType::UInt32, true;
    orig_cpu: UInt32Builder, DataType::UInt32, true;
    dest_cpu: UInt32Builder, DataType::UInt32, true;
    child_pid: UInt32Builder, DataType::UInt32, true;
    child_tid: UInt32Builder, DataType::UInt32, true;
    filename: StringBuilder, DataType::Utf8, true;
    old_comm: StringBuilder, DataType::Utf8, true;
    exit_code: Int32Builder, DataType::Int32, true;
    irq: Int32Builder, DataType::Int32, true;
    irq_name: StringBuilder, DataType::Utf8, true;
    lost_event: StringBuilder, DataType::Utf8, true;
    lost_count: UInt64Builder, DataType::UInt64, true;
    since_ns: UInt64Builder, DataType::UInt64, true;
    detail: StringBuilder, DataType::Utf8, true;
    return_code: Int32Builder, DataType::Int32, true;
}

pub struct TraceWriter {
    schema: Arc<Schema>,
    builders: Builders,
    rows_in_batch: usize,
    writer: StreamWriter<BufWriter<StopAtFirstError>>,
    pub rows_written: u64,
    pub rows_by_event: HashMap<&'static str, u64>,
}

impl TraceWriter {
    pub fn create(file: File, metadata_json: String) -> Result<Self> {
        let metadata = HashMap::from([
            (METADATA_KEY.to_string(), metadata_json),
            ("format".to_string(), format!("{FORMAT_NAME}/{FORMAT_VERSION}")),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(schema_fields(), metadata));
        let file = StopAtFirstError::new(file).context("opening the trace file")?;
        let mut writer = StreamWriter::try_new(BufWriter::with_capacity(1 << 20, file), &schema)
            .context("starting the Arrow stream")?;
        // the header on disk now: a disk with no room fails here, before anything is traced
        writer.flush().context("writing the trace's header")?;
        writer.get_mut().get_mut().write_complete().context("writing the trace's header")?;
        Ok(Self {
            schema,
            builders: Builders::new(),
            rows_in_batch: 0,
            writer,
            rows_written: 0,
            rows_by_event: HashMap::new(),
        })
    }

    pub fn rows_pending(&self) -> usize {
        self.rows_in_batch
    }

    pub fn push(&mut self, row: &Row) {
        let b = &mut self.builders;
        b.ts_ns.append_value(row.ts_ns);
        b.event.append_value(row.event);
        b.cpu.append_option(row.cpu);
        b.pid.append_option(row.pid);
        b.tid.append_option(row.tid);
        b.comm.append_option(row.comm);
        b.duration_ns.append_option(row.duration_ns);
        b.api.append_option(row.api);
        b.runtime_api.append_option(row.runtime_api);
        b.func.append_option(row.func);
        b.stream.append_option(row.stream);
        b.grid_x.append_option(row.grid.map(|g| g[0]));
        b.grid_y.append_option(row.grid.map(|g| g[1]));
        b.grid_z.append_option(row.grid.map(|g| g[2]));
        b.block_x.append_option(row.block.map(|g| g[0]));
        b.block_y.append_option(row.block.map(|g| g[1]));
        b.block_z.append_option(row.block.map(|g| g[2]));
        b.shared_mem.append_option(row.shared_mem);
        b.bytes.append_option(row.bytes);
        b.prev_state.append_option(row.prev_state);
        b.preempt.append_option(row.preempt);
        b.voluntary.append_option(row.voluntary);
        b.nvcsw.append_option(row.nvcsw);
        b.nivcsw.append_option(row.nivcsw);
        b.prio.append_option(row.prio);
        b.next_pid.append_option(row.next_pid);
        b.next_tid.append_option(row.next_tid);
        b.next_comm.append_option(row.next_comm);
        b.next_prio.append_option(row.next_prio);
        b.target_cpu.append_option(row.target_cpu);
        b.waker_tid.append_option(row.waker_tid);
        b.orig_cpu.append_option(row.orig_cpu);
        b.dest_cpu.append_option(row.dest_cpu);
        b.child_pid.append_option(row.child_pid);
        b.child_tid.append_option(row.child_tid);
        b.filename.append_option(row.filename);
        b.old_comm.append_option(row.old_comm);
        b.exit_code.append_option(row.exit_code);
        b.irq.append_option(row.irq);
        b.irq_name.append_option(row.irq_name);
        b.lost_event.append_option(row.lost_event);
        b.lost_count.append_option(row.lost_count);
        b.since_ns.append_option(row.since_ns);
        b.detail.append_option(row.detail);
        b.return_code.append_option(row.return_code);
        self.rows_in_batch += 1;
        *self.rows_by_event.entry(row.event).or_default() += 1;
    }

    /// Writes the rows gathered so far as one batch and flushes it to the file.
    pub fn flush_batch(&mut self) -> Result<()> {
        if self.rows_in_batch == 0 {
            return Ok(());
        }
        let columns = self.builders.finish();
        let batch = RecordBatch::try_new(self.schema.clone(), columns).context("assembling a batch")?;
        let written = self.writer.write(&batch).and_then(|()| self.writer.flush());
        let file = self.writer.get_mut().get_mut();
        if let Err(e) = written {
            // keep the file readable: drop the part of this batch that made it to disk
            let _ = file.cut_to_last_complete();
            return Err(e).context("writing a batch");
        }
        file.write_complete().context("writing a batch")?;
        self.rows_written += self.rows_in_batch as u64;
        self.rows_in_batch = 0;
        Ok(())
    }

    /// Writes what is left and the end-of-stream marker.
    pub fn finish(mut self) -> Result<u64> {
        self.flush_batch()?;
        if let Err(e) = self.writer.finish() {
            let _ = self.writer.get_mut().get_mut().cut_to_last_complete();
            return Err(e).context("closing the Arrow stream");
        }
        Ok(self.rows_written)
    }
}
