"""What the invoking user (and so the workload) can do to the root recorder while it records, found by the
security audit of issue 31, each tried here as real users made for the test (useradd), with the recorder run
as root as sudo leaves it (SUDO_UID/SUDO_GID): the trace being written is in a folder the invoking user owns,
so they can rename it and leave a link in its place (item 1); the GPU collector channel is theirs, so they can
put any file there (item 2) and write any frames (item 3). The truths: the victim's files, byte for byte, with
their owner and mode; the frames the test itself wrote, counted by what each claims."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from launchgap.trace.schema import COLLECTOR_FRAMES, KIND_COLUMNS
from tests.conftest import CUDASIM_BUILD, LIBCUDA, directory_in_tmp
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf

CUPTI = CUDASIM_BUILD / "lib" / "libcupti.so.12"
# the recorder's bound on one collector file: schema/trace.toml [collector] file_bytes + staging_bytes
MAX_COLLECTOR_FILE = 67108864 + 65536


@dataclass
class User:
    name: str
    uid: int
    gid: int

    def sudo_env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "SUDO_USER": self.name, "SUDO_UID": str(self.uid), "SUDO_GID": str(self.gid), **extra}

    def owns(self, path: Path) -> None:
        os.chown(path, self.uid, self.gid)


def made_user(prefix: str):
    name = f"{prefix}-{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
        check=True,
        capture_output=True,
    )
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, entry.pw_gid)


@pytest.fixture
def users():
    made = []
    try:
        made.append(made_user("lgt-att"))
        made.append(made_user("lgt-vic"))
        yield made[0], made[1]
    finally:
        for user in made:
            subprocess.run(["userdel", user.name], capture_output=True)


@pytest.fixture
def attacker_dir(users):
    """A folder of the invoking user's, where they ask the recorder to write."""
    attacker, _ = users
    with directory_in_tmp("lgt-att-", 0o755) as path:
        attacker.owns(path)
        yield path


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under ROOT: (kind, bytes or link target, owner, mode)."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        out[str(path.relative_to(root))] = (st.st_mode >> 12, content, st.st_uid, st.st_gid, st.st_mode & 0o7777)
    return out


def a_trace_of(owner: User | None, folder: Path) -> Path:
    """Someone's earlier trace: meta.json, end.json and one switch segment."""
    trace = folder / "trace"
    (trace / "switch").mkdir(parents=True)
    (trace / "meta.json").write_text('{"format": "launchgap-trace", "version": 2}')
    (trace / "end.json").write_text('{"theirs": true}')
    (trace / "switch" / "000001.parquet").write_bytes(b"their segment")
    (trace / ".gpu-channel").mkdir()
    (trace / ".gpu-channel" / "keep").write_text("theirs too")
    if owner is not None:
        for path in [folder, *folder.rglob("*")]:
            owner.owns(path)
    return trace


# The workload, as the invoking user: waits for the partial trace, moves it aside and leaves a link to $1 in its
# place, then runs on for a while so that the recorder writes segments and end.json after the swap.
SWAP = r"""
dir=$(dirname "$OUT"); base=$(basename "$OUT")
for i in $(seq 500); do p=$(ls -d "$dir"/."$base".partial-* 2>/dev/null | head -n 1); [ -n "$p" ] && break; sleep 0.01; done
[ -n "$p" ] || { echo "no partial trace seen" >&2; exit 9; }
mv "$p" "$dir/moved" && ln -s "$1" "$p" || exit 8
echo swapped > "$dir/swapped"
sleep 1.5
"""


def record_as(user: User, out: Path, *args: str, command: list[str], quiet: bool = True, **extra_env: str):
    return subprocess.run(
        [str(RECORDER), *(["-q"] if quiet else []), "-o", str(out), *args, "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=user.sudo_env(OUT=str(out), **extra_env),
    )


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The recorder's one line. The command shares its stderr: once the attacker has moved the trace away, the
    programs its script runs next cannot load the collector from the moved .gpu-channel, and ld.so says so (a
    line of the command's, not the recorder's)."""
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("ERROR: ld.so: ")]
    assert len(lines) == 1, proc.stderr
    assert "panicked" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize("gpu", [False, True], ids=["trace", "with-gpu-channel"])
def test_a_link_put_in_place_of_the_trace_being_written_leads_nowhere(users, attacker_dir, gpu):
    """Item 1: root wrote end.json and switch/ segments into another user's trace in a 0700 home the invoker
    cannot enter, through the link (leaving them the invoker's, 0600), and would have removed its .gpu-channel."""
    attacker, victim = users
    with directory_in_tmp("lgt-vic-", 0o700) as home:
        victim.owns(home)
        theirs = a_trace_of(victim, home)
        before = tree(home)
        out = attacker_dir / "run.lg"
        gpu_args = ["--gpu-activity", "--cupti", str(CUPTI), "--cuda-lib", str(LIBCUDA)] if gpu else []
        proc = record_as(attacker, out, *gpu_args, command=["sh", "-c", SWAP, "swap", str(theirs)])
        assert (attacker_dir / "swapped").exists(), proc.stderr
        assert tree(home) == before
        partial = next(p for p in attacker_dir.iterdir() if p.name.startswith(".run.lg.partial-"))
        assert one_error_line(proc) == (
            f"launchgap-record: cannot move the trace into place at {out}: {partial} was renamed or replaced while "
            "recording (by the command, or another process of its user); the recording is left wherever it was moved"
        )
        assert proc.returncode == 1
        # the recording itself went where it was moved, whole, and is the invoker's: nothing of root's is left
        moved = read_trace(attacker_dir / "moved")
        assert moved.end["command_exit_code"] == 0
        assert {(p.lstat().st_uid, p.lstat().st_gid) for p in attacker_dir.rglob("*")} == {(attacker.uid, attacker.gid)}
        assert not (attacker_dir / "moved" / ".gpu-channel").exists()


def test_a_link_to_a_root_folder_makes_nothing_there_and_replaces_nothing(users, attacker_dir, tmp_path):
    """Item 1: root made invoker-owned directories in a root-owned directory and replaced its end.json."""
    attacker, _ = users
    roots = tmp_path / "root-owned"
    roots.mkdir()
    theirs = a_trace_of(None, roots)
    before = tree(roots)
    proc = record_as(attacker, attacker_dir / "run.lg", command=["sh", "-c", SWAP, "swap", str(theirs)])
    assert (attacker_dir / "swapped").exists(), proc.stderr
    assert proc.returncode == 1 and "was renamed or replaced while recording" in one_error_line(proc)
    assert tree(roots) == before


# One collector frame, laid out as schema/trace.toml's [collector] comment says (the layout the collector's
# generated C encoders write and the recorder's generated decoders read): its columns in the kind's order,
# little-endian, text as a u16 length and its bytes, a nullable column after a presence byte. Source text, so that
# the workload (Debian's /usr/bin/python3, as the invoking user: it cannot run this test's interpreter) encodes
# its frames with the very function the test uses; "$PID", as a value or in text, stands for the workload's pid,
# "$NOW" for CLOCK_MONOTONIC when it encodes (the trace's clock: rows outside the recording's span are damage).
ENCODE = """
import struct, time
def encode(frame_id, columns, pid):
    out = bytearray()
    for kind, nullable, value in columns:
        value = {"$PID": pid, "$NOW": time.monotonic_ns()}.get(value, value) if isinstance(value, str) else value
        if nullable:
            out.append(0 if value is None else 1)
            if value is None:
                continue
        if kind == "utf8":
            data = value.replace("$PID", str(pid)).encode()
            out += struct.pack("<H", len(data)) + data
        elif kind == "raw":
            out += bytes.fromhex(value)
        else:
            out += struct.pack({"uint32": "<I", "int32": "<i", "uint64": "<Q", "int64": "<q", "bool": "<?"}[kind], value)
    return struct.pack("<IHH", len(out), frame_id, 0) + bytes(out)
"""
_encoder: dict = {}
exec(ENCODE, _encoder)

# The workload: the frames given as JSON in argv[1] ({file name template: [[frame id, columns], ...]}), each file
# written whole into its channel (the recorder reads them once the command has exited, as it reads what a collector
# flushed last).
FORGE = (
    ENCODE
    + """
import json, os, sys
channel, pid = os.environ["LAUNCHGAP_GPU_CHANNEL"], os.getpid()
for name, frames in json.loads(sys.argv[1]).items():
    with open(os.path.join(channel, name.replace("$PID", str(pid))), "xb") as out:
        out.write(b"".join(encode(frame_id, columns, pid) for frame_id, columns in frames))
"""
)


def frame(kind: Event, **values) -> list:
    """KIND's frame id and columns ([type, nullable, value]) for ENCODE."""
    columns = [
        [c.type, c.nullable, values.get(c.name, "" if c.type == "utf8" else 0)]
        for c in KIND_COLUMNS[kind]
        if not c.optional
    ]
    return [COLLECTOR_FRAMES[kind], columns]


U64_MAX = 2**64 - 1
OWN_DROP = '{"cause": "cupti_dropped", "pid": $PID}'

# Frames a workload might write into its own file, what each claims, and the refusals they bring ("why": count).
FORGED = [
    # believed: what this process's collector could say
    frame(Event.GPU_COLLECTOR, ts_ns="$NOW", pid="$PID", state="started", detail="{}"),
    frame(
        Event.LOST,
        ts_ns="$NOW",
        cpu=None,
        lost_event="gpu_activity",
        lost_count=U64_MAX,
        since_ns="$NOW",
        detail=OWN_DROP,
    ),
    frame(
        Event.LOST, ts_ns="$NOW", cpu=None, lost_event="gpu_activity", lost_count=14, since_ns="$NOW", detail=OWN_DROP
    ),
    # refused
    frame(
        Event.LOST,
        ts_ns="$NOW",
        cpu=None,
        lost_event="switch\x1b[2J",
        lost_count=U64_MAX,
        since_ns="$NOW",
        detail=OWN_DROP,
    ),
    frame(
        Event.LOST,
        ts_ns="$NOW",
        cpu=None,
        lost_event="gpu_activity",
        lost_count=7,
        since_ns="$NOW",
        detail='{"cause": "cupti_dropped", "pid": 1}',
    ),
    frame(Event.GPU_KERNEL, ts_ns="$NOW", end_ns="$NOW", pid=1, kernel_name="forged", graph_id=None),
    frame(Event.GPU_KERNEL, ts_ns="$NOW", end_ns="$NOW", pid=1, kernel_name="forged", graph_id=None),
    frame(Event.GPU_COLLECTOR, ts_ns="$NOW", pid=1, state="failed", detail='{"reason": "forged"}'),
    frame(Event.GPU_COLLECTOR, ts_ns="$NOW", pid="$PID", state="hacked", detail="{}"),
    [99, [["raw", False, "616263"]]],
]
FORGED_REFUSALS = {
    "its lost_event is not one its collector sends": 1,
    "its detail is not the collector's own (cupti_dropped, with its pid)": 1,
    "its pid is not its file's": 3,
    "its state is not one its collector sends": 1,
    "it does not decode as any frame the collector writes": 1,
}


def test_the_encoder_writes_what_the_recorder_reads():
    """The test's encoder against a frame as the recorder's own unit tests lay it out by hand (frame_gate.rs)."""
    got = _encoder["encode"](*frame(Event.GPU_COLLECTOR, ts_ns=5, pid="$PID", state="stopped", detail="{}"), 7)
    payload = struct.pack("<QI", 5, 7) + struct.pack("<H", 2) + b"{}" + struct.pack("<H", 7) + b"stopped"
    assert got == struct.pack("<IHH", len(payload), 7, 0) + payload


def test_frames_a_workload_forges_are_refused_counted_and_recorded(users, attacker_dir):
    """Item 3: forged lost rows for any event name (an escape sequence, 2^64-1), a cupti_dropped count that wrapped
    end.json's lost_events, kernels and a failed collector for pid 1 were all taken as recorded."""
    attacker, _ = users
    out = attacker_dir / "run.lg"
    files = {
        "$PID-000001.lgc": FORGED,
        "1-000001.lgc": [frame(Event.GPU_KERNEL, ts_ns="$NOW", end_ns="$NOW", pid=1, kernel_name="k", graph_id=None)]
        * 2,
    }
    proc = record_as(
        attacker,
        out,
        "--gpu-activity",
        "--cupti",
        str(CUPTI),
        "--cuda-lib",
        str(LIBCUDA),
        command=["/usr/bin/python3", "-c", FORGE, json.dumps(files)],
        quiet=False,
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    pid = trace.meta["command_pid"]
    lost = trace.of(Event.LOST)
    # a null detail is the ring buffer's own drop (docs/trace-format.md, "Why events are lost")
    details = [json.loads(d) if d is not None else {"cause": "ring_buffer_full"} for d in lost["detail"].to_list()]
    refused = {
        (d["pid"], d["why"]): n
        for d, n in zip(details, lost["lost_count"].to_list())
        if d.get("cause") == "frames_refused"
    }
    # everything in the file named after pid 1 (two kernels) is refused whole
    assert refused == {
        **{(pid, why): n for why, n in FORGED_REFUSALS.items()},
        (1, "its file is named after a process that is not the recorded command's"): 2,
    }
    assert trace.of(Event.GPU_KERNEL).height == 0
    assert trace.of(Event.GPU_COLLECTOR).select("pid", "state").rows() == [(pid, "started")]
    believed = lost.filter(pl.col("detail").str.contains('"cupti_dropped"'))["lost_count"].sort().to_list()
    assert believed == [14, U64_MAX]
    # every row the channel made is GPU activity; the host's own losses (a full ring buffer, interrupts landing while
    # the sandbox's agent ran, BPF recursion) come from the kernel's counters, not from frames
    host_causes = {"recursion_misses", "not_seen_by_probe", "ring_buffer_full"}
    from_channel = [row for row, d in zip(lost["lost_event"].to_list(), details) if d.get("cause") not in host_causes]
    assert from_channel and set(from_channel) == {"gpu_activity"}
    # the sum of every count stays at the top of a u64 rather than wrapping to a small number
    assert trace.end["lost_events"] == U64_MAX
    refused_total = sum(FORGED_REFUSALS.values()) + 2
    assert (
        f"launchgap-record: warning: {refused_total} frames in the GPU collector channel were not believed and "
        "left out (the trace's lost rows say why)"
    ) in proc.stderr.splitlines()


# Runs argv[1:] and says on stderr's last line the largest resident set (KiB) it or anything it waited for had. A
# small launcher of its own: ru_maxrss is not reset by exec, so a child forked straight from pytest would count
# pytest's own memory (hundreds of MB late in a run) as its peak.
PEAK_RSS = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_of(argv: list[str], env: dict) -> tuple[subprocess.CompletedProcess, int]:
    """Runs ARGV; its result (stderr less the launcher's line) and its peak resident set in bytes."""
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS, *argv], capture_output=True, text=True, env=env, timeout=300)
    *lines, peak = proc.stderr.splitlines()
    return subprocess.CompletedProcess(argv, proc.returncode, proc.stdout, "\n".join(lines)), int(peak) * 1024


def test_channel_files_that_claim_gigabytes_or_are_no_files_are_refused_unread(users, attacker_dir):
    """Item 2: `truncate -s 30G` on the channel file aborted the recorder (a 30 GiB allocation) leaving the partial
    trace and its lock; 1 GiB took it to 2.1 GB. A FIFO or a link there is refused without blocking."""
    attacker, _ = users
    out = attacker_dir / "run.lg"
    script = (
        'cd "$LAUNCHGAP_GPU_CHANNEL" && truncate -s 30G $$-000001.lgc && truncate -s 1G $$-000002.lgc && '
        "mkfifo $$-000003.lgc && ln -s /etc/shadow $$-000004.lgc && sleep 0.3"
    )
    proc, peak = peak_rss_of(
        [
            str(RECORDER),
            "-q",
            "-o",
            str(out),
            "--gpu-activity",
            "--cupti",
            str(CUPTI),
            "--cuda-lib",
            str(LIBCUDA),
            "--",
            "sh",
            "-c",
            script,
        ],
        attacker.sudo_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "panicked" not in proc.stderr and "memory allocation" not in proc.stderr
    assert peak < 300 * 2**20, peak
    trace = read_trace(out)
    pid = trace.meta["command_pid"]
    unread = {
        json.loads(d)["what"]
        for d in trace.of(Event.LOST)["detail"].to_list()
        if json.loads(d).get("cause") == "channel_unreadable"
    }
    assert unread == {
        f"{pid}-000001.lgc: it holds {30 * 2**30} bytes, more than a collector writes to one file "
        f"({MAX_COLLECTOR_FILE}): not read",
        f"{pid}-000002.lgc: it holds {2**30} bytes, more than a collector writes to one file "
        f"({MAX_COLLECTOR_FILE}): not read",
        f"{pid}-000003.lgc: cannot open it: not a regular file (a FIFO)",
        f"{pid}-000004.lgc: cannot open it: Too many levels of symbolic links (os error 40)",
    }
    assert sorted(p.name for p in attacker_dir.iterdir()) == ["run.lg"], "no partial trace or lock left"


def test_another_users_file_at_the_lock_name_is_named_with_what_to_do(users, attacker_dir):
    """Item 6: another user's symlink at /tmp/.NAME.lock stopped a recording with a bare "Permission denied"."""
    _, victim = users
    os.chmod(attacker_dir, 0o1777)  # a shared folder, as /tmp is
    lock = attacker_dir / ".run.lg.lock"
    subprocess.run(
        [
            "setpriv",
            f"--reuid={victim.uid}",
            f"--regid={victim.gid}",
            "--clear-groups",
            "ln",
            "-s",
            "/etc/nothing",
            str(lock),
        ],
        check=True,
    )
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(attacker_dir / "run.lg"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert one_error_line(proc) == (
        f"launchgap-record: cannot write {attacker_dir / 'run.lg'}: {lock} is a symbolic link belonging to uid "
        f"{victim.uid} ({victim.name}), not a lock of launchgap's; remove it, or choose another -o"
    )
    lock.unlink()
    subprocess.run(
        ["setpriv", f"--reuid={victim.uid}", f"--regid={victim.gid}", "--clear-groups", "touch", str(lock)], check=True
    )
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(attacker_dir / "run.lg"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert one_error_line(proc) == (
        f"launchgap-record: cannot write {attacker_dir / 'run.lg'}: {lock} belongs to uid {victim.uid} "
        f"({victim.name}): another user's file is in the way; remove it, or choose another -o"
    )
    assert sorted(p.name for p in attacker_dir.iterdir()) == [".run.lg.lock"]


def test_root_never_runs_a_program_found_through_the_callers_path(tmp_path):
    """Item 6: the recorder, as root, ran `ldconfig` found through PATH (to read the loader cache): a PATH that
    leads to a folder of the user's ran their program as root. A program of that name there now never runs."""
    folder = tmp_path / "bin"
    folder.mkdir()
    ran = tmp_path / "ran-as-root"
    fake = folder / "ldconfig"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(tmp_path / "run.lg"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert not ran.exists()
