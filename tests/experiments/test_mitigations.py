"""Mitigations reach the workload, and host changes are undone."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from launchgap.experiments.mitigations import (
    HostChanges,
    MitigationError,
    Mitigations,
    child_setup,
    make_cpuset,
    steer_irqs_away,
)

ONLINE = set(os.sched_getaffinity(0))
LAST = max(ONLINE)


def irq_affinities() -> dict[str, str]:
    out = {}
    for irq in Path("/proc/irq").glob("[0-9]*"):
        try:
            out[irq.name] = (irq / "smp_affinity_list").read_text().strip()
        except OSError:
            pass
    return out


def journalled_irq_writes(pids: set[int]) -> dict[Path, str]:
    """The IRQ affinities the running experiment (one of PIDS registered its journal) has changed, each with the
    value it found, from its journal (journal.py: each change is written there before it is made): what it must
    put back. Only these are compared afterwards: irqbalance, or anything else on the host, may move other IRQs
    meanwhile."""
    from launchgap.experiments.journal import REGISTRY

    found: dict[Path, str] = {}
    for path in sorted(Path(REGISTRY).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # gone, or being rewritten
        if record.get("owner", {}).get("pid") not in pids:
            continue
        for entry in record.get("changes", []):
            if entry.get("kind") == "write" and entry.get("path", "").startswith("/proc/irq/"):
                found.setdefault(Path(entry["path"]), entry["old"])
    return found


def affinities_of(paths) -> dict[Path, str]:
    out = {}
    for path in paths:
        with contextlib.suppress(OSError):
            out[path] = path.read_text().strip()
    return out


def test_pinning_nice_and_rt_policy_reach_only_the_workload():
    m = Mitigations(cpus=[LAST], nice=5, rt_policy="fifo", rt_priority=7)
    m.validate(ONLINE)
    script = (
        "import os; print(sorted(os.sched_getaffinity(0)), os.getpriority(os.PRIO_PROCESS, 0), "
        "os.sched_getscheduler(0) == os.SCHED_FIFO, os.sched_getparam(0).sched_priority)"
    )
    out = subprocess.run(
        ["python3", "-c", script], capture_output=True, text=True, check=True, preexec_fn=child_setup(m, None)
    ).stdout.split()
    assert out == [f"[{LAST}]", "5", "True", "7"]
    assert os.sched_getaffinity(0) == ONLINE and os.sched_getscheduler(0) == os.SCHED_OTHER


@pytest.mark.parametrize(
    "bad, message",
    [
        (Mitigations(cpus=[9999]), "not all online"),
        (Mitigations(nice=40), "outside -20..19"),
        (Mitigations(rt_policy="deadline"), "fifo or rr"),
        (Mitigations(rt_policy="fifo", rt_priority=90), "rt_priority must be 1..49"),
        (Mitigations(cpuset=True), "need the workload's cpus"),
        (Mitigations(cpus=sorted(ONLINE), irq_away=True), "at least one CPU left"),
    ],
)
def test_bad_mitigations_are_refused(bad, message):
    with pytest.raises(MitigationError, match=message):
        bad.validate(ONLINE)


def _let_one_irq_run_on(cpu: int, changes: HostChanges) -> None:
    """A run killed before it restored (SIGKILL leaves no chance) can leave every IRQ steered off CPU already,
    and then there is nothing to steer: open the first IRQ that allows it to every online CPU, recorded in
    CHANGES so that it is put back with the rest."""
    from launchgap.doctor.parse import parse_cpulist

    irqs = [irq / "smp_affinity_list" for irq in sorted(Path("/proc/irq").glob("[0-9]*"))]
    for path in irqs:
        try:
            current = path.read_text().strip()
            if cpu in parse_cpulist(current):
                path.write_text(current)  # one that may move (a managed IRQ refuses even its own value)
                return
        except OSError:
            continue
    for path in irqs:
        try:
            changes.write(path, ",".join(map(str, sorted(ONLINE))))
            return
        except OSError:
            continue


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change IRQ affinity and cgroups")
def test_irq_affinity_and_cpuset_are_restored():
    if len(ONLINE) < 2:
        pytest.skip("needs two CPUs")
    # only the IRQs this test changes are compared (irqbalance may move others meanwhile): each with the value
    # it had before the test's first write to it
    changes = HostChanges()
    group = None
    try:
        _let_one_irq_run_on(LAST, changes)
        opened = len(changes.writes)
        moved = steer_irqs_away([LAST], ONLINE, changes)
        steered = [path for path, _ in changes.writes[opened:]]
        group = make_cpuset([LAST], changes)
        # every IRQ moved is one written, and reads back the workload's CPU left out
        others = ",".join(map(str, sorted(ONLINE - {LAST})))
        assert moved == len(steered) >= 1
        assert affinities_of(steered) == dict.fromkeys(steered, others)
        out = subprocess.run(
            ["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=child_setup(Mitigations(cpus=[LAST]), group),
        ).stdout.strip()
        assert out == f"[{LAST}]"
    finally:
        first_values: dict[Path, str] = {}
        for path, old in changes.writes:
            first_values.setdefault(path, old)
        problems = changes.restore()
    assert problems == []
    assert affinities_of(first_values) == first_values
    assert group is not None and not group.exists()
