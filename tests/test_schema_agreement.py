"""schema/trace.toml is the trace's one definition; every copy agrees with it.

The copies, each written by the one generator, scripts/gen_schema.py, and
committed: python/launchgap/trace/schema.py, the tables of
docs/trace-format.md, the collector's encoders (collector/gpu_wire.h), the BPF
headers trace_schema.h and ring_records.h (the ring buffer's records, the only
wire layout) and the recorder's Rust rows, columns, builders and records
(recorder/src/generated/; the recorder prints what it was built with, header
and records' layouts included, with --print-schema). The hand-written BPF
sources include the generated headers and define none of their names again.

Each check below is also run once on a scratch copy with one deliberate
change, to prove it fails when any one copy changes alone (done here in
every run, not only once): a column's type changed in the TOML alone (both
generated files then differ, and the recorder's schema no longer matches);
a Column edited in the Python module alone; a row edited in the documentation's
tables alone; a record id changed in the C header alone; a record's field moved
in the C structs or in the Rust ones alone; a constant or a record's struct
redefined in a BPF source; a column's nullability or a field's offset changed
in the recorder's printed schema.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib

from launchgap.recorder import RECORDER_COMMS
from launchgap.trace.schema import TASK_COMM_LEN
from tests.conftest import REPO
from tests.recorder.conftest import RECORDER

GEN = REPO / "scripts" / "gen_schema.py"
BPF_SOURCES = REPO / "recorder" / "src" / "bpf"


def generator():
    spec = importlib.util.spec_from_file_location("gen_schema", GEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return generator()


@pytest.fixture
def scratch(tmp_path: Path, gen) -> Path:
    """A copy of the schema and of every committed generated file, laid out as in the repository."""
    for path in (gen.SCHEMA, *gen.generated(REPO)):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# --- the committed generated files: Python module and documentation tables -----------------------------


def test_every_generated_file_is_made_from_the_schema(gen):
    assert gen.differences(REPO) == []


def test_every_generated_file_says_so_on_its_first_line(gen):
    """Each says where it comes from, so nobody edits it by hand; the documentation says so around each table."""
    for path, text in gen.generated(REPO).items():
        if path != gen.DOC:
            assert gen.GENERATED_LINE in text.splitlines()[0], path


def test_a_change_to_the_schema_alone_is_found(gen, scratch):
    edit(scratch / gen.SCHEMA, 'cpu = { type = "uint32", role = "cpu"', 'cpu = { type = "uint64", role = "cpu"')
    found = gen.differences(scratch)
    # cpu is a column of lost rows, which the collector sends too
    assert [line.split(" ")[0] for line in found] == [
        str(gen.PYTHON_MODULE),
        str(gen.DOC),
        str(gen.WIRE_HEADER),
        str(gen.TRACE_RUST_MODULE),
    ]


def test_a_change_to_the_python_module_alone_is_found(gen, scratch):
    edit(scratch / gen.PYTHON_MODULE, "Column('ts_ns', 'uint64', False", "Column('ts_ns', 'int64', False")
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [str(gen.PYTHON_MODULE)]


def test_a_change_to_the_documentation_tables_alone_is_found(gen, scratch):
    edit(scratch / gen.DOC, "| `next_tid` | uint32 | no |", "| `next_tid` | uint64 | no |")
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [str(gen.DOC)]


def test_a_change_to_the_collectors_encoders_alone_is_found(gen, scratch):
    edit(scratch / gen.WIRE_HEADER, "lg_wire_u32(&w, row->correlation_id);", "lg_wire_u64(&w, row->correlation_id);")
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [str(gen.WIRE_HEADER)]


def test_a_change_to_the_recorders_generated_code_alone_is_found(gen, scratch):
    edit(scratch / gen.TRACE_C_HEADER, "EVENT_SWITCH = 3,", "EVENT_SWITCH = 4,")
    edit(scratch / gen.TRACE_RUST_MODULE, "pub const SWITCH: u32 = 3;", "pub const SWITCH: u32 = 4;")
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [
        str(gen.TRACE_C_HEADER),
        str(gen.TRACE_RUST_MODULE),
    ]


def test_a_change_to_a_records_layout_alone_is_found(gen, scratch):
    """The ring buffer's records: a field changed in the schema changes both sides' structs; a hand edit to
    either generated side alone is found."""
    edit(scratch / gen.SCHEMA, '{ name = "orig_cpu", type = "__u32" }', '{ name = "orig_cpu", type = "__s32" }')
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [
        str(gen.RING_C_HEADER),
        str(gen.RING_RUST_MODULE),
    ]
    shutil.copy(REPO / gen.SCHEMA, scratch / gen.SCHEMA)
    edit(scratch / gen.RING_C_HEADER, "\t__u8 pad[6];\n\tchar prev_comm", "\t__u8 pad[2];\n\tchar prev_comm")
    edit(scratch / gen.RING_RUST_MODULE, "pub prev_nvcsw: u64,", "pub prev_nvcsw: i64,")
    assert [line.split(" ")[0] for line in gen.differences(scratch)] == [
        str(gen.RING_C_HEADER),
        str(gen.RING_RUST_MODULE),
    ]


def test_the_schema_refuses_a_record_the_compilers_would_pad(gen, scratch):
    """No padding is implicit, so that the layout written in the schema is the one on the wire."""
    pad = '    { name = "pad", type = "__u32" },\n    { name = "launches"'
    edit(scratch / gen.SCHEMA, pad, '    { name = "launches"')
    with pytest.raises(gen.SchemaError, match="launch_batch.launches: at byte 28, not a multiple of its alignment 8"):
        gen.differences(scratch)
    # a field made wider without its record's size: the wire changes on purpose or not at all
    shutil.copy(REPO / gen.SCHEMA, scratch / gen.SCHEMA)
    edit(scratch / gen.SCHEMA, '{ name = "exit_code", type = "__s32" }', '{ name = "exit_code", type = "__s64" }')
    with pytest.raises(gen.SchemaError, match="exit_event: its fields end at byte 52, not at its size 48"):
        gen.differences(scratch)


def test_the_schema_refuses_to_contradict_itself(gen, scratch):
    edit(
        scratch / gen.SCHEMA,
        'columns = ["ts_ns", "cpu", "pid", "tid", "api", "duration_ns"]',
        'columns = ["ts_ns", "cpu", "pid", "tid", "api", "duration", "duration_ns"]',
    )
    with pytest.raises(gen.SchemaError, match="kind sync: no column 'duration'"):
        gen.differences(scratch)


# --- the recorder: what it was built with ------------------------------------------------------------


def expected_from_schema(gen, text: str) -> dict:
    """What the recorder's --print-schema must say, from the TOML."""
    schema = gen.load(text)
    return {
        "format": {"name": schema["format"]["name"], "version": schema["format"]["version"]},
        "records": schema["records"],
        "names": {table: spec["values"] for table, spec in schema["names"].items()},
        "constants": {name: c["value"] for name, c in schema["constants"].items()},
        "kinds": [
            {
                "name": k["name"],
                "record": k.get("record"),
                "columns": [
                    {key: c[key] for key in ("name", "type", "nullable", "optional")}
                    for c in gen.kind_columns(schema, k)
                ],
            }
            for k in schema["kind"]
        ],
        "format1": {"columns": schema["format1"]["columns"], "end_event": schema["end"]["format1_event"]},
        "collector": {
            "frames": schema["collector"]["frames"],
            "max_frame": schema["collector"]["max_frame"],
            "cupti_required": schema["collector"]["cupti_required"],
        },
        "ring_records": {
            record["name"]: {"size": record["size"], "fields": {f["name"]: f["offset"] for f in record["fields"]}}
            for record in gen.ring_records(schema)
        },
        "layout": {
            "meta": schema["layout"]["meta"],
            "end": schema["layout"]["end"],
            **{
                key: schema["layout"][key]
                for key in ("segment_digits", "segment_suffix", "partial_suffix", "segment_seconds", "segment_rows")
            },
        },
    }


def c_header_values(text: str) -> dict[str, int]:
    """Every #define and enum constant of a C header, with its value."""
    values = {
        name: int(value, 0) for name, value in re.findall(r"^#define (\w+) (\w+)$", text, re.M) if value[0].isdigit()
    }
    for body in re.findall(r"enum \w+ \{(.*?)\};", text, re.S):
        values.update({name: int(value, 0) for name, value in re.findall(r"(\w+) = (\w+),", body)})
    return values


def expected_c_values(gen, text: str) -> dict[str, int]:
    schema = gen.load(text)
    values = {name: c["value"] for name, c in schema["constants"].items()}
    values.update({f"EVENT_{name.upper()}": number for name, number in schema["records"].items()})
    values["EVENT_TYPE_COUNT"] = max(schema["records"].values()) + 1
    for spec in schema["names"].values():
        if "c_enum" in spec:
            values.update({f"{spec['c_prefix']}{v}": i for i, v in enumerate(spec["values"])})
            if "c_count" in spec:
                values[spec["c_count"]] = len(spec["values"])
    return values


@pytest.fixture(scope="module")
def built():
    if not RECORDER.exists():
        pytest.fail("the recorder is not built: run `make setup`")
    return json.loads(
        subprocess.run([str(RECORDER), "--print-schema"], capture_output=True, text=True, check=True).stdout
    )


def without_header(printed: dict) -> dict:
    return {k: v for k, v in printed.items() if k != "c_header"}


def test_the_recorder_was_built_from_the_schema(gen, built):
    text = (REPO / gen.SCHEMA).read_text()
    assert without_header(built) == expected_from_schema(gen, text)
    assert c_header_values(built["c_header"]) == expected_c_values(gen, text)


def test_a_change_on_either_side_of_the_recorder_is_found(gen, built):
    text = (REPO / gen.SCHEMA).read_text()
    # the schema changed alone (the recorder not rebuilt from it)
    changed = text.replace('exit_code = { type = "int32"', 'exit_code = { type = "int64"')
    assert without_header(built) != expected_from_schema(gen, changed)
    # the recorder's Rust or its header changed alone
    rust = json.loads(json.dumps(built))
    rust["kinds"][0]["columns"][1]["nullable"] = True
    assert without_header(rust) != expected_from_schema(gen, text)
    header = built["c_header"].replace("EVENT_SWITCH = 3,", "EVENT_SWITCH = 4,")
    assert c_header_values(header) != expected_c_values(gen, text)
    # a record's field elsewhere in the recorder's structs than the schema lays it
    moved = json.loads(json.dumps(built))
    moved["ring_records"]["switch_event"]["fields"]["prev_comm"] = 68
    assert without_header(moved) != expected_from_schema(gen, text)


# --- the BPF sources: they include the generated headers rather than copying them -------------------------


def bpf_copies(sources: dict[str, str], generated_names: set[str]) -> list[str]:
    """What a hand-written BPF source defines that a generated header does: a record's struct, a macro, an enum
    or an enumerator."""
    return [
        f"{name}: {defined}"
        for name, text in sources.items()
        for defined in sorted(c_names(text) | set(re.findall(r"^struct (\w+) \{", text, re.M)))
        if defined in generated_names
    ]


def test_the_bpf_sources_take_the_records_and_names_from_the_generated_headers(gen, built):
    records = [record["name"] for record in gen.ring_records(schema())]
    names = set(c_header_values(built["c_header"])) | set(records)
    names |= c_names((REPO / gen.TRACE_C_HEADER).read_text()) | c_names((REPO / gen.RING_C_HEADER).read_text())
    sources = {path.name: path.read_text() for path in sorted(BPF_SOURCES.iterdir())}
    assert '#include "ring_records.h"' in sources["maps.bpf.h"]
    assert '#include "trace_schema.h"' in (REPO / gen.RING_C_HEADER).read_text()
    assert bpf_copies(sources, names) == []
    # and a copy made in one again is found
    copied = {
        "maps.bpf.h": sources["maps.bpf.h"]
        + "\n#define TASK_COMM_LEN 16\nstruct exit_event {\n\t__s32 exit_code;\n};\n"
    }
    assert bpf_copies(copied, names) == ["maps.bpf.h: TASK_COMM_LEN", "maps.bpf.h: exit_event"]
    assert bpf_copies({"x.h": "enum event_type {\n\tEVENT_LAUNCH = 1,\n};"}, names) == [
        "x.h: EVENT_LAUNCH",
        "x.h: event_type",
    ]


# --- the Python side refers to kinds through the enum ----------------------------------------------------


def kind_literal() -> re.Pattern:
    """A kind's name (or format 1's closing row's) as a string literal, every kind the schema has."""
    schema = generator().load((REPO / "schema" / "trace.toml").read_text())
    # but `comm`, which is also the column most kinds have (the task's name), and `cgroup`, which is also
    # what culprits are grouped by (report --culprits-by cgroup) and the report's key for a cgroup's path
    names = [k["name"] for k in schema["kind"] if k["name"] not in ("comm", "cgroup")]
    names.append(schema["end"]["format1_event"])
    return re.compile(r"""["'](""" + "|".join(sorted(names, key=len, reverse=True)) + r""")["']""")


KIND_LITERAL = kind_literal()
# words that are not event kinds where they appear: the study's gap classes and view marks, cudasim's truth keys
NOT_KINDS = {
    "analysis/gaps.py": {"sync"},
    "analysis/core_map.py": {"launch", "sync", "migrate"},
    "views/timeline.py": {"launch", "sync", "migrate"},
    "workloads/cudasim_truth.py": {"launch", "sync"},
    "views/cudasim_truth.py": {"launch", "sync"},
    "gpu_validation.py": {"lost"},  # its JSON result's key for the GPU rows lost, read from Event.LOST
    # Kineto's own event categories (its `cat`), which happen to spell two of launchgap's kinds; the [cuda]
    # table's `does`
    "trace/kineto.py": {"gpu_memcpy", "gpu_memset", "launch"},
    "analysis/measurement.py": {"launch"},  # the [cuda] table's `does`: the probes a launch fires
}


def test_python_code_names_event_kinds_through_the_enum():
    package = REPO / "python" / "launchgap"
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = str(path.relative_to(package))
        if relative == "trace/schema.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for word in KIND_LITERAL.findall(line):
                if word not in NOT_KINDS.get(relative, set()):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []


# --- the recorder's threads, as the report knows them --------------------------------------------------


def thread_names_in_source(sources: dict[str, str]) -> set[str]:
    """Every name the recorder's source gives a thread by string literal (thread::Builder::name)."""
    return {name for text in sources.values() for name in re.findall(r'Builder::new\(\)\s*\.name\(\s*"([^"]+)"', text)}


def test_the_recorder_threads_the_report_knows_are_the_recorders_own():
    """RECORDER_COMMS (launchgap/recorder.py) names the recorder's threads, so that the report can mark them
    as the recorder's where they ran instead of the workload: its binary's name (the [[bin]] built from
    src/main.rs), which its unnamed threads inherit, and each name it gives a thread, from schema/trace.toml's
    [recorder], which the Rust names its threads from too. The sources under src/bin/ are other binaries'
    (the monitor records no trace)."""
    recorder = generator().load(SCHEMA_TOML.read_text())["recorder"]
    binary = next(
        b["name"]
        for b in tomllib.loads((REPO / "recorder" / "Cargo.toml").read_text())["bin"]
        if b["path"] == "src/main.rs"
    )
    assert binary == recorder["binary"]
    assert set(RECORDER_COMMS) == {name[: TASK_COMM_LEN - 1] for name in (binary, *recorder["threads"].values())}
    src = REPO / "recorder" / "src"
    sources = {
        str(path.relative_to(src)): path.read_text()
        for path in sorted(src.rglob("*.rs"))
        if path.relative_to(src).parts[0] != "bin"
    }
    assert thread_names_in_source(sources) == set()
    # as rustfmt lays it out, over lines or on one
    assert "Builder::new().name(WRITER_THREAD_NAME.into())" in re.sub(r"\s+", "", sources["trace_writer/thread.rs"])
    # and a thread named in the source alone is found
    named = {**sources, "drain.rs": 'std::thread::Builder::new().name("ring-drain".into()).spawn(drain)'}
    assert thread_names_in_source(named) == {"ring-drain"}


# --- the vocabularies beside the trace: generated for every language, no hand copy left ------------------

SCHEMA_TOML = REPO / "schema" / "trace.toml"
RECORDER_SRC = REPO / "recorder" / "src"
PACKAGE = REPO / "python" / "launchgap"


def schema() -> dict:
    return generator().load(SCHEMA_TOML.read_text())


def literal_of(words) -> re.Pattern:
    """Any of WORDS as a string literal."""
    return re.compile(r"""["'](""" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r""")["']""")


def lines_matching(path: Path, pattern: re.Pattern, root: Path) -> list[str]:
    name = path.relative_to(root) if path.is_relative_to(root) else path
    return [
        f"{name}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]


def rust_sources() -> list[Path]:
    """The recorder's and the monitor's hand-written Rust (src/generated/ is the generator's)."""
    return [
        path for path in sorted(RECORDER_SRC.rglob("*.rs")) if "generated" not in path.relative_to(RECORDER_SRC).parts
    ]


def hand_copied_lists(words, paths: list[Path]) -> list[str]:
    """Lines that list two or more of WORDS as string literals: a vocabulary copied by hand."""
    literal = literal_of(words)
    return [
        f"{path.name}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if len(set(literal.findall(line))) >= 2
    ]


def c_names(text: str) -> set[str]:
    """The macros a C header defines and the enums and enumerators it declares."""
    names = set(re.findall(r"^#define (\w+)", text, re.M))
    for enum, body in re.findall(r"enum (\w+) \{(.*?)\};", text, re.S):
        names |= {enum, *re.findall(r"^\s*(\w+)(?: = \w+)?,", body, re.M)}
    return names


# the analysis modules that name thread states and gap classes: through the generated constants only
STATE_AND_CLASS_USERS = (
    "analysis/timeline.py",
    "analysis/taken.py",
    "analysis/gaps.py",
    "analysis/gap_stream.py",
    "analysis/gpu_time.py",
    "analysis/diff.py",
)


def test_the_analysis_names_thread_states_and_gap_classes_through_the_schema():
    words = {*schema()["thread_states"]["values"], *schema()["gap_classes"]["values"]}
    found = [
        line
        for relative in STATE_AND_CLASS_USERS
        for line in lines_matching(PACKAGE / relative, literal_of(words), PACKAGE)
    ]
    assert found == []


def test_the_monitor_takes_thread_states_and_gap_classes_from_the_schema(tmp_path):
    vocabulary = schema()
    words = {*vocabulary["thread_states"]["values"], *vocabulary["gap_classes"]["values"]}
    assert hand_copied_lists(words, rust_sources()) == []
    # and one made again is found
    copied = tmp_path / "exposition.rs"
    copied.write_text('const CAUSE_NAMES: [(u8, &str); 2] = [(2, "preempted"), (3, "runqueue")];\n')
    assert len(hand_copied_lists(words, [copied])) == 1
    generated_names = c_names((REPO / generator().VOCABULARY_C_HEADER).read_text())
    monitor_h = (RECORDER_SRC / "bpf" / "monitor.h").read_text()
    assert '#include "vocabulary.h"' in monitor_h
    assert c_names(monitor_h) & generated_names == set()
    assert c_names(monitor_h + "\nenum gap_class { GAP_CLEAN = 0, };\n") & generated_names == {"gap_class", "GAP_CLEAN"}


CUDASIM = REPO / "workloads" / "cudasim"
# where a CUDA entry point's name is no copy of the table: the study CSV's own event types, as its tracer wrote them
NOT_THE_API_TABLE = {"trace/study_csv.py"}


def test_python_takes_the_cuda_entry_points_from_the_schema():
    names = [api["name"] for api in schema()["cuda"]["apis"]]
    suffixes = schema()["cuda"]["stream_variant_suffixes"]
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        if relative not in ("trace/schema.py", *NOT_THE_API_TABLE):
            found += lines_matching(path, literal_of([*names, *suffixes]), PACKAGE)
    assert found == []


def cudasim_api_lists(text: str) -> list[str]:
    """X-macro entries or CUPTI callback entries naming a CUDA entry point: the table copied by hand."""
    return re.findall(r"\b(?:X|DRIVER|RUNTIME)\((cu(?:da)?[A-Z]\w*)", text)


def test_the_recorder_and_cudasim_take_the_cuda_entry_points_from_the_schema():
    names = [api["name"] for api in schema()["cuda"]["apis"]]
    assert hand_copied_lists(names, rust_sources()) == []
    hand_written = [*sorted((CUDASIM / "include").glob("*.h")), *sorted((CUDASIM / "src").glob("*.[ch]"))]
    generated = REPO / generator().CUDASIM_APIS_HEADER
    assert generated in hand_written
    assert {path.name: cudasim_api_lists(path.read_text()) for path in hand_written if path != generated} == {
        path.name: [] for path in hand_written if path != generated
    }
    # and a copy made again is found
    assert cudasim_api_lists('#define CUSIM_APIS(X) X(cuLaunchKernel, "cuLaunchKernel", CUSIM_KIND_LAUNCH)') == [
        "cuLaunchKernel"
    ]
    # the monitor's kernel counts the driver's entry points by slot: as many as the schema lists
    vocabulary_h = (REPO / generator().VOCABULARY_C_HEADER).read_text()
    assert c_header_values(vocabulary_h)["DRIVER_API_SLOTS"] == sum(
        a["layer"] == "driver" for a in schema()["cuda"]["apis"]
    )
    assert "DRIVER_API_SLOTS" not in c_names((RECORDER_SRC / "bpf" / "monitor.h").read_text())


def meta_key_reads(keys, text: str) -> list[str]:
    """The metadata's keys read by string literal: meta.get("k"), meta["k"] (also trace.meta's)."""
    key = "|".join(sorted(map(re.escape, keys), key=len, reverse=True))
    return re.findall(r"""\bmeta(?:data)?(?:\.get\(|\[)["'](""" + key + r""")["']""", text)


def test_python_reads_the_metadatas_keys_through_the_schema():
    keys = list(schema()["meta"]["keys"])
    found = {
        str(path.relative_to(PACKAGE)): meta_key_reads(keys, path.read_text())
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "trace" / "schema.py"
    }
    assert {path: reads for path, reads in found.items() if reads} == {}
    # and one read by literal again is found
    assert meta_key_reads(keys, 'start = trace.meta.get("start_ns")\ncommand = meta["command"]') == [
        "start_ns",
        "command",
    ]


# the Rust that writes the closing summary
SUMMARY_WRITERS = ("recording/ending.rs", "trace_writer/thread.rs")


def end_key_literals(keys, text: str) -> list[str]:
    """The closing summary's keys written by string literal (json!({"k": ...}), summary["k"]), outside tests."""
    code = text.split("#[cfg(test)]")[0]
    key = "|".join(sorted(map(re.escape, keys), key=len, reverse=True))
    return re.findall(r'"(' + key + r')"\s*:', code) + re.findall(r'summary\["(' + key + r')"\]', code)


def test_the_recorder_writes_the_closing_summary_with_the_schemas_keys():
    keys = list(schema()["end"]["keys"])
    assert {path: end_key_literals(keys, (RECORDER_SRC / path).read_text()) for path in SUMMARY_WRITERS} == {
        path: [] for path in SUMMARY_WRITERS
    }
    assert end_key_literals(keys, 'let s = json!({"end_ns": 1});\nsummary["rows"] = json!(2);') == ["end_ns", "rows"]


IRQ_PROGRAM_FILES = ("irq.bpf.c", "monitor_irq.bpf.c")


def irq_copies(text: str, vectors: list[str]) -> list[str]:
    """What an interrupt .bpf.c writes that irq_programs.bpf.h and the schema's irq_vector table give: a
    tracepoint program of its own, or a name (enum, enumerator, macro) for a system vector."""
    programs = re.findall(r'SEC\("tp_btf/(\w+)"\)', text)
    names = [name for name in c_names(text) if any(vector in name for vector in vectors)]
    return programs + names


def test_the_interrupt_programs_are_written_once_for_the_schemas_vectors():
    vectors = schema()["names"]["irq_vector"]["values"]
    bpf = RECORDER_SRC / "bpf"
    for name in IRQ_PROGRAM_FILES:
        text = (bpf / name).read_text()
        assert '#include "irq_programs.bpf.h"' in text and re.search(r"^IRQ_PROGRAMS\(\w+\)$", text, re.M), name
        assert irq_copies(text, vectors) == [], name
    shared = (bpf / "irq_programs.bpf.h").read_text()
    assert "IRQ_VECTORS(VECTOR_PROGRAMS, prefix)" in shared and '#include "trace_schema.h"' in shared
    # and the copies the monitor's programs once had are found
    copied = (
        "enum system_vector {\n\tSYSTEM_VECTOR_LOCAL_TIMER = 0,\n};\n"
        'SEC("tp_btf/local_timer_entry")\nint BPF_PROG(monitor_local_timer_entry, int vector) { return 0; }\n'
    )
    assert irq_copies(copied, vectors) == ["local_timer_entry", "SYSTEM_VECTOR_LOCAL_TIMER"]


def test_the_columns_that_may_hold_task_cpu_unknown_say_so():
    """task_cpu_of (core_fixes.bpf.h) gives TASK_CPU_UNKNOWN on a kernel with no CPU field launchgap knows; the
    recorder writes it as it is, so every column filled from it says so in the schema (and docs/trace-format.md)."""
    filled = re.findall(r"e->(\w+) = task_cpu_of\(", (RECORDER_SRC / "bpf" / "sched.bpf.c").read_text())
    assert sorted(filled) == ["orig_cpu", "target_cpu"]
    columns = schema()["columns"]
    assert [
        c for c in filled if not {"TASK_CPU_UNKNOWN", "4294967295"} <= set(re.findall(r"\w+", columns[c]["doc"]))
    ] == []
