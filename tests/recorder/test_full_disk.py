"""A disk that fills up while recording: one line naming the trace, tracing
stops (the probes detach), the trace keeps every segment (format 2) or
batch (format 1) written before and reads cleanly up to there, the command
runs on undisturbed and its exit code is the recorder's. A disk with no
room for a single event keeps the earlier recording instead of replacing it
with an empty one, and the recorder fails. On a real size- or
inode-limited tmpfs mounted by the test (and unmounted in every path)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

from launchgap.trace import Event, read_trace
from tests.conftest import REPO
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf

TMPFS_SIZE = "32m"


@contextlib.contextmanager
def tmpfs(options: str):
    mountpoint = Path(tempfile.mkdtemp(prefix="launchgap-full-disk-"))
    mounted = False
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"{options},mode=0700", "launchgap-test", str(mountpoint)],
            check=True,
            capture_output=True,
        )
        mounted = True
        yield mountpoint
    finally:
        if mounted and subprocess.run(["umount", str(mountpoint)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mountpoint)], capture_output=True)
        mountpoint.rmdir()


@pytest.fixture
def small_disk():
    with tmpfs(f"size={TMPFS_SIZE}") as mountpoint:
        yield mountpoint


def fill(directory: Path) -> None:
    """Writes a file until the disk has no room left at all."""
    chunk = b"\0" * 4096
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC
                return
    finally:
        os.close(fd)


def our_program_ids(recorder_pid: int) -> set[int]:
    """BPF programs the recorder process holds open (from its fd table)."""
    ids = set()
    fd_dir = Path(f"/proc/{recorder_pid}/fdinfo")
    for info in fd_dir.iterdir():
        try:
            text = info.read_text()
        except OSError:
            continue
        if "prog_type:" in text:
            ids.update(int(line.split()[1]) for line in text.splitlines() if line.startswith("prog_id:"))
    return ids


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def on_disk(partial: Path, version: int) -> int:
    """The complete units the recording has written so far: segments (format 2) or batches (format 1).
    Not format 1's bytes: a batch larger than the writer's 1 MiB buffer is on disk in part before it is
    whole, and a disk filled then leaves nothing complete (seen under stress-ng, 2026-11-23)."""
    if version == 2:
        return len(list(partial.glob("*/*.parquet")))
    batches = 0
    try:
        with pa.OSFile(str(partial)) as source:
            for _ in pa.ipc.open_stream(source):
                batches += 1
    except (pa.ArrowInvalid, OSError):
        pass  # the batch being written: not yet complete
    return batches


@pytest.mark.parametrize("version", [2, 1])
def test_a_full_disk_stops_tracing_keeps_the_trace_and_the_command_runs_on(small_disk, tmp_path, version):
    out = small_disk / "run.lg"
    release = tmp_path / "command-may-finish"
    # the command keeps running until the test has seen the recorder stop tracing
    command = ["sh", "-c", f'while [ ! -e "{release}" ]; do sleep 0.05; done; exit 7']
    proc = subprocess.Popen(
        [str(RECORDER), "--system", "--format", str(version), "-o", str(out), "--", *command],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        partial = small_disk / f".run.lg.partial-{proc.pid}"
        line = ""
        while "tracing every task" not in line:
            line = proc.stderr.readline()
            assert line, "the recorder ended before tracing"
        header = on_disk(partial, version)
        wait_until(lambda: on_disk(partial, version) > header, 60, "a first segment or batch on disk")
        fill(small_disk)
        full = proc.stderr.readline()
        said = re.fullmatch(
            rf"launchgap-record: No space left on device \({re.escape(str(out))}\): tracing stopped; "
            r"the recording is truncated: it keeps the (\d+) rows written before",
            full.strip(),
        )
        assert said, full
        # tracing has stopped while the command still runs: the recorder holds no BPF program
        wait_until(lambda: not our_program_ids(proc.pid), 60, "the probes to detach")
        assert proc.poll() is None
        release.touch()
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 7, rest
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "sending on a closed channel" not in rest and "panicked" not in rest
    assert "waiting for sh" in rest
    assert not partial.exists()
    trace = read_trace(out)
    assert trace.end is None  # no closing summary: there was no room for it
    rows = sum(trace.count(kind) for kind in Event)
    assert int(said[1]) == rows
    if version == 2:
        # in place, every complete segment kept and no partial one: any Parquet reader takes all of it
        assert not list(out.rglob(".*")), "a partial segment was left"
        assert sum(pq.read_table(d).num_rows for d in out.iterdir() if d.is_dir()) == rows > 0
    else:
        # in place, cut cleanly after its last complete batch: any Arrow reader takes all of it
        batches = list(pa.ipc.open_stream(pa.memory_map(str(out))))
        assert sum(b.num_rows for b in batches) == rows > 0


# an earlier recording that must survive: a trace (a file that is none would be refused, not replaced)
EARLIER = (REPO / "tests" / "data" / "format1-cudasim.lg").read_bytes()
# the mount's root, the earlier recording, .run.lg.lock, the partial trace
# directory and its meta.json: then not one more (a kind's directory)
INODES_FOR_METADATA_ONLY = 5


@pytest.mark.parametrize("command, code", [(["sleep", "0.5"], 1), (["sh", "-c", "sleep 0.5; exit 3"], 3)])
def test_a_disk_with_no_room_for_any_event_keeps_the_earlier_trace_and_fails(command, code):
    # meta.json fits, no segment does: this used to replace the earlier trace with an empty one, exit 0
    with tmpfs(f"size={TMPFS_SIZE},nr_inodes={INODES_FOR_METADATA_ONLY}") as disk:
        out = disk / "run.lg"
        out.write_bytes(EARLIER)
        proc = subprocess.run(
            [str(RECORDER), "-q", "-o", str(out), "--", *command], capture_output=True, text=True, timeout=120
        )
        assert proc.stderr.strip() == (
            f"launchgap-record: No space left on device ({out}): nothing recorded, the earlier {out} kept"
        )
        assert proc.returncode == code
        assert out.read_bytes() == EARLIER
        assert {p.name for p in disk.iterdir()} == {"run.lg"}


def test_a_disk_with_no_room_for_any_event_and_no_earlier_trace_leaves_nothing():
    with tmpfs(f"size={TMPFS_SIZE},nr_inodes={INODES_FOR_METADATA_ONLY - 1}") as disk:
        out = disk / "run.lg"
        proc = subprocess.run(
            [str(RECORDER), "-q", "-o", str(out), "--", "sleep", "0.5"], capture_output=True, text=True, timeout=120
        )
        assert proc.stderr.strip() == f"launchgap-record: No space left on device ({out}): nothing recorded"
        assert proc.returncode == 1
        assert list(disk.iterdir()) == []
