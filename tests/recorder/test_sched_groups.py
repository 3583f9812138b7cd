"""Each task's scheduler group (issue 34, item 7): the fair scheduler splits a CPU between task groups (a
session's autogroup, with sched_autogroup on; a cgroup of the cpu controller) by the groups' weights before
it splits a group's part among its tasks, so the prediction of what a culprit's CPU time would give back
needs each task's group and its weight. The recorder reads them from the kernel's task->sched_task_group
into the task_cgroup rows; here they are held to what the kernel says through /proc/PID/autogroup (read by
the task itself) and to the kernel's own sched_prio_to_weight table."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event
from tests.analysis.test_gpu_time_share import SCHED_PRIO_TO_WEIGHT
from tests.recorder.conftest import needs_bpf

pytestmark = needs_bpf

AUTOGROUP_NICE = 5


def _why_no_autogroup() -> str | None:
    """Why a new session here would not get an autogroup of its own, or None. Only a task in the cpu
    controller's root group goes to its session's autogroup (kernel/sched/autogroup.h)."""
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
    if not enabled.exists():
        return "this kernel has no sched_autogroup (CONFIG_SCHED_AUTOGROUP off)"
    if enabled.read_text().strip() != "1":
        return "sched_autogroup is off on this host (kernel.sched_autogroup_enabled = 0)"
    lines = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
    v1_cpu = [path for _, controllers, path in lines if "cpu" in controllers.split(",")]
    if v1_cpu:
        path = v1_cpu[0]
    else:  # cgroup v2: below the root, the cpu controller applies where the root enables it for its children
        path = next((p for _, controllers, p in lines if controllers == ""), "/")
        control = Path("/sys/fs/cgroup/cgroup.subtree_control")
        if not control.exists() or "cpu" not in control.read_text().split():
            path = "/"
    if path != "/":
        return f"the tests run in cgroup {path} of the cpu controller, where autogroups do not apply"
    return None


def test_a_new_session_is_recorded_in_its_own_autogroup_at_the_weight_its_nice_gives(record, tmp_path):
    """A shell in a new session (setsid: a new autogroup) sets its autogroup's nice to 5 and writes what
    /proc/self/autogroup then says. Its task_cgroup rows name that autogroup, at nice 0's weight (1024)
    before the change and at nice 5's (the kernel's table: 335) after; before setsid, this test's own."""
    why = _why_no_autogroup()
    if why:
        pytest.skip(why)
    seen = tmp_path / "autogroup.txt"
    script = (
        f"echo {AUTOGROUP_NICE} > /proc/self/autogroup && cat /proc/self/autogroup > {shlex.quote(str(seen))} && "
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05"
    )
    run = record(["setsid", "sh", "-c", script], truth=False)
    match = re.fullmatch(r"/autogroup-(\d+) nice (-?\d+)\n", seen.read_text())
    assert match, seen.read_text()
    autogroup, nice = int(match[1]), int(match[2])
    assert nice == AUTOGROUP_NICE
    rows = run.trace.of(
        Event.TASK_CGROUP, "ts_ns", "pid", "tid", "autogroup_id", "sched_cgroup_id", "group_weight"
    ).sort("ts_ns")
    # setsid execs sh in the task it made its session's leader: the command's pid
    shell = rows.filter(pl.col("autogroup_id") == autogroup)
    assert shell.height >= 2, rows
    leader = shell["pid"][0]
    mine = rows.filter(pl.col("tid") == leader)
    weights = mine.filter(pl.col("autogroup_id") == autogroup)["group_weight"].to_list()
    # in the new autogroup at nice 0's weight until the write (a row only where it switched before it), and
    # from the write on at nice 5's: a change of weight alone makes a new row
    assert weights[-1] == SCHED_PRIO_TO_WEIGHT[20 + AUTOGROUP_NICE]
    assert weights in (
        [SCHED_PRIO_TO_WEIGHT[20 + AUTOGROUP_NICE]],
        [SCHED_PRIO_TO_WEIGHT[20], SCHED_PRIO_TO_WEIGHT[20 + AUTOGROUP_NICE]],
    )
    # an autogroup's row names no cgroup as the group; its children (the loop's subshells, sleep) are in it
    assert shell["sched_cgroup_id"].null_count() == shell.height
    children = shell.filter(pl.col("pid") != leader)
    assert children.height >= 1 and set(children["group_weight"]) == {SCHED_PRIO_TO_WEIGHT[20 + AUTOGROUP_NICE]}
    # before setsid the task was in the session the recorder was started from: this test's autogroup, or, where
    # that session is init's (the kernel's autogroup_default, which /proc shows as an empty file), none
    ours = re.match(r"/autogroup-(\d+) ", Path("/proc/self/autogroup").read_text())
    positions = mine.with_row_index("at").filter(pl.col("autogroup_id") == autogroup)["at"]
    before, after = mine.head(positions[0]), mine.slice(positions[-1] + 1)
    assert set(before["autogroup_id"]) <= ({int(ours[1])} if ours else {None})
    # and an exiting task leaves its autogroup for the root group (kernel/sched/autogroup.c,
    # sched_autogroup_exit_task): a last row, if it switched after that, names no autogroup at nice 0's weight
    assert after.height <= 1
    assert set(after["autogroup_id"]) <= {None} and set(after["group_weight"]) <= {SCHED_PRIO_TO_WEIGHT[20]}
