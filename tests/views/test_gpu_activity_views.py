"""What the report, the Perfetto export and the timeline show of GPU activity, on a real
recording of cudasim with the CUPTI collector, checked against cudasim's truth.json."""

from __future__ import annotations

import json
import os
import re
import subprocess

import polars as pl
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from launchgap.analysis.core_map import choose_window
from launchgap.trace import read_trace
from launchgap.views.timeline import TimelineOptions, build_timeline
from tests.conftest import CUDASIM, REPO
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf
LAUNCHGAP = REPO / ".venv" / "bin" / "launchgap"


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Two launching threads, graphs among the launches, every sync kind: recorded once."""
    where = tmp_path_factory.mktemp("gpu-views")
    out, truth = where / "run.lg", where / "truth.json"
    proc = subprocess.run(
        [
            str(RECORDER),
            "-o",
            str(out),
            "--gpu-activity",
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "4",
            "--threads",
            "2",
            "--launch",
            "mixed",
            "--sync",
            "mixed",
            "--truth",
            str(truth),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(truth.read_text())


def truth_frame(truth: dict, table: str) -> pl.DataFrame:
    columns = {"launches": "launch_columns", "syncs": "sync_columns"}[table]
    return pl.DataFrame(truth[table], schema=truth[columns], orient="row")


def test_the_report_says_what_gpu_activity_the_trace_holds(recording):
    out, truth = recording
    report = json.loads(
        subprocess.run(
            [str(LAUNCHGAP), "report", str(out), "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    gpu = report["gpu_activity"]
    syncs = truth_frame(truth, "syncs")
    copies = syncs.filter(pl.col("api").str.starts_with("cuMemcpy")).height
    assert gpu["recorded"] is True and gpu["why_absent"] is None
    assert gpu["cupti_version"] == 28 and gpu["clock_method"] == "timestamp_callback"
    assert (gpu["executions"], gpu["copies"], gpu["syncs"]) == (
        truth["totals"]["launches"],
        copies,
        syncs.height - copies,
    )
    assert (gpu["launches_joined"], gpu["launches_without_execution"]) == (truth["totals"]["launches"], 0)
    assert gpu["collectors_started"] == 1 and gpu["collectors_failed"] == []
    # a console wide enough that no cell wraps; the overview's row, not the GPU time section's title
    text = subprocess.run(
        [str(LAUNCHGAP), "report", str(out)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "1000"},
    ).stdout
    line = next(line for line in text.splitlines() if line.strip("│ ").startswith("GPU activity"))
    assert "recorded through CUPTI 28 (clock timestamp_callback, within " in line
    assert (
        f"): {truth['totals']['launches']:,} kernels and graphs, {copies:,} copies, 0 memsets, "
        f"{syncs.height - copies:,} syncs; every launch joined to its GPU work"
    ) in line
    # the error bound in the unit its size calls for (ns, us from 1000 ns: a loaded machine's is larger)
    amount, unit = re.search(r"within ([0-9.]+) (ns|us|ms)\)", line).groups()
    shown_ns = float(amount) * {"ns": 1, "us": 1e3, "ms": 1e6}[unit]
    assert abs(shown_ns - gpu["clock_error_ns"]) <= 0.001 * gpu["clock_error_ns"] + 0.5


def test_the_report_says_gpu_activity_is_absent_and_why(tmp_path):
    """A recording attached with -p has no GPU activity: the report says so and why, in text and JSON."""
    workload = subprocess.Popen(
        [str(CUDASIM), "decode", "--quiet", "--tokens", "400"], stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        out = tmp_path / "p.lg"
        proc = subprocess.run(
            [str(RECORDER), "-q", "-o", str(out), "-p", str(workload.pid), "--duration", "0.5"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    finally:
        os.killpg(workload.pid, 9)
        workload.wait()
    why = "attached with -p: CUPTI can only be injected into processes the recorder starts"
    report = json.loads(
        subprocess.run(
            [str(LAUNCHGAP), "report", str(out), "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert (report["gpu_activity"]["recorded"], report["gpu_activity"]["why_absent"]) == (False, why)
    text = subprocess.run(
        [str(LAUNCHGAP), "report", str(out)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "1000"},
    ).stdout
    line = next(line for line in text.splitlines() if line.strip("│ ").startswith("GPU activity"))
    assert f"absent: {why}" in line


def test_perfetto_has_a_track_per_gpu_stream_and_a_flow_from_each_launch_to_its_kernel(recording, tmp_path):
    out, truth = recording
    path = tmp_path / "run.pftrace"
    subprocess.run([str(LAUNCHGAP), "export", "--perfetto", str(out), "-o", str(path)], check=True, capture_output=True)
    decoded = pb.Trace()
    decoded.ParseFromString(path.read_bytes())
    tracks = {
        p.track_descriptor.uuid: p.track_descriptor.name
        for p in decoded.packet
        if p.HasField("track_descriptor") and p.track_descriptor.name.startswith("GPU ")
    }
    trace = read_trace(out)
    streams = (
        trace.of("gpu_kernel", "stream_id")
        .vstack(trace.of("gpu_graph", "stream_id"))
        .vstack(trace.of("gpu_memcpy", "stream_id"))["stream_id"]
        .unique()
        .to_list()
    )
    pid = trace.meta["command_pid"]
    assert sorted(tracks.values()) == sorted(f"GPU 0 stream {s} (pid {pid})" for s in streams)
    events = [p for p in decoded.packet if p.HasField("track_event")]
    gpu_slices = [
        p for p in events if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN and p.track_event.track_uuid in tracks
    ]
    copies = truth_frame(truth, "syncs").filter(pl.col("api").str.starts_with("cuMemcpy")).height
    assert len(gpu_slices) == truth["totals"]["launches"] + copies
    flow_end = {f: p.timestamp for p in gpu_slices for f in p.track_event.terminating_flow_ids}
    launches = [p for p in events if p.track_event.type == pb.TrackEvent.TYPE_INSTANT and p.track_event.flow_ids]
    assert len(launches) == truth["totals"]["launches"]
    # each launch's flow ends at its kernel, which starts where the truth says that launch ran
    expected = truth_frame(truth, "launches").sort("gpu_start_ns")
    ends = sorted(flow_end[p.track_event.flow_ids[0]] for p in launches)
    error = stated_error_ns(trace)
    assert max(abs(a - b) for a, b in zip(ends, expected["gpu_start_ns"].to_list())) <= error


def stated_error_ns(trace) -> int:
    """The clock alignment error bound the collector stated."""
    started = trace.of("gpu_collector", "state", "detail").filter(pl.col("state") == "started")
    return max(json.loads(d)["clock"]["error_ns"] for d in started["detail"])


def union_length(spans: list[tuple[int, int]]) -> int:
    """Independent of the code under test: a plain sweep over sorted spans."""
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def test_the_timeline_draws_when_the_gpu_was_busy(recording):
    out, truth = recording
    trace = read_trace(out)
    options = TimelineOptions()
    data = build_timeline(trace, options)
    assert data.gpu_lanes == [f"GPU 0 pid {trace.meta['command_pid']}"]
    window = choose_window(trace, False, False, None, None)
    # the GPU ran the truth's executions and the trace's copies (the truth logs a copy's end only)
    spans = list(truth_frame(truth, "launches").select("gpu_start_ns", "gpu_end_ns").iter_rows())
    spans += list(trace.of("gpu_memcpy", "ts_ns", "end_ns").iter_rows())
    clipped = [(max(s, window.lo_ns), min(e, window.hi_ns)) for s, e in spans if e > window.lo_ns and s < window.hi_ns]
    drawn = int((data.gpu["end_ns"] - data.gpu["start_ns"]).sum())
    # each drawn interval's two ends, each within the stated alignment error
    error = 2 * len(data.gpu) * stated_error_ns(trace)
    assert abs(drawn - union_length(clipped)) <= error
    assert build_timeline(trace, TimelineOptions(gpu=False)).gpu is None
