//! Format 1 (legacy, `--format 1`): one Arrow IPC stream, one row per event,
//! every kind in one wide table whose columns a kind lacks are null
//! (docs/trace-format.md, "Format 1"). A batch is written at least once a
//! second, so a killed recorder leaves a file readable up to its last batch;
//! a write that fails (a full disk) is cut back to the end of the last
//! complete batch, so the same holds then.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::Schema;

use super::TraceSink;
use crate::output::StopAtFirstError;
use crate::schema::{format1_fields, Row, WideBuilders, FORMAT_NAME};

pub const VERSION: u32 = 1;
/// Format 1's batches: a batch is also closed at this many rows.
const ROWS_PER_BATCH: usize = 65_536;
pub const METADATA_KEY: &str = "launchgap";
/// An Arrow IPC message starts with this continuation marker (Arrow >= 0.15).
const CONTINUATION: [u8; 4] = [0xff; 4];
/// What the schema message may weigh: it holds the metadata (host files included), a few MB at most.
const MAX_SCHEMA_MESSAGE: u32 = 64 << 20;

/// Whether PATH is a launchgap trace in format 1: a regular file that starts
/// with an Arrow IPC stream's schema message whose metadata names launchgap
/// (as `launchgap` reads it). Reads that message only; never blocks on a FIFO.
pub fn is_format1_trace(path: &Path) -> bool {
    let flags = libc::O_NONBLOCK | libc::O_NOFOLLOW;
    let Ok(mut file) = OpenOptions::new().read(true).custom_flags(flags).open(path) else {
        return false;
    };
    let Ok(meta) = file.metadata() else { return false };
    let mut head = [0u8; 8];
    if !meta.is_file() || file.read_exact(&mut head).is_err() || head[..4] != CONTINUATION {
        return false;
    }
    let declared = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if declared == 0 || declared > MAX_SCHEMA_MESSAGE || 8 + u64::from(declared) > meta.len() {
        return false;
    }
    let mut message = vec![0u8; declared as usize];
    if file.read_exact(&mut message).is_err() {
        return false;
    }
    let Ok(schema) = arrow_ipc::convert::try_schema_from_flatbuffer_bytes(&message) else {
        return false;
    };
    let metadata = schema.metadata();
    let named = metadata.get("format").is_some_and(|f| f.split('/').next() == Some(FORMAT_NAME));
    named || metadata.contains_key(METADATA_KEY)
}

pub struct Format1Writer {
    schema: Arc<Schema>,
    builders: WideBuilders,
    writer: StreamWriter<BufWriter<StopAtFirstError>>,
    /// rows in batches written completely
    rows_on_disk: u64,
}

impl Format1Writer {
    pub fn create(file: File, metadata_json: String) -> Result<Self> {
        let metadata = HashMap::from([
            (METADATA_KEY.to_string(), metadata_json),
            ("format".to_string(), format!("{FORMAT_NAME}/{VERSION}")),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(format1_fields(), metadata));
        let file = StopAtFirstError::new(file).context("opening the trace file")?;
        let mut writer = StreamWriter::try_new(BufWriter::with_capacity(1 << 20, file), &schema)
            .context("starting the Arrow stream")?;
        // the header on disk now: a disk with no room fails here, before anything is traced
        writer.flush().context("writing the trace's header")?;
        writer.get_mut().get_mut().write_complete().context("writing the trace's header")?;
        Ok(Self { schema, builders: WideBuilders::new(), writer, rows_on_disk: 0 })
    }

    fn write_batch(&mut self) -> Result<()> {
        if self.builders.len() == 0 {
            return Ok(());
        }
        let columns = self.builders.finish();
        let batch =
            RecordBatch::try_new(self.schema.clone(), columns).context("assembling a batch")?;
        let written = self.writer.write(&batch).and_then(|()| self.writer.flush());
        let file = self.writer.get_mut().get_mut();
        if let Err(e) = written {
            // keep the file readable: drop the part of this batch that made it to disk
            let _ = file.cut_to_last_complete();
            return Err(e).context("writing a batch");
        }
        file.write_complete().context("writing a batch")?;
        self.rows_on_disk += batch.num_rows() as u64;
        Ok(())
    }
}

impl TraceSink for Format1Writer {
    fn push(&mut self, row: &Row) {
        self.builders.push(row);
    }

    fn full(&self) -> bool {
        self.builders.len() >= ROWS_PER_BATCH
    }

    fn flush(&mut self) -> Result<()> {
        self.write_batch()
    }

    /// The closing row, what is left, and the end-of-stream marker.
    fn finish(&mut self, end_ns: u64, summary: &serde_json::Value) -> Result<()> {
        self.builders.push_end(end_ns, &summary.to_string());
        self.write_batch()?;
        if let Err(e) = self.writer.finish() {
            let _ = self.writer.get_mut().get_mut().cut_to_last_complete();
            return Err(e).context("closing the Arrow stream");
        }
        Ok(())
    }

    fn rows_on_disk(&self) -> u64 {
        self.rows_on_disk
    }
}
