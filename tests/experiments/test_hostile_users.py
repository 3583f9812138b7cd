"""What an unprivileged local user (`nobody`, through runuser) can do to a root experiment (issue 22):

- leave a "journal of host changes" beside the results directory, for root to "restore": never acted on
  (item 1); only journals launchgap registered in /run/launchgap/journals are read;
- hold the lever lock and so lock every lever experiment out: the lock is root's alone (item 5); and a
  refusal names the process that really holds the lock, never a pid the lock file merely mentions.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.experiments.host_lock import LOCK_PATH, HostBusy, HostLock
from launchgap.experiments.levers import LeverHost
from launchgap.experiments.run_dir import RUN_DIR
from tests.conftest import REPO, directory_in_tmp

ONLINE = set(os.sched_getaffinity(0))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays root against another user: needs root")
needs_nobody = pytest.mark.skipif(shutil.which("runuser") is None, reason="needs runuser to act as nobody")
try:
    NOBODY_UID = pwd.getpwnam("nobody").pw_uid
except KeyError:
    NOBODY_UID = None
    needs_nobody = pytest.mark.skip(reason="no user nobody here")


@pytest.fixture
def shared_dir():
    """A directory every user can reach, as /tmp and /run are (a test's tmp_path is root's alone)."""
    with directory_in_tmp("launchgap-hostile-", 0o755) as base:
        yield base


def as_nobody(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["runuser", "-u", "nobody", "--", "bash", "-c", script], capture_output=True, text=True, timeout=120, cwd="/"
    )


# ---- item 1: a journal beside the results -------------------------------------------------------------


@needs_root
@needs_nobody
@pytest.mark.skipif(len(ONLINE) < 2, reason="the issue's command pins the workload to CPU 1")
def test_a_journal_another_user_left_beside_the_results_is_never_acted_on(shared_dir):
    """The issue's reproduction: nobody plants a "running" experiment with a journal that "restores"
    target.txt and removes tree/; a root experiment writing its results beside it must touch neither."""
    victim, shared = shared_dir / "victim", shared_dir / "shared"
    (victim / "tree").mkdir(parents=True)
    (victim / "tree" / "kept.txt").write_text("kept\n")
    (victim / "target.txt").write_text("original\n")
    shared.mkdir()
    shared.chmod(0o1777)
    planted_results = json.dumps({"status": "running"})
    planted_journal = json.dumps(
        [
            {"kind": "write", "path": str(victim / "target.txt"), "old": "OWNED"},
            {"kind": "scratch", "path": str(victim / "tree")},
        ]
    )
    evil = shared / "evil"
    planted = as_nobody(
        f"mkdir {evil} && printf %s {shlex.quote(planted_results)} > {evil}/results.json && "
        f"printf %s {shlex.quote(planted_journal)} > {evil}/host-changes.json"
    )
    assert planted.returncode == 0, planted.stderr
    out = shared / "exp"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchgap.cli",
            "experiment",
            "levers",
            "--classes",
            "compute",
            "--policies",
            "other",
            "--repeat",
            "2",
            "--size",
            "compute=2000",
            "--cpus",
            "1",
            "-o",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert (victim / "target.txt").read_text() == "original\n"
    assert (victim / "tree" / "kept.txt").read_text() == "kept\n"
    assert str(victim) not in proc.stderr and str(evil) not in proc.stderr
    # nobody's files are as nobody left them: root wrote nothing there
    assert (evil / "results.json").read_text() == planted_results
    assert (evil / "results.json").stat().st_uid == NOBODY_UID
    # the experiment itself ran (the stale check comes before its first run)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "results.json").read_text())["status"] == "complete"


@needs_root
def test_files_in_the_registry_that_launchgap_did_not_write_are_left_alone(tmp_path):
    """Even inside the registry, a file not root's, a symlink, or one that is not a journal is never read as
    one: said in one line each, left where it is."""
    from launchgap.experiments import journal as journals
    from launchgap.experiments.custodian import stale_results
    from tests.experiments.lever_hosts import PrivateRunHost

    host = PrivateRunHost(tmp_path / "host")
    registry = journals.registry(host)
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    foreign = {
        "schema": journals.SCHEMA,
        "status": "running",
        "owner": {"pid": 1, "start_ticks": 0},
        "results": str(tmp_path),
        "changes": [{"kind": "write", "path": str(victim), "old": "OWNED"}],
    }
    (registry / "theirs.json").write_text(json.dumps(foreign))
    os.chown(registry / "theirs.json", NOBODY_UID or 65534, NOBODY_UID or 65534)
    (registry / "linked.json").symlink_to(registry / "theirs.json")
    (registry / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    lines = stale_results(host)
    assert lines == [
        f"{registry / 'deep.json'}: not a journal launchgap wrote (nested too deeply); left alone",
        f"{registry / 'linked.json'}: is a symbolic link; refusing to follow it (remove it); left alone",
        f"{registry / 'theirs.json'}: belongs to uid {NOBODY_UID or 65534}, not root; refusing to use it (remove "
        f"it: another user may have put it there); left alone",
    ]
    assert victim.read_text() == "original\n"
    assert sorted(p.name for p in registry.iterdir()) == ["deep.json", "linked.json", "theirs.json"]


# ---- item 5: the lever lock ---------------------------------------------------------------------------

LOCK_AS = """
import fcntl, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked")
except OSError as err:
    print(f"refused: {err.strerror}")
"""


@needs_root
@needs_nobody
@pytest.mark.parametrize("left_by_an_older_launchgap", [False, True])
def test_nobody_cannot_open_or_hold_the_lever_lock(shared_dir, left_by_an_older_launchgap):
    host = LeverHost(shared_dir)
    lock_file = host.path(LOCK_PATH)
    if left_by_an_older_launchgap:
        # what launchgap made before the lock was root's alone: the directory 0755, the file 0644
        lock_file.parent.mkdir(parents=True, mode=0o755)
        lock_file.parent.chmod(0o755)
        lock_file.write_text("{}")
        lock_file.chmod(0o644)
    lock = HostLock(host)
    lock.acquire()
    lock.release()
    tried = as_nobody(f"python3 -c {shlex.quote(LOCK_AS)} {lock_file}")  # the system's: the venv is root's
    assert tried.stdout == "refused: Permission denied\n", tried.stderr
    assert stat.S_IMODE(lock_file.parent.stat().st_mode) == 0o700 and lock_file.parent.stat().st_uid == 0
    assert stat.S_IMODE(lock_file.stat().st_mode) == 0o600 and lock_file.stat().st_uid == 0
    # and root still takes it
    again = HostLock(host)
    again.acquire()
    again.release()


@needs_root
@pytest.mark.parametrize(
    "planted, message",
    [
        (
            "lock owned by nobody",
            "belongs to uid {uid}, not root; refusing to use it (remove it: another user may have put it there)",
        ),
        ("lock a symlink", "is a symbolic link; refusing to follow it (remove it)"),
        ("lock a FIFO", "is not a regular file; refusing to use it (remove it)"),
        (
            "directory owned by nobody",
            "belongs to uid {uid}, not root; refusing to use it (remove it: another user may have put it there)",
        ),
        ("directory a symlink", "is a symbolic link; refusing to follow it (remove it)"),
        (
            "directory writable by all",
            "others may write to this directory (mode 0777); refusing to use it (remove it: "
            "another user may have changed it)",
        ),
    ],
)
def test_a_lock_another_user_could_have_placed_is_refused_in_one_line(tmp_path, planted, message):
    uid = NOBODY_UID or 65534
    host = LeverHost(tmp_path / "host")
    run_dir, lock_file = host.path(RUN_DIR), host.path(LOCK_PATH)
    run_dir.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "levers.lock").write_text("precious\n")
    if planted.startswith("directory"):
        if planted == "directory a symlink":
            run_dir.symlink_to(elsewhere)
        elif planted == "directory owned by nobody":
            run_dir.mkdir()
            os.chown(run_dir, uid, uid)
        else:
            run_dir.mkdir()
            run_dir.chmod(0o777)
        refused = run_dir
    else:
        run_dir.mkdir(mode=0o700)
        if planted == "lock a symlink":
            lock_file.symlink_to(elsewhere / "levers.lock")
        elif planted == "lock a FIFO":
            os.mkfifo(lock_file, 0o600)
        else:
            lock_file.write_text("{}")
            lock_file.chmod(0o600)
            os.chown(lock_file, uid, uid)
        refused = lock_file
    with pytest.raises(HostBusy) as err:
        HostLock(host).acquire()
    assert str(err.value) == f"the host lock: {refused}: {message.format(uid=uid)}"
    assert (elsewhere / "levers.lock").read_text() == "precious\n"
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o700


HOLD_AND_DIE = """
import os, sys, time
from launchgap.experiments.host_lock import HostLock
from launchgap.experiments.levers import LeverHost
lock = HostLock(LeverHost(sys.argv[1]))
lock.acquire()
child = os.fork()      # as the custodian: the lock's open file, inherited
if child == 0:
    time.sleep(120)
    os._exit(0)
print(child, flush=True)
os._exit(0)            # the experiment is gone; the lock file still names it
"""


@needs_root
def test_the_refusal_names_the_process_really_holding_the_lock_not_a_dead_pid_in_the_file(tmp_path):
    root = tmp_path / "host"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_AND_DIE, str(root)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    child = None
    try:
        child = int(proc.stdout.readline())
        proc.wait(timeout=30)
        dead = proc.pid
        named = json.loads((root / LOCK_PATH.lstrip("/")).read_text())
        assert named["pid"] == dead and not Path(f"/proc/{dead}").exists()
        with pytest.raises(HostBusy) as err:
            HostLock(LeverHost(root)).acquire()
        message = str(err.value)
        assert f"pid {dead}" not in message
        assert message.startswith(
            f"host settings are being changed by another process (pid {child}, `{sys.executable} -c "
        )
        assert message.endswith(
            f"; it holds {root / LOCK_PATH.lstrip('/')}: run again when it has finished (two "
            f"at once would each save the other's changes as the host's own)"
        )
    finally:
        if child is not None:
            os.kill(child, 9)
        proc.kill()
        proc.wait()
