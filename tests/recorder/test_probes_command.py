"""`launchgap probes`: where every probe would go and what a hit costs, for
a command (not run), running processes or named libraries; no tracing, no
root."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import (
    CUDASIM,
    LIBCUDA,
    LIBCUDA_THUNK,
    LIBCUDART,
    REAL_LIBCUDA,
    REAL_LIBCUDART_11,
    REAL_LIBCUDART_12,
    needs_real,
)

LAUNCHGAP = [sys.executable, "-m", "launchgap.cli"]
DRIVER_PROBES = 16
RUNTIME_PROBES = 14


def probes(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LAUNCHGAP, "probes", *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def listing(*args: str, env: dict | None = None) -> dict:
    proc = probes("--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def of_file(found: dict, path: Path) -> list[dict]:
    return [p for p in found["probes"] if Path(p["file"]) == path.resolve()]


def test_for_a_command_on_the_thunk_driver_every_probe_is_past_the_compare():
    found = listing("--", str(CUDASIM), "decode", env={"LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent)})
    libraries = {Path(lib["path"]): (lib["kind"], lib["found_via"]) for lib in found["libraries"]}
    assert libraries[LIBCUDA_THUNK.resolve()] == ("driver", "command dependencies")
    assert libraries[LIBCUDART.resolve()] == ("runtime", "command dependencies")
    thunk = of_file(found, LIBCUDA_THUNK)
    assert len(thunk) == DRIVER_PROBES
    for p in thunk:
        assert (p["placed_offset"], p["probe_cost"], p["when"]) == (10, "emulated", "always"), p
        assert re.fullmatch(r"cmpl \$0x321cba00,0x[0-9a-f]+\(%rip\)", p["first_instruction"])
        assert p["probed_instruction"].startswith("je ")
    runtime = of_file(found, LIBCUDART)
    assert len(runtime) == RUNTIME_PROBES
    assert all(
        (p["placed_offset"], p["probed_instruction"], p["when"]) == (0, "push %rbp", "--api-names") for p in runtime
    )
    assert found["warnings"] == [] and found["missing"] == []


def test_the_table_names_each_library_and_the_cost_of_each_probe():
    proc = probes("--", str(CUDASIM), "decode", env={"LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent), "COLUMNS": "250"})
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert f"driver: {LIBCUDA_THUNK.resolve()} (found via command dependencies)" in text
    rows = [re.sub(r"\s+", " ", line) for line in text.splitlines() if "cuLaunchKernel " in line]
    assert any(re.search(r"cuLaunchKernel │ always │ \+10 │ je 0x[0-9a-f]+ │ emulated │ cmpl", r) for r in rows), rows
    assert any(re.search(r"cuLaunchKernel │ always │ \+0 │ push %rbp │ emulated │ -", r) for r in rows), rows


def test_for_a_running_process_the_maps_say_which_driver_it_uses(tmp_path):
    env = {**os.environ, "LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent)}
    workload = subprocess.Popen(
        [str(CUDASIM), "decode", "--quiet", "--tokens", "100000"],
        env=env,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while str(LIBCUDA_THUNK.resolve()) not in Path(f"/proc/{workload.pid}/maps").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        found = listing("-p", str(workload.pid))
    finally:
        os.killpg(workload.pid, signal.SIGKILL)
        workload.wait()
    vias = {Path(lib["path"]): lib["found_via"] for lib in found["libraries"]}
    assert vias[LIBCUDA_THUNK.resolve()] == "target maps"
    assert all(p["placed_offset"] == 10 for p in of_file(found, LIBCUDA_THUNK))


def test_a_file_that_is_no_cuda_library_is_one_line():
    proc = probes("--cuda-lib", "/etc/hostname")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "launchgap: --cuda-lib /etc/hostname: not an ELF file"


@needs_real(REAL_LIBCUDA)
def test_nvidias_driver_every_probe_is_placed_past_the_compare_and_emulated():
    found = listing("--cuda-lib", str(REAL_LIBCUDA))
    driver = of_file(found, REAL_LIBCUDA)
    assert len(driver) == DRIVER_PROBES
    for p in driver:
        assert (p["placed_offset"], p["probe_cost"]) == (10, "emulated"), p
        assert re.fullmatch(r"cmpl \$0x321cba00,0x[0-9a-f]+\(%rip\)", p["moved_over"][0])
        assert re.fullmatch(r"je 0x[0-9a-f]+", p["probed_instruction"])
    assert found["warnings"] == []


@needs_real(REAL_LIBCUDART_11)
@needs_real(REAL_LIBCUDART_12)
def test_nvidias_runtimes_are_probed_at_their_entry_pushes():
    found = listing("--cuda-lib", str(REAL_LIBCUDART_11), "--cuda-lib", str(REAL_LIBCUDART_12))
    for library, pushes in ((REAL_LIBCUDART_11, r"push %r1[2-5]"), (REAL_LIBCUDART_12, r"push %rbp")):
        runtime = of_file(found, library)
        assert len(runtime) == RUNTIME_PROBES  # versioned symbols (cudaLaunchKernel@@libcudart.so.11.0) included
        for p in runtime:
            assert (p["placed_offset"], p["probe_cost"], p["moved_over"]) == (0, "emulated", []), p
            assert re.fullmatch(pushes, p["probed_instruction"]), p


@pytest.mark.parametrize("args", [["--cuda-lib", str(LIBCUDA)], ["--", str(CUDASIM), "decode"]])
def test_json_and_table_agree_on_the_libraries(args):
    found = listing(*args)
    proc = probes(*args, env={"COLUMNS": "250"})
    for library in found["libraries"]:
        assert f"{library['kind']}: {library['path']} (found via {library['found_via']})" in proc.stdout
