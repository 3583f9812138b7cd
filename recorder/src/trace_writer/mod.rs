//! The trace on disk. Format 2 (the default, format2.rs): a directory of
//! Parquet tables, one per event kind, in segments closed at least once a
//! second. Format 1 (legacy, format1.rs): one wide Arrow IPC stream. Both
//! take the rows the decoder makes (schema::Row) and the same closing summary,
//! from the `trace-writer` thread (thread.rs).

pub mod format1;
pub mod format2;
pub mod thread;

use anyhow::Result;

use crate::schema::Row;

/// Which format to write (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// one Arrow IPC stream (legacy)
    One,
    /// a directory of per-kind Parquet segments
    Two,
}

impl Format {
    pub fn version(self) -> u32 {
        match self {
            Format::One => format1::VERSION,
            Format::Two => crate::schema::FORMAT_VERSION,
        }
    }
}

/// What the writer thread asks of either format.
pub trait TraceSink: Send {
    /// Holds a row until the next flush.
    fn push(&mut self, row: &Row);

    /// Whether what is held should be written now, before the next timed flush.
    fn full(&self) -> bool;

    /// Writes what is held as complete units (a batch, or a segment per kind):
    /// a recorder killed after this loses none of it.
    fn flush(&mut self) -> Result<()>;

    /// Writes what is left and the closing summary (end_ns, the summary object).
    fn finish(&mut self, end_ns: u64, summary: &serde_json::Value) -> Result<()>;

    /// Rows in complete units on disk so far: what a reader gets if writing
    /// stops now. Zero after a failure means nothing was recorded.
    fn rows_on_disk(&self) -> u64;
}
