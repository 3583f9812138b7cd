"""-p PID: attach to a running process, follow all its threads, stop when it exits."""

from __future__ import annotations

import json
import subprocess
import time

import polars as pl

from launchgap.trace import Event
from tests.recorder.conftest import RECORDER, assert_same_launches, cudasim_command, needs_bpf

pytestmark = needs_bpf


def record_running_cudasim(tmp_path, cudasim_args: list[str], settle_s: float, *recorder_args: str):
    """Starts cudasim, attaches the recorder to it after settle_s, waits for
    both; returns the trace and cudasim's ground truth."""
    from launchgap.trace import read_trace

    truth_path, out = tmp_path / "truth.json", tmp_path / "pid.lg"
    workload = subprocess.Popen(cudasim_command(*cudasim_args, "--truth", str(truth_path)), stdout=subprocess.DEVNULL)
    try:
        time.sleep(settle_s)
        proc = subprocess.run(
            [str(RECORDER), "-q", "-o", str(out), "-p", str(workload.pid), *recorder_args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert workload.wait(timeout=120) == 0
    finally:
        workload.kill()
        workload.wait()
    return read_trace(out), json.loads(truth_path.read_text())


def test_attaching_to_a_running_process_records_every_launch_after_attach(tmp_path):
    # launching by the time it is attached to
    trace, truth = record_running_cudasim(tmp_path, ["--tokens", "500", "--threads", "2"], 0.5)
    assert trace.end["stop_reason"] == "the traced processes exited"
    expected = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    launches = trace.of(Event.LAUNCH)
    worker_tids = {t["tid"] for t in truth["processes"][0]["threads"]}
    assert set(launches["tid"].unique().to_list()) == worker_tids
    start = trace.meta["start_ns"]
    for tid in worker_tids:
        recorded = launches.filter(pl.col("tid") == tid).sort("ts_ns")
        theirs = expected.filter(pl.col("tid") == tid).sort("seq")
        # what we saw is exactly the tail of what the thread launched, from some launch on
        tail = theirs.tail(recorded.height)
        assert_same_launches(recorded, tail)
        # and nothing launched after the recorder said it was tracing is missing
        assert recorded.height >= theirs.filter(pl.col("t_enter_ns") >= start).height
        assert 0 < recorded.height < theirs.height


def test_launches_staged_when_the_recording_stops_are_written(tmp_path):
    """Launches are staged per thread and written 16 at a time (or at a sync,
    or at exit). A thread that launched 100 times and then sleeps holds 4
    staged launches whenever the recording stops: they must be written too."""
    # attached while asleep after its first 100 launches
    trace, truth = record_running_cudasim(
        tmp_path, ["--tokens", "1", "--stall-every", "100", "--stall-us", "500000"], 0.2, "--duration", "0.7"
    )
    assert trace.end["stop_reason"] == "the duration elapsed"
    expected = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row").sort("seq")
    recorded = trace.of(Event.LAUNCH).sort("ts_ns")
    attached, detaching = trace.meta["start_ns"], trace.end["proc_counters"]["end"]["monotonic_ns"]
    # the probe fires just before the stand-in driver logs t_enter: a launch it
    # logged while every probe was attached must be there; one logged while the
    # probes were being removed may be
    must = expected.filter(pl.col("t_enter_ns").is_between(attached, detaching))
    may = expected.filter((pl.col("t_enter_ns") > detaching) & (pl.col("t_enter_ns") <= trace.end["end_ns"]))
    assert must.height >= 100
    assert must.height <= recorded.height <= must.height + may.height
    assert (
        recorded.head(must.height).select("grid_x", "block_x", "shared_mem").rows()
        == must.select("grid_x", "block_x", "shared_mem").rows()
    )
