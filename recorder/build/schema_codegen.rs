//! Code generation from schema/trace.toml, the trace's one definition
//! (docs/trace-format.md): the BPF header `trace_schema.h` (record types,
//! name-table enums, constants; src/bpf/events.h includes it) and the Rust
//! `trace_schema.rs` (record ids, name tables, event kinds, one row type and
//! one Arrow builder per kind, format 1's wide builder; src/schema.rs
//! includes it). Self-contained: build.rs calls `generate` and nothing else.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

const SCHEMA: &str = "../schema/trace.toml";

struct Column {
    name: String,
    arrow: String,
    role: Option<String>,
    encoding: String,
    nullable: bool,
    optional: bool,
}

struct Kind {
    name: String,
    record: Option<String>,
    variant: Option<String>,
    /// the kind's columns in the canonical (format 1) order
    columns: Vec<Column>,
}

struct Schema {
    toml: toml::Table,
    records: Vec<(String, i64)>,
    /// the collector channel's frames: (kind name, frame id)
    frames: Vec<(String, i64)>,
    kinds: Vec<Kind>,
    /// format 1's wide layout: (name, arrow type)
    wide: Vec<(String, String)>,
}

fn table<'a>(t: &'a toml::Table, key: &str) -> &'a toml::Table {
    t.get(key).and_then(|v| v.as_table()).unwrap_or_else(|| panic!("{SCHEMA}: no table [{key}]"))
}

fn text<'a>(t: &'a toml::Table, key: &str) -> &'a str {
    t.get(key).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{SCHEMA}: no string {key}"))
}

fn int(t: &toml::Table, key: &str) -> i64 {
    t.get(key).and_then(|v| v.as_integer()).unwrap_or_else(|| panic!("{SCHEMA}: no integer {key}"))
}

fn strings(t: &toml::Table, key: &str) -> Vec<String> {
    match t.get(key) {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .unwrap_or_else(|| panic!("{SCHEMA}: {key} is not a list"))
            .iter()
            .map(|s| s.as_str().unwrap_or_else(|| panic!("{SCHEMA}: {key} holds a non-string")).to_string())
            .collect(),
    }
}

fn load(path: &Path) -> Schema {
    let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let toml: toml::Table = source.parse().unwrap_or_else(|e| panic!("{SCHEMA}: {e}"));
    let columns = table(&toml, "columns");
    let order = strings(table(&toml, "format1"), "columns");
    let mut records: Vec<(String, i64)> =
        table(&toml, "records").iter().map(|(k, v)| (k.clone(), v.as_integer().expect("a record id"))).collect();
    records.sort_by_key(|(_, id)| *id);
    let collector = table(&toml, "collector");
    let mut frames: Vec<(String, i64)> =
        table(collector, "frames").iter().map(|(k, v)| (k.clone(), v.as_integer().expect("a frame id"))).collect();
    frames.sort_by_key(|(_, id)| *id);
    let wide = order
        .iter()
        .map(|name| {
            let c = columns.get(name).and_then(|v| v.as_table()).unwrap_or_else(|| panic!("{SCHEMA}: no column {name}"));
            (name.clone(), text(c, "type").to_string())
        })
        .collect();
    let kinds = toml
        .get("kind")
        .and_then(|v| v.as_array())
        .expect("[[kind]] tables")
        .iter()
        .map(|k| {
            let k = k.as_table().expect("a [[kind]] table");
            let always = strings(k, "columns");
            let nullable = strings(k, "nullable");
            let optional = strings(k, "optional");
            let listed: BTreeSet<&String> = always.iter().chain(&nullable).chain(&optional).collect();
            let columns = order
                .iter()
                .filter(|name| listed.contains(name))
                .map(|name| {
                    let c = table(columns, name);
                    Column {
                        name: name.clone(),
                        arrow: text(c, "type").to_string(),
                        role: c.get("role").and_then(|v| v.as_str()).map(str::to_string),
                        encoding: c.get("encoding").and_then(|v| v.as_str()).unwrap_or("dictionary").to_string(),
                        nullable: !always.contains(name),
                        optional: optional.contains(name),
                    }
                })
                .collect::<Vec<_>>();
            assert_eq!(columns.len(), listed.len(), "{SCHEMA}: kind {}: a column not in format1.columns", text(k, "name"));
            Kind {
                name: text(k, "name").to_string(),
                record: k.get("record").and_then(|v| v.as_str()).map(str::to_string),
                variant: k.get("variant").and_then(|v| v.as_str()).map(str::to_string),
                columns,
            }
        })
        .collect();
    Schema { toml, records, frames, kinds, wide }
}

fn camel(name: &str) -> String {
    name.split('_').map(|part| {
        let mut chars = part.chars();
        chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
    }).collect()
}

/// (Rust value type, arrow builder, ArrowType variant) of a schema type.
fn rust_types(arrow: &str) -> (&'static str, &'static str, &'static str) {
    match arrow {
        "uint32" => ("u32", "UInt32Builder", "UInt32"),
        "uint64" => ("u64", "UInt64Builder", "UInt64"),
        "int32" => ("i32", "Int32Builder", "Int32"),
        "int64" => ("i64", "Int64Builder", "Int64"),
        "bool" => ("bool", "BooleanBuilder", "Boolean"),
        "utf8" => ("&'a str", "StringBuilder", "Utf8"),
        other => panic!("{SCHEMA}: unknown type {other}"),
    }
}

impl Kind {
    /// The columns the recorder writes: optional ones are for other sources.
    fn written(&self) -> impl Iterator<Item = &Column> {
        self.columns.iter().filter(|c| !c.optional)
    }

    fn has_text(&self) -> bool {
        self.written().any(|c| c.arrow == "utf8")
    }

    fn row_type(&self) -> String {
        let lifetime = if self.has_text() { "<'a>" } else { "" };
        format!("{}Row{lifetime}", camel(&self.name))
    }
}

// ---- the BPF header ------------------------------------------------------

fn c_header(s: &Schema) -> String {
    let mut out = String::new();
    out.push_str("/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */\n");
    out.push_str("/* GENERATED by recorder/build.rs from schema/trace.toml: do not edit. */\n");
    out.push_str("#ifndef LAUNCHGAP_TRACE_SCHEMA_H\n#define LAUNCHGAP_TRACE_SCHEMA_H\n\n");
    for (name, value) in table(&s.toml, "constants") {
        let c = value.as_table().expect("a constant");
        writeln!(out, "/* {} */\n#define {name} {}", text(c, "doc"), int(c, "value")).unwrap();
    }
    out.push_str("\n/* the record types BPF programs put in the ring buffer */\nenum event_type {\n");
    for (name, id) in &s.records {
        writeln!(out, "\tEVENT_{} = {id},", name.to_uppercase()).unwrap();
    }
    let count = s.records.iter().map(|(_, id)| id).max().unwrap_or(&0) + 1;
    writeln!(out, "\tEVENT_TYPE_COUNT = {count},\n}};").unwrap();
    for (_, spec) in table(&s.toml, "names") {
        let spec = spec.as_table().expect("a name table");
        let Some(c_enum) = spec.get("c_enum").and_then(|v| v.as_str()) else { continue };
        let prefix = text(spec, "c_prefix");
        writeln!(out, "\n/* {} */\nenum {c_enum} {{", text(spec, "doc")).unwrap();
        let values = strings(spec, "values");
        for (i, value) in values.iter().enumerate() {
            writeln!(out, "\t{prefix}{value} = {i},").unwrap();
        }
        if let Some(count) = spec.get("c_count").and_then(|v| v.as_str()) {
            writeln!(out, "\t{count} = {},", values.len()).unwrap();
        }
        out.push_str("};\n");
    }
    out.push_str("\n#endif /* LAUNCHGAP_TRACE_SCHEMA_H */\n");
    out
}

// ---- the Rust module -----------------------------------------------------

/// The name tables, also written alone (trace_names.rs) for the library both programs share.
fn names_module(s: &Schema) -> String {
    let mut out = String::new();
    let w = &mut out;
    for (table_name, spec) in table(&s.toml, "names") {
        let spec = spec.as_table().expect("a name table");
        let values = strings(spec, "values");
        writeln!(w, "/// {}\npub const {}_NAMES: [&str; {}] = {values:?};", text(spec, "doc"), table_name.to_uppercase(), values.len())
            .unwrap();
    }
    let tables: Vec<String> =
        table(&s.toml, "names").keys().map(|name| format!("({name:?}, &{}_NAMES)", name.to_uppercase())).collect();
    writeln!(w, "/// Every name table, by name.\npub const NAME_TABLES: [(&str, &[&str]); {}] = [{}];", tables.len(), tables.join(", "))
        .unwrap();
    out
}

fn rust_module(s: &Schema) -> String {
    let mut out = String::new();
    let w = &mut out;
    w.push_str("// GENERATED by recorder/build.rs from schema/trace.toml: do not edit.\n\n");
    let format = table(&s.toml, "format");
    let layout = table(&s.toml, "layout");
    writeln!(w, "pub const FORMAT_NAME: &str = {:?};", text(format, "name")).unwrap();
    writeln!(w, "pub const FORMAT_VERSION: u32 = {};", int(format, "version")).unwrap();
    writeln!(w, "pub const META_FILE: &str = {:?};", text(layout, "meta")).unwrap();
    writeln!(w, "pub const END_FILE: &str = {:?};", text(layout, "end")).unwrap();
    writeln!(w, "pub const SEGMENT_DIGITS: usize = {};", int(layout, "segment_digits")).unwrap();
    writeln!(w, "pub const SEGMENT_SUFFIX: &str = {:?};", text(layout, "segment_suffix")).unwrap();
    writeln!(w, "pub const PARTIAL_SUFFIX: &str = {:?};", text(layout, "partial_suffix")).unwrap();
    writeln!(w, "pub const SEGMENT_SECONDS: u64 = {};", int(layout, "segment_seconds")).unwrap();
    writeln!(w, "pub const SEGMENT_ROWS: usize = {};", int(layout, "segment_rows")).unwrap();
    writeln!(w, "pub const FORMAT1_END_EVENT: &str = {:?};", text(table(&s.toml, "end"), "format1_event")).unwrap();
    let constants = table(&s.toml, "constants");
    for (name, value) in constants {
        let c = value.as_table().expect("a constant");
        writeln!(w, "/// {}\npub const {name}: u32 = {};", text(c, "doc"), int(c, "value")).unwrap();
    }
    let listed: Vec<String> = constants.keys().map(|name| format!("({name:?}, {name})")).collect();
    writeln!(w, "/// Every constant, by name.\npub const CONSTANTS: [(&str, u32); {}] = [{}];", listed.len(), listed.join(", ")).unwrap();

    w.push_str("\n/// enum event_type: the record types BPF programs put in the ring buffer.\npub mod record {\n");
    for (name, id) in &s.records {
        writeln!(w, "    pub const {}: u32 = {id};", name.to_uppercase()).unwrap();
    }
    let count = (s.records.iter().map(|(_, id)| *id).max().unwrap_or(0) + 1) as usize;
    writeln!(w, "    pub const COUNT: u32 = {count};\n}}").unwrap();
    let mut names = vec!["unknown".to_string(); count];
    for (name, id) in &s.records {
        names[*id as usize] = name.clone();
    }
    writeln!(w, "/// The name of each record type (`lost_event` values), by id.\npub const RECORD_NAMES: [&str; {count}] = {names:?};").unwrap();
    w.push_str(&names_module(s));

    // event kinds
    let n = s.kinds.len();
    w.push_str("\n/// An event kind: one table in format 2, one `event` value in format 1.\n");
    w.push_str("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum Kind {\n");
    for k in &s.kinds {
        writeln!(w, "    {},", camel(&k.name)).unwrap();
    }
    w.push_str("}\n\nimpl Kind {\n");
    writeln!(w, "    pub const ALL: [Kind; {n}] = [{}];", s.kinds.iter().map(|k| format!("Kind::{}", camel(&k.name))).collect::<Vec<_>>().join(", ")).unwrap();
    w.push_str("    pub const fn name(self) -> &'static str {\n        match self {\n");
    for k in &s.kinds {
        writeln!(w, "            Kind::{} => {:?},", camel(&k.name), k.name).unwrap();
    }
    w.push_str("        }\n    }\n\n    /// The columns of the kind's table (format 2), in order.\n");
    w.push_str("    pub fn columns(self) -> &'static [ColumnSpec] {\n        KIND_COLUMNS[self as usize]\n    }\n\n");
    w.push_str("    /// The kind a wakeup record of this variant (enum wakeup_variant) is.\n");
    w.push_str("    pub fn of_wakeup_variant(variant: u32) -> Option<Kind> {\n        match variant {\n");
    let variants = strings(table(table(&s.toml, "names"), "wakeup_variant"), "values");
    for k in &s.kinds {
        if let Some(v) = &k.variant {
            let index = variants.iter().position(|x| x == v).unwrap_or_else(|| panic!("{SCHEMA}: no variant {v}"));
            writeln!(w, "            {index} => Some(Kind::{}),", camel(&k.name)).unwrap();
        }
    }
    w.push_str("            _ => None,\n        }\n    }\n\n    /// The record type the kind is decoded from (None: made in user space).\n");
    w.push_str("    pub const fn record(self) -> Option<u32> {\n        match self {\n");
    for k in &s.kinds {
        match &k.record {
            Some(r) => writeln!(w, "            Kind::{} => Some(record::{}),", camel(&k.name), r.to_uppercase()).unwrap(),
            None => writeln!(w, "            Kind::{} => None,", camel(&k.name)).unwrap(),
        }
    }
    w.push_str("        }\n    }\n}\n\n");

    // column specs
    let spec = |c: &Column| {
        let (_, _, arrow) = rust_types(&c.arrow);
        let encoding = camel(&c.encoding);
        format!(
            "ColumnSpec {{ name: {:?}, arrow: ArrowType::{arrow}, nullable: {}, optional: {}, role: {:?}, encoding: ColumnEncoding::{encoding} }}",
            c.name, c.nullable, c.optional, c.role.as_deref()
        )
    };
    writeln!(w, "/// Each kind's columns (format 2), by Kind as usize; optional ones last written by other sources.\npub const KIND_COLUMNS: [&[ColumnSpec]; {n}] = [").unwrap();
    for k in &s.kinds {
        writeln!(w, "    &[").unwrap();
        for c in &k.columns {
            writeln!(w, "        {},", spec(c)).unwrap();
        }
        writeln!(w, "    ],").unwrap();
    }
    w.push_str("];\n\n/// Format 1's wide table: every column, nullable but ts_ns and event.\npub const FORMAT1_COLUMNS: &[ColumnSpec] = &[\n");
    for (name, arrow) in &s.wide {
        let nullable = name != "ts_ns" && name != "event";
        let c = Column { name: name.clone(), arrow: arrow.clone(), role: None, encoding: "plain".into(), nullable, optional: false };
        writeln!(w, "    {},", spec(&c)).unwrap();
    }
    w.push_str("];\n\n");

    // rows
    for k in &s.kinds {
        writeln!(w, "/// A `{}` row; `None` is null.\n#[derive(Clone, Copy, Debug, Default, PartialEq)]\npub struct {} {{", k.name, k.row_type()).unwrap();
        for c in k.written() {
            let (rust, _, _) = rust_types(&c.arrow);
            let ty = if c.nullable { format!("Option<{rust}>") } else { rust.to_string() };
            writeln!(w, "    pub {}: {ty},", c.name).unwrap();
        }
        w.push_str("}\n\n");
    }
    w.push_str("/// One event of any kind.\n#[derive(Clone, Copy, Debug, PartialEq)]\npub enum Row<'a> {\n");
    for k in &s.kinds {
        let lifetime = if k.has_text() { "<'a>" } else { "" };
        writeln!(w, "    {}({}Row{lifetime}),", camel(&k.name), camel(&k.name)).unwrap();
    }
    w.push_str("}\n\nimpl Row<'_> {\n    pub fn kind(&self) -> Kind {\n        match self {\n");
    for k in &s.kinds {
        writeln!(w, "            Row::{0}(_) => Kind::{0},", camel(&k.name)).unwrap();
    }
    w.push_str("        }\n    }\n\n    pub fn ts_ns(&self) -> u64 {\n        match self {\n");
    for k in &s.kinds {
        writeln!(w, "            Row::{}(r) => r.ts_ns,", camel(&k.name)).unwrap();
    }
    w.push_str("        }\n    }\n}\n\n");

    // per-kind builders (format 2)
    for k in &s.kinds {
        let name = camel(&k.name);
        writeln!(w, "/// Arrow arrays of `{}` rows.\npub struct {name}Builder {{", k.name).unwrap();
        for c in k.written() {
            writeln!(w, "    {}: {},", c.name, rust_types(&c.arrow).1).unwrap();
        }
        writeln!(w, "}}\n\nimpl {name}Builder {{\n    pub fn new() -> Self {{\n        Self {{").unwrap();
        for c in k.written() {
            writeln!(w, "            {}: {}::new(),", c.name, rust_types(&c.arrow).1).unwrap();
        }
        let lifetime = if k.has_text() { "<'_>" } else { "" };
        writeln!(w, "        }}\n    }}\n\n    pub fn append(&mut self, row: &{name}Row{lifetime}) {{").unwrap();
        for c in k.written() {
            let call = if c.nullable { "append_option" } else { "append_value" };
            writeln!(w, "        self.{0}.{call}(row.{0});", c.name).unwrap();
        }
        let first = &k.written().next().expect("a column").name;
        writeln!(w, "    }}\n\n    pub fn len(&self) -> usize {{\n        self.{first}.len()\n    }}\n").unwrap();
        w.push_str("    /// The arrays of the rows appended since the last finish, in column order.\n");
        w.push_str("    pub fn finish(&mut self) -> Vec<ArrayRef> {\n        vec![\n");
        for c in k.written() {
            writeln!(w, "            Arc::new(self.{}.finish()) as ArrayRef,", c.name).unwrap();
        }
        w.push_str("        ]\n    }\n}\n\n");
    }
    w.push_str("/// One builder per kind.\npub struct KindBuilders {\n");
    for k in &s.kinds {
        writeln!(w, "    pub {}: {}Builder,", k.name, camel(&k.name)).unwrap();
    }
    w.push_str("}\n\nimpl KindBuilders {\n    pub fn new() -> Self {\n        Self {\n");
    for k in &s.kinds {
        writeln!(w, "            {}: {}Builder::new(),", k.name, camel(&k.name)).unwrap();
    }
    w.push_str("        }\n    }\n\n    pub fn push(&mut self, row: &Row) {\n        match row {\n");
    for k in &s.kinds {
        writeln!(w, "            Row::{}(r) => self.{}.append(r),", camel(&k.name), k.name).unwrap();
    }
    w.push_str("        }\n    }\n\n    pub fn len(&self, kind: Kind) -> usize {\n        match kind {\n");
    for k in &s.kinds {
        writeln!(w, "            Kind::{} => self.{}.len(),", camel(&k.name), k.name).unwrap();
    }
    w.push_str("        }\n    }\n\n    pub fn finish(&mut self, kind: Kind) -> Vec<ArrayRef> {\n        match kind {\n");
    for k in &s.kinds {
        writeln!(w, "            Kind::{} => self.{}.finish(),", camel(&k.name), k.name).unwrap();
    }
    w.push_str("        }\n    }\n}\n\n");

    // the collector channel's decoders
    let collector = table(&s.toml, "collector");
    writeln!(w, "/// The collector channel's largest frame, header included ([collector] max_frame).").unwrap();
    writeln!(w, "pub const COLLECTOR_MAX_FRAME: usize = {};", int(collector, "max_frame")).unwrap();
    let required = strings(collector, "cupti_required");
    writeln!(w, "/// CUPTI's entry points the collector cannot work without.\npub const CUPTI_REQUIRED: [&str; {}] = {required:?};", required.len()).unwrap();
    let frames: Vec<String> = s.frames.iter().map(|(name, id)| format!("({name:?}, {id})")).collect();
    writeln!(w, "/// The collector channel's frames: (kind, frame id).\npub const COLLECTOR_FRAMES: [(&str, u16); {}] = [{}];", frames.len(), frames.join(", "))
        .unwrap();
    w.push_str("/// The collector channel's frame ids ([collector] frames), by kind.\npub mod collector_frame {\n");
    for (name, id) in &s.frames {
        writeln!(w, "    pub const {}: u16 = {id};", name.to_uppercase()).unwrap();
    }
    w.push_str("}\n\n");
    w.push_str("/// Decodes a collector frame's payload into its row: None for an unknown frame id, a\n");
    w.push_str("/// payload too short or too long for its kind, a flag byte other than 0 or 1, or text that is not UTF-8.\n");
    w.push_str("pub fn decode_collector_frame(frame: u16, payload: &[u8]) -> Option<Row<'_>> {\n");
    w.push_str("    let mut r = WireReader::new(payload);\n    let row = match frame {\n");
    for (name, id) in &s.frames {
        let k = s.kinds.iter().find(|k| &k.name == name).unwrap_or_else(|| panic!("{SCHEMA}: frame {name} is not a kind"));
        writeln!(w, "        {id} => Row::{}({}Row {{", camel(&k.name), camel(&k.name)).unwrap();
        for c in k.written() {
            let read = match c.arrow.as_str() {
                "uint32" => "r.u32()",
                "int32" => "r.i32()",
                "uint64" => "r.u64()",
                "int64" => "r.i64()",
                "bool" => "r.bool()",
                "utf8" => "r.str()",
                other => panic!("{SCHEMA}: unknown type {other}"),
            };
            if c.nullable {
                let inner = read.replacen("r.", "r.", 1);
                writeln!(w, "            {}: if r.present()? {{ Some({inner}?) }} else {{ None }},", c.name).unwrap();
            } else {
                writeln!(w, "            {}: {read}?,", c.name).unwrap();
            }
        }
        w.push_str("        }),\n");
    }
    w.push_str("        _ => return None,\n    };\n    r.is_empty().then_some(row)\n}\n\n");

    // format 1: the wide builder
    w.push_str("/// Format 1's wide table: one row per event, the columns a kind lacks null.\npub struct WideBuilders {\n");
    for (name, arrow) in &s.wide {
        writeln!(w, "    {name}: {},", rust_types(arrow).1).unwrap();
    }
    w.push_str("}\n\nimpl WideBuilders {\n    pub fn new() -> Self {\n        Self {\n");
    for (name, arrow) in &s.wide {
        writeln!(w, "            {name}: {}::new(),", rust_types(arrow).1).unwrap();
    }
    w.push_str("        }\n    }\n\n    pub fn push(&mut self, row: &Row) {\n        match row {\n");
    for k in &s.kinds {
        writeln!(w, "            Row::{}(r) => {{", camel(&k.name)).unwrap();
        for (name, _) in &s.wide {
            if name == "event" {
                writeln!(w, "                self.event.append_value({:?});", k.name).unwrap();
                continue;
            }
            match k.written().find(|c| &c.name == name) {
                Some(c) if c.nullable => writeln!(w, "                self.{name}.append_option(r.{name});").unwrap(),
                Some(_) => writeln!(w, "                self.{name}.append_value(r.{name});").unwrap(),
                None => writeln!(w, "                self.{name}.append_null();").unwrap(),
            }
        }
        w.push_str("            }\n");
    }
    w.push_str("        }\n    }\n\n    /// Format 1's closing row: its detail is the closing summary's JSON.\n");
    w.push_str("    pub fn push_end(&mut self, ts_ns: u64, detail: &str) {\n");
    for (name, _) in &s.wide {
        match name.as_str() {
            "ts_ns" => w.push_str("        self.ts_ns.append_value(ts_ns);\n"),
            "event" => w.push_str("        self.event.append_value(FORMAT1_END_EVENT);\n"),
            "detail" => w.push_str("        self.detail.append_value(detail);\n"),
            other => writeln!(w, "        self.{other}.append_null();").unwrap(),
        }
    }
    w.push_str("    }\n\n    pub fn len(&self) -> usize {\n        self.ts_ns.len()\n    }\n\n");
    w.push_str("    pub fn finish(&mut self) -> Vec<ArrayRef> {\n        vec![\n");
    for (name, _) in &s.wide {
        writeln!(w, "            Arc::new(self.{name}.finish()) as ArrayRef,").unwrap();
    }
    w.push_str("        ]\n    }\n}\n");
    out
}

/// Writes trace_schema.h and trace_schema.rs into OUT_DIR.
pub fn generate(manifest_dir: &Path, out_dir: &Path) {
    let path = manifest_dir.join(SCHEMA);
    println!("cargo:rerun-if-changed={}", path.display());
    let schema = load(&path);
    std::fs::write(out_dir.join("trace_schema.h"), c_header(&schema)).expect("writing trace_schema.h");
    std::fs::write(out_dir.join("trace_schema.rs"), rust_module(&schema)).expect("writing trace_schema.rs");
    let names = format!("// GENERATED by recorder/build.rs from schema/trace.toml: do not edit.\n\n{}", names_module(&schema));
    std::fs::write(out_dir.join("trace_names.rs"), names).expect("writing trace_names.rs");
}
