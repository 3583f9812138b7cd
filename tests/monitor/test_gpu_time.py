"""GPU time from the monitor (docs/monitor.md, "GPU time: bounds, not a measurement"): the sync
waits the kernel side counts, and the per-process bounds of the GPU idle that CPU interference
caused, against cudasim's ground truth, with a CPU hog pinned to the launching thread's CPU.

The monitor never sees the GPU; the truth does: every kernel's gpu_start_ns/gpu_end_ns and every
copy's copy_start_ns/waited_for_ns on the virtual GPU, every sync's entry, return and the time
its awaited work completed, and the thread's own schedstat. What each test can assert exactly:

- a sync can block only by sleeping, and cudasim sleeps only when its work was not done at entry
  (waited_for_ns > t_enter_ns); one whose work was 100 ms away blocked for certain (no wait for a
  CPU beside one hog is that long). So per entry point: syncs that had >= 100 ms to wait <= blocked
  <= syncs that had anything to wait;
- the lower bound counts delays between a drain sync's return and the thread's next launch, when
  the GPU had nothing of it: it is at most the sum of those windows (t_exit to the next t_enter),
  which are GPU idle (their sum at most the GPU's idle);
- the upper bound counts every delay between the thread's first GPU work and its last launch: at
  least the part of each GPU idle gap that nothing but a delay of the thread can explain (what is
  over the host step and a generous millisecond for the launch and the wake-up; a vCPU the
  hypervisor did not run, unseen by the guest, costs well under that here), and its preempted
  and run-queue part at most the kernel's own run_delay of the thread (schedstat; the monitor's
  waits end at the sched_switch tracepoint, a little after the kernel's: docs/metrics.md allows
  2% + 50 us a run).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from launchgap.trace.schema import DRAIN_API_NAMES, GPU_IDLE_CAUSE_NAMES
from tests.conftest import LIBCUDA
from tests.monitor.conftest import cpu_hog, needs_bpf, running_monitor
from tests.monitor.test_exposition import by_api, cudasim

pytestmark = needs_bpf

# the causes the bounds are split by: interference (preempted, runqueue, irq)
CAUSES = GPU_IDLE_CAUSE_NAMES[:3]
LOWER = "launchgap_gpu_idle_caused_lower_seconds_total"
UPPER = "launchgap_gpu_idle_caused_upper_seconds_total"
MUST_BLOCK_NS = 100_000_000
# what a GPU idle gap may hold besides the host step and the thread's delays: a launch's own cost
# (2-50 us), a timer's slack on the sync's sleep (50 us), the uprobes
UNDISTURBED_GAP_NS = 1_000_000
SCHEDSTAT_RELATIVE, SCHEDSTAT_PER_RUN_NS = 0.02, 50_000
HOG_CPU = sorted(os.sched_getaffinity(0))[-1]

LAUNCH_BOUND = ("--kernel-us", "2:4", "--tokens", "100")
# the host step outlasts a tick (250 Hz: 4 ms), so every drained window holds a delay: the tick's
# interrupt if the thread ran, else the time it waited
GPU_BOUND_HOST_NS = 5_000_000
GPU_BOUND = (
    "--kernel-us",
    "500:1000",
    "--launch-ns",
    "50000",
    "--tokens",
    "6",
    "--host-us",
    str(GPU_BOUND_HOST_NS // 1000),
)


def table(truth: dict, name: str) -> list[dict]:
    columns = truth[f"{name}_columns"]
    return [dict(zip(columns, row)) for row in truth[f"{name}es" if name == "launch" else f"{name}s"]]


@dataclass
class Observed:
    truth: dict
    process: dict
    thread: dict
    launches: list[dict]
    syncs: list[dict]
    lower: dict[str, float]
    upper: dict[str, float]
    blocked: dict[str, int]
    syncs_by_api: dict[str, int]
    launching_threads: float


def beside_a_hog(tmp_path, *args: str) -> Observed:
    """cudasim decode pinned on the hog's CPU, watched by the monitor; the truth and what it exported."""
    with cpu_hog(HOG_CPU), running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        truth = cudasim(tmp_path, *args, prefix=("taskset", "-c", str(HOG_CPU)))
        monitor.settle(1.0)
        scrape = monitor.scrape()
    process = truth["processes"][0]
    pid = str(process["pid"])
    assert len(process["threads"]) == 1 and not process["threads"][0]["failed"]
    for name in (LOWER, UPPER):
        assert {s.labels["cause"] for s in scrape.select(name, pid=pid)} == set(CAUSES), f"{name} not exported"
    return Observed(
        truth=truth,
        process=process,
        thread=process["threads"][0],
        launches=sorted(table(truth, "launch"), key=lambda r: r["t_enter_ns"]),
        syncs=sorted(table(truth, "sync"), key=lambda r: r["t_enter_ns"]),
        lower={c: scrape.total(LOWER, pid=pid, cause=c) * 1e9 for c in CAUSES},
        upper={c: scrape.total(UPPER, pid=pid, cause=c) * 1e9 for c in CAUSES},
        blocked=by_api(scrape, "launchgap_blocked_syncs_total", process["pid"]),
        syncs_by_api=by_api(scrape, "launchgap_syncs_total", process["pid"]),
        launching_threads=scrape.total("launchgap_launching_threads", pid=pid),
    )


def idle_gaps(run: Observed) -> list[tuple[int, int]]:
    """The GPU's idle intervals between its first work (a kernel or a copy) and its last kernel's start."""
    work = [(r["gpu_start_ns"], r["gpu_end_ns"]) for r in run.launches]
    work += [(r["copy_start_ns"], r["waited_for_ns"]) for r in run.syncs if r["copy_start_ns"] is not None]
    last_kernel = max(r["gpu_start_ns"] for r in run.launches)
    gaps, busy_until = [], None
    for start, end in sorted(work):
        if busy_until is not None and start > busy_until and start <= last_kernel:
            gaps.append((busy_until, start))
        busy_until = end if busy_until is None else max(busy_until, end)
    return gaps


def drained_windows(run: Observed) -> list[tuple[int, int]]:
    """From each drain sync's return to the thread's next launch: the GPU had nothing of the thread."""
    enters = [r["t_enter_ns"] for r in run.launches]
    windows, i = [], 0
    for sync in run.syncs:
        if sync["api"] not in DRAIN_API_NAMES:
            continue
        while i < len(enters) and enters[i] <= sync["t_exit_ns"]:
            i += 1
        if i < len(enters):
            windows.append((sync["t_exit_ns"], enters[i]))
    return windows


def check_sync_waits(run: Observed) -> None:
    assert run.syncs_by_api == run.process["syncs_by_api"]
    for api in run.process["syncs_by_api"]:
        mine = [s for s in run.syncs if s["api"] == api]
        could = sum(s["waited_for_ns"] > s["t_enter_ns"] for s in mine)
        must = sum(s["waited_for_ns"] - s["t_enter_ns"] >= MUST_BLOCK_NS for s in mine)
        blocked = run.blocked.get(api, 0)
        print(f"{api}: {len(mine)} syncs, {could} had work to wait for, {must} >= 100 ms; blocked {blocked}")
        assert must <= blocked <= could, api
    # each blocked sync is a voluntary switch of the thread, as the kernel counts them itself
    assert sum(run.blocked.values()) <= run.thread["kernel_switches"]["voluntary"]


def check_bounds(run: Observed, host_step_ns: int) -> tuple[float, float, int]:
    lower, upper = sum(run.lower.values()), sum(run.upper.values())
    gaps = idle_gaps(run)
    idle = sum(end - start for start, end in gaps)
    windows = sum(end - start for start, end in drained_windows(run))
    unexplained = sum(max(0, end - start - host_step_ns - UNDISTURBED_GAP_NS) for start, end in gaps)
    schedstat = run.thread["kernel_schedstat"]
    waits = run.upper["preempted"] + run.upper["runqueue"]
    print(
        f"GPU idle {idle / 1e6:.2f} ms in {len(gaps)} gaps ({unexplained / 1e6:.2f} ms more than the host's own "
        f"work explains), drained windows {windows / 1e6:.2f} ms; lower {lower / 1e6:.3f} ms "
        f"{ {c: round(v / 1e6, 3) for c, v in run.lower.items()} }, upper {upper / 1e6:.3f} ms "
        f"{ {c: round(v / 1e6, 3) for c, v in run.upper.items()} }; run_delay {schedstat['run_delay_ns'] / 1e6:.2f} ms"
    )
    assert run.launching_threads == 1
    for cause in CAUSES:
        assert 0 <= run.lower[cause] <= run.upper[cause], cause
    assert windows <= idle
    assert lower <= windows
    assert unexplained <= upper
    assert (
        waits <= schedstat["run_delay_ns"] * (1 + SCHEDSTAT_RELATIVE) + SCHEDSTAT_PER_RUN_NS * schedstat["timeslices"]
    )
    return lower, upper, unexplained


def test_launch_bound_decode_beside_a_hog(tmp_path):
    """Short kernels: the GPU waits for the launches, so the hog's delays idle it."""
    run = beside_a_hog(tmp_path, *LAUNCH_BOUND)
    check_sync_waits(run)
    _, _, unexplained = check_bounds(run, run.truth["config"]["host_step_ns"])
    assert unexplained > 0, "the hog never delayed the GPU visibly: nothing was bounded"


def test_gpu_bound_decode_beside_a_hog(tmp_path):
    """Kernels longer than the host's step: the thread is delayed while its GPU has queued work
    (hidden: in the upper bound only, which so exceeds all the GPU's idle), and in each window
    after a token's sync, where the GPU had nothing (the lower bound, above 0)."""
    run = beside_a_hog(tmp_path, *GPU_BOUND)
    check_sync_waits(run)
    dtoh = [s for s in run.syncs if s["api"] == "cuMemcpyDtoH_v2"]
    assert len(dtoh) == 6 and all(s["waited_for_ns"] - s["t_enter_ns"] >= MUST_BLOCK_NS for s in dtoh)
    assert run.blocked["cuMemcpyDtoH_v2"] == 6
    lower, upper, _ = check_bounds(run, GPU_BOUND_HOST_NS)
    assert lower > 0
    # all the idle there was cannot account for the upper bound: the rest hid behind queued work
    assert upper > sum(end - start for start, end in idle_gaps(run))
