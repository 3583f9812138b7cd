"""`launchgap diff A B` carries the GPU time (issue 24, item 3): both traces' GPU busy and idle share, the
GPU idle interference caused (exact here, recorded with GPU activity) and the culprits in GPU time, with
the change. A: cudasim alone on its CPU; B: the same beside a busy loop pinned there. Every number is
checked against the truth: the idle gaps and their host parts from cudasim's truth.json, the launching
thread's states and the culprit's runs from the trace's switch, wakeup and interrupt rows
(tests/analysis/test_gpu_time.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.analysis.test_gpu_time import CPU, LAUNCH_BOUND, process_group, record, truth_caused
from tests.conftest import REPO
from tests.recorder.conftest import needs_bpf

pytestmark = needs_bpf

# a name of its own: other busy loops on this shared host (another suite's) are called python too
HOG_NAME = "lg-diff-hog"
HOG = (
    "import ctypes, os\nctypes.CDLL(None).prctl(15, %r, 0, 0, 0)\nos.sched_setaffinity(0, {%d})\n"
    "while True:\n    pass\n"
) % (HOG_NAME.encode(), CPU)


def named_hog():
    """A busy loop named HOG_NAME on the launching CPU; stopped, with its group, on every path."""
    return process_group([sys.executable, "-c", HOG])


def test_diff_gives_both_traces_gpu_time_and_the_change_against_the_truth(tmp_path):
    args = [*LAUNCH_BOUND, "--tokens", "40", "--seed", "3"]
    quiet = record(tmp_path, [args], {}, name="quiet")
    with named_hog() as hog:
        loaded = record(tmp_path, [args], {}, name="loaded")
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "diff", str(quiet.trace.path), str(loaded.trace.path), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    gpu = json.loads(proc.stdout)["gpu_time"]
    for side, run in (("a", quiet), ("b", loaded)):
        got = gpu[side]
        assert got["mode"] == "exact" and got["interference_exact"] is True
        truth, tolerance = truth_caused(run)
        assert got["interference_low_ns"] == got["interference_high_ns"]
        assert abs(got["interference_high_ns"] - truth) <= tolerance, (side, got["interference_high_ns"], truth)
        assert sum(got["interference_by_cause_ns"].values()) == got["interference_high_ns"]
        # busy and idle: shares of the GPU's span, from the truth's kernels
        assert abs(got["busy_percent"] + got["idle_percent"] - 100.0) < 1e-9
    a_truth, _ = truth_caused(quiet)
    b_truth, tolerance = truth_caused(loaded)
    change = gpu["change"]
    assert change["interference_low_ns"] == change["interference_high_ns"]
    assert abs(change["interference_high_ns"] - (b_truth - a_truth)) <= tolerance + truth_caused(quiet)[1]
    # the hog: absent from A, and in B the GPU idle the truth says it caused
    hog_truth, _ = truth_caused(loaded, hog)
    assert hog_truth > 0, "the hog never delayed a launch in a gap's host part: nothing to compare"
    rows = [r for r in gpu["culprits"] if r["culprit"] == HOG_NAME]
    assert len(rows) >= 1 and all(r["a_high_ns"] is None and r["b_pids"] == [hog] for r in rows)
    named = sum(r["b_high_ns"] for r in rows)
    assert abs(named - hog_truth) <= tolerance + 0.05 * hog_truth
    assert sum(r["change_high_ns"] for r in rows) == named
    # and the table says it, with the culprit's name
    table = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "diff", str(quiet.trace.path), str(loaded.trace.path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert table.returncode == 0, table.stderr
    assert "GPU time (A: exact, from GPU activity; B: exact, from GPU activity)" in table.stdout
    assert "Who cost the GPU time, A and B" in table.stdout
    assert any(line.strip("│ ").startswith(HOG_NAME) for line in table.stdout.splitlines())
