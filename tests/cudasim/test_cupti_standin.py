"""cudasim's stand-in libcupti has NVIDIA's CUPTI shapes: every record the stand-in
declares (workloads/cudasim/include/cupti.h) has the size of CUPTI 12.9's, every field
it names sits at the real header's offset with the real size, and every enumerator has
the real value. One C program, generated from the stand-in header, is compiled once
against it and once against NVIDIA's headers (the nvidia-cuda-cupti-cu12 wheel, fetched
by scripts/fetch_real_cuda.sh); the two outputs must be equal."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CUDASIM_BUILD, REAL_CUDA, REPO

STANDIN_HEADER = REPO / "workloads" / "cudasim" / "include" / "cupti.h"
REAL_INCLUDE = REAL_CUDA / "cuda-12-include"

needs_real_headers = pytest.mark.skipif(
    not (REAL_INCLUDE / "cupti" / "cupti.h").exists(),
    reason="NVIDIA's CUPTI headers are missing from .cache/real-cuda: scripts/fetch_real_cuda.sh could not "
    "download them (see `make setup`)",
)


def declared_records(header: str) -> dict[str, list[str]]:
    """struct name -> its field names, for every `typedef struct ... { ... } Name;` in HEADER."""
    out = {}
    for body, name in re.findall(r"typedef struct[^{]*\{(.*?)\}\s*(CUpti_\w+);", header, re.S):
        fields = []
        for line in body.splitlines():
            line = line.split("/*")[0].strip()
            match = re.match(r"^[\w\s\*]+?[\s\*](\w+);$", line)
            if match:
                fields.append(match.group(1))
        out[name] = fields
    return out


def declared_values(header: str) -> list[str]:
    return re.findall(r"^\s*(CUPTI_\w+)\s*=", header, re.M)


def probe_program(header: str) -> str:
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <cupti.h>", "int main(void) {"]
    for struct, fields in declared_records(header).items():
        lines.append(f'    printf("sizeof {struct} %zu\\n", sizeof({struct}));')
        for field in fields:
            lines.append(
                f'    printf("{struct}.{field} %zu %zu\\n", offsetof({struct}, {field}), '
                f"sizeof(((({struct} *)0)->{field})));"
            )
    for value in declared_values(header):
        lines.append(f'    printf("{value} %lld\\n", (long long){value});')
    lines += ["    return 0;", "}"]
    return "\n".join(lines)


def run_probe(tmp_path: Path, name: str, includes: list[Path]) -> list[str]:
    source = tmp_path / f"{name}.c"
    source.write_text(probe_program(STANDIN_HEADER.read_text()))
    binary = tmp_path / name
    compiled = subprocess.run(
        ["cc", "-std=gnu11", *[f"-I{d}" for d in includes], str(source), "-o", str(binary)],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr
    return subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.splitlines()


def test_the_probe_covers_every_record_and_field_the_collector_reads():
    records = declared_records(STANDIN_HEADER.read_text())
    assert set(records) >= {
        "CUpti_ActivityAPI",
        "CUpti_ActivityKernel9",
        "CUpti_ActivityMemcpy6",
        "CUpti_ActivityMemset4",
        "CUpti_ActivitySynchronization2",
        "CUpti_ActivityGraphTrace2",
    }
    # the fields the collector reads (collector/cupti_collector.c): each must be checked
    collector = (REPO / "collector" / "cupti_collector.c").read_text()
    read = set(re.findall(r"\b[kmsga]->(\w+)", collector))
    checked = {field for fields in records.values() for field in fields}
    assert read and read <= checked, read - checked


@needs_real_headers
def test_the_standin_has_the_real_headers_layouts_and_values(tmp_path):
    standin = run_probe(tmp_path, "standin", [STANDIN_HEADER.parent])
    real = run_probe(tmp_path, "real", [REAL_INCLUDE / "cupti", REAL_INCLUDE / "runtime", REAL_INCLUDE / "nvcc"])
    assert len(standin) > 150
    differing = [(s, r) for s, r in zip(standin, real) if s != r]
    assert not differing, differing
    assert standin == real


def test_the_old_cupti_build_lacks_what_older_cuptis_lack():
    def exported(path: Path) -> set[str]:
        out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True)
        return {line.split()[-1] for line in out.stdout.splitlines()}

    new = exported(CUDASIM_BUILD / "lib" / "libcupti.so.12")
    old = exported(CUDASIM_BUILD / "lib-cupti-old" / "libcupti.so.12")
    newer_only = {
        "cuptiActivityRegisterTimestampCallback",
        "cuptiActivityEnableDriverApi",
        "cuptiActivityEnableRuntimeApi",
    }
    assert new - old == newer_only
