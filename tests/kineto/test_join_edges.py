"""Parts of issue 33 the other kineto tests leave alone: the join's refusals of another run's profiler file
(a window wholly outside the recording, a thread calling before the recording's thread existed), a system
clock stepped during the recording, the device taken from the GPU events and not from the "GPU N" process
labels, a profiler window that covers only part of the recording, and a GPU event with no device.

Each test's truth is independent of the code under test: cudasim's truth.json (its window, every kernel's GPU
start and the writer's clock on CLOCK_MONOTONIC), the recording's own meta.json / end.json / switch rows, or a
profiler file written by hand here whose figures are worked out by hand."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import Event, open_trace, read_trace
from launchgap.trace.kineto import read_profiler_trace
from launchgap.trace.kineto_join import join
from tests.recorder.conftest import needs_bpf

MS = 1_000_000


# --- helpers ------------------------------------------------------------------------------------------------


def load_kineto(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def write_kineto(doc: dict, path: Path) -> Path:
    """DOC as a profiler file. Relative `ts` values (microseconds from baseTimeNanoseconds, three decimals) are
    small enough that a float keeps them exactly, and Python writes a float back as its shortest decimal."""
    path.write_text(json.dumps(doc, indent=1))
    return path


def refused(run_lg: Path, kineto: Path) -> str:
    """`launchgap report RUN.lg --kineto FILE`: exit 2, one line, no traceback; the line."""
    result = CliRunner().invoke(main, ["report", str(run_lg), "--kineto", str(kineto)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def report_json(*args: str) -> dict:
    result = CliRunner().invoke(main, ["report", *args, "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def recording_span(run_lg: Path) -> tuple[int, int]:
    """The recording's start and end as its own files give them (meta.json start_ns, end.json end_ns)."""
    meta = json.loads((run_lg / "meta.json").read_text())
    end = json.loads((run_lg / "end.json").read_text())
    return int(meta["start_ns"]), int(end["end_ns"])


def writer_ns(truth: dict, monotonic_ns: int) -> int:
    """Where cudasim's profiler writer puts a CLOCK_MONOTONIC time: its REALTIME offset plus its drift from t0
    (truth.json's kineto; jitter aside)."""
    k = truth["kineto"]
    return monotonic_ns + k["offset_ns"] + round(k["drift_ppm"] * 1e-6 * (monotonic_ns - k["t0_ns"]))


def to_file_us(doc: dict, profiler_ns: int) -> float:
    """A profiler time as a relative file's `ts` (microseconds from baseTimeNanoseconds, three decimals)."""
    return round((profiler_ns - doc["baseTimeNanoseconds"]) / 1000, 3)


def is_work(e: dict) -> bool:
    return e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One cudasim run recorded without CUDA probes, with its truth and its (relative-layout) profiler file."""
    from tests.kineto.test_join import record

    return record(tmp_path_factory.mktemp("edges"), "run", probes=False)


def copy_of(run_lg: Path, tmp_path: Path) -> Path:
    out = tmp_path / run_lg.name
    shutil.copytree(run_lg, out)
    return out


# --- 1. another run's profiler file, refused in one line ------------------------------------------------------


@needs_bpf
@pytest.mark.parametrize("hours", [1, -1], ids=["after", "before"])
def test_a_profiler_window_wholly_outside_the_recording_is_refused_in_one_line(recorded, tmp_path, hours):
    """The run's own file, every time moved an hour (baseTimeNanoseconds +/- 3600 s). Truth: the file's window
    is cudasim's run (truth.json start_ns..end_ns) moved the hour; the recording covers meta.json start_ns to
    end.json end_ns. The line names both files, says where the window lies and how far away, and how much the
    recording covers."""
    out, truth, kineto = recorded
    shift = hours * 3600 * 10**9
    doc = load_kineto(kineto)
    doc["baseTimeNanoseconds"] += shift
    moved = write_kineto(doc, tmp_path / "moved.json")
    line = refused(out, moved)
    start, end = recording_span(out)
    assert "not the same run" in line and str(moved) in line and str(out) in line
    where = "after the recording ended" if hours > 0 else "before the recording began"
    assert f"lies wholly {where}" in line, line
    assert f"the recording covers {(end - start) / 1e9:.3f} s" in line, line
    window = truth["end_ns"] - truth["start_ns"]
    (length,) = re.findall(r"profiler's window \(([0-9.]+) s\)", line)
    assert abs(float(length) - window / 1e9) <= 0.0015, (length, window)
    (away,) = re.findall(r"\(([0-9.]+) s away\)", line)
    expected = (truth["start_ns"] + shift - end) if hours > 0 else (start - (truth["end_ns"] + shift))
    assert abs(float(away) - expected / 1e9) <= 0.0015, (away, expected)


@needs_bpf
def test_a_call_before_the_recordings_thread_existed_is_refused_in_one_line(recorded, tmp_path):
    """The run's own file, its thread's first CUDA call moved to 2 ms before the recording first saw that thread
    (its first switch or wakeup row: the recording's truth of when the thread existed), placed on the profiler's
    clock by truth.json's writer clock. The line names both files, the thread, and by how much it came early."""
    out, truth, kineto = recorded
    recording = read_trace(out)
    start, _ = recording_span(out)
    (process,) = truth["processes"]
    (thread,) = process["threads"]
    tid = thread["tid"]
    born = min(
        int(recording.of(kind, "tid", "ts_ns").filter(pl.col("tid") == tid)["ts_ns"].min() or 2**63)
        for kind in (Event.SWITCH, Event.WAKEUP, Event.WAKEUP_NEW)
    )
    # the refusal is only possible when the thread appeared after the recording began (else nothing can be said)
    assert born > start + 1_200_000, f"cudasim's thread was seen {(born - start) / 1e6:.3f} ms into the recording"
    doc = load_kineto(kineto)
    calls = [e for e in doc["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["tid"] == tid]
    first = min(calls, key=lambda e: e["ts"])
    first["ts"] = to_file_us(doc, writer_ns(truth, born - 2 * MS))
    early = write_kineto(doc, tmp_path / "early.json")
    line = refused(out, early)
    assert "not the same run" in line and str(early) in line and str(out) in line
    assert f"its thread {tid} made a CUDA call 0.002 s before the recording's thread {tid} existed" in line, line


# --- 2. the system clock stepped during the recording --------------------------------------------------------------


@needs_bpf
def test_a_stepped_system_clock_is_said_and_the_offset_interpolated(recorded, tmp_path):
    """meta.json's clock readings edited: the end reading's REALTIME - MONOTONIC 50 ms larger than the start's
    (a step: far past 500 ppm of the 0.3 s between) and `stepped` true. docs/gpu-time.md, PyTorch users: the join
    says so (profiler[].clock.stepped) and puts the profiler's times on the recording's clock by that offset
    interpolated between the two readings. Truth: each kernel's GPU start in truth.json, moved back by the step's
    share at that time; held to the accuracy the unedited recording's join has against the same truth."""
    out, truth, kineto = recorded
    step = 50 * MS
    edited = copy_of(out, tmp_path)
    meta = json.loads((edited / "meta.json").read_text())
    clock = meta["clock"]["realtime_minus_monotonic_ns"]
    assert clock["stepped"] is False
    clock["end"]["offset_ns"] = clock["start"]["offset_ns"] + step
    clock["stepped"] = True
    (edited / "meta.json").write_text(json.dumps(meta))
    m0, m1 = clock["start"]["monotonic_ns"], clock["end"]["monotonic_ns"]

    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    expected = np.sort(launches["gpu_start_ns"].to_numpy().astype(np.int64))

    def kernels(recording_path: Path) -> tuple[np.ndarray, dict]:
        joined = join(read_trace(recording_path), [kineto])
        (summary,) = joined.meta["profiler"]
        return np.sort(joined.of(Event.GPU_KERNEL, "ts_ns")["ts_ns"].to_numpy().astype(np.int64)), summary

    plain, plain_summary = kernels(out)
    stepped, summary = kernels(edited)
    assert plain_summary["clock"]["stepped"] is False
    assert summary["clock"]["stepped"] is True and summary["clock"]["method"] == "recorded_offset"
    assert plain.size == stepped.size == expected.size
    accuracy = int(np.abs(plain - expected).max())
    assert accuracy < 50_000  # the unedited join is close to the truth: the step below is far larger
    shift = np.round(step * (expected - m0) / (m1 - m0)).astype(np.int64)
    assert shift.min() > 10 * accuracy  # the step moves every kernel by far more than the join's error
    assert np.abs(stepped - (expected - shift)).max() <= accuracy + 2

    # the report, as JSON, says it
    (f,) = report_json(str(edited), "--kineto", str(kineto))["profiler"]
    assert f["clock"]["stepped"] is True


# --- 3. the device from the GPU events, not the process labels ------------------------------------------------------


def hand_trace(tmp_path: Path, gpu_events: list[dict], name: str = "hand.json") -> Path:
    """A relative-layout profiler file: process 42's cudaLaunchKernel calls on thread 43 (correlations 1, 2, 3)
    and the GPU events given, with the "GPU 0" / "GPU 1" process labels Kineto writes for pids 0 and 1."""
    calls = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 42,
            "tid": 43,
            "ts": ts,
            "dur": 1.0,
            "args": {"correlation": c},
        }
        for c, ts in ((1, 1.0), (2, 3.0), (3, 5.0))
    ]
    labels = [
        ev
        for pid in (0, 1)
        for ev in (
            {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python"}},
            {"name": "process_labels", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": f"GPU {pid}"}},
        )
    ]
    window = [
        {
            "ph": "X",
            "cat": "Trace",
            "ts": 0.5,
            "dur": 20.0,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        }
    ]
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": calls + gpu_events + labels + window,
    }
    return write_kineto(doc, tmp_path / name)


def kernel(correlation: int, ts: float, dur: float, pid: int, args: dict | None) -> dict:
    event = {"ph": "X", "cat": "kernel", "name": f"k{correlation}", "pid": pid, "tid": 7, "ts": ts, "dur": dur}
    if args is not None:
        event["args"] = args
    return event


def test_the_device_is_the_gpu_events_not_the_process_label(tmp_path):
    """Two kernels on device 5 (args.device), filed under pids 0 and 1, which the process labels call "GPU 0"
    and "GPU 1". By hand: device 5 only, busy 1.000 + 2.500 us = 3,500 ns, idle between them 6.0 - 5.0 us =
    1,000 ns; the report and the imported trace put both on device 5, none on 0 or 1."""
    path = hand_trace(
        tmp_path,
        [
            kernel(1, 4.0, 1.0, 0, {"device": 5, "stream": 7, "correlation": 1}),
            kernel(2, 6.0, 2.5, 1, {"device": 5, "stream": 7, "correlation": 2}),
        ],
    )
    run = read_profiler_trace(path)
    assert run.devices == [5] and run.gpu["device_id"].to_list() == [5, 5]

    report = build_report(open_trace(path))
    assert [(p.pid, p.device_id, p.busy_ns, p.idle_ns) for p in report.gpu_time.processes] == [(42, 5, 3500, 1000)]
    (f,) = report.profiler
    assert f.devices == [5]

    as_json = report_json(str(path))
    assert [(p["pid"], p["device_id"]) for p in as_json["gpu_time"]["processes"]] == [(42, 5)]

    out = tmp_path / "hand.lg"
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    imported = read_trace(out)
    assert imported.of(Event.GPU_KERNEL, "device_id")["device_id"].to_list() == [5, 5]
    assert imported.meta["profiler"][0]["devices"] == [5]


# --- 4. a profiler window over part of the recording ------------------------------------------------------------


@needs_bpf
def test_a_profiler_window_over_part_of_the_recording_is_said(recorded, tmp_path):
    """The run's own file cut to the middle half of cudasim's run: its `Trace` span and end mark moved there,
    only the calls and GPU work that lie wholly inside kept. Truth: that half is (truth.json end_ns - start_ns) / 2
    of the recording's meta.json start_ns..end.json end_ns; report --json's profiler[].window_percent is that
    share, and the window lies where truth.json puts that half on the recording's clock."""
    out, truth, kineto = recorded
    doc = load_kineto(kineto)
    quarter = (truth["end_ns"] - truth["start_ns"]) // 4
    lo_ns, hi_ns = truth["start_ns"] + quarter, truth["end_ns"] - quarter
    lo, hi = to_file_us(doc, writer_ns(truth, lo_ns)), to_file_us(doc, writer_ns(truth, hi_ns))
    events = []
    for e in doc["traceEvents"]:
        # wholly inside: a call or kernel kept across the cut would stretch the profiler's window to its end (its
        # window runs to the last event's end), by as long as a preempted call lasts under load
        if is_work(e) and not (lo <= e["ts"] and e["ts"] + e.get("dur", 0) <= hi):
            continue
        if e.get("cat") == "Trace":
            e = {**e, "ts": lo, "dur": round(hi - lo, 3)}
        elif e.get("name") == "Record Window End":
            e = {**e, "ts": hi}
        events.append(e)
    kept = sum(1 for e in events if e.get("cat") == "kernel")
    assert 0 < kept < sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")
    part = write_kineto({**doc, "traceEvents": events}, tmp_path / "part.json")

    start, end = recording_span(out)
    as_json = report_json(str(out), "--kineto", str(part))
    (f,) = as_json["profiler"]
    share = 100.0 * (hi_ns - lo_ns) / (end - start)
    assert share < 50
    assert abs(f["window_percent"] - share) <= 0.01 * share, (f["window_percent"], share)
    # where: within the writer's jitter and drift, and the recorded offset's error, of the truth's times
    assert abs(f["window_start_ns"] - lo_ns) <= 20_000 and abs(f["window_end_ns"] - hi_ns) <= 20_000
    assert f["kernels"] == kept
    # a window inside the recording is no caveat (only one that runs past its ends is)
    assert not any(str(part) in c for c in as_json["trace"]["caveats"])


# --- 5. a GPU event with no device ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [{"stream": 7, "correlation": 3}, {"device": None, "stream": 7, "correlation": 3}, None],
    ids=["no-device-key", "null-device", "no-args"],
)
def test_a_gpu_event_without_a_device_is_left_out_and_counted(tmp_path, args):
    """docs/gpu-time.md: "Events with no readable ts, a negative duration or no device are left out and counted
    as damage" (and the device comes from the GPU event, never from its pid, the "GPU N" label). By hand: the
    third kernel (pid 0, no device) is left out, the two on device 5 stay (busy 3,500 ns), and the damage is
    one line in the report: 1 GPU event without a device. A file whose only GPU work has no device has no GPU
    work: one line, exit 2."""
    good = [
        kernel(1, 4.0, 1.0, 0, {"device": 5, "stream": 7, "correlation": 1}),
        kernel(2, 6.0, 2.5, 0, {"device": 5, "stream": 7, "correlation": 2}),
    ]
    path = hand_trace(tmp_path, [*good, kernel(3, 10.0, 1.0, 0, args)])
    run = read_profiler_trace(path)
    assert run.damage == {"GPU events without a device": 1}
    assert run.devices == [5] and run.gpu.height == 2

    as_json = report_json(str(path))
    assert as_json["trace"]["damage"] == ["1 GPU events without a device (left out)"]
    assert [(p["device_id"], p["busy_ns"]) for p in as_json["gpu_time"]["processes"]] == [(5, 3500)]
    (f,) = as_json["profiler"]
    assert f["damage"] == {"GPU events without a device": 1} and f["kernels"] == 2

    alone = hand_trace(tmp_path, [kernel(3, 10.0, 1.0, 0, args)], name="alone.json")
    result = CliRunner().invoke(main, ["report", str(alone)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "no GPU work" in lines[0] and str(alone) in lines[0], lines
