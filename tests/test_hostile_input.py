"""A hostile audit's findings on the Python side (issue 11): outputs that name a device or a symlink,
inputs that are devices or FIFOs, CPU lists that would fill memory, SIGTERM mid-write, unparsable host
files, scenario errors that surfaced only after the warm-up, a recorder that is not one. Each case
reproduces what the audit saw; each answer is one line (never a traceback) and nothing is left behind."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launchgap.doctor.parse import MAX_CPU, ParseError, parse_cpulist, parse_cpumask
from launchgap.output import OutputError, real_target
from tests.conftest import REPO
from tests.doctor.trees import make_tree
from tests.test_output_safety import small_trace

PARTIAL = ".partial"


def launchgap(
    *args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 120, preexec_fn=None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def partials(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if PARTIAL in p.name)


# ---- 1. outputs through symlinks and onto devices ------------------------------------------------------


def test_an_output_naming_a_file_descriptor_is_refused_and_dev_stdout_stays_a_link():
    for name in ("/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1", f"/proc/{os.getpid()}/fd/1"):
        with pytest.raises(OutputError) as refused:
            real_target(name)
        assert str(refused.value) == (
            f"{name}: names an open file descriptor, not a file; launchgap writes its "
            f"outputs to files (give a file path)"
        )
    assert Path("/dev/stdout").is_symlink()


def test_outputs_in_proc_or_sys_are_refused_in_one_line():
    with pytest.raises(OutputError) as refused:
        real_target("/proc/sys/kernel/timer_migration")
    assert str(refused.value) == (
        "/proc/sys/kernel/timer_migration: is in the kernel's proc file system, not a place for files; give a file path"
    )
    with pytest.raises(OutputError) as refused:
        real_target("/sys/kernel/x.csv")
    assert (
        str(refused.value) == "/sys/kernel/x.csv: is in the kernel's sys file system, not a place for files; "
        "give a file path"
    )


def test_export_to_proc_self_fd_is_one_line_and_writes_nothing(tmp_path):
    trace = small_trace(tmp_path / "run.lg")
    proc = launchgap("export", "--csv", str(trace), "-o", "/proc/self/fd/1")
    assert proc.returncode == 2
    assert one_line(proc) == (
        "launchgap: /proc/self/fd/1: names an open file descriptor, not a file; launchgap "
        "writes its outputs to files (give a file path)"
    )
    assert proc.stdout == ""


def test_an_output_through_a_symlink_replaces_the_file_it_names_and_keeps_the_link(tmp_path):
    trace = small_trace(tmp_path / "run.lg")
    real = tmp_path / "elsewhere" / "study.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "study.csv"
    link.symlink_to(real)
    proc = launchgap("export", "--csv", str(trace), "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().splitlines()[0].startswith("timestamp_ns,")
    assert partials(tmp_path) == [] and partials(real.parent) == []


# ---- 3. inputs that are devices or FIFOs; CPU lists that would fill memory ----------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("0-99999999999", "CPU 99999999999 is beyond the highest CPU Linux supports (8191)"),
        ("0-8192", "CPU 8192 is beyond the highest CPU Linux supports (8191)"),
        ("1" * 40, "CPU 11111111111111111111... is beyond the highest CPU Linux supports (8191)"),
        ("0-\u00b2", "bad CPU number '\u00b2'"),
        ("\u00b9", "bad CPU number '\u00b9'"),
        ("0-15:2/99999", "bad CPU group '2/99999'"),
    ],
)
def test_cpu_lists_are_bounded_and_superscripts_refused(text, message):
    with pytest.raises(ParseError) as refused:
        parse_cpulist(text)
    assert str(refused.value) == message


def test_the_highest_cpu_is_still_taken():
    assert parse_cpulist(f"{MAX_CPU - 1}-{MAX_CPU}") == frozenset({MAX_CPU - 1, MAX_CPU})
    with pytest.raises(ParseError) as refused:
        parse_cpumask("f" * 3000)
    assert str(refused.value) == "CPU mask of 3000 hex digits: more CPUs than Linux supports (8192)"


def _address_space(limit_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def test_doctor_cpus_with_a_huge_range_is_one_line_under_a_memory_cap():
    # the audit's run was OOM-killed and took the machine down: here under a 3 GiB address-space cap, so that
    # a regression fails with MemoryError instead of exhausting the host
    proc = launchgap("doctor", "--cpus", "0-99999999999", preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 2
    assert one_line(proc) == (
        "launchgap: --cpus 0-99999999999: CPU 99999999999 is beyond the highest CPU Linux supports (8191)"
    )


def test_levers_cpus_with_a_huge_range_is_one_line():
    proc = launchgap("experiment", "levers", "--cpus", "0-99999999999", preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 2
    assert one_line(proc) == (
        "launchgap: --cpus 0-99999999999: CPU 99999999999 is beyond the highest CPU Linux supports (8191)"
    )


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_as_a_trace_is_refused_without_blocking(fifo):
    for command in (
        ["report", str(fifo)],
        ["export", "--csv", str(fifo), "-o", str(fifo.parent / "x.csv")],
        ["doctor", "--trace", str(fifo)],
    ):
        proc = launchgap(*command, timeout=60)
        assert proc.returncode == 2
        prefix = "--trace " if command[0] == "doctor" else ""
        assert one_line(proc) == f"launchgap: {prefix}{fifo}: a FIFO, not a trace" + (
            "" if command[0] == "doctor" else " (a file or a trace directory)"
        )


def test_a_device_or_fifo_as_cudasim_truth_is_refused(fifo):
    proc = launchgap("cudasim-truth", "/dev/zero", preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 2
    assert one_line(proc) == "launchgap: /dev/zero: a character device, not a regular file; give a file"
    proc = launchgap("cudasim-truth", str(fifo), timeout=60)
    assert one_line(proc) == f"launchgap: {fifo}: a FIFO, not a regular file; give a file"


def test_a_device_or_fifo_as_a_scenario_file_is_refused(fifo):
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import from_toml

    for path, kind in (("/dev/zero", "a character device"), (str(fifo), "a FIFO")):
        with pytest.raises(MitigationError) as refused:
            from_toml(path)
        assert str(refused.value) == f"{path}: {kind}, not a regular file; give a file"


def test_doctor_root_with_a_fifo_or_device_file_reads_neither(tmp_path):
    root = make_tree(tmp_path, "node-4cpu", {"/proc/cmdline": None, "/proc/cpuinfo": None, "/proc/interrupts": None})
    os.mkfifo(root / "proc" / "cmdline")
    # a link to the host's /dev/zero leads out of the root: refused before it is opened
    os.symlink("/dev/zero", root / "proc" / "cpuinfo")
    if os.geteuid() == 0:  # a device inside the root: opened, and not read
        os.mknod(root / "proc" / "interrupts", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    proc = launchgap("doctor", "--root", str(root), "--json", timeout=60, preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 0, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    evidence = {e["path"]: e["value"] for c in checks.values() for e in c["evidence"]}
    assert evidence["/proc/cmdline"] == "(not readable: EINVAL)"
    assert evidence["/proc/cpuinfo"] == "(not readable: a symbolic link out of the root)"
    if os.geteuid() == 0:
        assert evidence["/proc/interrupts"] == "(not readable: EINVAL)"


# ---- 4. SIGTERM mid-write ----------------------------------------------------------------------------

SLOW_WRITER = """
import importlib, sys, time
module, name, told = importlib.import_module(sys.argv[1]), sys.argv[2], sys.argv[3]
real = getattr(module, name)
def slow(*args, **kwargs):
    done = real(*args, **kwargs)
    partial = next(a for a in args if ".partial" in str(a))
    open(told, "w").write(str(partial))   # tell the test where the partial file is
    time.sleep(120)
    return done
setattr(module, name, slow)
import launchgap.cli as cli
sys.argv = ["launchgap", *sys.argv[4:]]
cli.main()
"""


@pytest.mark.parametrize("command", ["export", "report", "running-waiting"])
def test_sigterm_while_writing_removes_the_partial_file_and_exits_143(tmp_path, command):
    trace = small_trace(tmp_path / "run.lg")
    out = tmp_path / "out" / ("rw.png" if command == "running-waiting" else "study.csv")
    out.parent.mkdir()
    told = tmp_path / "partial-name"
    patched, args = {
        "export": (["launchgap.cli", "write_study_csv"], ["export", "--csv", str(trace), "-o", str(out)]),
        "report": (["launchgap.cli", "write_study_csv"], ["report", str(trace), "--csv", str(out)]),
        "running-waiting": (
            ["launchgap.views.running_waiting", "draw_static"],
            ["running-waiting", str(trace), "-o", str(out)],
        ),
    }[command]
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, *patched, str(told), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (told.exists() and told.read_text()):
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        partial = Path(told.read_text())
        assert partial.exists() and PARTIAL in partial.name and partial.parent == out.parent
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    assert stderr == "launchgap: terminated (SIGTERM): stopping and cleaning up\n"
    assert not partial.exists() and list(out.parent.iterdir()) == []


# ---- 5. unparsable host files: one check unknown, never a traceback ------------------------------------


def test_an_unparsable_host_file_makes_only_its_checks_unknown(tmp_path):
    root = make_tree(
        tmp_path,
        "node-4cpu",
        {"/proc/sys/kernel/sched_rt_runtime_us": "95\u00b20000\n", "/sys/devices/system/cpu/isolated": "0-\u00b2\n"},
    )
    proc = launchgap("doctor", "--root", str(root), "--json")
    assert proc.returncode == 0, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["sched.rt_throttling"]["status"] == "unknown"
    assert checks["sched.rt_throttling"]["summary"] == "cannot parse /proc/sys/kernel/sched_rt_runtime_us: 95\u00b20000"
    assert checks["boot.isolation"]["status"] == "unknown"
    assert checks["boot.isolation"]["summary"] == (
        "cannot parse /sys/devices/system/cpu/isolated: 0-\u00b2 (bad CPU number '\u00b2')"
    )
    # the checks that rest on neither file still say what they found
    assert (checks["cpu.thp"]["status"], checks["sched.preemption"]["status"]) == ("ok", "ok")


def test_malformed_host_files_in_a_trace_make_checks_unknown_not_a_crash(tmp_path):
    from launchgap.doctor.host import SnapshotHost
    from launchgap.doctor.run import run_doctor
    from tests.analysis.builder import IDLE, TraceBuilder
    from tests.doctor.trees import snapshot_of

    snapshot = snapshot_of(make_tree(tmp_path, "node-4cpu"))
    snapshot["files"]["/proc/sys/kernel/timer_migration"] = 7  # a number, not the file's text
    snapshot["errors"]["/sys/kernel/realtime"] = "ENOENT"  # not an errno number
    result = run_doctor(SnapshotHost(snapshot))
    checks = {c.id: c for c in result.checks}
    assert checks["sched.timer_migration"].status.value == "unknown"
    assert checks["sched.timer_migration"].summary == (
        "cannot parse /proc/sys/kernel/timer_migration: 7 (the trace's host_files hold no text for it)"
    )
    assert sum(c.status.value != "unknown" for c in result.checks) >= 10

    b = TraceBuilder(meta_extra={"host_files": snapshot})
    b.switch(2_000, 0, IDLE, (100, 100, "app"))
    b.write(tmp_path / "t.lg")
    proc = launchgap("doctor", "--trace", str(tmp_path / "t.lg"), "--json")
    assert proc.returncode == 0, proc.stderr
    shown = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert shown["sched.timer_migration"]["summary"] == checks["sched.timer_migration"].summary

    broken = TraceBuilder(meta_extra={"host_files": {"files": ["not", "a", "table"]}})
    broken.switch(2_000, 0, IDLE, (100, 100, "app"))
    broken.write(tmp_path / "broken.lg")
    proc = launchgap("doctor", "--trace", str(tmp_path / "broken.lg"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert {c["status"] for c in json.loads(proc.stdout)["checks"]} == {"unknown"}
    strict = launchgap("doctor", "--trace", str(tmp_path / "broken.lg"), "--strict")
    assert strict.returncode == 1
    assert strict.stderr == (
        "launchgap: --strict: no check could say anything (every one unknown): nothing was checked\n"
    )


@pytest.mark.parametrize(
    "env, message",
    [
        ('"BAD NAME" = "1"', "'BAD NAME': not a variable name (letters, digits and _, not starting with a digit)"),
        ('"A=B" = "1"', "'A=B': not a variable name (letters, digits and _, not starting with a digit)"),
        ('"9X" = "1"', "'9X': not a variable name (letters, digits and _, not starting with a digit)"),
        ('X = "a\\u0000b"', "X: the value holds a NUL byte, which no environment can carry"),
    ],
)
def test_scenario_environment_errors_are_found_before_any_run(tmp_path, env, message):
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import from_toml

    path = tmp_path / "s.toml"
    path.write_text(f"[scenarios.a]\nenv = {{ {env} }}\n")
    with pytest.raises(MitigationError) as refused:
        from_toml(path)
    assert str(refused.value) == f"{path}: scenarios.a.env: {message}"


def test_a_huge_repeat_is_one_line():
    proc = launchgap("experiment", "noisy-neighbor", "--repeat", "100000000000", "--", "true")
    assert proc.returncode == 2
    assert one_line(proc) == "launchgap: --repeat 100000000000: at most 1000 runs per scenario"


@pytest.mark.parametrize(
    "where, message",
    [
        (
            "/proc/launchgap-results",
            "-o /proc/launchgap-results: is in the kernel's proc file system, not a place for results",
        )
    ],
)
def test_experiment_results_in_proc_are_refused_before_anything(where, message):
    proc = launchgap(
        "experiment", "noisy-neighbor", "--scenarios", "baseline", "--repeat", "2", "-o", where, "--", "true"
    )
    assert proc.returncode == 2
    assert one_line(proc) == f"launchgap: {message}"


def test_experiment_results_in_a_read_only_directory_are_refused(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    command = [
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
        str(parent / "out"),
        "--",
        "true",
    ]
    if os.geteuid() == 0:
        # root writes through a directory's mode bits: a read-only bind mount, in a mount namespace of the
        # command's own (private: the host's mounts never see it), is what stops it
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
            pytest.skip("unshare -m is not available here")
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(parent), *command]
    else:
        parent.chmod(0o555)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    parent.chmod(0o755)
    assert proc.returncode == 2
    assert one_line(proc) == f"launchgap: -o {parent / 'out'}: {parent} is not writable"
    assert list(parent.iterdir()) == []


@pytest.mark.parametrize(
    "recorder, message",
    [
        ("/etc/passwd", "/etc/passwd: not an executable recorder binary"),
        ("/etc", "/etc: not an executable recorder binary"),
        ("/bin/echo", "/bin/echo did not answer as a launchgap recorder (its --list-probes output is not JSON;"),
    ],
)
def test_probes_with_a_recorder_that_is_not_one(recorder, message):
    proc = launchgap("probes", env={"LAUNCHGAP_RECORDER": recorder})
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith(f"launchgap: {message}"), line


# ---- 6. doctor's console, --strict, a study CSV -----------------------------------------------------


def test_doctor_piped_writes_whole_lines(tmp_path):
    root = make_tree(tmp_path / ("a-long-directory-name-" * 4), "node-4cpu")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "doctor", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith(f"launchgap doctor: the files under {root} (kernel ") and len(head) > 80


def test_doctor_strict_fails_when_nothing_could_be_checked(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = launchgap("doctor", "--root", str(empty), "--json")
    assert proc.returncode == 0
    assert {c["status"] for c in json.loads(proc.stdout)["checks"]} == {"unknown"}
    strict = launchgap("doctor", "--root", str(empty), "--strict", "--json")
    assert strict.returncode == 1
    assert strict.stderr == ""  # --json: the checks say it
    assert launchgap("doctor", "--root", str(make_tree(tmp_path, "node-4cpu")), "--strict").returncode in (0, 1)


def test_doctor_on_a_study_csv_says_it_needs_a_launchgap_trace(tmp_path):
    trace = small_trace(tmp_path / "run.lg")
    study = tmp_path / "study.csv"
    assert launchgap("export", "--csv", str(trace), "-o", str(study)).returncode == 0
    proc = launchgap("doctor", "--trace", str(study))
    assert proc.returncode == 2
    assert one_line(proc) == (
        f"launchgap: --trace {study}: a study CSV, which keeps no host files; doctor needs a "
        f"launchgap trace (launchgap record)"
    )


# ---- 7. scenario errors before any run ---------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"type": "cpu", "cpus": [99]},
            f"cpu: cpus [99] are not among this host's online CPUs {sorted(os.sched_getaffinity(0))}",
        ),
        (
            {"type": "cpu", "workers": 100000},
            f"cpu: workers 100000: give 1 to {8 * len(os.sched_getaffinity(0))} (8 per online CPU)",
        ),
        ({"type": "network", "streams": 100000}, "network: streams 100000: give 1 to 128 (iperf3's own limit)"),
        ({"type": "disk", "jobs": 100000, "directory": str(REPO)}, "disk: jobs 100000: give 1 to 64"),
    ],
)
def test_impossible_loads_are_refused_by_their_check(spec, message):
    from launchgap.experiments.loadgen import LoadError
    from launchgap.experiments.scenarios import make_load

    with pytest.raises(LoadError) as refused:
        make_load(spec, None).check()
    assert str(refused.value) == message


def test_rt_priority_without_rt_policy_is_refused(tmp_path):
    from launchgap.experiments.mitigations import MitigationError
    from launchgap.experiments.scenarios import from_toml

    path = tmp_path / "s.toml"
    path.write_text("[scenarios.a]\nmitigations = { rt_priority = 20 }\n")
    with pytest.raises(MitigationError) as refused:
        from_toml(path)
    assert str(refused.value) == (
        f'{path}: scenarios.a.mitigations: rt_priority needs rt_policy (fifo or rr), or give policy = "fifo:P"'
    )
    path.write_text('[scenarios.a]\nmitigations = { rt_policy = "fifo" }\n')
    assert from_toml(path)[-1].mitigations.sched_policy.priority == 10


@pytest.mark.parametrize(
    "size, message",
    [
        ("compute=abc", "--size compute=abc: not a number (N, or N with K, M or G)"),
        ("compute=-1", "--size compute=-1: not a number (N, or N with K, M or G)"),
        ("compute=0", "--size compute=0: must be at least 1"),
        ("compute=1T", "--size compute=1T: not a number (N, or N with K, M or G)"),
        ("compute=1000001", "--size compute=1000001: at most 1000000 rows for compute (the loop is N x N)"),
        ("memory=65G", "--size memory=65G: at most 64G bytes for memory"),
    ],
)
def test_lever_sizes_are_checked_before_any_run(size, message):
    proc = launchgap("experiment", "levers", "--size", size)
    assert proc.returncode == 2
    assert one_line(proc) == f"launchgap: {message}"


# ---- 9. a failed run's reason --------------------------------------------------------------------------


def test_a_failed_runs_reason_is_the_workloads_status_not_the_recorders_lost_line():
    from launchgap.experiments.runner import failed_run_error

    lost = (
        "launchgap-record: LOST 2 events (hardirq 2): 2 not seen by the probe (not_seen_by_probe: "
        "/proc/interrupts 36); the trace records them as lost rows\n"
    )
    assert failed_run_error(3, lost, recorded=True) == "the command exited with status 3"
    assert (
        failed_run_error(1, "Segmentation fault\n" + lost, recorded=True)
        == "the command exited with status 1: Segmentation fault"
    )
    assert failed_run_error(-9, lost, recorded=True) == "the command was killed by signal 9"
    assert (
        failed_run_error(1, "launchgap-record: cannot attach: Operation not permitted\n", recorded=False)
        == "the recorder failed (exit status 1): cannot attach: Operation not permitted"
    )


# ---- 2. one experiment at a time changes host settings -------------------------------------------------

HOLD_LOCK = """
import sys, time
from launchgap.experiments.host_lock import HostLock
from launchgap.experiments.levers import LeverHost
lock = HostLock(LeverHost(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_experiment_changing_host_settings_is_refused_while_the_first_runs(tmp_path):
    from launchgap.experiments.host_lock import LOCK_PATH, HostLock
    from launchgap.experiments.levers import LeverHost
    from launchgap.experiments.mitigations import Mitigations
    from launchgap.experiments.plan import ExperimentPlan, Metric
    from launchgap.experiments.runner import NotStartedError, run_experiment
    from launchgap.experiments.scenarios import Scenario

    root = tmp_path / "host"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        scenario = Scenario("quiet", mitigations=Mitigations(timer_migration=0))
        plan = ExperimentPlan(
            scenarios=[Scenario("baseline"), scenario],
            command=["true"],
            repeat=2,
            metric=Metric(None),
            outdir=tmp_path / "out",
            seed=1,
        )
        with pytest.raises(NotStartedError) as refused:
            run_experiment(plan, host=LeverHost(root))
        message = str(refused.value)
        assert message.startswith(
            f"host settings are being changed by another launchgap experiment (pid {holder.pid}, `launchgap "
        )
        assert message.endswith(
            f"it holds {root / LOCK_PATH.lstrip('/')}: run again when it has finished (two at "
            f"once would each save the other's changes as the host's own)"
        )
        assert not (tmp_path / "out").exists()  # refused before anything was made or changed
    finally:
        holder.kill()
        holder.wait()
    # the holder's death released it: the next one takes it, and gives it back
    lock = HostLock(LeverHost(root))
    lock.acquire(tmp_path / "out")
    held = json.loads((root / LOCK_PATH.lstrip("/")).read_text())
    assert (held["pid"], held["results"]) == (os.getpid(), str(tmp_path / "out"))
    lock.release()
    again = HostLock(LeverHost(root))
    again.acquire()
    again.release()


def test_only_host_wide_levers_take_the_lock():
    from launchgap.experiments.mitigations import Mitigations

    assert not Mitigations(cpus=[0], nice=-5, policy="fifo:10").changes_host
    for lever in (
        {"timer_migration": 1},
        {"preempt": "full"},
        {"cpuset": True},
        {"irq_away": True},
        {"isolate": "isolated"},
        {"workqueue_away": True},
    ):
        assert Mitigations(cpus=[0], **lever).changes_host, lever


# ---- 8. compare: the same runs twice, environments that differ ----------------------------------------


def results_of(
    tmp_path: Path, name: str, *, boot: str = "boot-1", governor: str = "performance", values=(1.0, 1.1, 1.2)
) -> Path:
    from launchgap.doctor.host import DirectoryHost
    from launchgap.doctor.run import run_doctor

    doctor = run_doctor(DirectoryHost(make_tree(tmp_path / f"tree-{name}", "node-4cpu"))).to_dict()
    runs = [{"index": 0, "round": 0, "scenario": "baseline", "warmup": True, "metric": 1.0}]
    runs += [
        {"index": i + 1, "round": i + 1, "scenario": "baseline", "warmup": False, "metric": v}
        for i, v in enumerate(values)
    ]
    results = {
        "schema": "launchgap-experiment/1",
        "status": "complete",
        "command": ["w"],
        "repeat": len(values),
        "seed": 7,
        "metric": "wall",
        "higher_is_better": False,
        "scenarios": [{"name": "baseline", "description": "no load; mitigations: none"}],
        "environment": {
            "hostname": "h",
            "boot_id": boot,
            "machine": "x86_64",
            "cpus": [0, 1],
            "governor": governor,
            "cmdline": "ro",
            "versions": {"launchgap": "1"},
        },
        "owner": {"pid": 100, "start_ticks": 5, "boot_id": boot},
        "runs": runs,
        "doctor": doctor,
    }
    directory = tmp_path / name
    directory.mkdir()
    (directory / "results.json").write_text(json.dumps(results))
    return directory


def test_compare_refuses_the_same_results_twice(tmp_path):
    a = results_of(tmp_path, "a")
    proc = launchgap("experiment", "compare", str(a), str(a), "--pool")
    assert proc.returncode == 2
    assert one_line(proc) == f"launchgap: {a} and {a} are the same results; give each experiment once"
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "results.json").write_bytes((a / "results.json").read_bytes())
    proc = launchgap("experiment", "compare", str(a), str(tmp_path / "copy"), "--pool")
    assert proc.returncode == 2
    assert one_line(proc) == (
        "launchgap: cannot pool: copy and a hold the same experiment's runs (a copy of its "
        "results): pooled, each run would count twice"
    )
    side = launchgap("experiment", "compare", str(a), str(tmp_path / "copy"), "--json")
    assert side.returncode == 0, side.stderr  # side by side, a copy is only shown twice


def test_compare_pools_differing_environments_only_with_force(tmp_path):
    a = results_of(tmp_path, "a")
    b = results_of(tmp_path, "b", boot="boot-2", governor="powersave", values=(2.0, 2.1, 2.2))
    proc = launchgap("experiment", "compare", str(a), str(b), "--pool")
    assert proc.returncode == 2
    assert one_line(proc) == (
        "launchgap: cannot pool: the experiments' environments differ: governor (a: "
        "performance, b: powersave) (--force pools them anyway)"
    )
    forced = launchgap("experiment", "compare", str(a), str(b), "--pool", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    pooled = json.loads(forced.stdout)
    assert pooled["environment_differ"] == {"governor": {"a": "performance", "b": "powersave"}}
    assert pooled["scenarios"][0]["runs"] == 6
    assert one_line(launchgap("experiment", "compare", str(a), str(b), "--force")) == "launchgap: --force is for --pool"


# ---- 10. views: a window past the trace's end, a --target that matches nothing ------------------------


@pytest.mark.parametrize("view", ["timeline", "running-waiting"])
def test_a_window_past_the_traces_end_is_one_line_not_an_empty_picture(tmp_path, view):
    trace = small_trace(tmp_path / "run.lg")
    out = tmp_path / "picture.png"
    proc = launchgap(view, str(trace), "--min", "100", "--max", "200", "-o", str(out))
    assert proc.returncode == 2
    assert one_line(proc) == (
        f"launchgap: {trace}: the window 100.000000..200.000000 s lies outside the trace, "
        f"which spans 0.000000..0.000119 s (seconds from the axis' origin); choose --min and "
        f"--max inside it"
    )
    assert not out.exists() and partials(tmp_path) == []


def test_a_target_that_matches_nothing_is_warned_about(tmp_path):
    trace = small_trace(tmp_path / "run.lg")
    proc = launchgap("timeline", str(trace), "--target", "nomatch", "-o", str(tmp_path / "t.png"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "launchgap: warning: --target nomatch: no task in "
        f"{trace}'s window has a command starting with 'nomatch'; every task is drawn black",
        f"launchgap: wrote {tmp_path / 't.png'}",
    ]
    matched = launchgap("timeline", str(trace), "--target", "launch", "-o", str(tmp_path / "u.png"))
    assert matched.stderr.splitlines() == [f"launchgap: wrote {tmp_path / 'u.png'}"]


def test_the_views_default_output_is_where_their_help_says(tmp_path):
    (tmp_path / "traces").mkdir()
    trace = small_trace(tmp_path / "traces" / "run.lg")
    proc = launchgap("timeline", str(trace), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run.timeline.png").is_file()
    shown = " ".join(launchgap("timeline", "--help").stdout.split())
    assert (
        "Default: NAME.timeline.png in the current directory, NAME the first trace's name without its suffix" in shown
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: the check before any run needs root")
@pytest.mark.parametrize(
    "body, message",
    [
        (
            'loads = [{ type = "cpu", cpus = [99] }]',
            f"cpu: cpus [99] are not among this host's online CPUs {sorted(os.sched_getaffinity(0))}",
        ),
        (
            'loads = [{ type = "network", streams = 100000 }]',
            "network: streams 100000: give 1 to 128 (iperf3's own limit)",
        ),
    ],
)
def test_an_impossible_load_is_refused_before_the_warm_up(tmp_path, body, message):
    scenarios = tmp_path / "s.toml"
    scenarios.write_text(f"[scenarios.loaded]\n{body}\n")
    proc = launchgap("experiment", "run", str(scenarios), "--repeat", "2", "-o", str(tmp_path / "out"), "--", "true")
    assert proc.returncode == 2
    assert one_line(proc) == f"launchgap: scenario loaded: {message}"
    assert not (tmp_path / "out").exists() and proc.stdout == ""
