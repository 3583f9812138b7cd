"""The monitor's life: nothing of it stays loaded after SIGINT or SIGTERM;
its memory is fixed at start and exited threads leave nothing behind in the
kernel; a full map is counted, never silent; a user's mistake is one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from tests.conftest import CUDASIM, LIBCUDA, ODD_NAME, ODD_NAME_SHOWN, REPO
from tests.monitor.conftest import (
    MONITOR,
    Monitor,
    cgroup2_root,
    join_cgroup,
    loaded_maps,
    monitor_programs,
    needs_bpf,
    running_monitor,
    scratch_cgroup,
)

pytestmark = needs_bpf

# how long the kernel may take to free a program once nothing holds it
UNLOAD_GRACE_S = 30


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_detaches_everything(sig):
    before = set(monitor_programs())
    monitor = Monitor(["--cuda-lib", str(LIBCUDA)])
    try:
        programs = {pid: p for pid, p in monitor_programs().items() if pid not in before}
        names = {p["name"] for p in programs.values()}
        # tracepoints and the CUDA uprobes both (names are cut at 15 characters)
        assert {"monitor_sched_s", "monitor_launch", "monitor_irq_ent"} <= {n[:15] for n in names}
        maps = {m for p in programs.values() for m in p.get("map_ids", [])}
        assert monitor.stop(sig) == 0
    finally:
        monitor.kill()
    # uprobe programs are freed after an RCU tasks-trace grace period, and their maps after them, a moment
    # after the last reference goes
    deadline = time.monotonic() + UNLOAD_GRACE_S
    while (set(programs) & set(monitor_programs()) or maps & set(loaded_maps())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(programs) & set(monitor_programs()), "programs still loaded after the monitor stopped"
    assert not maps & set(loaded_maps()), "maps still loaded after the monitor stopped"


def our_maps() -> dict[str, dict]:
    """The monitor's maps, by name (the kernel keeps 15 characters), found through its programs."""
    ids = {m for p in monitor_programs().values() for m in p.get("map_ids", [])}
    return {m["name"]: m for i, m in loaded_maps().items() if i in ids}


def our_map(maps: dict[str, dict], name: str) -> dict:
    return maps[name[:15]]


def map_dump(map_id: int) -> list:
    out = subprocess.run(
        ["bpftool", "-j", "map", "dump", "id", str(map_id)], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)


def test_memory_is_fixed_and_exited_threads_leave_nothing_in_the_kernel(tmp_path):
    """Sixty short-lived processes of three threads each, in a cgroup the
    monitor watches: afterwards the thread, retired-process, culprit and
    target maps are empty, their sizes and memory as at start, and every
    process's launches are still exported."""
    root = cgroup2_root()
    if root is None:
        pytest.skip("no cgroup v2 hierarchy is mounted here")
    runs = 20
    with (
        scratch_cgroup(root, "launchgap-monitor-churn") as cgroup,
        running_monitor(
            "--cgroup", str(cgroup), "--cuda-lib", str(LIBCUDA), "--max-threads", "256", "--max-processes", "256"
        ) as monitor,
    ):
        maps = our_maps()
        assert maps["threads"]["max_entries"] == 256
        assert maps["retired"]["max_entries"] == 256
        memory_at_start = {name: m["bytes_memlock"] for name, m in maps.items()}
        truths = []
        for run in range(runs):
            truth = tmp_path / f"truth-{run}.json"
            proc = subprocess.run(
                [
                    str(CUDASIM),
                    "decode",
                    "--quiet",
                    "--tokens",
                    "2",
                    "--threads",
                    "3",
                    "--procs",
                    "3",
                    "--truth",
                    str(truth),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                preexec_fn=join_cgroup(cgroup),
            )
            assert proc.returncode == 0, proc.stderr
            truths.append(json.loads(truth.read_text()))
        monitor.settle(3.5)  # two sweeps: exited processes' counters are taken from the kernel
        scrape = monitor.scrape()
        maps = our_maps()
        for name in ("threads", "retired", "culprits", "target_processes"):
            assert map_dump(our_map(maps, name)["id"]) == [], f"{name} is not empty"
            assert scrape.total("launchgap_monitor_map_entries", map=name) == 0
        assert {name: m["bytes_memlock"] for name, m in maps.items()} == memory_at_start
        assert scrape.total("launchgap_monitor_map_capacity", map="threads") == 256
    processes = [p for truth in truths for p in truth["processes"]]
    assert len(processes) == runs * 3
    for process in processes:
        pid = str(process["pid"])
        assert scrape.total("launchgap_kernel_launches_total", pid=pid) == process["launches"]
        assert scrape.total("launchgap_threads", pid=pid) == 0
    assert scrape.total("launchgap_monitor_lost_updates_total") == 0


def test_a_full_thread_map_is_counted_never_silent(tmp_path):
    """Room for two threads, five want it: every launch and sync is either
    counted or counted as lost, exactly."""
    root = cgroup2_root()
    if root is None:
        pytest.skip("no cgroup v2 hierarchy is mounted here")
    with (
        scratch_cgroup(root, "launchgap-monitor-full") as cgroup,
        running_monitor("--cgroup", str(cgroup), "--cuda-lib", str(LIBCUDA), "--max-threads", "2") as monitor,
    ):
        truth_path = tmp_path / "truth.json"
        proc = subprocess.run(
            [str(CUDASIM), "decode", "--quiet", "--tokens", "20", "--threads", "4", "--truth", str(truth_path)],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=join_cgroup(cgroup),
        )
        assert proc.returncode == 0, proc.stderr
        scrape = monitor.scrape()
    truth = json.loads(truth_path.read_text())["totals"]
    assert scrape.total("launchgap_monitor_lost_updates_total", reason="thread_map_full") > 0
    counted = scrape.total("launchgap_kernel_launches_total") + scrape.total("launchgap_syncs_total")
    lost = scrape.total("launchgap_monitor_lost_updates_total", reason="uncounted_calls")
    assert lost > 0
    assert counted + lost == truth["launches"] + truth["syncs"]


def one_line_error(args: list[str], binary: list[str] | None = None) -> str:
    proc = subprocess.run([*(binary or [str(MONITOR)]), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("launchgap-monitor: "), lines[0]
    return lines[0]


def test_mistakes_are_one_line(tmp_path):
    assert "--listen 'nonsense'" in one_line_error(["--listen", "nonsense"])
    assert "--listen '127.0.0.1:99999'" in one_line_error(["--listen", "127.0.0.1:99999"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert f"cannot listen on 127.0.0.1:{port}" in one_line_error(["--listen", f"127.0.0.1:{port}"])
    assert "no such process: 999999999" in one_line_error(["-p", "999999999"])
    assert "--cgroup /no/such/cgroup" in one_line_error(["--cgroup", "/no/such/cgroup"])
    assert "not a directory of a cgroup filesystem" in one_line_error(["--cgroup", str(tmp_path)])
    assert "--cuda-lib /etc/hostname" in one_line_error(["--cuda-lib", "/etc/hostname", "--listen", "127.0.0.1:0"])
    assert "--max-threads" in one_line_error(["--max-threads", "0"])
    assert "--bogus" in one_line_error(["--bogus"])
    assert "cannot be used with" in one_line_error(["-p", "1", "--all-cuda"])


def test_the_launchgap_command_runs_the_monitor():
    launchgap = [str(REPO / ".venv" / "bin" / "launchgap"), "monitor"]
    proc = subprocess.run([*launchgap, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "--listen <ADDR:PORT>" in proc.stdout and "--per-thread" in proc.stdout
    assert "--listen 'x'" in one_line_error(["--listen", "x"], binary=launchgap)


def test_a_process_named_in_bytes_is_watched_and_named_as_the_trace_names_it(tmp_path):
    """The monitor read /proc/PID/comm and stat as UTF-8: a CUDA process whose name is not (any user can
    name a process so) lost its name to U+FFFD and was taken for exited at every sweep, its threads
    folded away while it ran. Named as a trace names it, its launches are cudasim's own."""
    folder = tmp_path / "odd"
    folder.mkdir()
    odd = folder / os.fsdecode(ODD_NAME)
    shutil.copy2(CUDASIM, odd)
    truth_path = tmp_path / "truth.json"
    env = {**os.environ, "LD_LIBRARY_PATH": str(LIBCUDA.parent)}
    with running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        proc = subprocess.run(
            [str(odd), "decode", "--quiet", "--tokens", "200", "--host-us", "5000", "--truth", str(truth_path)],
            env=env,
            capture_output=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        monitor.settle()
        scrape = monitor.scrape()
    process = json.loads(truth_path.read_text())["processes"][0]
    pid = str(process["pid"])
    series = scrape.select("launchgap_kernel_launches_total", pid=pid)
    assert {s.labels["command"] for s in series} == {ODD_NAME_SHOWN}
    assert scrape.total("launchgap_kernel_launches_total", pid=pid) == process["launches"]
