#!/usr/bin/env python3
"""Makes the Python schema module, the tables of docs/trace-format.md and the CUPTI
collector's channel encoders (collector/gpu_wire.h) from schema/trace.toml, the one
definition of the trace (the recorder's build makes the BPF header and the Rust code
from the same file: recorder/build/schema_codegen.rs).

    scripts/gen_schema.py            rewrite the generated files
    scripts/gen_schema.py --check    exit 1, naming each file that differs

tests/test_schema_agreement.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
SCHEMA = Path("schema/trace.toml")
PYTHON_MODULE = Path("python/launchgap/trace/schema.py")
DOC = Path("docs/trace-format.md")
WIRE_HEADER = Path("collector/gpu_wire.h")
ARROW_TYPES = {"uint32", "uint64", "int32", "int64", "bool", "utf8"}
ROLES = {None, "time", "cpu", "task", "duration"}
ENCODINGS = {"delta", "dictionary", "plain"}
DEFAULT_ENCODING = "dictionary"
BEGIN = "<!-- generated from schema/trace.toml by scripts/gen_schema.py: {name} -->"
END = "<!-- end of generated {name} -->"


class SchemaError(ValueError):
    """schema/trace.toml contradicts itself (message says where)."""


def load(text: str) -> dict:
    schema = tomllib.loads(text)
    check(schema)
    return schema


def check(schema: dict) -> None:
    columns = schema["columns"]
    order = schema["format1"]["columns"]
    for name, column in columns.items():
        if column["type"] not in ARROW_TYPES:
            raise SchemaError(f"column {name}: type {column['type']!r} is not one of {sorted(ARROW_TYPES)}")
        if column.get("role") not in ROLES or column.get("encoding", DEFAULT_ENCODING) not in ENCODINGS:
            raise SchemaError(f"column {name}: unknown role or encoding")
        if name not in order:
            raise SchemaError(f"column {name} is missing from format1.columns")
    if sorted(order) != sorted(columns) or len(set(order)) != len(order):
        raise SchemaError("format1.columns must list every column once")
    names = set()
    for kind in schema["kind"]:
        listed = kind_column_names(kind)
        if len(set(listed)) != len(listed):
            raise SchemaError(f"kind {kind['name']}: a column is listed twice")
        for name in listed:
            if name not in columns or columns[name].get("format1_only"):
                raise SchemaError(f"kind {kind['name']}: no column {name!r} in [columns]")
        if "ts_ns" not in kind["columns"]:
            raise SchemaError(f"kind {kind['name']}: ts_ns must always be set")
        if kind.get("record") and kind["record"] not in schema["records"]:
            raise SchemaError(f"kind {kind['name']}: no record {kind['record']!r}")
        if kind.get("variant") and kind["variant"] not in schema["names"]["wakeup_variant"]["values"]:
            raise SchemaError(f"kind {kind['name']}: no wakeup variant {kind['variant']!r}")
        for note in kind.get("notes", {}):
            if note not in listed:
                raise SchemaError(f"kind {kind['name']}: a note on {note!r}, which it does not have")
        names.add(kind["name"])
    if len(names) != len(schema["kind"]) or schema["end"]["format1_event"] in names:
        raise SchemaError("kind names must be unique and differ from the closing row's")
    frames = schema["collector"]["frames"]
    for name, number in frames.items():
        if name not in names:
            raise SchemaError(f"collector frame {name!r} is not a kind")
        if not 0 < number < 1 << 16:
            raise SchemaError(f"collector frame {name!r}: id {number} does not fit a u16 above 0")
    if len(set(frames.values())) != len(frames):
        raise SchemaError("collector frame ids must be unique")
    for kind in schema["kind"]:
        if kind["name"] in frames and kind.get("record"):
            raise SchemaError(f"kind {kind['name']}: comes either from a BPF record or from the collector")


def kind_column_names(kind: dict) -> list[str]:
    return [*kind["columns"], *kind.get("nullable", []), *kind.get("optional", [])]


def kind_columns(schema: dict, kind: dict) -> list[dict]:
    """The kind's columns in the canonical (format 1) order, each with its traits."""
    listed = set(kind_column_names(kind))
    out = []
    for name in schema["format1"]["columns"]:
        if name not in listed:
            continue
        column = schema["columns"][name]
        out.append({
            "name": name, "type": column["type"], "role": column.get("role"),
            "encoding": column.get("encoding", DEFAULT_ENCODING),
            "nullable": name not in kind["columns"], "optional": name in kind.get("optional", []),
            "doc": kind.get("notes", {}).get(name, column["doc"]),
        })
    return out


def enum_member(name: str) -> str:
    return name.upper()


# --- the Python module ---------------------------------------------------------

def python_module(schema: dict) -> str:
    fmt, layout = schema["format"], schema["layout"]
    lines = [
        '"""The trace\'s contract: event kinds, their columns, name tables and constants.',
        "",
        "GENERATED from schema/trace.toml by scripts/gen_schema.py: edit that file and run the",
        "script (tests/test_schema_agreement.py fails while they differ). Code refers to event",
        'kinds through `Event`, never by string literals."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass",
        "from enum import Enum",
        "",
        f"FORMAT_NAME = {fmt['name']!r}",
        f"FORMAT_VERSION = {fmt['version']!r}",
        f"VERSIONS_READ = {tuple(fmt['versions_read'])!r}",
        "",
        "# format 2's directory layout",
        f"META_FILE = {layout['meta']!r}",
        f"END_FILE = {layout['end']!r}",
        f"SEGMENT_DIGITS = {layout['segment_digits']!r}",
        f"SEGMENT_SUFFIX = {layout['segment_suffix']!r}",
        f"PARTIAL_SUFFIX = {layout['partial_suffix']!r}",
        f"SEGMENT_SECONDS = {layout['segment_seconds']!r}",
        f"SEGMENT_ROWS = {layout['segment_rows']!r}",
        "",
    ]
    for name, constant in sorted(schema["constants"].items()):
        lines.append(f"{name} = {constant['value']:#x}  # {constant['doc']}" if name == "TASK_DEAD"
                     else f"{name} = {constant['value']!r}  # {constant['doc']}")
    lines += ["", "# enum event_type: the record types BPF programs put in the ring buffer; `lost_event` values",
              "RECORDS: dict[str, int] = {"]
    lines += [f"    {name!r}: {number}," for name, number in schema["records"].items()]
    lines += ["}", ""]
    for table, spec in schema["names"].items():
        lines.append(f"# {spec['doc']}")
        lines.append(f"{table.upper()}_NAMES: tuple[str, ...] = {tuple(spec['values'])!r}")
    lines += [
        "",
        "",
        "class Event(str, Enum):",
        '    """An event kind: one table in format 2, one `event` value in format 1."""',
        "",
    ]
    for kind in schema["kind"]:
        lines.append(f"    {enum_member(kind['name'])} = {kind['name']!r}")
    lines += [
        "",
        "    def __str__(self) -> str:",
        "        return self.value",
        "",
        "",
        "@dataclass(frozen=True)",
        "class Column:",
        '    """One column of a kind: its Arrow type, whether it may be null or absent, and its meaning."""',
        "",
        "    name: str",
        "    type: str",
        "    nullable: bool",
        "    optional: bool",
        "    role: str | None",
        "    encoding: str",
        "    doc: str",
        "",
        "",
        "# the wire record each kind is decoded from (None: made by the recorder in user space)",
        "KIND_RECORD: dict[Event, str | None] = {",
    ]
    lines += [f"    Event.{enum_member(k['name'])}: {k.get('record')!r}," for k in schema["kind"]]
    lines += ["}", "", "# the kinds the CUPTI collector sends (--gpu-activity), by their frame id on its channel",
              "COLLECTOR_FRAMES: dict[Event, int] = {"]
    lines += [f"    Event.{enum_member(name)}: {number}," for name, number in schema["collector"]["frames"].items()]
    lines += ["}", "", "# the kinds of GPU activity (--gpu-activity): what CUPTI saw, not what a host CPU did",
              "GPU_ACTIVITY_KINDS: frozenset[Event] = frozenset((",]
    lines += [f"    Event.{enum_member(name)}," for name in schema["collector"]["frames"] if name != "lost"]
    lines += ["))", "# the kinds of host events: every kind but GPU activity, lost rows and those that describe the",
              "# tasks (their cgroups); each has pid, tid and cpu",
              "HOST_KINDS: tuple[Event, ...] = ("]
    lines += [f"    Event.{enum_member(k['name'])}," for k in schema["kind"]
              if k["name"] not in schema["collector"]["frames"] and k["name"] != "lost"
              and not k.get("describes_tasks")]
    lines += [")", "", "KIND_DOC: dict[Event, str] = {"]
    lines += [f"    Event.{enum_member(k['name'])}: {k['doc']!r}," for k in schema["kind"]]
    lines += ["}", "", "KIND_COLUMNS: dict[Event, tuple[Column, ...]] = {"]
    for kind in schema["kind"]:
        lines.append(f"    Event.{enum_member(kind['name'])}: (")
        for c in kind_columns(schema, kind):
            lines.append(f"        Column({c['name']!r}, {c['type']!r}, {c['nullable']!r}, {c['optional']!r}, "
                         f"{c['role']!r}, {c['encoding']!r},")
            lines.append(f"               {c['doc']!r}),")
        lines.append("    ),")
    lines += ["}", "", "# every column's Arrow type (one type wherever it appears)", "COLUMN_TYPES: dict[str, str] = {"]
    lines += [f"    {name!r}: {schema['columns'][name]['type']!r}," for name in schema["format1"]["columns"]]
    lines += ["}", "", "# format 1: one wide table, these columns in this order", "FORMAT1_COLUMNS: tuple[str, ...] = ("]
    lines += [f"    {name!r}," for name in schema["format1"]["columns"]]
    lines += [")", "# the columns format 1 began with (a file without one is damaged)",
              "FORMAT1_ORIGINAL: frozenset[str] = frozenset((",]
    lines += [f"    {name!r}," for name in schema["format1"]["original"]]
    lines += ["))", "# format 1's closing row (format 2: END_FILE)",
              f"FORMAT1_END_EVENT = {schema['end']['format1_event']!r}", "",
              "# the closing summary's keys", "END_KEYS: dict[str, str] = {"]
    lines += [f"    {key!r}: {doc!r}," for key, doc in schema["end"]["keys"].items()]
    lines += ["}", ""]
    return "\n".join(lines)


# --- the documentation's tables ---------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def doc_kinds(schema: dict) -> str:
    rows = ["| kind | from | what |", "|---|---|---|"]
    for kind in schema["kind"]:
        frame = schema["collector"]["frames"].get(kind["name"])
        source = (f"record `{kind['record']}`" if kind.get("record") else
                  f"the CUPTI collector (frame {frame})" if frame and kind["name"] != "lost" else
                  "the recorder (user space)")
        if kind.get("variant"):
            source += f" ({kind['variant']})"
        rows.append(f"| `{kind['name']}` | {source} | {_cell(kind['doc'])} |")
    return "\n".join(rows)


def doc_columns(schema: dict) -> str:
    parts = []
    for kind in schema["kind"]:
        parts.append(f"#### `{kind['name']}`\n")
        parts.append("| column | type | null | meaning |")
        parts.append("|---|---|---|---|")
        for c in kind_columns(schema, kind):
            null = "optional" if c["optional"] else "yes" if c["nullable"] else "no"
            parts.append(f"| `{c['name']}` | {c['type']} | {null} | {_cell(c['doc'])} |")
        parts.append("")
    return "\n".join(parts).rstrip()


def doc_names(schema: dict) -> str:
    rows = ["| table | values (by number, from 0) |", "|---|---|"]
    for table, spec in schema["names"].items():
        rows.append(f"| {table}: {_cell(spec['doc'])} | {' '.join(f'`{v}`' for v in spec['values'])} |")
    rows.append("")
    rows.append("| constant | value | meaning |")
    rows.append("|---|---|---|")
    for name, constant in sorted(schema["constants"].items()):
        value = f"{constant['value']:#x}" if name == "TASK_DEAD" else str(constant["value"])
        rows.append(f"| `{name}` | {value} | {_cell(constant['doc'])} |")
    rows.append("")
    rows.append("| record (enum event_type) | id |")
    rows.append("|---|---|")
    rows += [f"| `{name}` | {number} |" for name, number in schema["records"].items()]
    return "\n".join(rows)


def doc_end(schema: dict) -> str:
    rows = ["| key | meaning |", "|---|---|"]
    rows += [f"| `{key}` | {_cell(doc)} |" for key, doc in schema["end"]["keys"].items()]
    return "\n".join(rows)


DOC_SECTIONS = {"kinds": doc_kinds, "columns": doc_columns, "names": doc_names, "end": doc_end}


def fill_doc(doc: str, schema: dict) -> str:
    for name, make in DOC_SECTIONS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        if doc.count(begin) != 1 or doc.count(end) != 1:
            raise SchemaError(f"{DOC}: needs one `{begin}` and one `{end}`")
        head, rest = doc.split(begin, 1)
        _, tail = rest.split(end, 1)
        doc = f"{head}{begin}\n{make(schema)}\n{end}{tail}"
    return doc


# --- the collector's channel encoders (C) ------------------------------------------

C_TYPES = {"uint32": "uint32_t", "int32": "int32_t", "uint64": "uint64_t", "int64": "int64_t", "bool": "uint8_t",
           "utf8": "const char *"}
C_PUT = {"uint32": "lg_wire_u32", "int32": "lg_wire_i32", "uint64": "lg_wire_u64", "int64": "lg_wire_i64",
         "bool": "lg_wire_u8", "utf8": "lg_wire_str"}


def wire_header(schema: dict) -> str:
    collector = schema["collector"]
    kinds = {k["name"]: k for k in schema["kind"]}
    out = [
        "/* SPDX-License-Identifier: Apache-2.0 */",
        "/*",
        " * GENERATED from schema/trace.toml by scripts/gen_schema.py: do not edit.",
        " *",
        " * The CUPTI collector's channel to the recorder: one encoder per kind of row it sends",
        " * (schema/trace.toml's [collector] says the layout; the recorder's decoders are",
        " * generated from the same table by recorder/build/schema_codegen.rs).",
        " */",
        "#ifndef LAUNCHGAP_GPU_WIRE_H",
        "#define LAUNCHGAP_GPU_WIRE_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        f"#define LG_WIRE_MAX_FRAME {collector['max_frame']} /* header included */",
        f"#define LG_WIRE_MAX_STRING {collector['max_string']} /* longer strings are cut */",
        "#define LG_WIRE_HEADER 8 /* u32 payload length, u16 frame id, u16 zero */",
        "",
        "/* CUPTI's entry points the collector cannot work without */",
        "#define LG_CUPTI_REQUIRED " + ", ".join(f'"{name}"' for name in collector["cupti_required"]),
        "",
        "enum lg_frame {",
    ]
    out += [f"\tLG_FRAME_{name.upper()} = {number}," for name, number in collector["frames"].items()]
    out.append("};")
    for table, spec in schema["names"].items():
        values = ", ".join(f'"{v}"' for v in spec["values"])
        out += ["", f"/* {spec['doc']} */", f"static const char *const lg_{table}_names[] = {{{values}}};",
                f"#define LG_{table.upper()}_COUNT {len(spec['values'])}"]
    out += [
        "",
        "/* A cursor over a frame being written: `at` past the end means it did not fit. */",
        "struct lg_wire { uint8_t *out; size_t at, room; };",
        "",
        "static inline void lg_wire_bytes(struct lg_wire *w, const void *src, size_t n)",
        "{",
        "\tif (w->at + n <= w->room)",
        "\t\tmemcpy(w->out + w->at, src, n);",
        "\tw->at += n;",
        "}",
        "",
        "/* x86-64 is little-endian, as the channel is: values are copied as they lie */",
        "static inline void lg_wire_u8(struct lg_wire *w, uint8_t v) { lg_wire_bytes(w, &v, 1); }",
        "static inline void lg_wire_u16(struct lg_wire *w, uint16_t v) { lg_wire_bytes(w, &v, 2); }",
        "static inline void lg_wire_u32(struct lg_wire *w, uint32_t v) { lg_wire_bytes(w, &v, 4); }",
        "static inline void lg_wire_i32(struct lg_wire *w, int32_t v) { lg_wire_bytes(w, &v, 4); }",
        "static inline void lg_wire_u64(struct lg_wire *w, uint64_t v) { lg_wire_bytes(w, &v, 8); }",
        "static inline void lg_wire_i64(struct lg_wire *w, int64_t v) { lg_wire_bytes(w, &v, 8); }",
        "",
        "static inline void lg_wire_str(struct lg_wire *w, const char *s)",
        "{",
        "\tsize_t n = 0;",
        "\twhile (s && n < LG_WIRE_MAX_STRING && s[n]) /* strnlen, which GCC misjudges on short arrays */",
        "\t\tn++;",
        "\tlg_wire_u16(w, (uint16_t)n);",
        "\tlg_wire_bytes(w, s, n);",
        "}",
        "",
        "/* Starts a frame: its header, the length filled in by lg_wire_end. */",
        "static inline void lg_wire_begin(struct lg_wire *w, uint8_t *out, size_t room, enum lg_frame frame)",
        "{",
        "\tw->out = out, w->at = 0, w->room = room < LG_WIRE_MAX_FRAME ? room : LG_WIRE_MAX_FRAME;",
        "\tlg_wire_u32(w, 0);",
        "\tlg_wire_u16(w, (uint16_t)frame);",
        "\tlg_wire_u16(w, 0);",
        "}",
        "",
        "/* The frame's length in bytes, header included; 0 when it did not fit. */",
        "static inline size_t lg_wire_end(struct lg_wire *w)",
        "{",
        "\tuint32_t payload = (uint32_t)(w->at - LG_WIRE_HEADER);",
        "\tif (w->at > w->room)",
        "\t\treturn 0;",
        "\tmemcpy(w->out, &payload, 4);",
        "\treturn w->at;",
        "}",
    ]
    for name in collector["frames"]:
        columns = [c for c in kind_columns(schema, kinds[name]) if not c["optional"]]
        out += ["", f"/* a `{name}` row: {kinds[name]['doc'][:150]} */", f"struct lg_{name}_row {{"]
        for c in columns:
            if c["nullable"]:
                out.append(f"\tuint8_t has_{c['name']}; /* 0: null */")
            out.append(f"\t{C_TYPES[c['type']]} {c['name']};")
        out += ["};", "",
                f"/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */",
                f"static inline size_t lg_encode_{name}(uint8_t *out, size_t room, const struct lg_{name}_row *row)",
                "{", "\tstruct lg_wire w;", f"\tlg_wire_begin(&w, out, room, LG_FRAME_{name.upper()});"]
        for c in columns:
            put = f"{C_PUT[c['type']]}(&w, row->{c['name']});"
            if c["nullable"]:
                out += [f"\tlg_wire_u8(&w, row->has_{c['name']} ? 1 : 0);", f"\tif (row->has_{c['name']})",
                        f"\t\t{put}"]
            else:
                out.append(f"\t{put}")
        out += ["\treturn lg_wire_end(&w);", "}"]
    out += ["", "#endif /* LAUNCHGAP_GPU_WIRE_H */", ""]
    return "\n".join(out)


def generated(root: Path) -> dict[Path, str]:
    """What each generated file must hold, from ROOT's schema/trace.toml."""
    schema = load((root / SCHEMA).read_text())
    return {PYTHON_MODULE: python_module(schema), DOC: fill_doc((root / DOC).read_text(), schema),
            WIRE_HEADER: wire_header(schema)}


def differences(root: Path) -> list[str]:
    """One line per generated file that differs from what the schema makes (empty: they agree)."""
    out = []
    for path, text in generated(root).items():
        current = (root / path).read_text() if (root / path).exists() else ""
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), lineterm="", n=0))
            first = next((line for line in diff[2:] if line[:1] in "+-"), "")
            out.append(f"{path} differs from {SCHEMA} (first difference: {first[:160]!r}); run scripts/gen_schema.py")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file differs")
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        problems = differences(args.root)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for path, text in generated(args.root).items():
        (args.root / path).parent.mkdir(parents=True, exist_ok=True)
        (args.root / path).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
