"""A process anywhere on the host whose name is not UTF-8 (issue 25, item 1): every scan of /proc read each
/proc/PID/stat as strict UTF-8, so one such process made every experiment fail ("UnicodeDecodeError ...",
blamed on the workload). Each scan reads it now, and the name is kept, escaped as the trace keeps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.experiments import journal, leash, levers, loadgen
from tests.conftest import CUDASIM, ODD_NAME_SHOWN

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")


def test_every_proc_scan_reads_a_process_named_in_bytes(odd_named_process):
    pid = odd_named_process  # the leader of its own process group
    assert leash.group_members(pid) == [pid]
    assert [int(entry.name) for entry, _ in loadgen._group_processes([pid])] == [pid]
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    assert journal.start_ticks(pid) == int(raw[raw.rindex(b")") + 1 :].split()[19])
    assert levers.read_thread_policies(pid)[pid]["comm"] == ODD_NAME_SHOWN


@needs_root
def test_the_experiment_of_the_issue_completes_beside_a_process_named_in_bytes(odd_named_process, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchgap.cli",
            "experiment",
            "noisy-neighbor",
            "--repeat",
            "2",
            "--scenarios",
            "baseline",
            "-o",
            str(tmp_path / "out"),
            "--",
            str(CUDASIM),
            "decode",
            "--tokens",
            "50",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["status"] == "complete"
    assert [run.get("error") for run in results["runs"]] == [None] * 3  # the warm-up and 2 measured runs
    assert all(run["metric"] > 0 for run in results["runs"])


@needs_root
def test_a_workload_that_writes_bytes_not_utf8_is_measured(tmp_path):
    """Its output was read as strict UTF-8: the run died of UnicodeDecodeError."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchgap.cli",
            "experiment",
            "noisy-neighbor",
            "--repeat",
            "2",
            "--scenarios",
            "baseline",
            "-o",
            str(tmp_path / "out"),
            "--",
            "sh",
            "-c",
            r'printf "\377 out\n"; printf "\376 err\n" >&2; echo tok/s: 5',
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [run["metric"] for run in results["runs"]] == [5.0] * 3
