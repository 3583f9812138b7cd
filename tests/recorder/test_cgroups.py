"""Culprits by container: the trace records each task's cgroup (task_cgroup rows) and names every cgroup
(cgroup rows), and the report and diff group their culprit tables by it.

The cgroups are made by the tests, in each hierarchy the host has that the recorder records (cgroup v2,
and the cgroup v1 hierarchy of the cpu controller on hosts that mount one), and removed in every path.
CPU hogs placed in them run beside cudasim on the same CPU: the report grouped by cgroup names each
hog's cgroup (the path the test made) with exactly the hog's own culprit time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

from launchgap.analysis import taken
from launchgap.analysis.records import GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.analysis.timeline import cpu_runs, thread_segments, trace_bounds
from launchgap.trace import Event, read_trace
from tests.conftest import REPO
from tests.recorder.conftest import cudasim_command, needs_bpf

pytestmark = needs_bpf

CLI = [sys.executable, "-m", "launchgap.cli"]
OLD_TRACE = REPO / "tests" / "data" / "format1-cudasim.lg"
# a container id and a pod UID as the kubelet names them (cgroupfs driver)
CONTAINER_ID = "3f2a8d0c1b4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
POD_UID = "6b0f3f5e-6f9a-4b8e-9d0e-3c1a2b4c5d6e"


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        dash = fields.index("-")
        if fields[dash + 1].startswith("cgroup"):
            out.append((fields[4], fields[dash + 1], fields[dash + 3]))
    return out


def hierarchy_root(hierarchy: str) -> Path | None:
    """Where the test makes its cgroups: the v2 mount, or the v1 mount of the cpu controller."""
    for mount, fs_type, options in _mounts():
        if hierarchy == "v2" and fs_type == "cgroup2":
            return Path(mount)
        if hierarchy == "v1_cpu" and fs_type == "cgroup" and "cpu" in options.split(","):
            return Path(mount)
    return None


def _own_v2_cgroup() -> str | None:
    return next(
        (line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), None
    )


def _why_not(hierarchy: str) -> str | None:
    if hierarchy_root(hierarchy) is None:
        return f"no {hierarchy} hierarchy here"
    # a task's cgroup is its v2 one unless that is the root: a hog in a v1 cgroup must be in the v2 root
    if hierarchy == "v1_cpu" and _own_v2_cgroup() not in (None, "/"):
        return "the tests run in a cgroup v2 below the root, which names their hogs' cgroup before the v1 one"
    return None


HIERARCHIES = [
    pytest.param(h, marks=pytest.mark.skipif(_why_not(h) is not None, reason=_why_not(h) or ""))
    for h in ("v2", "v1_cpu")
]


def _procs(cgroup: Path) -> list[str]:
    try:
        return (cgroup / "cgroup.procs").read_text().split()
    except OSError:
        return []


@contextmanager
def made_cgroups(root: Path, *relative: str) -> Iterator[dict[str, Path]]:
    """Cgroups made below ROOT/launchgap-test-PID-XXXX (each of RELATIVE, with its parents); at the end,
    whatever is still in them goes back to ROOT and each is removed, deepest first, on every path."""
    top = root / f"launchgap-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    made: list[Path] = []
    try:
        for path in (top, *(top / r for r in relative)):
            for part in [*reversed(path.relative_to(root).parents[:-1]), path.relative_to(root)]:
                directory = root / part
                if not directory.exists():
                    directory.mkdir()
                    made.append(directory)
        yield {r: top / r for r in relative} | {"": top}
    finally:
        for directory in sorted(made, key=lambda p: len(p.parts), reverse=True):
            for _ in range(100):
                for pid in _procs(directory):
                    try:
                        (root / "cgroup.procs").write_text(pid)
                    except OSError:
                        pass  # exited meanwhile
                try:
                    directory.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
    assert not top.exists(), f"{top} was left behind"


_HOG = (
    "import ctypes, os, sys; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0); "
    "os.sched_setaffinity(0, {int(sys.argv[2])})\nwhile True: pass"
)


@contextmanager
def hogs_in(placed: dict[str, Path], cpu: int) -> Iterator[dict[str, subprocess.Popen]]:
    """A busy loop per NAME -> cgroup, each pinned on CPU and put in its cgroup before it runs; killed (by its
    own process group) at the end."""
    started: dict[str, subprocess.Popen] = {}
    try:
        for name, cgroup in placed.items():

            def join(cgroup: Path = cgroup) -> None:
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))

            started[name] = subprocess.Popen(
                [sys.executable, "-c", _HOG, name, str(cpu)],
                preexec_fn=join,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        time.sleep(0.5)
        for name, hog in started.items():
            assert hog.poll() is None, f"the hog {name} did not start"
            assert str(hog.pid) in _procs(placed[name]), f"the hog {name} is not in {placed[name]}"
        yield started
    finally:
        for hog in started.values():
            try:
                os.killpg(hog.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            hog.wait()


def record_beside(record, cpu: int, *recorder_args: str, tokens: int = 120):
    """cudasim pinned to CPU (host work between launches, so the hogs preempt it), recorded."""
    return record(
        [
            "taskset",
            "-c",
            str(cpu),
            *cudasim_command("--tokens", str(tokens), "--host-us", "1000", "--kernel-us", "0:0"),
        ],
        *recorder_args,
        truth=False,
    )


def task_rows(culprits, pid: int) -> dict[str, int]:
    """A task's culprit time by cause, from the report's per-task rows (ungrouped): the CPU time taken's
    (a row per cause), or GPU time's by process (a row per process, its time under each cause)."""
    out: dict[str, int] = {}
    for c in culprits:
        if hasattr(c, "causes"):
            if c.pids == [pid]:
                for cause, ns in c.causes.items():
                    if ns:
                        out[cause] = out.get(cause, 0) + ns
        elif c.pid == pid:
            out[c.cause] = out.get(c.cause, 0) + c.ns
    return out


def every_task_row(trace, report, pid: int) -> dict[str, int]:
    """A task's culprit time by cause, whole: the per-task analysis the report's `culprits` (its top ten)
    come from, on every thread of the workload."""
    tids = [t.tid for t in report.taken.threads]
    bounds = trace_bounds(trace)
    rows = taken.culprits(thread_segments(trace, tids, bounds), cpu_runs(trace, bounds))
    mine = rows.filter(pl.col("run_pid") == pid).group_by("cause").agg(pl.col("ns").sum())
    return dict(mine.iter_rows())


def cgroup_rows(rows, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        if r.cgroup == path:
            out[r.cause] = out.get(r.cause, 0) + (r.ns if hasattr(r, "ns") else r.high_ns)
    return out


def same_time(grouped: dict[str, int], own: dict[str, int]) -> bool:
    """A cgroup's rows hold the task's time for each cause the task's rows show (they are the top ten of the
    trace: a small row of the hog's may be past them), and no cause that is not a task's own."""
    return (
        bool(own)
        and all(grouped.get(cause) == ns for cause, ns in own.items())
        and set(grouped) <= {"preempted", "runqueue"}
    )


def relative(cgroup: Path, hierarchy: str) -> str:
    return "/" + str(cgroup.relative_to(hierarchy_root(hierarchy)))


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_culprits_grouped_by_cgroup_name_each_hogs_cgroup_with_its_time(record, tmp_path, hierarchy):
    cpu = sorted(os.sched_getaffinity(0))[0]
    root = hierarchy_root(hierarchy)
    with (
        made_cgroups(root, "pod-a", "pod-b") as made,
        hogs_in({"lg-hog-a": made["pod-a"], "lg-hog-b": made["pod-b"]}, cpu) as hogs,
    ):
        run = record_beside(record, cpu, "--gpu-activity")
        paths = {name: relative(made[f"pod-{name[-1]}"], hierarchy) for name in hogs}
        pids = {name: hog.pid for name, hog in hogs.items()}
        # the kernel's truth: a cgroup's id is its directory's inode; what each hog ever ran, from its schedstat
        inodes = {name: os.stat(made[f"pod-{name[-1]}"]).st_ino for name in hogs}
        ran_ns = {name: int(Path(f"/proc/{hog.pid}/schedstat").read_text().split()[0]) for name, hog in hogs.items()}
    trace = run.trace
    # what the recorder wrote: each hog's cgroup named by the path the test made, at its directory's inode
    names = trace.of(Event.CGROUP, "hierarchy", "cgroup_id", "cgroup_path")
    for name, path in paths.items():
        named = names.filter((names["hierarchy"] == hierarchy) & (names["cgroup_path"] == path))
        assert named["cgroup_id"].to_list() == [inodes[name]], path
    # and each hog recorded in the cgroup the test put it in, and no other
    members = trace.of(Event.TASK_CGROUP, "pid", "cgroup_id", "v1_cpu_cgroup_id")
    id_column = "cgroup_id" if hierarchy == "v2" else "v1_cpu_cgroup_id"
    for name, pid in pids.items():
        ids = set(members.filter(members["pid"] == pid)[id_column].to_list())
        assert ids == {inodes[name]}, (name, ids)

    report = build_report(trace)
    by_cgroup = report.taken.culprits_by_cgroup
    assert by_cgroup is not None
    for name, pid in pids.items():
        own = every_task_row(trace, report, pid)
        assert sum(own.values()) > 10_000_000, f"{name} took {own} from the workload: too little to tell"
        # exactly the hog's own time: it is the only task of its cgroup
        assert cgroup_rows(by_cgroup, paths[name]) == own, name
        # no more than the hog ever ran (the kernel's count)
        assert sum(cgroup_rows(by_cgroup, paths[name]).values()) <= ran_ns[name], name
        row = next(r for r in by_cgroup if r.cgroup == paths[name])
        assert (row.processes, row.container_id, row.pod, row.name) == (1, None, None, paths[name])
    # two cgroups, two rows: never merged
    assert cgroup_rows(by_cgroup, paths["lg-hog-a"]) != cgroup_rows(by_cgroup, paths["lg-hog-b"])
    # GPU time (exact: recorded with GPU activity), grouped the same way
    g = report.gpu_time
    assert isinstance(g, GpuTimeExact) and g.culprits_by_cgroup is not None
    for name, pid in pids.items():
        own = task_rows(g.culprits_by_process, pid)
        assert same_time(cgroup_rows(g.culprits_by_cgroup, paths[name]), own), name

    # the command line: the grouped table on the terminal, the same rows in --json
    shown = subprocess.run(
        [*CLI, "report", str(trace.path), "--culprits-by", "cgroup"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert shown.returncode == 0, shown.stderr
    assert paths["lg-hog-a"] in shown.stdout and paths["lg-hog-b"] in shown.stdout
    as_json = json.loads(
        subprocess.run(
            [*CLI, "report", str(trace.path), "--json"], capture_output=True, text=True, timeout=600, check=True
        ).stdout
    )
    assert as_json["taken"]["culprits_by_cgroup"] == [r.to_json() for r in by_cgroup]


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_diff_compares_culprits_by_cgroup(record, tmp_path, hierarchy):
    """A with both hogs, B with only the first (GPU time estimated from the host): each cgroup's time on each
    side, as each side's report has it."""
    cpu = sorted(os.sched_getaffinity(0))[0]
    with made_cgroups(hierarchy_root(hierarchy), "pod-a", "pod-b") as made:
        path_a, path_b = relative(made["pod-a"], hierarchy), relative(made["pod-b"], hierarchy)
        with hogs_in({"lg-hog-a": made["pod-a"], "lg-hog-b": made["pod-b"]}, cpu):
            first = record_beside(record, cpu).trace
        moved = tmp_path / "a.lg"
        first.path.rename(moved)
        with hogs_in({"lg-hog-a": made["pod-a"]}, cpu):
            second = record_beside(record, cpu).trace
    report_a, report_b = build_report(read_trace(moved)), build_report(second)
    out = subprocess.run(
        [*CLI, "diff", str(moved), str(second.path), "--culprits-by", "cgroup", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["culprits_by_cgroup"]
    for side in ("cpu", "gpu"):
        got = {(r["cgroup"], r["cause"]): (r["a_ns"], r["b_ns"]) for r in rows[side]}
        sides = (
            (report_a.taken.culprits_by_cgroup, report_b.taken.culprits_by_cgroup)
            if side == "cpu"
            else (report_a.gpu_time.culprits_by_cgroup, report_b.gpu_time.culprits_by_cgroup)
        )
        for path in (path_a, path_b):
            a, b = cgroup_rows(sides[0], path), cgroup_rows(sides[1], path)
            for cause in set(a) | set(b):
                assert got[(path, cause)] == (a.get(cause, 0), b.get(cause, 0)), (side, path, cause)
        # the second hog was gone from B: its cgroup took nothing there
        assert sum(cgroup_rows(sides[0], path_b).values()) > 0
        assert cgroup_rows(sides[1], path_b) == {}
    shown = subprocess.run(
        [*CLI, "diff", str(moved), str(second.path), "--culprits-by", "cgroup"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert shown.returncode == 0 and path_a in shown.stdout, shown.stderr


def _stopped(pid: int) -> None:
    """Waits until PID is stopped (a signal to a running task takes effect at its next return to user space)."""
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, f"{pid} never stopped"
        time.sleep(0.01)


def test_a_container_started_while_recording_is_named_by_its_pod_and_container(tmp_path):
    """A Kubernetes-shaped cgroup (kubepods/burstable/pod<uid>/<container id>) made after tracing began, a hog
    moved into it (from a cgroup of the test's, stopped meanwhile: it runs only in the new one), and the cgroup
    removed before the recording ends: the cgroup_mkdir program named it, with the pod and container the
    monitor's code reads from its path, and the hog's move was recorded."""
    hierarchy = next((h for h in ("v2", "v1_cpu") if _why_not(h) is None), None)
    if hierarchy is None:
        pytest.skip("no cgroup hierarchy the recorder records")
    cpu = sorted(os.sched_getaffinity(0))[0]
    root = hierarchy_root(hierarchy)
    container = f"kubepods/burstable/pod{POD_UID}/{CONTAINER_ID}"
    out = tmp_path / "late.lg"
    with made_cgroups(root, "holding") as holding, hogs_in({"lg-hog-late": holding["holding"]}, cpu) as hogs:
        hog_pid = hogs["lg-hog-late"].pid
        holding_inode = os.stat(holding["holding"]).st_ino
        os.kill(hog_pid, signal.SIGSTOP)
        _stopped(hog_pid)
        recorder = subprocess.Popen(
            [
                str(REPO / "recorder" / "target" / "release" / "launchgap-record"),
                "-o",
                str(out),
                "--",
                "taskset",
                "-c",
                str(cpu),
                *cudasim_command("--tokens", "3000", "--host-us", "1000", "--kernel-us", "0:0"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not (out.parent / f".{out.name}.partial-{recorder.pid}" / "meta.json").exists() and not out.exists():
                assert time.monotonic() < deadline and recorder.poll() is None, "the recorder never started tracing"
                time.sleep(0.05)
            with made_cgroups(root, container) as made:
                path = relative(made[container], hierarchy)
                inode = os.stat(made[container]).st_ino
                (made[container] / "cgroup.procs").write_text(str(hog_pid))
                os.kill(hog_pid, signal.SIGCONT)
                time.sleep(1.0)
                # stopped again before the cgroup is taken down (its tasks go back to the root then)
                os.kill(hog_pid, signal.SIGSTOP)
                _stopped(hog_pid)
            _, err = recorder.communicate(timeout=600)
            assert recorder.returncode == 0, err
        finally:
            if recorder.poll() is None:
                os.killpg(recorder.pid, signal.SIGKILL)
                recorder.wait()
    trace = read_trace(out)
    named = trace.of(Event.CGROUP, "ts_ns", "hierarchy", "cgroup_id", "cgroup_path", "container_id", "pod").filter(
        pl.col("cgroup_path") == path
    )
    assert named.height == 1 and named["ts_ns"][0] > trace.meta["start_ns"], "not named by cgroup_mkdir"
    assert (named["hierarchy"][0], named["cgroup_id"][0]) == (hierarchy, inode)
    assert (named["container_id"][0], named["pod"][0]) == (CONTAINER_ID, POD_UID)
    # the hog's cgroups as the trace has them: the test's holding cgroup (if a switch of it was recorded before
    # it stopped), then the one it was moved into (recorded at its first switch after)
    id_column = "cgroup_id" if hierarchy == "v2" else "v1_cpu_cgroup_id"
    members = trace.of(Event.TASK_CGROUP, "ts_ns", "pid", id_column).filter(pl.col("pid") == hog_pid).sort("ts_ns")
    assert members[id_column].to_list() in ([inode], [holding_inode, inode]), members
    report = build_report(trace)
    row = [r for r in report.taken.culprits_by_cgroup if r.cgroup == path]
    assert row and row[0].name == f"pod {POD_UID}, container {CONTAINER_ID[:12]}"
    # it ran only while in the new cgroup: all of its time is that cgroup's, to the nanosecond
    own = every_task_row(trace, report, hog_pid)
    assert sum(own.values()) > 0 and cgroup_rows(report.taken.culprits_by_cgroup, path) == own


def test_grouping_a_trace_without_cgroups_is_refused_in_one_line():
    for command in (
        ["report", str(OLD_TRACE), "--culprits-by", "cgroup"],
        ["diff", str(OLD_TRACE), str(OLD_TRACE), "--culprits-by", "cgroup"],
    ):
        out = subprocess.run([*CLI, *command], capture_output=True, text=True, timeout=300)
        lines = out.stderr.strip().splitlines()
        assert out.returncode != 0 and len(lines) == 1, out.stderr
        assert "does not record each task's cgroup" in lines[0] and "Traceback" not in out.stderr


def test_cgroups_named_with_bytes_that_are_not_utf8_keep_them_escaped(tmp_path):
    """Issue 31, item 6: a cgroup named with a byte that is not UTF-8 was recorded with U+FFFD in its place, both
    from the walk at the start and from cgroup_mkdir, so that two such cgroups merged into one name; the trace
    escapes such bytes as \\xHH in every name (docs/trace-format.md, "Names")."""
    hierarchy = next((h for h in ("v2", "v1_cpu") if _why_not(h) is None), None)
    if hierarchy is None:
        pytest.skip("no cgroup hierarchy the recorder records")
    root = hierarchy_root(hierarchy)
    before, during = os.fsdecode(b"lg\xffa"), os.fsdecode(b"lg\xfea")
    out = tmp_path / "odd.lg"
    with made_cgroups(root, before) as early:
        recorder = subprocess.Popen(
            [
                str(REPO / "recorder" / "target" / "release" / "launchgap-record"),
                "-q",
                "-o",
                str(out),
                "--",
                "sleep",
                "2",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not (out.parent / f".{out.name}.partial-{recorder.pid}" / "meta.json").exists():
                assert time.monotonic() < deadline and recorder.poll() is None, "the recorder never started tracing"
                time.sleep(0.02)
            with made_cgroups(root, during) as late:
                pass
            _, err = recorder.communicate(timeout=120)
            assert recorder.returncode == 0, err
        finally:
            if recorder.poll() is None:
                recorder.kill()
                recorder.wait()
    paths = set(read_trace(out).of(Event.CGROUP)["cgroup_path"].to_list())
    assert f"/{early[''].name}/lg\\xffa" in paths
    assert f"/{late[''].name}/lg\\xfea" in paths
    assert not any("\ufffd" in p for p in paths)
