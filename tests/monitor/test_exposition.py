"""launchgap-monitor's counts against cudasim's ground truth: launches and
syncs exactly, by entry point, on both driver shapes; what -p, --cgroup
and --per-thread choose; the culprits beside a CPU hog; and a page that
the OpenMetrics parser reads, every name of which docs/monitor.md defines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import CUDASIM, LIBCUDA, LIBCUDA_THUNK, REAL_LIBCUDA, REPO, needs_real
from tests.monitor.conftest import (
    HOG_COMM,
    cgroup2_root,
    cpu_hog,
    join_cgroup,
    needs_bpf,
    running_monitor,
    scratch_cgroup,
)
from tests.recorder.conftest import RECORDER

pytestmark = needs_bpf

DOCS = REPO / "docs" / "monitor.md"


def cudasim(tmp_path: Path, *args: str, env: dict | None = None, preexec_fn=None, prefix: tuple[str, ...] = ()) -> dict:
    truth = tmp_path / f"truth-{time.monotonic_ns()}.json"
    proc = subprocess.run(
        [*prefix, str(CUDASIM), "decode", "--quiet", *args, "--truth", str(truth)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        preexec_fn=preexec_fn,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(truth.read_text())


def by_api(scrape, name: str, pid: int) -> dict[str, int]:
    return {s.labels["api"]: int(s.value) for s in scrape.select(name, pid=str(pid))}


def gap_count(scrape, pid: int) -> int:
    return int(scrape.total("launchgap_launch_gap_seconds_count", pid=str(pid)))


def check_process_against_truth(scrape, process: dict) -> None:
    pid = process["pid"]
    assert by_api(scrape, "launchgap_kernel_launches_total", pid) == process["launches_by_api"]
    assert by_api(scrape, "launchgap_syncs_total", pid) == process["syncs_by_api"]
    # every gap between a thread's consecutive launches is in exactly one class
    launching = [t for t in process["threads"] if t["launches"]]
    assert gap_count(scrape, pid) == process["launches"] - len(launching)


def documented_names() -> set[str]:
    return set(re.findall(r"^\| `(launchgap_[a-z_]+)`", DOCS.read_text(), flags=re.MULTILINE))


def exported_names(scrape) -> set[str]:
    suffix = {"counter": "_total", "info": "_info", "gauge": "", "histogram": ""}
    return {name + suffix[family.type] for name, family in scrape.families.items()}


def test_the_page_is_openmetrics_and_every_name_is_documented(tmp_path):
    with running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        status, _, index = monitor.fetch("/")
        assert status == 200 and "/metrics" in index
        status, _, _ = monitor.fetch("/nothing")
        assert status == 404
        truth = cudasim(tmp_path, "--tokens", "20")
        scrape = monitor.scrape()
        assert monitor.stop() == 0
    assert scrape.content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert scrape.text.endswith("# EOF\n")
    pid = truth["processes"][0]["pid"]
    labels = scrape.select("launchgap_kernel_launches_total", pid=str(pid))[0].labels
    assert set(labels) == {"pid", "command", "cgroup", "container_id", "api"}
    assert labels["command"] == "cudasim"
    # the OTLP push counts are on the page with --otlp-endpoint only (tests/monitor/test_otlp.py)
    assert exported_names(scrape) == documented_names() - {"launchgap_monitor_otlp_pushes_total"}
    assert scrape.select("launchgap_monitor_info", targets="all-cuda", per_thread="false")


def test_launches_and_syncs_match_the_ground_truth_exactly(tmp_path):
    """Two processes of two threads each, every launch API and every sync API."""
    with running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        truth = cudasim(
            tmp_path,
            "--tokens",
            "40",
            "--procs",
            "2",
            "--threads",
            "2",
            "--launch",
            "mixed",
            "--sync",
            "mixed",
            "--api",
            "driver",
        )
        monitor.settle()
        scrape = monitor.scrape()
    assert len(truth["processes"]) == 2
    for process in truth["processes"]:
        check_process_against_truth(scrape, process)
        pid = str(process["pid"])
        # time inside syncs: from just before the driver's entry to just after its return
        columns = truth["sync_columns"]
        enter, leave, of = (columns.index(c) for c in ("t_enter_ns", "t_exit_ns", "pid"))
        waited = sum(row[leave] - row[enter] for row in truth["syncs"] if row[of] == process["pid"])
        measured = scrape.total("launchgap_sync_seconds_total", pid=pid) * 1e9
        assert waited <= measured <= waited * 1.05 + 100_000 * process["syncs"]
        # the threads have exited: their counters stay with the process, their entries are gone
        assert scrape.total("launchgap_threads", pid=pid) == 0
    assert scrape.total("launchgap_monitor_lost_updates_total") == 0


def test_the_nvidia_thunk_shaped_driver_counts_the_same(tmp_path):
    env = {**os.environ, "LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent)}
    with running_monitor("--cuda-lib", str(LIBCUDA_THUNK)) as monitor:
        truth = cudasim(tmp_path, "--tokens", "30", "--threads", "2", "--launch", "mixed", "--api", "driver", env=env)
        scrape = monitor.scrape()
    check_process_against_truth(scrape, truth["processes"][0])


def test_processes_are_adopted_when_they_initialise_cuda(tmp_path):
    """By default a process becomes a target at cuInit, before its threads
    exist, so every thread is counted from its birth: its run-queue wait
    after its first wakeup included."""
    with running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        truth = cudasim(tmp_path, "--tokens", "10", "--threads", "3")
        scrape = monitor.scrape()
    process = truth["processes"][0]
    check_process_against_truth(scrape, process)
    switches = scrape.total("launchgap_context_switches_total", pid=str(process["pid"]))
    kernel = sum(t["kernel_switches"]["voluntary"] + t["kernel_switches"]["nonvoluntary"] for t in process["threads"])
    # the truth reads each worker's counters before it exits; the exit itself switches once more
    assert switches >= kernel + len(process["threads"])


def test_per_thread_series_split_each_process_by_thread(tmp_path):
    truth_path = tmp_path / "truth.json"
    with running_monitor("--cuda-lib", str(LIBCUDA), "--per-thread") as monitor:
        workload = subprocess.Popen(
            [str(CUDASIM), "decode", "--quiet", "--tokens", "400", "--threads", "2", "--truth", str(truth_path)]
        )
        try:
            during = None
            for _ in range(100):
                time.sleep(0.1)
                during = monitor.scrape()
                if len(during.select("launchgap_threads", pid=str(workload.pid))) >= 3:
                    break
            assert workload.wait(timeout=300) == 0
        finally:
            workload.kill()
            workload.wait()
        monitor.settle()
        after = monitor.scrape()
    truth = json.loads(truth_path.read_text())
    process = truth["processes"][0]
    pid = str(process["pid"])
    live = {s.labels["tid"] for s in during.select("launchgap_threads", pid=pid) if s.labels["tid"]}
    assert {str(t["tid"]) for t in process["threads"]} <= live
    assert all(s.labels["thread"] for s in during.select("launchgap_threads", pid=pid) if s.labels["tid"])
    # after the exit, one series (tid "") holds the exited threads: the whole process
    assert {s.labels["tid"] for s in after.select("launchgap_kernel_launches_total", pid=pid)} == {""}
    assert after.total("launchgap_kernel_launches_total", pid=pid) == process["launches"]


def gated_cudasim(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """cudasim behind a shell that waits for a line on stdin: a pid to target before it runs."""
    truth = tmp_path / f"gated-{time.monotonic_ns()}.json"
    command = f"read go; exec {CUDASIM} decode --quiet {' '.join(args)} --truth {truth}"
    return subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, text=True), truth


def test_dash_p_watches_only_the_chosen_process_and_its_children(tmp_path):
    chosen, chosen_truth = gated_cudasim(tmp_path, "--tokens", "20", "--procs", "2")
    try:
        with running_monitor("-p", str(chosen.pid), "--cuda-lib", str(LIBCUDA)) as monitor:
            chosen.stdin.write("go\n")
            chosen.stdin.close()
            other = cudasim(tmp_path, "--tokens", "20")
            assert chosen.wait(timeout=300) == 0
            monitor.settle()
            scrape = monitor.scrape()
    finally:
        chosen.kill()
        chosen.wait()
    truth = json.loads(chosen_truth.read_text())
    assert len(truth["processes"]) == 2  # the shell exec'd cudasim, which forked one more
    for process in truth["processes"]:
        check_process_against_truth(scrape, process)
    assert not scrape.select("launchgap_kernel_launches_total", pid=str(other["processes"][0]["pid"]))
    assert scrape.select("launchgap_monitor_info", targets="pids")


def cgroup_run(tmp_path: Path, cgroup: Path) -> dict[str, str]:
    with running_monitor("--cgroup", str(cgroup), "--cuda-lib", str(LIBCUDA)) as monitor:
        inside = cudasim(tmp_path, "--tokens", "20", "--threads", "2", preexec_fn=join_cgroup(cgroup))
        outside = cudasim(tmp_path, "--tokens", "20")
        scrape = monitor.scrape()
    process = inside["processes"][0]
    check_process_against_truth(scrape, process)
    assert not scrape.select("launchgap_kernel_launches_total", pid=str(outside["processes"][0]["pid"]))
    return scrape.select("launchgap_kernel_launches_total", pid=str(process["pid"]))[0].labels


def test_cgroup_v2_targets_are_the_tasks_moved_in(tmp_path):
    root = cgroup2_root()
    if root is None:
        pytest.skip("no cgroup v2 hierarchy is mounted here")
    with scratch_cgroup(root, "launchgap-monitor-test") as cgroup:
        labels = cgroup_run(tmp_path, cgroup)
    assert labels["cgroup"] == "/" + cgroup.name


def test_cgroup_v1_targets_where_the_host_has_v1(tmp_path):
    root = Path("/sys/fs/cgroup/cpu")
    if not (root / "cgroup.procs").exists() or Path("/sys/fs/cgroup/cgroup.controllers").exists():
        pytest.skip("this host has no cgroup v1 cpu hierarchy (cgroup v2 only)")
    with scratch_cgroup(root, "launchgap-monitor-test") as cgroup:
        cgroup_run(tmp_path, cgroup)


def test_culprits_name_the_cpu_hog_and_cover_the_waiting(tmp_path):
    cpu = os.sched_getaffinity(0).pop()
    with cpu_hog(cpu) as hog, running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        hog_ran = int(Path(f"/proc/{hog.pid}/schedstat").read_text().split()[0])
        truth = cudasim(
            tmp_path, "--tokens", "60", "--host-us", "2000", "--kernel-us", "0:0", prefix=("taskset", "-c", str(cpu))
        )
        hog_ran = int(Path(f"/proc/{hog.pid}/schedstat").read_text().split()[0]) - hog_ran
        scrape = monitor.scrape()
    pid = str(truth["processes"][0]["pid"])
    waited = scrape.total("launchgap_preempted_seconds_total", pid=pid) + scrape.total(
        "launchgap_runqueue_wait_seconds_total", pid=pid
    )
    culprits = {
        (s.labels["culprit"], s.labels["cause"]): s.value
        for s in scrape.select("launchgap_culprit_seconds_total", pid=pid)
    }
    assert waited > 0.05, "the hog took no time from the workload"
    # the hog, always runnable on the workload's CPU, is named (whatever else this machine runs), for no more
    # than the kernel counted it on a CPU meanwhile (its schedstat)
    assert 0 < culprits.get((HOG_COMM, "preempted"), 0) <= hog_ran / 1e9
    # whoever ran on a CPU while the workload waited there: the runs cover the waits
    assert sum(culprits.values()) == pytest.approx(waited, rel=0.02, abs=0.002)
    assert scrape.total("launchgap_monitor_lost_updates_total") == 0


@needs_real(REAL_LIBCUDA)
def test_nvidia_s_real_driver_gets_every_probe():
    """NVIDIA's libcuda 535: every driver entry point it defines, and cuInit,
    attached (each on the `je` past the thunk's `cmpl`), none failed. No GPU
    here, so nothing calls them; the attach is what can be checked."""
    listing = json.loads(
        subprocess.run(
            [str(RECORDER), "--list-probes", "--cuda-lib", str(REAL_LIBCUDA)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    driver = [p for p in listing["probes"] if p["layer"] == "driver"]
    assert driver and all(p["probe_cost"] == "emulated" for p in driver)
    with running_monitor("--cuda-lib", str(REAL_LIBCUDA), "-p", str(os.getpid())) as monitor:
        scrape = monitor.scrape()
        warnings = monitor.stderr()
    assert scrape.total("launchgap_monitor_probes", state="attached") == len(driver) + 1  # and cuInit
    assert scrape.total("launchgap_monitor_probes", state="failed") == 0
    assert "warning" not in warnings, warnings
    library = scrape.select("launchgap_monitor_info")[0].labels["libraries"]
    assert Path(library).resolve() == REAL_LIBCUDA.resolve()
