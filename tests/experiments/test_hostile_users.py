"""What an unprivileged local user (`nobody`, through runuser) can do to a root experiment (issue 22):

- leave a "journal of host changes" beside the results directory, for root to "restore": never acted on
  (item 1); only journals launchgap registered in /run/launchgap/journals are read.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO

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
    base = Path(tempfile.mkdtemp(prefix="launchgap-hostile-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_nobody(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "nobody", "--", "bash", "-c", script], capture_output=True, text=True,
                          timeout=120, cwd="/")


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
    planted_journal = json.dumps([{"kind": "write", "path": str(victim / "target.txt"), "old": "OWNED"},
                                  {"kind": "scratch", "path": str(victim / "tree")}])
    evil = shared / "evil"
    planted = as_nobody(f"mkdir {evil} && printf %s {shlex.quote(planted_results)} > {evil}/results.json && "
                        f"printf %s {shlex.quote(planted_journal)} > {evil}/host-changes.json")
    assert planted.returncode == 0, planted.stderr
    out = shared / "exp"
    proc = subprocess.run([sys.executable, "-m", "launchgap.cli", "experiment", "levers", "--classes", "compute",
                           "--policies", "other", "--repeat", "2", "--size", "compute=2000", "--cpus", "1", "-o",
                           str(out)], cwd=REPO, capture_output=True, text=True, timeout=900)
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
    foreign = {"schema": journals.SCHEMA, "status": "running", "owner": {"pid": 1, "start_ticks": 0},
               "results": str(tmp_path), "changes": [{"kind": "write", "path": str(victim), "old": "OWNED"}]}
    (registry / "theirs.json").write_text(json.dumps(foreign))
    os.chown(registry / "theirs.json", NOBODY_UID or 65534, NOBODY_UID or 65534)
    (registry / "linked.json").symlink_to(registry / "theirs.json")
    (registry / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    lines = stale_results(host)
    assert lines == [
        f"{registry / 'deep.json'}: not a journal launchgap wrote (nested too deeply); left alone",
        f"{registry / 'linked.json'}: is a symbolic link; refusing to follow it (remove it); left alone",
        f"{registry / 'theirs.json'}: belongs to uid {NOBODY_UID or 65534}, not root; refusing to use it (remove "
        f"it: another user may have put it there); left alone"]
    assert victim.read_text() == "original\n"
    assert sorted(p.name for p in registry.iterdir()) == ["deep.json", "linked.json", "theirs.json"]
