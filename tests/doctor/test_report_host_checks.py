"""The report's host checks: the doctor over the host files a trace carries,
with the launching threads' CPUs as the target."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

from rich.console import Console

from launchgap.analysis.report import build_report
from launchgap.doctor import DirectoryHost, run_doctor, target_from_cpus
from launchgap.doctor.host import RecordingHost
from launchgap.doctor.model import Target
from launchgap.doctor.parse import parse_cpulist
from launchgap.trace import read_trace
from launchgap.views.report_json import report_json
from launchgap.views.terminal import render
from tests.analysis.builder import IDLE, TraceBuilder
from tests.conftest import CUDASIM
from tests.doctor.trees import make_tree, snapshot_of
from tests.recorder.conftest import RECORDER, needs_bpf

APP = (100, 100, "app")
HELPER = (100, 101, "app-helper")


def _text(report: dict) -> str:
    """The terminal report of the trace REPORT (its JSON) was made from."""
    out = io.StringIO()
    render(build_report(read_trace(report["trace"]["path"])), Console(file=out, width=200))
    return " ".join(out.getvalue().split())


def _launching_on(tmp_path, cpus_launched: list[int], snapshot: dict | None) -> dict:
    # a 4-CPU node (the reader drops events on CPUs beyond the trace's topology)
    b = TraceBuilder(
        meta_extra={"topology": {"count": 4}, **({"host_files": snapshot} if snapshot is not None else {})}
    )
    b.switch(2_000, cpus_launched[0], IDLE, APP)
    for i, cpu in enumerate(cpus_launched):
        b.launch(5_000 + i * 1_000, cpu, APP)
    b.switch(3_000, 0, IDLE, HELPER)  # a thread that never launches: its CPU is not the target
    b.switch(90_000, cpus_launched[-1], APP, IDLE, dead=True)
    return report_json(b.write(tmp_path / "t.lg"))


def test_the_launching_threads_cpus_are_the_target(tmp_path):
    root = make_tree(tmp_path, "node-4cpu")
    report = _launching_on(tmp_path, [2, 3], snapshot_of(root))
    section = report["host_checks"]
    assert section["target"] == {"cpus": [2, 3], "description": "the launching threads' CPUs"}
    checks = {c["id"]: c for c in section["checks"]}
    assert checks["irq.target"]["status"] == "warn"
    assert checks["irq.target"]["data"]["count"] == 1
    assert [i["irq"] for i in checks["irq.target"]["data"]["irqs"]] == [38]
    # what bears on the run: the failure, the warning, and every check about the target's CPUs
    assert sorted(checks) == ["boot.rcu_nocbs", "cpu.governor", "cpu.gpu_numa", "cpu.smt", "irq.isolated", "irq.target"]
    assert section["counts"] == {"ok": 15, "warn": 2, "fail": 1, "unknown": 0}
    text = _text(report)
    assert (
        "1 device interrupt lands on the launching threads' CPUs (2-3): virtio2-input.0 (nic, IRQ 38) on CPU 2" in text
    )
    assert "Host settings at record time (doctor; the launching threads' CPUs: 2-3)" in text


def test_a_trace_without_host_files_has_no_host_checks(tmp_path):
    report = _launching_on(tmp_path, [1], None)
    assert report["host_checks"] is None
    assert "Host settings" not in _text(report)


def _last_cpu() -> int:
    return max(parse_cpulist(Path("/sys/devices/system/cpu/online").read_text()))


@needs_bpf
def test_a_real_recording_carries_the_host_files_and_the_report_checks_them(tmp_path):
    cpu = _last_cpu()
    out = tmp_path / "run.lg"
    proc = subprocess.run(
        [
            str(RECORDER),
            "-o",
            str(out),
            "--",
            "taskset",
            "-c",
            str(cpu),
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    snapshot = trace.meta["host_files"]
    assert snapshot["files"]["/proc/cmdline"] == Path("/proc/cmdline").read_text()
    assert snapshot["files"]["/proc/sys/kernel/osrelease"] == Path("/proc/sys/kernel/osrelease").read_text()

    report = report_json(trace)
    section = report["host_checks"]
    # taskset pinned the launching thread: the trace shows it on that CPU alone
    assert section["target"] == {"cpus": [cpu], "description": "the launching threads' CPUs"}
    live = {c.id: c for c in run_doctor(DirectoryHost("/"), target_from_cpus(DirectoryHost("/"), str(cpu))).checks}
    recorded = {c["id"]: c for c in section["checks"]}
    assert [i["irq"] for i in recorded["irq.target"]["data"]["irqs"]] == [
        i["irq"] for i in live["irq.target"].data["irqs"]
    ]
    assert recorded["irq.target"]["status"] == live["irq.target"].status.value
    n = recorded["irq.target"]["data"]["count"]
    text = _text(report)
    if n:
        verb = "lands" if n == 1 else "land"
        assert f"{n} device interrupt{'s' if n != 1 else ''} {verb} on the launching threads' CPUs ({cpu})" in text
    else:
        assert f"lands on the launching threads' CPUs ({cpu})" in text
    json.dumps(report)  # the section is plain JSON


@needs_bpf
def test_the_snapshot_holds_every_file_the_doctor_reads_here(tmp_path):
    """The recorder's list (recorder/src/metadata/host_files.rs) and the
    doctor's reads (python/launchgap/doctor/facts.py) are the same set."""
    out = tmp_path / "run.lg"
    proc = subprocess.run([str(RECORDER), "-o", str(out), "--", "true"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    snapshot = read_trace(out).meta["host_files"]
    host = RecordingHost(DirectoryHost("/"))
    online = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    run_doctor(host, Target(frozenset(online), "every CPU"))
    process = re.compile(r"/proc/\d+/")
    irqbalance = {f"/proc/{pid}/" for pid in snapshot["dirs"]["/proc"]}
    captured = set(snapshot["files"]) | set(snapshot["errors"])
    missing = [
        p
        for p in set(host.read_paths)
        if p not in captured and not (process.match(p) and not any(p.startswith(i) for i in irqbalance))
    ]
    assert missing == []
    unlisted = [p for p in set(host.listed_paths) if p not in snapshot["dirs"] and p not in snapshot["errors"]]
    assert unlisted == []
