"""The verdict says what it cannot see (issue 34, item 9; issue 33, item 2): where most of the GPU's idle
between its work has no host state in the trace, the level is "unknown", never "negligible", and the text
says what is missing and how to get it. A hand-built trace, every number worked out by hand."""

from __future__ import annotations

from launchgap.analysis.report import build_report
from launchgap.views.verdict_words import verdict_text
from tests.analysis.builder import TraceBuilder

PID, TID = 100, 101


def gpu_trace(tmp_path, with_states: bool):
    """Two kernels, [10, 20] us and [50, 60] us; the second's launch call runs [45, 48] us. The gap [20, 50]:
    its host part [20, 48] us (28 us) and 2 us after the call returned (gpu_side). WITH_STATES: the
    launching thread runs throughout (switched in at 1 us), so its 28 us are its own host work."""
    b = TraceBuilder(meta_extra={"gpu_activity": {"recorded": True}})
    task = (PID, TID, "decode")
    if with_states:
        b.switch(1_000, 0, (0, 0, "swapper/0"), task)
    for ts, end, corr in ((5_000, 8_000, 1), (45_000, 48_000, 2)):
        b.launch(ts, 0, task)
        b.rows.append(
            {
                "event": "gpu_api",
                "ts_ns": ts,
                "end_ns": end,
                "pid": PID,
                "tid": TID,
                "api": "cuLaunchKernel",
                "correlation_id": corr,
                "return_code": 0,
            }
        )
    for start, end, corr in ((10_000, 20_000, 1), (50_000, 60_000, 2)):
        b.rows.append(
            {
                "event": "gpu_kernel",
                "ts_ns": start,
                "end_ns": end,
                "pid": PID,
                "device_id": 0,
                "context_id": 1,
                "stream_id": 7,
                "correlation_id": corr,
                "kernel_name": "k",
                "grid_x": 1,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 1,
                "block_y": 1,
                "block_z": 1,
                "shared_mem": 0,
            }
        )
    return b.write(tmp_path / "t.lg")


def test_a_trace_without_the_launching_threads_states_gives_an_unknown_level(tmp_path):
    report = build_report(gpu_trace(tmp_path, with_states=False))
    causes = {c.cause: c.ns for c in report.gpu_time.causes}
    assert causes["unknown"] == 28_000 and causes["gpu_side"] == 2_000
    assert report.verdict.level == "unknown"
    assert "not negligible" in verdict_text(report.verdict) and "record the whole run" in verdict_text(report.verdict)


def test_with_the_states_the_same_idle_is_the_apps_own_and_the_level_is_known(tmp_path):
    report = build_report(gpu_trace(tmp_path, with_states=True))
    causes = {c.cause: c.ns for c in report.gpu_time.causes}
    assert "unknown" not in causes
    assert causes["host_work"] + causes.get("launch_call", 0) == 28_000
    assert report.verdict.level == "negligible"
