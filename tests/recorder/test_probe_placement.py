"""Each probe sits on the first instruction the kernel emulates: past the
compare of NVIDIA-shaped dispatch thunks, past endbr64. Recorded on the
driver-shaped stand-ins, every launch and sync is exact against cudasim's
truth; on NVIDIA's real driver and runtime (no GPU: every call fails at
once, but the probes fire), every call is exact against what the program
made. A function with nothing to move over keeps its entry probe, and the
recorder says what that costs."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from launchgap.views.report_json import report_json
from tests.conftest import LIBCUDA, LIBCUDA_CET, LIBCUDA_THUNK, REAL_LIBCUDA, REAL_LIBCUDART_12, REPO, needs_real
from tests.recorder.conftest import RECORDER, cudasim_command, needs_bpf
from tests.recorder.test_cuda_launches import ARGS, PATHS, per_thread_sequence, truth_launches, truth_syncs

pytestmark = needs_bpf

# shape -> (library, where the probe lands, the probed instruction, what is moved over)
SHAPES = {
    "thunk": (LIBCUDA_THUNK, 10, r"je 0x[0-9a-f]+", [r"cmpl \$0x321cba00,0x[0-9a-f]+\(%rip\)"]),
    "cet": (LIBCUDA_CET, 4, r"push %rbp", [r"endbr64"]),
}
DRIVER_PROBES = 16  # cuda_api.rs: every driver entry point launchgap probes


def shaped_env(library: Path) -> dict:
    return {**os.environ, "LD_LIBRARY_PATH": str(library.parent)}


def probes_on(meta: dict, library: Path) -> list[dict]:
    return [p for p in meta["probes"] if p["kind"] == "uprobe" and Path(p["file"]) == library.resolve()]


def assert_placed(probes: list[dict], offset: int, probed: str, moved_over: list[str]) -> None:
    assert len(probes) == DRIVER_PROBES
    for p in probes:
        assert p["attached"] and p["probe_cost"] == "emulated", p
        assert p["placed_offset"] == offset, p
        assert re.fullmatch(probed, p["probed_instruction"]), p
        assert len(p["moved_over"]) == len(moved_over)
        assert all(re.fullmatch(want, got) for want, got in zip(moved_over, p["moved_over"])), p
        assert p["first_instruction"] == p["moved_over"][0]


# every path of test_cuda_launches, and the driver API's Ex, cooperative and _ptsz entry points too
SHAPED_PATHS = {
    **PATHS,
    "driver-ptsz-mixed": (["--api", "driver", "--ptsz", "--launch", "mixed", "--sync", "mixed"], None),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("path", list(SHAPED_PATHS))
def test_every_api_path_is_exact_on_the_driver_shaped_stand_ins(record, shape, path):
    library, offset, probed, moved_over = SHAPES[shape]
    args, binary = SHAPED_PATHS[path]
    command = cudasim_command(
        "--tokens", "3", "--threads", "2", "--procs", "2", *args, **({"binary": binary} if binary else {})
    )
    run = record(command, env=shaped_env(library))
    truth, trace = run.truth, run.trace
    launches = trace.of(Event.LAUNCH)
    assert launches.height == truth["totals"]["launches"]
    assert dict(launches.group_by("api").len().iter_rows()) == truth["totals"]["launches_by_api"]
    cast = lambda f: f.with_columns(pl.col(c).cast(pl.Int64) for c in ARGS)  # noqa: E731
    assert per_thread_sequence(cast(launches), "ts_ns") == per_thread_sequence(cast(truth_launches(truth)), "seq")
    assert len(per_thread_sequence(launches, "ts_ns")) == 4  # two threads in each of two forked children
    syncs = trace.of(Event.SYNC)
    assert syncs.height == truth_syncs(truth).height
    assert dict(syncs.group_by("api").len().iter_rows()) == truth["totals"]["syncs_by_api"]
    # the probes sit past the compare (or endbr64), on an emulated instruction; no warning
    assert_placed(probes_on(trace.meta, library), offset, probed, moved_over)
    assert "warning" not in run.proc.stderr


@pytest.mark.parametrize("path", ["runtime-shared", "runtime-static"])
def test_api_names_on_the_thunk_driver(record, path):
    args, binary = PATHS[path]
    command = cudasim_command(
        "--tokens", "3", "--launch", "mixed", "--sync", "mixed", **({"binary": binary} if binary else {})
    )
    run = record(command, "--api-names", env=shaped_env(LIBCUDA_THUNK))
    truth, launches = run.truth, run.trace.of(Event.LAUNCH)
    pairs = lambda f: sorted(f.group_by(["api", "runtime_api"]).len().rows())  # noqa: E731
    assert launches.height == truth["totals"]["launches"]
    assert pairs(launches) == pairs(truth_launches(truth))
    assert pairs(run.trace.of(Event.SYNC)) == pairs(truth_syncs(truth))
    assert run.trace.of(Event.RUNTIME_ONLY).is_empty()  # every runtime call reached the driver
    assert "warning" not in run.proc.stderr


def truth_runtime_errors(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(truth["runtime_errors"], schema=truth["runtime_error_columns"], orient="row")


@pytest.mark.parametrize("library", [LIBCUDA, LIBCUDA_THUNK], ids=["frame-pointer", "thunk"])
@pytest.mark.parametrize("path", ["runtime-shared", "runtime-static", "ex", "cooperative"])
def test_launches_the_runtime_refuses_are_recorded_with_their_return_code(record, library, path):
    args, binary = PATHS[path]
    command = cudasim_command(
        "--tokens", "3", "--threads", "2", "--invalid-every", "37", *args, **({"binary": binary} if binary else {})
    )
    run = record(command, "--api-names", env=shaped_env(library))
    truth, trace = run.truth, run.trace
    refused = truth_runtime_errors(truth)
    assert refused.height == truth["totals"]["runtime_errors"] == 2 * (3 * 28 * 17 // 37)
    recorded = trace.of(Event.RUNTIME_ONLY)
    per_thread = lambda f: sorted(f.group_by("tid", "runtime_api", "return_code").len().rows())  # noqa: E731
    assert per_thread(recorded) == per_thread(refused)
    assert set(recorded["return_code"].to_list()) == {9}  # cudaErrorInvalidConfiguration
    # each row brackets the moment the runtime logged its refusal (both on CLOCK_MONOTONIC)
    spans = recorded.sort("tid", "ts_ns").select("tid", "ts_ns", "duration_ns").rows()
    logged = refused.sort("tid", "seq").select("tid", "t_ns").rows()
    for (tid, start, duration), (tid2, at) in zip(spans, logged, strict=True):
        assert tid == tid2 and start <= at <= start + duration
    # the launches that went through are exactly the truth's, none doubled or lost
    assert trace.of(Event.LAUNCH).height == truth["totals"]["launches"]
    failed = report_json(trace)["overview"]["failed_launches"]
    assert failed["recorded"] and failed["count"] == refused.height
    assert failed["by"] == [{"runtime_api": refused["runtime_api"][0], "return_code": 9, "count": refused.height}]


def test_without_api_names_the_report_says_failed_launches_were_not_recorded(record):
    run = record(cudasim_command("--tokens", "2", "--invalid-every", "50"))
    assert run.truth["totals"]["runtime_errors"] == 2 * 28 * 17 // 50
    assert run.trace.of(Event.RUNTIME_ONLY).is_empty()
    assert report_json(run.trace)["overview"]["failed_launches"] == {
        "recorded": False,
        "count": 0,
        "by": [],
        "runtime_only_calls": 0,
    }


# ---- a library whose entry points give the placement nothing, or little, to work with

ODD_ENTRIES = r"""
    .text
    .globl cuLaunchKernel, cuLaunchKernelEx, cuGraphLaunch, cuStreamSynchronize
    .type cuLaunchKernel, @function
cuLaunchKernel:            /* moves the stack first: nothing to move over */
    sub $8, %rsp
    add $8, %rsp
    ret
    .size cuLaunchKernel, . - cuLaunchKernel
    .type cuLaunchKernelEx, @function
cuLaunchKernelEx:          /* a test, then a lock-prefixed add: the test cannot be left alone */
    test %edi, %edi
    lock incl counter(%rip)
    ret
    .size cuLaunchKernelEx, . - cuLaunchKernelEx
    .type cuGraphLaunch, @function
cuGraphLaunch:             /* the kernel refuses to probe a lock prefix */
    lock incl counter(%rip)
    ret
    .size cuGraphLaunch, . - cuGraphLaunch
    .type cuStreamSynchronize, @function
cuStreamSynchronize:       /* endbr64 and a compare, then a branch the kernel emulates */
    endbr64
    cmpl $0, counter(%rip)
    je 1f
1:  ret
    .size cuStreamSynchronize, . - cuStreamSynchronize
    .local counter
    .comm counter, 4, 4
    .section .note.GNU-stack, "", @progbits
"""


@pytest.fixture(scope="module")
def odd_library(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("odd")
    (work / "odd.s").write_text(ODD_ENTRIES)
    library = work / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-o", str(library), str(work / "odd.s")], check=True)
    return library


def test_a_function_with_no_movable_prefix_keeps_its_entry_probe_and_a_warning(tmp_path, odd_library):
    out = tmp_path / "x.lg"
    proc = subprocess.run(
        [str(RECORDER), "-o", str(out), "--cuda-lib", str(odd_library), "--", "true"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    probes = {p["function"]: p for p in probes_on(read_trace(out).meta, odd_library) if "placed_offset" in p}
    placed = {name: (p["placed_offset"], p["probed_instruction"], p["probe_cost"]) for name, p in probes.items()}
    assert placed["cuLaunchKernel"] == (0, "sub $0x8,%rsp", "single-stepped")
    assert placed["cuLaunchKernelEx"] == (0, "test %edi,%edi", "single-stepped")
    offset, instruction, cost = placed["cuGraphLaunch"]
    assert (offset, cost) == (0, "never-fires") and instruction.startswith("lock incl ")
    offset, instruction, cost = placed["cuStreamSynchronize"]
    assert (offset, cost) == (4 + 7, "emulated") and instruction.startswith("je ")  # past endbr64 and the cmpl
    assert probes["cuStreamSynchronize"]["moved_over"][0] == "endbr64"
    warnings = [line for line in proc.stderr.splitlines() if "warning:" in line and str(odd_library) in line]
    lib = str(odd_library)
    assert sorted(warnings) == sorted(
        [
            f"launchgap-record: warning: cuGraphLaunch in {lib} begins with {placed['cuGraphLaunch'][1]}, which the kernel "
            "refuses to probe: the attach succeeds but the probe never fires",
            f"launchgap-record: warning: cuLaunchKernel in {lib} begins with sub $0x8,%rsp, which the kernel single-steps, "
            "and no instruction the kernel emulates follows within what can be moved over: each hit costs 10-15x an "
            "emulated probe",
            f"launchgap-record: warning: cuLaunchKernelEx in {lib} begins with test %edi,%edi, which the kernel "
            "single-steps, and no instruction the kernel emulates follows within what can be moved over: each hit costs "
            "10-15x an emulated probe",
        ]
    )


# ---- NVIDIA's real driver and runtime


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("programs")
    for name in ("call_driver", "call_runtime"):
        subprocess.run(
            [
                "cc",
                "-O2",
                "-Wall",
                "-Werror",
                "-I",
                str(REPO / "workloads" / "cudasim" / "include"),
                "-o",
                str(out / name),
                str(Path(__file__).parent / "programs" / f"{name}.c"),
                "-ldl",
            ],
            check=True,
        )
    return out


@needs_real(REAL_LIBCUDA)
def test_every_call_through_nvidias_driver_is_recorded_with_its_arguments(record, programs):
    n = 3000
    run = record(
        [str(programs / "call_driver"), str(REAL_LIBCUDA), str(n)], "--cuda-lib", str(REAL_LIBCUDA), truth=False
    )
    assert run.proc.stdout.strip() == f"returned 3: {4 * n}"  # CUDA_ERROR_NOT_INITIALIZED: no cuInit
    pid = run.trace.meta["command_pid"]
    launches = run.trace.of(Event.LAUNCH).filter(pl.col("pid") == pid)
    by_call = (
        launches.group_by(
            "api", "func", "stream", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem"
        )
        .len()
        .sort("api")
        .rows()
    )
    assert by_call == [
        ("cuGraphLaunch", 0x4321, 0x5678, 0, 0, 0, 0, 0, 0, 0, n),
        ("cuLaunchKernel", 0x1234, 0x5678, 7, 2, 1, 128, 1, 1, 4096, n),
        ("cuLaunchKernelEx", 0x1234, 0x5678, 9, 3, 1, 256, 1, 1, 8192, n),
    ]
    syncs = run.trace.of(Event.SYNC).filter(pl.col("pid") == pid)
    assert syncs.group_by("api", "stream").len().rows() == [("cuStreamSynchronize", 0x5678, n)]
    assert_placed(
        probes_on(run.trace.meta, REAL_LIBCUDA), 10, r"je 0x[0-9a-f]+", [r"cmpl \$0x321cba00,0x[0-9a-f]+\(%rip\)"]
    )
    assert "warning" not in run.proc.stderr


@needs_real(REAL_LIBCUDA)
@needs_real(REAL_LIBCUDART_12)
def test_launches_failing_inside_nvidias_runtime_are_recorded_and_counted(record, programs):
    n = 2000
    env = {**os.environ, "LD_LIBRARY_PATH": str(REAL_LIBCUDA.parent)}
    run = record(
        [str(programs / "call_runtime"), str(REAL_LIBCUDART_12), str(n)],
        "--api-names",
        "--cuda-lib",
        str(REAL_LIBCUDART_12),
        truth=False,
        env=env,
    )
    code = int(run.proc.stdout.split("returned ")[1].split(":")[0])
    assert run.proc.stdout.strip() == f"returned {code}: {n}" and code != 0  # 100: cudaErrorNoDevice here
    pid = run.trace.meta["command_pid"]
    assert run.trace.of(Event.LAUNCH).filter(pl.col("pid") == pid).is_empty()  # none reached the driver
    recorded = run.trace.of(Event.RUNTIME_ONLY).filter(pl.col("pid") == pid)
    assert recorded.group_by("runtime_api", "return_code").len().rows() == [("cudaLaunchKernel", code, n)]
    failed = report_json(run.trace)["overview"]["failed_launches"]
    assert failed["count"] == n and failed["by"] == [
        {"runtime_api": "cudaLaunchKernel", "return_code": code, "count": n}
    ]


def test_the_recorders_probe_listing_is_what_it_attaches(record):
    """The same plan feeds `--list-probes` and the attach."""
    env = shaped_env(LIBCUDA_THUNK)
    command = cudasim_command("--tokens", "1")
    run = record(command, env=env)
    listed = subprocess.run(
        [str(RECORDER), "--list-probes", "--", *command], capture_output=True, text=True, env=env, check=True
    ).stdout
    keys = ("function", "file", "offset", "placed_offset", "probed_instruction", "probe_cost", "moved_over")
    listing = {
        (p["file"], p["function"]): {k: p[k] for k in keys}
        for p in json.loads(listed)["probes"]
        if p["layer"] == "driver"
    }
    attached = {
        (p["file"], p["function"]): {k: p[k] for k in keys} for p in run.trace.meta["probes"] if p["kind"] == "uprobe"
    }
    assert listing == attached
    assert {Path(f) for f, _ in attached} == {LIBCUDA_THUNK.resolve(), LIBCUDA.resolve()}
