"""--duration takes a finite number of seconds above 0: anything else is one
line at parse time, before a probe is loaded or the command started (it
used to panic after releasing the command, or silently mean 0)."""

from __future__ import annotations

import subprocess

import pytest

from launchgap.trace import read_trace
from tests.recorder.conftest import RECORDER, needs_bpf, our_programs_loaded

pytestmark = needs_bpf


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1", "0", "0.0", "1e300", "ten", ""])
def test_a_bad_duration_is_one_line_and_nothing_runs(tmp_path, value):
    marker, out = tmp_path / "ran", tmp_path / "x.lg"
    before = our_programs_loaded()
    proc = subprocess.run(
        [str(RECORDER), "-o", str(out), f"--duration={value}", "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        f"launchgap-record: invalid value '{value}' for '--duration <SECS>': use a number of seconds"
    )
    assert not marker.exists()
    assert not out.exists()
    assert our_programs_loaded() == before


def test_a_negative_duration_as_a_separate_word_is_the_same_line(tmp_path):
    proc = subprocess.run(
        [str(RECORDER), "-o", str(tmp_path / "x.lg"), "--duration", "-1", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "launchgap-record: invalid value '-1' for '--duration <SECS>': use a number of seconds above 0, e.g. 10 or 0.5"
    )


def test_a_good_duration_stops_the_recording_and_the_command_keeps_running(tmp_path):
    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-o", str(out), "--duration", "0.3", "--", "sh", "-c", "sleep 1.5; exit 4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    trace = read_trace(out)
    assert trace.end["stop_reason"] == "the duration elapsed"
    assert trace.end["command_exit_code"] is None  # it was still running when tracing stopped
    assert "waiting for sh" in proc.stderr
