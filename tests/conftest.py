"""Shared fixtures: where the built artefacts live and how to run cudasim."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# the suite's checks on its own tests: one that asserts nothing fails, and so does an unexpected skip in CI
pytest_plugins = ["tests.census"]

REPO = Path(__file__).resolve().parent.parent
CUDASIM_BUILD = REPO / "workloads" / "cudasim" / "build"
CUDASIM = CUDASIM_BUILD / "bin" / "cudasim"
CUDASIM_STATIC = CUDASIM_BUILD / "bin" / "cudasim-static"
LIBCUDA = CUDASIM_BUILD / "lib" / "libcuda.so.1"
LIBCUDART = CUDASIM_BUILD / "lib" / "libcudart.so.12"
# the same stand-in driver in two more shapes real drivers have (docs/cudasim.md)
LIBCUDA_THUNK = CUDASIM_BUILD / "lib-thunk" / "libcuda.so.1"
LIBCUDA_CET = CUDASIM_BUILD / "lib-cet" / "libcuda.so.1"

# NVIDIA's real libraries, fetched by scripts/fetch_real_cuda.sh (run by `make setup`)
REAL_CUDA = REPO / ".cache" / "real-cuda"
REAL_LIBCUDA = REAL_CUDA / "driver-535" / "libcuda.so.1"
REAL_LIBCUDART_11 = REAL_CUDA / "cudart-11" / "libcudart.so.11.0"
REAL_LIBCUDART_12 = REAL_CUDA / "cudart-12" / "libcudart.so.12"


def needs_real(path: Path):
    """Skips, saying why, when a real NVIDIA library could not be fetched."""
    return pytest.mark.skipif(
        not path.exists(),
        reason=f"{path.relative_to(REPO)} is missing: "
        "scripts/fetch_real_cuda.sh could not download it (see `make setup`)",
    )


@dataclass
class CudasimRun:
    stdout: str
    stderr: str
    truth: dict

    @property
    def tokens_per_s(self) -> float:
        for line in self.stdout.splitlines():
            if line.startswith("tok/s: "):
                return float(line.split()[1])
        raise AssertionError(f"no tok/s line in {self.stdout!r}")


@pytest.fixture(scope="session", autouse=True)
def built_cudasim() -> None:
    if not CUDASIM.exists():
        pytest.exit("cudasim is not built: run `make test` (or scripts/setup.sh) first", 2)


@pytest.fixture
def run_cudasim(tmp_path: Path):
    def run(*args: str, binary: Path = CUDASIM) -> CudasimRun:
        truth_path = tmp_path / "truth.json"
        proc = subprocess.run(
            [str(binary), "decode", *args, "--truth", str(truth_path)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return CudasimRun(proc.stdout, proc.stderr, json.loads(truth_path.read_text()))

    return run


# a task name that is not UTF-8 (anyone may name a process so: prctl, or the executable's file name) and
@contextlib.contextmanager
def directory_in_tmp(prefix: str, mode: int):
    """A fresh directory under /tmp with MODE, removed afterwards: for tests that act as another user (a
    test's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(mode)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# what the trace and launchgap show for it (docs/trace-format.md, "Names")
ODD_NAME = b"\xffodd"
ODD_NAME_SHOWN = "\\xffodd"


@pytest.fixture
def odd_named_sleep(tmp_path: Path) -> Path:
    """A copy of sleep whose file name, and so the name of the process it runs as, is ODD_NAME."""
    folder = tmp_path / "odd"
    folder.mkdir()
    binary = folder / os.fsdecode(ODD_NAME)
    shutil.copy2(shutil.which("sleep"), binary)
    return binary


@pytest.fixture
def odd_named_process(odd_named_sleep: Path):
    """A process named ODD_NAME running on the host for the test's duration (its pid; its own process
    group); ended, by its pid, whatever the test does."""
    proc = subprocess.Popen([str(odd_named_sleep), "600"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{proc.pid}/comm").read_bytes() != ODD_NAME + b"\n":
            assert time.monotonic() < deadline, "the odd-named process never took its name"
            time.sleep(0.01)
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
