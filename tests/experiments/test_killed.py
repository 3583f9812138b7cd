"""An experiment killed with SIGKILL (no handler runs) leaves no process and
no host change behind, and the next experiment reports it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from launchgap import procfs
from tests.conftest import CUDASIM, REPO
from tests.experiments.test_interrupted import cgroups
from tests.experiments.test_mitigations import affinities_of, journalled_irq_writes

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments load BPF and change host settings: needs root")


def _stat(pid: int) -> list[str] | None:
    try:
        name, fields = procfs.read_stat(f"/proc/{pid}/stat")
    except (OSError, ValueError):
        return None
    return [name, *fields]


def descendants(root: int) -> dict[tuple[int, str], str]:
    """Every live process below ROOT: (pid, start time) -> command name. The start time tells a
    process from a later one that reuses its pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[2]), []).append(int(entry.name))
    out, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            fields = _stat(pid)
            if fields and fields[1] != "Z":
                out[(pid, fields[20])] = fields[0]
                todo.append(pid)
    return out


def alive(processes: dict[tuple[int, str], str]) -> list[str]:
    return [
        f"{pid}:{comm}"
        for (pid, start), comm in processes.items()
        if (fields := _stat(pid)) and fields[20] == start and fields[1] != "Z"
    ]


def group_members(pgid: int) -> list[int]:
    return [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and (f := _stat(int(e.name))) and int(f[3]) == pgid and f[1] != "Z"
    ]


def pgids(processes) -> set[int]:
    return {int(fields[3]) for (pid, _), _c in processes.items() if (fields := _stat(pid))}


def start_experiment(tmp_path: Path, scenario: str, out: Path, disk_dir: Path, tokens: int) -> subprocess.Popen:
    scenario_file = tmp_path / "s.toml"
    scenario_file.write_text(scenario)
    return subprocess.Popen(
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
            str(tokens),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def reported(out: Path) -> list[str]:
    """What the next experiment says of the experiment killed with its results in OUT (taken here, as an
    experiment would take it, so that no later test's experiment reports it): its lines."""
    from launchgap.experiments.custodian import stale_results
    from launchgap.experiments.levers import LeverHost

    return [line for line in stale_results(LeverHost()) if line.startswith(f"{out}: ")]


def wait_for(proc: subprocess.Popen, names: set[str], timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    started: dict = {}
    while time.monotonic() < deadline and proc.poll() is None:
        started = descendants(proc.pid)
        if names <= set(started.values()):
            return started
        time.sleep(0.1)
    raise AssertionError(f"never saw {names} running (exit {proc.poll()}); saw {set(started.values())}")


@needs_root
def test_sigkill_during_a_load_leaves_nothing_running_and_nothing_changed(tmp_path):
    disk_dir = Path(tempfile.mkdtemp(prefix=".test-disk-", dir=REPO))  # fio needs a real block device
    cgroups_before = cgroups()
    last = max(os.sched_getaffinity(0))
    out = tmp_path / "results" / "killed"
    # the CPU load last: the experiment is killed while its workers start, after the other loads are
    # running, whether or not a loaded machine lets them reach the CPU share verification asks for
    proc = start_experiment(
        tmp_path,
        f"""
[scenarios.everything]
loads = [{{ type = "network", streams = 2 }}, {{ type = "disk", jobs = 1 }}, {{ type = "cpu", workers = 2 }}]
mitigations = {{ cpus = [{last}], cpuset = true, irq_away = true }}
""",
        out,
        disk_dir,
        tokens=20,
    )
    started: dict = {}
    try:
        started = wait_for(proc, {"stress-ng-cpu", "iperf3", "fio"})
        ours = cgroups() - cgroups_before
        assert len(ours) >= 1, "the scenario's cpuset was never made"
        groups = pgids(started)
        # the IRQs it steered, with their values before, from its journal (none if they already avoided the
        # CPU): only these are compared afterwards, whatever else moves IRQs on the host
        ours_irqs = journalled_irq_writes({proc.pid} | {pid for pid, _ in started})
        steered = bool(ours_irqs)
        proc.kill()  # SIGKILL: no handler of the experiment runs
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            alive(started) or cgroups() & ours or affinities_of(ours_irqs) != ours_irqs or any(disk_dir.iterdir())
        ):
            time.sleep(0.2)
        assert alive(started) == []  # the exact processes: loads (stress-ng's workers
        assert [g for g in groups if group_members(g)] == []  # included), recorder, workload
        assert cgroups() & ours == set()
        assert affinities_of(ours_irqs) == ours_irqs
        assert list(disk_dir.iterdir()) == []  # fio's files
    finally:
        if proc.poll() is None:
            proc.kill()
        for (pid, _), _comm in started.items():  # on failure, still leave nothing running
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        shutil.rmtree(disk_dir, ignore_errors=True)
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "killed"
    assert results["killed"]["host_changes_not_restored"] == []
    restored = " ".join(results["killed"]["host_changes_restored"])
    # each change it made, by name: the cgroups seen made, fio's directory, and exactly the IRQs its journal listed
    assert all(name in restored for name in ours) and "launchgap-fio-" in restored
    assert {path for path in ours_irqs if str(path) in restored} == set(ours_irqs)
    assert ("smp_affinity_list" in restored) == steered

    # the next experiment says so, once
    def again(name: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "launchgap.cli",
                "experiment",
                "noisy-neighbor",
                "--scenarios",
                "baseline",
                "--repeat",
                "2",
                "-o",
                str(tmp_path / "results" / name),
                "--",
                "false",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    first = again("next")
    text = " ".join(first.stderr.split())
    assert f"warning: {out}: experiment pid {proc.pid} died before finishing" in text
    assert "its results are incomplete; host changes restored: scratch files" in text
    assert str(out) not in again("later").stderr


@needs_root
def test_sigkill_during_a_run_ends_the_recorder_and_the_workload(tmp_path):
    out = tmp_path / "results" / "killed"
    proc = start_experiment(tmp_path, "[scenarios.quiet]\n", out, tmp_path, tokens=100_000)
    started: dict = {}
    try:
        started = wait_for(proc, {"launchgap-recor", "cudasim"})  # the warm-up run
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and alive(started):
            time.sleep(0.2)
        assert alive(started) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for (pid, _), _comm in started.items():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    assert json.loads((out / "results.json").read_text())["status"] == "killed"
    assert len(reported(out)) == 1


@needs_root
def test_results_left_running_by_a_dead_experiment_are_reported_and_its_changes_undone(tmp_path):
    """The custodian died too (a whole-session kill, a reboot): the next experiment takes over, from the
    journal the dead experiment registered, undoing what a lever makes and refusing anything else."""
    from launchgap.experiments import journal as journals
    from launchgap.experiments.custodian import stale_results
    from tests.experiments.lever_hosts import PrivateRunHost

    if not Path("/sys/fs/cgroup").exists():
        pytest.skip("no cgroup filesystem")
    host = PrivateRunHost(tmp_path / "host")
    dead = tmp_path / "old"
    dead.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    who = {"pid": gone.pid, "start_ticks": 1, "boot_id": "another boot"}
    results = {"schema": "launchgap-experiment/1", "status": "running", "runs": [], "scenarios": [], "owner": who}
    (dead / "results.json").write_text(json.dumps(results))
    # a cgroup named as launchgap names its own
    name = f"launchgap-{os.getpid() % 0x10000:04x}{os.urandom(2).hex()}"
    leftover = Path("/sys/fs/cgroup") / name
    if not (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
        leftover = Path("/sys/fs/cgroup/cpuset") / name
    leftover.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    try:
        journal = journals.register(host, dead, who)
        journal.save_changes(
            [
                {"kind": "dir", "path": str(leftover)},
                {"kind": "write", "path": str(victim), "old": "OWNED"},
                {"kind": "scratch", "path": str(tmp_path)},
            ]
        )
        lines = stale_results(host)
        assert len(lines) == 1 and lines[0].startswith(
            f"{dead}: experiment pid {gone.pid} died before finishing (its custodian died too)"
        )
        assert f"host changes restored: cgroup {leftover} (made by launchgap)" in lines[0]
        assert lines[0].endswith(
            f"; journal entries refused, left alone (not changes launchgap makes): "
            f"write {victim} (not a file a lever writes), scratch {tmp_path} (not a scratch "
            f"directory launchgap makes)"
        )
        assert not leftover.exists()
        assert victim.read_text() == "original\n" and tmp_path.is_dir()
        killed = json.loads((dead / "results.json").read_text())
        assert killed["status"] == "killed"
        assert killed["killed"]["journal_entries_refused"] == [
            f"write {victim} (not a file a lever writes)",
            f"scratch {tmp_path} (not a scratch directory launchgap makes)",
        ]
        assert not journal.path.exists()
        assert stale_results(host) == []  # reported once
    finally:
        if leftover.exists():
            leftover.rmdir()


def test_a_leashed_process_tree_dies_with_its_parent(tmp_path):
    """The leash alone: a parent killed by SIGKILL takes a child and its grandchildren along."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from launchgap.experiments import leash\n"
        "p = leash.popen(['sh', '-c', 'sleep 300 & sleep 300 & wait'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        group = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(group_members(group)) < 4:  # leash, sh, 2 sleeps
            time.sleep(0.05)
        members = group_members(group)
        assert len(members) == 4, members
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and group_members(group):
            time.sleep(0.05)
        assert group_members(group) == []
    finally:
        if parent.poll() is None:
            parent.kill()
