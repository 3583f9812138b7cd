"""Noisy neighbours: load generators that are started in their own process
group (on a leash: they die with the experiment, however it dies), checked
to be really loading before the workload starts, and stopped (with their
files removed) on every path.

Commands are argument lists, never shell strings.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from launchgap import procfs
from launchgap.experiments import leash
from launchgap.experiments.levers import SCRATCH_PREFIX

# How long a generator may take to show it is loading, and how it must.
VERIFY_TIMEOUT_S = 5.0
SAMPLE_S = 0.5
MIN_CPU_SHARE = 0.5  # of one CPU, per worker asked for
MIN_LOOPBACK_BYTES_PER_S = 10 << 20
MIN_WRITES_PER_S = 10
TMPFS_MAGIC = 0x01021994
# the most load processes a scenario may ask for: enough to overload any CPU, few enough not to
# fork-bomb the host (stress-ng workers per online CPU; fio jobs; iperf3's own cap on -P is 128)
MAX_CPU_WORKERS_PER_CPU = 8
MAX_DISK_JOBS = 64
MAX_NETWORK_STREAMS = 128
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class LoadError(RuntimeError):
    """A load generator is missing, failed to start, or is not loading."""


def _need(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if not path:
        raise LoadError(f"{binary} not found: install the {package} package")
    return path


class LoadGenerator:
    """Base: subclasses set `name` and `needs` and implement _commands / _progress."""

    name = "load"
    needs: tuple[tuple[str, str], ...] = ()  # (binary, the package that has it)

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.files: list[Path] = []
        self.evidence = ""
        # told of every file or directory the generator makes, before it is filled (the experiment's
        # journal, so that they are removed even if the experiment is killed)
        self.on_scratch = lambda path: None

    def check(self) -> None:
        """Raises LoadError if the generator cannot run here (before anything starts)."""
        for binary, package in self.needs:
            _need(binary, package)

    def _commands(self) -> list[list[str]]:
        raise NotImplementedError

    def _progress(self) -> float:
        """A counter that grows while the load is real (CPU seconds, bytes, writes)."""
        raise NotImplementedError

    def _enough(self, per_second: float) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        for command in self._commands():
            # on a leash: it dies with the experiment, even one killed by SIGKILL (leash.py)
            proc = leash.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.procs.append(proc)
            time.sleep(0.2)  # a server before its client
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
                self.stop()
                raise LoadError(
                    f"{self.name}: {command[0]} exited at once ({err.splitlines()[-1] if err else proc.returncode})"
                )

    def pids(self) -> list[int]:
        """Every live process of the load: its process groups' members (the leash, the generator and the
        workers it forked)."""
        return sorted(pid for proc in self.procs for pid in leash.group_members(proc.pid))

    def verify(self) -> str:
        """Waits until the load shows; returns what it measured, or raises."""
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        rate = 0.0
        while time.monotonic() < deadline:
            before = self._progress()
            time.sleep(SAMPLE_S)
            rate = (self._progress() - before) / SAMPLE_S
            if self._enough(rate):
                self.evidence = self._describe(rate)
                return self.evidence
            if any(p.poll() is not None for p in self.procs):
                break
        self.stop()
        raise LoadError(f"{self.name}: not loading ({self._describe(rate)})")

    def _describe(self, rate: float) -> str:
        return f"{rate:.1f}/s"

    def stop(self) -> None:
        for proc in self.procs:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    continue
            if proc.stderr:
                proc.stderr.close()
        self.procs.clear()
        for path in self.files:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        self.files.clear()

    def __enter__(self):
        self.start()
        self.verify()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# the kernel keeps each thread's run and run-queue wait times (CONFIG_SCHED_INFO)
HAS_SCHEDSTAT = Path("/proc/self/schedstat").exists()


def _group_processes(pgids: list[int]) -> list[tuple[Path, list[str]]]:
    """(/proc/PID, its stat fields after the name) of every process in the process groups PGIDS."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            _, fields = procfs.read_stat(entry / "stat")
            # after the name: state ppid pgrp session ... utime(12) stime(13) (0-based in this list)
            if int(fields[2]) in pgids:
                found.append((entry, fields))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _group_cpu_seconds(pgids: list[int]) -> float:
    return sum(int(fields[11]) + int(fields[12]) for _, fields in _group_processes(pgids)) / CLOCK_TICKS


def _group_cpu_wanted_seconds(pgids: list[int]) -> float:
    """Seconds the groups' threads spent running or runnable (waiting on a run queue), from each
    thread's schedstat (run ns, run-queue wait ns, timeslices)."""
    total_ns = 0
    for process, _ in _group_processes(pgids):
        try:
            for task in (process / "task").iterdir():
                run_ns, wait_ns = (int(v) for v in (task / "schedstat").read_text().split()[:2])
                total_ns += run_ns + wait_ns
        except (OSError, ValueError):
            continue  # exited meanwhile
    return total_ns / 1e9


class CpuLoad(LoadGenerator):
    """stress-ng CPU workers (fft, as the study), optionally confined to some CPUs."""

    name = "cpu"
    needs = (("stress-ng", "stress-ng"),)

    def __init__(self, workers: int | None = None, cpus: list[int] | None = None) -> None:
        super().__init__()
        self.workers = workers or len(os.sched_getaffinity(0))
        self.cpus = cpus

    def check(self) -> None:
        online = os.sched_getaffinity(0)
        if self.cpus is not None:
            missing = sorted(set(self.cpus) - online)
            if missing:
                raise LoadError(f"cpu: cpus {missing} are not among this host's online CPUs {sorted(online)}")
        limit = MAX_CPU_WORKERS_PER_CPU * len(online)
        if not 1 <= self.workers <= limit:
            raise LoadError(
                f"cpu: workers {self.workers}: give 1 to {limit} ({MAX_CPU_WORKERS_PER_CPU} per online CPU)"
            )
        super().check()

    def _commands(self) -> list[list[str]]:
        command = [_need("stress-ng", "stress-ng"), "--cpu", str(self.workers), "--cpu-method", "fft"]
        if self.cpus:
            command += ["--taskset", ",".join(map(str, self.cpus))]
        return [command]

    def _progress(self) -> float:
        # CPU wanted (running or runnable), not CPU got: on a host already busy (a shared node, or this
        # project's tests beside `stress-ng --cpu 2 --io 2`) a worker pinned to one CPU gets its fair
        # share, 0.16 to 0.4 of it, yet loads it all the time. A worker that stopped or sleeps wants none.
        pgids = [p.pid for p in self.procs]
        return _group_cpu_wanted_seconds(pgids) if HAS_SCHEDSTAT else _group_cpu_seconds(pgids)

    def _enough(self, per_second: float) -> bool:
        return per_second >= MIN_CPU_SHARE * min(self.workers, len(self.cpus or os.sched_getaffinity(0)))

    def _describe(self, rate: float) -> str:
        return f"{rate:.2f} {'CPUs wanted (running or runnable)' if HAS_SCHEDSTAT else 'CPUs busy'}"


def _loopback_bytes() -> int:
    # an interface may be named with any bytes but "/", ":" and white space
    for line in procfs.read_text("/proc/net/dev").splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])
    return 0


class NetworkLoad(LoadGenerator):
    """iperf3 server and client on loopback, parallel streams (as the study: 10)."""

    name = "network"
    needs = (("iperf3", "iperf3"),)

    def __init__(self, streams: int = 10) -> None:
        super().__init__()
        self.streams = streams
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]

    def check(self) -> None:
        if not 1 <= self.streams <= MAX_NETWORK_STREAMS:
            raise LoadError(f"network: streams {self.streams}: give 1 to {MAX_NETWORK_STREAMS} (iperf3's own limit)")
        super().check()

    def _commands(self) -> list[list[str]]:
        iperf3 = _need("iperf3", "iperf3")
        return [
            [iperf3, "-s", "-B", "127.0.0.1", "-p", str(self.port)],
            [iperf3, "-c", "127.0.0.1", "-p", str(self.port), "-P", str(self.streams), "-t", "86400"],
        ]

    def _progress(self) -> float:
        return float(_loopback_bytes())

    def _enough(self, per_second: float) -> bool:
        return per_second >= MIN_LOOPBACK_BYTES_PER_S

    def _describe(self, rate: float) -> str:
        return f"{rate / 1e6:.0f} MB/s on loopback"


def backing_device(directory: Path) -> tuple[str, int, int]:
    """(filesystem type, major, minor) of the filesystem holding `directory`."""
    st = os.stat(directory)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    best = ("?", -1)
    # as bytes: a mount point may hold any, and mountinfo writes space, tab, newline and backslash as \ooo
    where = os.fsencode(directory.resolve())
    for line in Path("/proc/self/mountinfo").read_bytes().splitlines():
        left, _, right = line.partition(b" - ")
        parts = left.split()
        if len(parts) < 5 or not right or parts[2] != f"{major}:{minor}".encode():
            continue
        mount_point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), parts[4])
        inside = where == mount_point or where.startswith(mount_point.rstrip(b"/") + b"/")
        if inside and len(mount_point) > best[1]:
            best = (right.split()[0].decode("utf-8", "backslashreplace"), len(mount_point))
    return best[0], major, minor


def _writes_completed(major: int, minor: int) -> int:
    for line in procfs.read_text("/proc/diskstats").splitlines():
        f = line.split()
        if int(f[0]) == major and int(f[1]) == minor:
            return int(f[7])
    return 0


class DiskLoad(LoadGenerator):
    """fio random 4k writes with direct I/O (as the study), in a directory on a
    real block device: tmpfs (the usual /tmp) is refused, since it would
    measure nothing."""

    name = "disk"
    needs = (("fio", "fio"),)

    def __init__(self, directory: str | Path | None = None, jobs: int = 4) -> None:
        super().__init__()
        self.parent = Path(directory or "/var/tmp")
        self.jobs = jobs
        if not self.parent.is_dir():
            raise LoadError(f"disk: {self.parent}: no such directory (--disk-dir names where fio writes)")
        if not os.access(self.parent, os.W_OK | os.X_OK):
            raise LoadError(f"disk: {self.parent}: not writable")
        fstype, self.major, self.minor = backing_device(self.parent)
        if fstype in ("tmpfs", "ramfs") or self.major == 0:
            raise LoadError(
                f"disk: {self.parent} is on {fstype}, not a block device: direct I/O there "
                f"measures nothing; choose a directory on a disk"
            )

    def check(self) -> None:
        if not 1 <= self.jobs <= MAX_DISK_JOBS:
            raise LoadError(f"disk: jobs {self.jobs}: give 1 to {MAX_DISK_JOBS}")
        super().check()

    def _commands(self) -> list[list[str]]:
        fio = _need("fio", "fio")
        work = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=self.parent))
        self.files.append(work)
        self.on_scratch(work)
        return [
            [
                fio,
                "--name=launchgap-disk",
                f"--directory={work}",
                "--rw=randwrite",
                "--bs=4k",
                "--iodepth=32",
                f"--numjobs={self.jobs}",
                "--direct=1",
                "--size=64M",
                "--time_based",
                "--runtime=86400",
                "--ioengine=libaio",
                "--group_reporting",
            ]
        ]

    def _progress(self) -> float:
        return float(_writes_completed(self.major, self.minor))

    def _enough(self, per_second: float) -> bool:
        return per_second >= MIN_WRITES_PER_S

    def _describe(self, rate: float) -> str:
        return f"{rate:.0f} writes/s completed on {self.major}:{self.minor}"
