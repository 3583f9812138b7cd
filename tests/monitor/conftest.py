"""Fixtures for the monitor's tests: they run launchgap-monitor (real BPF in
this kernel), scrape it over loopback and parse the page with the
prometheus_client package's OpenMetrics parser."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests.conftest import REPO
from tests.recorder.conftest import SKIP_REASON

MONITOR = REPO / "recorder" / "target" / "release" / "launchgap-monitor"
needs_bpf = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
READY_PREFIX = "launchgap-monitor: serving http://"
START_TIMEOUT_S = 60


@pytest.fixture(scope="session", autouse=True)
def monitor_built() -> None:
    if not MONITOR.exists():
        pytest.exit("the monitor is not built: run `make test` (or scripts/setup.sh) first", 2)


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Scrape:
    text: str
    content_type: str
    families: dict[str, object] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)

    def select(self, name: str, **labels: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels: str) -> float:
        return sum(s.value for s in self.select(name, **labels))

    def names(self) -> set[str]:
        return {s.name for s in self.samples}


def parse(text: str, content_type: str = "") -> Scrape:
    scrape = Scrape(text, content_type)
    for family in text_string_to_metric_families(text):
        scrape.families[family.name] = family
        for s in family.samples:
            scrape.samples.append(Sample(s.name, dict(s.labels), float(s.value)))
    return scrape


class Monitor:
    """A running launchgap-monitor; scrape() reads /metrics, stop() signals it."""

    def __init__(self, args: list[str], env: dict | None = None):
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [str(MONITOR), "--listen", "127.0.0.1:0", *args],
            stdout=subprocess.DEVNULL,
            stderr=self.stderr_file,
            text=True,
            env=env,
        )
        self.url = self._wait_until_serving()

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read()

    def _wait_until_serving(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for line in self.stderr().splitlines():
                if line.startswith(READY_PREFIX):
                    return "http://" + line[len(READY_PREFIX) :].split("/metrics")[0] + "/metrics"
            if self.proc.poll() is not None:
                raise AssertionError(f"the monitor exited ({self.proc.returncode}): {self.stderr()}")
            time.sleep(0.05)
        raise AssertionError(f"the monitor did not start serving: {self.stderr()}")

    def fetch(self, path: str = "/metrics") -> tuple[int, str, str]:
        url = self.url.replace("/metrics", path)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.headers.get("Content-Type", ""), err.read().decode()

    def scrape(self) -> Scrape:
        status, content_type, text = self.fetch()
        assert status == 200, text
        return parse(text, content_type)

    def settle(self, seconds: float = 2.5) -> None:
        """Lets a sweep or two run (they take exited threads' counters)."""
        time.sleep(seconds)

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.stderr_file.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def running_monitor(*args: str, env: dict | None = None) -> Iterator[Monitor]:
    monitor = Monitor(list(args), env=env)
    try:
        yield monitor
    finally:
        monitor.kill()


def cgroup2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        dash = fields.index("-")
        if fields[dash + 1] == "cgroup2":
            return Path(fields[4])
    return None


@contextmanager
def scratch_cgroup(root: Path, name: str) -> Iterator[Path]:
    """A cgroup made for a test; its processes are moved back to the root and it is removed."""
    path = root / f"{name}-{os.getpid()}"
    path.mkdir()
    try:
        yield path
    finally:
        for _ in range(50):
            pids = (path / "cgroup.procs").read_text().split()
            for pid in pids:
                try:
                    (root / "cgroup.procs").write_text(pid)
                except OSError:
                    pass  # exited meanwhile
            try:
                path.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def join_cgroup(path: Path):
    """A preexec_fn putting the child in the cgroup before it runs anything."""

    def join() -> None:
        (path / "cgroup.procs").write_text(str(os.getpid()))

    return join


HOG_COMM = "launchgap-hog"
# spins on one CPU under a name no other task has, so its culprit time is its own
_HOG = (
    f"import ctypes, os; ctypes.CDLL(None).prctl(15, b'{HOG_COMM}', 0, 0, 0); "
    "os.sched_setaffinity(0, {int(os.environ['HOG_CPU'])})\nwhile True: pass"
)


def _spinning(pid: int) -> bool:
    try:
        named = Path(f"/proc/{pid}/comm").read_text().strip() == HOG_COMM
        return named and int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) > 50_000_000
    except OSError:
        return False


@contextmanager
def cpu_hog(cpu: int) -> Iterator[subprocess.Popen]:
    """A busy loop pinned on one CPU, in its own process group, stopped by that group."""
    hog = subprocess.Popen(
        [sys.executable, "-c", _HOG],
        env={**os.environ, "HOG_CPU": str(cpu)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # spinning before the workload starts: named (it names itself first), and on a CPU (its schedstat)
        deadline = time.monotonic() + 30
        while not _spinning(hog.pid):
            assert hog.poll() is None and time.monotonic() < deadline, "the CPU hog did not start"
            time.sleep(0.01)
        yield hog
    finally:
        try:
            os.killpg(hog.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        hog.wait()


def _bpftool(kind: str) -> list[dict]:
    import json

    out = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def monitor_programs() -> dict[int, dict]:
    """Loaded BPF programs with the monitor's names (all begin monitor_), by id. This
    bpftool cannot say which process holds a program, so tests take the ids that
    appear while their monitor starts."""
    return {p["id"]: p for p in _bpftool("prog") if p.get("name", "").startswith("monitor_")}


def loaded_maps() -> dict[int, dict]:
    return {m["id"]: m for m in _bpftool("map")}
