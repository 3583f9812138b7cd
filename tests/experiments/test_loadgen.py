"""Load generators really load, and leave nothing behind."""

from __future__ import annotations

import contextlib
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
    return [p for p in pids if Path(f"/proc/{p}").exists() and procfs.read_stat(f"/proc/{p}/stat")[1][0] != "Z"]


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


def cpu_wanted_ns(pgids: list[int]) -> int:
    """The kernel's count of the time the groups' threads ran or waited to run (each thread's schedstat)."""
    total = 0
    for pid in group_members(pgids):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                run_ns, wait_ns = (int(v) for v in (task / "schedstat").read_text().split()[:2])
                total += run_ns + wait_ns
    return total


def loopback_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])
    raise AssertionError("no lo in /proc/net/dev")


def writes_completed(directory: Path) -> int:
    """The kernel's count of writes completed on the block device holding DIRECTORY (its disk: /proc/diskstats
    counts a partition's writes on the disk too)."""
    dev = os.stat(directory).st_dev
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if (int(f[0]), int(f[1])) == (os.major(dev), os.minor(dev)):
            return int(f[7])
    raise AssertionError(f"{directory}'s device is not in /proc/diskstats")


# what the kernel counts of each load (the independent truth that it loads), and how much of it, once the
# generator is verified, is enough: a quarter of one CPU wanted, 5 MB over loopback, 5 writes (each a quarter
# or half of what the generator's own check wants a second, so a few seconds of a busy machine never miss it)
KERNEL_COUNTS = {
    "cpu": (cpu_wanted_ns, 250_000_000),
    "network": (lambda _: loopback_bytes(), 5 << 20),
    "disk": (lambda _: writes_completed(REPO), 5),
}


@pytest.mark.parametrize("make", [lambda: CpuLoad(workers=1), lambda: NetworkLoad(streams=2), lambda: DiskLoad(REPO)])
def test_each_load_is_verified_and_then_gone_without_a_trace(make):
    gen = make()
    with gen:
        pgids = [p.pid for p in gen.procs]
        # each process it started runs, in a process group of its own
        assert set(pgids) <= set(group_members(pgids)) and all(os.getpgid(pid) == pid for pid in pgids)
        # it loads: the kernel's own counter of that load grows (waited on, not slept for)
        count, enough = KERNEL_COUNTS[gen.name]
        before = count(pgids)
        deadline = time.monotonic() + 30
        while count(pgids) - before < enough:
            assert time.monotonic() < deadline, f"{gen.name}: the kernel counted {count(pgids) - before} in 30 s"
            time.sleep(0.05)
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
    competitors = subprocess.Popen(
        ["stress-ng", "--cpu", "3", "--taskset", "0", "--timeout", "120", "--quiet"], start_new_session=True
    )
    try:
        # With sched_autogroup on (as here), each session is one scheduling entity: our worker's session and
        # the competitors' would split CPU0 half and half, right at MIN_CPU_SHARE. Weighting the competitors'
        # session (nice -10: about 9x) leaves the worker the small share this test is about.
        _weight_session(competitors.pid, -10)
        # the three competitors running (stress-ng's workers are its children, in its group), not a guessed wait
        deadline = time.monotonic() + 30
        while len(alive(group_members([competitors.pid]))) < 4 or cpu_wanted_ns([competitors.pid]) < 100_000_000:
            assert time.monotonic() < deadline, "stress-ng's three workers never started"
            time.sleep(0.05)
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
