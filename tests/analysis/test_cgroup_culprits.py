"""Culprits by cgroup on hand-built traces whose every nanosecond is known: which cgroup a task is in
(its v2 path unless that is the root, else its cpu controller's v1 path), a task that moves counted in
each cgroup for its own time there, the idle task and tasks with no cgroup row apart, and the GPU-time
culprits grouped alike."""

from __future__ import annotations

from launchgap.analysis.cgroups import display_name
from launchgap.analysis.diff import diff_reports
from launchgap.analysis.records import GpuTimeBounds
from launchgap.analysis.report import build_report
from launchgap.views.report_json import document
from tests.analysis.builder import IDLE, TraceBuilder

WORK = (100, 101, "cudasim")
HOG = (200, 201, "hog")  # in /pod-a (v2), moved to /pod-c at 50_000
DOCKER = (300, 301, "dockerd")  # v2 root; its cpu controller's v1 cgroup is a docker container
STRAY = (400, 401, "stray")  # no task_cgroup row
CONTAINER = "ab" * 32
POD = "6b0f3f5e-6f9a-4b8e-9d0e-3c1a2b4c5d6e"


def shared_cpu() -> TraceBuilder:
    """CPU 0: the workload launches, is preempted by HOG (5 us), by DOCKER (3 us), by HOG again after it moved
    (2 us), by STRAY (1 us), and, having blocked, waits 4 us in the run queue while the CPU idles."""
    b = TraceBuilder(start_ns=1000, end_ns=100_000)
    b.cgroup(1000, "v2", 1, "/")
    b.cgroup(1000, "v2", 11, "/pod-a")
    b.cgroup(1000, "v2", 13, f"/kubepods/burstable/pod{POD}/{CONTAINER}", container_id=CONTAINER, pod=POD)
    b.cgroup(1000, "v1_cpu", 1, "/")
    b.cgroup(1000, "v1_cpu", 77, f"/docker/{CONTAINER}", container_id=CONTAINER)
    b.cgroup(45_000, "v2", 12, "/pod-c")  # made while recording
    for ts in range(2000, 90_000, 1000):
        b.launch(ts, 0, WORK)
    b.switch(10_000, 0, WORK, HOG)
    b.task_cgroup(10_000, 0, WORK, 1, 1)
    b.task_cgroup(10_000, 0, HOG, 11, 1)
    b.switch(15_000, 0, HOG, WORK)
    b.switch(20_000, 0, WORK, DOCKER)
    b.task_cgroup(20_000, 0, DOCKER, 1, 77)
    b.switch(23_000, 0, DOCKER, WORK)
    b.task_cgroup(50_000, 0, HOG, 12, 1)  # moved: recorded at its next switch
    b.switch(50_000, 0, WORK, HOG)
    b.switch(52_000, 0, HOG, WORK)
    b.switch(60_000, 0, WORK, STRAY)
    b.switch(61_000, 0, STRAY, WORK)
    b.switch(70_000, 0, WORK, IDLE, voluntary=True)
    b.wakeup(71_000, WORK, 0)
    b.switch(75_000, 0, IDLE, WORK)
    return b


def rows(report) -> dict[tuple[str, str], int]:
    return {(r.name, r.cause): r.ns for r in report.taken.culprits_by_cgroup}


def test_each_cgroup_gets_its_tasks_time(tmp_path):
    report = build_report(shared_cpu().write(tmp_path / "t.lg"))
    assert rows(report) == {
        ("/pod-a", "preempted"): 5000,
        (f"container {CONTAINER[:12]}", "preempted"): 3000,
        ("/pod-c", "preempted"): 2000,
        ("cgroup not recorded", "preempted"): 1000,
        ("CPU idle", "runqueue"): 4000,
    }
    docker = next(r for r in report.taken.culprits_by_cgroup if r.container_id)
    assert (docker.cgroup, docker.pod, docker.processes, docker.is_idle) == (f"/docker/{CONTAINER}", None, 1, False)
    idle = next(r for r in report.taken.culprits_by_cgroup if r.is_idle)
    assert (idle.cgroup, idle.processes) == (None, 1)
    # by task, the hog is one row: both cgroups' time
    assert {(c.comm, c.cause): c.ns for c in report.taken.culprits}[("hog", "preempted")] == 7000
    assert [(c.comm, c.ns) for c in report.taken.threads[0].culprits][:1] == [("hog", 7000)]


def test_a_trace_without_cgroup_rows_has_no_grouping(tmp_path):
    b = shared_cpu()
    b.rows = [r for r in b.rows if r["event"] not in ("task_cgroup", "cgroup")]
    report = build_report(b.write(tmp_path / "t.lg"))
    assert report.taken.culprits_by_cgroup is None and report.gpu_time.culprits_by_cgroup is None
    assert report.taken.to_json()["culprits_by_cgroup"] is None


def test_names_say_pod_and_container_else_the_path():
    path = f"/kubepods/burstable/pod{POD}/{CONTAINER}"
    assert display_name(path, CONTAINER, POD) == f"pod {POD}, container {CONTAINER[:12]}"
    assert display_name(f"/kubepods/pod{POD}", None, POD) == f"pod {POD}"
    assert display_name("/system.slice/cron.service", None, None) == "/system.slice/cron.service"


def test_gpu_time_culprits_are_grouped_the_same_way(tmp_path):
    g = build_report(shared_cpu().write(tmp_path / "t.lg")).gpu_time
    assert isinstance(g, GpuTimeBounds) and g.culprits_by_cgroup is not None
    by_task = {(c.name, cause): ns for c in g.culprits for cause, ns in c.causes.items()}
    by_cgroup = {(r.name, r.cause): r.high_ns for r in g.culprits_by_cgroup}
    # the launching thread's delays, each charged to the cgroup its culprit was in at the time
    assert by_task[("hog", "preempted")] == by_cgroup[("/pod-a", "preempted")] + by_cgroup[("/pod-c", "preempted")]
    assert (by_cgroup[("/pod-a", "preempted")], by_cgroup[("/pod-c", "preempted")]) == (5000, 2000)
    assert by_cgroup[(f"container {CONTAINER[:12]}", "preempted")] == by_task[("dockerd", "preempted")] == 3000


def test_diff_matches_cgroups_of_both_sides(tmp_path):
    a = build_report(shared_cpu().write(tmp_path / "a.lg"))
    quieter = shared_cpu()
    quieter.rows = [r for r in quieter.rows if not (r["event"] == "switch" and 20_000 <= r["ts_ns"] <= 23_000)]
    b = build_report(quieter.write(tmp_path / "b.lg"))
    compared = diff_reports(a, b, "cgroup").culprits_by_cgroup
    cpu = {(r.name, r.cause): (r.a_ns, r.b_ns, r.change_percent) for r in compared.cpu}
    assert cpu[("/pod-a", "preempted")] == (5000, 5000, 0.0)
    assert cpu[(f"container {CONTAINER[:12]}", "preempted")] == (3000, 0, -100.0)
    assert diff_reports(a, b).culprits_by_cgroup is None
    assert "culprits_by_cgroup" not in document(diff_reports(a, b))


def test_diff_says_each_cgroups_change_in_words(tmp_path):
    """As every other change diff shows (issue 25, item 4): "100.0% lower", not a signed percentage."""
    from rich.console import Console

    from launchgap.console import UNBOUNDED_WIDTH
    from launchgap.views.terminal import render_cgroup_diff

    a = build_report(shared_cpu().write(tmp_path / "a.lg"))
    quieter = shared_cpu()
    quieter.rows = [r for r in quieter.rows if not (r["event"] == "switch" and 20_000 <= r["ts_ns"] <= 23_000)]
    b = build_report(quieter.write(tmp_path / "b.lg"))
    console = Console(record=True, width=UNBOUNDED_WIDTH, soft_wrap=True, emoji=False)
    render_cgroup_diff(diff_reports(a, b, "cgroup").culprits_by_cgroup, console)
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in console.export_text().splitlines()
        if line.startswith("│")
    }
    assert rows[f"container {CONTAINER[:12]}"][-1] == "100.0% lower"
    assert rows["/pod-a"][-1] == "no change"
