"""gpu_time.attribute on hand-built traces: every nanosecond of GPU idle gets exactly one cause, each worked out
by hand below; and the stages' interval tables are what analysis/interval_tables.py declares. No root needed."""

from __future__ import annotations

import polars as pl
import pytest

from launchgap.analysis import interval_tables as tables
from launchgap.analysis.gpu_time import (
    _host_parts,
    _host_pieces,
    attribute,
    competitors,
    delay_pieces,
    gpu_idle,
    gpu_work,
    idle_gaps,
)
from launchgap.analysis.intervals import overlaps
from launchgap.analysis.irqs import irq_intervals
from launchgap.analysis.timeline import cpu_runs, thread_segments, trace_bounds
from launchgap.trace import Event
from tests.analysis.builder import GPU_ACTIVITY, IDLE, TraceBuilder

APP = (100, 100, "decode")  # the launching thread, on CPU 1
WORKER = (100, 101, "worker")  # a launching thread whose states the analysis is not given
HOG = (200, 200, "hog")
SPAN = (1000, 20_000)


def one_gap_trace() -> TraceBuilder:
    """Kernel 1 runs [2000, 3000); kernel 2, launched by the call [7000, 7300), runs [8000, 9000); kernel 3, launched
    by another thread's call [9500, 9600), runs [10000, 11000). The launching thread meanwhile, on CPU 1:
    running [3000, 4000), where a softirq NET_RX [3400, 3800) holds a hard IRQ eth0 [3500, 3700); preempted by the
    hog [4000, 5000); running [5000, 5500); blocked [5500, 6000) while the hog runs; woken at 6000 and in the run
    queue behind the hog until 6800; running from 6800, in the launch call [7000, 7300), where NET_RX interrupts
    it [7100, 7200)."""
    b = TraceBuilder(start_ns=SPAN[0], end_ns=SPAN[1], meta_extra=GPU_ACTIVITY)
    b.switch(1200, 1, IDLE, APP)
    b.launch(1500, 1, APP)
    b.gpu_api(1500, 1600, APP, 1)
    b.gpu_kernel(2000, 3000, 100, 1)
    b.irq(3400, 1, APP, Event.SOFTIRQ, "NET_RX", 400)
    b.irq(3500, 1, APP, Event.HARDIRQ, "eth0", 200)
    b.switch(4000, 1, APP, HOG)
    b.switch(5000, 1, HOG, APP)
    b.switch(5500, 1, APP, HOG, voluntary=True)
    b.wakeup(6000, APP, 1)
    b.switch(6800, 1, HOG, APP)
    b.launch(7000, 1, APP)
    b.gpu_api(7000, 7300, APP, 2)
    b.irq(7100, 1, APP, Event.SOFTIRQ, "NET_RX", 100)
    b.gpu_kernel(8000, 9000, 100, 2)
    b.launch(9500, 0, WORKER)
    b.gpu_api(9500, 9600, WORKER, 3)
    b.gpu_kernel(10_000, 11_000, 100, 3)
    b.switch(19_000, 1, APP, IDLE, dead=True)
    return b


def stages(trace):
    bounds = trace_bounds(trace)
    return thread_segments(trace, [APP[1]], bounds), cpu_runs(trace, bounds), irq_intervals(trace)


def by_cause(idle: pl.DataFrame) -> dict[tuple[str, str | None], int]:
    return {
        (cause, culprit): ns
        for cause, culprit, ns in idle.group_by("cause", "culprit").agg(pl.col("ns").sum()).iter_rows()
    }


def test_every_idle_nanosecond_of_the_gaps_has_one_cause(tmp_path):
    trace = one_gap_trace().write(tmp_path / "t.lg")
    _, gaps, idle = gpu_idle(trace, *stages(trace), SPAN)
    # idle: [1000, 2000) before the first work, [3000, 8000) and [9000, 10000) between, [11000, 20000) after
    assert gaps.select("gap_start", "gap_end", "kind").rows() == [
        (1000, 2000, "before_first"),
        (3000, 8000, "between"),
        (9000, 10_000, "between"),
        (11_000, 20_000, "after_last"),
    ]
    assert by_cause(idle) == {
        ("before_first", None): 1000,
        ("after_last", None): 9000,
        # [3000, 8000): the thread's until its call returned at 7300, the GPU's from then to 8000; [9000, 10000): the
        # worker's until 9600, the GPU's from then
        ("gpu_side", None): 700 + 400,
        # [3000, 4000) running, 1000: the interrupts' union [3400, 3800) is 400, so 600 of host work; the 400 split
        # by each one's own overlap, 400 (NET_RX) and 200 (eth0): 400 * 400 // 600 = 266 and 200 * 400 // 600 = 133,
        # the ns rounding lost going to the larger. [6800, 7300) running, 500: the call [7000, 7300) less NET_RX's
        # [7100, 7200) inside it is 200 of launch call; [6800, 7000) is 200 of host work.
        ("host_work", None): 600 + 500 + 200,
        ("irq", "NET_RX"): 267 + 100,
        ("irq", "eth0"): 133,
        ("launch_call", None): 200,
        # [4000, 5000) preempted and [6000, 6800) in the run queue, the hog on the CPU both times
        ("preempted", "hog"): 1000,
        ("runqueue", "hog"): 800,
        ("blocked", None): 500,
        # [9000, 9600): the worker's, whose states (its segments) the analysis was not given: not known
        ("unknown", None): 600,
    }
    assert int(idle["ns"].sum()) == int((gaps["gap_end"] - gaps["gap_start"]).sum()) == 16_000
    # nobody else wanted CPU 1 while the hog held it: taking the hog away gives all of its time back
    culprits = idle.filter(pl.col("culprit") == "hog")
    assert culprits["recoverable_ns"].to_list() == culprits["ns"].to_list()
    assert culprits["culprit_pid"].unique().to_list() == [200]


def test_an_interrupt_begun_before_the_gap_counts_though_one_nested_in_it_began_later(tmp_path):
    """The softirq NET_RX [2500, 3600) runs into the gap [3000, 8000); a hard IRQ eth0 [2600, 2800) nested in it
    began later and ended before the gap. Searching from the last interrupt begun by 3000 (eth0) missed NET_RX, and
    its 600 ns in the gap went to no cause (seen on a recording: 5,099 ns of a NET_RX)."""
    b = TraceBuilder(start_ns=SPAN[0], end_ns=SPAN[1], meta_extra=GPU_ACTIVITY)
    b.switch(1200, 1, IDLE, APP)
    b.launch(1500, 1, APP)
    b.gpu_api(1500, 1600, APP, 1)
    b.gpu_kernel(2000, 3000, 100, 1)
    b.irq(2500, 1, APP, Event.SOFTIRQ, "NET_RX", 1100)
    b.irq(2600, 1, APP, Event.HARDIRQ, "eth0", 200)
    b.launch(7000, 1, APP)
    b.gpu_api(7000, 7300, APP, 2)
    b.gpu_kernel(8000, 9000, 100, 2)
    b.switch(19_000, 1, APP, IDLE, dead=True)
    trace = b.write(tmp_path / "t.lg")
    _, gaps, idle = gpu_idle(trace, *stages(trace), SPAN)
    assert by_cause(idle) == {
        ("before_first", None): 1000,
        ("after_last", None): 11_000,
        # [3000, 7300) running: NET_RX's [3000, 3600) is 600, the call [7000, 7300) 300, the rest 3400 host work;
        # [7300, 8000) the GPU's
        ("irq", "NET_RX"): 600,
        ("launch_call", None): 300,
        ("host_work", None): 3400,
        ("gpu_side", None): 700,
    }
    assert int(idle["ns"].sum()) == int((gaps["gap_end"] - gaps["gap_start"]).sum()) == 17_000


def test_a_thread_whose_states_are_not_known_leaves_its_host_time_unknown(tmp_path):
    trace = one_gap_trace().write(tmp_path / "t.lg")
    _, runs, irqs = stages(trace)
    gaps = idle_gaps(gpu_work(trace), *SPAN)
    idle = attribute(gaps, tables.SEGMENTS.empty(), runs, irqs)
    # the [3000, 7300) host part has no segment to say what the thread did either: unknown, as the worker's is
    assert by_cause(idle) == {
        ("before_first", None): 1000,
        ("after_last", None): 9000,
        ("gpu_side", None): 700 + 400,
        ("unknown", None): 4300 + 600,
    }


def test_a_gap_the_call_ended_before_it_began_is_the_gpus(tmp_path):
    """Kernel 2's call [2100, 2200) returned while kernel 1 still ran: the GPU had the work for all of the gap
    [3000, 4000) and the thread's states there are no part of it."""
    b = TraceBuilder(start_ns=1000, end_ns=6000, meta_extra=GPU_ACTIVITY)
    b.switch(1200, 1, IDLE, APP)
    b.launch(1500, 1, APP)
    b.gpu_api(1500, 1600, APP, 1)
    b.gpu_kernel(2000, 3000, 100, 1)
    b.launch(2100, 1, APP)
    b.gpu_api(2100, 2200, APP, 2)
    b.switch(2500, 1, APP, HOG)
    b.gpu_kernel(4000, 5000, 100, 2)
    trace = b.write(tmp_path / "t.lg")
    _, _, idle = gpu_idle(trace, *stages(trace), (1000, 6000))
    assert by_cause(idle) == {("before_first", None): 1000, ("gpu_side", None): 1000, ("after_last", None): 1000}


def test_the_stages_tables_are_what_interval_tables_declares(tmp_path):
    trace = one_gap_trace().write(tmp_path / "t.lg")
    segments, runs, irqs = stages(trace)
    gaps = idle_gaps(gpu_work(trace), *SPAN)
    _, pieces = _host_pieces(_host_parts(gaps), segments)
    competition = competitors(trace)
    launching = pl.DataFrame({"pid": [100], "tid": [100]}, schema={"pid": pl.UInt32, "tid": pl.UInt32})
    delays = delay_pieces(segments, runs, irqs, launching, competition)
    made = [
        (tables.SEGMENTS, segments),
        (tables.RUNS, runs),
        (tables.IRQS, irqs),
        (tables.GAPS, gaps),
        (tables.PIECES, pieces),
        (tables.WAITS, competition.waits),
        (tables.DELAYS, delays),
    ]
    for table, frame in made:
        assert not frame.is_empty(), table.row
        assert table.problems(frame) == [], table.row
        # an empty table is one too
        assert table.problems(table.empty()) == [], table.row


def test_a_frame_that_is_not_its_table_is_told_how():
    frame = pl.DataFrame({"tid": [1], "cpu": [0], "segment_start": [5], "segment_end": [3]})
    with pytest.raises(tables.IntervalTableError) as told:
        tables.SEGMENTS.check(frame)
    assert str(told.value) == "segment table: tid is Int64, not UInt32; cpu is Int64, not UInt32; no column state"
    backwards = tables.SEGMENTS.empty().vstack(
        pl.DataFrame(
            {"tid": [1], "cpu": [0], "state": ["running"], "segment_start": [5], "segment_end": [3]},
            schema=tables.SEGMENTS.empty().schema,
        )
    )
    assert tables.SEGMENTS.problems(backwards) == ["a row's segment_end is before its segment_start"]


def test_overlaps_works_on_the_columns_it_is_given():
    queries = pl.DataFrame({"cpu": [1, 1, 2], "wait_start": [0, 50, 0], "wait_end": [30, 120, 10]})
    runs = pl.DataFrame({"cpu": [1, 1, 2], "run_start": [0, 20, 10], "run_end": [20, 100, 40], "who": ["a", "b", "c"]})
    pairs = overlaps(queries, runs, "cpu", ("wait_start", "wait_end"), ("run_start", "run_end"))
    # [0, 30) meets a [0, 20) for 20 and b [20, 100) for 10; [50, 120) meets b for 50; [0, 10) on CPU 2 meets
    # nothing ([10, 40) starts as it ends)
    assert sorted(pairs.select("wait_start", "who", "overlap_ns").rows()) == [(0, "a", 20), (0, "b", 10), (50, "b", 50)]
    with pytest.raises(ValueError, match="share a name"):
        overlaps(queries, runs, "cpu", ("wait_start", "wait_end"), ("wait_start", "run_end"))


def test_a_delay_is_named_by_the_interrupt_begun_before_it_though_one_nested_in_it_began_later():
    """Bounds mode names each interrupt delay by the interrupt that overlaps it most: the delay [3000, 3600) lies in
    NET_RX [2500, 3600), in which eth0 [2600, 2800) nested began later and ended before it. Searching from the last
    interrupt begun by 3000 (eth0) found nothing and left the delay unnamed."""
    from launchgap.analysis.gpu_time import _interrupt_pieces

    delays = pl.DataFrame(
        {"d": [0], "tid": [100], "delay_start": [3000], "delay_end": [3600], "cause": ["irq"]},
        schema={"d": pl.UInt32, "tid": pl.UInt32, "delay_start": pl.Int64, "delay_end": pl.Int64, "cause": pl.Utf8},
    )
    irqs = pl.DataFrame(
        {
            "tid": [100, 100],
            "irq_start": [2500, 2600],
            "irq_end": [3600, 2800],
            "name": ["NET_RX", "eth0"],
            "kind": ["softirq", "hardirq"],
        },
        schema={"tid": pl.UInt32, "irq_start": pl.Int64, "irq_end": pl.Int64, "name": pl.Utf8, "kind": pl.Utf8},
    )
    pieces = _interrupt_pieces(delays, irqs)
    assert pieces.select("start", "end", "culprit").rows() == [(3000, 3600, "NET_RX")]
