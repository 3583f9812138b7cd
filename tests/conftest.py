"""Shared fixtures: where the built artefacts live and how to run cudasim."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CUDASIM_BUILD = REPO / "workloads" / "cudasim" / "build"
CUDASIM = CUDASIM_BUILD / "bin" / "cudasim"
CUDASIM_STATIC = CUDASIM_BUILD / "bin" / "cudasim-static"
LIBCUDA = CUDASIM_BUILD / "lib" / "libcuda.so.1"
LIBCUDART = CUDASIM_BUILD / "lib" / "libcudart.so.12"


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
            [str(binary), "decode", *args, "--truth", str(truth_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return CudasimRun(proc.stdout, proc.stderr, json.loads(truth_path.read_text()))

    return run
