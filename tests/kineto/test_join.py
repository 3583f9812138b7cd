"""`launchgap report RUN.lg --kineto TRACE`: a recording made without GPU activity joined to the PyTorch
profiler's trace of the same run, which cudasim writes of itself (--kineto: its truth's calls and GPU work on
CLOCK_REALTIME, with a drift and a jitter, in either of Kineto's layouts). The truth is cudasim's truth.json
(every kernel's GPU interval and every launch's call on CLOCK_MONOTONIC) and the recording's switch rows,
as tests/analysis/test_gpu_time.py computes it: the GPU idle a CPU hog beside the launching thread caused
is the host part of each gap the thread spent runnable while the hog ran."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from launchgap.analysis.records import GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.cli import main
from launchgap.trace import Event, read_trace
from launchgap.trace.kineto_join import JoinError, join
from tests.analysis.test_gpu_time import (
    CPU,
    LAUNCH_BOUND,
    culprit,
    idle_by_culprit,
    intersect,
    overlap,
    runs_of,
    thread_states,
    truth_idle,
)
from tests.conftest import CUDASIM
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf


def record(
    tmp_path: Path,
    name: str,
    probes: bool,
    layout: str = "relative",
    extra: tuple[str, ...] = (),
    wrap: tuple[str, ...] = (),
) -> tuple[Path, dict, Path]:
    """cudasim on CPU (launch-bound, 40 tokens), recorded without GPU activity (with or without the CUDA probes),
    writing its truth and its profiler trace: (the recording, the truth, the profiler trace)."""
    out, truth, kineto = tmp_path / f"{name}.lg", tmp_path / f"{name}-truth.json", tmp_path / f"{name}.json.gz"
    command = [
        str(RECORDER),
        "-q",
        *([] if probes else ["--no-cuda-probes"]),
        "-o",
        str(out),
        "--",
        "taskset",
        "-c",
        str(CPU),
        *wrap,
        str(CUDASIM),
        "decode",
        "--quiet",
        *LAUNCH_BOUND,
        "--tokens",
        "40",
        "--truth",
        str(truth),
        "--kineto",
        str(kineto),
        "--kineto-layout",
        layout,
        *extra,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(truth.read_text()), kineto


def hog_truth(trace, truth: dict, hog: int) -> int:
    """The GPU idle the hog caused, from truth.json and the recording's switch rows alone."""
    gaps = truth_idle(truth)
    exposed = []
    for (tid,), mine in gaps.filter(pl.col("host_end") > pl.col("gap_start")).group_by("tid"):
        _, runnable = thread_states(trace, {tid})
        exposed += intersect(sorted(mine.select("gap_start", "host_end").iter_rows()), sorted(runnable))
    return overlap(exposed, runs_of(trace, hog))


@pytest.mark.parametrize("probes", [False, True], ids=["no-cuda-probes", "probes"])
@pytest.mark.parametrize("layout", ["relative", "absolute"])
def test_joined_the_gpu_time_a_hog_took_is_the_truths(tmp_path, layout, probes):
    """Acceptance: within 3% of the truth, on both layouts, the profiler's clock drifting 40 ppm from the
    recorder's with 150 ns of jitter (cudasim's defaults), with and without launch probes."""
    with culprit("hog") as hog:
        out, truth, kineto = record(tmp_path, "run", probes, layout)
    recording = read_trace(out)
    assert truth["kineto"]["drift_ppm"] == 40 and truth["kineto"]["jitter_ns"] == 150
    joined = join(recording, [kineto])
    report = build_report(joined)
    assert isinstance(report.gpu_time, GpuTimeExact)
    idle = idle_by_culprit(joined)
    named = int(idle.filter(pl.col("culprit_pid") == hog)["ns"].sum())
    expected = hog_truth(recording, truth, hog)
    assert expected > 0.05 * report.gpu_time.active_ns
    assert abs(named - expected) <= 0.03 * expected, (named, expected)
    # the exact answer as record --gpu-activity gives it: the hog named, a level, a prediction
    assert any(hog in c.pids for c in report.gpu_time.culprits)
    assert report.verdict.basis == "gpu_time" and report.verdict.level == "heavy"
    assert report.gpu_time.prediction is not None and report.gpu_time.prediction.gain_high_percent > 0
    (f,) = report.profiler
    assert f.layout == layout and f.clock.method == ("launches" if probes else "recorded_offset")
    assert report.gpu_activity.launches_joined == truth["totals"]["launches"]


def test_the_clock_fit_puts_every_kernel_where_the_truth_has_it(tmp_path):
    """Fitted to the probed launches, the profiler's kernels land on the truth's GPU intervals: every one
    within the fit's stated residual and the writer's jitter, and the slope undoes the writer's drift."""
    out, truth, kineto = record(tmp_path, "run", probes=True)
    joined = join(read_trace(out), [kineto])
    (summary,) = joined.meta["profiler"]
    clock = summary["clock"]
    ours = np.sort(joined.of(Event.GPU_KERNEL, "ts_ns")["ts_ns"].to_numpy().astype(np.int64))
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    expected = np.sort(launches["gpu_start_ns"].to_numpy().astype(np.int64))
    assert ours.size == expected.size
    stated = clock["residual_ns"] + 2 * truth["kineto"]["jitter_ns"]
    assert np.abs(ours - expected).max() <= stated
    # the slope undoes the writer's drift, to within what the residual allows over the window
    window = summary["window_end_ns"] - summary["window_start_ns"]
    assert abs(clock["slope_ppm"] + truth["kineto"]["drift_ppm"]) * 1e-6 * window <= stated


def test_another_runs_profiler_trace_is_refused_in_one_line(tmp_path):
    out, _, _ = record(tmp_path, "one", probes=False)
    other = tmp_path / "other.json"
    subprocess.run(
        [str(CUDASIM), "decode", "--quiet", "--tokens", "3", "--layers", "2", "--kineto", str(other)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    result = CliRunner().invoke(main, ["report", str(out), "--kineto", str(other)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not the same run" in lines[0] and "Traceback" not in result.output
    assert str(other) in lines[0] and str(out) in lines[0]


def test_one_file_a_rank_joined_by_process_and_device(tmp_path):
    """--procs 2: one file a process (cudasim gives process N device N), both joined; the same file twice
    is refused: one file per process and device."""
    out, truth, kineto = record(tmp_path, "ranks", probes=False, extra=("--procs", "2"))
    files = [f["path"] for f in truth["kineto"]["files"]]
    assert len(files) == 2 and all(Path(f).is_file() for f in files)
    report = build_report(join(read_trace(out), files))
    pids = {p["pid"]: p["device"] for p in truth["kineto"]["files"]}
    assert {(p.pid, p.device_id) for p in report.gpu_time.processes} == set(pids.items())
    assert sorted(f.pid for f in report.profiler) == sorted(pids)
    with pytest.raises(JoinError, match="one profiler file per process and device"):
        join(read_trace(out), [files[0], files[0]])


def test_a_profiler_in_its_own_pid_namespace_is_found_by_its_namespace_ids(tmp_path):
    """In a container the profiler's pids and tids are its namespace's: cudasim run in a new pid namespace
    writes its own ids (pid 1), the recorder the host's and each task's namespace ids beside them."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    with culprit("hog") as hog:
        out, truth, kineto = record(tmp_path, "ns", probes=False, wrap=("unshare", "--pid", "--fork"))
    (process,) = truth["processes"]
    assert process["pid"] == 1  # cudasim's own view, inside its namespace
    recording = read_trace(out)
    # the host's own pid 1 (init) is there too, its ids the same in both: cudasim's are not
    ids = recording.of(Event.TASK_CGROUP, "pid", "tid", "ns_pid", "ns_tid").filter(
        (pl.col("ns_pid") == 1) & (pl.col("pid") != 1)
    )
    assert ids.height and ids["pid"].n_unique() == 1
    joined = join(recording, [kineto])
    (f,) = joined.meta["profiler"]
    assert f["profiler_pid"] == 1 and f["pid"] == int(ids["pid"][0])
    idle = idle_by_culprit(joined)
    assert int(idle.filter(pl.col("culprit_pid") == hog)["ns"].sum()) > 0


def test_the_recording_keeps_its_clock_readings_at_start_and_end(tmp_path):
    out, _, _ = record(tmp_path, "clock", probes=False)
    clock = json.loads((out / "meta.json").read_text())["clock"]["realtime_minus_monotonic_ns"]
    start, end = clock["start"], clock["end"]
    assert end["monotonic_ns"] > start["monotonic_ns"] and clock["stepped"] is False
    assert 0 < start["uncertainty_ns"] < 1_000_000 and 0 < end["uncertainty_ns"] < 1_000_000
    assert json.loads((out / "meta.json").read_text())["options"]["cuda_probes"] is False
    assert read_trace(out).count(Event.LAUNCH) == 0
