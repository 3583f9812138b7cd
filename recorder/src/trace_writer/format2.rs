//! Format 2: the trace is a directory (docs/trace-format.md). `meta.json`
//! holds the metadata, written before anything is traced; each event kind has
//! a subdirectory of Parquet segments (`launch/000001.parquet`, ...) holding
//! only that kind's columns; `end.json` holds the closing summary, written
//! when the recorder stops cleanly.
//!
//! Every flush (at least once a second, or when a kind has SEGMENT_ROWS rows)
//! closes one segment per kind that has rows: encoded in memory, written
//! under a hidden `.NNNNNN.parquet.partial` name, synced and renamed. A glob
//! never sees a partial segment, and a SIGKILL or power loss loses at most the
//! rows not yet flushed. A write that fails (a full disk) removes its partial
//! file: the trace keeps every complete segment.
//!
//! Encodings come from the schema: DELTA_BINARY_PACKED for timestamps and
//! growing counters, dictionaries for columns of few values, zstd over all of
//! it; each segment is sorted by time (rows arrive per CPU and per staged
//! launch batch, and deltas of a sorted timestamp column are small).

use std::ffi::OsStr;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

use super::TraceSink;
use crate::held_dir::HeldDir;
use crate::output::{WRITING_DIR_MODE, WRITING_FILE_MODE};
use crate::schema::{
    kind_fields, written_columns, ColumnEncoding, Kind, KindBuilders, Row, END_FILE, FORMAT_NAME,
    FORMAT_VERSION, META_FILE, PARTIAL_SUFFIX, SEGMENT_DIGITS, SEGMENT_ROWS, SEGMENT_SUFFIX,
};

/// zstd's fastest levels already find the repetition left after the encodings.
const ZSTD_LEVEL: i32 = 1;

pub struct Format2Writer {
    /// meta.json as written at the start: written again at the end with the clock's end reading
    metadata_json: String,
    /// the trace directory being written, held since it was made (held_dir.rs)
    dir: HeldDir,
    /// by Kind as usize: its subdirectory, once made
    kind_dirs: Vec<Option<HeldDir>>,
    builders: KindBuilders,
    /// the number the next segments get
    segment: u64,
    schemas: Vec<SchemaRef>,
    properties: Vec<WriterProperties>,
    /// rows in segments written completely
    rows_on_disk: u64,
}

/// `launch/000001.parquet`'s file name.
pub fn segment_name(number: u64) -> String {
    format!("{number:0width$}{SEGMENT_SUFFIX}", width = SEGMENT_DIGITS)
}

fn partial_name(name: &str) -> String {
    format!(".{name}{PARTIAL_SUFFIX}")
}

fn properties(kind: Kind) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).expect("a zstd level")))
        // one row group a segment
        .set_max_row_group_row_count(Some(SEGMENT_ROWS.max(1) * 2))
        // statistics cost bytes on every page; readers skip segments by time only
        .set_statistics_enabled(EnabledStatistics::None)
        .set_column_statistics_enabled(ColumnPath::from("ts_ns"), EnabledStatistics::Chunk)
        .set_key_value_metadata(Some(vec![
            KeyValue::new(
                "launchgap.format".to_string(),
                format!("{FORMAT_NAME}/{FORMAT_VERSION}"),
            ),
            KeyValue::new("launchgap.kind".to_string(), kind.name().to_string()),
        ]));
    for column in written_columns(kind) {
        let path = ColumnPath::from(column.name);
        builder = match column.encoding {
            ColumnEncoding::Dictionary => builder.set_column_dictionary_enabled(path, true),
            ColumnEncoding::Delta => builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED),
            ColumnEncoding::Plain => builder.set_column_dictionary_enabled(path, false),
        };
    }
    builder.build()
}

/// The rows in time order (stable: rows of one time keep their order).
fn sorted_by_time(batch: RecordBatch) -> Result<RecordBatch> {
    let ts = batch.column(0).as_primitive::<UInt64Type>().values();
    if ts.windows(2).all(|w| w[0] <= w[1]) {
        return Ok(batch);
    }
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    order.sort_by_key(|&i| ts[i as usize]);
    Ok(arrow_select::take::take_record_batch(&batch, &UInt32Array::from(order))?)
}

/// Writes BYTES to NAME in DIR through a hidden partial name: created new (never
/// through a link), the recorder's own until the trace is complete, synced, then renamed.
/// On failure nothing is left.
pub fn write_complete_file(dir: &HeldDir, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let partial = partial_name(name);
    let written = (|| {
        let mut file = dir.create_file(OsStr::new(&partial), WRITING_FILE_MODE)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        dir.rename(OsStr::new(&partial), OsStr::new(name))
    })();
    if written.is_err() {
        let _ = dir.unlink(OsStr::new(&partial));
    }
    written
}

impl Format2Writer {
    /// Writes meta.json into DIR (the partial trace directory): a disk with no
    /// room fails here, before anything is traced.
    pub fn create(dir: HeldDir, metadata_json: &str) -> Result<Self> {
        write_complete_file(&dir, META_FILE, metadata_json.as_bytes())
            .context("writing the trace's metadata")?;
        Ok(Self {
            metadata_json: metadata_json.to_string(),
            dir,
            kind_dirs: Kind::ALL.iter().map(|_| None).collect(),
            builders: KindBuilders::new(),
            segment: 1,
            schemas: Kind::ALL.iter().map(|&k| Arc::new(Schema::new(kind_fields(k)))).collect(),
            properties: Kind::ALL.iter().map(|&k| properties(k)).collect(),
            rows_on_disk: 0,
        })
    }

    /// One kind's held rows as the bytes of a Parquet file.
    fn encode(&mut self, kind: Kind) -> Result<Vec<u8>> {
        let columns = self.builders.finish(kind);
        let batch = RecordBatch::try_new(self.schemas[kind as usize].clone(), columns)
            .context("assembling a segment")?;
        let batch = sorted_by_time(batch)?;
        let properties = self.properties[kind as usize].clone();
        let mut writer =
            ArrowWriter::try_new(Vec::with_capacity(1 << 20), batch.schema(), Some(properties))?;
        writer.write(&batch)?;
        Ok(writer.into_inner()?)
    }

    fn kind_dir(&mut self, kind: Kind) -> std::io::Result<&HeldDir> {
        let slot = &mut self.kind_dirs[kind as usize];
        if slot.is_none() {
            *slot = Some(self.dir.make_dir(OsStr::new(kind.name()), WRITING_DIR_MODE)?);
        }
        Ok(slot.as_ref().expect("made above"))
    }
}

impl TraceSink for Format2Writer {
    fn push(&mut self, row: &Row) {
        self.builders.push(row);
    }

    fn full(&self) -> bool {
        Kind::ALL.iter().any(|&k| self.builders.len(k) >= SEGMENT_ROWS)
    }

    fn flush(&mut self) -> Result<()> {
        let name = segment_name(self.segment);
        let mut wrote = false;
        for kind in Kind::ALL {
            let rows = self.builders.len(kind) as u64;
            if rows == 0 {
                continue;
            }
            let bytes =
                self.encode(kind).with_context(|| format!("encoding a {} segment", kind.name()))?;
            let dir = self.kind_dir(kind).context("writing a segment")?;
            write_complete_file(dir, &name, &bytes).context("writing a segment")?;
            self.rows_on_disk += rows;
            wrote = true;
        }
        if wrote {
            self.segment += 1;
        }
        Ok(())
    }

    /// The last segments, then end.json.
    fn finish(&mut self, _end_ns: u64, summary: &serde_json::Value) -> Result<()> {
        self.flush()?;
        // the clock read again now (meta.json's realtime_minus_monotonic_ns.end), replacing meta.json whole
        if let Ok(mut meta) = serde_json::from_str::<serde_json::Value>(&self.metadata_json) {
            crate::metadata::close_clock(&mut meta);
            let text = serde_json::to_string(&meta)?;
            write_complete_file(&self.dir, META_FILE, text.as_bytes())
                .context("writing the trace's metadata with the clock's end reading")?;
        }
        let text = serde_json::to_string_pretty(summary)?;
        write_complete_file(&self.dir, END_FILE, text.as_bytes())
            .context("writing the closing summary")?;
        Ok(())
    }

    fn rows_on_disk(&self) -> u64 {
        self.rows_on_disk
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{LaunchRow, LostRow};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("launchgap-format2-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn launch(ts_ns: u64, tid: u32) -> Row<'static> {
        Row::Launch(LaunchRow {
            ts_ns,
            cpu: 0,
            pid: 1,
            tid,
            api: "cuLaunchKernel",
            stream: 7,
            ..Default::default()
        })
    }

    #[test]
    fn segments_are_per_kind_sorted_by_time_and_only_complete_ones_are_visible() {
        let dir = scratch("segments");
        let held = HeldDir::open(&dir).unwrap();
        let mut writer: Box<dyn TraceSink> =
            Box::new(Format2Writer::create(held, "{\"start_ns\": 1}").unwrap());
        for (ts, tid) in [(30, 2), (10, 1), (20, 1), (20, 2)] {
            writer.push(&launch(ts, tid));
        }
        writer.push(&Row::Lost(LostRow {
            ts_ns: 5,
            cpu: None,
            lost_event: "switch",
            lost_count: 3,
            since_ns: 1,
            detail: None,
        }));
        writer.flush().unwrap();
        writer.push(&launch(40, 1));
        writer.finish(50, &serde_json::json!({"end_ns": 50})).unwrap();

        let names = |sub: &str| {
            let mut names: Vec<String> = std::fs::read_dir(dir.join(sub))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names("launch"), ["000001.parquet", "000002.parquet"]);
        assert_eq!(names("lost"), ["000001.parquet"]);
        assert_eq!(names(""), ["end.json", "launch", "lost", "meta.json"]);
        let file = std::fs::File::open(dir.join("launch/000001.parquet")).unwrap();
        let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let ts: Vec<u64> = batches[0].column(0).as_primitive::<UInt64Type>().values().to_vec();
        let tids: Vec<u32> = batches[0]
            .column_by_name("tid")
            .unwrap()
            .as_primitive::<arrow_array::types::UInt32Type>()
            .values()
            .to_vec();
        assert_eq!((ts, tids), (vec![10, 20, 20, 30], vec![1, 1, 2, 2]));
        assert_eq!(batches[0].schema().fields().len(), kind_fields(Kind::Launch).len());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
