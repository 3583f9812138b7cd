"""Switches agree with the kernel's own per-thread counters, for every
thread of the targets, split into preempted (nonvoluntary) and blocked
(voluntary) exactly as the kernel counts them."""

from __future__ import annotations

import os

import polars as pl

from launchgap.trace import Event
from tests.recorder.conftest import assert_switches_as_the_kernel_counted, cudasim_command, needs_bpf

pytestmark = needs_bpf


def pin_to_first_cpu() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def test_switch_outs_equal_the_kernels_counters_for_every_thread(record):
    # three launching threads in each of two processes on one CPU: they preempt each other
    run = record(
        cudasim_command("--tokens", "15", "--threads", "3", "--procs", "2", "--host-us", "800"),
        preexec_fn=pin_to_first_cpu,
    )
    switches = run.trace.of(Event.SWITCH)
    threads = [t for p in run.truth["processes"] for t in p["threads"]]
    assert len(threads) == 6
    total_involuntary = 0
    for thread in threads:
        counters = thread["kernel_switches"]
        mine = switches.filter(pl.col("tid") == thread["tid"])
        assert_switches_as_the_kernel_counted(mine, counters)
        assert set(mine["pid"].to_list()) == {next(p["pid"] for p in run.truth["processes"] if thread in p["threads"])}
        total_involuntary += counters["nonvoluntary"]
    assert total_involuntary > 0, "the workload was meant to be preempted"


def test_every_switch_names_who_ran_next(record):
    run = record(cudasim_command("--tokens", "10", "--threads", "2"), preexec_fn=pin_to_first_cpu)
    switches = run.trace.of(Event.SWITCH)
    target_tids = {t["tid"] for p in run.truth["processes"] for t in p["threads"]}
    outs = switches.filter(pl.col("tid").is_in(list(target_tids)))
    assert outs["next_tid"].null_count() == 0 and outs["next_comm"].null_count() == 0
    # each switch-out of a target is followed by that thread switching in again, except after a
    # switch to a "silent" task: this sandbox's firecracker-init threads are switched in, but the kernel
    # never fires sched_switch when they leave the CPU (perf sees the same), so that switch-in is unseen
    ins = switches.filter(pl.col("next_tid").is_in(list(target_tids)))
    outs_by_anyone = set(switches["tid"].unique().to_list())
    silent = set(switches["next_tid"].unique().to_list()) - outs_by_anyone - target_tids
    per_tid_out = dict(outs.group_by("tid").len().iter_rows())
    per_tid_in = dict(ins.group_by("next_tid").len().iter_rows())
    for tid in target_tids:
        to_silent = outs.filter((pl.col("tid") == tid) & pl.col("next_tid").is_in(list(silent))).height
        assert -to_silent <= per_tid_in[tid] - per_tid_out[tid] <= 1, (tid, per_tid_in[tid], per_tid_out[tid], silent)


def test_wakeups_and_lifetime_of_targets_are_recorded(record):
    run = record(cudasim_command("--tokens", "5", "--threads", "2", "--procs", "2"))
    trace, truth = run.trace, run.truth
    launcher_pid = trace.meta["command_pid"]
    forks = trace.of(Event.FORK)
    child_pids = {p["pid"] for p in truth["processes"]}
    worker_tids = {t["tid"] for p in truth["processes"] for t in p["threads"]}
    # the launcher forks two children; each child starts two worker threads
    assert set(forks.filter(pl.col("pid") == launcher_pid)["child_pid"].to_list()) == child_pids
    assert set(forks.filter(pl.col("pid").is_in(list(child_pids)))["child_tid"].to_list()) == worker_tids
    assert trace.of(Event.EXEC).filter(pl.col("pid") == launcher_pid)["comm"].to_list() == ["cudasim"]
    exits = trace.of(Event.EXIT)
    assert worker_tids | child_pids | {launcher_pid} <= set(exits["tid"].to_list())
    new_wakeups = trace.of(Event.WAKEUP_NEW)
    assert worker_tids <= set(new_wakeups["tid"].to_list())
    # every block but the last (the exit) ends in a wakeup: blocked switch-outs - 1 <= wakeups
    wakeups = dict(
        trace.of(Event.WAKEUP).filter(pl.col("tid").is_in(list(worker_tids))).group_by("tid").len().iter_rows()
    )
    switches = trace.of(Event.SWITCH)
    for tid in worker_tids:
        blocks = switches.filter((pl.col("tid") == tid) & pl.col("voluntary")).height
        assert blocks >= 2 and wakeups.get(tid, 0) >= blocks - 1, (tid, blocks, wakeups.get(tid))
