"""The stand-in driver's other shapes: the dispatch thunks NVIDIA's real
libcuda.so.1 exports (build/lib-thunk) and the CET build whose functions
begin with endbr64 (build/lib-cet). Each must have the real instruction
shapes, byte for byte where it matters, and run the workload exactly as the
frame-pointer build does."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.conftest import CUDASIM, CUDASIM_STATIC, LIBCUDA, LIBCUDA_CET, LIBCUDA_THUNK, REAL_LIBCUDA, needs_real
from tests.cudasim.model import expected_launches
from tests.cudasim.test_cudasim import DRIVER_APIS, launch_args_of

# The real thunk, displacements masked (None): see workloads/cudasim/src/driver_thunks.S
THUNK_BYTES = [
    0x81,
    0x3D,
    None,
    None,
    None,
    None,
    0x00,
    0xBA,
    0x1C,
    0x32,  # cmpl $0x321cba00,disp(%rip)
    0x74,
    0x0C,  # je +12
    0xFF,
    0x25,
    None,
    None,
    None,
    None,  # jmp *disp(%rip)
    0x66,
    0x0F,
    0x1F,
    0x44,
    0x00,
    0x00,  # nopw 0x0(%rax,%rax,1)
    0xB8,
    0x04,
    0x00,
    0x00,
    0x00,  # mov $0x4,%eax
    0xC3,
]  # ret
THUNK_INSTRUCTIONS = [
    r"cmpl \$0x321cba00,0x[0-9a-f]+\(%rip\)",
    r"je [0-9a-f]+ <(\S+)\+0x18>",
    r"jmp \*0x[0-9a-f]+\(%rip\)",
    r"nopw 0x0\(%rax,%rax,1\)",
    r"mov \$0x4,%eax",
    r"ret",
]


def exported_functions(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of every function the library exports."""
    with path.open("rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        return {
            s.name.split("@")[0]: (s["st_value"], s["st_size"])
            for s in dynsym.iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"
        }


def code_bytes(path: Path, address: int, size: int) -> bytes:
    with path.open("rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if (
                section["sh_addr"] <= address < section["sh_addr"] + section["sh_size"]
                and section["sh_type"] == "SHT_PROGBITS"
            ):
                f.seek(address - section["sh_addr"] + section["sh_offset"])
                return f.read(size)
    raise AssertionError(f"{address:#x} is in no section of {path}")


def instructions(path: Path, symbol: str) -> list[str]:
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    body = out.split(f"<{symbol}", 1)[1].split(">:", 1)[1]
    lines = [line.split(":", 1)[1] for line in body.splitlines() if re.match(r"^\s+[0-9a-f]+:\t", line)]
    return [re.sub(r"\s+", " ", line.split("#")[0]).strip() for line in lines]


def matches_thunk(code: bytes) -> bool:
    return len(code) == len(THUNK_BYTES) and all(want is None or got == want for got, want in zip(code, THUNK_BYTES))


def test_the_thunk_driver_exports_exactly_what_the_c_driver_exports():
    assert exported_functions(LIBCUDA_THUNK).keys() == exported_functions(LIBCUDA).keys()
    assert len(exported_functions(LIBCUDA_THUNK)) >= len(DRIVER_APIS) + 10


def test_every_thunk_entry_point_has_the_real_drivers_bytes_and_instructions():
    for name, (address, size) in exported_functions(LIBCUDA_THUNK).items():
        assert size == 30, name
        assert matches_thunk(code_bytes(LIBCUDA_THUNK, address, size)), name
        got = instructions(LIBCUDA_THUNK, name)
        assert len(got) == len(THUNK_INSTRUCTIONS), (name, got)
        for instruction, pattern in zip(got, THUNK_INSTRUCTIONS):
            match = re.fullmatch(pattern, instruction)
            assert match, (name, instruction)
            if match.groups():  # the je lands on the error return of this same thunk
                assert match.group(1) == name


@needs_real(REAL_LIBCUDA)
def test_nvidias_driver_has_the_same_thunks():
    """(A few entry points, cuMemsetD16 for one, widen an argument between the
    je and the jmp: 569 of the 600 are this exact shape.)"""
    real = exported_functions(REAL_LIBCUDA)
    # every entry point launchgap probes, and the ones every program calls first
    for name in [*DRIVER_APIS, "cuInit", "cuGetProcAddress", "cuStreamCreate", "cuEventRecord"]:
        address, size = real[name]
        assert size == 30, name
        assert matches_thunk(code_bytes(REAL_LIBCUDA, address, size)), name


def test_the_cet_driver_begins_every_entry_point_with_endbr64():
    for name in DRIVER_APIS:
        assert instructions(LIBCUDA_CET, name)[:3] == ["endbr64", "push %rbp", "mov %rsp,%rbp"], name


def run_decode(binary: Path, library_dir: Path | None, tmp_path: Path, *args: str) -> dict:
    truth = tmp_path / "truth.json"
    env = {**os.environ, "LD_LIBRARY_PATH": str(library_dir)} if library_dir else None
    proc = subprocess.run(
        [str(binary), "decode", "--quiet", *args, "--truth", str(truth)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(truth.read_text())


@pytest.mark.parametrize("library_dir", [LIBCUDA_THUNK.parent, LIBCUDA_CET.parent], ids=["thunk", "cet"])
@pytest.mark.parametrize("binary", [CUDASIM, CUDASIM_STATIC], ids=["shared", "static"])
def test_each_shape_runs_the_workload_exactly_as_the_c_driver(tmp_path, library_dir, binary):
    args = ["--tokens", "4", "--launch", "mixed", "--sync", "mixed", "--threads", "2"]
    plain = run_decode(binary, None, tmp_path, *args)
    shaped = run_decode(binary, library_dir, tmp_path, *args)
    for key in ("launches", "kernels", "syncs", "launches_by_api", "syncs_by_api", "calls_by_runtime_api"):
        assert shaped["totals"][key] == plain["totals"][key], key
    # and that is the workload's: each of 2 threads, 4 tokens of 478 kernels (docs/cudasim.md), graphs or not
    assert shaped["totals"]["kernels"] == 2 * 4 * 478


def test_the_runtime_refuses_empty_launches_and_the_truth_logs_each(run_cudasim):
    truth = run_cudasim("--tokens", "4", "--invalid-every", "50", "--ptsz", "--threads", "2").truth
    columns = truth["runtime_error_columns"]
    errors = [dict(zip(columns, row)) for row in truth["runtime_errors"]]
    layer_launches = 4 * 28 * 17
    assert len(errors) == truth["totals"]["runtime_errors"] == 2 * (layer_launches // 50)
    assert truth["totals"]["runtime_errors_by_api"] == {"cudaLaunchKernel_ptsz": 2 * (layer_launches // 50)}
    assert {e["return_code"] for e in errors} == {9}  # cudaErrorInvalidConfiguration
    # the refused launches are extra: the real ones are all there, unchanged
    for thread in truth["processes"][0]["threads"]:
        assert launch_args_of(truth, thread["tid"]) == expected_launches(4)
        assert thread["runtime_errors"] == layer_launches // 50


def test_only_the_runtime_refuses_empty_launches():
    proc = subprocess.run(
        [str(CUDASIM), "decode", "--api", "driver", "--invalid-every", "5"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "cudasim: --invalid-every needs --api runtime: the runtime is what refuses the launch"
