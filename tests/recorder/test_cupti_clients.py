"""A workload that uses CUPTI itself, as torch.profiler (Kineto) does, recorded with --gpu-activity: cudasim's
--cupti-client loads a second CUPTI client (libcudasim_profiler.so, linked against CUPTI as Kineto is inside
libtorch_cuda.so) that subscribes, registers its own buffer callbacks and its own timestamp callback (its
clock: CLOCK_REALTIME), enables kernel and runtime records for a window of tokens, then flushes, disables
them and unsubscribes. Neither it nor launchgap may lose its data, and the trace says they shared CUPTI.
The truth is cudasim's truth.json: every launch's call and kernel, and what the client counted."""

from __future__ import annotations

import ctypes
import json
import subprocess

import polars as pl

from launchgap.analysis.report import build_report
from launchgap.trace import Event, read_trace
from tests.conftest import CUDASIM, CUDASIM_BUILD
from tests.recorder.conftest import RECORDER, needs_bpf

CUPTI = CUDASIM_BUILD / "lib" / "libcupti.so.12"
MULTIPLE_SUBSCRIBERS = 39  # CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (cupti_result.h)
WINDOW = (5, 15)
# the stand-in reads its client's clock once, unbracketed, when the client registers it; the collector's
# reading of the same clock is bracketed: the two may differ by what a loaded machine puts between two reads
CLIENT_CLOCK_SLACK_NS = 50_000


def launches_in(truth: dict, start: int, stop: int) -> pl.DataFrame:
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    return launches.filter(pl.col("t_enter_ns").is_between(start, stop))


def test_the_standin_allows_one_subscriber_as_cupti_does():
    """A second cuptiSubscribe fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, whose value the
    stand-in's header shares with NVIDIA's (tests/cudasim/test_cupti_standin.py), until the first unsubscribes."""
    cupti = ctypes.CDLL(str(CUPTI))
    first, second = ctypes.c_void_p(), ctypes.c_void_p()
    assert cupti.cuptiSubscribe(ctypes.byref(first), None, None) == 0
    try:
        assert cupti.cuptiSubscribe(ctypes.byref(second), None, None) == MULTIPLE_SUBSCRIBERS
        name = ctypes.c_char_p()
        assert cupti.cuptiGetResultString(MULTIPLE_SUBSCRIBERS, ctypes.byref(name)) == 0
        assert name.value == b"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
    finally:
        assert cupti.cuptiUnsubscribe(first) == 0
    assert cupti.cuptiSubscribe(ctypes.byref(second), None, None) == 0
    assert cupti.cuptiUnsubscribe(second) == 0


def test_the_client_alone_gets_every_kernel_of_its_window(tmp_path):
    truth_path = tmp_path / "truth.json"
    subprocess.run(
        [
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "20",
            "--layers",
            "3",
            "--cupti-client",
            f"{WINDOW[0]}:{WINDOW[1]}",
            "--truth",
            str(truth_path),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    truth = json.loads(truth_path.read_text())
    client = truth["cupti_client"]
    assert client["subscribe_result"] == 0
    assert client["kernels"] == launches_in(truth, client["start_ns"], client["stop_ns"]).height > 0


@needs_bpf
def test_a_profiler_in_the_workload_and_the_collector_both_keep_their_data(tmp_path):
    out, truth_path = tmp_path / "run.lg", tmp_path / "truth.json"
    proc = subprocess.run(
        [
            str(RECORDER),
            "--gpu-activity",
            "--cupti",
            str(CUPTI),
            "-o",
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "20",
            "--layers",
            "3",
            "--cupti-client",
            f"{WINDOW[0]}:{WINDOW[1]}",
            "--truth",
            str(truth_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(truth_path.read_text())
    client = truth["cupti_client"]
    # the profiler's own subscribe succeeded: the collector never subscribes
    assert client["subscribe_result"] == 0
    # the profiler lost nothing: every kernel launched in its window, and nothing it did not enable
    window = launches_in(truth, client["start_ns"], client["stop_ns"])
    assert client["kernels"] == window.height > 0
    assert client["other_records"] == 0
    # its records are on its own clock (CLOCK_REALTIME), as it asked
    assert client["start_realtime_ns"] <= client["first_kernel_start"] <= client["stop_realtime_ns"] + 10**9
    # launchgap lost nothing either: every kernel of the run, on its clock, where the truth has it
    trace = read_trace(out)
    report = build_report(trace)
    assert report.gpu_activity.launches_without_execution == 0
    kernels = trace.of(Event.GPU_KERNEL, "ts_ns", "correlation_id").sort("ts_ns")
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row").sort("gpu_start_ns")
    assert kernels.height == launches.height
    error = (kernels["ts_ns"].cast(pl.Int64) - launches["gpu_start_ns"].cast(pl.Int64)).abs().max()
    assert error <= CLIENT_CLOCK_SLACK_NS, error
    # and the trace says they shared CUPTI, when, and what the collector did; said at record time too
    contended = report.gpu_activity.contended
    assert {c.what for c in contended} >= {"buffer_callbacks", "timestamp_callback", "disable"}
    assert all(client["start_ns"] - 10**9 <= c.ts_ns <= client["stop_ns"] + 10**9 for c in contended)
    assert "another CUPTI client in this process" in proc.stderr
