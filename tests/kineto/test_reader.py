"""The PyTorch profiler trace reader (trace/kineto.py, trace/chrome_json.py) on files made here: cudasim's
own run in both of Kineto's layouts (its truth.json says where every kernel was and how the writer's clock
maps the truth's), hand-written files whose values are worked out by hand, and bad input, which must get
one line, never a traceback."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import launchgap.trace.chrome_json as chrome_json
from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import open_trace
from launchgap.trace.kineto import KinetoError, read_profiler_trace
from launchgap.views.verdict_words import say
from tests.conftest import CUDASIM


def cudasim_trace(tmp_path: Path, layout: str, name: str = "k.json.gz", *extra: str) -> tuple[Path, dict]:
    truth, kineto = tmp_path / f"{layout}-truth.json", tmp_path / f"{layout}-{name}"
    subprocess.run(
        [
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "6",
            "--layers",
            "3",
            "--truth",
            str(truth),
            "--kineto",
            str(kineto),
            "--kineto-layout",
            layout,
            *extra,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return kineto, json.loads(truth.read_text())


@pytest.mark.parametrize("layout", ["relative", "absolute"])
def test_both_layouts_put_every_kernel_where_the_truth_and_the_writers_clock_say(tmp_path, layout):
    """Each kernel's start, read back and taken off the writer's clock (truth.json's kineto: offset and
    drift), is the truth's to within the writer's jitter."""
    path, truth = cudasim_trace(tmp_path, layout)
    run = read_profiler_trace(path)
    assert run.layout == layout and run.anchored
    clock = truth["kineto"]
    kernels = np.sort(run.gpu.filter(pl.col("work") == "kernel")["ts_ns"].to_numpy().astype(np.int64))
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    expected = np.sort(launches["gpu_start_ns"].to_numpy().astype(np.int64))
    written = (
        expected
        + clock["offset_ns"]
        + np.round(clock["drift_ppm"] * 1e-6 * (expected - clock["t0_ns"])).astype(np.int64)
    )
    assert kernels.size == expected.size
    assert np.abs(kernels - written).max() <= clock["jitter_ns"] + 1
    # the calls carry the truth's threads, the GPU work the truth's device, copies their direction
    assert set(run.calls["tid"].to_list()) == {t["tid"] for p in truth["processes"] for t in p["threads"]}
    assert run.devices == [0]
    copies = run.gpu.filter(pl.col("work") == "memcpy")
    assert set(copies["copy_kind"].to_list()) == {"HTOD", "DTOH"}


def test_graph_nodes_share_their_launchs_id_and_count_one_by_one(tmp_path):
    path, truth = cudasim_trace(tmp_path, "relative", "g.json", "--launch", "graph")
    report = build_report(open_trace(path))
    (f,) = report.profiler
    assert f.graph_nodes == truth["config"]["kernels_per_layer"] * truth["config"]["layers"] * truth["tokens"]
    assert report.gpu_activity.launches_without_execution == 0


def test_a_hand_written_relative_trace_is_read_to_the_nanosecond(tmp_path):
    """baseTimeNanoseconds plus microseconds with three decimals: 1,700,000,000,123,456,789 + 1.001 us is
    ...457,790; a negative duration and an event without ts are left out and counted; a user annotation on
    the GPU is not work."""
    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 42,
            "tid": 43,
            "ts": 1.001,
            "dur": 2.5,
            "args": {"correlation": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 3,
            "tid": 7,
            "ts": 4.000,
            "dur": 0.999,
            "args": {"device": 3, "stream": 7, "correlation": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "bad",
            "pid": 3,
            "tid": 7,
            "ts": 9.0,
            "dur": -1.0,
            "args": {"device": 3, "stream": 7, "correlation": 8},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "no ts",
            "pid": 3,
            "tid": 7,
            "dur": 1.0,
            "args": {"device": 3, "stream": 7, "correlation": 9},
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "step",
            "pid": 3,
            "tid": 7,
            "ts": 3.0,
            "dur": 3.0,
            "args": {},
        },
    ]
    text = (
        '{"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": 1700000000123456789, '
        '"traceEvents": [' + ",\n".join(json.dumps(e) for e in events) + "]}"
    )
    # json.dumps writes 1.001 and 4.0 as Python floats: the text is what is parsed
    path = tmp_path / "hand.json"
    path.write_text(text)
    run = read_profiler_trace(path)
    base = 1_700_000_000_123_456_789
    assert run.layout == "relative" and run.calls["ts_ns"].to_list() == [base + 1001]
    assert run.calls["end_ns"].to_list() == [base + 3501]
    kernel = run.gpu.filter(pl.col("work") == "kernel")
    assert kernel["ts_ns"].to_list() == [base + 4000] and kernel["end_ns"].to_list() == [base + 4999]
    assert kernel["device_id"].to_list() == [3]  # the event's device, not device 0
    assert run.damage == {"events with a negative duration": 1, "events without a readable ts or dur": 1}
    report = build_report(open_trace(path))
    assert report.trace.damage and say(report.warnings["trace"]).startswith("incomplete")


def test_the_stream_is_split_the_same_whatever_the_piece_size(tmp_path, monkeypatch):
    """A file read a few bytes at a time gives the events a whole read gives: an event, a string, an escape
    or a number cut across pieces is put together."""
    path, _ = cudasim_trace(tmp_path, "relative")
    whole = read_profiler_trace(path)
    monkeypatch.setattr(chrome_json, "CHUNK_BYTES", 997)
    pieces = read_profiler_trace(path)
    assert pieces.gpu.equals(whole.gpu) and pieces.calls.equals(whole.calls) and pieces.events == whole.events


def one_line_failure(path: Path) -> str:
    result = CliRunner().invoke(main, ["report", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_truncated_gzip_gets_one_line(tmp_path):
    path, _ = cudasim_trace(tmp_path, "relative")
    cut = tmp_path / "cut.json.gz"
    data = path.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert "cut short" in one_line_failure(cut)


def test_a_corrupt_gzip_gets_one_line(tmp_path):
    path, _ = cudasim_trace(tmp_path, "relative")
    data = bytearray(path.read_bytes())
    for i in range(20, len(data) - 20, 97):
        data[i] ^= 0x5A
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(bytes(data))
    line = one_line_failure(bad)
    assert str(bad) in line and ("gzip" in line or "JSON" in line or "cut short" in line)


@pytest.mark.parametrize(
    "text, said",
    [
        ('{"displayTimeUnit": "ms"}', "no traceEvents"),
        ("hello, world", "no traceEvents"),
        (
            '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
            "no GPU work",
        ),
        (
            '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1',
            "cut short",
        ),
        ("", "no traceEvents"),
    ],
)
def test_json_that_is_not_a_profiler_trace_gets_one_line(tmp_path, text, said):
    path = tmp_path / "not.json"
    path.write_text(text)
    assert said in one_line_failure(path)
    with pytest.raises(KinetoError):
        read_profiler_trace(path)


def test_gzip_of_a_profiler_trace_is_read_as_the_json(tmp_path):
    path, _ = cudasim_trace(tmp_path, "absolute", "k.json")
    zipped = tmp_path / "k.json.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert read_profiler_trace(zipped).gpu.equals(read_profiler_trace(path).gpu)
