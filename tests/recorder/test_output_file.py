"""The -o trace: an earlier recording survives anything that fails before
this one begins; the new one appears only when it ends (renamed from
`.NAME.partial-PID`, which a SIGKILL leaves readable); a second recorder
of the same name is refused; a file or directory at -o that is not a trace
is never replaced; trace files are 0600 (directories 0700) whatever the
umask. Format 2 (a directory) unless a test says format 1."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

from launchgap.trace import Event, read_trace
from tests.conftest import REPO
from tests.recorder.conftest import RECORDER, STORM, needs_bpf, our_programs_loaded

pytestmark = needs_bpf

# an earlier recording that must survive: a trace the legacy writer recorded (format 1, a file)
EARLIER = (REPO / "tests" / "data" / "format1-cudasim.lg").read_bytes()


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    return lines[0]


def only_entries(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    path = tmp_path / "keep.lg"
    path.write_bytes(EARLIER)
    return path


def test_a_typo_in_the_command_keeps_the_earlier_trace(earlier):
    before = our_programs_loaded()
    proc = subprocess.run(
        [str(RECORDER), "-o", str(earlier), "--", "cudasmi", "decode"], capture_output=True, text=True
    )
    assert one_error_line(proc) == "launchgap-record: cannot run cudasmi: not found on PATH"
    assert proc.returncode == 127
    assert earlier.read_bytes() == EARLIER
    assert only_entries(earlier.parent) == {"keep.lg"}
    assert our_programs_loaded() == before


def test_a_directory_as_the_command_keeps_the_earlier_trace(earlier, tmp_path):
    proc = subprocess.run([str(RECORDER), "-o", str(earlier), "--", str(tmp_path)], capture_output=True, text=True)
    assert one_error_line(proc) == f"launchgap-record: cannot run {tmp_path}: Permission denied"
    assert proc.returncode == 126
    assert earlier.read_bytes() == EARLIER


def test_a_bad_cuda_lib_keeps_the_earlier_trace(earlier, tmp_path):
    missing = tmp_path / "libcuda.so.1"
    proc = subprocess.run(
        [str(RECORDER), "-o", str(earlier), "--cuda-lib", str(missing), "--", "true"], capture_output=True, text=True
    )
    assert one_error_line(proc) == f"launchgap-record: --cuda-lib {missing}: No such file or directory"
    assert earlier.read_bytes() == EARLIER
    assert only_entries(tmp_path) == {"keep.lg"}


NOBODY = 65534


def test_without_privileges_the_earlier_trace_is_kept(shared_dir):
    earlier = shared_dir / "keep.lg"
    earlier.write_bytes(EARLIER)
    earlier.chmod(0o666)  # writable by the unprivileged recorder: only the recorder's care keeps it
    marker = shared_dir / "ran"

    def drop() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    proc = subprocess.run(
        [str(RECORDER), "-o", str(earlier), "--", "touch", str(marker)], capture_output=True, text=True, preexec_fn=drop
    )
    assert one_error_line(proc) == (
        "launchgap-record: permission denied loading BPF programs: run as root (or with CAP_BPF and CAP_PERFMON)"
    )
    assert earlier.read_bytes() == EARLIER
    assert not marker.exists()
    assert only_entries(shared_dir) == {"keep.lg"}


def test_a_command_the_invoking_user_may_not_run_is_refused_before_recording(shared_dir):
    """Found on disk, but executable only by root: sudo's user could not run it."""
    earlier = shared_dir / "keep.lg"
    earlier.write_bytes(EARLIER)
    script = shared_dir / "root-only.sh"
    script.write_text("#!/bin/sh\ntouch ran\n")
    script.chmod(0o744)
    env = {**os.environ, "SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY), "SUDO_USER": "nobody"}
    proc = subprocess.run(
        [str(RECORDER), "-o", str(earlier), "--", str(script)], capture_output=True, text=True, env=env, cwd=shared_dir
    )
    assert one_error_line(proc) == f"launchgap-record: cannot run {script}: Permission denied"
    assert proc.returncode == 126
    assert earlier.read_bytes() == EARLIER
    assert only_entries(shared_dir) == {"keep.lg", "root-only.sh"}


def test_the_trace_replaces_the_earlier_one_only_at_the_end(earlier, tmp_path):
    listing = tmp_path / "seen-while-recording"
    copy = tmp_path / "earlier-while-recording"
    # the command looks at the directory while it is being recorded
    command = ["sh", "-c", f'ls -a "{tmp_path}" > "{listing}"; cp "{earlier}" "{copy}"; exit 3']
    proc = subprocess.run([str(RECORDER), "-o", str(earlier), "--", *command], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    seen = listing.read_text()
    trace = read_trace(earlier)
    partial = f".keep.lg.partial-{trace.meta['recorder_pid']}"
    assert set(seen.split()) >= {partial, ".keep.lg.lock", "keep.lg"}
    assert copy.read_bytes() == EARLIER, "the earlier recording stayed in place while this one was made"
    assert f"(written to {tmp_path / partial} until the end)" in proc.stderr
    # a failing command still gets its recording, in place, and nothing else is left
    assert trace.end["command_exit_code"] == 3
    assert only_entries(tmp_path) == {"keep.lg", "seen-while-recording", "earlier-while-recording"}


@pytest.mark.parametrize("formats", [(), ("--format", "1")])
def test_a_file_that_is_not_a_trace_is_refused_and_kept(tmp_path, formats):
    """`echo precious > notes.txt; launchgap-record -o notes.txt -- true` replaced the notes with a trace."""
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [str(RECORDER), *formats, "-o", str(notes), "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert one_error_line(proc) == f"launchgap-record: cannot write {notes}: it is a file (and not a launchgap trace)"
    assert notes.read_text() == "precious\n"
    assert not marker.exists()
    assert only_entries(tmp_path) == {"notes.txt"}
    # an empty file holds nothing to lose: replaced
    empty = tmp_path / "empty.lg"
    empty.write_bytes(b"")
    proc = subprocess.run(
        [str(RECORDER), "-q", *formats, "-o", str(empty), "--", "true"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert read_trace(empty).meta["command"] == ["true"]


def test_sighup_ends_the_recording_cleanly_in_place(tmp_path):
    out = tmp_path / "x.lg"
    # SIGHUP at its default for the recorder, so for the command it forks: under nohup (a CI job started so) the
    # command inherits SIGHUP ignored, as nohup means it to, and sleeps its 30 s through the forwarded signal
    proc = subprocess.Popen(
        [str(RECORDER), "-o", str(out), "--", "sleep", "30"],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    # not "tracing " alone: the no-CUDA warning before it says "tracing scheduling", before the handlers are in
    wait_for_line(proc, "launchgap-record: tracing ")
    proc.send_signal(signal.SIGHUP)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGHUP, stderr  # the command got it too
    trace = read_trace(out)
    assert trace.end["stop_reason"] == f"signal {int(signal.SIGHUP)}"
    assert only_entries(tmp_path) == {"x.lg"}


def wait_for_line(proc: subprocess.Popen, text: str) -> str:
    assert proc.stderr is not None
    for line in proc.stderr:
        if text in line:
            return line
    raise AssertionError(f"the recorder ended without saying {text!r}")


def killed_recording(earlier: Path, *formats: str) -> Path:
    proc = subprocess.Popen(
        [str(RECORDER), "-q", *formats, "-o", str(earlier), "--", str(STORM), "--seconds", "4"], start_new_session=True
    )
    try:
        time.sleep(2.5)  # more than two flush intervals
        proc.kill()
        proc.wait()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the storm too
    assert earlier.read_bytes() == EARLIER
    return earlier.parent / f".keep.lg.partial-{proc.pid}"


def test_sigkill_leaves_the_partial_trace_readable_and_the_earlier_trace(earlier):
    partial = killed_recording(earlier)
    trace = read_trace(partial)
    assert trace.end is None and trace.truncated is True
    assert trace.count(Event.SWITCH) > 1000
    # and any Parquet reader takes its complete segments (a partial one is hidden, and named so no glob takes it)
    assert pq.read_table(partial / Event.SWITCH.value).num_rows == trace.count(Event.SWITCH)
    complete = {p.name for p in (partial / Event.SWITCH.value).iterdir() if not p.name.startswith(".")}
    assert complete and all(name.endswith(".parquet") for name in complete)


def test_sigkill_leaves_a_format_1_partial_file_readable_too(earlier):
    partial = killed_recording(earlier, "--format", "1")
    trace = read_trace(partial)
    assert trace.end is None and trace.format == 1
    assert trace.count(Event.SWITCH) > 1000
    # and any Arrow reader takes its complete batches
    reader = pa.ipc.open_stream(pa.memory_map(str(partial)))
    batches = []
    with contextlib.suppress(StopIteration, pa.ArrowInvalid, OSError):  # the end, or a batch cut short
        while True:
            batches.append(reader.read_next_batch())
    # its complete batches hold what launchgap reads of it, switches among them
    assert sum(b.num_rows for b in batches) >= trace.count(Event.SWITCH) > 1000


def test_a_second_recorder_of_the_same_file_is_refused(tmp_path):
    out = tmp_path / "run.lg"
    first = subprocess.Popen([str(RECORDER), "-o", str(out), "--", "sleep", "3"], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(first, "tracing ")
        second = subprocess.run(
            [str(RECORDER), "-o", str(out), "--", "touch", str(tmp_path / "second-ran")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert one_error_line(second) == (
            f"launchgap-record: another recorder (pid {first.pid}) is writing {out}; wait for it, or choose another -o"
        )
        assert not (tmp_path / "second-ran").exists()
        # a different name beside it is fine
        other = subprocess.run(
            [str(RECORDER), "-q", "-o", str(tmp_path / "other.lg"), "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 0, other.stderr
    finally:
        first.communicate(timeout=60)
    assert first.returncode == 0
    trace = read_trace(out)
    assert trace.meta["command"] == ["sleep", "3"]
    assert only_entries(tmp_path) == {"run.lg", "other.lg"}


def modes(trace: Path) -> tuple[set[int], set[int]]:
    """The permission bits of a trace directory and its subdirectories, and of its files."""
    dirs = {trace.stat().st_mode & 0o7777} | {p.stat().st_mode & 0o7777 for p in trace.rglob("*") if p.is_dir()}
    files = {p.stat().st_mode & 0o7777 for p in trace.rglob("*") if p.is_file()}
    return dirs, files


def test_the_trace_is_0600_whatever_the_umask_unless_asked(tmp_path):
    def open_umask() -> None:
        os.umask(0)

    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(out), "--", "true"], capture_output=True, text=True, preexec_fn=open_umask
    )
    assert proc.returncode == 0, proc.stderr
    assert modes(out) == ({0o700}, {0o600})
    assert len(list(out.rglob("*.parquet"))) >= 2  # the files checked include segments, not only meta.json
    shared = tmp_path / "shared.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "--mode", "644", "-o", str(shared), "--", "true"],
        capture_output=True,
        text=True,
        preexec_fn=open_umask,
    )
    assert proc.returncode == 0, proc.stderr
    assert modes(shared) == ({0o755}, {0o644})
    legacy = tmp_path / "legacy.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "--format", "1", "-o", str(legacy), "--", "true"],
        capture_output=True,
        text=True,
        preexec_fn=open_umask,
    )
    assert proc.returncode == 0, proc.stderr
    assert legacy.is_file() and legacy.stat().st_mode & 0o7777 == 0o600


def test_under_sudo_the_trace_belongs_to_the_invoking_user(tmp_path):
    out = tmp_path / "x.lg"
    env = {**os.environ, "SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY), "SUDO_USER": "nobody"}
    proc = subprocess.run([str(RECORDER), "-q", "-o", str(out), "--", "true"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in [out, *out.rglob("*")]}
    assert owners == {(NOBODY, NOBODY)} and modes(out) == ({0o700}, {0o600})


def test_help_says_where_the_trace_is_written_and_who_may_read_it():
    proc = subprocess.run([str(RECORDER), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "writes into .NAME.partial-PID beside NAME" in text
    assert "leaves .NAME.partial-PID, readable up to its last segment" in text
    assert "Under sudo the trace belongs to the invoking user, mode 0600" in text
    assert "--mode <OCTAL>" in text
