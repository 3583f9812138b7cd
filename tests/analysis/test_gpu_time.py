"""GPU time lost, by culprit (docs/gpu-time.md), against the truth.

The GPU side of the truth is cudasim's truth.json: every kernel's gpu_start_ns/gpu_end_ns and
every copy's span on CLOCK_MONOTONIC, each launch's thread and driver entry and return. From it
alone: every interval each process's GPU ran nothing, the work that ended it, and the part of it
before that work's call returned (the host's part). The CPU side comes from the trace's switch
rows (already checked against the kernel's counters and perf sched elsewhere), as in
shared/MEASUREMENTS.md: the culprit's runs on the launching thread's CPU. The scenarios put a
known culprit beside cudasim: a busy loop pinned to the launching thread's CPU (launch-bound,
GPU-bound, two processes of each kind) or loopback traffic sent from the other CPU and received,
by receive packet steering, on that one (interrupts: NET_RX softirqs), on the frame-pointer and
the NVIDIA-thunk driver shapes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from launchgap.analysis.records import GpuTimeBounds, GpuTimeExact
from launchgap.analysis.report import build_report
from launchgap.trace import Event, read_trace
from launchgap.views.verdict_words import verdict_text
from tests.conftest import CUDASIM, CUDASIM_BUILD, LIBCUDA, LIBCUDA_THUNK, REPO
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf

CPU = 1  # the launching thread's CPU, and the culprit's
SENDER_CPU = 0  # where the interrupt load sends from: its interrupts land on CPU, its own runs do not
LAUNCH_BOUND = ["--kernel-us", "2:4"]
# kernels far longer than the host step: after each token's sync, the first launch finds an empty queue
# (that delay costs), then every later one a queue seconds long
GPU_BOUND = ["--kernel-us", "2000:4000", "--launch-ns", "50000"]
SHAPES = {"frame-pointer": {}, "thunk": {"LD_LIBRARY_PATH": str(LIBCUDA_THUNK.parent)}}
CUPTI = CUDASIM_BUILD / "lib" / "libcupti.so.12"
HOG = "import os\nos.sched_setaffinity(0, {%d})\nwhile True:\n    pass\n"
IRQ_LOAD = REPO / "tests" / "recorder" / "irq_load.py"


@contextlib.contextmanager
def packets_received_on(cpu: int):
    """Loopback's received packets processed on CPU, whoever sends them: receive packet steering
    (RPS) queues each to CPU's backlog and raises NET_RX there by an IPI, so the softirq interrupts
    whatever runs on CPU. Loopback's own setting, restored on every path."""
    setting = Path("/sys/class/net/lo/queues/rx-0/rps_cpus")
    if cpu not in os.sched_getaffinity(0):
        pytest.skip(f"CPU {cpu} is not one this test may use")
    if not setting.exists():
        pytest.skip("this kernel has no receive packet steering (CONFIG_RPS) on loopback")
    before = setting.read_text().strip()
    setting.write_text(f"{1 << cpu:x}")
    try:
        yield
    finally:
        setting.write_text(before)


@contextlib.contextmanager
def culprit(kind: str, weighty: bool = False):
    """A busy loop on CPU, or interrupts on CPU: loopback traffic sent from another CPU whose received
    packets are processed on CPU (in NET_RX softirqs); stopped, with its group, on every path. WEIGHTY: the
    busy loop runs heavy."""
    steering = contextlib.nullcontext()
    if kind == "hog":
        command = [sys.executable, "-c", HOG % CPU]
    else:
        loop = (
            "import runpy, sys, os\nos.sched_setaffinity(0, {%d})\nsys.argv = ['irq_load']\n"
            "mod = runpy.run_path(%r)\nwhile True:\n    mod['loopback']()\n"
        ) % (SENDER_CPU, str(IRQ_LOAD))
        command = [sys.executable, "-c", loop]
        steering = packets_received_on(CPU)
    with steering, process_group(command, weighty) as pid:
        yield pid


@contextlib.contextmanager
def process_group(command: list[str], weighty: bool = False):
    """COMMAND in a session of its own (run heavy where WEIGHTY), its pid given; it and its process group
    stopped on every path."""
    proc = subprocess.Popen(
        ["nice", "-n", str(HEAVY_NICE), *command] if weighty else command,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if weighty:
            heavy_autogroup(proc.pid)
        yield proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class Run:
    trace: object
    truths: list[dict]
    stdout: str


# The weight a heavy session runs at (nice -19, as a task and, with sched_autogroup, as a session): 70
# times a nice-0 session's, so that whatever else loads the machine takes about 1% of its CPU.
HEAVY_NICE = -19
# a shell's first words that make its session heavy (its tasks are niced by `nice` before it)
HEAVY_AUTOGROUP = f"echo {HEAVY_NICE} > /proc/self/autogroup 2>/dev/null; "


def heavy(command: list[str]) -> list[str]:
    """COMMAND run at HEAVY_NICE, in a session of its own (with sched_autogroup on, a scheduling group of
    its own) that weighs HEAVY_NICE too when COMMAND says so (a shell: HEAVY_AUTOGROUP; a process
    started here: heavy_autogroup)."""
    return ["setsid", "--wait", "nice", "-n", str(HEAVY_NICE), *command]


def heavy_autogroup(pid: int) -> None:
    """The autogroup of PID's session weighs HEAVY_NICE (nothing to do where autogroups are off)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{HEAVY_NICE}\n")


def record(tmp_path: Path, workloads: list[list[str]], env: dict, name: str = "run", weighty: bool = False) -> Run:
    """cudasim processes (one per argument list, started together by one shell), pinned to CPU, recorded with
    GPU activity; each writes its own truth. WEIGHTY: the workload runs heavy (the recorder does not)."""
    truths = [tmp_path / f"{name}-truth-{i}.json" for i in range(len(workloads))]
    parts = [
        " ".join([str(CUDASIM), "decode", "--quiet", *args, "--truth", str(t)]) + " &"
        for args, t in zip(workloads, truths)
    ]
    script = " ".join(parts) + " wait"
    out = tmp_path / f"{name}.lg"
    # the workloads run under a shell, whose script the recorder cannot look into: it is told the driver
    # the shape uses and the CUPTI beside it, as a user would
    driver = LIBCUDA_THUNK if env.get("LD_LIBRARY_PATH") else LIBCUDA
    shell = ["bash", "-c", script] if not weighty else heavy(["bash", "-c", HEAVY_AUTOGROUP + script])
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
            "--gpu-activity",
            "--cupti",
            str(CUPTI),
            "--cuda-lib",
            str(driver),
            "-o",
            str(out),
            "--",
            "taskset",
            "-c",
            str(CPU),
            *shell,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr
    return Run(read_trace(out), [json.loads(t.read_text()) for t in truths], proc.stdout)


def truth_idle(truth: dict) -> pl.DataFrame:
    """From truth.json alone: the gaps between the process's GPU work (kernels, graphs, copies), each with the
    thread whose work ended it and the gap's host part (until that work's call returned)."""
    launches = pl.DataFrame(truth["launches"], schema=truth["launch_columns"], orient="row")
    syncs = pl.DataFrame(truth["syncs"], schema=truth["sync_columns"], orient="row")
    work = pl.concat(
        [
            launches.select(
                "pid",
                "tid",
                pl.col("gpu_start_ns").alias("start"),
                pl.col("gpu_end_ns").alias("end"),
                pl.col("t_exit_ns").alias("call_end"),
            ),
            syncs.filter(pl.col("copy_start_ns").is_not_null()).select(
                "pid",
                "tid",
                pl.col("copy_start_ns").alias("start"),
                pl.col("waited_for_ns").alias("end"),
                pl.col("t_exit_ns").alias("call_end"),
            ),
        ]
    ).sort("start")
    rows = []
    reach = None
    for pid, tid, start, end, call_end in work.iter_rows():
        if reach is not None and start > reach:
            rows.append((pid, tid, reach, start, min(start, max(reach, call_end))))
        reach = end if reach is None else max(reach, end)
    return pl.DataFrame(
        rows,
        schema={"pid": pl.Int64, "tid": pl.Int64, "gap_start": pl.Int64, "gap_end": pl.Int64, "host_end": pl.Int64},
        orient="row",
    )


def runs_of(trace, pid: int) -> list[tuple[int, int]]:
    """When PID's tasks ran on CPU, from the trace's switch rows."""
    sw = trace.of(Event.SWITCH, "ts_ns", "cpu", "pid", "next_pid").filter(pl.col("cpu") == CPU).sort("ts_ns")
    out, since = [], None
    for ts, _, prev, nxt in sw.iter_rows():
        if since is not None and prev == pid:
            out.append((since, ts))
            since = None
        if nxt == pid:
            since = ts
    return out


def not_interference_runs(trace) -> list[tuple[int, int]]:
    """When CPU ran what is no interference to wait behind (docs/gpu-time.md): its idle task (the waiting
    thread waited for the CPU to wake), and launchgap's own tasks (the recorder's process, from meta.json; the
    threads the collector named), from the trace's switch rows."""
    recorder = trace.meta["recorder_pid"]
    ours = set(trace.of(Event.GPU_COLLECTOR_THREAD, "tid")["tid"].to_list())
    sw = (
        trace.of(Event.SWITCH, "ts_ns", "cpu", "tid", "pid", "next_pid", "next_tid")
        .filter(pl.col("cpu") == CPU)
        .sort("ts_ns")
    )
    out, since = [], None
    for ts, _, _tid, _pid, nxt_pid, nxt_tid in sw.iter_rows():
        if since is not None:
            out.append((since, ts))
            since = None
        if nxt_pid in (0, recorder) or nxt_tid in ours:
            since = ts
    return out


def intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The intersection of two sorted lists of disjoint intervals, by a two-pointer sweep."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if end > start:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def thread_states(trace, tids: set[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """When the threads TIDS ran and when they were runnable but not running, read straight from the
    trace's switch and wakeup rows: running from a switch-in to the next switch-out; runnable from a
    switch-out that left them runnable (not voluntary) or a wakeup, to the next switch-in, or, where the
    switch-in went unseen (a task whose own switch-outs sched_switch never shows ran before it: this
    sandbox's agent threads, docs/metrics.md), to the next switch-out: the wait's upper bound, as
    docs/views.md and docs/gpu-time.md count it."""
    sw = trace.of(Event.SWITCH, "ts_ns", "tid", "next_tid", "voluntary")
    rows = [(ts, 0, tid, v) for ts, tid, _, v in sw.filter(pl.col("tid").is_in(list(tids))).iter_rows()]
    rows += [(ts, 1, nxt, None) for ts, _, nxt, _ in sw.filter(pl.col("next_tid").is_in(list(tids))).iter_rows()]
    wakes = trace.of(Event.WAKEUP, "ts_ns", "tid").filter(pl.col("tid").is_in(list(tids)))
    rows += [(ts, 2, tid, None) for ts, tid in wakes.iter_rows()]
    running, runnable, since = [], [], {}
    for ts, what, tid, voluntary in sorted(rows):
        state, start = since.get(tid, (None, None))
        if what == 0:  # switched out
            if state == "running":
                running.append((start, ts))
            elif state == "runnable":  # its switch-in was not seen
                runnable.append((start, ts))
            since[tid] = ("runnable", ts) if voluntary is False else ("blocked", ts)
        elif what == 1:  # switched in
            if state == "runnable":
                runnable.append((start, ts))
            since[tid] = ("running", ts)
        elif state != "running" and state != "runnable":  # woken
            since[tid] = ("runnable", ts)
    return running, runnable


def irqs_on(trace) -> list[tuple[int, int]]:
    spans = []
    for kind in (Event.HARDIRQ, Event.SOFTIRQ, Event.IRQ_VECTOR):
        frame = trace.of(kind, "ts_ns", "cpu", "duration_ns").filter(pl.col("cpu") == CPU)
        spans += [(ts, ts + d) for ts, _, d in frame.iter_rows()]
    return sorted(spans)


def overlap(parts: list[tuple[int, int]], spans: list[tuple[int, int]]) -> int:
    """Total overlap of two interval lists (SPANS may overlap each other: their union counts once)."""
    merged = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    total, j = 0, 0
    for s, e in sorted(parts):
        while j < len(merged) and merged[j][1] <= s:
            j += 1
        k = j
        while k < len(merged) and merged[k][0] < e:
            total += max(0, min(e, merged[k][1]) - max(s, merged[k][0]))
            k += 1
    return total


def idle_by_culprit(trace) -> pl.DataFrame:
    """The exact attribution, whole (the report keeps the top ten culprits)."""
    from launchgap.analysis.gpu_time import gpu_idle
    from launchgap.analysis.irqs import irq_intervals
    from launchgap.analysis.targets import target_pids, target_threads
    from launchgap.analysis.timeline import cpu_runs, thread_segments, trace_bounds

    bounds = trace_bounds(trace)
    tids = target_threads(trace, target_pids(trace))["tid"].to_list()
    _, _, idle = gpu_idle(
        trace,
        thread_segments(trace, tids, bounds),
        cpu_runs(trace, bounds),
        irq_intervals(trace),
        (bounds.start_ns, bounds.end_ns),
    )
    return idle


def stated_error_ns(trace) -> int:
    started = trace.of(Event.GPU_COLLECTOR, "state", "detail").filter(pl.col("state") == "started")
    return max(json.loads(d)["clock"]["error_ns"] for d in started["detail"])


def truth_caused(run: Run, culprit_pid: int | None = None) -> tuple[int, int]:
    """(GPU idle interference caused, the tolerance), from the truth's gaps and the trace's switch, wakeup
    and interrupt rows alone: the host parts of the gaps the launching thread spent runnable, not running
    (behind CULPRIT_PID alone, when given; else behind any task but the CPU's idle one and launchgap's own),
    or running under an interrupt."""
    gaps = pl.concat([truth_idle(t) for t in run.truths])
    total = 0
    idle_or_ours = not_interference_runs(run.trace)
    for (tid,), mine in gaps.filter(pl.col("host_end") > pl.col("gap_start")).group_by("tid"):
        running, runnable = thread_states(run.trace, {tid})
        host = sorted(mine.select("gap_start", "host_end").iter_rows())
        waiting = intersect(host, sorted(runnable))
        if culprit_pid is not None:
            total += overlap(waiting, runs_of(run.trace, culprit_pid))
            continue
        total += sum(end - start for start, end in waiting) - overlap(waiting, idle_or_ours)
        total += overlap(intersect(host, sorted(running)), irqs_on(run.trace))
    return total, 2 * stated_error_ns(run.trace) * gaps.height


def check_bounds(run: Run, truth_ns: int, tolerance: int) -> object:
    """Without GPU activity the host bounds the GPU idle the interference caused: the truth lies between."""
    bounds = build_report(without_gpu_activity(run.trace)).gpu_time
    assert isinstance(bounds, GpuTimeBounds) and bounds.why == "attached with -p: for the test"
    assert bounds.interference_low_ns - tolerance <= truth_ns <= bounds.interference_high_ns + tolerance, (
        bounds.interference_low_ns,
        truth_ns,
        bounds.interference_high_ns,
    )
    print(
        f"truth {truth_ns / 1e6:.2f} ms, bounds {bounds.interference_low_ns / 1e6:.2f}.."
        f"{bounds.interference_high_ns / 1e6:.2f} ms ({bounds.note})"
    )
    return bounds


def check_exact(run: Run, culprit_pid: int | None) -> dict:
    """The report's GPU idle equals the truth's, every nanosecond has a cause, and the culprit is named;
    without the GPU activity, the host's bounds contain the truth."""
    report = build_report(run.trace)
    g = report.gpu_time
    assert isinstance(g, GpuTimeExact)
    # every idle nanosecond of the trace's window has exactly one cause
    assert sum(c.ns for c in g.causes) == g.idle_ns == g.span_ns - g.busy_ns
    gaps = pl.concat([truth_idle(t) for t in run.truths])
    error = stated_error_ns(run.trace)
    tolerance = 2 * error * gaps.height
    between = sum(c.ns for c in g.causes if c.cause not in ("before_first", "after_last"))
    assert abs(between - int((gaps["gap_end"] - gaps["gap_start"]).sum())) <= tolerance
    # the host's part of every gap, split by what the truth and the trace say the culprit did then
    # a culprit costs the GPU only while the launching thread waited for the CPU it held (or, for
    # interrupts, while they interrupted it running): per thread, the host parts it ended
    exposed = []
    for (tid,), mine in gaps.filter(pl.col("host_end") > pl.col("gap_start")).group_by("tid"):
        running, runnable = thread_states(run.trace, {tid})
        host = sorted(mine.select("gap_start", "host_end").iter_rows())
        exposed += intersect(host, sorted(runnable) if culprit_pid else sorted(running))
    culprits_part = overlap(exposed, runs_of(run.trace, culprit_pid) if culprit_pid else irqs_on(run.trace))
    # every culprit's GPU idle, not only the report's top ten
    idle = idle_by_culprit(run.trace)
    if culprit_pid:
        named = int(idle.filter(pl.col("culprit_pid") == culprit_pid)["ns"].sum())
    else:
        named = int(idle.filter(pl.col("cause") == "irq")["ns"].sum())
    # all the interference, whoever caused it: exact, and bounded without the GPU activity
    interference, _ = truth_caused(run)
    assert abs(g.interference_ns - interference) <= tolerance, (g.interference_ns, interference)
    bounds = check_bounds(run, interference, tolerance)
    return {
        "report": report,
        "truth_caused": culprits_part,
        "named": named,
        "tolerance": tolerance,
        "between": between,
        "gpu": g,
        "idle": idle,
        "bounds": bounds,
        "exposed": exposed,
    }


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hog_beside_a_launch_bound_decode_costs_the_gpu_one_for_one(tmp_path, shape):
    with culprit("hog") as hog:
        run = record(tmp_path, [[*LAUNCH_BOUND, "--tokens", "40"]], SHAPES[shape])
    found = check_exact(run, hog)
    # GPU idle the hog caused: large (beside whatever else shares this machine), and named for it
    assert found["truth_caused"] > 0.05 * found["between"]
    assert found["named"] >= 0.95 * found["truth_caused"] - found["tolerance"]
    assert found["named"] <= found["truth_caused"] + found["tolerance"]
    assert found["report"].verdict.basis == "gpu_time"
    assert found["report"].verdict.level == "heavy"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hog_beside_a_gpu_bound_decode_is_hidden_by_queued_work(tmp_path, shape):
    with culprit("hog") as hog:
        run = record(tmp_path, [[*GPU_BOUND, "--tokens", "3"]], SHAPES[shape])
    found = check_exact(run, hog)
    g = found["gpu"]
    assert found["named"] >= 0.95 * found["truth_caused"] - found["tolerance"]
    # the hog took much of the launching thread's CPU time, and the GPU hardly noticed
    report = found["report"]
    launching = {t.tid for t in report.taken.threads if t.launches}
    taken_by_hog = sum(c.ns for t in report.taken.threads if t.tid in launching for c in t.culprits if c.pid == hog)
    # of the time the thread wanted the CPU (ran, or waited runnable), not of its life (mostly blocked in syncs)
    wanted = sum(t.running_ns + t.preempted_ns + t.runqueue_ns for t in report.taken.threads if t.tid in launching)
    assert taken_by_hog > 0.2 * wanted
    assert found["named"] < 0.01 * g.active_ns
    # the GPU lost time only where the hog ran at a token's start, when the queue was empty (three of them
    # here, a timeslice of the hog's at most each): far less than the CPU time it took
    assert found["named"] * 5 < taken_by_hog
    # so the verdict, heavy on the CPU side, is no action in GPU time
    assert report.verdict.level == "negligible" and report.verdict.basis == "gpu_time"
    assert ": negligible: no action needed" in verdict_text(report.verdict)
    assert "queued GPU work hid" in verdict_text(report.verdict)


def test_a_gpu_that_hardly_noticed_is_told_hidden_not_heavy():
    """The verdict on GPU time: heavy on the CPU side, under 1% of the GPU's span in GPU time."""
    from launchgap.analysis.records import GpuCulprit, Verdict
    from launchgap.analysis.verdict import gpu_verdict

    cpu = Verdict(
        level="heavy",
        taken_percent=40.0,
        taken_ns=400_000_000,
        main_cause="preemption",
        recoverable_ns=0,
        grounds=None,  # the GPU-time verdict rests on grounds of its own
    )
    hog = GpuCulprit(
        name="hog",
        pids=[7],
        is_interrupt=False,
        low_ns=3_000_000,
        high_ns=3_000_000,
        share_percent=100.0,
        causes={"preempted": 3_000_000},
        recoverable_low_ns=3_000_000,
        recoverable_high_ns=3_000_000,
    )
    g = GpuTimeExact(
        span_ns=5_000_000_000,
        busy_ns=4_500_000_000,
        idle_ns=500_000_000,
        busy_percent=90.0,
        causes=[],
        interference_ns=3_000_000,
        own_ns=1_000_000,
        culprits=[hog],
        cpu_interference_ns=400_000_000,
        hidden_ns=397_000_000,
        hidden_percent=99.25,
        processes=[],
        active_ns=4_000_000_000,
        prediction=None,
        culprits_by_cgroup=None,
        culprits_by_process=[],
        measurement=None,
        wakeup_latency_ns=0,
        window_busy_percent=None,
    )
    verdict = gpu_verdict(cpu, g)
    assert (verdict.level, verdict.basis) == ("negligible", "gpu_time")
    assert verdict_text(verdict) == (
        "The GPU lost 3.0 ms of its 4.00 s of work to interference (0.07%): negligible: no action needed (below 1% "
        "negligible, from 5% heavy). Its launching threads lost 400.0 ms of CPU time meanwhile; queued GPU work hid "
        "99% of it. No scheduler or IRQ tuning is needed; monitor only."
    )
    heavy = gpu_verdict(cpu, dataclasses.replace(g, interference_ns=400_000_000))
    assert heavy.level == "heavy"
    assert verdict_text(heavy).startswith(
        "The GPU lost 400.0 ms of its 4.00 s of work to interference (10.00%): heavy "
        "(below 1% negligible, from 5% heavy). Most of it was hog (pid 7): 3.0 ms, 100% of "
        "it. Isolate cores"
    )


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_launch_bound_and_a_gpu_bound_process_are_judged_apart(tmp_path, shape):
    with culprit("hog") as hog:
        run = record(tmp_path, [[*LAUNCH_BOUND, "--tokens", "20"], [*GPU_BOUND, "--tokens", "2"]], SHAPES[shape])
    found = check_exact(run, hog)
    assert found["named"] >= 0.95 * found["truth_caused"] - found["tolerance"]
    by_pid = {p.pid: p for p in found["gpu"].processes}
    launch_pid = run.truths[0]["processes"][0]["pid"]
    gpu_pid = run.truths[1]["processes"][0]["pid"]
    # the hog cost the launch-bound process's GPU a large share of its span, the GPU-bound one's little
    assert by_pid[launch_pid].interference_ns > 0.1 * by_pid[launch_pid].span_ns
    assert by_pid[gpu_pid].interference_ns < 0.05 * by_pid[gpu_pid].span_ns


@pytest.mark.parametrize("shape", list(SHAPES))
def test_interrupts_on_the_launching_cpu_are_named(tmp_path, shape):
    with culprit("irq"):
        run = record(tmp_path, [[*LAUNCH_BOUND, "--tokens", "40"]], SHAPES[shape])
    found = check_exact(run, None)
    assert found["named"] >= 0.95 * found["truth_caused"] - found["tolerance"]
    assert found["named"] <= found["truth_caused"] + found["tolerance"]
    # which interrupt: the test's own, not whichever cost most (beside other work, another interrupt may: a
    # fresh clone's `make test` once had HRTIMER 22 ms to this NET_RX's 16 ms). The GPU idle the report names
    # for NET_RX is what the truth's gaps and the trace's NET_RX softirqs on CPU say it caused; those are never
    # more than the kernel counted there (/proc/softirqs at the window's edges: the rows themselves are checked
    # against it in tests/recorder/test_irqs.py; recording in target mode, as here, starts on CPU only when the
    # target first runs there, after the kernel's first read, so the count may fall short of the kernel's)
    from tests.recorder.test_irqs import EDGE_TOLERANCE, counted, deltas

    counters = run.trace.end["proc_counters"]
    net_rx = run.trace.of(Event.SOFTIRQ, "ts_ns", "cpu", "irq_name", "duration_ns").filter(
        (pl.col("cpu") == CPU) & (pl.col("irq_name") == "NET_RX")
    )
    surely, _ = counted(net_rx, counters, "softirqs", ["cpu"])
    assert surely.get((CPU,), 0) <= deltas(counters, "softirqs")[("NET_RX", CPU)] + EDGE_TOLERANCE
    caused = overlap(found["exposed"], [(ts, ts + d) for ts, *_, d in net_rx.iter_rows()])
    named = int(found["idle"].filter((pl.col("cause") == "irq") & (pl.col("culprit") == "NET_RX"))["ns"].sum())
    # the traffic did interrupt the launching thread in its gaps' host parts (else this proves nothing); the
    # named part can fall short of it only where another interrupt nested inside a NET_RX (its own culprit)
    assert caused > 0, "no NET_RX landed in a gap's host part: the traffic missed the launching thread"
    assert caused - 0.05 * found["truth_caused"] - found["tolerance"] <= named <= caused + found["tolerance"], (
        named,
        caused,
    )


def without_gpu_activity(trace):
    """The same trace as one recorded without --gpu-activity (an older launchgap, or -p). The collector's thread
    still ran in it: the row naming it stays, so that its time is measurement here as there."""
    from launchgap.trace.model import FrameTables, Trace

    frames = {
        kind: trace.of(kind)
        for kind in Event
        if trace.count(kind) and (not kind.value.startswith("gpu_") or kind is Event.GPU_COLLECTOR_THREAD)
    }
    meta = {**trace.meta, "gpu_activity": {"recorded": False, "why": "attached with -p: for the test"}}
    return Trace(path=trace.path, meta=meta, tables=FrameTables(frames), truncated=False, summary=trace.summary)


@pytest.mark.parametrize("workload", ["launch-bound", "gpu-bound"])
def test_the_gain_predicted_from_a_run_with_the_hog_is_what_a_run_without_it_measures(tmp_path, workload):
    """Same seed, interleaved: with the hog (recorded, its GPU idle taken out by the report) and without it
    (measured by cudasim itself), three pairs, each run right after the other; the median of the pairs'
    predicted over measured within 10%. The workload and the hog run heavy: the prediction
    gives the launching thread the hog's CPU time in proportion to the weights of the tasks waiting for
    that CPU meanwhile, but without the hog the scheduler would also move tasks waiting on other CPUs to
    it, which no trace of the run with the hog shows (docs/gpu-time.md). Heavy, the two are what counts on
    that CPU whatever else loads the machine, as on a node where the hog is the interference."""
    from launchgap.analysis.gpu_time import gain_without

    # the launch-bound runs long enough (about a second) that a burst of outside load does not decide a run
    args = [*LAUNCH_BOUND, "--tokens", "200"] if workload == "launch-bound" else [*GPU_BOUND, "--tokens", "3"]
    pairs = []
    for i in range(3):
        with culprit("hog", weighty=True) as hog:
            run = record(tmp_path, [[*args, "--seed", "7"]], {}, name=f"hog-{i}", weighty=True)
        gain = gain_without(build_report(run.trace).gpu_time, {hog})
        assert gain is not None
        predicted = run.truths[0]["tokens_per_s"] * (1 + gain[1] / 100)
        free = record(tmp_path, [[*args, "--seed", "7"]], {}, name=f"free-{i}", weighty=True)
        pairs.append((predicted, free.truths[0]["tokens_per_s"]))
    ratios = sorted(predicted / measured for predicted, measured in pairs)
    print(f"{workload}: (predicted, measured) tok/s {pairs}; predicted / measured {ratios}")
    assert abs(ratios[1] - 1) <= 0.10


def test_the_gain_predicted_at_default_settings_is_what_runs_without_the_hog_measure(tmp_path):
    """As most servers run: nice 0, sched_autogroup as the host has it, the hog in a session of its own (a
    neighbour's job). Five runs with the hog, each followed by one without it (the same flags: recorded
    with GPU activity, so the collector's thread runs in both); the median of the five predictions within
    10% of the median throughput measured by cudasim without the hog. Here the launching thread shares its
    CPU with the hog at equal weight, and with the collector's thread, which runs a batch and blocks: a
    helper that takes none of the hog's freed time (docs/gpu-time.md, "What a fix would buy").

    The prediction holds the rest of the CPU's load as the run with the hog saw it. On a machine busy with
    other work it is not: the hog pinned there kept that work away, and gone, lets the load balancer move it
    in (docs/gpu-time.md says the prediction leaves this out). So each run without the hog is held to the
    same rest: its GPU idle behind other tasks (the truth's gaps, waited behind any task but the CPU's idle
    one, launchgap's own and the hog, as truth_caused counts it) at the rate the run with the hog had it. On
    a quiet machine both rates are near nothing and this is the throughput cudasim measured. What this holds
    the prediction to is then the hog's part alone (its recoverable share, at the scheduler's weights): the
    balancer's move, which beside stress-ng made the runs without the hog half as fast as predicted, is the
    limit docs/gpu-time.md states, and no test of this one."""
    from launchgap.analysis.gpu_time import gain_without

    args = [*LAUNCH_BOUND, "--tokens", "200", "--seed", "7"]
    predicted, measured, raw = [], [], []
    for i in range(5):
        with culprit("hog") as hog:
            run = record(tmp_path, [args], {}, name=f"hog-{i}")
        gain = gain_without(build_report(run.trace).gpu_time, {hog})
        assert gain is not None
        predicted.append(run.truths[0]["tokens_per_s"] * (1 + gain[1] / 100))
        free = record(tmp_path, [args], {}, name=f"free-{i}")
        measured.append(at_the_rest_of(free, rest_rate(run, hog)))
        raw.append(free.truths[0]["tokens_per_s"])
    ratio = statistics.median(predicted) / statistics.median(measured)
    print(
        f"default settings: predicted tok/s {predicted}, measured {raw}, at the hog runs' rest {measured}; "
        f"medians' ratio {ratio:.3f}"
    )
    assert abs(ratio - 1) <= 0.10


def rest_rate(run: Run, hog: int) -> float:
    """The share of RUN's wall time its GPU idled behind other tasks than the hog (and the CPU's idle task and
    launchgap's own), from the truth's gaps and the trace's switch rows (truth_caused)."""
    anyone, _ = truth_caused(run)
    by_hog, _ = truth_caused(run, hog)
    truth = run.truths[0]
    return max(0, anyone - by_hog) / (truth["end_ns"] - truth["start_ns"])


def at_the_rest_of(free: Run, rate: float) -> float:
    """FREE's tokens per second had its GPU idled behind other tasks at RATE of its wall time: its own time (the
    wall less what it idled behind other tasks, truth_caused) over 1 - RATE."""
    truth = free.truths[0]
    caused, _ = truth_caused(free)
    own = truth["end_ns"] - truth["start_ns"] - caused
    return truth["tokens"] / (own / (1 - rate) / 1e9)
