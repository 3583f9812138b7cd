"""Load generators really load, and leave nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from launchgap import procfs
from launchgap.experiments import loadgen
from launchgap.experiments.loadgen import CpuLoad, DiskLoad, LoadError, NetworkLoad
from tests.conftest import REPO


def alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists()
            and procfs.read_stat(f"/proc/{p}/stat")[1][0] != "Z"]


def group_members(pgids: list[int]) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(procfs.read_stat(entry / "stat")[1][2]) in pgids:
                    out.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


@pytest.mark.parametrize("make", [lambda: CpuLoad(workers=1), lambda: NetworkLoad(streams=2),
                                  lambda: DiskLoad(REPO)])
def test_each_load_is_verified_and_then_gone_without_a_trace(make):
    gen = make()
    with gen:
        pgids = [p.pid for p in gen.procs]
        assert group_members(pgids), "the generator runs in its own process group"
        assert gen.evidence
        files = list(gen.files)
    assert alive(group_members(pgids)) == []
    assert all(not f.exists() for f in files)


def test_disk_load_refuses_tmpfs(tmp_path):
    shm = Path("/dev/shm")
    if loadgen.backing_device(shm)[0] != "tmpfs":
        pytest.skip("/dev/shm is not tmpfs here")
    with pytest.raises(LoadError, match="not a block device"):
        DiskLoad(shm)


def test_a_missing_generator_names_its_package(monkeypatch):
    monkeypatch.setattr(loadgen.shutil, "which", lambda name: None)
    with pytest.raises(LoadError, match="stress-ng not found: install the stress-ng package"):
        CpuLoad(workers=1).start()


def test_a_generator_that_does_not_load_is_stopped_and_reported(monkeypatch):
    gen = CpuLoad(workers=1)
    monkeypatch.setattr(loadgen, "VERIFY_TIMEOUT_S", 1.0)
    monkeypatch.setattr(gen, "_enough", lambda rate: False)
    gen.start()
    pgids = [p.pid for p in gen.procs]
    with pytest.raises(LoadError, match="cpu: not loading"):
        gen.verify()
    assert alive(group_members(pgids)) == []


def _weight_session(pid: int, nice: int) -> None:
    """Give PID's autogroup (its session, when sched_autogroup is on) the weight of NICE; nothing to do when
    autogroups are off (then the three competitors outweigh the worker by themselves)."""
    autogroup = Path(f"/proc/{pid}/autogroup")
    if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1" and autogroup.exists():
        try:
            autogroup.write_text(f"{nice}\n")
        except PermissionError:
            pytest.skip("sched_autogroup is on and raising a session's weight needs CAP_SYS_NICE")


def test_a_cpu_load_on_a_busy_cpu_is_verified_by_the_cpu_it_wants():
    """Three other hogs pinned to CPU0 leave our worker there a quarter of it (less beside the suite's
    own stress-ng): what it gets is under MIN_CPU_SHARE, which the old measure (CPU got) refused as
    "not loading"; it is runnable all the time, so it loads the CPU, and is verified."""
    competitors = subprocess.Popen(["stress-ng", "--cpu", "3", "--taskset", "0", "--timeout", "120", "--quiet"],
                                   start_new_session=True)
    try:
        # With sched_autogroup on (as here), each session is one scheduling entity: our worker's session and
        # the competitors' would split CPU0 half and half, right at MIN_CPU_SHARE. Weighting the competitors'
        # session (nice -10: about 9x) leaves the worker the small share this test is about.
        _weight_session(competitors.pid, -10)
        time.sleep(0.5)
        with CpuLoad(workers=1, cpus=[0]) as gen:
            pgids = [p.pid for p in gen.procs]
            got_before, t0 = loadgen._group_cpu_seconds(pgids), time.monotonic()
            time.sleep(1.0)
            got = (loadgen._group_cpu_seconds(pgids) - got_before) / (time.monotonic() - t0)
            wanted, measure = gen.evidence.split(" ", 1)
            assert measure == "CPUs wanted (running or runnable)"
            assert float(wanted) >= loadgen.MIN_CPU_SHARE
            assert got < loadgen.MIN_CPU_SHARE, got
    finally:
        os.killpg(competitors.pid, signal.SIGKILL)
        competitors.wait()
