"""Fixtures for the recorder's tests: they load real BPF into this kernel."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from launchgap.trace import Trace, read_trace
from tests.conftest import CUDASIM, LIBCUDA, LIBCUDA_THUNK, REPO, directory_in_tmp

if TYPE_CHECKING:
    import polars as pl

RECORDER = REPO / "recorder" / "target" / "release" / "launchgap-record"
STORM = REPO / "workloads" / "storm" / "build" / "storm"


def _why_bpf_cannot_run() -> str | None:
    if os.geteuid() != 0:
        return "needs root to load BPF (CI runs as root)"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "kernel has no BTF (/sys/kernel/btf/vmlinux)"
    return None


SKIP_REASON = _why_bpf_cannot_run()
needs_bpf = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


@pytest.fixture(scope="session", autouse=True)
def recorder_built() -> None:
    if not RECORDER.exists():
        pytest.exit("the recorder is not built: run `make test` (or scripts/setup.sh) first", 2)


@dataclass
class Recording:
    proc: subprocess.CompletedProcess
    trace: Trace
    truth: dict | None


@pytest.fixture
def record(tmp_path: Path):
    """Runs the recorder on a command; returns its trace and cudasim's truth if any."""

    def run(
        command: list[str],
        *recorder_args: str,
        truth: bool = True,
        check: bool = True,
        env: dict | None = None,
        preexec_fn=None,
    ) -> Recording:
        out = tmp_path / "run.lg"
        truth_path = tmp_path / "truth.json"
        if truth:
            command = [*command, "--truth", str(truth_path)]
        proc = subprocess.run(
            [str(RECORDER), "-o", str(out), *recorder_args, "--", *command],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            preexec_fn=preexec_fn,
        )
        if check:
            assert proc.returncode == 0, proc.stderr
        trace = read_trace(out)
        return Recording(proc, trace, json.loads(truth_path.read_text()) if truth else None)

    return run


@pytest.fixture
def shared_dir():
    """A directory every user may write, as /tmp is: for tests that run something as nobody."""
    with directory_in_tmp("launchgap-test-", 0o777) as path:
        yield path


def assert_switches_as_the_kernel_counted(mine, counters: dict) -> None:
    """One thread's recorded switch-outs (MINE, switch rows) against /proc's counters of them, as cudasim's truth
    holds them (`kernel_switches`, read inside [read_start_ns, read_end_ns]): voluntary and involuntary each at
    least as many as were recorded before the read began and at most as many as by its end. Exact when no switch
    fell in the window; on a loaded machine the thread is preempted while it reads (4 switches inside one 331 us
    read beside stress-ng), and the counters land between."""
    import polars as pl

    before = mine.filter(pl.col("ts_ns") < counters["read_start_ns"])
    by_end = mine.filter(pl.col("ts_ns") <= counters["read_end_ns"])
    for kind, recorded in (("voluntary", pl.col("voluntary")), ("nonvoluntary", ~pl.col("voluntary"))):
        assert before.filter(recorded).height <= counters[kind] <= by_end.filter(recorded).height, (
            kind,
            before.filter(recorded).height,
            by_end.filter(recorded).height,
            counters,
        )


def cudasim_command(*args: str, binary: Path = CUDASIM) -> list[str]:
    return [str(binary), "decode", "--quiet", *args]


def our_programs_loaded() -> int:
    """How many BPF programs with our names are loaded (names are cut at 15 chars)."""
    out = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True).stdout
    ours = ("handle_sched_sw", "launch_kernel", "handle_irq_entr", "sync_exit")
    return sum(1 for line in out.splitlines() if any(f"name {n}" in line for n in ours))


def running_on_a_replaced_driver(libdir: Path, tokens: int, truth: Path | None = None, user=None):
    """cudasim on a copy of the stand-in driver that is deleted once mapped
    (as a driver upgrade replaces the library under a running job)."""
    library = libdir / "libcuda.so.1"
    shutil.copy2(LIBCUDA_THUNK, library)
    env = {**os.environ, "LD_LIBRARY_PATH": str(libdir)}
    args = [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens)]
    if truth is not None:
        args += ["--truth", str(truth)]
    workload = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, start_new_session=True, preexec_fn=user)
    deadline = time.monotonic() + 30
    while str(library) not in Path(f"/proc/{workload.pid}/maps").read_text():
        assert time.monotonic() < deadline, "cudasim never mapped the driver"
        time.sleep(0.02)
    library.unlink()
    # the upgrade's new file at the same name: not the file the process runs
    shutil.copy2(LIBCUDA, library)
    maps = Path(f"/proc/{workload.pid}/maps").read_text()
    assert f"{library} (deleted)" in maps
    return workload


def stop(workload: subprocess.Popen) -> None:
    if workload.poll() is None:
        os.killpg(workload.pid, signal.SIGKILL)
    workload.wait()


def assert_same_launches(recorded: pl.DataFrame, expected: pl.DataFrame) -> None:
    """The launches RECORDED are EXPECTED's, in order, shape for shape; on a difference, the first one said (a plain
    == of a few hundred thousand rows makes pytest diff them for half an hour)."""
    import polars as pl

    columns = ["grid_x", "block_x", "shared_mem", "stream"]
    ours, theirs = recorded.select(columns), expected.select(columns)
    assert ours.height == theirs.height
    differ = ours.with_row_index("i").filter(pl.any_horizontal(pl.col(c) != theirs[c] for c in columns))
    assert differ.height == 0, (
        f"{differ.height} of {ours.height} launches differ, first at {differ['i'][0]}: "
        f"{ours.row(differ['i'][0])} recorded, {theirs.row(differ['i'][0])} launched"
    )
