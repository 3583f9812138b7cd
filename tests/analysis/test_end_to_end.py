"""The report on real recordings of cudasim: quiet, sharing its core with a
CPU hog, beside loopback network load, and against perf sched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from launchgap.analysis import taken
from launchgap.analysis.report import report_json
from launchgap.analysis.timeline import cpu_runs, thread_segments, trace_bounds
from launchgap.trace import Event, read_trace
from launchgap.workloads.cudasim_truth import load_truth
from tests.conftest import REPO
from tests.recorder.conftest import RECORDER, cudasim_command, needs_bpf

pytestmark = needs_bpf
CPU = sorted(os.sched_getaffinity(0))[0]


def pin() -> None:
    os.sched_setaffinity(0, {CPU})


def record(tmp_path: Path, *args: str, pinned: bool = True) -> dict:
    """Records cudasim; pinned, the workload (and the recorder) share one CPU with the load."""
    out = tmp_path / "run.lg"
    proc = subprocess.run([str(RECORDER), "-q", "-o", str(out), "--", *cudasim_command(*args)],
                          capture_output=True, text=True, timeout=300, preexec_fn=pin if pinned else None)
    assert proc.returncode == 0, proc.stderr
    return report_json(read_trace(out))


class Background:
    """A load generator in its own process group, stopped on every path."""

    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(command, preexec_fn=lambda: (pin(), os.setpgrp()),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def launcher(report: dict) -> dict:
    return max(report["taken"]["threads"], key=lambda t: t["launches"])


def test_quiet_run_counts_every_launch_and_little_is_taken(tmp_path):
    """Counts exactly as cudasim's truth; and the time taken from the launcher is what other tasks took:
    on a shared machine (other jobs, `stress-ng --cpu 2 --io 2` beside the suite) neighbours do preempt
    it, so the bound is not a fixed share but what the trace itself says ran on its CPU meanwhile."""
    out, truth_path = tmp_path / "run.lg", tmp_path / "truth.json"
    proc = subprocess.run([str(RECORDER), "-q", "-o", str(out), "--",
                           *cudasim_command("--tokens", "100", "--truth", str(truth_path))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    truth = load_truth(truth_path)
    trace = read_trace(out)
    report = report_json(trace)
    assert report["overview"]["launches"] == truth.raw["totals"]["launches"] == 100 * 478
    assert report["overview"]["launches_by_api"] == {"cuLaunchKernel": 100 * 478}
    assert report["overview"]["syncs"] == truth.raw["totals"]["syncs"] == 101
    # nothing dropped; the one loss a quiet run may show is interrupts that no probe saw (the recorder's
    # audit against /proc: here, those landing while the sandbox's PID 1 runs, which no tracer sees)
    assert set(report["overview"]["lost_events"]) <= {"hardirq", "softirq", "irq_vector"}
    assert set(report["warnings"]) <= {"irqs", "gaps"}
    t = launcher(report)
    waiting = t["preempted_ns"] + t["runqueue_ns"]
    # who ran on the launcher's CPU while it waited, every task (the report lists the top five)
    bounds = trace_bounds(trace)
    segments = thread_segments(trace, [t["tid"]], bounds)
    culprits = taken.culprits(segments, cpu_runs(trace, bounds))
    named = int(culprits.filter(pl.col("run_pid") != 0)["ns"].sum())
    idle = int(culprits.filter(pl.col("run_pid") == 0)["ns"].sum())
    # a wait is attributed only to what ran in it, never more than the wait itself
    assert named + idle <= waiting
    # the report's culprits are the heaviest of those, in that order
    assert [c["ns"] for c in t["culprits"]] == culprits["ns"].head(5).to_list()
    # what no other task explains (an idle vCPU waking late, time between a switch and the next) stays
    # small whatever the load: the taken share beyond what named neighbours took is below "heavy"
    assert waiting - named < 0.05 * t["lifetime_ns"], (t, named, idle)


def test_the_report_shows_the_runtime_names_recorded_with_api_names(tmp_path):
    """Recorded with --api-names, launches and syncs are counted by the runtime's entry point as well as
    the driver's, in the JSON and on screen, exactly as cudasim's runtime made them (its truth.json)."""
    out, truth_path = tmp_path / "run.lg", tmp_path / "truth.json"
    proc = subprocess.run([str(RECORDER), "-q", "--api-names", "-o", str(out), "--",
                           *cudasim_command("--tokens", "6", "--launch", "mixed", "--sync", "mixed",
                                            "--truth", str(truth_path))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    truth = load_truth(truth_path)
    by_runtime = lambda frame: dict(frame.group_by("runtime_api").len().sort("runtime_api").rows())  # noqa: E731
    expected_launches, expected_syncs = by_runtime(truth.launches), by_runtime(truth.syncs)
    assert len(expected_launches) >= 3 and None not in expected_launches   # mixed: several runtime entry points
    overview = report_json(read_trace(out))["overview"]
    assert overview["launches_by_runtime_api"] == expected_launches
    assert overview["syncs_by_runtime_api"] == expected_syncs
    assert overview["launches_by_api"] == truth.raw["totals"]["launches_by_api"]
    shown = subprocess.run([sys.executable, "-m", "launchgap.cli", "report", str(out)], capture_output=True,
                           text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "runtime: " + ", ".join(f"{api} {n:,}" for api, n in expected_launches.items()) in text

    # without --api-names the trace has no runtime names, and the report says none
    plain = tmp_path / "plain.lg"
    proc = subprocess.run([str(RECORDER), "-q", "-o", str(plain), "--", *cudasim_command("--tokens", "2")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    overview = report_json(read_trace(plain))["overview"]
    assert overview["launches_by_runtime_api"] is None and overview["syncs_by_runtime_api"] is None


def test_a_cpu_hog_on_the_core_is_named_as_the_culprit(tmp_path):
    from launchgap.experiments.loadgen import CpuLoad
    from tests.experiments.test_loadgen import _weight_session

    with CpuLoad(workers=1, cpus=[CPU]) as hog:  # started, and seen busy, before recording begins
        # the hog's session weighted (nice -10, about 9x): whatever else shares the machine (another suite, a
        # build), the hog is what takes the launcher's CPU most, as the assertions below expect
        _weight_session(hog.procs[0].pid, -10)
        report = record(tmp_path, "--tokens", "60")
    t = launcher(report)
    assert t["preempted_ns"] + t["runqueue_ns"] > 0
    assert any(c["comm"].startswith("stress-ng") for c in t["culprits"]), t["culprits"]
    top = report["taken"]["culprits"][0]
    assert top["comm"].startswith("stress-ng")
    # recorded without GPU activity the verdict rests on bounds of the GPU idle: "uncertain" where they straddle
    # a threshold (docs/gpu-time.md); never "negligible" with the hog on the launching thread's CPU
    assert report["verdict"]["level"] in ("light", "heavy", "uncertain")
    classes = {c["class"] for c in report["gaps"]["classes"]}
    assert {"preempted", "runqueue"} & classes


def test_loopback_network_load_shows_net_rx_softirqs(tmp_path):
    load = [sys.executable, "-c", "import sys; sys.path.insert(0, %r); from tests.recorder.irq_load import loopback\n"
            "while True: loopback()" % str(REPO)]
    with Background(load):
        report = record(tmp_path, "--tokens", "100")
    net_rx = [i for i in report["overview"]["irqs"] if i["name"] == "NET_RX"]
    assert net_rx and net_rx[0]["count"] > 0 and net_rx[0]["ns"] > 0


def perf_switch_outs(perf_data: Path, tid: int) -> int:
    """sched_switch events perf recorded with the thread switched out."""
    out = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "trace"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if f"prev_pid={tid} " in line)


def test_switch_counts_agree_with_perf_sched_and_waits_with_the_kernel(tmp_path):
    """Switch-outs against perf's sched_switch events, exactly. Waits against the kernel's own
    sched_info for each thread (schedstat, read by cudasim as the thread finishes): its count of runs
    exactly (within the moment the read took), its run_delay (time runnable, woken or preempted, before running) closely.

    perf sched timehist is not the reference for waits: on this VM under `stress-ng --cpu 2 --io 2`
    its "sch delay" fell short of ours by 16-106 ms in some runs (one wait of a thread missing),
    while the kernel's run_delay agreed with ours within 0.3 ms in those same runs."""
    perf_data, out, truth_path = tmp_path / "perf.data", tmp_path / "run.lg", tmp_path / "truth.json"
    workload = cudasim_command("--tokens", "15", "--threads", "2", "--host-us", "800", "--truth", str(truth_path))
    proc = subprocess.run(["perf", "sched", "record", "-q", "-o", str(perf_data), "--", str(RECORDER), "-q", "-o",
                           str(out), "--", *workload], capture_output=True, text=True, timeout=300, preexec_fn=pin)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    threads = {t["tid"]: t for p in load_truth(truth_path).raw["processes"] for t in p["threads"]}
    if not all("kernel_schedstat" in t for t in threads.values()):
        pytest.skip("this kernel keeps no sched_info (/proc/thread-self/schedstat reads 0 0 0 or is absent)")
    report = report_json(trace)
    workers = [t for t in report["taken"]["threads"] if t["launches"]]
    assert sorted(t["tid"] for t in workers) == sorted(threads)
    segments = thread_segments(trace, sorted(threads), trace_bounds(trace))
    for t in workers:
        # both tracers saw the thread's whole life: every switch, exactly
        assert perf_switch_outs(perf_data, t["tid"]) == t["preempted_switches"] + t["blocked_switches"]
        kernel = threads[t["tid"]]["kernel_schedstat"]
        # every run before the read ended in a switch-out, and one was under way at it; the read took a
        # while, in which the thread may have been preempted (under load, several times): the kernel's
        # count lies between the runs begun by its start and by its end
        outs = trace.of(Event.SWITCH, "ts_ns", "tid").filter(pl.col("tid") == t["tid"])["ts_ns"]
        least, most = (int((outs < cut).sum()) + 1 for cut in (kernel["read_start_ns"], kernel["read_end_ns"]))
        assert least <= kernel["timeslices"] <= most, (t["tid"], least, most, kernel)
        # the waits the kernel had counted: those before the run under way at its read
        run_starts = segments.filter((pl.col("tid") == t["tid"]) & (pl.col("state") == "running"))["s_start"]
        assert run_starts.len() >= kernel["timeslices"], (t["tid"], run_starts.len(), kernel)
        until_ns = int(run_starts[kernel["timeslices"] - 1]) + 1
        waited_ns = waits_before(segments, t["tid"], until_ns)
        # The kernel starts a wait at the enqueue and ends it with the run queue's clock as last updated
        # (at the start of __schedule): ours, from the tracepoints, ran up to ~15 us longer a wait here
        allowed = 0.02 * kernel["run_delay_ns"] + 50_000 * kernel["timeslices"]
        # a wait whose switch-in went unseen (a silent task ran before it: docs/metrics.md, "Known limit")
        # lasts to the next switch-out the trace has: up to that much of ours may be more than the kernel's
        unseen = unseen_switch_in_waits(trace, t["tid"], until_ns)
        assert waited_ns - unseen - allowed <= kernel["run_delay_ns"] <= waited_ns + allowed, (
            t["tid"], waited_ns, unseen, kernel)


def unseen_switch_in_waits(trace, tid: int, until_ns: int) -> int:
    """From the trace's rows alone: the time TID waited runnable (woken, or preempted) before a switch-out
    of its own with no switch-in since, that is, a wait whose end the trace does not show, up to UNTIL_NS."""
    sw = trace.of(Event.SWITCH, "ts_ns", "tid", "next_tid", "voluntary")
    wakeups = trace.of(Event.WAKEUP, "ts_ns", "tid").filter(pl.col("tid") == tid)
    events = sorted([(ts, 0, v) for ts, _, _, v in sw.filter(pl.col("tid") == tid).iter_rows()]
                    + [(ts, 1, None) for ts, *_ in sw.filter(pl.col("next_tid") == tid).iter_rows()]
                    + [(ts, 2, None) for ts, _ in wakeups.iter_rows()])
    total, state, since = 0, None, None
    for ts, what, voluntary in events:
        if ts >= until_ns:
            break
        if what == 0:       # switched out: a wait under way ended unseen
            if state == "runnable":
                total += ts - since
            state, since = ("runnable", ts) if voluntary is False else ("blocked", None)
        elif what == 1:     # switched in
            state = "running"
        elif state != "running" and state != "runnable":   # woken
            state, since = "runnable", ts
    return total


def waits_before(segments: pl.DataFrame, tid: int, until_ns: int) -> int:
    """The thread's preempted and run-queue time up to UNTIL_NS."""
    waits = segments.filter((pl.col("tid") == tid) & (pl.col("s_start") < until_ns)
                            & pl.col("state").is_in(["preempted", "runqueue"]))
    return int((waits["s_end"].clip(upper_bound=until_ns) - waits["s_start"]).sum())
