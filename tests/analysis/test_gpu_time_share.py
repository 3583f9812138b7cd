"""What taking a culprit away would give back (docs/gpu-time.md, "What a fix would buy"): the launching
thread's share of the freed CPU time, against the tasks waiting for that CPU, by their weights, worked
out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from launchgap.analysis.gpu_time import Competition, weight_of, with_share

ME, CULPRIT = 10, 20

# The kernel's own table, as kernel/sched/core.c states it (sched_prio_to_weight, nice -20 to 19), not the
# product's copy: the truth the analysis' weights are held to
SCHED_PRIO_TO_WEIGHT = (
    88761,
    71755,
    56483,
    46273,
    36291,  # -20
    29154,
    23254,
    18705,
    14949,
    11916,  # -15
    9548,
    7620,
    6100,
    4904,
    3906,  # -10
    3121,
    2501,
    1991,
    1586,
    1277,  # -5
    1024,
    820,
    655,
    526,
    423,  # 0
    335,
    272,
    215,
    172,
    137,  # 5
    110,
    87,
    70,
    56,
    45,  # 10
    36,
    29,
    23,
    18,
    15,  # 15
)


def weight(prio: int) -> int:
    """The kernel's weight of a fair task at PRIO (nice = prio - 120, kernel prio 100..139); a real-time task's
    (prio below 100) as the analysis weighs it (docs/gpu-time.md: ahead of every fair task)."""
    return pl.select(weight_of(pl.lit(prio))).item() if prio < 100 else SCHED_PRIO_TO_WEIGHT[prio - 100]


def test_the_analysis_weighs_each_nice_level_as_the_kernel_does():
    prios = list(range(100, 140))
    assert pl.select(weight_of(pl.Series(prios))).to_series().to_list() == list(SCHED_PRIO_TO_WEIGHT)


def waits(*rows: tuple[int, int, int, int, int]) -> pl.DataFrame:
    """(cpu, tid, start, end, prio) -> the competition's waits, each at its prio's weight."""
    return pl.DataFrame(
        [(cpu, tid, start, end, weight(prio)) for cpu, tid, start, end, prio in rows],
        schema={"cpu": pl.UInt32, "tid": pl.UInt32, "wait_start": pl.Int64, "wait_end": pl.Int64, "weight": pl.Int64},
        orient="row",
    )


def piece(start: int, end: int, cpu: int = 1) -> pl.DataFrame:
    return pl.DataFrame(
        {"cpu": [cpu], "tid": [ME], "culprit_tid": [CULPRIT], "piece_start": [start], "piece_end": [end]},
        schema={
            "cpu": pl.UInt32,
            "tid": pl.UInt32,
            "culprit_tid": pl.UInt32,
            "piece_start": pl.Int64,
            "piece_end": pl.Int64,
        },
    )


def share(pieces: pl.DataFrame, competition_waits: pl.DataFrame, my_prio: int = 120) -> float:
    weights = pl.DataFrame({"tid": [ME], "weight": [weight(my_prio)]}, schema={"tid": pl.UInt32, "weight": pl.Int64})
    return with_share(pieces, Competition(competition_waits, weights))["share"].item()


def test_alone_the_thread_gets_all_of_it():
    # its own wait and the culprit's are not competition; a task waiting on another CPU is not either
    assert (
        share(piece(0, 1000), waits((1, ME, 0, 1000, 120), (1, CULPRIT, 1000, 2000, 120), (0, 40, 0, 1000, 120))) == 1.0
    )


def test_overlapping_waits_all_count_by_their_weights():
    # on the piece's CPU: a nice-0 task all along; a nice-10 task half of it; two nice-0 tasks whose waits
    # overlap each other (both count while both wait)
    competition = waits(
        (1, 30, 0, 1000, 120),
        (1, 31, 500, 1000, 130),
        (1, 32, 200, 400, 120),
        (1, 33, 300, 600, 120),
        (1, ME, 0, 1000, 120),
    )
    others = (1024 * 1000 + 110 * 500 + 1024 * 200 + 1024 * 300) / 1000 / 1024
    assert share(piece(0, 1000), competition) == pytest.approx(1 / (1 + others))


def test_a_heavier_thread_takes_more_of_it():
    # the launching thread at nice -10 (9548) against one nice-0 task (1024) all along
    assert share(piece(0, 1000), waits((1, 30, 0, 1000, 120)), my_prio=110) == pytest.approx(9548 / (9548 + 1024))


def test_the_culprits_own_wait_is_not_competition():
    # the culprit itself waits on the piece's CPU for half the piece (preempted by another task there):
    # that is not a task the freed time would go to; the nice-0 task waiting all along is
    competition = waits((1, CULPRIT, 500, 1000, 120), (1, 30, 0, 1000, 120))
    assert share(piece(0, 1000), competition) == pytest.approx(1 / 2)


def test_real_time_comes_first():
    # a real-time task waiting takes the freed time, whatever the launching thread's nice level; a
    # real-time launching thread takes it from any fair task
    assert share(piece(0, 1000), waits((1, 30, 0, 1000, 99)), my_prio=101) < 1e-4
    assert share(piece(0, 1000), waits((1, 30, 0, 1000, 100)), my_prio=50) > 1 - 1e-4


def grouped(*rows: tuple[int, int, int, int, int, str, int]) -> pl.DataFrame:
    """(cpu, tid, start, end, prio, group, group's nice) -> waits with their scheduler groups' weights."""
    return pl.DataFrame(
        [
            (cpu, tid, start, end, weight(prio), group, SCHED_PRIO_TO_WEIGHT[20 + nice])
            for cpu, tid, start, end, prio, group, nice in rows
        ],
        schema={
            "cpu": pl.UInt32,
            "tid": pl.UInt32,
            "wait_start": pl.Int64,
            "wait_end": pl.Int64,
            "weight": pl.Int64,
            "group": pl.String,
            "group_weight": pl.Int64,
        },
        orient="row",
    )


def group_share(competition_waits: pl.DataFrame, my_group: str = "mine", my_group_nice: int = 0) -> float:
    weights = pl.DataFrame({"tid": [ME], "weight": [1024]}, schema={"tid": pl.UInt32, "weight": pl.Int64})
    # the launching thread in MY_GROUP since before the piece
    groups = pl.DataFrame(
        {"ts_ns": [-1], "tid": [ME], "group": [my_group], "group_weight": [SCHED_PRIO_TO_WEIGHT[20 + my_group_nice]]},
        schema={"ts_ns": pl.Int64, "tid": pl.UInt32, "group": pl.String, "group_weight": pl.Int64},
    )
    return with_share(piece(0, 1000), Competition(competition_waits, weights, groups))["share"].item()


def test_another_group_weighs_as_one_however_many_of_its_tasks_wait():
    # another session's autogroup with two nice-0 tasks waiting all along: the CPU goes half to each group, not
    # a third to each task
    assert group_share(grouped((1, 30, 0, 1000, 120, "theirs", 0), (1, 31, 0, 1000, 120, "theirs", 0))) == 0.5


def test_a_group_counts_while_any_of_its_tasks_waits():
    # two tasks of one other group waiting one after the other (0-400, 300-700): the group waits 0-700
    assert group_share(
        grouped((1, 30, 0, 400, 120, "theirs", 0), (1, 31, 300, 700, 120, "theirs", 0))
    ) == pytest.approx(1 / (1 + 700 / 1000))


def test_groups_weigh_by_their_weights_and_tasks_within_a_group_by_theirs():
    # the other session's autogroup at nice -10 (9548) against the launching thread's at nice 0 (1024); in
    # the launching thread's own group a nice-0 task waits half the piece: the group's part, then the task's
    competition = grouped((1, 30, 0, 1000, 139, "theirs", -10), (1, 32, 0, 500, 120, "mine", 0))
    assert group_share(competition) == pytest.approx(1024 / (1024 + 9548) / (1 + 500 / 1000))
    # the task's own nice does not weigh against another group's: only its group's does
    heavy_group = grouped((1, 30, 0, 1000, 139, "theirs", 0))
    assert group_share(heavy_group, my_group_nice=-10) == pytest.approx(9548 / (9548 + 1024))


def test_one_group_for_all_is_the_task_weights_alone():
    # a trace without group columns: every task in one group, as before them
    assert group_share(grouped((1, 30, 0, 1000, 130, "?", 0)), my_group="?") == pytest.approx(1024 / (1024 + 110))


# ---- competitors(): who waited, read from a trace's rows -----------------------------------------------

LAUNCHER, OTHER, SILENT = (100, 101, "cudasim"), (200, 201, "other"), (300, 301, "agent")


def waits_of(builder, tmp_path) -> list[tuple[int, int, int, int]]:
    from launchgap.analysis.gpu_time import competitors

    waits = competitors(builder.write(tmp_path / "t.lg")).waits
    return sorted(waits.filter(pl.col("tid") == OTHER[1]).select("cpu", "tid", "wait_start", "wait_end").rows())


def test_a_wait_begins_at_a_preemption_or_a_wakeup_and_ends_at_the_switch_in(tmp_path):
    from tests.analysis.builder import IDLE, TraceBuilder

    b = TraceBuilder()
    b.switch(2000, 1, OTHER, LAUNCHER)  # preempted: waits on CPU 1
    b.wakeup(2500, OTHER, 1)  # a wakeup of a task already waiting: no second wait
    b.switch(3000, 1, LAUNCHER, OTHER)  # switched in: the wait ends
    b.switch(4000, 1, OTHER, LAUNCHER)  # preempted again: it still wanted the CPU
    b.switch(4200, 1, LAUNCHER, OTHER)
    b.switch(4500, 1, OTHER, IDLE, voluntary=True)  # blocks
    b.wakeup(5000, OTHER, 0)  # woken onto CPU 0: waits there
    b.switch(5600, 0, IDLE, OTHER)  # and runs to the trace's end
    # the wait of 4000-4200 is left out: the run it led to ended with the task blocking (next test)
    assert waits_of(b, tmp_path) == [(0, 201, 5000, 5600), (1, 201, 2000, 3000)]


def test_a_co_waiter_that_blocks_after_its_turn_takes_no_share(tmp_path):
    """A task that waited, ran and then blocked wanted a fixed amount of CPU time (a helper thread's
    batch: cupti-worker's, a logger's), which it had with the culprit there as it would without: none of
    the culprit's freed time goes to it. One preempted after its turn wanted more than it got: it takes its
    share. The launching thread is preempted by the culprit at 1000-3000 while OTHER waits all along."""
    from launchgap.analysis.gpu_time import competitors
    from tests.analysis.builder import IDLE, TraceBuilder

    culprit = (400, 401, "hog")

    def launcher_share(other_ends_voluntarily: bool) -> float:
        b = TraceBuilder()
        b.switch(500, 1, IDLE, LAUNCHER)
        b.wakeup(900, OTHER, 1)  # OTHER waits on CPU 1 from 900 ...
        b.switch(1000, 1, LAUNCHER, culprit)  # the culprit preempts the launching thread
        b.switch(3000, 1, culprit, LAUNCHER)
        b.switch(3500, 1, LAUNCHER, OTHER, voluntary=True)  # ... to 3500
        b.switch(3700, 1, OTHER, IDLE, voluntary=other_ends_voluntarily)
        b.switch(3800, 1, IDLE, LAUNCHER)
        trace = b.write(tmp_path / f"t{int(other_ends_voluntarily)}.lg")
        pieces = pl.DataFrame(
            {"cpu": [1], "tid": [LAUNCHER[1]], "culprit_tid": [culprit[1]], "piece_start": [1000], "piece_end": [3000]},
            schema={
                "cpu": pl.UInt32,
                "tid": pl.UInt32,
                "culprit_tid": pl.UInt32,
                "piece_start": pl.Int64,
                "piece_end": pl.Int64,
            },
        )
        return with_share(pieces, competitors(trace))["share"].item()

    assert launcher_share(other_ends_voluntarily=True) == 1.0
    assert launcher_share(other_ends_voluntarily=False) == pytest.approx(1 / 2)


def test_a_wait_whose_switch_in_went_unseen_is_left_out(tmp_path):
    """A silent task (its switch-outs never traced) switched the waiting task back in: the task's next row
    is a switch-out of its own. Ending the wait there would count time the task ran; ending it at its next
    switch-in would count it twice (two waits ending together)."""
    from tests.analysis.builder import TraceBuilder

    b = TraceBuilder()
    b.switch(2000, 1, OTHER, SILENT)  # preempted by the silent task ...
    b.switch(3000, 1, OTHER, LAUNCHER)  # ... which switched it back in unseen: it ran till here
    b.switch(3500, 1, LAUNCHER, OTHER)  # this wait is whole
    assert waits_of(b, tmp_path) == [(1, 201, 3000, 3500)]


def test_each_wait_is_in_the_group_its_task_was_in_then(tmp_path):
    """The task_cgroup rows give each task's scheduler group from the row on; a wait before a task's first row
    is in the group of that first row; a task without rows is in the unknown group."""
    from launchgap.analysis.gpu_time import UNKNOWN_GROUP, competitors
    from tests.analysis.builder import IDLE, TraceBuilder

    b = TraceBuilder()
    b.switch(2000, 1, OTHER, LAUNCHER)  # preempted: waits on CPU 1 (before its first row)
    b.task_cgroup(2000, 1, LAUNCHER, 1, autogroup_id=7, group_weight=1024)
    b.task_cgroup(2500, 1, OTHER, 1, autogroup_id=8, group_weight=335)
    b.switch(3000, 1, LAUNCHER, OTHER)
    b.switch(4000, 1, OTHER, SILENT)  # preempted again, now in its session's new cgroup
    b.task_cgroup(4000, 1, OTHER, 1, sched_cgroup_id=42, group_weight=2048)
    b.switch(4200, 1, SILENT, OTHER)
    b.switch(4500, 1, OTHER, IDLE)  # preempted by nothing seen: runs on, a wait not ended
    competition = competitors(b.write(tmp_path / "t.lg"))
    waits = competition.waits.filter(pl.col("tid") == OTHER[1]).sort("wait_start")
    assert waits.select("wait_start", "wait_end", "group", "group_weight").rows() == [
        (2000, 3000, "a8", 335),
        (4000, 4200, "c42", 2048),
    ]
    assert competition.groups.select("ts_ns", "tid", "group", "group_weight").rows() == [
        (2000, LAUNCHER[1], "a7", 1024),
        (2500, OTHER[1], "a8", 335),
        (4000, OTHER[1], "c42", 2048),
    ]

    # the launching thread's group for a piece is the one it was in when the piece began; a task without
    # rows is in the unknown group
    def share_group(tid: int, at: int) -> str:
        pieces = pl.DataFrame(
            {"cpu": [1], "tid": [tid], "culprit_tid": [None], "piece_start": [at], "piece_end": [at + 10]},
            schema={
                "cpu": pl.UInt32,
                "tid": pl.UInt32,
                "culprit_tid": pl.UInt32,
                "piece_start": pl.Int64,
                "piece_end": pl.Int64,
            },
        )
        waits = pl.DataFrame(
            {
                "cpu": [1],
                "tid": [999],
                "wait_start": [at],
                "wait_end": [at + 10],
                "weight": [3121],
                "group": ["a8"],
                "group_weight": [1024],
            },
            schema={**competition.waits.schema},
        )
        # a nice -5 task of group a8 (at nice 0's group weight) waits all along: the share says which group
        # the thread was in
        return with_share(pieces, Competition(waits, competition.weights, competition.groups))["share"].item()

    assert share_group(OTHER[1], 3000) == pytest.approx(1024 / (1024 + 3121))  # in a8: by the tasks' weights
    assert share_group(OTHER[1], 4100) == pytest.approx(2048 / (2048 + 1024))  # in c42 by then
    assert share_group(SILENT[1], 4100) == 0.5 and UNKNOWN_GROUP == "?"  # unknown group, nice 0's weight


# ---- gain_without(): what a run without the culprits would do ---------------------------------------


def gpu_time(active: int, low: int, high: int, culprits) -> object:
    """GPU time exact where LOW is HIGH, else bounds: gain_without reads either."""
    from launchgap.analysis.records import GpuTimeBounds, GpuTimeExact

    both = dict(
        culprits=culprits,
        cpu_interference_ns=high,
        active_ns=active,
        prediction=None,
        culprits_by_cgroup=None,
        culprits_by_process=culprits,
        measurement=None,
    )
    if low == high:
        return GpuTimeExact(
            span_ns=active,
            busy_ns=0,
            idle_ns=0,
            busy_percent=None,
            causes=[],
            interference_ns=low,
            own_ns=0,
            hidden_ns=0,
            hidden_percent=None,
            processes=[],
            wakeup_latency_ns=0,
            window_busy_percent=None,
            **both,
        )
    return GpuTimeBounds(
        why="for the test",
        interference_low_ns=low,
        interference_high_ns=high,
        hidden_low_ns=0,
        hidden_high_ns=0,
        note=None,
        wakeup_latency_low_ns=0,
        wakeup_latency_high_ns=0,
        **both,
    )


def culprit(pid: int, cause: str, low: int, high: int, recoverable_low: int, recoverable_high: int):
    from launchgap.analysis.records import GpuCulprit

    return GpuCulprit(
        name="x",
        pids=[] if cause == "irq" else [pid],
        is_interrupt=cause == "irq",
        low_ns=low,
        high_ns=high,
        share_percent=None,
        causes={cause: high},
        recoverable_low_ns=recoverable_low,
        recoverable_high_ns=recoverable_high,
    )


def test_the_gain_takes_the_culprits_out_and_keeps_the_rest_at_its_rate():
    from launchgap.analysis.gpu_time import gain_without

    # a 1000 ms span: the hog's 400 ms (380 of it would be the thread's), a neighbour's 150, interrupts 50;
    # the workload's own time is 400. Without the hog the rest (220 ms: the neighbour's, the interrupts,
    # and the 20 the neighbour would take of the hog's) keeps its 22% of a span of 400 / 0.78 = 512.8 ms
    hog = [culprit(7, "preempted", 300, 300, 285, 285), culprit(7, "runqueue", 100, 100, 95, 95)]
    rest = [culprit(8, "preempted", 150, 150, 150, 150), culprit(0, "irq", 50, 50, 50, 50)]
    g = gpu_time(1000, 600, 600, hog + rest)
    low, high = gain_without(g, {7})
    assert low == high == pytest.approx(100.0 * (1000 / (400 / (1 - 220 / 1000)) - 1))
    # irq culprits are no load's processes, even named by a pid
    assert gain_without(g, {0}) == (0.0, 0.0)


def test_bounds_give_a_range_and_no_upper_bound_where_interference_may_cover_the_span():
    from launchgap.analysis.gpu_time import gain_without

    hog = [culprit(7, "preempted", 100, 500, 100, 500)]
    assert gain_without(gpu_time(1000, 300, 800, hog), {7}) == pytest.approx((100 * 100 / 700, 100 * 500 / 200))
    assert gain_without(gpu_time(1000, 300, 1000, hog), {7})[1] is None
