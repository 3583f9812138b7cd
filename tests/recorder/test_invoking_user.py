"""Under sudo the command runs as the invoking user with that user's
supplementary groups (as sudo itself would: on GPU nodes `video` or `render`
can decide device access), and its trace belongs to that user; SUDO_UID and
SUDO_GID that cannot be trusted stop the recorder instead of running the
command as root. Uses a real user and group made for the test."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import subprocess
from dataclasses import dataclass

import pytest

from launchgap.trace import read_trace
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf


@dataclass
class MadeUser:
    name: str
    uid: int
    gid: int
    extra_gid: int

    def sudo_env(self) -> dict[str, str]:
        return {**os.environ, "SUDO_USER": self.name, "SUDO_UID": str(self.uid), "SUDO_GID": str(self.gid)}


@pytest.fixture
def user_with_a_supplementary_group():
    suffix = secrets.token_hex(3)
    group, name = f"lgt-video-{suffix}", f"lgt-user-{suffix}"
    created_group = created_user = False
    try:
        subprocess.run(["groupadd", group], check=True, capture_output=True)
        created_group = True
        subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", "--groups", group, name],
            check=True,
            capture_output=True,
        )
        created_user = True
        entry = pwd.getpwnam(name)
        yield MadeUser(name, entry.pw_uid, entry.pw_gid, grp.getgrnam(group).gr_gid)
    finally:
        if created_user:
            subprocess.run(["userdel", name], capture_output=True)  # also its own group
        if created_group:
            subprocess.run(["groupdel", group], capture_output=True)


def test_the_command_has_the_invoking_users_groups_and_the_trace_is_theirs(user_with_a_supplementary_group, tmp_path):
    user = user_with_a_supplementary_group
    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(out), "--", "sh", "-c", "id -u; id -g; id -G"],
        capture_output=True,
        text=True,
        env=user.sudo_env(),
    )
    assert proc.returncode == 0, proc.stderr
    uid, gid, groups = proc.stdout.splitlines()
    assert (int(uid), int(gid)) == (user.uid, user.gid)
    assert sorted(int(g) for g in groups.split()) == sorted({user.gid, user.extra_gid})
    # the trace directory, its kinds' directories (0700) and every file in them (0600)
    assert {(p.stat().st_uid, p.stat().st_gid, p.stat().st_mode & 0o7777) for p in [out, *out.rglob("*")]} == {
        (user.uid, user.gid, 0o700),
        (user.uid, user.gid, 0o600),
    }
    assert read_trace(out).end["command_exit_code"] == 0


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize(
    "sudo_vars, message",
    [
        (
            {"SUDO_UID": "abc", "SUDO_GID": "0"},
            'SUDO_UID="abc" is not a numeric id: refusing to run the command as root (unset SUDO_UID or fix it)',
        ),
        (
            {"SUDO_UID": "-1", "SUDO_GID": "0"},
            'SUDO_UID="-1" is not a numeric id: refusing to run the command as root (unset SUDO_UID or fix it)',
        ),
        ({"SUDO_UID": "65534"}, "SUDO_UID is set but SUDO_GID is not: refusing to run the command as root"),
        (
            {"SUDO_UID": "65534", "SUDO_GID": ""},
            'SUDO_GID="" is not a numeric id: refusing to run the command as root (unset SUDO_GID or fix it)',
        ),
        ({"SUDO_GID": "65534"}, "SUDO_GID is set but SUDO_UID is not: refusing to run the command as root"),
        (
            {"SUDO_UID": "3999999", "SUDO_GID": "3999999"},
            "SUDO_UID=3999999 is not in the user database: cannot tell its groups",
        ),
    ],
)
def test_untrustworthy_sudo_ids_stop_the_recorder_before_the_command_runs(tmp_path, sudo_vars, message):
    env = {k: v for k, v in os.environ.items() if k not in ("SUDO_UID", "SUDO_GID", "SUDO_USER")}
    marker = tmp_path / "ran-as-root"
    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-o", str(out), "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        env={**env, **sudo_vars},
    )
    assert one_error_line(proc) == f"launchgap-record: {message}"
    assert not marker.exists()
    assert not out.exists()
