"""`launchgap doctor` as a user runs it: on fixture trees, on this host, and
proof that it writes nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.doctor.checks import all_checks
from tests.doctor.trees import make_tree

LAUNCHGAP = [sys.executable, "-B", "-m", "launchgap.cli"]
STATUSES = {"ok", "warn", "fail", "unknown"}


def doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LAUNCHGAP, "doctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def _shape_ok(result: dict) -> None:
    assert result["schema"] == "launchgap-doctor/1"
    ids = [c["id"] for c in result["checks"]]
    assert ids == [c.id for c in all_checks()]
    for check in result["checks"]:
        assert check["status"] in STATUSES, check
        assert set(check) == {"id", "area", "title", "status", "summary", "evidence", "fix", "about_target", "data"}
        assert check["summary"]
        assert all(set(e) == {"path", "value"} for e in check["evidence"])
    assert sum(result["counts"].values()) == len(ids)


def test_live_host_json_has_every_check_with_a_status():
    proc = doctor("--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    _shape_ok(result)
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    assert result["online_cpus"] == online and result["target"] is None
    assert result["kernel"] == Path("/proc/sys/kernel/osrelease").read_text().strip()


def test_live_host_with_this_process_as_the_target():
    proc = doctor("--json", "-p", str(os.getpid()))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    _shape_ok(result)
    allowed = re.search(r"Cpus_allowed_list:\s*(\S+)", Path("/proc/self/status").read_text()).group(1)
    from launchgap.doctor.parse import parse_cpulist

    assert result["target"]["cpus"] == sorted(parse_cpulist(allowed))


def test_live_host_terminal_view():
    proc = doctor()
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for registered in all_checks():
        assert registered.title in text
    assert re.search(r"\d+ ok, \d+ warn, \d+ fail, \d+ unknown", text)


def test_strict_exits_nonzero_only_when_a_check_fails(tmp_path):
    failing = make_tree(tmp_path, "node-4cpu")  # a NIC queue on an isolated CPU
    assert doctor("--root", str(failing)).returncode == 0
    strict = doctor("--root", str(failing), "--strict", "--json")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["counts"]["fail"] == 1
    passing = make_tree(tmp_path / "b", "node-4cpu", {"/proc/irq/38/effective_affinity_list": "0\n"})
    proc = doctor("--root", str(passing), "--strict", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["counts"]["fail"] == 0


def test_root_tree_output_names_the_problem(tmp_path):
    root = make_tree(tmp_path, "node-4cpu")
    proc = doctor("--root", str(root), "--cpus", "2")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert (
        "fail device interrupts kept off isolated CPUs: 1 device interrupt lands on isolated CPUs 1-3: "
        "virtio2-input.0 (nic, IRQ 38) on CPU 2" in text
    )
    assert "warn RCU callbacks kept off the nohz_full CPUs: nohz_full=1-3 without rcu_nocbs" in text
    assert "fix: add rcu_nocbs=1-3 to the kernel command line" in text
    assert "target: the CPUs given (2)" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cpus", "1", "-p", "1"], "give --cpus or -p, not both"),
        (["--cpus", "4096"], "--cpus 4096: CPU 4096 is not online"),
        (["--cpus", "one"], "--cpus one: bad CPU number 'one'"),
        (["-p", "999999999"], "-p 999999999: no such process (ENOENT)"),
        (["--root", "/no/such/dir"], "--root /no/such/dir: no such directory"),
    ],
)
def test_user_errors_are_one_line(args, message):
    proc = doctor(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"launchgap: {message}") and proc.stderr.count("\n") == 1, proc.stderr


def test_fixture_tree_is_left_as_it_was(tmp_path):
    root = make_tree(tmp_path, "node-4cpu")
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}
    assert doctor("--root", str(root), "--cpus", "1", "--json").returncode == 0
    after = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}
    assert before == after


# syscalls that create, change or remove a file
CHANGING = (
    "creat",
    "mkdir",
    "mkdirat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "truncate",
    "ftruncate",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "fchownat",
    "symlink",
    "symlinkat",
    "link",
    "linkat",
    "mknod",
    "mknodat",
    "utimensat",
    "mount",
)
WRITING = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
OPEN_FOR_WRITING = re.compile(r"\bO_(WRONLY|RDWR|CREAT|TRUNC|APPEND)\b")


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (scripts/setup.sh installs it)")
def test_doctor_on_this_host_writes_nothing(tmp_path):
    """Every system call of a whole run, threads included: no file opened for
    writing, none created, changed or removed; writes only to stdout/stderr."""
    log = tmp_path / "strace.log"
    proc = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(log),
            "-e",
            "trace=" + ",".join(("open", "openat", "openat2") + CHANGING + WRITING),
            *LAUNCHGAP,
            "doctor",
            "--json",
            "-p",
            str(os.getpid()),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    calls = log.read_text().splitlines()
    opens = [c for c in calls if re.match(r"\d+\s+open(at2?)?\(", c)]
    assert len(opens) > 100, "strace saw the run's opens"
    assert [c for c in opens if OPEN_FOR_WRITING.search(c)] == []
    assert [c for c in calls if re.match(rf"\d+\s+({'|'.join(CHANGING)})\(", c)] == []
    writes = [c for c in calls if re.match(rf"\d+\s+({'|'.join(WRITING)})\(", c)]
    assert writes and all(re.match(rf"\d+\s+({'|'.join(WRITING)})\([12],", c) for c in writes), writes[:5]


def test_trace_gives_the_verdicts_of_the_recorded_host(tmp_path):
    from tests.analysis.builder import IDLE, TraceBuilder
    from tests.doctor.trees import snapshot_of

    root = make_tree(tmp_path, "node-4cpu")
    b = TraceBuilder(meta_extra={"host_files": snapshot_of(root)})
    b.switch(2_000, 0, IDLE, (100, 100, "app"))
    trace = tmp_path / "t.lg"
    b.write(trace)
    from_trace = doctor("--trace", str(trace), "--cpus", "2", "--json")
    from_tree = doctor("--root", str(root), "--cpus", "2", "--json")
    assert from_trace.returncode == 0 and from_tree.returncode == 0, from_trace.stderr + from_tree.stderr
    a, b_ = json.loads(from_trace.stdout), json.loads(from_tree.stdout)
    assert a.pop("host") == f"test when {trace} was recorded"
    b_.pop("host")
    assert a == b_

    bare = TraceBuilder()
    bare.switch(2_000, 0, IDLE, (100, 100, "app"))
    bare.write(tmp_path / "bare.lg")
    proc = doctor("--trace", str(tmp_path / "bare.lg"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"launchgap: {tmp_path / 'bare.lg'}: the trace carries no host files")
