"""lever-workload: each class does its known amount of work and says so, the
disturbance burns the CPU share asked (by the kernel's own accounting),
pinning holds, tmpfs is refused."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

WORKLOAD = REPO / "workloads" / "levers" / "build" / "lever-workload"
CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    if not WORKLOAD.exists():
        pytest.exit("lever-workload is not built: run `make test` (or scripts/setup.sh) first", 2)


def two_cpus() -> tuple[int, int]:
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[0], allowed[-1]


def result_of(stdout: str) -> dict[str, str]:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("lever-workload "), stdout
    return dict(field.split("=", 1) for field in last.split()[1:])


def run(*args: str, timeout: int = 300) -> tuple[dict[str, str], float]:
    started = time.monotonic()
    proc = subprocess.run([str(WORKLOAD), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    return result_of(proc.stdout), wall


def disk_dir(tmp_path: Path) -> Path:
    """A directory on a real disk: the repository's, when tmp_path is on tmpfs."""
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    if fs not in ("tmpfs", "ramfs"):
        return tmp_path
    here = REPO / "workloads" / "levers" / "build"
    return here


def compute_sum(rows: int) -> float:
    """sum over i, j < rows of i*1e-6 + j*2e-6, the compute loop's closed form."""
    return rows * (rows * (rows - 1) / 2) * 3e-6


def test_compute_does_the_study_loop_and_times_itself():
    a, b = two_cpus()
    result, wall = run("compute", "--threads", 2, "--cpus", f"{a},{b}", "--size", 4000)
    assert result["class"] == "compute" and result["threads"] == "2" and result["cpus"] == f"{a},{b}"
    assert float(result["checksum"]) == pytest.approx(compute_sum(4000), rel=1e-6)
    elapsed = float(result["elapsed_s"])
    assert 0 < elapsed <= wall
    assert int(result["elapsed_ns"]) == pytest.approx(elapsed * 1e9, abs=1)


def llc_from_sysfs() -> tuple[int, int]:
    best = (-1, 0, 64)
    for index in sorted(CACHE.glob("index*")):
        if (index / "type").read_text().strip() == "Instruction":
            continue
        level = int((index / "level").read_text())
        size = (index / "size").read_text().strip()
        factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
        number = int(size.rstrip("KMG")) * factor
        line = int((index / "coherency_line_size").read_text())
        if level > best[0]:
            best = (level, number, line)
    return best[1], best[2]


@pytest.mark.skipif(not CACHE.exists(), reason="no cache information in sysfs")
def test_memory_walks_a_buffer_larger_than_the_last_level_cache():
    llc, line = llc_from_sysfs()
    result, wall = run("memory", "--threads", 2, "--passes", 2)
    assert int(result["llc_bytes"]) == llc and int(result["line_bytes"]) == line
    size = int(result["size"])
    assert size == 2 * llc > llc
    # every line touched once per pass, from zero
    assert float(result["checksum"]) == pytest.approx(size // line * 2, rel=1e-9)
    assert 0 < float(result["elapsed_s"]) <= wall


def _written_to_disk() -> int:
    """This process's write_bytes: it includes the I/O of every child it has reaped."""
    return int(re.search(r"^write_bytes: (\d+)", Path("/proc/self/io").read_text(), re.M).group(1))


def test_io_writes_through_to_the_disk_with_fsync(tmp_path):
    directory = disk_dir(tmp_path)
    size = 32 << 20
    before = _written_to_disk()
    result, wall = run("io", "--threads", 2, "--size", size, "--fsync-every", 4 << 20, "--dir", directory)
    reached_disk = _written_to_disk() - before
    assert int(result["bytes_written"]) == size
    assert int(result["fsyncs"]) == 2 * (size // 2 // (4 << 20) + 1)  # every 4M per thread, and at the end
    assert reached_disk >= size, "the kernel counted fewer bytes sent to the block layer than were written"
    assert 0 < float(result["elapsed_s"]) <= wall
    assert not list(directory.glob("lever-workload-*")), "the file is unlinked as soon as it is made"


def test_mixed_computes_with_checkpoints(tmp_path):
    directory = disk_dir(tmp_path)
    result, _ = run("mixed", "--size", 3000, "--checkpoint-every", 500, "--checkpoint-bytes", 8192, "--dir", directory)
    assert int(result["fsyncs"]) == 3000 // 500
    assert int(result["bytes_written"]) == 3000 // 500 * 8192
    assert float(result["checksum"]) == pytest.approx(compute_sum(3000), rel=1e-6)


def tmpfs_directory() -> Path | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        device, mount, fstype, *_ = line.split()
        if fstype == "tmpfs" and os.access(mount, os.W_OK) and mount in ("/dev/shm", "/tmp", "/run"):
            return Path(mount)
    return None


@pytest.mark.parametrize("cls", ["io", "mixed"])
def test_tmpfs_is_refused_before_anything_is_written(cls):
    tmpfs = tmpfs_directory()
    if tmpfs is None:
        pytest.skip("no writable tmpfs mount (/dev/shm, /tmp, /run) on this machine")
    leftover = set(tmpfs.glob("lever-workload-*"))
    proc = subprocess.run([str(WORKLOAD), cls, "--dir", str(tmpfs)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"lever-workload: {tmpfs} is on tmpfs, not a disk: buffered writes and fsync there "
        "measure nothing; choose a directory on a disk (--dir)\n"
    )
    assert proc.stdout == ""
    assert set(tmpfs.glob("lever-workload-*")) == leftover


def threads_by_name(pid: int) -> dict[str, int]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[(task / "comm").read_text().strip()] = int(task.name)
        except OSError:
            pass
    return out


def wait_for_threads(proc: subprocess.Popen, names: set[str], timeout: float = 60) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = threads_by_name(proc.pid)
        if names <= set(found):
            return found
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError(f"threads {names} never appeared")


def allowed_cpus(pid: int, tid: int) -> str:
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    return re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M).group(1)


def test_pinning_holds_for_every_worker_and_the_disturbance():
    a, b = two_cpus()
    proc = subprocess.Popen(
        [
            str(WORKLOAD),
            "compute",
            "--threads",
            "3",
            "--cpus",
            f"{a},{b}",
            "--size",
            "200000",
            "--disturb",
            "1:50",
            "--disturb-cpu",
            str(b),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = wait_for_threads(proc, {"lg-work-0", "lg-work-1", "lg-work-2", "lg-disturb"})
        # worker i on the i-th CPU of the list, round robin; a thread is named only once pinned
        assert allowed_cpus(proc.pid, found["lg-work-0"]) == str(a)
        assert allowed_cpus(proc.pid, found["lg-work-1"]) == str(b)
        assert allowed_cpus(proc.pid, found["lg-work-2"]) == str(a)
        assert allowed_cpus(proc.pid, found["lg-disturb"]) == str(b)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def thread_cpu_s(pid: int, tid: int) -> float:
    """The thread's CPU time by the kernel's own accounting: schedstat's
    nanoseconds on CPU, else utime + stime ticks from stat."""
    task = Path(f"/proc/{pid}/task/{tid}")
    try:
        return int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        stat = (task / "stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def sleeps(pid: int, tid: int) -> int:
    """voluntary_ctxt_switches: the disturbance sleeps once per period, after its spike."""
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    return int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M).group(1))


def test_the_disturbance_burns_the_share_of_cpu_asked():
    """Each period the thread burns SPIN ms of CPU and then sleeps: by the
    kernel's counters, CPU time per sleep is SPIN, sleeps are at least PERIOD
    apart, and where the machine keeps up (a period is not stretched by a
    spike that had to wait for a CPU) CPU time over wall time is SPIN/PERIOD. The window is waited on, not
    slept: it opens as the thread goes to sleep after a spike (its sleep count grows) and closes as it does
    so PERIODS sleeps later, so it holds whole periods."""
    spin_ms, period_ms, window = 20, 100, 20
    proc = subprocess.Popen(
        [str(WORKLOAD), "compute", "--size", "1000000", "--disturb", f"{spin_ms}:{period_ms}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        tid = wait_for_threads(proc, {"lg-disturb"})["lg-disturb"]
        first = wait_for_sleeps(proc.pid, tid, 1)  # past its first period
        sleeps0 = wait_for_sleeps(proc.pid, tid, first + 1)
        cpu0, wall0 = thread_cpu_s(proc.pid, tid), time.monotonic()
        sleeps1 = wait_for_sleeps(proc.pid, tid, sleeps0 + window)
        cpu1, wall1 = thread_cpu_s(proc.pid, tid), time.monotonic()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    # WINDOW sleeps, or one more where this poller was itself kept from a CPU past one
    periods = sleeps1 - sleeps0
    assert window <= periods <= window + 1
    # the window cuts at most one spike at each end
    assert (cpu1 - cpu0) / periods == pytest.approx(spin_ms / 1000, rel=2 / periods + 0.05)
    wall_per_period = (wall1 - wall0) / periods
    assert wall_per_period >= period_ms / 1000 * (1 - 2 / periods)
    if wall_per_period <= period_ms / 1000 * 1.1:
        assert (cpu1 - cpu0) / (wall1 - wall0) == pytest.approx(spin_ms / period_ms, abs=0.03)


def wait_for_sleeps(pid: int, tid: int, count: int, timeout_s: float = 60.0) -> int:
    """Polls the thread's sleep count (1 ms apart) until it reaches COUNT: returns it, just after the sleep."""
    deadline = time.monotonic() + timeout_s
    while (now := sleeps(pid, tid)) < count:
        assert time.monotonic() < deadline, f"the disturbance slept {now} times, not {count}, in {timeout_s} s"
        time.sleep(0.001)
    return now


def test_the_disturbance_reports_its_spikes():
    spin_ms, period_ms = 10, 50
    result, _ = run("compute", "--size", "25000", "--disturb", f"{spin_ms}:{period_ms}")
    spikes = int(result["disturb_spikes"])
    elapsed = float(result["elapsed_s"])
    assert spikes >= 1
    # each spike is SPIN ms of the thread's own CPU time, by its thread CPU clock
    assert int(result["disturb_cpu_ns"]) / spikes == pytest.approx(spin_ms * 1e6, rel=0.1)
    # at most one spike per period (fewer where a loaded machine stretched a spike past its period)
    assert spikes <= elapsed * 1000 / period_ms + 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["fast"], "lever-workload: unknown class fast (compute, memory, io, mixed)"),
        (["compute", "--disturb", "300"], "lever-workload: --disturb wants SPIN_MS:PERIOD_MS, not 300"),
        (
            ["compute", "--disturb", "50:10"],
            "lever-workload: --disturb: SPIN must be between 1 ms and PERIOD (e.g. 20:300)",
        ),
        (["compute", "--cpus", "x"], "lever-workload: bad CPU list x"),
        # strtoull reads "-1" as 2^64-1: the loop ran for ever
        (["compute", "--size", "-1"], "lever-workload: bad number for --size"),
        (["compute", "--size", "0"], "lever-workload: --size must be at least 1"),
        (["compute", "--size", "abc"], "lever-workload: bad number for --size"),
        (
            ["compute", "--size", "1000001"],
            "lever-workload: --size: at most 1000000 rows for compute (the loop is N x N)",
        ),
        (["mixed", "--size", "1G"], "lever-workload: --size: at most 1000000 rows for mixed (the loop is N x N)"),
        (["memory", "--size", "65G"], "lever-workload: --size: at most 64G bytes for memory"),
        (["io", "--size", "99999999999999999999G"], "lever-workload: bad number for --size"),
        (["io", "--size", "17179869184G"], "lever-workload: bad number for --size"),
    ],
)
def test_usage_errors_are_one_line(args, message):
    proc = subprocess.run([str(WORKLOAD), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and proc.stderr == message + "\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
@pytest.mark.parametrize("policy", [["chrt", "-f", "10"], []])
def test_elapsed_covers_the_work_when_the_workers_run_before_the_main_thread(policy):
    """One CPU for every thread: once released, the worker may run to its end before the main thread gets
    the CPU back (always under SCHED_FIFO). The work's time comes from the workers' own clocks, so it still
    covers the CPU time the work took (the process's, less the set-up's few milliseconds)."""
    import resource

    cpu = max(os.sched_getaffinity(0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # microseconds, unlike os.times' ticks
    proc = subprocess.run(
        [*policy, "taskset", "-c", str(cpu), str(WORKLOAD), "compute", "--size", "12000", "--cpus", str(cpu)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    elapsed = float(result_of(proc.stdout)["elapsed_s"])
    # about 80 ms of work here; timed by the main thread under SCHED_FIFO it read 4 us
    assert cpu_s > 0.04 and elapsed >= cpu_s - 0.02, (elapsed, cpu_s)
