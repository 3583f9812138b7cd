"""GPU rows the reader cannot believe are damage, as other kinds' impossible rows are (issue 31, item 4): a kernel
that ends before it starts, or after the trace does (10^15 ns long printed "GPU busy 141125394.8%"; an end_ns of
2^64-1 ended report, report --json and diff in a polars traceback), correlation ids repeated within a process
(printed "-9,550 launches without their GPU work") and ids no API call holds (printed "no action needed, idle
0.000 s"). Each is made in a copy of a real cudasim recording with GPU activity; the truth is the rows the test
changed, and cudasim's truth.json for what the GPU really ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from launchgap.analysis.gpu_activity import collector_states
from launchgap.trace import Event, read_trace
from tests.conftest import CUDASIM
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf

LAUNCHGAP = [sys.executable, "-m", "launchgap.cli"]
U64_MAX = 2**64 - 1


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("gpu-damage")
    out, truth = folder / "run.lg", folder / "truth.json"
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
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
            "1",
            "--sync",
            "stream",
            "--truth",
            str(truth),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(truth.read_text())


def damaged_copy(original: Path, where: Path, change) -> tuple[Path, pl.DataFrame]:
    """A copy of ORIGINAL whose first gpu_kernel segment has CHANGE(frame) applied (same rows, same count);
    returns it and the rows CHANGE says it spoiled (their original values)."""
    copy = where / "damaged.lg"
    shutil.copytree(original, copy)
    segment = copy / "gpu_kernel" / "000001.parquet"
    frame = pl.read_parquet(segment)
    changed, spoiled = change(frame.with_row_index("row"))
    changed.drop("row").write_parquet(segment)
    return copy, frame.with_row_index("row").filter(pl.col("row").is_in(spoiled)).drop("row")


def alone(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("graph_id").is_null())


def every_kind_of_wrong(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[int]]:
    """Rows 10-16 spoiled: 10 lasts 10^15 ns, 11 ends at 2^64-1, 12 ends before it starts, 13 and 14 share 13's
    correlation id, 15 and 16 get ids no API call holds."""
    ts = frame["ts_ns"]
    end = frame["end_ns"].to_list()
    corr = frame["correlation_id"].to_list()
    end[10] = ts[10] + 10**15
    end[11] = U64_MAX
    end[12] = ts[12] - 1000
    corr[14] = corr[13]
    corr[15], corr[16] = 4_000_000_000, 4_000_000_001
    return frame.with_columns(pl.Series("end_ns", end, pl.UInt64), pl.Series("correlation_id", corr, pl.UInt32)), list(
        range(10, 17)
    )


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """The length of the union of [start, end) intervals (worked out plainly, for the truth)."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def report_json(trace: Path) -> dict:
    proc = subprocess.run([*LAUNCHGAP, "report", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def test_wrong_gpu_rows_are_left_out_and_said(recording, tmp_path):
    original, truth = recording
    damaged, spoiled = damaged_copy(original, tmp_path, every_kind_of_wrong)
    before, after = read_trace(original), read_trace(damaged)
    assert before.damage == ()
    kept = after.of(Event.GPU_KERNEL)
    key = ["pid", "ts_ns", "correlation_id"]
    # exactly the spoiled rows are gone, every other row is as it was
    assert kept.height == before.count(Event.GPU_KERNEL) - spoiled.height == after.count(Event.GPU_KERNEL)
    assert (
        kept.select(key)
        .sort(key)
        .equals(before.of(Event.GPU_KERNEL).join(spoiled.select(key), on=key, how="anti").select(key).sort(key))
    )
    said = " | ".join(after.damage)
    assert "3 of " in said and "ends before starts" in said, said
    assert "2 gpu_kernel rows share 1 correlation ids within their process" in said, said
    assert "gpu_kernel rows with 2 correlation ids that no API call of their process holds" in said, said


def test_the_report_of_a_trace_with_wrong_gpu_rows_is_whole_and_right(recording, tmp_path):
    original, truth = recording
    damaged, spoiled = damaged_copy(original, tmp_path, every_kind_of_wrong)
    whole, left = report_json(original), report_json(damaged)
    assert left["gpu_time"]["mode"] == "exact"
    assert left["gpu_time"]["busy_percent"] <= 100
    # the GPU time the left-out kernels ran, from the truth: what the busy time lost, and nothing more
    kernels = [
        (start, end)
        for start, end in pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
        .select("gpu_start_ns", "gpu_end_ns")
        .rows()
    ]
    starts = sorted(spoiled["ts_ns"].to_list())
    # the trace's starts are the truth's within the collector's stated clock error
    error = max(s.detail["clock"]["error_ns"] for s in collector_states(read_trace(original)) if s.state == "started")
    gone = [k for k in kernels if any(abs(k[0] - s) <= error for s in starts)]
    assert len(gone) == len(starts)
    lost_ns = union_ns(kernels) - union_ns([k for k in kernels if k not in gone])
    assert abs((whole["gpu_time"]["busy_ns"] - left["gpu_time"]["busy_ns"]) - lost_ns) <= 2 * error * len(gone)
    assert any("correlation ids" in d for d in left["trace"]["damage"])


@pytest.mark.parametrize("command", [["report"], ["report", "--json"]])
def test_an_end_at_the_top_of_a_u64_is_one_damaged_row_not_a_traceback(recording, tmp_path, command):
    original, _ = recording

    def top(frame):
        return frame.with_columns(
            pl.when(pl.col("row") == 3).then(pl.lit(U64_MAX, pl.UInt64)).otherwise(pl.col("end_ns")).alias("end_ns")
        ), [3]

    damaged, _ = damaged_copy(original, tmp_path, top)
    proc = subprocess.run([*LAUNCHGAP, *command, str(damaged)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "PanicException" not in proc.stderr
    diff = subprocess.run(
        [*LAUNCHGAP, "diff", str(original), str(damaged)], capture_output=True, text=True, timeout=300
    )
    assert diff.returncode == 0, diff.stderr
    assert "Traceback" not in diff.stderr


def numbered_by_the_runtime_call(original: Path, where: Path) -> Path:
    """A copy of ORIGINAL whose kernels carry the correlation id of the runtime call that made them, as NVIDIA's
    CUPTI numbers a kernel launched through cudaLaunchKernel (cudasim's stand-in numbers it with the driver
    call's: its runtime call is the gpu_api row just before, on the same thread, with the id one less)."""
    copy = where / "runtime-ids.lg"
    shutil.copytree(original, copy)
    api = read_trace(original).of(Event.GPU_API)
    runtime = set(
        zip(
            api.filter(pl.col("api") == "cudaLaunchKernel")["pid"],
            api.filter(pl.col("api") == "cudaLaunchKernel")["correlation_id"],
        )
    )
    for segment in sorted((copy / "gpu_kernel").glob("*.parquet")):
        frame = pl.read_parquet(segment)
        assert all((p, c - 1) in runtime for p, c in zip(frame["pid"], frame["correlation_id"]))
        frame.with_columns(pl.col("correlation_id") - 1).write_parquet(segment)
    return copy


def test_kernels_numbered_by_their_runtime_call_report_the_same_without_a_warning(recording, tmp_path):
    """Item 6: a polars warning ("Sortedness of columns cannot be checked when 'by' groups provided") on every GPU
    report whose kernels carry their runtime call's id, as real CUPTI's do."""
    original, _ = recording
    renumbered = numbered_by_the_runtime_call(original, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-m", "launchgap.cli", "report", "--json", str(renumbered)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    same, whole = json.loads(proc.stdout)["gpu_time"], report_json(original)["gpu_time"]
    assert (same["busy_ns"], same["idle_ns"], same["causes"]) == (whole["busy_ns"], whole["idle_ns"], whole["causes"])
