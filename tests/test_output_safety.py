"""No command destroys its input, leaves a partial file, or hands a root-owned,
world-readable file to the user who ran sudo."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analysis.builder import IDLE, TraceBuilder

T = (100, 101, "launcher")
HOG = (200, 200, "hog")


def launchgap(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(directory: Path) -> dict[str, str]:
    """Every file under DIRECTORY (through no symlink), by relative path, with its digest."""
    return {
        str(p.relative_to(directory)): digest(p)
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not any(q.is_symlink() for q in [p, *p.parents])
    }


def small_trace(path: Path, version: int = 2) -> Path:
    b = TraceBuilder(meta_extra={"mode": "system"})
    b.switch(2_000, 0, IDLE, T)
    for i in range(20):
        b.launch(3_000 + i * 1_000, 0, T)
    b.switch(30_000, 0, T, HOG)
    b.switch(40_000, 0, HOG, T)
    b.switch(41_000, 1, IDLE, HOG)
    return b.write(path, version=version).path


@pytest.fixture
def inputs(tmp_path):
    # format 1 (a file: hard links and copies under other names) and format 2 (a directory)
    trace = small_trace(tmp_path / "run.lg", version=1)
    small_trace(tmp_path / "dir.lg")
    (tmp_path / "dirsym.lg").symlink_to(tmp_path / "dir.lg")
    study = tmp_path / "study.csv"
    assert launchgap("export", "--csv", str(trace), "-o", str(study)).returncode == 0
    named_png = tmp_path / "run.png"  # a trace whose name a view could be asked to write over
    named_png.write_bytes(trace.read_bytes())
    os.link(trace, tmp_path / "hard.lg")
    (tmp_path / "sym.lg").symlink_to(trace)
    dat = tmp_path / "real.dat"
    dat.write_bytes(b"tracing-not-really")  # refused before trace-cmd ever reads it
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["report", "run.lg", "--csv", "run.lg"],  # was SIGBUS and a 0-byte trace
        ["export", "--csv", "run.lg", "-o", "run.lg"],  # was SIGBUS and a 0-byte trace
        ["export", "--perfetto", "run.lg", "-o", "./run.lg"],  # silently replaced the trace
        ["export", "--perfetto", "run.lg", "-o", "hard.lg"],  # the same inode, another name
        ["export", "--csv", "sym.lg", "-o", "run.lg"],  # through a symlink
        ["export", "--csv", "study.csv"],  # no -o: study.csv -> study.csv
        ["import", "real.dat", "-o", "real.dat"],  # overwrote the .dat
        ["timeline", "run.png", "-o", "run.png"],
        ["running-waiting", "run.lg", "run.png", "-o", "run.png"],
        ["report", "dir.lg", "--csv", "dir.lg"],  # format 2: the trace's directory
        ["export", "--perfetto", "dirsym.lg", "-o", "dir.lg"],  # through a symlink to it
        ["convert", "dir.lg", "dirsym.lg"],
        ["convert", "run.lg", "hard.lg"],
        ["import", "real.dat", "-o", "real.dat"],
    ],
)
def test_no_writer_writes_over_its_input(inputs, args):
    before = tree(inputs)
    proc = launchgap(*args, cwd=inputs)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to write over it" in lines[0], proc.stderr
    assert tree(inputs) == before
    assert not [p for p in inputs.iterdir() if ".partial" in p.name]


def test_the_refusal_compares_files_not_names(tmp_path):
    from launchgap.output import OutputError, refuse_inputs

    a = tmp_path / "a"
    a.write_text("x")
    refuse_inputs(tmp_path / "b", [a])  # another file: fine
    (tmp_path / "c").symlink_to(a)
    with pytest.raises(OutputError, match="the same file as the input"):
        refuse_inputs(tmp_path / "c", [a])
    with pytest.raises(OutputError, match="this is the input;"):
        refuse_inputs(tmp_path / "a", [tmp_path / "a"])
    missing = tmp_path / "new.csv"  # not there yet: compared by resolved path
    with pytest.raises(OutputError, match="the same file as the input"):
        refuse_inputs(tmp_path / "sub" / ".." / "new.csv", [missing])


def test_an_interrupted_write_leaves_the_old_file_and_no_partial(tmp_path):
    from launchgap.output import atomic_output

    target = tmp_path / "out.csv"
    target.write_text("the previous export\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(target) as partial:
            partial.write_text("half of a new")
            raise KeyboardInterrupt
    assert target.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


@pytest.fixture
def small_filesystem(tmp_path):
    """A 64 KiB tmpfs: a real ENOSPC."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_leaves_the_previous_output_and_no_partial(tmp_path, small_filesystem):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    for i in range(5_000):  # a CSV far larger than 64 KiB
        b.launch(3_000 + i * 10, 0, T)
    trace = b.write(tmp_path / "big.lg").path
    out = small_filesystem / "out.csv"
    out.write_text("the previous export\n")
    proc = launchgap("export", "--csv", str(trace), "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"launchgap: {out}: cannot write (No space left on device)"
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in small_filesystem.iterdir()) == ["out.csv"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files away (CI runs as root)")
def test_files_written_under_sudo_belong_to_the_user_and_are_private(inputs):
    sudo = {"SUDO_UID": "65534", "SUDO_GID": "65533"}
    made = {
        "x.csv": ["export", "--csv", "run.lg", "-o", "x.csv"],
        "x.pftrace": ["export", "--perfetto", "run.lg", "-o", "x.pftrace"],
        "x.svg": ["timeline", "run.lg", "-o", "x.svg"],
        "rw.html": ["running-waiting", "run.lg", "-o", "rw.html"],
        "r.csv": ["report", "run.lg", "--csv", "r.csv"],
    }
    for name, args in made.items():
        proc = launchgap(*args, env=sudo, cwd=inputs)
        assert proc.returncode == 0, proc.stderr
        st = (inputs / name).stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65533, 0o600), name
    shared = launchgap(
        "export", "--csv", "run.lg", "-o", "shared.csv", env={**sudo, "LAUNCHGAP_FILE_MODE": "0644"}, cwd=inputs
    )
    assert shared.returncode == 0, shared.stderr
    assert stat.S_IMODE((inputs / "shared.csv").stat().st_mode) == 0o644
    bad = launchgap("export", "--csv", "run.lg", "-o", "bad.csv", env={"SUDO_UID": "jim", "SUDO_GID": "1"}, cwd=inputs)
    assert bad.returncode == 2 and "SUDO_UID='jim'" in bad.stderr and not (inputs / "bad.csv").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files away (CI runs as root)")
def test_imported_traces_belong_to_the_user(tmp_path):
    from tests.views.dat_maker import make_dat

    dat = make_dat(tmp_path / "real.dat", ["sleep", "0.05"])
    out = tmp_path / "real.lg"
    proc = launchgap("import", str(dat), "-o", str(out), env={"SUDO_UID": "65534", "SUDO_GID": "65534"})
    assert proc.returncode == 0, proc.stderr
    # a format-2 trace: the directory and its kinds' directories 0700, every file 0600
    found = {
        (p.stat().st_uid, p.stat().st_gid, stat.S_IMODE(p.stat().st_mode), p.is_dir()) for p in [out, *out.rglob("*")]
    }
    assert found == {(65534, 65534, 0o700, True), (65534, 65534, 0o600, False)}


@pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")
def test_experiment_results_belong_to_the_user(tmp_path):
    from tests.conftest import CUDASIM

    # the recorder runs the workload as SUDO_UID, and this machine's Python lives under /root: only uid 0 can
    # run it, so the user here is root with another group; the other tests show the uid handed over too
    sudo = {"SUDO_UID": "0", "SUDO_GID": "65534"}
    out = tmp_path / "new" / "results"
    proc = launchgap(
        "experiment",
        "noisy-neighbor",
        "--scenarios",
        "baseline",
        "--repeat",
        "2",
        "-o",
        str(out),
        "--",
        str(CUDASIM),
        "decode",
        "--tokens",
        "3",
        env=sudo,
    )
    assert proc.returncode == 0, proc.stderr
    for path in (
        out.parent,
        out,
        out / "traces",
        out / "results.json",
        out / "summary.json",
        out / "slowdown.png",
        *(out / "traces").rglob("*"),
    ):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (0, 65534), path
        assert stat.S_IMODE(st.st_mode) == (0o700 if path.is_dir() else 0o600), path


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["export"],
        ["import"],
        ["timeline"],
        ["running-waiting"],
        ["report"],
        ["experiment", "run"],
        ["experiment", "show"],
    ],
)
def test_help_says_who_may_read_what(command):
    text = " ".join(launchgap(*command, "--help").stdout.split())
    assert "mode 0600" in text and "SUDO_UID/SUDO_GID" in text and "LAUNCHGAP_FILE_MODE=0644" in text


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_only_the_partials_of_our_own_dead_writers_are_removed(tmp_path):
    """What a killed writer leaves beside its output goes with the next write of that output; nothing else
    does: not another output's, not a live writer's (its pid runs, or, in another pid namespace or on
    another host, it holds its lock), not a link, not another user's."""
    from launchgap.output import remove_stale_partials

    dead = dead_pid()
    target = tmp_path / "out.lg"
    stale_dir = tmp_path / f".out.lg.{dead}.abcd1234.partial"
    stale_dir.mkdir()
    (stale_dir / "meta.json").write_text("{}")
    stale_file = tmp_path / f".out.{dead}.efgh5678.partial.lg"
    stale_file.write_bytes(b"half a format-1 trace")
    kept = {
        "another output's": tmp_path / f".other.lg.{dead}.abcd1234.partial",
        "ours (a running pid)": tmp_path / f".out.lg.{os.getpid()}.abcd1234.partial",
        "locked by a live writer": tmp_path / f".out.lg.{dead}.locked00.partial",
        "no pid in its name": tmp_path / ".out.lg.abcd1234.partial",
    }
    if os.geteuid() == 0:  # root can make one that belongs to someone else
        kept["another user's"] = tmp_path / f".out.lg.{dead}.nobody00.partial"
    for path in kept.values():
        path.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("precious\n")
    link = tmp_path / f".out.lg.{dead}.link0000.partial"
    link.symlink_to(precious)
    if "another user's" in kept:
        os.chown(kept["another user's"], 65534, 65534)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\ntime.sleep(600)",
            str(kept["locked by a live writer"]),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        removed = remove_stale_partials(target)
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert sorted(removed) == sorted([stale_dir, stale_file])
    assert not stale_dir.exists() and not stale_file.exists()
    for why, path in kept.items():
        assert path.is_dir(), why
    assert link.is_symlink() and (precious / "notes.txt").read_text() == "precious\n"
