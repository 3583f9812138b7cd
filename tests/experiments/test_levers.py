"""Each lever on its own: what the host allows (from the doctor's view), applying it, reading it back,
and restoring it on success, on an exception and from the journal alone (what the custodian does after
SIGKILL). The whole experiment ended every way is in test_lever_runs.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.doctor.checks import scheduler
from launchgap.doctor.parse import format_cpus
from launchgap.experiments import journal as journals
from launchgap.experiments import levers
from launchgap.experiments.levers import LeverFiles, LeverHost, MitigationError, Policy, format_cpumask
from launchgap.experiments.mitigations import HostChanges, Mitigations, child_setup
from tests.conftest import REPO
from tests.doctor.trees import make_tree
from tests.experiments.lever_hosts import FakeDebugfsHost, make_fake_preempt, refusal_once_settled

ONLINE = set(os.sched_getaffinity(0))
LAST = max(ONLINE)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changes host settings: needs root")
needs_two = pytest.mark.skipif(len(ONLINE) < 2, reason="needs a CPU left for housekeeping")
TIMER_MIGRATION = Path("/proc/sys/kernel/timer_migration")
WORKQUEUE = Path("/sys/devices/virtual/workqueue/cpumask")
V1 = Path("/sys/fs/cgroup/cpuset")


# ---- policies ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, name, priority, prio",
    [
        ("other", "other", 0, 120),
        ("batch", "batch", 0, 120),
        ("idle", "idle", 0, 120),
        ("fifo:10", "fifo", 10, 89),
        ("rr:49", "rr", 49, 50),
        ("FIFO:1", "fifo", 1, 98),
    ],
)
def test_policies_parse_with_the_kernel_prio_they_give(text, name, priority, prio):
    policy = Policy.parse(text)
    assert (policy.name, policy.priority, policy.kernel_prio()) == (name, priority, prio)


@pytest.mark.parametrize(
    "text, message",
    [
        ("fifo", "fifo needs a priority, e.g. fifo:10 (1..49)"),
        ("rr:0", "RT priority must be 1..49"),
        ("fifo:50", "RT priority must be 1..49"),
        ("fifo:99", "RT priority must be 1..49"),
        ("batch:3", "batch takes no priority"),
        ("deadline", "not one of other, batch, idle, fifo:P, rr:P"),
        ("fifo:x", "fifo needs a priority"),
    ],
)
def test_bad_policies_are_refused(text, message):
    with pytest.raises(MitigationError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        Policy.parse(text)


@needs_root
@pytest.mark.parametrize("policy", ["other", "batch", "idle", "fifo:7", "rr:7"])
def test_each_policy_reaches_the_workload_and_its_threads_alone(policy):
    script = (
        "import os, threading\n"
        "def show(): print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)\n"
        "show(); t = threading.Thread(target=show); t.start(); t.join()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=child_setup(Mitigations(policy=policy), None),
    ).stdout.split("\n")
    want = Policy.parse(policy)
    assert out[:2] == [f"{want.number} {want.priority}"] * 2  # the process and a thread it made
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


@needs_root
def test_enter_reads_back_every_setting_before_exec(tmp_path):
    report = tmp_path / "enter.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchgap.experiments.enter",
            "--report",
            str(report),
            "--cpus",
            str(LAST),
            "--nice",
            "3",
            "--policy",
            "rr:5",
            "--",
            "sh",
            "-c",
            "echo $$",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(report.read_text())
    assert seen["pid"] == int(proc.stdout)  # exec keeps the pid: the report names the workload
    assert (seen["policy"], seen["rt_priority"], seen["nice"], seen["cpus"]) == ("rr", 5, 3, [LAST])
    assert seen["not_in_effect"] == []


def test_enter_refuses_a_policy_it_cannot_set_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.experiments.enter", "--policy", "fifo:70", "--", "true"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 126
    assert proc.stderr == (
        "launchgap-enter: policy fifo:70: RT priority must be 1..49 (the kernel's own RT threads run at 50 and up)\n"
    )


# ---- RT throttling -------------------------------------------------------------------------------


def test_rt_policies_are_refused_when_rt_throttling_is_off(tmp_path):
    off = LeverHost(make_tree(tmp_path, "vm-2cpu", {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"}))
    assert levers.rt_refusal(Policy.parse("fifo:10"), off, allow_unthrottled=False) == (
        "SCHED_FIFO 10: RT throttling is off here (sched_rt_runtime_us = -1), so a spinning RT workload could hang "
        "its CPUs; turn it on (sysctl kernel.sched_rt_runtime_us=950000) or pass --allow-rt-unthrottled"
    )
    assert levers.rt_refusal(Policy.parse("fifo:10"), off, allow_unthrottled=True) is None
    assert levers.rt_refusal(Policy.parse("batch"), off, allow_unthrottled=False) is None
    on = LeverHost(make_tree(tmp_path / "on", "vm-2cpu"))
    assert levers.rt_refusal(Policy.parse("rr:10"), on, allow_unthrottled=False) is None
    assert Mitigations(policy="rr:3").host_refusal(off).startswith("SCHED_RR 3: RT throttling is off here")


# ---- preemption model ----------------------------------------------------------------------------


def test_the_preemption_model_is_refused_here_with_the_doctors_reason():
    host = LeverHost()
    finding = scheduler.preemption(host.facts(), None)
    if finding.data.get("model") is not None and os.access("/sys/kernel/debug/sched/preempt", os.W_OK):
        pytest.skip("this kernel can switch its preemption model at run time")
    assert levers.preempt_refusal("full", host) == (
        f"preempt=full: the preemption model cannot be switched here: {finding.summary}"
    )


def test_the_preemption_model_switches_reads_back_and_is_restored(tmp_path):
    fake = make_fake_preempt(tmp_path)
    host = FakeDebugfsHost(fake)
    assert levers.preempt_refusal("voluntary", host) is None
    changes = HostChanges(journal=journals.Journal(tmp_path / "journal.json", {"schema": journals.SCHEMA}))
    try:
        shown = levers.apply_preempt("voluntary", host, changes)
        assert shown == "/sys/kernel/debug/sched/preempt: voluntary"
        assert levers.preempt_state(host)[0] == "voluntary"
        # journalled before the write, with the model's name (what the file takes back), not its listing
        assert json.loads((tmp_path / "journal.json").read_text())["changes"] == [
            {"kind": "write", "path": str(fake), "old": "full"}
        ]
    finally:
        assert changes.restore() == []
    assert fake.read_text() == "full"
    assert levers.preempt_state(host)[0] == "full"


def test_the_preemption_model_is_restored_when_the_run_fails_after_it(tmp_path):
    fake = make_fake_preempt(tmp_path)
    host = FakeDebugfsHost(fake)
    changes = HostChanges()
    with pytest.raises(RuntimeError):
        try:
            levers.apply_preempt("none", host, changes)
            raise RuntimeError("the workload failed")
        finally:
            changes.restore()
    assert levers.preempt_state(host)[0] == "full"


def test_a_preemption_model_the_kernel_does_not_offer_or_cannot_take_is_refused(tmp_path):
    old_kernel = FakeDebugfsHost(make_fake_preempt(tmp_path, "none voluntary (full)\n"))  # before PREEMPT_LAZY
    assert levers.preempt_refusal("lazy", old_kernel) == (
        "preempt=lazy: this kernel switches only between none, voluntary, full (/sys/kernel/debug/sched/preempt)"
    )
    assert levers.preempt_refusal("server", old_kernel) == (
        "preempt=server: not a preemption model (none, voluntary, full, lazy)"
    )
    root = make_tree(
        tmp_path / "node", "node-4cpu", {"/sys/kernel/security/lockdown": "none [integrity] confidentiality\n"}
    )
    assert levers.preempt_refusal("none", LeverHost(root)) == (
        "preempt=none: the kernel is locked down (integrity): debugfs refuses writes to /sys/kernel/debug/sched/preempt"
    )


def test_a_read_back_that_disagrees_is_an_error_and_nothing_is_left_changed(tmp_path):
    class Stuck(FakeDebugfsHost):
        """A kernel that ignores the write: the file goes on showing the old model."""

        def path(self, kernel_path):
            return tmp_path / "elsewhere" if kernel_path.endswith("preempt") else super().path(kernel_path)

    (tmp_path / "elsewhere").write_text("full")
    host = Stuck(make_fake_preempt(tmp_path))
    changes = HostChanges()
    with pytest.raises(
        MitigationError,
        match="preempt=none: wrote none to /sys/kernel/debug/sched/preempt, but the model in effect reads 'full'",
    ):
        levers.apply_preempt("none", host, changes)
    assert changes.restore() == []
    assert (tmp_path / "elsewhere").read_text() == "full"


# ---- timer migration and the workqueue cpumask: the real files ----------------------------------


@needs_root
def test_timer_migration_applies_reads_back_and_is_restored_from_the_journal_alone(tmp_path):
    before = TIMER_MIGRATION.read_text()
    wanted = 0 if before.strip() == "1" else 1
    journal = journals.Journal(tmp_path / "journal.json", {"schema": journals.SCHEMA})
    changes = HostChanges(journal=journal)
    try:
        assert levers.apply_timer_migration(wanted, LeverHost(), changes) == f"{TIMER_MIGRATION}: {wanted}"
        assert TIMER_MIGRATION.read_text().strip() == str(wanted)
        # what the custodian does when the experiment was killed: the journal is all it has
        recovered, refused = HostChanges.recovered(journals.read(journal.path).changes, LeverFiles.of(LeverHost()))
        assert refused == []
        assert recovered.restore() == []
        assert TIMER_MIGRATION.read_text() == before
    finally:
        changes.restore()
    assert TIMER_MIGRATION.read_text() == before
    assert journals.read(journal.path).changes == []


@needs_root
@needs_two
def test_the_workqueue_cpumask_leaves_the_workloads_cpus_and_is_restored():
    before = WORKQUEUE.read_text()
    changes = HostChanges()
    try:
        shown = levers.apply_workqueue_away([LAST], LeverHost(), changes)
        others = ONLINE - {LAST}
        assert shown == f"{WORKQUEUE}: {format_cpumask(others)} (CPUs {format_cpus(others)})"
        assert WORKQUEUE.read_text().strip() == format_cpumask(others)
    finally:
        assert changes.restore() == []
    assert WORKQUEUE.read_text() == before


def test_cpumasks_are_written_as_the_kernel_parses_them():
    assert format_cpumask({0}) == "1"
    assert format_cpumask({0, 1, 4}) == "13"
    assert format_cpumask({32}) == "1,00000000"
    assert format_cpumask(set(range(40))) == "ff,ffffffff"


@pytest.mark.parametrize(
    "mitigations, message",
    [
        (Mitigations(workqueue_away=True), "workqueue_away needs the workload's cpus"),
        (Mitigations(cpus=sorted(ONLINE), workqueue_away=True), "workqueue_away needs at least one CPU left"),
        (Mitigations(isolate="isolated"), "isolate needs the workload's cpus"),
        (Mitigations(cpus=sorted(ONLINE), isolate="isolated"), "isolate needs at least one CPU left for housekeeping"),
        (Mitigations(cpus=[LAST], isolate="exclusive"), "isolate must be isolated or root"),
        (Mitigations(timer_migration=2), "timer_migration must be 0 or 1"),
        (Mitigations(preempt="server"), "preempt must be one of none, voluntary, full, lazy"),
        (Mitigations(policy="fifo:80"), "RT priority must be 1..49"),
        (Mitigations(policy="rr:5", rt_policy="fifo"), "give policy or rt_policy, not both"),
    ],
)
def test_bad_levers_are_refused(mitigations, message):
    with pytest.raises(MitigationError, match=message):
        mitigations.validate(ONLINE)


def test_a_host_without_the_files_refuses_the_host_wide_levers(tmp_path):
    root = make_tree(
        tmp_path, "vm-2cpu", {"/proc/sys/kernel/timer_migration": None, "/sys/devices/virtual/workqueue/cpumask": None}
    )
    host = LeverHost(root)
    assert levers.timer_migration_refusal(0, host) == (
        "timer-migration=0: /proc/sys/kernel/timer_migration is not readable here (ENOENT)"
    )
    assert levers.workqueue_refusal([1], host) == (
        "workqueue-away: /sys/devices/virtual/workqueue/cpumask is not readable here (ENOENT)"
    )
    assert levers.workqueue_refusal([0, 1], host) == (
        "workqueue-away needs a CPU left for the kernel's housekeeping: the workload has every online CPU (0-1)"
    )
    assert levers.isolation_refusal("isolated", [1], host) == (
        "isolate: no cpuset controller here: neither cgroup v2 with cpuset at /sys/fs/cgroup nor the v1 cpuset "
        "hierarchy at /sys/fs/cgroup/cpuset"
    )


# ---- CPU isolation -------------------------------------------------------------------------------


def _v1_groups() -> set[str]:
    return {p.name for p in V1.glob("launchgap-*")} if V1.exists() else set()


@needs_root
@needs_two
def test_v1_isolation_takes_the_cpu_out_of_load_balancing_and_is_restored():
    host = LeverHost()
    if levers.cgroup_version(host) != 1:
        pytest.skip("this host has no cgroup v1 cpuset hierarchy (the v2 path is tested on a tree)")
    # a cpuset on the CPU left behind (a launchgap-* one: our own leak) fails here, never skips
    problem = refusal_once_settled(lambda: levers.isolation_refusal("isolated", [LAST], host))
    assert problem is None, problem
    balance_before = (V1 / "cpuset.sched_load_balance").read_text()
    before = _v1_groups()
    changes = HostChanges()
    try:
        isolation = levers.isolate_cpus("isolated", [LAST], host, changes)
        group = isolation.group
        made = _v1_groups() - before
        assert made == {group.name, group.name.replace("-iso-", "-house-")}
        assert (group / "cpuset.cpus").read_text().strip() == str(LAST)
        assert (group / "cpuset.cpu_exclusive").read_text().strip() == "1"
        assert (group / "cpuset.sched_load_balance").read_text().strip() == "0"
        house = V1 / group.name.replace("-iso-", "-house-")
        assert levers.parse_mask_or_list((house / "cpuset.cpus").read_text()) == ONLINE - {LAST}
        assert (V1 / "cpuset.sched_load_balance").read_text().strip() == "0"
        out = subprocess.run(
            ["cat", "/proc/self/cpuset"],
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=child_setup(Mitigations(cpus=[LAST]), group),
        ).stdout.strip()
        assert out == f"/{group.name}"
    finally:
        problems = changes.restore(retry_s=2.0)
    assert problems == []
    assert _v1_groups() & made == set()
    assert (V1 / "cpuset.sched_load_balance").read_text() == balance_before


def test_v2_isolation_makes_an_isolated_partition(tmp_path):
    """cgroup v2 on a tree standing in for /sys/fs/cgroup (this host mounts the v1 cpuset): the writes,
    in order, and the read-back; the kernel would show "isolated invalid (...)" for a partition it refused."""
    root = make_tree(
        tmp_path,
        "vm-2cpu",
        {
            "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
            "/sys/fs/cgroup/cgroup.subtree_control": "cpu memory\n",
        },
    )
    host = LeverHost(root)
    assert levers.cgroup_version(host) == 2
    assert levers.isolation_refusal("isolated", [1], host) is None
    changes = HostChanges()
    isolation = levers.isolate_cpus("isolated", [1], host, changes)
    assert isolation.group.parent == root / "sys/fs/cgroup"
    assert (isolation.group / "cpuset.cpus").read_text() == "1"
    assert (isolation.group / "cpuset.cpus.partition").read_text() == "isolated"
    assert (root / "sys/fs/cgroup/cgroup.subtree_control").read_text() == "+cpuset"
    assert isolation.evidence == f"/sys/fs/cgroup/{isolation.group.name}/cpuset.cpus.partition: isolated (CPUs 1)"
    # undone newest first: the group, then cpuset taken out of subtree_control again
    assert changes.describe() == [
        f"cgroup {isolation.group} (made by launchgap)",
        f"{root / 'sys/fs/cgroup/cgroup.subtree_control'} (was '-cpuset')",
    ]


def test_v2_isolated_partitions_need_linux_6_1(tmp_path):
    root = make_tree(
        tmp_path,
        "vm-2cpu",
        {
            "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu\n",
            "/sys/fs/cgroup/cgroup.subtree_control": "\n",
            "/proc/sys/kernel/osrelease": "5.15.0-91-generic\n",
        },
    )
    host = LeverHost(root)
    assert levers.isolation_refusal("isolated", [1], host) == (
        "isolate: the cpuset partition type 'isolated' needs Linux 6.1 or later"
    )
    assert levers.isolation_refusal("root", [1], host) is None


def test_v1_isolation_is_refused_beside_a_cpuset_sharing_the_cpus(tmp_path):
    root = make_tree(
        tmp_path,
        "vm-2cpu",
        {
            "/sys/fs/cgroup/cpuset/cpuset.sched_load_balance": "1\n",
            "/sys/fs/cgroup/cpuset/cpuset.cpus": "0-1\n",
            "/sys/fs/cgroup/cpuset/docker/cpuset.cpus": "0-1\n",
        },
    )
    assert levers.isolation_refusal("isolated", [1], LeverHost(root)) == (
        "isolate: cgroup v1 gives CPUs 1 cpu_exclusive only if no other top-level cpuset shares them, and docker "
        "(CPUs 0-1) does"
    )
