"""Every logical launch is recorded exactly once, with its arguments, on
every API path, from several threads and forked children."""

from __future__ import annotations

import polars as pl
import pytest

from launchgap.trace import Event
from tests.conftest import CUDASIM_STATIC
from tests.recorder.conftest import cudasim_command, needs_bpf

pytestmark = needs_bpf

ARGS = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem", "stream", "func"]


def truth_launches(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")


def truth_syncs(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(truth["syncs"], schema=truth["sync_columns"], orient="row")


def per_thread_sequence(frame: pl.DataFrame, order: str, api_column: str = "api") -> dict:
    out = {}
    for (pid, tid), group in frame.sort(order).group_by(["pid", "tid"], maintain_order=True):
        out[(int(pid), int(tid))] = group.select(api_column, *ARGS).rows()
    return out


PATHS = {
    "runtime-shared": ([], None),
    "runtime-static": ([], CUDASIM_STATIC),
    "driver-only": (["--api", "driver"], None),
    "ex": (["--launch", "ex"], None),
    "graph": (["--api", "driver", "--launch", "graph"], None),
    "cooperative": (["--launch", "coop"], None),
    "ptsz-mixed": (["--ptsz", "--launch", "mixed", "--sync", "mixed"], None),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_each_launch_is_recorded_once_with_its_arguments(record, path):
    args, binary = PATHS[path]
    command = cudasim_command(
        "--tokens", "4", "--threads", "2", "--procs", "2", *args, **({"binary": binary} if binary else {})
    )
    run = record(command)
    truth, trace = run.truth, run.trace
    launches = trace.of(Event.LAUNCH)
    expected = truth_launches(truth)

    assert launches.height == truth["totals"]["launches"]
    if path != "ptsz-mixed":  # mixed draws graphs at random; its total comes from the truth alone
        per_token = 2 + 28 if path == "graph" else 2 + 28 * 17
        assert launches.height == 2 * 2 * 4 * per_token
    counts = dict(launches.group_by("api").len().iter_rows())
    assert counts == truth["totals"]["launches_by_api"]
    # four launching threads in two forked children, none of them a main thread
    assert len(per_thread_sequence(launches, "ts_ns")) == 4
    assert per_thread_sequence(
        launches.with_columns(pl.col(c).cast(pl.Int64) for c in ARGS), "ts_ns"
    ) == per_thread_sequence(expected.with_columns(pl.col(c).cast(pl.Int64) for c in ARGS), "seq")
    assert launches["runtime_api"].null_count() == launches.height  # driver probes only by default


@pytest.mark.parametrize("path", ["runtime-shared", "runtime-static"])
def test_api_names_merge_runtime_and_driver_into_one_launch(record, path):
    args, binary = PATHS[path]
    command = cudasim_command(
        "--tokens", "3", "--launch", "mixed", "--sync", "mixed", **({"binary": binary} if binary else {})
    )
    run = record(command, "--api-names")
    truth, launches = run.truth, run.trace.of(Event.LAUNCH)
    expected = truth_launches(truth)
    assert launches.height == truth["totals"]["launches"]
    pairs = lambda f: sorted(f.group_by(["api", "runtime_api"]).len().rows())  # noqa: E731
    assert pairs(launches) == pairs(expected)
    assert launches["runtime_api"].null_count() == 0
    syncs = run.trace.of(Event.SYNC)
    assert pairs(syncs) == pairs(truth_syncs(truth))


def test_syncs_are_recorded_with_their_duration(record):
    run = record(cudasim_command("--tokens", "6", "--sync", "mixed", "--threads", "2"))
    truth, syncs = run.truth, run.trace.of(Event.SYNC)
    expected = truth_syncs(truth)
    assert syncs.height == expected.height == 2 * (6 + 1)
    assert dict(syncs.group_by("api").len().iter_rows()) == truth["totals"]["syncs_by_api"]
    got = syncs.sort("tid", "ts_ns").select("tid", "api", "duration_ns", "bytes").rows()
    want = (
        expected.with_columns((pl.col("t_exit_ns") - pl.col("t_enter_ns")).alias("d"))
        .sort("tid", "seq")
        .select("tid", "api", "d", "bytes")
        .rows()
    )
    for (tid, api, recorded, nbytes), (tid2, api2, inside, nbytes2) in zip(got, want):
        assert (tid, api, nbytes) == (tid2, api2, nbytes2)
        # the probes enclose the function: never shorter, and only by the probe cost longer
        assert inside <= recorded < inside + 2_000_000


def test_probe_report_names_the_cheap_emulated_case(record):
    run = record(cudasim_command("--tokens", "1"))
    uprobes = [p for p in run.trace.meta["probes"] if p["kind"] == "uprobe"]
    assert {p["function"] for p in uprobes} >= {
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuGraphLaunch",
        "cuStreamSynchronize",
        "cuMemcpyDtoH_v2",
    }
    assert all(
        p["attached"] and p["probe_cost"] == "emulated" and p["first_instruction"] == "push %rbp" for p in uprobes
    )
    assert "warning" not in run.proc.stderr


def test_libraries_are_found_behind_wrapper_commands(record):
    # taskset, nice, env, python -m ...: the real program is a later argument
    command = [
        "env",
        "LAUNCHGAP_TEST=1",
        "taskset",
        "-c",
        str(sorted(__import__("os").sched_getaffinity(0))[0]),
        *cudasim_command("--tokens", "2"),
    ]
    run = record(command)
    assert run.trace.of(Event.LAUNCH).height == run.truth["totals"]["launches"] == 2 * 478
