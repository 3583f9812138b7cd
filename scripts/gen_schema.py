#!/usr/bin/env python3
"""The one generator: checks schema/trace.toml, the one definition of the trace, and
makes every file generated from it: the Python schema module, the tables of
docs/trace-format.md, the CUPTI collector's channel encoders (collector/gpu_wire.h),
and the recorder's BPF header and Rust modules (recorder/src/generated/). Each is
committed, so building the recorder (cargo) needs no Python.

    scripts/gen_schema.py            rewrite the generated files
    scripts/gen_schema.py --check    exit 1, naming each file that differs

tests/test_schema_agreement.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
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
# the first line of every generated file (the documentation's tables have BEGIN and END instead)
GENERATED_LINE = "generated from schema/trace.toml by scripts/gen_schema.py; do not edit"
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
    kinds = {k["name"]: k for k in schema["kind"]}
    for key, allowed in schema["collector"].get("values", {}).items():
        kind, _, column = key.partition(".")
        if kind not in frames or column not in kind_column_names(kinds[kind]) or columns[column]["type"] != "utf8":
            raise SchemaError(f"collector values {key!r}: not a text column of a kind the collector sends")
        if isinstance(allowed, str) and allowed not in schema["names"]:
            raise SchemaError(f"collector values {key!r}: no name table {allowed!r}")
    check_vocabularies(schema)
    check_ring_records(schema)


def is_subsequence(part: list, whole: list) -> bool:
    """Whether PART is WHOLE with some values left out, the rest in the same order."""
    rest = iter(whole)
    return all(value in rest for value in part)


def check_vocabularies(schema: dict) -> None:
    states = schema["thread_states"]
    if set(states["docs"]) != set(states["values"]) or len(set(states["values"])) != len(states["values"]):
        raise SchemaError("thread_states: every state once, each with its doc")
    for listed in ("waiting", "monitor"):
        if not set(states[listed]) <= set(states["values"]):
            raise SchemaError(f"thread_states.{listed}: names a state not in thread_states.values")
    if states["monitor"][0] != "unknown":
        raise SchemaError("thread_states.monitor: unknown must come first (number 0: a thread's zeroed counters)")
    classes = schema["gap_classes"]
    values, interference = classes["values"], classes["interference"]
    if set(classes["docs"]) != set(values) or len(set(values)) != len(values) or values[0] != "clean":
        raise SchemaError("gap_classes: every class once, each with its doc, clean first")
    # the kernel picks a gap's class as the analysis does, the first of equal largest: the same order
    if not is_subsequence(classes["monitor"], values) or classes["monitor"][0] != "clean":
        raise SchemaError("gap_classes.monitor: clean first, then classes in gap_classes.values' order")
    if classes["monitor_causes"][: len(interference)] != interference or not set(classes["monitor_causes"]) < set(
        values
    ):
        raise SchemaError("gap_classes.monitor_causes: the interference causes first, then other classes")
    if schema["names"]["gpu_idle_cause"]["values"][: len(interference)] != interference:
        raise SchemaError("names.gpu_idle_cause must begin with gap_classes.interference, in its order")
    check_cuda_apis(schema)
    longest = schema["constants"]["TASK_COMM_LEN"]["value"] - 1
    if any(len(name) > longest for name in schema["recorder"]["threads"].values()):
        raise SchemaError(f"recorder.threads: a name longer than a task's ({longest} bytes) would be cut in a trace")
    for key, spec in schema["meta"]["keys"].items():
        if not spec["type"] or not set(spec["type"]) <= JSON_TYPES:
            raise SchemaError(f"meta key {key}: types {spec['type']} are not some of {sorted(JSON_TYPES)}")


# the types a meta.json value may have, as JSON names them
JSON_TYPES = {"string", "integer", "number", "bool", "object", "array", "null"}
# what a driver entry point does -> the probes that can read its arguments
PROBES_BY_DOES = {"launch": {"launch", "launch_ex", "graph_launch"}, "sync": {"sync"}, "copy": {"memcpy"}}


def check_cuda_apis(schema: dict) -> None:
    apis = schema["cuda"]["apis"]
    by_name = {api["name"]: api for api in apis}
    if len(by_name) != len(apis):
        raise SchemaError("cuda.apis: an entry point is listed twice")
    layers = [api["layer"] for api in apis]
    if layers != sorted(layers) or set(layers) != {"driver", "runtime"}:
        raise SchemaError(
            "cuda.apis: the driver's entry points first (the monitor counts them by position), then the runtime's"
        )
    for api in apis:
        if api["does"] not in PROBES_BY_DOES:
            raise SchemaError(f"cuda.apis {api['name']}: does {api['does']!r} is not one of {sorted(PROBES_BY_DOES)}")
        if api["layer"] == "driver" and (api.get("probe") not in PROBES_BY_DOES[api["does"]] or "cupti" in api):
            raise SchemaError(
                f"cuda.apis {api['name']}: a driver entry point that does {api['does']} needs a probe "
                f"of {sorted(PROBES_BY_DOES[api['does']])} (and no cupti)"
            )
        if api["layer"] == "runtime" and ("probe" in api or not api.get("cupti")):
            raise SchemaError(f"cuda.apis {api['name']}: a runtime entry point has its cupti version, no probe")
        for suffix in schema["cuda"]["stream_variant_suffixes"]:
            base = by_name.get(api["name"].removesuffix(suffix))
            if api["name"].endswith(suffix) and (
                base is None
                or (base["layer"], base["does"], base.get("probe")) != (api["layer"], api["does"], api.get("probe"))
            ):
                raise SchemaError(f"cuda.apis {api['name']}: a stream variant of an entry point not listed alike")
    for name in schema["names"]["drain_api"]["values"]:
        if by_name.get(name, {}).get("layer") != "driver" or by_name[name]["does"] == "launch":
            raise SchemaError(f"names.drain_api {name}: not a probed driver sync or copy")


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
        out.append(
            {
                "name": name,
                "type": column["type"],
                "role": column.get("role"),
                "encoding": column.get("encoding", DEFAULT_ENCODING),
                "nullable": name not in kind["columns"],
                "optional": name in kind.get("optional", []),
                "doc": kind.get("notes", {}).get(name, column["doc"]),
            }
        )
    return out


def enum_member(name: str) -> str:
    return name.upper()


# --- the Python module ---------------------------------------------------------


def python_module(schema: dict) -> str:
    fmt, layout = schema["format"], schema["layout"]
    lines = [
        f"# {GENERATED_LINE}",
        '"""The trace\'s contract: event kinds, their columns, name tables and constants, the metadata\'s and the',
        "closing summary's keys; and the words shared beside it: thread states, launch-gap classes, the CUDA entry",
        "points probed, the recorder's thread names.",
        "",
        "Edit schema/trace.toml and run scripts/gen_schema.py (tests/test_schema_agreement.py",
        "fails while they differ). Code refers to event kinds through `Event`, never by string",
        'literals."""',
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
        lines.append(
            f"{name} = {constant['value']:#x}  # {constant['doc']}"
            if name == "TASK_DEAD"
            else f"{name} = {constant['value']!r}  # {constant['doc']}"
        )
    lines += [
        "",
        "# enum event_type: the record types BPF programs put in the ring buffer; `lost_event` values",
        "RECORDS: dict[str, int] = {",
    ]
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
    lines += [
        "}",
        "",
        "# the kinds the CUPTI collector sends (--gpu-activity), by their frame id on its channel",
        "COLLECTOR_FRAMES: dict[Event, int] = {",
    ]
    lines += [f"    Event.{enum_member(name)}: {number}," for name, number in schema["collector"]["frames"].items()]
    lines += [
        "}",
        "",
        "# the kinds of GPU activity (--gpu-activity): what CUPTI saw, not what a host CPU did",
        "GPU_ACTIVITY_KINDS: frozenset[Event] = frozenset((",
    ]
    lines += [f"    Event.{enum_member(name)}," for name in schema["collector"]["frames"] if name != "lost"]
    lines += [
        "))",
        "# the kinds of host events: every kind but GPU activity, lost rows and those that describe the",
        "# tasks (their cgroups); each has pid, tid and cpu",
        "HOST_KINDS: tuple[Event, ...] = (",
    ]
    lines += [
        f"    Event.{enum_member(k['name'])},"
        for k in schema["kind"]
        if k["name"] not in schema["collector"]["frames"] and k["name"] != "lost" and not k.get("describes_tasks")
    ]
    lines += [")", "", "KIND_DOC: dict[Event, str] = {"]
    lines += [f"    Event.{enum_member(k['name'])}: {k['doc']!r}," for k in schema["kind"]]
    lines += ["}", "", "KIND_COLUMNS: dict[Event, tuple[Column, ...]] = {"]
    for kind in schema["kind"]:
        lines.append(f"    Event.{enum_member(kind['name'])}: (")
        for c in kind_columns(schema, kind):
            lines.append(
                f"        Column({c['name']!r}, {c['type']!r}, {c['nullable']!r}, {c['optional']!r}, "
                f"{c['role']!r}, {c['encoding']!r},"
            )
            lines.append(f"               {c['doc']!r}),")
        lines.append("    ),")
    lines += ["}", "", "# every column's Arrow type (one type wherever it appears)", "COLUMN_TYPES: dict[str, str] = {"]
    lines += [f"    {name!r}: {schema['columns'][name]['type']!r}," for name in schema["format1"]["columns"]]
    lines += [
        "}",
        "",
        "# format 1: one wide table, these columns in this order",
        "FORMAT1_COLUMNS: tuple[str, ...] = (",
    ]
    lines += [f"    {name!r}," for name in schema["format1"]["columns"]]
    lines += [
        ")",
        "# the columns format 1 began with (a file without one is damaged)",
        "FORMAT1_ORIGINAL: frozenset[str] = frozenset((",
    ]
    lines += [f"    {name!r}," for name in schema["format1"]["original"]]
    lines += [
        "))",
        "# format 1's closing row (format 2: END_FILE)",
        f"FORMAT1_END_EVENT = {schema['end']['format1_event']!r}",
        "",
        "# the closing summary's keys",
        "END_KEYS: dict[str, str] = {",
    ]
    lines += [f"    {key!r}: {doc!r}," for key, doc in schema["end"]["keys"].items()]
    lines += ["}", ""]
    meta = schema["meta"]["keys"]
    lines += python_names_class(
        "MetaKey",
        "A key of the metadata (meta.json)",
        list(meta),
        {key: spec.get("written_by", "") and f"written by {spec['written_by']} only" for key, spec in meta.items()},
    )
    lines += [
        "",
        "",
        "# the metadata's keys whose value's type the reader checks (the analysis relies on them): the JSON",
        "# types each may have",
        "META_CHECKED_TYPES: dict[str, tuple[str, ...]] = {",
    ]
    lines += [
        f"    MetaKey.{enum_member(key)}: {tuple(spec['type'])!r}," for key, spec in meta.items() if spec.get("checked")
    ]
    lines += ["}", "", ""]
    recorder = schema["recorder"]
    lines += [
        "# the recorder's binary (its main thread's name, which its unnamed threads inherit) and the threads it",
        "# names itself",
        f"RECORDER_BINARY = {recorder['binary']!r}",
        f"RECORDER_THREADS: tuple[str, ...] = {tuple(recorder['threads'].values())!r}",
        "",
        "",
    ]
    lines += python_vocabularies(schema)
    return "\n".join(lines)


def python_names_class(name: str, what: str, values: list[str], docs: dict[str, str]) -> list[str]:
    """A class of string constants, one a value, for code to name each value without a literal."""
    lines = ["", "", f"class {name}:", f'    """{what}, for code to name one."""', ""]
    lines += [
        f"    {enum_member(value)} = {value!r}" + (f"  # {docs[value]}" if docs[value] else "") for value in values
    ]
    return lines


def python_vocabularies(schema: dict) -> list[str]:
    states, classes = schema["thread_states"], schema["gap_classes"]
    lines = [
        "# thread states: where a thread is, by its own switches and wakeups; the analysis numbers its",
        "# segments in this order",
        f"THREAD_STATES: tuple[str, ...] = {tuple(states['values'])!r}",
        "# waiting for a CPU another task holds: who ran instead is the culprit",
        f"WAITING_STATES: tuple[str, ...] = {tuple(states['waiting'])!r}",
    ]
    lines += python_names_class("ThreadState", "A thread state (THREAD_STATES)", states["values"], states["docs"])
    lines += [
        "",
        "",
        "# launch-gap classes: the cause that took the most time inside a gap (the first of equal largest,",
        "# in this order), clean when none took any",
        f"GAP_CLASSES: tuple[str, ...] = {tuple(classes['values'])!r}",
        "# interference: another task's or an interrupt's doing, what isolating the workload would remove",
        f"INTERFERENCE_CAUSES: tuple[str, ...] = {tuple(classes['interference'])!r}",
    ]
    lines += python_names_class("GapClassName", "A launch-gap class (GAP_CLASSES)", classes["values"], classes["docs"])
    cuda = schema["cuda"]
    lines += [
        "",
        "",
        "@dataclass(frozen=True)",
        "class CudaApi:",
        '    """A CUDA entry point launchgap probes: its library (driver or runtime) and what it does (launch, sync,',
        '    or copy: a synchronous copy, which waits as a sync does)."""',
        "",
        "    name: str",
        "    layer: str",
        "    does: str",
        "",
        "",
        "# the CUDA entry points launchgap probes, in the order that numbers them (a record's api id is the",
        "# position plus one), the driver's first",
        "CUDA_APIS: tuple[CudaApi, ...] = (",
    ]
    lines += [f"    CudaApi({api['name']!r}, {api['layer']!r}, {api['does']!r})," for api in cuda["apis"]]
    lines += [
        ")",
        "# the runtime's launch entry points: a runtime_only row of one with a nonzero return code is a launch",
        "# attempt that failed before the driver",
        "RUNTIME_LAUNCH_APIS: tuple[str, ...] = (",
    ]
    lines += [f"    {api['name']!r}," for api in cuda["apis"] if api["layer"] == "runtime" and api["does"] == "launch"]
    lines += [
        ")",
        "# the suffixes of the per-thread default stream's variants: the same API path as the entry point named",
        "# without it",
        f"STREAM_VARIANT_SUFFIXES: tuple[str, ...] = {tuple(cuda['stream_variant_suffixes'])!r}",
        "",
    ]
    return lines


# --- the documentation's tables ---------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def doc_kinds(schema: dict) -> str:
    rows = ["| kind | from | what |", "|---|---|---|"]
    for kind in schema["kind"]:
        frame = schema["collector"]["frames"].get(kind["name"])
        source = (
            f"record `{kind['record']}`"
            if kind.get("record")
            else f"the CUPTI collector (frame {frame})"
            if frame and kind["name"] != "lost"
            else "the recorder (user space)"
        )
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


def doc_meta(schema: dict) -> str:
    rows = ["| key | type | written by | meaning |", "|---|---|---|---|"]
    rows += [
        f"| `{key}` | {' or '.join(spec['type'])} | {spec.get('written_by', 'the recorder')} | {_cell(spec['doc'])} |"
        for key, spec in schema["meta"]["keys"].items()
    ]
    return "\n".join(rows)


def doc_end(schema: dict) -> str:
    rows = ["| key | meaning |", "|---|---|"]
    rows += [f"| `{key}` | {_cell(doc)} |" for key, doc in schema["end"]["keys"].items()]
    return "\n".join(rows)


DOC_SECTIONS = {"meta": doc_meta, "kinds": doc_kinds, "columns": doc_columns, "names": doc_names, "end": doc_end}


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

C_TYPES = {
    "uint32": "uint32_t",
    "int32": "int32_t",
    "uint64": "uint64_t",
    "int64": "int64_t",
    "bool": "uint8_t",
    "utf8": "const char *",
}
C_PUT = {
    "uint32": "lg_wire_u32",
    "int32": "lg_wire_i32",
    "uint64": "lg_wire_u64",
    "int64": "lg_wire_i64",
    "bool": "lg_wire_u8",
    "utf8": "lg_wire_str",
}


def wire_header(schema: dict) -> str:
    collector = schema["collector"]
    kinds = {k["name"]: k for k in schema["kind"]}
    out = [
        f"/* {GENERATED_LINE} */",
        "/* SPDX-License-Identifier: Apache-2.0 */",
        "/*",
        " * The CUPTI collector's channel to the recorder: one encoder per kind of row it sends",
        " * (schema/trace.toml's [collector] says the layout; the recorder's decoders are",
        " * generated from the same table: recorder/src/generated/trace_schema.rs).",
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
        f"#define LG_WIRE_FILE_BYTES {collector['file_bytes']}u /* a new file once one holds this many */",
        f"#define LG_WIRE_STAGING_BYTES {collector['staging_bytes']}u /* written whole: past file_bytes by at most this */",
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
        out += [
            "",
            f"/* {spec['doc']} */",
            f"static const char *const lg_{table}_names[] = {{{values}}};",
            f"#define LG_{table.upper()}_COUNT {len(spec['values'])}",
        ]
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
        out += [
            "};",
            "",
            "/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */",
            f"static inline size_t lg_encode_{name}(uint8_t *out, size_t room, const struct lg_{name}_row *row)",
            "{",
            "\tstruct lg_wire w;",
            f"\tlg_wire_begin(&w, out, room, LG_FRAME_{name.upper()});",
        ]
        for c in columns:
            put = f"{C_PUT[c['type']]}(&w, row->{c['name']});"
            if c["nullable"]:
                out += [
                    f"\tlg_wire_u8(&w, row->has_{c['name']} ? 1 : 0);",
                    f"\tif (row->has_{c['name']})",
                    f"\t\t{put}",
                ]
            else:
                out.append(f"\t{put}")
        out += ["\treturn lg_wire_end(&w);", "}"]
    out += ["", "#endif /* LAUNCHGAP_GPU_WIRE_H */", ""]
    return "\n".join(out)


# --- the recorder's BPF header and Rust modules ------------------------------------
# (committed under recorder/src/generated/: the recorder builds with cargo alone, no Python)

RECORDER_GENERATED = Path("recorder/src/generated")
TRACE_C_HEADER = RECORDER_GENERATED / "trace_schema.h"
TRACE_RUST_MODULE = RECORDER_GENERATED / "trace_schema.rs"
NAMES_RUST_MODULE = RECORDER_GENERATED / "trace_names.rs"
# (Rust value type, Arrow builder, ArrowType variant) of each schema type
RUST_TYPES = {
    "uint32": ("u32", "UInt32Builder", "UInt32"),
    "uint64": ("u64", "UInt64Builder", "UInt64"),
    "int32": ("i32", "Int32Builder", "Int32"),
    "int64": ("i64", "Int64Builder", "Int64"),
    "bool": ("bool", "BooleanBuilder", "Boolean"),
    "utf8": ("&'a str", "StringBuilder", "Utf8"),
}
RUST_READS = {
    "uint32": "r.u32()",
    "int32": "r.i32()",
    "uint64": "r.u64()",
    "int64": "r.i64()",
    "bool": "r.bool()",
    "utf8": "r.str()",
}


def rust_str(text: str) -> str:
    """TEXT as a Rust string literal (what Rust's `{:?}` prints)."""
    escaped = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return '"' + "".join(escaped.get(c, c if c.isprintable() else f"\\u{{{ord(c):x}}}") for c in text) + '"'


def rust_list(values) -> str:
    """A list of strings as Rust's `{:?}` prints a Vec<String>."""
    return "[" + ", ".join(rust_str(v) for v in values) + "]"


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def written_columns(schema: dict, kind: dict) -> list[dict]:
    """The columns the recorder writes for KIND: optional ones are for other sources."""
    return [c for c in kind_columns(schema, kind) if not c["optional"]]


def row_type(schema: dict, kind: dict) -> str:
    lifetime = "<'a>" if any(c["type"] == "utf8" for c in written_columns(schema, kind)) else ""
    return f"{camel(kind['name'])}Row{lifetime}"


def records_by_id(schema: dict) -> list[tuple[str, int]]:
    return sorted(schema["records"].items(), key=lambda item: item[1])


def trace_c_header(schema: dict) -> str:
    """trace_schema.h: the record types, the name tables' C enums and the constants, for the BPF programs."""
    out = [
        f"/* {GENERATED_LINE} */",
        "/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */",
        "#ifndef LAUNCHGAP_TRACE_SCHEMA_H",
        "#define LAUNCHGAP_TRACE_SCHEMA_H",
        "",
    ]
    for name, constant in sorted(schema["constants"].items()):
        out += [f"/* {constant['doc']} */", f"#define {name} {constant['value']}"]
    out += ["", "/* the record types BPF programs put in the ring buffer */", "enum event_type {"]
    records = records_by_id(schema)
    out += [f"\tEVENT_{name.upper()} = {number}," for name, number in records]
    out += [f"\tEVENT_TYPE_COUNT = {max(n for _, n in records) + 1},", "};"]
    for _, spec in sorted(schema["names"].items()):
        if "c_enum" not in spec:
            continue
        out += ["", f"/* {spec['doc']} */", f"enum {spec['c_enum']} {{"]
        out += [f"\t{spec['c_prefix']}{value} = {i}," for i, value in enumerate(spec["values"])]
        if "c_count" in spec:
            out.append(f"\t{spec['c_count']} = {len(spec['values'])},")
        out.append("};")
        if "c_x_macro" in spec:
            entries = " ".join(f"X(arg, {value}, {value.lower()})" for value in spec["values"])
            out += [
                f"/* X(arg, NAME, name) for each, arg passed through: {spec['c_prefix']}NAME its enum member, name its "
                "tracepoints' prefix */",
                f"#define {spec['c_x_macro']}(X, arg) {entries}",
            ]
    out += ["", "#endif /* LAUNCHGAP_TRACE_SCHEMA_H */", ""]
    return "\n".join(out)


def rust_name_tables(schema: dict) -> list[str]:
    """The name tables as Rust constants, in trace_names.rs (the library's; trace_schema.rs, the recorder
    binary's, takes them from there)."""
    out = []
    for table, spec in sorted(schema["names"].items()):
        out += [
            f"/// {spec['doc']}",
            f"pub const {table.upper()}_NAMES: [&str; {len(spec['values'])}] = {rust_list(spec['values'])};",
        ]
    tables = [f"({rust_str(table)}, &{table.upper()}_NAMES)" for table in sorted(schema["names"])]
    out += [
        "/// Every name table, by name.",
        f"pub const NAME_TABLES: [(&str, &[&str]); {len(tables)}] = [{', '.join(tables)}];",
    ]
    return out


def names_rust_module(schema: dict) -> str:
    return "\n".join([f"// {GENERATED_LINE}", "", *rust_name_tables(schema), ""])


def trace_rust_module(schema: dict) -> str:
    """trace_schema.rs: record ids, name tables, event kinds, one row type and one Arrow builder per kind,
    the collector channel's decoders and format 1's wide builder (the recorder's src/schema.rs includes it)."""
    fmt, layout, kinds = schema["format"], schema["layout"], schema["kind"]
    w = [
        f"// {GENERATED_LINE}",
        "",
        f"pub const FORMAT_NAME: &str = {rust_str(fmt['name'])};",
        f"pub const FORMAT_VERSION: u32 = {fmt['version']};",
        f"pub const META_FILE: &str = {rust_str(layout['meta'])};",
        f"pub const END_FILE: &str = {rust_str(layout['end'])};",
        f"pub const SEGMENT_DIGITS: usize = {layout['segment_digits']};",
        f"pub const SEGMENT_SUFFIX: &str = {rust_str(layout['segment_suffix'])};",
        f"pub const PARTIAL_SUFFIX: &str = {rust_str(layout['partial_suffix'])};",
        f"pub const SEGMENT_SECONDS: u64 = {layout['segment_seconds']};",
        f"pub const SEGMENT_ROWS: usize = {layout['segment_rows']};",
        f"pub const FORMAT1_END_EVENT: &str = {rust_str(schema['end']['format1_event'])};",
    ]
    constants = sorted(schema["constants"].items())
    for name, constant in constants:
        w += [f"/// {constant['doc']}", f"pub const {name}: u32 = {constant['value']};"]
    listed = ", ".join(f"({rust_str(name)}, {name})" for name, _ in constants)
    w += ["/// Every constant, by name.", f"pub const CONSTANTS: [(&str, u32); {len(constants)}] = [{listed}];"]

    records = records_by_id(schema)
    count = max(n for _, n in records) + 1
    w += ["", "/// enum event_type: the record types BPF programs put in the ring buffer.", "pub mod record {"]
    w += [f"    pub const {name.upper()}: u32 = {number};" for name, number in records]
    w += [f"    pub const COUNT: u32 = {count};", "}"]
    names = ["unknown"] * count
    for name, number in records:
        names[number] = name
    w += [
        "/// The name of each record type (`lost_event` values), by id.",
        f"pub const RECORD_NAMES: [&str; {count}] = {rust_list(names)};",
    ]
    w += [
        "/// The name tables: the library's (trace_names.rs), written once.",
        "pub use launchgap_record::schema_names::*;",
    ]

    # event kinds
    every_kind = [f"Kind::{camel(k['name'])}" for k in kinds]
    w += [
        "",
        "/// An event kind: one table in format 2, one `event` value in format 1.",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]",
        "pub enum Kind {",
    ]
    w += [f"    {camel(k['name'])}," for k in kinds]
    w += [
        "}",
        "",
        "impl Kind {",
        f"    pub const ALL: [Kind; {len(kinds)}] = [{', '.join(every_kind)}];",
        "    pub const fn name(self) -> &'static str {",
        "        match self {",
    ]
    w += [f"            Kind::{camel(k['name'])} => {rust_str(k['name'])}," for k in kinds]
    w += [
        "        }",
        "    }",
        "",
        "    /// The columns of the kind's table (format 2), in order.",
        "    pub fn columns(self) -> &'static [ColumnSpec] {",
        "        KIND_COLUMNS[self as usize]",
        "    }",
        "",
        "    /// The kind a wakeup record of this variant (enum wakeup_variant) is.",
        "    pub fn of_wakeup_variant(variant: u32) -> Option<Kind> {",
        "        match variant {",
    ]
    variants = schema["names"]["wakeup_variant"]["values"]
    w += [
        f"            {variants.index(k['variant'])} => Some(Kind::{camel(k['name'])}),"
        for k in kinds
        if k.get("variant")
    ]
    w += [
        "            _ => None,",
        "        }",
        "    }",
        "",
        "    /// The record type the kind is decoded from (None: made in user space).",
        "    pub const fn record(self) -> Option<u32> {",
        "        match self {",
    ]
    w += [
        f"            Kind::{camel(k['name'])} => Some(record::{k['record'].upper()}),"
        if k.get("record")
        else f"            Kind::{camel(k['name'])} => None,"
        for k in kinds
    ]
    w += ["        }", "    }", "}", ""]

    # column specs
    def spec(name: str, arrow: str, nullable: bool, optional: bool, role: str | None, encoding: str) -> str:
        role_text = f"Some({rust_str(role)})" if role else "None"
        return (
            f"ColumnSpec {{ name: {rust_str(name)}, arrow: ArrowType::{RUST_TYPES[arrow][2]}, "
            f"nullable: {str(nullable).lower()}, optional: {str(optional).lower()}, role: {role_text}, "
            f"encoding: ColumnEncoding::{camel(encoding)} }}"
        )

    w += [
        "/// Each kind's columns (format 2), by Kind as usize; optional ones last written by other sources.",
        f"pub const KIND_COLUMNS: [&[ColumnSpec]; {len(kinds)}] = [",
    ]
    for kind in kinds:
        w.append("    &[")
        w += [
            f"        {spec(c['name'], c['type'], c['nullable'], c['optional'], c['role'], c['encoding'])},"
            for c in kind_columns(schema, kind)
        ]
        w.append("    ],")
    w += [
        "];",
        "",
        "/// Format 1's wide table: every column, nullable but ts_ns and event.",
        "pub const FORMAT1_COLUMNS: &[ColumnSpec] = &[",
    ]
    wide = [(name, schema["columns"][name]["type"]) for name in schema["format1"]["columns"]]
    w += [f"    {spec(name, arrow, name not in ('ts_ns', 'event'), False, None, 'plain')}," for name, arrow in wide]
    w += ["];", ""]

    # rows
    for kind in kinds:
        w += [
            f"/// A `{kind['name']}` row; `None` is null.",
            "#[derive(Clone, Copy, Debug, Default, PartialEq)]",
            f"pub struct {row_type(schema, kind)} {{",
        ]
        for c in written_columns(schema, kind):
            rust = RUST_TYPES[c["type"]][0]
            w.append(f"    pub {c['name']}: {f'Option<{rust}>' if c['nullable'] else rust},")
        w += ["}", ""]
    w += ["/// One event of any kind.", "#[derive(Clone, Copy, Debug, PartialEq)]", "pub enum Row<'a> {"]
    w += [f"    {camel(k['name'])}({row_type(schema, k)})," for k in kinds]
    w += ["}", "", "impl Row<'_> {", "    pub fn kind(&self) -> Kind {", "        match self {"]
    w += [f"            Row::{camel(k['name'])}(_) => Kind::{camel(k['name'])}," for k in kinds]
    w += ["        }", "    }", "", "    pub fn ts_ns(&self) -> u64 {", "        match self {"]
    w += [f"            Row::{camel(k['name'])}(r) => r.ts_ns," for k in kinds]
    w += ["        }", "    }", "}", ""]

    # per-kind builders (format 2)
    for kind in kinds:
        name, columns = camel(kind["name"]), written_columns(schema, kind)
        w += [f"/// Arrow arrays of `{kind['name']}` rows.", f"pub struct {name}Builder {{"]
        w += [f"    {c['name']}: {RUST_TYPES[c['type']][1]}," for c in columns]
        w += ["}", "", f"impl {name}Builder {{", "    pub fn new() -> Self {", "        Self {"]
        w += [f"            {c['name']}: {RUST_TYPES[c['type']][1]}::new()," for c in columns]
        lifetime = "<'_>" if any(c["type"] == "utf8" for c in columns) else ""
        w += ["        }", "    }", "", f"    pub fn append(&mut self, row: &{name}Row{lifetime}) {{"]
        w += [
            f"        self.{c['name']}.{'append_option' if c['nullable'] else 'append_value'}(row.{c['name']});"
            for c in columns
        ]
        w += [
            "    }",
            "",
            "    pub fn len(&self) -> usize {",
            f"        self.{columns[0]['name']}.len()",
            "    }",
            "",
            "    /// The arrays of the rows appended since the last finish, in column order.",
            "    pub fn finish(&mut self) -> Vec<ArrayRef> {",
            "        vec![",
        ]
        w += [f"            Arc::new(self.{c['name']}.finish()) as ArrayRef," for c in columns]
        w += ["        ]", "    }", "}", ""]
    w += ["/// One builder per kind.", "pub struct KindBuilders {"]
    w += [f"    pub {k['name']}: {camel(k['name'])}Builder," for k in kinds]
    w += ["}", "", "impl KindBuilders {", "    pub fn new() -> Self {", "        Self {"]
    w += [f"            {k['name']}: {camel(k['name'])}Builder::new()," for k in kinds]
    w += ["        }", "    }", "", "    pub fn push(&mut self, row: &Row) {", "        match row {"]
    w += [f"            Row::{camel(k['name'])}(r) => self.{k['name']}.append(r)," for k in kinds]
    w += ["        }", "    }", "", "    pub fn len(&self, kind: Kind) -> usize {", "        match kind {"]
    w += [f"            Kind::{camel(k['name'])} => self.{k['name']}.len()," for k in kinds]
    w += [
        "        }",
        "    }",
        "",
        "    pub fn finish(&mut self, kind: Kind) -> Vec<ArrayRef> {",
        "        match kind {",
    ]
    w += [f"            Kind::{camel(k['name'])} => self.{k['name']}.finish()," for k in kinds]
    w += ["        }", "    }", "}", ""]

    # the collector channel's decoders
    collector = schema["collector"]
    frames = sorted(collector["frames"].items(), key=lambda item: item[1])
    required = collector["cupti_required"]
    w += [
        "/// The collector channel's largest frame, header included ([collector] max_frame).",
        f"pub const COLLECTOR_MAX_FRAME: usize = {collector['max_frame']};",
        "/// CUPTI's entry points the collector cannot work without.",
        f"pub const CUPTI_REQUIRED: [&str; {len(required)}] = {rust_list(required)};",
        "/// The collector channel's frames: (kind, frame id).",
        f"pub const COLLECTOR_FRAMES: [(&str, u16); {len(frames)}] = "
        f"[{', '.join(f'({rust_str(name)}, {number})' for name, number in frames)}];",
        "/// The collector channel's frame ids ([collector] frames), by kind.",
        "pub mod collector_frame {",
    ]
    w += [f"    pub const {name.upper()}: u16 = {number};" for name, number in frames]
    w += [
        "}",
        "",
        "/// No collector file grows past this many bytes ([collector] file_bytes + staging_bytes).",
        f"pub const COLLECTOR_MAX_FILE: u64 = {collector['file_bytes'] + collector['staging_bytes']};",
        "",
    ]
    w += collector_refusal_rust(schema)
    w += [
        "/// Decodes a collector frame's payload into its row: None for an unknown frame id, a",
        "/// payload too short or too long for its kind, a flag byte other than 0 or 1, or text that is not UTF-8.",
        "pub fn decode_collector_frame(frame: u16, payload: &[u8]) -> Option<Row<'_>> {",
        "    let mut r = WireReader::new(payload);",
        "    let row = match frame {",
    ]
    by_name = {k["name"]: k for k in kinds}
    for name, number in frames:
        w.append(f"        {number} => Row::{camel(name)}({camel(name)}Row {{")
        for c in written_columns(schema, by_name[name]):
            read = RUST_READS[c["type"]]
            w.append(
                f"            {c['name']}: if r.present()? {{ Some({read}?) }} else {{ None }},"
                if c["nullable"]
                else f"            {c['name']}: {read}?,"
            )
        w.append("        }),")
    w += ["        _ => return None,", "    };", "    r.is_empty().then_some(row)", "}", ""]

    # format 1: the wide builder
    w += ["/// Format 1's wide table: one row per event, the columns a kind lacks null.", "pub struct WideBuilders {"]
    w += [f"    {name}: {RUST_TYPES[arrow][1]}," for name, arrow in wide]
    w += ["}", "", "impl WideBuilders {", "    pub fn new() -> Self {", "        Self {"]
    w += [f"            {name}: {RUST_TYPES[arrow][1]}::new()," for name, arrow in wide]
    w += ["        }", "    }", "", "    pub fn push(&mut self, row: &Row) {", "        match row {"]
    for kind in kinds:
        w.append(f"            Row::{camel(kind['name'])}(r) => {{")
        written = {c["name"]: c for c in written_columns(schema, kind)}
        for name, _ in wide:
            if name == "event":
                w.append(f"                self.event.append_value({rust_str(kind['name'])});")
            elif name not in written:
                w.append(f"                self.{name}.append_null();")
            elif written[name]["nullable"]:
                w.append(f"                self.{name}.append_option(r.{name});")
            else:
                w.append(f"                self.{name}.append_value(r.{name});")
        w.append("            }")
    w += [
        "        }",
        "    }",
        "",
        "    /// Format 1's closing row: its detail is the closing summary's JSON.",
        "    pub fn push_end(&mut self, ts_ns: u64, detail: &str) {",
    ]
    closing = {
        "ts_ns": "        self.ts_ns.append_value(ts_ns);",
        "event": "        self.event.append_value(FORMAT1_END_EVENT);",
        "detail": "        self.detail.append_value(detail);",
    }
    w += [closing.get(name, f"        self.{name}.append_null();") for name, _ in wide]
    w += [
        "    }",
        "",
        "    pub fn len(&self) -> usize {",
        "        self.ts_ns.len()",
        "    }",
        "",
        "    pub fn finish(&mut self) -> Vec<ArrayRef> {",
        "        vec![",
    ]
    w += [f"            Arc::new(self.{name}.finish()) as ArrayRef," for name, _ in wide]
    w += ["        ]", "    }", "}", ""]
    return "\n".join(w)


def collector_refusal_rust(schema: dict) -> list[str]:
    """`collector_frame_refusal`: what a decoded frame may not say ([collector] values; a pid not its file's)."""
    collector = schema["collector"]
    kinds = {k["name"]: k for k in schema["kind"]}
    frames = sorted(collector["frames"].items(), key=lambda item: item[1])
    w = [
        "/// Why ROW, decoded from a frame in the channel file of process FILE_PID, is not one that process's",
        "/// collector sends ([collector] values; a `pid` that is not the file's); None when it may be.",
        "pub fn collector_frame_refusal(row: &Row, file_pid: u32) -> Option<&'static str> {",
        "    match row {",
    ]
    for name, _ in frames:
        variant = f"Row::{camel(name)}"
        if "pid" in kind_column_names(kinds[name]):
            w.append(f'        {variant}(r) if r.pid != file_pid => Some("its pid is not its file\'s"),')
        for key, allowed in collector.get("values", {}).items():
            kind, _, column = key.partition(".")
            if kind != name:
                continue
            values = f"{allowed.upper()}_NAMES" if isinstance(allowed, str) else rust_list(allowed)
            w.append(
                f"        {variant}(r) if !{values}.contains(&r.{column}) => "
                f'Some("its {column} is not one its collector sends"),'
            )
    w.append("        " + " | ".join(f"Row::{camel(name)}(_)" for name, _ in frames) + " => None,")
    w += ['        _ => Some("not a kind the collector sends"),', "    }", "}", ""]
    return w


# --- the ring buffer's records: the BPF programs' C structs and the recorder's Rust copies --------

RING_C_HEADER = RECORDER_GENERATED / "ring_records.h"
RING_RUST_MODULE = RECORDER_GENERATED / "ring_records.rs"
# the record every other one begins with, as `hdr`
RING_HEADER = "event_header"
# a C scalar type -> (its size, which is its alignment on x86-64 and BPF alike; its Rust type). char is a
# string's bytes: u8 in Rust, so that a name is read as bytes, whatever C's char signedness
RING_SCALARS = {
    "__u8": (1, "u8"),
    "__u16": (2, "u16"),
    "__u32": (4, "u32"),
    "__u64": (8, "u64"),
    "__s8": (1, "i8"),
    "__s16": (2, "i16"),
    "__s32": (4, "i32"),
    "__s64": (8, "i64"),
    "char": (1, "u8"),
}
RUST_KEYWORDS = {"type", "match", "mod", "ref", "fn", "impl", "move", "loop", "where", "use", "in", "as"}


def ring_records(schema: dict) -> list[dict]:
    """Each [ring_record], its fields laid out: every field's offset, size, alignment, and its spelling in C and
    Rust. Raises SchemaError where a layout would have implicit padding or does not end at its `size`."""
    constants = {name: c["value"] for name, c in schema["constants"].items()}
    laid_out: dict[str, dict] = {}
    for name, spec in schema["ring_record"].items():
        fields, at, align = [], 0, 1
        for field in spec["fields"]:
            where = f"ring_record.{name}.{field['name']}"
            ctype = field["type"]
            if ctype in RING_SCALARS:
                size, rust = RING_SCALARS[ctype]
                field_align, default = size, "0"
            elif ctype.startswith("struct ") and ctype.removeprefix("struct ") in laid_out:
                inner = laid_out[ctype.removeprefix("struct ")]
                size, field_align, rust = inner["size"], inner["align"], inner["rust"]
                default = f"{rust}::ZERO"
            else:
                raise SchemaError(
                    f"{where}: type {ctype!r} is not a C scalar of {sorted(RING_SCALARS)} nor a record above"
                )
            length = field.get("len", 1)
            count = constants.get(length) if isinstance(length, str) else length
            if not isinstance(count, int) or count < 1:
                raise SchemaError(f"{where}: len {length!r} is not a positive number or a [constants] name")
            if at % field_align:
                raise SchemaError(
                    f"{where}: at byte {at}, not a multiple of its alignment {field_align}: "
                    "name the padding before it as a field of its own"
                )
            rust_length = f"{length} as usize" if isinstance(length, str) else str(length)
            fields.append(
                {
                    "name": field["name"],
                    "rust_name": f"r#{field['name']}" if field["name"] in RUST_KEYWORDS else field["name"],
                    "offset": at,
                    "c": f"{ctype} {field['name']}" + (f"[{length}]" if "len" in field else ""),
                    "rust": f"[{rust}; {rust_length}]" if "len" in field else rust,
                    "zero": f"[{default}; {rust_length}]" if "len" in field else default,
                    "doc": field.get("doc"),
                }
            )
            at += size * count
            align = max(align, field_align)
        if len({f["name"] for f in fields}) != len(fields):
            raise SchemaError(f"ring_record.{name}: a field is listed twice")
        if at != spec["size"] or at % align:
            raise SchemaError(
                f"ring_record.{name}: its fields end at byte {at}, not at its size {spec['size']} "
                f"(a multiple of its alignment {align}, or the compilers would pad it)"
            )
        laid_out[name] = {
            "name": name,
            "rust": camel(name),
            "doc": spec["doc"],
            "records": spec.get("records", []),
            "size": at,
            "align": align,
            "fields": fields,
        }
    return list(laid_out.values())


def check_ring_records(schema: dict) -> None:
    records = ring_records(schema)
    if not records or records[0]["name"] != RING_HEADER or records[0]["records"]:
        raise SchemaError(f"ring_record: {RING_HEADER} comes first, the header of every record (none of its own)")
    for record in records[1:]:
        first = schema["ring_record"][record["name"]]["fields"][0]
        if (first["name"], first["type"]) != ("hdr", f"struct {RING_HEADER}"):
            raise SchemaError(f"ring_record.{record['name']}: begins with hdr, a struct {RING_HEADER}")
    listed = [name for record in records for name in record["records"]]
    if sorted(listed) != sorted(schema["records"]):
        raise SchemaError("ring_record: every [records] type is written with exactly one record's layout")


def c_comment(text: str, indent: str = "") -> list[str]:
    """TEXT as a C block comment, wrapped to 100 columns."""
    lines = textwrap.wrap(text, 96 - len(indent))
    if len(lines) == 1:
        return [f"{indent}/* {lines[0]} */"]
    return [f"{indent}/*", *(f"{indent} * {line}" for line in lines), f"{indent} */"]


def ring_c_header(schema: dict) -> str:
    """ring_records.h: the records' C structs for the BPF programs, each asserted field by field at compile time."""
    out = [
        f"/* {GENERATED_LINE} */",
        "/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */",
        "/*",
        " * The records the BPF programs put in the ring buffer (schema/trace.toml's [ring_record]",
        " * tables). The recorder decodes the same layout through its generated Rust structs",
        " * (ring_records.rs); each side asserts, when compiled, that every size and offset is the",
        " * schema's, so the wire cannot change on one side alone.",
        " */",
        "#ifndef LAUNCHGAP_RING_RECORDS_H",
        "#define LAUNCHGAP_RING_RECORDS_H",
        "",
        "/* record types, name-table enums (wakeup variants, x86 system vectors) and the sizes below */",
        '#include "trace_schema.h"',
        "",
        "/* Fail the build where a compiler lays a record out other than the schema does */",
        '#define RING_RECORD_SIZE(s, n) _Static_assert(sizeof(struct s) == n, #s "\'s size")',
        '#define RING_RECORD_AT(s, f, n) _Static_assert(__builtin_offsetof(struct s, f) == n, #s "." #f)',
    ]
    for record in ring_records(schema):
        name = record["name"]
        out += ["", *c_comment(record["doc"]), f"struct {name} {{"]
        for field in record["fields"]:
            doc = f" /* {field['doc']} */" if field["doc"] else ""
            out.append(f"\t{field['c']};{doc}")
        out.append("};")
        out.append(f"RING_RECORD_SIZE({name}, {record['size']});")
        out += [f"RING_RECORD_AT({name}, {f['name']}, {f['offset']});" for f in record["fields"]]
    out += ["", "#endif /* LAUNCHGAP_RING_RECORDS_H */", ""]
    return "\n".join(out)


def ring_rust_module(schema: dict) -> str:
    """ring_records.rs (the recorder's src/schema.rs includes it): the records as #[repr(C)] structs, asserted
    against the schema's layout and against the skeleton's types (the compiled BPF object's own), and the
    layouts as compiled, for --print-schema."""
    records = ring_records(schema)
    w = [
        f"// {GENERATED_LINE}",
        "",
        "// The records the BPF programs put in the ring buffer (schema/trace.toml's [ring_record]",
        "// tables), as the programs' generated ring_records.h lays them out.",
    ]
    for record in records:
        rust = record["rust"]
        w += ["", f"/// `struct {record['name']}`: {record['doc']}", "#[repr(C)]", "#[derive(Clone, Copy, Debug)]"]
        w.append(f"pub struct {rust} {{")
        for field in record["fields"]:
            if field["doc"]:
                w.append(f"    /// {field['doc']}")
            w.append(f"    pub {field['rust_name']}: {field['rust']},")
        w += [
            "}",
            "",
            f"impl {rust} {{",
            "    /// Every field 0 (what the programs' zeroed reservations hold before they fill them).",
            "    pub const ZERO: Self = Self {",
        ]
        w += [f"        {field['rust_name']}: {field['zero']}," for field in record["fields"]]
        w += [
            "    };",
            "}",
            "",
            f"impl Default for {rust} {{",
            "    fn default() -> Self {",
            "        Self::ZERO",
            "    }",
            "}",
            "",
            "// SAFETY: integers and arrays of them with no padding between or after: any bytes are a valid value.",
            f"unsafe impl plain::Plain for {rust} {{}}",
        ]
    w += [
        "",
        "// Each struct lies as the schema lays it out (and as ring_records.h asserts in C), and as the",
        "// skeleton's type of the same name, which libbpf-cargo writes from the compiled BPF object's BTF.",
        "const _: () = {",
        "    use crate::skel::types as bpf;",
        "    use std::mem::{offset_of, size_of};",
    ]
    for record in records:
        rust, name = record["rust"], record["name"]
        w.append(f"    assert!(size_of::<{rust}>() == {record['size']});")
        w.append(f"    assert!(size_of::<bpf::{name}>() == {record['size']});")
        for field in record["fields"]:
            w.append(f"    assert!(offset_of!({rust}, {field['rust_name']}) == {field['offset']});")
            w.append(f"    assert!(offset_of!(bpf::{name}, {field['rust_name']}) == {field['offset']});")
    w += [
        "};",
        "",
        "/// A record's layout as this binary was compiled: its C name, its size, each field's offset.",
        "pub struct RingRecordLayout {",
        "    pub name: &'static str,",
        "    pub size: usize,",
        "    pub fields: &'static [(&'static str, usize)],",
        "}",
        "",
        "/// Every record's layout, as compiled (`--print-schema`).",
        f"pub const RING_RECORD_LAYOUTS: [RingRecordLayout; {len(records)}] = [",
    ]
    for record in records:
        rust = record["rust"]
        w += [
            "    RingRecordLayout {",
            f"        name: {rust_str(record['name'])},",
            f"        size: std::mem::size_of::<{rust}>(),",
            "        fields: &[",
        ]
        w += [
            f"            ({rust_str(f['name'])}, std::mem::offset_of!({rust}, {f['rust_name']})),"
            for f in record["fields"]
        ]
        w += ["        ],", "    },"]
    w += ["];", ""]
    return "\n".join(w)


# --- the vocabularies beside the trace: the recorder's and the monitor's copies -----------

VOCABULARY_C_HEADER = RECORDER_GENERATED / "vocabulary.h"
VOCABULARY_RUST_MODULE = RECORDER_GENERATED / "vocabulary.rs"


def c_enum(name: str, doc: str, members: list[tuple[str, str]], count: str) -> list[str]:
    """An enum numbered from 0, each member with its doc, then its count."""
    out = ["", f"/* {doc} */", f"enum {name} {{"]
    out += [f"\t{member} = {i}, /* {member_doc} */" for i, (member, member_doc) in enumerate(members)]
    return out + [f"\t{count} = {len(members)},", "};"]


def vocabulary_c_header(schema: dict) -> str:
    """vocabulary.h: the thread states, gap classes, gap causes and driver entry points the monitor's BPF
    programs count by."""
    states, classes = schema["thread_states"], schema["gap_classes"]
    out = [
        f"/* {GENERATED_LINE} */",
        "/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */",
        "#ifndef LAUNCHGAP_VOCABULARY_H",
        "#define LAUNCHGAP_VOCABULARY_H",
    ]
    out += c_enum(
        "run_state",
        'Where a thread is, by its own switches and wakeups (docs/metrics.md "Thread states")',
        [(f"RUN_{s.upper()}", states["docs"][s]) for s in states["monitor"]],
        "RUN_STATE_COUNT",
    )
    out += c_enum(
        "gap_class",
        "A launch gap's class: what took the most time inside it (the first of equal largest)",
        [(f"GAP_{c.upper()}", classes["docs"][c]) for c in classes["monitor"]],
        "GAP_CLASS_COUNT",
    )
    cause_docs = {
        **classes["docs"],
        "blocked": "a voluntary block: the sync's if the gap holds one, else the thread's own",
    }
    out += c_enum(
        "gap_cause",
        "Time inside the open gap, by what took it: the interference causes first",
        [(f"CAUSE_{c.upper()}", cause_docs[c]) for c in classes["monitor_causes"]],
        "GAP_CAUSE_COUNT",
    )
    out += [
        "",
        "/* The interference causes: enum gap_cause's first, in the order of names.gpu_idle_cause's first */",
        f"#define INTERFERENCE_CAUSES {len(classes['interference'])}",
        "",
        "/*",
        " * Launch-gap histograms, log2 buckets with inclusive upper bounds",
        " * (Prometheus' `le`): bucket b < GAP_BUCKETS - 1 holds gaps up to",
        " * 2^(GAP_FIRST_BOUND_LOG2 + b) ns; the last one, +Inf.",
        " */",
        f"#define GAP_FIRST_BOUND_LOG2 {classes['histogram_first_bound_log2']}",
        f"#define GAP_BUCKETS {classes['histogram_buckets']}",
        "",
        "/* The driver's entry points, by attach cookie - 1: the first of schema/trace.toml's [cuda] apis */",
        f"#define DRIVER_API_SLOTS {sum(api['layer'] == 'driver' for api in schema['cuda']['apis'])}",
        "",
        "#endif /* LAUNCHGAP_VOCABULARY_H */",
        "",
    ]
    return "\n".join(out)


def vocabulary_rust_module(schema: dict) -> str:
    """vocabulary.rs (the library's `vocabulary`): the names the monitor gives the numbers its kernel counts by."""
    states, classes = schema["thread_states"], schema["gap_classes"]
    waiting = [f"({states['monitor'].index(s)}, {rust_str(s)})" for s in states["waiting"]]
    interference = classes["interference"]
    w = [
        f"// {GENERATED_LINE}",
        "",
        "/// The thread states a culprit is charged under (waiting for a CPU another task holds):",
        "/// (its number in enum run_state, its name).",
        f"pub const WAITING_RUN_STATES: [(u8, &str); {len(waiting)}] = [{', '.join(waiting)}];",
        "/// enum gap_class: the launch-gap classes the monitor counts, by number.",
        f"pub const MONITOR_GAP_CLASSES: [&str; {len(classes['monitor'])}] = {rust_list(classes['monitor'])};",
        "/// The interference causes (another task's or an interrupt's doing), enum gap_cause's first, by number:",
        "/// the first of names.gpu_idle_cause, which the GPU-time bounds are split by.",
        f"pub const INTERFERENCE_CAUSE_NAMES: [&str; {len(interference)}] = {rust_list(interference)};",
        f"pub const INTERFERENCE_CAUSES: usize = {len(interference)};",
        "/// The launch-gap histograms: bucket b below the last holds gaps up to 2^(GAP_FIRST_BOUND_LOG2 + b) ns;",
        "/// the last, +Inf.",
        f"pub const GAP_FIRST_BOUND_LOG2: i32 = {classes['histogram_first_bound_log2']};",
        f"pub const GAP_BUCKETS: usize = {classes['histogram_buckets']};",
        "",
    ]
    return "\n".join(w)


TRACE_FILES_RUST_MODULE = RECORDER_GENERATED / "trace_files.rs"


def trace_files_rust_module(schema: dict) -> str:
    """trace_files.rs (the recorder's src/schema.rs includes it): the keys of meta.json the recorder writes and
    of end.json, and the names its threads have in a trace."""
    written = {key: spec for key, spec in schema["meta"]["keys"].items() if "written_by" not in spec}
    typed = ", ".join(f"({rust_str(key)}, &{rust_list(spec['type'])})" for key, spec in written.items())
    recorder = schema["recorder"]
    w = [
        f"// {GENERATED_LINE}",
        "",
        "/// meta.json's keys the recorder writes (schema/trace.toml [meta]), each with the JSON types its value may",
        "/// have: TraceMeta serializes to exactly these.",
        f"pub const META_KEYS: [(&str, &[&str]); {len(written)}] = [{typed}];",
        "",
        "/// The closing summary's keys (end.json; format 1's closing row's detail).",
        "pub mod end_key {",
    ]
    for key, doc in schema["end"]["keys"].items():
        w += [f"    /// {doc}", f"    pub const {key.upper()}: &str = {rust_str(key)};"]
    w += [
        "}",
        "",
        "/// The recorder's binary: its main thread's name, which the threads it leaves unnamed inherit.",
        f"pub const RECORDER_BINARY: &str = {rust_str(recorder['binary'])};",
    ]
    for key, name in recorder["threads"].items():
        w += [
            f"/// The name of the recorder's {key} thread.",
            f"pub const {key.upper()}_THREAD_NAME: &str = {rust_str(name)};",
        ]
    w.append("")
    return "\n".join(w)


CUDA_APIS_RUST_MODULE = RECORDER_GENERATED / "cuda_apis.rs"
CUDASIM_APIS_HEADER = Path("workloads/cudasim/include/cudasim_apis.h")
# a driver entry point's probe -> cuda_api.rs's ProbeShape
PROBE_SHAPES = {
    "launch": "Launch",
    "launch_ex": "LaunchEx",
    "graph_launch": "GraphLaunch",
    "sync": "Sync",
    "memcpy": "Memcpy",
}
# what an entry point does -> how cudasim's driver logs it (a synchronous copy as a sync, as the trace has it)
CUDASIM_KINDS = {"launch": "CUSIM_KIND_LAUNCH", "sync": "CUSIM_KIND_SYNC", "copy": "CUSIM_KIND_SYNC"}


def cuda_apis_rust_module(schema: dict) -> str:
    """cuda_apis.rs: `APIS`, the table cuda_api.rs (the library's) numbers the probes by."""
    w = [
        f"// {GENERATED_LINE}",
        "",
        "/// The CUDA entry points launchgap probes (schema/trace.toml's [cuda] apis), in the order that",
        "/// numbers them: the driver's first.",
        "pub const APIS: &[CudaApi] = &[",
    ]
    w += [
        f"    driver({rust_str(api['name'])}, ProbeShape::{PROBE_SHAPES[api['probe']]}),"
        if api["layer"] == "driver"
        else f"    runtime({rust_str(api['name'])}),"
        for api in schema["cuda"]["apis"]
    ]
    w += ["];", ""]
    return "\n".join(w)


def cudasim_apis_header(schema: dict) -> str:
    """cudasim_apis.h: the entry points cudasim's driver logs, as X-macros its sources expand."""
    apis = schema["cuda"]["apis"]
    x_lines = ['X(NONE, "", CUSIM_KIND_NONE)']
    x_lines += [f'X({api["name"]}, "{api["name"]}", {CUDASIM_KINDS[api["does"]]})' for api in apis]
    callbacks = [
        f"DRIVER({api['name']})" if api["layer"] == "driver" else f"RUNTIME({api['name']}, {api['cupti']})"
        for api in apis
    ]

    def macro(head: str, body: list[str]) -> list[str]:
        """A multi-line #define, its line continuations in one column."""
        width = max(len(head), *(len(line) + 4 for line in body)) + 1
        return [f"{head:<{width}}\\", *(f"    {line:<{width - 4}}\\" for line in body[:-1]), f"    {body[-1]}"]

    out = [
        f"/* {GENERATED_LINE} */",
        "/*",
        " * The CUDA entry points launchgap probes (schema/trace.toml's [cuda] apis), in its order:",
        " * every API cudasim's driver logs, named once.",
        " */",
        "#ifndef CUDASIM_APIS_H",
        "#define CUDASIM_APIS_H",
        "",
        '/* X(enum_suffix, "name", kind): NONE (no API), then each entry point */',
    ]
    out += macro("#define CUSIM_APIS(X)", x_lines)
    out += [
        "",
        "/*",
        " * Each as CUPTI's callbacks name it: DRIVER(api) for CUPTI_DRIVER_TRACE_CBID_<api>, RUNTIME(api,",
        " * version) for CUPTI_RUNTIME_TRACE_CBID_<api>_<version>",
        " */",
    ]
    out += macro("#define CUSIM_CUPTI_CALLBACKS(DRIVER, RUNTIME)", callbacks)
    out += ["", "#endif", ""]
    return "\n".join(out)


def generated(root: Path) -> dict[Path, str]:
    """What each generated file must hold, from ROOT's schema/trace.toml."""
    schema = load((root / SCHEMA).read_text())
    return {
        PYTHON_MODULE: python_module(schema),
        DOC: fill_doc((root / DOC).read_text(), schema),
        WIRE_HEADER: wire_header(schema),
        TRACE_C_HEADER: trace_c_header(schema),
        TRACE_RUST_MODULE: trace_rust_module(schema),
        NAMES_RUST_MODULE: names_rust_module(schema),
        VOCABULARY_C_HEADER: vocabulary_c_header(schema),
        VOCABULARY_RUST_MODULE: vocabulary_rust_module(schema),
        CUDA_APIS_RUST_MODULE: cuda_apis_rust_module(schema),
        CUDASIM_APIS_HEADER: cudasim_apis_header(schema),
        TRACE_FILES_RUST_MODULE: trace_files_rust_module(schema),
        RING_C_HEADER: ring_c_header(schema),
        RING_RUST_MODULE: ring_rust_module(schema),
    }


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
