"""What a hostile audit of the recorder found (issue 11): an -o that is one
of the recording's own inputs, a --cuda-lib that is no library (a device,
a FIFO), modes nobody could read, flags that were silently ignored, -q that
was not quiet, and `probes` answers that hid why nothing was found. Each is
refused or explained in one line before anything starts."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from tests.conftest import CUDASIM, LIBCUDA, LIBCUDART, ODD_NAME, ODD_NAME_SHOWN
from tests.recorder.conftest import RECORDER, STORM, assert_same_launches, needs_bpf, running_on_a_replaced_driver, stop

pytestmark = needs_bpf

LAUNCHGAP = [sys.executable, "-m", "launchgap.cli"]
NOBODY = 65534
DRIVER_PROBES = 16


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(RECORDER), *args], capture_output=True, text=True, timeout=120, **kwargs)


# ---- 1. -o is one of the recording's inputs --------------------------------


@pytest.mark.parametrize("version", ["2", "1"])
def test_an_output_that_is_the_commands_script_is_refused_and_kept(tmp_path, version):
    script = tmp_path / "job.sh"
    ran = tmp_path / "ran"
    script.write_text(f"touch {ran}\n")
    proc = record("--format", version, "-o", str(script), "--", "sh", str(script))
    assert one_error_line(proc) == (
        f"launchgap-record: -o {script} is the same file as the command's argument 1: "
        "the recording would replace it; choose another -o"
    )
    assert proc.returncode == 1
    assert script.read_text() == f"touch {ran}\n"
    # refused before anything started: the command never ran, nothing was written beside it
    assert {p.name for p in tmp_path.iterdir()} == {"job.sh"}


def test_an_output_linked_to_the_command_itself_is_refused(tmp_path):
    program = tmp_path / "mytrue"
    shutil.copy2("/bin/true", program)
    link = tmp_path / "run.lg"
    link.symlink_to(program.name)
    before = digest(program)
    proc = record("-o", str(link), "--", str(program))
    assert one_error_line(proc) == (
        f"launchgap-record: -o {link} is the same file as the command ({program}): "
        "the recording would replace it; choose another -o"
    )
    assert digest(program) == before and link.is_symlink()


def test_an_output_hard_linked_to_the_cuda_lib_is_refused(tmp_path):
    library = tmp_path / "libcuda.so.1"
    shutil.copy2(LIBCUDA, library)
    alias = tmp_path / "run.lg"
    os.link(library, alias)
    before = digest(library)
    proc = record("-o", str(alias), "--cuda-lib", str(library), "--", "true")
    assert one_error_line(proc) == (
        f"launchgap-record: -o {alias} is the same file as --cuda-lib ({library}): "
        "the recording would replace it; choose another -o"
    )
    assert digest(library) == before
    assert {p.name for p in tmp_path.iterdir()} == {"libcuda.so.1", "run.lg"}


# ---- 2. --cuda-lib that is no library ---------------------------------------


@pytest.fixture
def not_libraries(tmp_path) -> dict[str, Path]:
    fifo = tmp_path / "libcuda-fifo.so.1"
    os.mkfifo(fifo)
    text = tmp_path / "libcuda-text.so.1"
    text.write_text("not a library\n")
    return {"device": Path("/dev/zero"), "fifo": fifo, "directory": tmp_path, "text": text, "elf": Path("/bin/true")}


REFUSALS = {
    "device": "not a regular file (a character device)",
    "fifo": "not a regular file (a FIFO)",
    "directory": "not a regular file (a directory)",
    "text": "not an ELF file",
    "elf": "defines no CUDA driver or runtime entry point (cuLaunchKernel or cudaLaunchKernel)",
}


@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_a_cuda_lib_that_is_no_library_is_refused_at_once(tmp_path, not_libraries, kind):
    # /dev/zero was read whole (forever) and a FIFO blocked the open: the timeout catches either
    path = not_libraries[kind]
    earlier = tmp_path / "keep.lg"
    earlier.write_text("earlier\n")
    proc = record("-o", str(earlier), "--cuda-lib", str(path), "--", "true")
    assert one_error_line(proc) == f"launchgap-record: --cuda-lib {path}: {REFUSALS[kind]}"
    assert earlier.read_text() == "earlier\n"


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_probes_refuses_a_cuda_lib_that_is_no_library_at_once(not_libraries, kind):
    path = not_libraries[kind]
    proc = subprocess.run([*LAUNCHGAP, "probes", "--cuda-lib", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"launchgap: --cuda-lib {path}: {REFUSALS[kind]}"


# ---- 4. modes, --system with -p, -q ------------------------------------------


@pytest.mark.parametrize("mode, why", [("000", "read"), ("044", "read"), ("400", "remove")])
def test_a_mode_the_owner_cannot_use_is_refused(tmp_path, mode, why):
    proc = record("--mode", mode, "-o", str(tmp_path / "x.lg"), "--", "true")
    assert proc.returncode == 2
    assert one_error_line(proc) == (
        f"launchgap-record: invalid value '{mode}' for '--mode <OCTAL>': the trace's owner "
        f"could not {why} it: use a mode that starts with 6 or 7, e.g. 600 or 640"
    )
    assert list(tmp_path.iterdir()) == []


def test_system_with_pids_is_refused_not_ignored(tmp_path):
    proc = record("--system", "-p", "1", "-o", str(tmp_path / "x.lg"))
    assert proc.returncode == 2
    assert one_error_line(proc) == "launchgap-record: the argument '--system' cannot be used with '--pid <PID>'"


def test_quiet_prints_no_loss_summary_but_the_trace_keeps_the_losses(tmp_path):
    out = tmp_path / "storm.lg"
    cpu = sorted(os.sched_getaffinity(0))[0]
    # as test_loss_and_cli's forced loss: a 16 KiB buffer drained once a second
    proc = record(
        "-q",
        "-o",
        str(out),
        "--buffer",
        "16K",
        "--poll-ms",
        "1000",
        "--",
        str(STORM),
        "--seconds",
        "2",
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    trace = read_trace(out)
    total = int(trace.lost["lost_count"].sum())
    assert total > 0
    assert trace.end["lost_events"] == total


# ---- 5. probes: a command that cannot run, maps that cannot be read, deleted libraries


def test_probes_for_a_command_that_does_not_exist_fails_in_one_line():
    proc = subprocess.run([*LAUNCHGAP, "probes", "--", "nosuchcmd"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "launchgap: cannot run nosuchcmd: not found on PATH"
    proc = record("--list-probes", "--", "nosuchcmd")
    assert proc.returncode == 127
    assert one_error_line(proc) == "launchgap-record: cannot run nosuchcmd: not found on PATH"
    assert proc.stdout == ""


def drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def test_probes_of_a_process_whose_maps_cannot_be_read_says_why():
    # a root process: nobody may not read its maps
    target = subprocess.Popen(["sleep", "60"])
    try:
        proc = record("--list-probes", "-p", str(target.pid), preexec_fn=drop_to_nobody)
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == 1
    assert one_error_line(proc) == (
        f"launchgap-record: cannot read /proc/{target.pid}/maps: Permission denied "
        f"(pid {target.pid} belongs to another user: run as root or as its owner)"
    )
    assert proc.stdout == ""


def test_probes_of_a_driver_deleted_on_disk_go_through_map_files(tmp_path):
    import json

    workload = running_on_a_replaced_driver(tmp_path, 100_000)
    try:
        proc = record("--list-probes", "-p", str(workload.pid))
    finally:
        stop(workload)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    # (cudasim's own libcudart also leads to the stand-in driver beside it: another file)
    deleted = [lib for lib in found["libraries"] if lib["found_via"] == "target maps (deleted on disk)"]
    assert len(deleted) == 1, found["libraries"]
    path = deleted[0]["path"]
    assert path.startswith(f"/proc/{workload.pid}/map_files/") and deleted[0]["kind"] == "driver"
    probes = [p for p in found["probes"] if p["file"] == path]
    # the thunk driver's shape, so the old file was read, not the new one at its name
    assert len(probes) == DRIVER_PROBES and all(p["placed_offset"] == 10 for p in probes)
    assert found["warnings"] == []


def test_a_driver_deleted_on_disk_is_probed_and_its_launches_recorded(tmp_path):
    import json

    import polars as pl

    from launchgap.trace import Event

    truth_path, out = tmp_path / "truth.json", tmp_path / "pid.lg"
    workload = running_on_a_replaced_driver(tmp_path, 500, truth=truth_path)
    try:
        proc = record("-q", "-o", str(out), "-p", str(workload.pid))
        assert proc.returncode == 0, proc.stderr
        assert workload.wait(timeout=120) == 0
    finally:
        stop(workload)
    trace = read_trace(out)
    truth = json.loads(truth_path.read_text())
    assert [lib["found_via"] for lib in trace.meta["cuda_libraries"]].count("target maps (deleted on disk)") == 1
    expected = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    launches = trace.of(Event.LAUNCH)
    # attached to a running process: from the attach on, every launching thread's launches (compared below)
    assert set(launches["tid"].to_list()) == set(expected["tid"].to_list())
    for tid in set(expected["tid"].to_list()):
        recorded = launches.filter(pl.col("tid") == tid).sort("ts_ns")
        theirs = expected.filter(pl.col("tid") == tid).sort("seq")
        # exactly the tail of what the thread launched, from the attach on
        assert_same_launches(recorded, theirs.tail(recorded.height))
        assert recorded.height >= theirs.filter(pl.col("t_enter_ns") >= trace.meta["start_ns"]).height


def test_without_root_a_deleted_driver_is_named_with_why_it_cannot_be_probed(shared_dir):
    import json

    workload = running_on_a_replaced_driver(shared_dir, 100_000, user=drop_to_nobody)
    try:
        maps = Path(f"/proc/{workload.pid}/maps").read_text()
        line = next(x for x in maps.splitlines() if x.endswith(f"{shared_dir}/libcuda.so.1 (deleted)"))
        span = line.split()[0]
        proc = record("--list-probes", "-p", str(workload.pid), preexec_fn=drop_to_nobody)
    finally:
        stop(workload)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert not [lib for lib in found["libraries"] if "map_files" in lib["path"] or "deleted" in lib["found_via"]]
    assert found["warnings"][0] == (
        f"pid {workload.pid} maps {shared_dir}/libcuda.so.1, deleted on disk since it was loaded (replaced while "
        f"the process runs): it can only be read and probed through /proc/{workload.pid}/map_files/{span}, which needs "
        "root (CAP_SYS_ADMIN): Operation not permitted"
    )


# ---- a task name that is not UTF-8 (issue 25, item 1) ----------------------


def test_a_task_name_that_is_not_utf8_keeps_its_bytes_escaped(tmp_path, odd_named_sleep):
    """It was stored as "?": the culprit's name lost. The bytes are kept, escaped as docs/trace-format.md
    says (\\xHH for each byte that is not UTF-8, \\\\ for a backslash), in every column that holds a name."""
    out = tmp_path / "odd.lg"
    folder = str(odd_named_sleep.parent)  # the test's own folder: plain ASCII
    # through sh, which makes the name's bytes itself: the recorder takes only UTF-8 arguments
    shell = f'exec "{folder}/$(printf "\\{ODD_NAME[0]:o}{ODD_NAME[1:].decode()}")" 0.3'
    proc = record("-q", "-o", str(out), "--", "sh", "-c", shell)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    pid = trace.meta["command_pid"]
    switches = trace.of(Event.SWITCH, "pid", "comm", "next_pid", "next_comm")
    # the command's own switches, once it runs as the odd-named file (before the exec it is the recorder's child)
    assert ODD_NAME_SHOWN in switches.filter(pl.col("pid") == pid)["comm"].to_list()
    assert ODD_NAME_SHOWN in switches.filter(pl.col("next_pid") == pid)["next_comm"].to_list()
    assert "?" not in switches.filter(pl.col("pid") == pid)["comm"].to_list()
    execs = trace.of(Event.EXEC, "pid", "comm", "filename").filter(pl.col("pid") == pid)
    assert execs.rows()[-1] == (pid, ODD_NAME_SHOWN, f"{folder}/{ODD_NAME_SHOWN}")


def test_a_process_named_in_bytes_is_followed_with_p_until_the_duration(tmp_path, odd_named_process):
    """`record -p` read the target's maps and its /proc stat as UTF-8: for a process whose executable's
    path and name are not, the maps could not be read (the recording was refused), and the stat read
    failed as if the process had exited, which would have ended the recording at once."""
    out = tmp_path / "odd.lg"
    proc = record("-q", "-p", str(odd_named_process), "-d", "1.5", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    assert trace.end["stop_reason"] == "the duration elapsed"
    assert trace.meta["pids"] == [odd_named_process]


def test_a_cuda_library_in_a_folder_named_in_bytes_is_probed_with_p(tmp_path):
    """A CUDA process attached with -p whose libcuda lies in a folder named with bytes that are not UTF-8:
    its maps are read as bytes, the library is probed by its own bytes, and meta.json names it escaped
    (serde refused such a path: the recording failed after its probes were attached). Every launch made
    after the first one recorded is in the trace (one launching thread: cudasim's truth, by call end)."""
    import json

    job = tmp_path / os.fsdecode(ODD_NAME)
    for folder, files in (("bin", [CUDASIM]), ("lib", [LIBCUDA, LIBCUDART])):
        (job / folder).mkdir(parents=True)
        for path in files:
            shutil.copy2(path, job / folder / path.name)
    truth_path = tmp_path / "truth.json"
    workload = subprocess.Popen(
        [
            str(job / "bin" / "cudasim"),
            "decode",
            "--quiet",
            "--tokens",
            "300",
            "--host-us",
            "5000",
            "--truth",
            str(truth_path),
        ],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while b"libcuda.so.1" not in Path(f"/proc/{workload.pid}/maps").read_bytes():
            assert time.monotonic() < deadline, "cudasim never loaded its driver"
            time.sleep(0.01)
        out = tmp_path / "p.lg"
        proc = record("-q", "-p", str(workload.pid), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert workload.wait(timeout=120) == 0
    finally:
        if workload.poll() is None:
            os.killpg(workload.pid, signal.SIGKILL)
            workload.wait()
    trace = read_trace(out)
    shown = f"{tmp_path}/{ODD_NAME_SHOWN}/lib/libcuda.so.1"
    assert shown in [library["path"] for library in trace.meta["cuda_libraries"]]
    truth = json.loads(truth_path.read_text())
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    recorded = trace.of(Event.LAUNCH, "ts_ns", "pid")
    assert set(recorded["pid"]) == {workload.pid}
    assert recorded.height == launches.filter(pl.col("t_exit_ns") >= recorded["ts_ns"].min()).height
