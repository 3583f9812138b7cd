"""scripts/gpu-validate.sh where there is no GPU: its one-line refusal, its
arguments, and (with a stand-in nvidia-smi and cudasim under a stand-in of
launch_counts) parts b and c end to end on real recordings: the counts, the
comparison, the hog, the summary, and that everything it started is stopped.
The checks themselves (launchgap.gpu_validation) are tested on hand-built
traces and reports with exact expected results."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from launchgap import gpu_validation as gv
from launchgap import procfs
from tests.conftest import CUDASIM_STATIC, LIBCUDA, REPO
from tests.recorder.conftest import needs_bpf

SCRIPT = REPO / "scripts" / "gpu-validate.sh"
FAKE_PROGRAM = REPO / "tests" / "scripts" / "fake_launch_counts.py"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
NO_GPU = "gpu-validate: no GPU found: "


def run_script(
    *args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 30
) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def plain_env(tmp_path: Path, **extra: str) -> dict:
    """No nvidia-smi anywhere on PATH (this machine has none; a stand-in dir comes first when given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_VALIDATE") and k != "OUT"}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env.update(extra)
    return env


def fake_nvidia_smi(directory: Path, listing: str, status: int = 0) -> Path:
    """A stand-in nvidia-smi: `-L` prints LISTING, --query-gpu prints one GPU's CSV row."""
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  -L) printf '%s\\n' '{listing}'; exit {status} ;;\n"
        "  --query-gpu=*) echo 'Stand-in GPU, 000.00.00, 1 MiB, 9.0' ;;\n"
        "  *) echo 'NVIDIA-SMI stand-in' ;;\n"
        "esac\n"
    )
    tool.chmod(0o755)
    return directory


# --- no GPU: one line, exit 3, nothing written -----------------------------------------


def assert_one_line_refusal(proc: subprocess.CompletedProcess, reason: str) -> None:
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [NO_GPU + reason]


def test_no_nvidia_smi_is_one_line(tmp_path: Path):
    proc = run_script("all", env=plain_env(tmp_path), cwd=tmp_path)
    assert_one_line_refusal(proc, "nvidia-smi is not installed")
    assert list(tmp_path.iterdir()) == []  # no results directory for a run that never started


def test_nvidia_smi_listing_no_gpu_is_one_line(tmp_path: Path):
    bin_dir = fake_nvidia_smi(tmp_path / "bin", "No devices were found", status=6)
    env = plain_env(tmp_path, PATH=f"{bin_dir}:/usr/bin:/bin")
    assert_one_line_refusal(run_script("b", env=env, cwd=tmp_path), "nvidia-smi lists no GPU (No devices were found)")


def test_missing_device_node_is_one_line(tmp_path: Path):
    assert not Path("/dev/nvidia0").exists(), "this test expects a machine without an NVIDIA device"
    bin_dir = fake_nvidia_smi(tmp_path / "bin", "GPU 0: Stand-in GPU (UUID: GPU-0)")
    env = plain_env(tmp_path, PATH=f"{bin_dir}:/usr/bin:/bin")
    assert_one_line_refusal(run_script("a", env=env, cwd=tmp_path), "/dev/nvidia0 is missing")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


# --- arguments ---------------------------------------------------------------------------


def test_help_names_every_part_and_its_time(tmp_path: Path):
    proc = run_script("--help", env=plain_env(tmp_path))
    assert proc.returncode == 0 and proc.stderr == ""
    text = " ".join(proc.stdout.split())
    assert text.startswith("usage: scripts/gpu-validate.sh [options] [PART...]")
    for expected in (
        "b launch_counts",
        "(~1 min)",
        "c the same program",
        "probes `launchgap probes`",
        "a Qwen3-0.6B-shaped PyTorch decode",
        "(~3-4 min)",
        "g GPU activity (record --gpu-activity",
        "all b c probes g a",
        "prepare run HERE",
        "Exit: 0 all passed, 1 a part failed, 2 usage, 3 no GPU",
    ):
        assert expected in text, expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x"], "unknown part 'x': choose from a, b, c, g, probes, all, prepare (see --help)"),
        (["--frobnicate"], "unknown option '--frobnicate' (see --help)"),
        (["--tokens", "0"], "--tokens wants a positive integer, not '0'"),
        (["--repeats", "two"], "--repeats wants a positive integer, not 'two'"),
        (["b", "--per-path"], "--per-path needs a value"),
        (["prepare", "b"], "prepare runs alone, on the machine that builds (not with other parts)"),
    ],
)
def test_usage_errors_are_one_line_before_any_gpu_check(tmp_path: Path, args: list[str], message: str):
    proc = run_script(*args, env=plain_env(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"gpu-validate: {message}"]


def test_parts_and_options_are_accepted_then_the_gpu_is_checked(tmp_path: Path):
    proc = run_script(
        "b",
        "c",
        "probes",
        "--tokens",
        "20",
        "--repeats",
        "1",
        "--per-path",
        "10",
        "--hog-per-path",
        "10",
        "-o",
        str(tmp_path / "out"),
        "--work",
        str(tmp_path / "work"),
        env=plain_env(tmp_path),
        cwd=tmp_path,
    )
    assert_one_line_refusal(proc, "nvidia-smi is not installed")


# --- the checks, on hand-built traces -------------------------------------------------------


def launch_trace(rows: list[tuple[int, int, str, str | None, int]], *, extra_events: int = 2) -> pa.Table:
    """A trace table: launch rows (pid, tid, api, runtime_api, ts_ns) among other events."""
    events = ["launch"] * len(rows) + ["switch"] * extra_events
    return pa.table(
        {
            "ts_ns": pa.array([r[4] for r in rows] + [1] * extra_events, pa.uint64()),
            "event": pa.array(events, pa.string()),
            "pid": pa.array([r[0] for r in rows] + [999] * extra_events, pa.uint32()),
            "tid": pa.array([r[1] for r in rows] + [999] * extra_events, pa.uint32()),
            "api": pa.array([r[2] for r in rows] + [None] * extra_events, pa.string()),
            "runtime_api": pa.array([r[3] for r in rows] + [None] * extra_events, pa.string()),
        }
    )


PATHS = [
    ("chevron", "cudaLaunchKernel", "cuLaunchKernel"),
    ("cudaLaunchKernel", "cudaLaunchKernel", "cuLaunchKernel"),
    ("cudaLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernelEx"),
    ("cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel", "cuLaunchCooperativeKernel"),
    ("cudaGraphLaunch", "cudaGraphLaunch", "cuGraphLaunch"),
]


def counts_doc(calls: dict[int, list[int]], pid: int = 100) -> dict:
    """launch_counts' file: thread tid -> calls per path in PATHS order."""
    return {
        "schema": gv.COUNTS_SCHEMA,
        "pid": pid,
        "threads": [
            {
                "index": i,
                "tid": tid,
                "cpu": -1,
                "elapsed_ns": 1_000_000_000,
                "paths": [
                    {"path": p, "runtime_api": r, "driver_api": d, "calls": n, "failed": 0}
                    for (p, r, d), n in zip(PATHS, per_path)
                ],
            }
            for i, (tid, per_path) in enumerate(calls.items())
        ],
    }


def rows_for(pid: int, tid: int, per_path: list[int], *, names: bool, ptsz: bool = False) -> list[tuple]:
    rows = []
    for (_, runtime, driver), n in zip(PATHS, per_path):
        rows += [(pid, tid, driver + ("_ptsz" if ptsz else ""), runtime if names else None, len(rows))] * n
    return rows


def test_exact_counts_per_thread_and_path():
    counts = counts_doc({101: [3, 2, 4, 1, 5], 102: [1, 1, 1, 1, 1]})
    trace = launch_trace(
        rows_for(100, 101, [3, 2, 4, 1, 5], names=True)
        + rows_for(100, 102, [1] * 5, names=True)
        + [(555, 556, "cuLaunchKernel", None, 9)]
    )  # another process: counted apart
    result = gv.compare_launch_counts(counts, gv.launch_rows(trace), api_names=True)
    assert result["exact"] is True and result["totals_exact"] is True
    assert (result["launched"], result["recorded"], result["recorded_other_processes"]) == (20, 20, 1)
    first = result["threads"][0]
    assert first["by_driver_api"] == [
        {"api": "cuGraphLaunch", "launched": 5, "recorded": 5, "exact": True},
        {"api": "cuLaunchCooperativeKernel", "launched": 1, "recorded": 1, "exact": True},
        {"api": "cuLaunchKernel", "launched": 5, "recorded": 5, "exact": True},
        {"api": "cuLaunchKernelEx", "launched": 4, "recorded": 4, "exact": True},
    ]
    assert {r["api"]: r["recorded"] for r in first["by_runtime_api"]} == {
        "cudaGraphLaunch": 5,
        "cudaLaunchCooperativeKernel": 1,
        "cudaLaunchKernel": 5,
        "cudaLaunchKernelExC": 4,
    }
    assert first["recorded_runtime_to_driver"]["cudaLaunchKernelExC -> cuLaunchKernelEx"] == 4
    assert first["launches_per_s"] == pytest.approx(15.0)


def test_a_missing_launch_a_stray_thread_and_unnamed_runtime_calls_are_not_exact():
    counts = counts_doc({101: [2, 0, 0, 0, 0]})
    one_short = gv.compare_launch_counts(
        counts, gv.launch_rows(launch_trace(rows_for(100, 101, [1, 0, 0, 0, 0], names=False))), api_names=False
    )
    assert one_short["exact"] is False
    assert one_short["threads"][0]["by_driver_api"] == [
        {"api": "cuLaunchKernel", "launched": 2, "recorded": 1, "exact": False}
    ]

    stray = gv.compare_launch_counts(
        counts,
        gv.launch_rows(
            launch_trace(rows_for(100, 101, [2, 0, 0, 0, 0], names=False) + [(100, 150, "cuLaunchKernel", None, 7)])
        ),
        api_names=False,
    )
    assert stray["exact"] is False and stray["totals_exact"] is False and stray["threads"][0]["exact"] is True
    assert stray["other_threads"] == [{"tid": 150, "recorded": 1}]

    unnamed = gv.compare_launch_counts(
        counts, gv.launch_rows(launch_trace(rows_for(100, 101, [2, 0, 0, 0, 0], names=False))), api_names=True
    )
    assert unnamed["exact"] is False
    assert unnamed["threads"][0]["by_runtime_api"] == [
        {"api": gv.NO_RUNTIME_API, "launched": 0, "recorded": 2, "exact": False},
        {"api": "cudaLaunchKernel", "launched": 2, "recorded": 0, "exact": False},
    ]


def test_launches_through_other_entry_points_keep_totals_exact_only():
    counts = counts_doc({101: [2, 0, 0, 0, 0]})  # two plain launches, expected at cuLaunchKernel
    trace = launch_trace([(100, 101, "cuLaunchKernelEx", "cudaLaunchKernel", t) for t in (1, 2)])
    result = gv.compare_launch_counts(counts, gv.launch_rows(trace), api_names=True)
    assert (result["exact"], result["totals_exact"]) == (False, True)
    assert result["threads"][0]["recorded_runtime_to_driver"] == {"cudaLaunchKernel -> cuLaunchKernelEx": 2}
    lines = gv.summary_lines({"parts": {"b": {"status": "failed", "detail": {"api_names": result}}}})
    assert lines[1].startswith("              api_names: NOT exact: totals exact, entry points differ")


def test_per_thread_stream_variants_are_the_same_path():
    assert gv.api_family("cuLaunchKernelEx_ptsz") == "cuLaunchKernelEx"
    assert gv.api_family("cuMemcpyDtoH_v2_ptds") == "cuMemcpyDtoH_v2"
    counts = counts_doc({101: [1, 1, 1, 1, 1]})
    result = gv.compare_launch_counts(
        counts, gv.launch_rows(launch_trace(rows_for(100, 101, [1] * 5, names=False, ptsz=True))), api_names=False
    )
    assert result["exact"] is True


def test_a_trace_cut_short_keeps_its_complete_batches(tmp_path: Path):
    table = launch_trace(rows_for(100, 101, [3, 0, 0, 0, 0], names=False), extra_events=0)
    path = tmp_path / "cut.lg"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
        writer.write_table(table)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 40])  # the second batch's tail and the end marker gone
    assert len(gv.read_trace_table(path)) == 3
    with pytest.raises(gv.ValidationError, match="not a readable trace"):
        gv.read_trace_table(tmp_path / "absent.lg")


def test_decode_summary_numbers():
    untraced = [{"tokens_per_s": v, "tokens": 10, "first_ids": [1, 2]} for v in (100.0, 110.0, 90.0)]
    traced = [{"tokens_per_s": v, "tokens": 10, "first_ids": [1, 2]} for v in (80.0, 75.0, 85.0)]
    summary = gv.decode_summary(untraced, traced, [6000, 6000, 6000])
    assert (summary["untraced_median"], summary["traced_median"]) == (100.0, 80.0)
    assert summary["slowdown_ratio"] == pytest.approx(1.25)
    assert summary["slowdown_percent"] == pytest.approx(20.0)
    assert summary["launches_per_token"] == 600
    # 1/80 - 1/100 s a token = 2.5 ms over 600 launches
    assert summary["added_us_per_launch"] == pytest.approx(2500 / 600)
    assert summary["same_tokens"] is True
    with pytest.raises(gv.ValidationError):
        gv.decode_summary([], traced, [])


def test_launches_in_the_timing_window_only():
    launches = gv.launch_rows(
        launch_trace(
            [(100, 100, "cuLaunchKernel", None, ts) for ts in (5, 10, 15, 20)]
            + [(100, 101, "cuLaunchKernel", None, 12)]
        )
    )
    assert gv.launches_in_window(launches, 100, 100, 10, 20) == 2


def test_probe_digest_keeps_uprobes_and_counts_cost_classes():
    metadata = {
        "probes": [
            {"kind": "tracepoint", "name": "sched_switch", "attached": True},
            {
                "kind": "uprobe",
                "function": "cuLaunchKernel",
                "file": "/lib/libcuda.so.1",
                "offset": 16,
                "first_instruction": "cmpl",
                "probe_cost": "single-stepped",
                "attached": True,
                "error": None,
            },
            {
                "kind": "uprobe",
                "function": "cudaLaunchKernel",
                "file": "/bin/app",
                "offset": 0,
                "first_instruction": "push %rbp",
                "probe_cost": "emulated",
                "attached": True,
                "error": None,
            },
            {
                "kind": "uprobe",
                "function": "cuGraphLaunch",
                "file": "/lib/libcuda.so.1",
                "probe_cost": "emulated",
                "attached": False,
                "error": "no such symbol",
            },
        ]
    }
    probes = gv.probe_digest(metadata)
    assert [p["function"] for p in probes] == ["cuLaunchKernel", "cudaLaunchKernel", "cuGraphLaunch"]
    assert probes[0]["probe_cost"] == "single-stepped" and probes[2]["error"] == "no such symbol"
    assert gv.probe_line(probes) == "2 of 3 attached (1 emulated, 1 single-stepped)"


def hand_report(thread_culprits: list[dict], tid: int = 101) -> dict:
    return {
        "verdict": {"level": "heavy"},
        "taken": {"threads": [{"tid": tid, "preempted_ns": 300, "runqueue_ns": 200, "culprits": thread_culprits}]},
    }


def test_culprit_sums_a_process_over_causes():
    counts = counts_doc({101: [1, 1, 1, 1, 1]})
    report = hand_report(
        [
            {"cause": "preempted", "pid": 7, "comm": "other", "ns": 50},
            {"cause": "runqueue", "pid": 42, "comm": "lg-cpu-hog", "ns": 40},
            {"cause": "preempted", "pid": 42, "comm": "lg-cpu-hog", "ns": 30},
        ]
    )
    result = gv.culprit_check(
        report, counts, hog_pid=42, thread_index=0, baseline=hand_report([]), baseline_counts=counts
    )
    assert result["hog_is_top_culprit"] is True
    assert result["top_culprit"] == {"pid": 42, "comm": "lg-cpu-hog", "ns": 70}
    assert result["hog_ns"] == 70
    assert result["baseline"]["preempted_ns"] == 300

    beaten = gv.culprit_check(
        hand_report(
            [
                {"cause": "preempted", "pid": 7, "comm": "other", "ns": 80},
                {"cause": "runqueue", "pid": 42, "comm": "lg-cpu-hog", "ns": 70},
            ]
        ),
        counts,
        hog_pid=42,
        thread_index=0,
    )
    assert beaten["hog_is_top_culprit"] is False and beaten["top_culprit"]["pid"] == 7
    absent = gv.culprit_check(hand_report([], tid=999), counts, hog_pid=42, thread_index=0)
    assert absent["thread_in_report"] is False and absent["hog_is_top_culprit"] is False


def test_summary_records_each_part(tmp_path: Path):
    path = tmp_path / "summary.json"
    gv.set_part(path, "b", "running")
    gv.set_part(path, "b", "failed", note="driver: recording failed")
    gv.set_part(path, "a", "skipped", note="no torch")
    summary = json.loads(path.read_text())
    assert summary["schema"] == gv.SUMMARY_SCHEMA
    assert {k: v["status"] for k, v in summary["parts"].items()} == {"b": "failed", "a": "skipped"}
    assert gv.summary_lines(summary) == [
        "[     failed] b",
        "              driver: recording failed",
        "[    skipped] a",
        "              no torch",
    ]
    with pytest.raises(gv.ValidationError):
        gv.set_part(path, "b", "fine")


# --- parts b and c end to end, on cudasim, with a stand-in GPU -------------------------------


def stand_in_env(tmp_path: Path) -> dict:
    bin_dir = fake_nvidia_smi(tmp_path / "bin", "GPU 0: Stand-in GPU (UUID: GPU-0)")
    program = tmp_path / "launch_counts"  # launch_counts' interface, cudasim underneath
    program.write_text(f'#!/bin/sh\nexec "{VENV_PYTHON}" "{FAKE_PROGRAM}" "$@"\n')
    program.chmod(0o755)
    return plain_env(
        tmp_path,
        PATH=f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin",
        PYTHON=str(VENV_PYTHON),
        GPU_VALIDATE_DEVICE_NODE="/dev/null",
        GPU_VALIDATE_LAUNCH_PROGRAM=str(program),
        # the stand-in is a script: name what it runs (on a GPU, discovery finds nvcc's output itself)
        GPU_VALIDATE_RECORD_ARGS=f"--cuda-lib {CUDASIM_STATIC} --cuda-lib {LIBCUDA}",
    )


def build_recorder_needing_a_library(directory: Path) -> Path:
    """A stand-in recorder binary linked against a library no system has (libdummy.so.1)."""
    compiler = shutil.which("cc") or shutil.which("clang") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler here (setup installs clang)")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dummy.c").write_text("int dummy(void) { return 7; }\n")
    (directory / "main.c").write_text(
        "#include <stdio.h>\nint dummy(void);\n"
        'int main(void) { printf("stand-in recorder %d\\n", dummy()); return 0; }\n'
    )
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libdummy.so.1",
            "-o",
            str(directory / "libdummy.so.1"),
            str(directory / "dummy.c"),
        ],
        check=True,
    )
    subprocess.run(
        [
            compiler,
            "-o",
            str(directory / "recorder"),
            str(directory / "main.c"),
            "-L",
            str(directory),
            "-l:libdummy.so.1",
        ],
        check=True,
    )
    return directory / "recorder"


def test_a_recorder_missing_a_library_is_named_and_a_carried_copy_is_used(tmp_path: Path):
    recorder = build_recorder_needing_a_library(tmp_path / "build")
    carry = tmp_path / "carry"
    env = stand_in_env(tmp_path) | {"LAUNCHGAP_RECORDER": str(recorder), "GPU_VALIDATE_CARRY_DIR": str(carry)}

    missing = run_script("probes", "-o", str(tmp_path / "out1"), "--work", str(tmp_path / "work1"), env=env)
    assert (
        f"gpu-validate: recording is not possible: {recorder} needs shared libraries this machine lacks: "
        f"libdummy.so.1 (not in {carry}/lib either)"
    ) in missing.stdout.splitlines()

    (carry / "lib").mkdir(parents=True)
    shutil.copy(tmp_path / "build" / "libdummy.so.1", carry / "lib")
    carried = run_script("probes", "-o", str(tmp_path / "out2"), "--work", str(tmp_path / "work2"), env=env)
    assert "recording is not possible" not in carried.stdout
    env_detail = json.loads((tmp_path / "out2" / "summary.json").read_text())["parts"]["env"]["detail"]
    assert env_detail["recorder"] == f"{recorder} with carried libdummy.so.1 ({carry}/lib)"
    # the recorder ran (its --version output is in the log) through the loader, the traced command's
    # environment untouched: no LD_LIBRARY_PATH
    assert "stand-in recorder 7" in (tmp_path / "out2" / "log.txt").read_text()
    wrapper = (tmp_path / "work2" / "launchgap-record").read_text()
    assert "--library-path" in wrapper and "LD_LIBRARY_PATH" not in wrapper


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@needs_bpf
def test_parts_b_and_c_on_cudasim(tmp_path: Path):
    out, work = tmp_path / "out", tmp_path / "work"
    proc = run_script(
        "b",
        "c",
        "probes",
        "g",
        "a",
        "--per-path",
        "800",
        "--hog-per-path",
        "2000",
        "--repeats",
        "1",
        "--tokens",
        "2",
        "-o",
        str(out),
        "--work",
        str(work),
        env=stand_in_env(tmp_path),
        timeout=600,
    )
    summary = json.loads((out / "summary.json").read_text())
    parts = summary["parts"]
    assert list(parts) == ["env", "b", "c", "probes", "g", "a"]
    assert parts["env"]["status"] == "ok" and parts["env"]["detail"]["gpu"] == "Stand-in GPU"

    # b: the recorded launches are cudasim's own, per thread and API path, with and without --api-names
    assert parts["b"]["status"] == "ok", parts["b"]
    for mode in ("driver", "api_names"):
        compare = parts["b"]["detail"][mode]
        counts = json.loads((work / "b" / f"{mode}.counts.json").read_text())
        assert compare["exact"] is True and compare["api_names"] is (mode == "api_names")
        assert [t["tid"] for t in compare["threads"]] == [t["tid"] for t in counts["threads"]]
        for thread, own in zip(compare["threads"], counts["threads"]):
            assert thread["recorded"] == thread["launched"] == sum(p["calls"] for p in own["paths"])
            assert {r["api"] for r in thread["by_driver_api"]} == {
                "cuLaunchKernel",
                "cuLaunchKernelEx",
                "cuLaunchCooperativeKernel",
                "cuGraphLaunch",
            }
        # the probes' cost classes travel with the comparison: cudasim begins every entry `push %rbp`
        attached = [p for p in compare["probes"] if p["attached"]]
        assert {p["probe_cost"] for p in attached} == {"emulated"}
        assert ("cudaLaunchKernel" in {p["function"] for p in attached}) is (mode == "api_names")

    # c: counts exact with and without the hog; the report's culprits name it where it ran
    c = parts["c"]
    assert c["detail"]["pinned"]["exact"] is True and c["detail"]["hog"]["exact"] is True
    culprit = c["detail"]["culprit"]
    assert culprit["thread_in_report"] is True
    hog_pid = culprit["hog_pid"]
    # on this shared 2-CPU machine other helpers' builds can take more than the hog; the hog's
    # share is there, and the part's status follows the check (on an idle GPU node it must pass)
    assert culprit["hog_ns"] > 0 and any(x["comm"] == "lg-cpu-hog" for x in culprit["culprits"])
    assert (c["status"] == "ok") is culprit["hog_is_top_culprit"]
    assert not alive(hog_pid)

    # probes: what a recording would probe, listed without tracing (the stand-in's libraries come
    # from GPU_VALIDATE_RECORD_ARGS' --cuda-lib options)
    assert parts["probes"]["status"] == "ok", parts["probes"]
    listing = parts["probes"]["detail"]["launch_counts"]
    assert {(lib["kind"], lib["path"]) for lib in listing["libraries"]} == {
        ("driver", str(LIBCUDA)),
        ("static runtime", str(CUDASIM_STATIC)),
    }
    assert {p["probe_cost"] for p in listing["probes"]} == {"emulated"}
    assert "probes" in parts["probes"]["detail"]["torch"]

    # g: with the collector (cudasim's CUPTI stand-in beside its driver), every launch of the program has its
    # kernel in the trace, per process and thread; the decode has no PyTorch here, so the part fails saying so
    g = parts["g"]
    counts = json.loads((work / "g" / "gpu.counts.json").read_text())
    assert g["detail"]["exact"] is True and g["detail"]["program_exact"] is True
    assert g["detail"]["program_launches"] == sum(p["calls"] for t in counts["threads"] for p in t["paths"])
    assert [c["state"] for c in g["detail"]["collectors"]] == ["started", "stopped"]
    assert g["detail"]["lost"] == []
    assert g["status"] == "failed" and any("No module named 'torch'" in n for n in g["notes"])

    # a: this Python has no PyTorch: the part fails, saying so, after b and c ran
    assert parts["a"]["status"] == "failed"
    assert "No module named 'torch'" in parts["a"]["notes"][0]
    assert proc.returncode == 1

    # what comes back through the device tool: a handful of files, none deeper than $OUT
    assert sorted(p.name for p in out.iterdir()) == [
        "details.tar.gz",
        "env.txt",
        "log.txt",
        "summary.json",
        "summary.txt",
    ]
    text = " ".join(proc.stdout.split())
    assert "[ ok] b" in text and "driver: exact" in text and "api_names: exact" in text
    # the summary's words follow the culprit check's finding, whichever it was (the check itself is
    # tested on hand-built reports in test_culprit_sums_a_process_over_causes): named exactly when the check found it top
    named = culprit["hog_is_top_culprit"]
    assert (f"c: the report names the hog (pid {hog_pid}) as thread 0's top culprit" in text) is named
    assert (f"(pid {hog_pid}, {culprit['hog_ns'] / 1e6:.1f} ms): NOT named" in text) is not named


def torch_missing() -> bool:
    try:
        import torch  # noqa: F401, PLC0415 - optional, no launchgap dependency
    except ImportError:
        return True
    return False


@needs_bpf
@pytest.mark.skipif(torch_missing(), reason="PyTorch is not installed here (not a launchgap dependency)")
def test_part_a_on_the_cpu(tmp_path: Path):
    """Part a's plumbing (interleaved runs, recording, reports, the timing window's launches) with the
    decode on the CPU: no launches to count, but every step but the GPU's."""
    out, work = tmp_path / "out", tmp_path / "work"
    env = stand_in_env(tmp_path) | {
        "PYTHON": sys.executable,
        "GPU_VALIDATE_DECODE_ARGS": "--device cpu --dtype float32 --layers 1 --vocab 512 --prompt 4 --warmup 2",
    }
    proc = run_script("a", "--repeats", "2", "--tokens", "5", "-o", str(out), "--work", str(work), env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    a = json.loads((out / "summary.json").read_text())["parts"]["a"]
    assert a["status"] == "ok" and "notes" not in a
    detail = a["detail"]
    runs = [
        json.loads((work / "a" / f"{kind}-{i}.json").read_text()) for kind in ("untraced", "traced") for i in (1, 2)
    ]
    assert detail["untraced_tokens_per_s"] == [r["tokens_per_s"] for r in runs[:2]]
    assert detail["traced_tokens_per_s"] == [r["tokens_per_s"] for r in runs[2:]]
    assert detail["window_launches"] == [0, 0] and detail["launches_per_token"] == 0
    assert detail["same_tokens"] is True
    # the decode ran on the CPU: no CUDA launch anywhere in the trace (the window's count above is the truth),
    # and the summary carries the last report's verdict, not another
    last_report = json.loads((work / "a" / "report-2.json").read_text())
    assert detail["report"]["launches"] == 0
    assert (detail["report"]["verdict"], detail["report"]["taken_percent"]) == (
        last_report["verdict"]["level"],
        last_report["verdict"]["taken_percent"],
    )
    assert sorted(p.name for p in (work / "a").iterdir()) == sorted(
        [f"{k}-{i}.json" for k in ("untraced", "traced") for i in (1, 2)]
        + ["traced-1.lg", "traced-2.lg", "report-1.json", "report-2.json", "detail.json"]
    )


@needs_bpf
def test_sigterm_stops_the_hog_and_the_recording(tmp_path: Path):
    out, work = tmp_path / "out", tmp_path / "work"
    # about 2 s a recorded run here: the pinned one, then the hogged one, which is interrupted
    script = subprocess.Popen(
        [str(SCRIPT), "c", "--hog-per-path", "5000", "-o", str(out), "--work", str(work)],
        env=stand_in_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: list[int] = []
    try:
        hog_pid = wait_for_hog(out / "log.txt", script)
        time.sleep(0.5)  # the hogged recording is under way
        started = descendants(script.pid)
        assert hog_pid in started
        script.send_signal(signal.SIGTERM)
        _, stderr = script.communicate(timeout=120)
    finally:
        if script.poll() is None:  # the test failed before the script stopped: stop it, then what it left
            started = started or descendants(script.pid)
            script.terminate()
            try:
                script.wait(timeout=60)
            except subprocess.TimeoutExpired:
                script.kill()
                script.wait()
            for pid in started:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
    assert script.returncode == 143
    assert "gpu-validate: SIGTERM: stopping what was started" in stderr
    assert [pid for pid in started if alive(pid)] == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["parts"]["c"]["status"] == "interrupted"
    assert summary["parts"]["c"]["notes"] == ["stopped by SIGTERM"]
    assert (out / "details.tar.gz").exists()


def wait_for_hog(log: Path, script: subprocess.Popen, timeout: float = 240) -> int:
    """The hog's pid, once cpu_hog.py has said it is burning."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and script.poll() is None:
        if log.exists():
            for line in log.read_text().splitlines():
                if line.startswith("cpu_hog: pid "):
                    return int(line.split()[2])
        time.sleep(0.1)
    raise AssertionError(f"the hog never started (script exit {script.poll()})")


def descendants(pid: int) -> list[int]:
    """Every process below PID, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(procfs.read_stat(entry / "stat")[1][1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found
