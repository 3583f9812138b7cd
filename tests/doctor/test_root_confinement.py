"""`doctor --root DIR` reads only files in DIR (issue 22, item 4): a copy of another node's files may hold a
symbolic link to /etc/shadow, whose text the doctor printed inside a "cannot parse" message. Every path is
resolved and refused if it leaves the root (before the open, and again on what was opened); a value that
cannot be parsed is shown as a short excerpt with its unprintable characters escaped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from launchgap.doctor.host import DirectoryHost
from tests.doctor.trees import make_tree

ONLINE = "/sys/devices/system/cpu/online"
OUT_OF_ROOT = "(not readable: a symbolic link out of the root)"
SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::\n"


def doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


def evidence_of(result: dict, path: str) -> set[str]:
    return {e["value"] for c in result["checks"] for e in c["evidence"] if e["path"] == path}


def test_a_link_out_of_the_root_is_not_read_and_its_text_never_shown(tmp_path):
    """The audit's case: online -> ../../../../../etc/shadow printed the file in three checks."""
    import json

    (tmp_path / "secret").write_text(SECRET)
    root = make_tree(tmp_path, "node-4cpu", {ONLINE: None})
    (root / ONLINE.lstrip("/")).symlink_to("../../../../../secret")
    assert (root / ONLINE.lstrip("/")).read_text() == SECRET  # the link does lead to the secret
    shown = doctor("--root", str(root), "--json")
    assert shown.returncode == 0, shown.stderr
    assert "SECRETHASH" not in shown.stdout + shown.stderr
    assert evidence_of(json.loads(shown.stdout), ONLINE) == {OUT_OF_ROOT}
    text = doctor("--root", str(root))
    assert text.returncode == 0 and "SECRETHASH" not in text.stdout + text.stderr
    assert f"{ONLINE}: {OUT_OF_ROOT}" in text.stdout


def test_every_way_out_is_refused_and_links_inside_are_followed(tmp_path):
    (tmp_path / "secret").write_text(SECRET)
    (tmp_path / "devices").mkdir()
    (tmp_path / "devices" / "0000:99:00.0").mkdir()
    root = make_tree(
        tmp_path,
        "node-4cpu",
        {ONLINE: None, "/sys/devices/system/cpu/isolated": None, "/sys/bus/pci/devices": None, "/proc/cmdline": None},
    )
    cpu = root / "sys" / "devices" / "system" / "cpu"
    (cpu / "online").symlink_to(tmp_path / "secret")  # absolute, out
    (cpu / "isolated").symlink_to("../../../../proc/../../secret")  # through a directory in the root
    (root / "sys" / "bus" / "pci" / "devices").symlink_to("../../../../devices")  # a directory, out
    (root / "proc" / "cmdline.real").write_text("ro quiet\n")
    (root / "proc" / "cmdline").symlink_to("cmdline.real")  # inside: followed
    host = DirectoryHost(root)
    for path in (ONLINE, "/sys/devices/system/cpu/isolated"):
        reading = host.read(path)
        assert (reading.ok, reading.why) == (False, "a symbolic link out of the root")
    listing = host.listdir("/sys/bus/pci/devices")
    assert (listing.ok, listing.why) == (False, "a symbolic link out of the root")
    assert host.read("/proc/cmdline").text == "ro quiet\n"
    assert {"cmdline", "cmdline.real"} <= set(host.listdir("/proc").names)
    # the root given through a link of its own is still the root
    (tmp_path / "link-to-root").symlink_to(root)
    assert DirectoryHost(tmp_path / "link-to-root").read("/proc/cmdline").text == "ro quiet\n"
    assert not DirectoryHost(tmp_path / "link-to-root").read(ONLINE).ok


def test_a_link_swapped_in_after_the_check_is_not_read(tmp_path, monkeypatch):
    """What was opened is checked too: a link that appears between the path's check and its open (simulated:
    the check sees the path unresolved) is refused on the descriptor."""
    (tmp_path / "secret").write_text(SECRET)
    root = make_tree(tmp_path, "node-4cpu", {ONLINE: None})
    (root / ONLINE.lstrip("/")).symlink_to(tmp_path / "secret")
    monkeypatch.setattr(DirectoryHost, "_real", lambda self, path: os.path.join(self._real_root, path.lstrip("/")))
    reading = DirectoryHost(root).read(ONLINE)
    assert (reading.ok, reading.text, reading.why) == (False, None, "a symbolic link out of the root")


def test_the_live_host_is_read_as_it_is():
    assert DirectoryHost("/").read("/proc/self/status").ok  # /proc/self: a link, on the host itself


def test_a_value_that_cannot_be_parsed_is_a_short_escaped_excerpt(tmp_path):
    """At most 60 characters of the file (a terminal's escape sequence escaped, not sent), at most 20 of the
    word that failed."""
    import json

    value = "0-\x1b[2J" + "A" * 200
    root = make_tree(tmp_path, "node-4cpu", {"/sys/devices/system/cpu/isolated": value + "\n"})
    proc = doctor("--root", str(root), "--json")
    assert proc.returncode == 0, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    shown = "0-\\x1b[2J" + "A" * 48 + "..."
    assert checks["boot.isolation"]["summary"] == (
        f"cannot parse /sys/devices/system/cpu/isolated: {shown} (bad CPU number '\\x1b[2J{'A' * 10}...')"
    )
    assert evidence_of({"checks": [checks["boot.isolation"]]}, "/sys/devices/system/cpu/isolated") == {shown}
    text = doctor("--root", str(root))
    assert "\x1b" not in text.stdout and "A" * 49 not in text.stdout


def test_a_bad_cmdline_value_is_an_excerpt_too(tmp_path):
    cmdline = Path(make_tree(tmp_path, "node-4cpu")) / "proc" / "cmdline"
    cmdline.write_text("ro nohz_full=1-" + "\x07" * 3 + "9" * 100 + "\n")
    proc = doctor("--root", str(cmdline.parent.parent), "--json")
    import json

    summary = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["boot.isolation"]["summary"]
    # 60 characters: "1-", three escapes of 4, 43 nines and "..."; of the word, 12 + 5 + 3
    assert summary == (
        "the kernel cannot parse nohz_full=1-\\x07\\x07\\x07" + "9" * 43 + "...: bad CPU number "
        "'\\x07\\x07\\x07" + "9" * 5 + "...'"
    )
