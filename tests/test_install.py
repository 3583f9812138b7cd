"""Installing launchgap as a user does on a GPU node (issue 26): the wheel
`make dist` builds (scripts/dist.sh), pip-installed into a new virtual
environment with its dependencies from the package index, run with no compiler,
cargo or checkout on PATH. It records a cudasim run (cudasim is the workload,
from the checkout's build, not part of the install) and reports it, and the
numbers are the checkout's. The binaries inside need nothing but glibc."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

import launchgap.recorder
from launchgap.trace import Event, read_trace
from tests.conftest import CUDASIM, REPO
from tests.recorder.conftest import needs_bpf

RELEASE = REPO / "recorder" / "target" / "release"
BINARIES = ("launchgap-record", "launchgap-monitor")
# What `ldd` may list for either binary: glibc's own libraries and libgcc_s, the
# unwinder Rust's standard library links (every glibc system has it: glibc's own
# pthread_cancel loads it). libbpf, libelf and zlib are linked in.
GLIBC_LIBRARIES = {
    "linux-vdso.so.1",
    "ld-linux-x86-64.so.2",
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
}
# What must not be reachable from the user's environment
BUILD_TOOLS = ("cc", "gcc", "clang", "cargo", "rustc", "ld", "make", "pkg-config")
WHEEL_NAME = re.compile(r"launchgap-(?P<version>[^-]+)-py3-none-(?P<platform>manylinux_\d+_\d+_x86_64)\.whl")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `make dist` builds (its script, into a directory of this test's:
    the binaries are setup's release build, so nothing is compiled twice)."""
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    proc = subprocess.run([str(REPO / "scripts" / "dist.sh"), str(out)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    print(f"scripts/dist.sh took {time.monotonic() - started:.1f} s")
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def user_env(wheel, tmp_path_factory) -> dict:
    """A new virtual environment with the wheel installed by pip, and the
    environment a user's shell would give: PATH holds the venv's bin and a
    directory with only the system tools launchgap runs (the recorder asks
    `ldconfig -p` where the CUDA libraries are)."""
    home = tmp_path_factory.mktemp("user")
    tools = home / "tools"
    tools.mkdir()
    ldconfig = shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin:/bin")
    assert ldconfig, "ldconfig is missing"
    (tools / "ldconfig").symlink_to(ldconfig)
    venv = home / "venv"
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    subprocess.run([system_python, "-m", "venv", str(venv)], check=True, timeout=300)
    # only what pip and Python need from ours: its certificates, timeouts, cache (HOME), locale
    env = {
        key: value
        for key, value in os.environ.items()
        if key.startswith(("PIP_", "SSL_", "REQUESTS_CA")) or key in ("HOME", "LANG", "LC_ALL", "TMPDIR")
    }
    env.pop("PIP_FIND_LINKS", None)
    env["PATH"] = f"{venv / 'bin'}:{tools}"
    started = time.monotonic()
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=home,
    )
    assert proc.returncode == 0, proc.stderr
    print(f"pip install of the wheel took {time.monotonic() - started:.1f} s")
    return {"env": env, "venv": venv, "home": home}


def test_the_wheel_has_a_manylinux_tag_auditwheel_accepts(wheel):
    name = WHEEL_NAME.fullmatch(wheel.name)
    assert name, wheel.name
    shown = subprocess.run(
        [str(REPO / ".venv" / "bin" / "auditwheel"), "show", "--json", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    audit = json.loads(shown.stdout)
    assert audit["pure"] is False
    assert audit["external_libs"] == {}
    assert audit["overall_tag"] == name["platform"]


def test_the_wheel_carries_the_release_binaries_executable(wheel):
    with zipfile.ZipFile(wheel) as archive:
        for binary in BINARIES:
            member = archive.getinfo(f"launchgap/bin/{binary}")
            assert stat.S_IMODE(member.external_attr >> 16) & 0o111 == 0o111
            assert sha256(archive.read(member)) == sha256((RELEASE / binary).read_bytes())


def test_dist_refuses_binaries_that_need_a_library_outside_glibc(tmp_path):
    """A recorder linked to zlib dynamically, as it was before libbpf-sys's
    vendored build: no wheel, and one line naming the library."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "no C compiler (scripts/setup.sh installs clang)"
    binaries = tmp_path / "binaries"
    binaries.mkdir()
    source = tmp_path / "uses_zlib.c"
    source.write_text("#include <zlib.h>\nint main(void) { return zlibVersion()[0] == 0; }\n")
    for binary in BINARIES:
        subprocess.run([compiler, "-o", str(binaries / binary), str(source), "-lz"], check=True, timeout=120)
    out = tmp_path / "dist"
    proc = subprocess.run(
        [str(REPO / "scripts" / "dist.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "LAUNCHGAP_DIST_BINARIES": str(binaries)},
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == "dist: the binaries need libraries outside glibc: libz.so.1"
    assert not list(out.glob("*.whl"))


@pytest.mark.parametrize("binary", BINARIES)
def test_the_binaries_need_only_glibc(binary):
    ldd = subprocess.run(["ldd", str(RELEASE / binary)], capture_output=True, text=True, timeout=60)
    assert ldd.returncode == 0, ldd.stderr
    needed = {Path(line.split()[0]).name for line in ldd.stdout.splitlines() if line.strip()}
    assert "libc.so.6" in needed
    assert needed <= GLIBC_LIBRARIES, sorted(needed - GLIBC_LIBRARIES)


def test_the_user_environment_has_no_compiler_cargo_or_checkout(user_env):
    path = user_env["env"]["PATH"]
    for tool in BUILD_TOOLS:
        assert shutil.which(tool, path=path) is None, tool
    for directory in path.split(":"):
        assert not Path(directory).resolve().is_relative_to(REPO), directory


def test_the_installed_package_runs_its_own_binaries(user_env):
    venv, env = user_env["venv"], user_env["env"]
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import launchgap.recorder as r; print(r.find_recorder()); print(r.find_monitor())",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=user_env["home"],
    )
    assert where.returncode == 0, where.stderr
    recorder, monitor = (Path(line) for line in where.stdout.splitlines())
    site_packages = next((venv / "lib").glob("python3*/site-packages"))
    assert recorder == site_packages / "launchgap" / "bin" / "launchgap-record"
    assert monitor == site_packages / "launchgap" / "bin" / "launchgap-monitor"
    version = subprocess.run(
        [str(venv / "bin" / "launchgap"), "monitor", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=user_env["home"],
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.split() == ["launchgap-monitor", "0.1.0"]


@needs_bpf
def test_installed_launchgap_records_and_reports_the_checkouts_numbers(user_env, tmp_path):
    venv, env = user_env["venv"], user_env["env"]
    trace, truth_path = tmp_path / "run.lg", tmp_path / "truth.json"
    record = subprocess.run(
        [
            str(venv / "bin" / "launchgap"),
            "record",
            "-q",
            "-o",
            str(trace),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "4",
            "--threads",
            "2",
            "--truth",
            str(truth_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert record.returncode == 0, record.stderr
    truth = json.loads(truth_path.read_text())["totals"]
    assert read_trace(trace).of(Event.LAUNCH).height == truth["launches"] == 2 * 4 * (2 + 28 * 17)

    def report(launchgap: Path, environment: dict | None) -> dict:
        proc = subprocess.run(
            [str(launchgap), "report", "--json", trace.name],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    installed = report(venv / "bin" / "launchgap", env)
    assert installed["overview"]["launches"] == truth["launches"]
    assert installed["overview"]["launches_by_api"] == truth["launches_by_api"]
    assert installed == report(REPO / ".venv" / "bin" / "launchgap", None)


@needs_bpf
def test_the_recorder_binary_alone_records(tmp_path):
    """Copied to a node by itself, with no checkout, venv or compiler on PATH."""
    alone = tmp_path / "node"
    alone.mkdir()
    recorder = alone / "launchgap-record"
    shutil.copy2(RELEASE / "launchgap-record", recorder)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "ldconfig").symlink_to(shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin:/bin"))
    truth_path = tmp_path / "truth.json"
    proc = subprocess.run(
        [
            str(recorder),
            "-q",
            "-o",
            str(tmp_path / "run.lg"),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "2",
            "--truth",
            str(truth_path),
        ],
        env={"PATH": str(tools)},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=alone,
    )
    assert proc.returncode == 0, proc.stderr
    launches = read_trace(tmp_path / "run.lg").of(Event.LAUNCH).height
    assert launches == json.loads(truth_path.read_text())["totals"]["launches"] == 2 * (2 + 28 * 17)


def test_the_wheels_binaries_come_before_the_checkouts_and_the_override_before_both(tmp_path, monkeypatch):
    bundled = tmp_path / "bin"
    bundled.mkdir()
    for binary in BINARIES:
        (bundled / binary).write_bytes(b"")
    monkeypatch.setattr(launchgap.recorder, "_BUNDLED_DIR", bundled)
    monkeypatch.delenv("LAUNCHGAP_RECORDER", raising=False)
    monkeypatch.delenv("LAUNCHGAP_MONITOR", raising=False)
    assert (RELEASE / "launchgap-record").exists()  # the checkout's build is there, and loses
    assert launchgap.recorder.find_recorder() == bundled / "launchgap-record"
    assert launchgap.recorder.find_monitor() == bundled / "launchgap-monitor"
    monkeypatch.setenv("LAUNCHGAP_RECORDER", str(tmp_path / "mine"))
    monkeypatch.setenv("LAUNCHGAP_MONITOR", str(tmp_path / "my-monitor"))
    assert launchgap.recorder.find_recorder() == tmp_path / "mine"
    assert launchgap.recorder.find_monitor() == tmp_path / "my-monitor"
