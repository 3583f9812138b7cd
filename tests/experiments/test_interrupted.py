"""An experiment interrupted mid-run leaves nothing behind: no process, no
file, no changed host setting, and its partial results marked incomplete."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import CUDASIM, REPO
from tests.experiments.test_mitigations import affinities_of, journalled_irq_writes


def cgroups() -> set[str]:
    return {
        p.name
        for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpuset"))
        if root.exists()
        for p in root.glob("launchgap-*")
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="experiments load BPF and change host settings: needs root")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_experiment_stops_removes_and_restores_everything(tmp_path, sig):
    from tests.experiments.test_killed import alive, descendants

    # fio needs a real block device: /tmp may be tmpfs, the checkout is not
    disk_dir = Path(tempfile.mkdtemp(prefix=".test-disk-", dir=REPO))
    cgroups_before = cgroups()
    affinity_before, nice_before = os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0)
    scenario_file = tmp_path / "s.toml"
    last = max(os.sched_getaffinity(0))
    scenario_file.write_text(f"""
[scenarios.everything]
loads = [{{ type = "network", streams = 2 }}, {{ type = "disk", jobs = 1 }}, "cpu"]
mitigations = {{ cpus = [{last}], nice = -5, cpuset = true, irq_away = true }}
""")
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launchgap.cli",
            "experiment",
            "run",
            str(scenario_file),
            "--repeat",
            "2",
            "--seed",
            "1",
            "--disk-dir",
            str(disk_dir),
            "-o",
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--tokens",
            "3000",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: dict = {}
    try:
        deadline = time.monotonic() + 90
        # wait until the mitigated scenario is under way: its loads run and the cpuset exists. Only this
        # experiment's own processes count: others (another suite's stress-ng) may run on the machine
        # (the CPU load last: every load is running once its workers are, whether or not a loaded machine
        # gives them the CPU share its verification asks for)
        while time.monotonic() < deadline and not ("stress-ng-cpu" in started.values() and cgroups() - cgroups_before):
            started.update(descendants(proc.pid))
            time.sleep(0.2)
        assert cgroups() - cgroups_before, "the scenario never started"
        started.update(descendants(proc.pid))
        # the IRQs it steered, with their values before (its loads start after its host levers are applied:
        # the journal lists them all by now); none where every IRQ already avoided the CPU
        steered = journalled_irq_writes({proc.pid} | {pid for pid, _ in started})
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        leftovers = list(disk_dir.iterdir())
        shutil.rmtree(disk_dir, ignore_errors=True)
    # as the shell reports a process ended by the signal: 128 + its number (130 for SIGINT, 143 for SIGTERM)
    assert proc.returncode == 128 + sig, stderr
    assert "interrupted: everything stopped and restored" in stderr
    deadline = time.monotonic() + 10  # the experiment's custodian sees it gone, finds nothing to do, exits
    while time.monotonic() < deadline and alive(started):
        time.sleep(0.1)
    assert alive(started) == []
    assert cgroups() == cgroups_before
    assert affinities_of(steered) == steered
    assert leftovers == []
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "incomplete"
    assert os.getpriority(os.PRIO_PROCESS, 0) == nice_before and os.sched_getaffinity(0) == affinity_before
