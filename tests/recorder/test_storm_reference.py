"""On a real --system recording of workloads/storm (the scheduling-heavy trace bench/analysis_speed
times against perf sched), the fast scheduling analysis gives exactly the frames and report JSON of
the polars implementation it replaced (tests/analysis/reference_sched.py)."""

from __future__ import annotations

import subprocess

from launchgap.trace import Event, read_trace
from tests.analysis.reference_sched import assert_same_as_reference
from tests.recorder.conftest import RECORDER, STORM, needs_bpf

pytestmark = needs_bpf


def test_a_recorded_storm_matches_the_reference(tmp_path, monkeypatch):
    out = tmp_path / "storm.lg"
    proc = subprocess.run([str(RECORDER), "-q", "--system", "-o", str(out), "--", str(STORM), "--pairs", "2",
                           "--seconds", "1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    report = assert_same_as_reference(trace, monkeypatch)
    # the storm's threads ping-pong: most switches of the trace are theirs, with waits and culprits
    assert report["overview"]["switches"] > trace.count(Event.SWITCH) // 2
    assert report["taken"]["total"]["runqueue_ns"] > 0
    assert report["taken"]["culprits"]
