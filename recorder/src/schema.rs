//! The trace's contract: record ids, name tables, event kinds, their rows,
//! columns and Arrow builders, all generated from schema/trace.toml by
//! scripts/gen_schema.py (generated/trace_schema.rs). Only the types the
//! generated code names, and the views of it other modules want, are written here.

#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};
use serde_json::{json, Value};

/// A column's Arrow type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrowType {
    UInt32,
    UInt64,
    Int32,
    Int64,
    Boolean,
    Utf8,
}

impl ArrowType {
    pub fn data_type(self) -> DataType {
        match self {
            ArrowType::UInt32 => DataType::UInt32,
            ArrowType::UInt64 => DataType::UInt64,
            ArrowType::Int32 => DataType::Int32,
            ArrowType::Int64 => DataType::Int64,
            ArrowType::Boolean => DataType::Boolean,
            ArrowType::Utf8 => DataType::Utf8,
        }
    }

    /// The name schema/trace.toml uses.
    pub fn schema_name(self) -> &'static str {
        match self {
            ArrowType::UInt32 => "uint32",
            ArrowType::UInt64 => "uint64",
            ArrowType::Int32 => "int32",
            ArrowType::Int64 => "int64",
            ArrowType::Boolean => "bool",
            ArrowType::Utf8 => "utf8",
        }
    }
}

/// How format 2 encodes a column in Parquet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnEncoding {
    /// DELTA_BINARY_PACKED: timestamps and counters that grow.
    Delta,
    /// a dictionary of the distinct values: few of them.
    Dictionary,
    /// the values themselves: many distinct ones.
    Plain,
}

pub struct ColumnSpec {
    pub name: &'static str,
    pub arrow: ArrowType,
    pub nullable: bool,
    /// may be absent from a file; the recorder never writes it
    pub optional: bool,
    pub role: Option<&'static str>,
    pub encoding: ColumnEncoding,
}

impl ColumnSpec {
    pub fn field(&self) -> Field {
        Field::new(self.name, self.arrow.data_type(), self.nullable)
    }
}

/// Reads a collector frame's payload ([collector] in schema/trace.toml): little-endian
/// integers, one flag byte before a nullable value, text as a u16 length and its bytes.
pub struct WireReader<'a> {
    rest: &'a [u8],
}

impl<'a> WireReader<'a> {
    pub fn new(payload: &'a [u8]) -> Self {
        Self { rest: payload }
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(*head)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    pub fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    pub fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }

    pub fn bool(&mut self) -> Option<bool> {
        match self.take::<1>()? {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }

    /// The flag before a nullable value: whether the value follows.
    pub fn present(&mut self) -> Option<bool> {
        self.bool()
    }

    pub fn str(&mut self) -> Option<&'a str> {
        let len = u16::from_le_bytes(self.take()?) as usize;
        if self.rest.len() < len {
            return None;
        }
        let (text, rest) = self.rest.split_at(len);
        self.rest = rest;
        std::str::from_utf8(text).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

include!("generated/trace_schema.rs");
// the ring buffer's records
include!("generated/ring_records.rs");
// meta.json's keys
include!("generated/trace_files.rs");

/// The columns the recorder writes for a kind, in order (format 2).
pub fn written_columns(kind: Kind) -> impl Iterator<Item = &'static ColumnSpec> {
    kind.columns().iter().filter(|c| !c.optional)
}

pub fn kind_fields(kind: Kind) -> Vec<Field> {
    written_columns(kind).map(ColumnSpec::field).collect()
}

pub fn format1_fields() -> Vec<Field> {
    FORMAT1_COLUMNS.iter().map(ColumnSpec::field).collect()
}

/// The BPF header generated from the schema, as this binary's programs were compiled with it.
pub const C_HEADER: &str = include_str!("generated/trace_schema.h");

/// The contract as this binary was built with it (`--print-schema`), so a test
/// can compare it with schema/trace.toml and the Python module.
pub fn as_json() -> Value {
    let column = |c: &ColumnSpec| json!({"name": c.name, "type": c.arrow.schema_name(), "nullable": c.nullable, "optional": c.optional});
    let kinds: Vec<Value> = Kind::ALL
        .iter()
        .map(|k| {
            json!({
                "name": k.name(),
                "record": k.record().map(|r| RECORD_NAMES[r as usize]),
                "columns": k.columns().iter().map(column).collect::<Vec<_>>(),
            })
        })
        .collect();
    let ring_records: serde_json::Map<_, _> = RING_RECORD_LAYOUTS
        .iter()
        .map(|record| {
            let offsets: serde_json::Map<_, _> =
                record.fields.iter().map(|(field, at)| (field.to_string(), json!(at))).collect();
            (record.name.to_string(), json!({"size": record.size, "fields": offsets}))
        })
        .collect();
    json!({
        "format": {"name": FORMAT_NAME, "version": FORMAT_VERSION},
        "records": (1..record::COUNT).filter(|&id| RECORD_NAMES[id as usize] != "unknown")
            .map(|id| (RECORD_NAMES[id as usize].to_string(), json!(id))).collect::<serde_json::Map<_, _>>(),
        "names": NAME_TABLES.iter().map(|(name, values)| (name.to_string(), json!(values))).collect::<serde_json::Map<_, _>>(),
        "collector": {
            "frames": COLLECTOR_FRAMES.iter().map(|(name, id)| (name.to_string(), json!(id))).collect::<serde_json::Map<_, _>>(),
            "max_frame": COLLECTOR_MAX_FRAME,
            "cupti_required": CUPTI_REQUIRED,
        },
        "constants": CONSTANTS.iter().map(|(name, value)| (name.to_string(), json!(value))).collect::<serde_json::Map<_, _>>(),
        "kinds": kinds,
        "format1": {"columns": FORMAT1_COLUMNS.iter().map(|c| c.name).collect::<Vec<_>>(), "end_event": FORMAT1_END_EVENT},
        "c_header": C_HEADER,
        "ring_records": ring_records,
        "layout": {"meta": META_FILE, "end": END_FILE, "segment_digits": SEGMENT_DIGITS, "segment_suffix": SEGMENT_SUFFIX,
                   "partial_suffix": PARTIAL_SUFFIX, "segment_seconds": SEGMENT_SECONDS, "segment_rows": SEGMENT_ROWS},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_time_and_its_builder_makes_its_columns() {
        let mut builders = KindBuilders::new();
        for kind in Kind::ALL {
            assert_eq!(kind.columns()[0].name, "ts_ns", "{}", kind.name());
            assert_eq!(builders.len(kind), 0);
            assert_eq!(builders.finish(kind).len(), kind_fields(kind).len(), "{}", kind.name());
        }
    }

    #[test]
    fn wakeup_variants_are_three_kinds() {
        let kinds: Vec<_> = (0..3).filter_map(Kind::of_wakeup_variant).map(Kind::name).collect();
        assert_eq!(kinds, ["waking", "wakeup", "wakeup_new"]);
        assert_eq!(Kind::of_wakeup_variant(3), None);
    }

    #[test]
    fn a_wide_row_fills_only_its_kinds_columns() {
        let mut wide = WideBuilders::new();
        wide.push(&Row::Migrate(MigrateRow {
            ts_ns: 5,
            cpu: 1,
            pid: 2,
            tid: 3,
            orig_cpu: 1,
            dest_cpu: 0,
        }));
        wide.push_end(9, "{}");
        let arrays = wide.finish();
        let fields = format1_fields();
        assert_eq!(arrays.len(), fields.len());
        let nulls: Vec<_> = fields
            .iter()
            .zip(&arrays)
            .filter(|(_, a)| a.null_count() == 2)
            .map(|(f, _)| f.name().as_str())
            .collect();
        assert!(
            !nulls.contains(&"orig_cpu")
                && nulls.contains(&"comm")
                && nulls.contains(&"return_code")
        );
    }
}
