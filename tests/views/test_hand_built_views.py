"""Timeline and running/waiting on hand-built traces whose every slice is known."""

from __future__ import annotations

import os

import polars as pl
import pytest

from launchgap.analysis import core_map
from launchgap.analysis.core_map import ViewError, Window, choose_window, clip, command_stats, run_slices
from launchgap.analysis.running_waiting import running_waiting, wait_intervals
from launchgap.trace import Event
from launchgap.views.pixels import decimate
from launchgap.views.timeline import OTHER_COLOUR, TimelineOptions, build_timeline, draw_static
from tests.analysis.builder import IDLE, TraceBuilder

A, B, C = (10, 10, "app"), (10, 11, "app"), (10, 12, "app")
K = (50, 50, "kworker/0:1")
IDLE1 = (0, 0, "swapper/1")


def two_cpu_trace(tmp_path, **meta):
    """CPU0: A runs from the start, preempted by kworker K, blocks, is woken
    onto idle CPU0, is preempted by C (forked by A) and runs again. CPU1: B,
    runnable from before the trace, runs 2000-30000, then CPU1 idles while C
    and then A wait on busy CPU0: a work-conservation failure, 40000-50000."""
    b = TraceBuilder(start_ns=1000, end_ns=120_000, command_pid=10, meta_extra=meta)
    b.switch(2000, 1, IDLE1, B)
    b.wakeup(4800, K, 0)
    b.switch(5000, 0, A, K)  # A preempted
    b.switch(6000, 0, K, A, voluntary=True)
    b.switch(20000, 0, A, IDLE, voluntary=True)  # A blocks
    b.switch(30000, 1, B, IDLE1, voluntary=True)
    b.wakeup(34000, A, 0)
    b.switch(35000, 0, IDLE, A)
    b.fork(39000, 0, A, C)
    b.wakeup(40000, C, 0, new=True)
    b.switch(45000, 0, A, C)  # A preempted by C
    b.switch(50000, 0, C, A, voluntary=True)
    b.launch(52000, 0, A)
    b.irq(53000, 1, IDLE1, Event.SOFTIRQ, "TIMER", 500, number=1)
    b.switch(60000, 0, A, IDLE, voluntary=True)
    return b.write(tmp_path / "two.lg")


def test_run_slices_are_the_switches(tmp_path):
    trace = two_cpu_trace(tmp_path)
    got = run_slices(trace).select("cpu", "start_ns", "end_ns", "tid").sort("cpu", "start_ns").rows()
    assert got == [
        (0, 1000, 5000, 10),
        (0, 5000, 6000, 50),
        (0, 6000, 20000, 10),
        (0, 35000, 45000, 10),
        (0, 45000, 50000, 12),
        (0, 50000, 60000, 10),
        (1, 2000, 30000, 11),
    ]


def test_target_mode_drops_runs_it_cannot_know(tmp_path):
    """A target-mode trace records a CPU's switches from the first time a
    target ran there: whoever it replaced was not known to run since the start."""
    X = (70, 70, "other")
    b = TraceBuilder(start_ns=1000, end_ns=50_000, command_pid=10)
    b.switch(20000, 1, X, B)  # B, a target thread, first comes to CPU1, replacing X
    b.switch(30000, 1, B, X)
    b.switch(40000, 0, A, IDLE, voluntary=True)
    trace = b.write(tmp_path / "target.lg")
    got = run_slices(trace).select("cpu", "start_ns", "end_ns", "tid").sort("cpu", "start_ns").rows()
    assert got == [(0, 1000, 40000, 10), (1, 20000, 30000, 11), (1, 30000, 50000, 70)]
    # the same events in a --system trace: X did run on CPU1 since the start
    b.meta_extra = {"mode": "system"}
    system = b.write(tmp_path / "system.lg")
    assert (1, 1000, 20000, 70) in run_slices(system).select("cpu", "start_ns", "end_ns", "tid").rows()


def windowed_equals_clipped(trace, windows) -> int:
    """Asserts the runs read for each window are those of the whole trace cut to it; returns how many
    windows were compared."""
    whole = run_slices(trace)
    for window in windows:
        assert run_slices(trace, window).rows() == clip(whole, window).rows(), window
    return len(windows)


@pytest.mark.parametrize("mode", ["target", "system"])
def test_the_runs_of_a_window_are_read_from_its_switches_alone(tmp_path, monkeypatch, mode):
    """Every window with edges on, just before and just after each switch (a CPU with none inside, a
    run that began before the window, the run from the trace's start): the same rows as the whole
    trace's runs cut to the window; and cpu_runs is handed only the window's switches and each CPU's
    last before it and first after it."""
    trace = two_cpu_trace(tmp_path, **({"mode": "system"} if mode == "system" else {}))
    times = sorted(
        {t + d for t in trace.of(Event.SWITCH, "ts_ns")["ts_ns"].to_list() for d in (-1, 0, 1)} | {1000, 120_000}
    )
    windows = [Window(1000, lo, hi) for lo in times for hi in times if lo < hi]
    assert windowed_equals_clipped(trace, windows) == len(times) * (len(times) - 1) // 2 == 406
    handed = []
    real_cpu_runs = core_map.cpu_runs
    monkeypatch.setattr(core_map, "cpu_runs", lambda t, b, s=None: handed.append(s) or real_cpu_runs(t, b, s))
    run_slices(trace, Window(1000, 20_500, 44_000))
    # CPU0: its last before (20000, A blocks), 35000, its first after (45000); CPU1: its last before
    # (2000), 30000 (and none after)
    assert sorted(handed[0].select("cpu", "ts_ns").rows()) == [
        (0, 20000),
        (0, 35000),
        (0, 45000),
        (1, 2000),
        (1, 30000),
    ]


def windowed_counts_equal_whole(trace, windows, n_cpus: int, tids: set[int] | None = None) -> int:
    """Asserts running_waiting read for each window (the events that bear on it) gives the steps,
    failures and waits of the whole trace's events; returns how many windows were compared."""
    for window in windows:
        got, want = (running_waiting(trace, window, n_cpus, tids, whole=whole) for whole in (False, True))
        for name in ("steps", "failures", "waits"):
            assert (
                getattr(got, name).sort(getattr(got, name).columns).rows()
                == getattr(want, name).sort(getattr(want, name).columns).rows()
            ), (window, name)
    return len(windows)


@pytest.mark.parametrize("mode", ["target", "system"])
def test_running_waiting_of_a_window_reads_only_what_bears_on_it(tmp_path, monkeypatch, mode):
    """Every window edged on, just before and just after each switch and wakeup (a wait that began
    before the window, one that ends after it, a task runnable from before the trace): the counts,
    failures and waits of the whole trace's events; and the waits are read from each task's events from
    its last switch before the window to its first switch-in after it."""
    trace = two_cpu_trace(tmp_path, **({"mode": "system"} if mode == "system" else {}))
    events = trace.of(Event.SWITCH, "ts_ns")["ts_ns"].to_list() + trace.of(Event.WAKEUP, "ts_ns")["ts_ns"].to_list()
    times = sorted({t + d for t in events for d in (-1, 0, 1)} | {1000, 120_000})
    windows = [Window(1000, lo, hi) for lo in times for hi in times if lo < hi]
    assert windowed_counts_equal_whole(trace, windows, 2) == len(windows) == 595
    assert windowed_counts_equal_whole(trace, windows[::7], 2, tids={12}) == 85
    import launchgap.analysis.running_waiting as rw_module

    read = []
    real = rw_module.collect_streamed
    monkeypatch.setattr(rw_module, "collect_streamed", lambda frame: read.append(real(frame)) or read[-1])
    wait_intervals(trace, 1000, Window(1000, 36_000, 46_000))
    rows = read[-1].select("tid", "ts_ns", "kind").sort("tid", "ts_ns").rows()
    # A (10): from its last switch before (in, 35000) to its first switch-in after (50000); B (11): from
    # its switch-out at 30000, and K (50) from its at 6000, on (neither is switched in again); C (12):
    # no switch before, so from its first event on
    assert rows == [
        (10, 35000, "in"),
        (10, 45000, "out_runnable"),
        (10, 50000, "in"),
        (11, 30000, "out_blocked"),
        (12, 40000, "wake"),
        (12, 45000, "in"),
        (12, 50000, "out_blocked"),
        (50, 6000, "out_blocked"),
    ]


def test_command_stats_like_dat2graph(tmp_path):
    trace = two_cpu_trace(tmp_path)
    window = choose_window(trace)
    stats = {r["comm"]: r for r in command_stats(run_slices(trace), window).iter_rows(named=True)}
    app = stats["app"]
    assert app["first_s"] == 0.0 and app["last_s"] == pytest.approx(59000 / 1e9)
    assert app["run_s"] == pytest.approx((4000 + 14000 + 10000 + 5000 + 10000 + 28000) / 1e9)
    assert app["switches_in"] == 5  # the run A was in when the trace began is not a switch
    assert app["tasks"] == 3
    assert stats["kworker/0:1"]["switches_in"] == 1 and stats["kworker/0:1"]["tasks"] == 1


def test_timeline_target_forked_and_window(tmp_path):
    trace = two_cpu_trace(tmp_path)
    data = build_timeline(trace, TimelineOptions(target="kw"))
    colours = dict(data.slices.select("tid", "color").unique().iter_rows())
    assert colours[11] == OTHER_COLOUR and colours[10] == OTHER_COLOUR and colours[50] != OTHER_COLOUR
    forked = build_timeline(trace, TimelineOptions(forked=True))
    assert forked.slices.select("cpu", "start_ns", "end_ns", "tid").rows() == [(0, 45000, 50000, 12)]
    # --min/--max are seconds after the start (1000 ns): [0.000004, 0.000036] s -> [5000, 37000] ns, clipped
    window = build_timeline(trace, TimelineOptions(min_s=4e-6, max_s=36e-6))
    assert window.slices.select("cpu", "start_ns", "end_ns", "tid").rows() == [
        (0, 5000, 6000, 50),
        (0, 6000, 20000, 10),
        (0, 35000, 37000, 10),
        (1, 5000, 30000, 11),
    ]
    kinds = data.marks.group_by("kind").len().sort("kind").rows()
    assert kinds == [("irq", 1), ("launch", 1)]
    assert data.marks.filter(pl.col("kind") == "launch").select("ts_ns", "cpu").rows() == [(52000, 0)]


def test_color_by_command_gives_one_colour_per_command(tmp_path):
    data = build_timeline(two_cpu_trace(tmp_path), TimelineOptions(color_by="command"))
    per_comm = data.slices.group_by("comm").agg(pl.col("color").n_unique()).rows()
    assert sorted(per_comm) == [("app", 1), ("kworker/0:1", 1)]
    assert list(data.legend) == ["app", "kworker/0:1"]  # busiest first


def test_the_timeline_colours_by_command_by_default_with_a_legend(tmp_path, monkeypatch):
    """What `launchgap timeline` draws when not told how to colour: one colour per command, each named in
    the legend (three `app` tasks, one colour); --color-by pid still gives each task its own, unnamed."""
    from click.testing import CliRunner

    from launchgap.cli import main
    from launchgap.views import timeline as timeline_view

    trace = two_cpu_trace(tmp_path)
    drawn = {}

    def draw(datas, path, tag=None):
        drawn[tag] = datas
        path.write_bytes(b"drawn")

    for tag, extra in (("default", []), ("pid", ["--color-by", "pid"])):
        monkeypatch.setattr(timeline_view, "draw_static", lambda datas, path, tag=tag: draw(datas, path, tag))
        result = CliRunner().invoke(main, ["timeline", str(trace.path), "-o", str(tmp_path / f"{tag}.png"), *extra])
        assert result.exit_code == 0, result.output
    (default,), (by_pid,) = drawn["default"], drawn["pid"]
    colours = lambda d: dict(d.slices.group_by("tid").agg(pl.col("color").first()).iter_rows())  # noqa: E731
    by_task = colours(default)
    assert by_task[10] == by_task[11] == by_task[12] != by_task[50]
    assert list(default.legend) == ["app", "kworker/0:1"]
    assert dict(default.legend) == {"app": by_task[10], "kworker/0:1": by_task[50]}
    assert len({colours(by_pid)[t] for t in (10, 11, 12, 50)}) == 4 and by_pid.legend == {}


def test_socket_order_uses_the_trace_topology(tmp_path):
    topo = {"count": 2, "cpus": [{"cpu": 0, "package": 1, "core": 0}, {"cpu": 1, "package": 0, "core": 0}]}
    data = build_timeline(two_cpu_trace(tmp_path, topology=topo), TimelineOptions(socket_order=True))
    assert data.cpus == [1, 0]
    with pytest.raises(ViewError, match="no topology"):
        build_timeline(two_cpu_trace(tmp_path), TimelineOptions(socket_order=True))


def test_after_sleep_and_from_workload(tmp_path):
    S = (20, 20, "sleep")
    b = TraceBuilder(start_ns=1000, end_ns=100_000, command_pid=20)
    b.exec(1500, 1, S, "/usr/bin/sleep")
    b.switch(2000, 1, S, IDLE1, voluntary=True)
    b.wakeup(9000, S, 1)
    b.switch(9100, 1, IDLE1, S)
    b.exit(9500, 1, S)
    b.switch(9600, 1, S, IDLE1, dead=True)
    b.switch(12000, 0, IDLE, A)
    trace = b.write(tmp_path / "sleep.lg")
    assert choose_window(trace, after_sleep=True).origin_ns == 9600
    assert choose_window(trace, from_workload=True).origin_ns == 1500
    data = build_timeline(trace, TimelineOptions(after_sleep=True, min_s=0.0))
    assert data.slices.filter(pl.col("tid") == 10)["start_ns"].to_list() == [12000]
    with pytest.raises(ViewError, match="no task named `sleep`"):
        choose_window(two_cpu_trace(tmp_path), after_sleep=True)


def test_waits_follow_the_documented_rules(tmp_path):
    trace = two_cpu_trace(tmp_path)
    waits = wait_intervals(trace, 1000).select("tid", "cpu", "start_ns", "end_ns").sort("start_ns").rows()
    assert waits == [
        (11, 1, 1000, 2000),  # runnable before the trace began: waits from its start
        (50, 0, 4800, 5000),
        (10, 0, 5000, 6000),  # preempted
        (10, 0, 34000, 35000),  # woken onto an idle CPU: waits, but no failure
        (12, 0, 40000, 45000),
        (10, 0, 45000, 50000),
    ]


def unseen_switch_in_trace(tmp_path):
    """The shape of a real --system recording (CI, 2026-11-23): the recorder's main thread, preempted on
    CPU0 by a thread of the sandbox agent (process_api's tokio-rt-worker), whose switch-out never fires
    sched_switch (docs/metrics.md); the thread's next event is its own blocking switch-out on CPU0, then a
    wakeup and a switch-in. Here A is preempted by agent thread G at 5000, switched back in unseen, blocks
    at 8000, is woken onto CPU1 at 20000 and runs there from 21000; B runs on CPU1 from 2000 to 7000."""
    G = (1, 76, "tokio-rt-worker")
    b = TraceBuilder(start_ns=1000, end_ns=40_000, command_pid=10, meta_extra={"mode": "system"})
    b.switch(2000, 1, IDLE1, B)
    b.wakeup(4800, G, 0)
    b.switch(5000, 0, A, G)  # A preempted by G
    b.switch(7000, 1, B, IDLE1, voluntary=True)  # B blocks: CPU1 idle
    b.switch(8000, 0, A, IDLE, voluntary=True)  # A blocks: G's switch back to A was never recorded
    b.wakeup(20000, A, 1)
    b.switch(21000, 1, IDLE1, A)
    b.switch(25000, 1, A, IDLE1, voluntary=True)
    return b.write(tmp_path / "unseen.lg")


def test_a_wait_ends_at_the_next_recorded_switch_when_its_switch_in_was_unseen(tmp_path):
    """A's wait after being preempted ends at its blocking switch-out on CPU0 (not at its switch-in on
    CPU1 after the sleep): so it waits on busy CPU0 while CPU1 idles, 7000-8000, a failure; and every
    window read alone gives what the whole trace does."""
    trace = unseen_switch_in_trace(tmp_path)
    waits = wait_intervals(trace, 1000).select("tid", "cpu", "start_ns", "end_ns").sort("start_ns").rows()
    assert waits == [
        (11, 1, 1000, 2000),  # runnable before the trace began
        (76, 0, 4800, 5000),
        (10, 0, 5000, 8000),  # preempted, until its next recorded switch (an out on CPU0)
        (10, 1, 20000, 21000),  # woken onto idle CPU1
    ]
    rw = running_waiting(trace, choose_window(trace), n_cpus=2)
    assert rw.failures.rows() == [(7000, 8000)]
    events = trace.of(Event.SWITCH, "ts_ns")["ts_ns"].to_list() + trace.of(Event.WAKEUP, "ts_ns")["ts_ns"].to_list()
    times = sorted({t + d for t in events for d in (-1, 0, 1)} | {1000, 40_000})
    windows = [Window(1000, lo, hi) for lo in times for hi in times if lo < hi]
    assert (
        windowed_counts_equal_whole(trace, windows, 2) == len(windows) == 26 * 25 // 2
    )  # 8 events, 3 edges each, and the two ends


def test_a_wakeup_before_a_first_switch_out_starts_no_wait(tmp_path):
    """A runs from the trace's start (its first switch is a switch-out), and is woken at 2000 while about
    to sleep: no wait, though the wakeup is its first event; its run slice is the whole 1000-3000."""
    b = TraceBuilder(start_ns=1000, end_ns=10_000, command_pid=10, meta_extra={"mode": "system"})
    b.wakeup(2000, A, 0)
    b.switch(3000, 0, A, IDLE, voluntary=True)
    trace = b.write(tmp_path / "woken-running.lg")
    assert wait_intervals(trace, 1000).height == 0
    rw = running_waiting(trace, choose_window(trace), n_cpus=2)
    assert rw.steps.rows() == [(1000, 1, 1), (3000, 0, 0)]
    assert rw.failures.is_empty()
    times = sorted({t + d for t in (2000, 3000) for d in (-1, 0, 1)} | {1000, 10_000})
    windows = [Window(1000, lo, hi) for lo in times for hi in times if lo < hi]
    assert windowed_counts_equal_whole(trace, windows, 2) == 8 * 7 // 2


def test_running_waiting_counts_and_work_conservation_failure(tmp_path):
    trace = two_cpu_trace(tmp_path)
    rw = running_waiting(trace, choose_window(trace), n_cpus=2)
    steps = dict((t, (run, able)) for t, run, able in rw.steps.rows())
    assert steps[1000] == (1, 2)  # A runs, B waits
    assert steps[2000] == (2, 2)
    assert steps[4800] == (2, 3)  # K woken onto busy CPU0
    assert steps[5000] == (2, 3)  # K runs, A preempted waits
    assert steps[6000] == (2, 2)
    assert steps[30000] == (0, 0)
    assert steps[34000] == (0, 1)
    assert steps[40000] == (1, 2)  # C waits on busy CPU0, CPU1 idle
    assert steps[45000] == (1, 2)
    assert steps[50000] == (1, 1)
    assert rw.failures.rows() == [(40000, 50000)]
    assert rw.failure_ns == 10000


def test_decimation_keeps_every_visible_slice():
    # 10 pixels of 1000 ns over [0, 10000)
    rows = [
        (0, 100, 200, "red"),
        (0, 300, 600, "blue"),
        (0, 700, 900, "red"),  # one pixel: blue is longest
        (0, 2500, 7500, "green"),  # wide: kept whole
        (1, 1000, 2500, "red"),
        (1, 2600, 5000, "red"),  # same colour, gap < 1 px: merged
        (1, 6000, 7200, "red"),
        (1, 8500, 9900, "blue"),
    ]
    slices = pl.DataFrame(rows, schema=["cpu", "start_ns", "end_ns", "color"], orient="row")
    got = decimate(slices, 0, 10000, 10).rows()
    assert got == [
        (0, 300, 600, "blue", True),
        (0, 2500, 7500, "green", False),
        (1, 1000, 5000, "red", False),
        (1, 6000, 7200, "red", False),
        (1, 8500, 9900, "blue", False),
    ]
    # fully zoomed in, nothing is merged or dropped
    assert decimate(slices, 0, 10000, 100_000).height == len(rows)


def test_static_figure_draws_the_decimated_segments(tmp_path):
    # a colour per task: every slice is wider than a pixel and its neighbours differ, so each is drawn
    data = build_timeline(two_cpu_trace(tmp_path), TimelineOptions(color_by="pid"))
    out = tmp_path / "cores.png"
    (segments,) = draw_static([data], out)
    assert segments.select("cpu", "start_ns", "end_ns").rows() == data.slices.select("cpu", "start_ns", "end_ns").rows()
    assert out.stat().st_size > 5000 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a colour per command (the default): A, C and A again, all `app`, back to back on CPU0 are one line
    (by_command,) = draw_static([build_timeline(two_cpu_trace(tmp_path), TimelineOptions())], out)
    assert by_command.select("cpu", "start_ns", "end_ns").rows() == [
        (0, 1000, 5000),
        (0, 5000, 6000),
        (0, 6000, 20000),
        (0, 35000, 60000),
        (1, 2000, 30000),
    ]


# what an output in /proc is told (output.real_target)
IN_PROC = "is in the kernel's proc file system, not a place for files; give a file path"


@pytest.mark.parametrize(
    "args, message",
    [
        (["timeline", "{trace}", "-o", "{tmp}/x.jpg"], "choose .png, .pdf, .svg or .html"),
        (["timeline", "{trace}", "--after-sleep", "-o", "{tmp}/x.png"], "no task named `sleep`"),
        (
            ["timeline", "{trace}", "--min", "1", "--max", "0.5", "-o", "{tmp}/x.png"],
            "launchgap: the window is empty: --min 1 s is not before --max 0.5 s; give a --min smaller than --max",
        ),
        # no --max: the window ends with the trace, 119000 ns after its start (the axis' origin)
        (
            ["timeline", "{trace}", "--min", "100", "-o", "{tmp}/x.png"],
            "launchgap: the window is empty: --min 100 s is at or after the end of the trace, 0.000119 s from the "
            "axis' origin; give a --min before it",
        ),
        (
            ["running-waiting", "{trace}", "--min", "100", "-o", "{tmp}/x.png"],
            "launchgap: the window is empty: --min 100 s is at or after the end of the trace, 0.000119 s from the "
            "axis' origin; give a --min before it",
        ),
        (["timeline", "{trace}", "--marks", "irq,bogus", "-o", "{tmp}/x.png"], "unknown ['bogus']"),
        (["running-waiting", "{tmp}/missing.lg"], "missing.lg: no such file"),
        (["import", "{tmp}/missing.dat"], "no such file"),
        (["export", "{trace}"], "choose one format"),
        (["timeline", "{tmp}/study.csv"], "the study's CSV does not say who ran next"),
        (["timeline", "{trace}", "-o", "/proc/cores.png"], "/proc/cores.png: " + IN_PROC),
        (["running-waiting", "{trace}", "-o", "/proc/rw.html"], "/proc/rw.html: " + IN_PROC),
        (["export", "--perfetto", "{trace}", "-o", "/proc/run.pftrace"], "/proc/run.pftrace: " + IN_PROC),
    ],
)
def test_view_commands_fail_in_one_line(tmp_path, args, message):
    import subprocess

    from tests.conftest import REPO

    trace = two_cpu_trace(tmp_path, mode="system")  # a target-mode trace adds a note line
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "launchgap"),
            "export",
            "--csv",
            str(trace.path),
            "-o",
            str(tmp_path / "study.csv"),
        ],
        check=True,
        capture_output=True,
    )
    argv = [a.format(trace=trace.path, tmp=tmp_path) for a in args]
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "launchgap"), *argv], capture_output=True, text=True)
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split()) and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_several_traces_share_the_slowest_runs_scale(tmp_path):
    from launchgap.analysis.core_map import shared_span_s

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    long = two_cpu_trace(tmp_path / "a")
    b = TraceBuilder(start_ns=1000, end_ns=31_000)
    b.switch(2000, 0, IDLE, A)
    b.switch(9000, 0, A, IDLE, voluntary=True)
    short = b.write(tmp_path / "b" / "short.lg")
    datas = [build_timeline(t, TimelineOptions(color_by="pid")) for t in (short, long)]  # no slice merged
    assert shared_span_s([d.window for d in datas]) == (0.0, 119_000 / 1e9)
    drawn = draw_static(datas, tmp_path / "both.png")
    assert [d.height for d in drawn] == [1, 7]


def test_target_mode_trace_gets_a_note(tmp_path):
    import subprocess

    from tests.conftest import REPO

    trace = two_cpu_trace(tmp_path)
    # whatever width a console claims: the assertion compares words, never where a line was wrapped
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "launchgap"), "timeline", str(trace.path), "-o", str(tmp_path / "t.png")],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "30"},
    )
    assert proc.returncode == 0
    text = " ".join(proc.stderr.split())
    assert (
        f"launchgap: note: {trace.path} was recorded in target mode: a CPU's switches are there only from the "
        f"first time a target ran on it; record with --system for the whole machine"
    ) in text


def test_running_waiting_refuses_a_target_mode_trace_in_one_line(tmp_path):
    """Its counts need every task's switches: on a target-mode recording it printed "peak 76 runnable" on
    2 CPUs (issue 25, item 2). The same events recorded --system are counted."""
    import subprocess

    from tests.conftest import REPO

    for mode in ("command", "pids"):
        (tmp_path / mode).mkdir()
        trace = two_cpu_trace(tmp_path / mode, mode=mode)
        out = tmp_path / mode / "rw.png"
        proc = subprocess.run(
            [str(REPO / ".venv" / "bin" / "launchgap"), "running-waiting", str(trace.path), "-o", str(out)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "30"},
        )
        assert proc.returncode == 2 and proc.stdout == ""
        assert " ".join(proc.stderr.split()) == (
            f"launchgap: {trace.path}: recorded in target mode, which holds other tasks' switches only where they "
            f"met a target; running-waiting counts every task's (who runs, who waits), so it needs a recording made "
            f"with --system, or a trace-cmd import"
        )
        assert not out.exists()
    system = two_cpu_trace(tmp_path, mode="system")
    proc = subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "launchgap"),
            "running-waiting",
            str(system.path),
            "-o",
            str(tmp_path / "rw.png"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    # the hand-built failure: C waits on busy CPU0 from 40000 to 50000 ns while CPU1 idles
    assert "peak 3 runnable; work-conservation failures: 1 stretches, 0.010 ms" in " ".join(proc.stdout.split())


def test_a_window_with_too_many_marks_keeps_the_first_of_each_column(tmp_path, monkeypatch):
    """Past MARKS_KEPT_WHOLE the marks are thinned to the earliest per kind, CPU and column of the window
    (an hour of launches would not fit in memory), as many columns as keep the total under
    MARKS_KEPT_WHOLE; the count before thinning is kept for the note. Here 4 (kind, CPU) pairs and a
    budget of 50 give 12 columns: the window [1000, 121000) is cut in columns of 10000 ns."""
    from launchgap.analysis import core_map

    b = TraceBuilder(start_ns=1000, end_ns=121_000, command_pid=10)
    b.switch(1500, 0, IDLE, A)
    launches = [2000 + 700 * i for i in range(160)]  # 2000 .. 113300, on CPU 0
    for ts in launches:
        b.launch(ts, 0, A)
    b.migrate(2500, B, 1, 0)
    b.migrate(2600, B, 0, 1)
    b.irq(3000, 1, IDLE1, Event.SOFTIRQ, "TIMER", 500, number=1)
    trace = b.write(tmp_path / "many.lg")
    monkeypatch.setattr(core_map, "MARKS_KEPT_WHOLE", 50)
    monkeypatch.setattr(core_map, "MARK_COLUMNS", 1000)
    data = build_timeline(trace, TimelineOptions())
    assert data.marks_in_window == 160 + 2 + 1
    columns = {}
    for ts in launches:
        columns.setdefault((ts - 1000) * 12 // 120_000, ts)
    expected = sorted(
        [("launch", ts, 0) for ts in columns.values()] + [("migrate", 2500, 0), ("migrate", 2600, 1), ("irq", 3000, 1)],
        key=lambda r: (r[1], r[0]),
    )
    assert data.marks.select("kind", "ts_ns", "cpu").rows() == expected
    # --marks irq reads no launches, and a window this small is kept whole
    only_irqs = build_timeline(trace, TimelineOptions(show_marks=("irq",)))
    assert only_irqs.marks_in_window == 1 and only_irqs.marks.select("kind", "ts_ns").rows() == [("irq", 3000)]
    monkeypatch.setattr(core_map, "MARKS_KEPT_WHOLE", 1000)
    whole = build_timeline(trace, TimelineOptions())
    assert whole.marks.height == whole.marks_in_window == 163


def test_timeline_says_when_it_thinned_the_marks(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from launchgap.analysis import core_map
    from launchgap.cli import main

    b = TraceBuilder(start_ns=1000, end_ns=121_000, command_pid=10)
    b.switch(1500, 0, IDLE, A)
    for i in range(30):
        b.launch(2000 + 3000 * i, 0, A)
    trace = b.write(tmp_path / "many.lg")
    monkeypatch.setattr(core_map, "MARKS_KEPT_WHOLE", 10)
    result = CliRunner().invoke(main, ["timeline", str(trace.path), "-o", str(tmp_path / "t.png")])
    assert result.exit_code == 0, result.output
    # one (kind, CPU) pair and a budget of 10: slices of 12000 ns from 1000; the launches, every 3000 ns
    # from 2000 to 89000, fall in 8 of them
    assert (
        f"launchgap: note: {trace.path}: the window holds 30 marks, more than 10; the earliest per kind, CPU "
        f"and slice of the window are drawn (8): narrow it with --min/--max to see each"
    ) in " ".join(result.stderr.split())


def test_marks_keep_their_order_so_the_same_trace_draws_the_same_picture():
    """Marks that fall on one pixel are cut to the first, and the rest are drawn in the trace's order: an unordered
    unique gave them back in whatever order polars' threads finished, and the same trace drew different pixels run
    to run (seen on a 200k-row recording beside a hog: 189 pixels)."""
    from launchgap.views.timeline import _mark_points

    rows = 200_000
    frame = pl.DataFrame(
        {
            "kind": ["wakeup", "irq"] * (rows // 2),
            "cpu": [i % 2 for i in range(rows)],
            "ts_ns": list(range(0, rows * 10, 10)),
        },
        schema={"kind": pl.Utf8, "cpu": pl.UInt32, "ts_ns": pl.Int64},
    )
    marks = _mark_points(frame, origin=0, lo=0, hi=rows * 10, width_px=1000)
    # 2,000 ns a pixel: 200 rows each, both kinds on their own CPU, the earliest of each kept, in time order
    assert marks["ts_ns"].to_list() == [px * 2000 + k * 10 for px in range(1000) for k in (0, 1)]
