"""Loss is never silent; bad input gets one clear line; the command is
started as the invoking user, its exit code passed on, and signals leave a
valid file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

from launchgap import procfs
from launchgap.trace import Event, read_trace
from tests.recorder.conftest import RECORDER, STORM, needs_bpf, our_programs_loaded

pytestmark = needs_bpf


def test_forced_loss_is_recorded_in_the_file_and_reported(tmp_path):
    out = tmp_path / "storm.lg"
    cpu = sorted(os.sched_getaffinity(0))[0]
    # a 16 KiB buffer drained once a second cannot hold a pinned ping-pong storm
    proc = subprocess.run(
        [str(RECORDER), "-o", str(out), "--buffer", "16K", "--poll-ms", "1000", "--", str(STORM), "--seconds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    lost = trace.lost
    total = int(lost["lost_count"].sum())
    assert total > 0
    assert trace.end["lost_events"] == total
    assert f"LOST {total} events" in proc.stderr
    kinds = set(lost["lost_event"].to_list())
    # task_cgroup: made at switches, lost with them (and made again at the task's next switch)
    assert (
        {"switch", "wakeup"} <= kinds <= {"switch", "wakeup", "softirq", "hardirq", "irq_vector", "exit", "task_cgroup"}
    )
    assert lost.filter(pl.col("since_ns") >= pl.col("ts_ns")).is_empty()
    assert set(lost["cpu"].to_list()) == {cpu}


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    return lines[0]


def test_bad_pid_is_one_line():
    before = our_programs_loaded()
    proc = subprocess.run([str(RECORDER), "-p", "999999999", "-o", "/dev/null"], capture_output=True, text=True)
    assert one_error_line(proc) == "launchgap-record: no such process: 999999999"
    assert our_programs_loaded() == before


def test_unwritable_output_is_one_line(tmp_path):
    proc = subprocess.run(
        [str(RECORDER), "-o", str(tmp_path / "missing" / "x.lg"), "--", "true"], capture_output=True, text=True
    )
    line = one_error_line(proc)
    assert line.startswith(f"launchgap-record: cannot write {tmp_path / 'missing' / 'x.lg'}:")


def test_without_privileges_is_one_line_and_the_command_never_runs(shared_dir):
    tmp_path = shared_dir
    marker = tmp_path / "ran"
    nobody = 65534

    def drop() -> None:
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)

    before = our_programs_loaded()
    proc = subprocess.run(
        [str(RECORDER), "-o", str(tmp_path / "x.lg"), "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        preexec_fn=drop,
    )
    assert one_error_line(proc) == (
        "launchgap-record: permission denied loading BPF programs: run as root (or with CAP_BPF and CAP_PERFMON)"
    )
    assert not marker.exists()
    assert our_programs_loaded() == before


def test_missing_command_is_one_line(tmp_path):
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(tmp_path / "x.lg"), "--", "/nonexistent/cmd"], capture_output=True, text=True
    )
    assert proc.returncode == 127
    assert proc.stderr.strip() == "launchgap-record: cannot run /nonexistent/cmd: No such file or directory"


def test_command_runs_as_the_invoking_user_and_its_exit_code_is_kept(tmp_path):
    env = {**os.environ, "SUDO_UID": "65534", "SUDO_GID": "65534"}
    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(out), "--", "sh", "-c", "id -u; id -g; exit 7"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 7
    assert proc.stdout.split() == ["65534", "65534"]
    assert read_trace(out).end["command_exit_code"] == 7


def test_without_cuda_it_warns_and_still_traces_scheduling(tmp_path):
    out = tmp_path / "x.lg"
    proc = subprocess.run([str(RECORDER), "-o", str(out), "--", "sleep", "0.2"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "warning: no CUDA driver library (libcuda.so.*) found" in proc.stderr
    trace = read_trace(out)
    pid = trace.meta["command_pid"]
    assert trace.of(Event.SWITCH).filter(pl.col("pid") == pid).height >= 1
    assert trace.of(Event.LAUNCH).is_empty()


def tracing_started(proc: subprocess.Popen) -> list[str]:
    """The recorder's stderr lines up to its "tracing ..." line: said once its stop signals are handled and its
    probes attached, just before it releases the command (recording/setup.rs, announce). Waits on that line,
    not on a time that a loaded machine may overrun."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("launchgap-record: tracing "):
            return lines
    raise AssertionError(f"the recorder ended before tracing (exit {proc.wait()}): {''.join(lines)}")


def stopped_state(pid: int) -> bool:
    return procfs.read_stat(f"/proc/{pid}/stat")[1][0] in ("T", "t")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_leaves_a_complete_file(tmp_path, sig):
    """SIGTERM to the recorder alone (it passes it on to the command); SIGINT to the recorder and its command
    at once, as a terminal's Ctrl-C reaches its foreground process group. Either way the command dies of the
    signal, its code (128 + the signal) is the recorder's, and the trace is whole and says why it stopped."""
    out = tmp_path / "x.lg"
    proc = subprocess.Popen(
        [str(RECORDER), "-o", str(out), "--", "sleep", "300"], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        said = tracing_started(proc)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        said += proc.stderr.readlines()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stderr = "".join(said)
    assert proc.returncode == 128 + sig, stderr
    trace = read_trace(out)
    assert not trace.truncated
    assert trace.end["stop_reason"] == f"signal {int(sig)}"
    assert "stopped (signal" in stderr


def test_a_stopped_and_continued_recorder_goes_on_recording(tmp_path):
    """Ctrl-Z then fg (SIGSTOP, SIGCONT): Linux ends a blocked epoll_wait with EINTR after a stop even where no
    handler ran (signal(7)); the recorder took that for a broken ring buffer and quit ("reading the ring buffer:
    Interrupted system call"), leaving its command and a trace without end.json. Each signal is sent once the
    kernel shows the one before it took effect (the process stopped, then running again)."""
    out = tmp_path / "x.lg"
    proc = subprocess.Popen(
        [str(RECORDER), "-o", str(out), "--poll-ms", "100", "--", "sleep", "2"], stderr=subprocess.PIPE, text=True
    )
    try:
        said = tracing_started(proc)
        for _ in range(3):
            proc.send_signal(signal.SIGSTOP)
            wait_until(lambda: stopped_state(proc.pid), "the recorder stopped")
            proc.send_signal(signal.SIGCONT)
            wait_until(lambda: not stopped_state(proc.pid), "the recorder continued")
        said += proc.stderr.readlines()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(said)
    assert proc.returncode == 0, stderr
    assert "ring buffer" not in stderr
    trace = read_trace(out)
    assert not trace.truncated and trace.end["stop_reason"] == "the command exited"


def wait_until(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.005)


def test_the_drain_cpu_is_the_recorders_own_not_its_launchers(tmp_path):
    """end.json's cpu_ns.drain was the main thread's CPU clock, which execve does not reset: under
    `launchgap record` it carried Python's start-up and imports (issue 25, item 12). A launcher that burns a
    second of CPU and then execs the recorder: the drain's figure is no more than the recording's wall time
    (one thread), far below the second the launcher spent (its own clock says how much)."""
    out = tmp_path / "run.lg"
    launcher = (
        "import os, sys, time\n"
        "while time.thread_time() < 1.0: pass\n"
        "print(time.thread_time_ns(), flush=True)\n"
        f"os.execv({str(RECORDER)!r}, [{str(RECORDER)!r}, '-q', '-o', {str(out)!r}, '--', 'sleep', '0.1'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    launcher_ns = int(proc.stdout.split()[0])
    trace = read_trace(out)
    drain_ns = trace.end["cpu_ns"]["drain"]
    wall_ns = trace.end["end_ns"] - trace.meta["start_ns"]
    assert launcher_ns >= 1_000_000_000 > wall_ns
    # a thread's CPU time over the recording cannot pass its wall time (the summary is taken just after it)
    assert 0 < drain_ns <= wall_ns + 50_000_000
