"""Every lever at once, through the experiment runner, ended every way: the run completes, the workload
fails, Ctrl-C, SIGTERM and SIGKILL (the custodian restores from the journal). Each time every lever was
in effect while the workload ran and every host setting reads as before afterwards, with none of the
experiment's processes (an RT workload above all) left running. The preemption model is switched on a
stand-in debugfs file (lever_hosts.py): this VM's kernel cannot switch it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launchgap import procfs
from launchgap.experiments import levers
from tests.conftest import REPO
from tests.experiments.lever_hosts import FakeDebugfsHost, make_fake_preempt, refusal_once_settled
from tests.experiments.test_killed import alive, descendants, reported
from tests.experiments.test_mitigations import affinities_of, journalled_irq_writes

ONLINE = set(os.sched_getaffinity(0))
CPU = max(ONLINE)
LEVER_WORKLOAD = REPO / "workloads" / "levers" / "build" / "lever-workload"
V1 = Path("/sys/fs/cgroup/cpuset")


def host_state(fake: Path) -> dict:
    """Every host setting the levers change, as read now; IRQ affinities apart (watch_irqs): irqbalance, or
    anything else on the host, may move IRQs the experiment never touched."""

    def read(path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    return {
        "timer_migration": read("/proc/sys/kernel/timer_migration"),
        "workqueue": read("/sys/devices/virtual/workqueue/cpumask"),
        "cpuset_balance": read(str(V1 / "cpuset.sched_load_balance")),
        "preempt": levers.preempt_state(FakeDebugfsHost(fake))[0],
    }


def watch_irqs(proc: subprocess.Popen, started: dict, irqs: dict[Path, str]) -> None:
    """Adds to IRQS the IRQ affinities the experiment PROC (or one of STARTED, its processes) has journalled
    changing so far, each with the value it found: what it must put back."""
    for path, old in journalled_irq_writes({proc.pid} | {pid for pid, _ in started}).items():
        irqs.setdefault(path, old)


def _skip_unless_every_lever_applies(fake: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("experiments load BPF and change host settings: needs root")
    if len(ONLINE) < 2:
        pytest.skip("needs a CPU left for housekeeping")
    from launchgap.experiments.mitigations import Mitigations
    from tests.experiments.lever_driver import EVERY_LEVER

    # a cpuset on the CPU left behind (a launchgap-* one: our own leak) fails here, never skips
    problem = refusal_once_settled(lambda: Mitigations(cpus=[CPU], **EVERY_LEVER).host_refusal(FakeDebugfsHost(fake)))
    assert problem is None, problem


def start(tmp_path: Path, fake: Path, command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.experiments.lever_driver",
            str(tmp_path / "out"),
            str(fake),
            str(CPU),
            "--",
            *command,
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def where_each_is(processes: dict[tuple[int, str], str]) -> list[str]:
    """pid, command line, scheduler state, kernel wait channel and CPU of each process still alive."""
    out = []
    for pid, _ in processes:
        try:
            stat = procfs.read_stat(f"/proc/{pid}/stat")[1]
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            continue
        out.append(f"{pid} [{cmdline.strip()[:120]}] state {stat[0]} wchan {wchan or '-'} cpu {stat[36]}")
    return out


def isolation_groups(results: dict) -> list[str]:
    return [
        line.split(":")[0] for run in results["runs"] for line in run["verified"]["host"] if "launchgap-iso-" in line
    ]


def assert_nothing_left(before: dict, fake: Path, started: dict, irqs: dict[Path, str], deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and (host_state(fake) != before or alive(started) or affinities_of(irqs) != irqs):
        time.sleep(0.2)
    assert alive(started) == []
    assert host_state(fake) == before
    assert affinities_of(irqs) == irqs


@pytest.mark.parametrize("ending", ["success", "failure"])
def test_every_lever_is_in_effect_for_the_workload_and_restored_after(tmp_path, ending):
    fake = make_fake_preempt(tmp_path)
    _skip_unless_every_lever_applies(fake)
    before = host_state(fake)
    command = (
        [str(LEVER_WORKLOAD), "compute", "--size", "2000", "--cpus", str(CPU)]
        if ending == "success"
        else ["sh", "-c", "exit 3"]
    )
    proc = start(tmp_path, fake, command)
    started: dict = {}
    irqs: dict[Path, str] = {}
    while proc.poll() is None:
        started.update(descendants(proc.pid))
        watch_irqs(proc, started, irqs)
        time.sleep(0.05)
    stderr = proc.stderr.read()
    assert_nothing_left(before, fake, started, irqs)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    groups = isolation_groups(results)
    assert groups and not any(Path(g).exists() for g in groups)
    if ending == "failure":
        assert proc.returncode == 1
        assert stderr == (
            "launchgap: the warm-up run (levers, no load) failed: the command exited with status 3; "
            "every run would, so none was measured\n"
        )
        assert results["status"] == "failed" and len(results["runs"]) == 1
        return
    assert proc.returncode == 0, stderr
    assert results["status"] == "complete" and len(results["runs"]) == 3
    for run in results["runs"]:
        assert "error" not in run
        host = run["verified"]["host"]
        assert host[1:] == [
            f"{len(run_irqs(host))} IRQs moved to CPUs {','.join(map(str, sorted(ONLINE - {CPU})))}",
            f"/sys/devices/virtual/workqueue/cpumask: {levers.format_cpumask(ONLINE - {CPU})} "
            f"(CPUs {','.join(map(str, sorted(ONLINE - {CPU})))})",
            "/proc/sys/kernel/timer_migration: 0",
            "/sys/kernel/debug/sched/preempt: voluntary",
        ]
        assert host[0].endswith(
            f": CPUs {CPU}, cpu_exclusive 1, sched_load_balance 0 (no load balancing); top cpuset sched_load_balance 0"
        )
        entered = run["verified"]["enter"]
        assert (entered["policy"], entered["rt_priority"], entered["cpus"]) == ("fifo", 10, [CPU])
        assert entered["cpuset"] == "/" + Path(host[0].split(":")[0]).name
        trace = run["verified"]["trace"]
        # every switch of the workload's threads after its exec at SCHED_FIFO 10's prio, on its CPU alone
        assert trace["verified"] is True and list(trace["prio"]) == ["89"] and trace["cpus"] == [CPU]
        assert trace["prio"]["89"] == trace["switches"] > 0
        for thread in run["verified"]["threads_sampled"].values():
            assert [seen[:2] for seen in thread["seen"]] == [["fifo", 10]] and thread["cpus"] == [CPU]
    doctor = results["doctor"]
    assert doctor["schema"] == "launchgap-doctor/1" and doctor["target"]["cpus"] == [CPU]
    assert len(doctor["checks"]) == 18


def run_irqs(host: list[str]) -> range:
    return range(int(host[1].split()[0]))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_every_lever_is_restored_when_the_experiment_is_stopped(tmp_path, sig):
    fake = make_fake_preempt(tmp_path)
    _skip_unless_every_lever_applies(fake)
    before = host_state(fake)
    proc = start(tmp_path, fake, ["sleep", "60"])  # a SCHED_FIFO task that sleeps costs its CPU nothing
    started: dict = {}
    irqs: dict[Path, str] = {}
    try:
        # Under `stress-ng --cpu 2 --io 2` beside the suite the workload once took over 90 s to start
        # (2026-11-23, not explained: the recorder and the python that enters the levers were alive, the
        # sleep not yet exec'd): the time allowed is generous, and a failure says where each process was.
        began = time.monotonic()
        deadline = began + 240
        # under way: the workload runs and the last lever applied (the model) reads back
        while (
            time.monotonic() < deadline
            and proc.poll() is None
            and not ("sleep" in started.values() and levers.preempt_state(FakeDebugfsHost(fake))[0] == "voluntary")
        ):
            started.update(descendants(proc.pid))
            time.sleep(0.1)
        assert "sleep" in started.values(), (
            f"the workload never started in {time.monotonic() - began:.0f} s "
            f"(exit {proc.poll()}): {where_each_is(started)}"
        )
        during = host_state(fake)
        assert (during["timer_migration"], during["preempt"], during["cpuset_balance"]) == ("0\n", "voluntary", "0\n")
        workload = next(pid for (pid, _), comm in started.items() if comm == "sleep")
        iso = V1 / Path(f"/proc/{workload}/cpuset").read_text().strip().lstrip("/")
        ours = [iso, iso.with_name(iso.name.replace("-iso-", "-house-"))]
        assert iso.name.startswith("launchgap-iso-") and all(g.exists() for g in ours)
        started.update(descendants(proc.pid))
        watch_irqs(proc, started, irqs)  # its host levers, the IRQs among them, are applied before the workload
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # SIGTERM ends it as SIGTERM would, after the clean-up: 128 + 15
    expected = {signal.SIGKILL: -signal.SIGKILL, signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
    assert proc.returncode == expected, proc.stderr.read()
    assert_nothing_left(before, fake, started, irqs)
    assert not any(g.exists() for g in ours)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    if sig == signal.SIGKILL:
        # the custodian put everything back from the journal and said so
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and results["status"] != "killed":
            time.sleep(0.2)
            results = json.loads((tmp_path / "out" / "results.json").read_text())
        assert results["status"] == "killed"
        restored = " ".join(results["killed"]["host_changes_restored"])
        assert results["killed"]["host_changes_not_restored"] == []
        for changed in (
            "/proc/sys/kernel/timer_migration (was '1')" if before["timer_migration"] == "1\n" else "",
            "/sys/devices/virtual/workqueue/cpumask",
            "cpuset.sched_load_balance (was '1')",
            f"{fake} (was 'full')",
            "launchgap-iso-",
            "launchgap-house-",
        ):
            assert changed in restored
        assert len(reported(tmp_path / "out")) == 1  # and the next experiment says so
    else:
        assert results["status"] == "incomplete"
