"""trace-cmd .dat import: real .dat files made here, checked against
`trace-cmd report`; and the line parser on hand-written lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import polars as pl
import pytest

from launchgap.analysis.core_map import shared_span_s
from launchgap.trace import Event, read_trace
from launchgap.trace.tracecmd import import_lines, lines_to_events
from launchgap.views.html import cores_panel
from launchgap.views.timeline import UNKNOWN_LABEL, TimelineOptions, build_timeline, unknown_segments
from tests.conftest import CUDASIM, ODD_NAME_SHOWN, REPO
from tests.recorder.conftest import needs_bpf
from tests.views.dat_maker import make_dat, report_counts

LAUNCHGAP = [str(REPO / ".venv" / "bin" / "launchgap")]

# the kinds launchgap imports trace-cmd's events as
IMPORTED_AS = {
    "sched_switch": Event.SWITCH,
    "sched_wakeup": Event.WAKEUP,
    "sched_waking": Event.WAKING,
    "sched_wakeup_new": Event.WAKEUP_NEW,
    "sched_migrate_task": Event.MIGRATE,
    "sched_process_fork": Event.FORK,
    "sched_process_exec": Event.EXEC,
    "sched_process_exit": Event.EXIT,
}


@pytest.fixture(scope="module")
def real_dat(tmp_path_factory):
    if shutil.which("trace-cmd") is None:
        pytest.fail("trace-cmd is not installed: scripts/setup.sh installs it")
    out = tmp_path_factory.mktemp("dat") / "cudasim.dat"
    return make_dat(out, ["sh", "-c", f"sleep 0.1; {CUDASIM} decode --quiet --threads 2 --tokens 40"])


@needs_bpf  # root, for tracefs
def test_import_matches_trace_cmd_report(real_dat, tmp_path):
    out = tmp_path / "imported.lg"
    proc = subprocess.run(
        [*LAUNCHGAP, "import", str(real_dat), "-o", str(out), "--target", "cudasim"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    listed = report_counts(real_dat)
    trace = read_trace(out)
    assert trace.format == 2 and out.is_dir()
    assert listed["sched_switch"] > 100
    for name, kind in IMPORTED_AS.items():
        assert trace.count(kind) == listed.get(name, 0), name
    # each softirq is an entry paired with its exit; only the trace's two edges per CPU may be unpaired
    assert listed["softirq_entry"] - 2 * 2 <= trace.count(Event.SOFTIRQ) <= listed["softirq_entry"]
    assert f"{listed['sched_switch']:,} sched_switch" in " ".join(proc.stdout.split())
    # the workload is named, so the report analyses its threads: every task trace-cmd shows named cudasim
    text = subprocess.run(
        ["trace-cmd", "report", "-i", str(real_dat)], capture_output=True, text=True, check=True
    ).stdout
    named = {int(tid) for tid in re.findall(r"\b(?:prev_|next_)?comm=cudasim (?:prev_|next_)?pid=(\d+)", text)}
    assert len(named) >= 3 and trace.meta["pids"] == sorted(named) and trace.meta["pid_is_thread_id"] is True
    report = subprocess.run([*LAUNCHGAP, "report", "--json", str(out)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    # its threads are those, and its verdict is the level its share of time taken falls in (docs/metrics.md:
    # below 1% negligible, from 5% heavy)
    analysed = json.loads(report.stdout)
    assert {t["tid"] for t in analysed["taken"]["threads"]} == named
    share = analysed["verdict"]["taken_percent"]
    assert analysed["verdict"]["level"] == ("negligible" if share < 1 else "light" if share < 5 else "heavy")
    # without --target nothing names the workload: no verdict about whatever threads happened to run
    unnamed = tmp_path / "unnamed.lg"
    proc = subprocess.run([*LAUNCHGAP, "import", str(real_dat), "-o", str(unnamed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = subprocess.run([*LAUNCHGAP, "report", "--json", str(unnamed)], capture_output=True, text=True)
    verdict = json.loads(report.stdout)["verdict"]
    assert verdict["level"] == "not given" and "no target was named" in verdict["text"], verdict
    assert f"launchgap import {real_dat} --target NAME" in verdict["text"]
    # and every view works on it
    for command in (
        ["timeline", str(out), "-o", str(tmp_path / "t.png")],
        ["running-waiting", str(out), "-o", str(tmp_path / "rw.png")],
        ["export", "--perfetto", str(out), "-o", str(tmp_path / "x.pftrace")],
    ):
        run = subprocess.run([*LAUNCHGAP, *command], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr


LINES = [
    "cpus=2",
    "  C1 CompilerThre-1665 [001]  100.000001000: sched_switch:         prev_comm=C1 CompilerThre prev_pid=1665 "
    "prev_prio=120 prev_state=256 next_comm=kworker/1:0 next_pid=77 next_prio=120",
    "       kworker/1:0-77 [001]  100.000002500: sched_switch:         prev_comm=kworker/1:0 prev_pid=77 prev_prio=120 "
    "prev_state=128 next_comm=C1 CompilerThre next_pid=1665 next_prio=120",
    "            <idle>-0 [000]  100.000003000: irq_handler_entry:    irq=24 name=virtio0-input.0",
    "            <idle>-0 [000]  100.000003100: softirq_entry:        vec=3",
    "            <idle>-0 [000]  100.000003200: irq_handler_entry:    irq=24 name=virtio0-input.0",
    "            <idle>-0 [000]  100.000003300: irq_handler_exit:     irq=24 ret=1",
    "            <idle>-0 [000]  100.000004100: softirq_exit:         vec=3",
    "            <idle>-0 [000]  100.000005000: sched_waking:         comm=C1 CompilerThre pid=1665 prio=120 target_cpu=001",
    "              bash-9 [000]  100.000006000: sched_switch:         prev_comm=bash prev_pid=9 prev_prio=120 "
    "prev_state=16 next_comm=swapper/0 next_pid=0 next_prio=120",
    "CPU:1 [LOST 42 EVENTS]",
]


def test_line_parser_states_nesting_and_loss():
    frames, stats = lines_to_events(LINES)
    sw = (
        frames[Event.SWITCH].select("tid", "comm", "prev_state", "voluntary", "preempt", "next_tid", "next_comm").rows()
    )
    assert sw == [
        (1665, "C1 CompilerThre", 0, False, True, 77, "kworker/1:0"),  # R+: preempted in the kernel
        (77, "kworker/1:0", 0x402, True, False, 1665, "C1 CompilerThre"),  # I: idle kernel thread
        (9, "bash", 0x80, True, False, 0, "swapper/0"),
    ]  # X: dead
    # the hard IRQ inside the softirq does not cut the softirq short
    irqs = [frames[kind].select("irq", "irq_name", "duration_ns").rows() for kind in (Event.SOFTIRQ, Event.HARDIRQ)]
    assert irqs == [[(3, "NET_RX", 1000)], [(24, "virtio0-input.0", 100)]]
    # the first hard IRQ entry never exits: dropped, not paired with the second one's exit
    assert frames[Event.WAKING].select("tid", "target_cpu").rows() == [(1665, 1)]
    lost = frames[Event.LOST]
    assert stats["lost_events"] == 42 and set(lost["cpu"].to_list()) == {1}
    assert lost.filter(pl.col("lost_event") == Event.SWITCH)["lost_count"].to_list() == [42]
    assert stats["cpu_count"] == 2


@needs_bpf  # root, for tracefs
def test_a_task_name_that_is_not_utf8_is_imported_escaped(odd_named_sleep, tmp_path):
    """trace-cmd prints the kernel's bytes; they were decoded with U+FFFD for each bad byte, the name lost."""
    dat = make_dat(tmp_path / "odd.dat", [str(odd_named_sleep), "0.05"])
    out = tmp_path / "odd.lg"
    proc = subprocess.run([*LAUNCHGAP, "import", str(dat), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    switched_out = set(trace.of(Event.SWITCH, "comm")["comm"].to_list())
    switched_in = set(trace.of(Event.SWITCH, "next_comm")["next_comm"].to_list())
    woken = set(trace.of(Event.WAKEUP, "comm")["comm"].to_list())
    # its switch-out when it sleeps, and its wakeup; not always its switch-in: on this sandbox's kernel the
    # idle task's switch-outs are never written, and it may have been switched in from the idle task
    assert ODD_NAME_SHOWN in switched_out and ODD_NAME_SHOWN in woken
    # trace-cmd prints such a name, and any with stale bytes after its NUL, as ARRAY[ff, 6f, ...]
    names = switched_out | switched_in | woken
    assert not any("\ufffd" in name or name.startswith("ARRAY[") for name in names)
    execs = trace.of(Event.EXEC, "comm", "filename").filter(pl.col("comm") == ODD_NAME_SHOWN)
    assert execs["filename"].to_list() == [f"{odd_named_sleep.parent}/{ODD_NAME_SHOWN}"]


# A .dat whose kernel wrote none of the idle task's switch-outs (this sandbox's: no `swapper/1 ==> ...`
# line), as trace-cmd reports it. CPU 1: cudasim sleeps at 100.000 s and the idle task comes in; cudasim is
# woken onto CPU 1 at 100.001005 and runs there (its switch-in, "swapper/1 ==> cudasim", never written)
# until it sleeps again at 100.103. CPU 0: sh runs; kworker comes in at 100.050 and its switch back to sh
# is lost, so the sh switched out at 100.070 was never switched in.
IDLE_OUTS_MISSING = [
    "cpus=2",
    "         cudasim-100 [001]  100.000000000: sched_switch:         prev_comm=cudasim prev_pid=100 prev_prio=120 "
    "prev_state=1 next_comm=swapper/1 next_pid=0 next_prio=120",
    "              sh-50  [000]  100.001000000: sched_waking:         comm=cudasim pid=100 prio=120 target_cpu=001",
    "          <idle>-0   [001]  100.001005000: sched_wakeup:         comm=cudasim pid=100 prio=120 target_cpu=001",
    "              sh-50  [000]  100.050000000: sched_switch:         prev_comm=sh prev_pid=50 prev_prio=120 "
    "prev_state=256 next_comm=kworker/0:1 next_pid=7 next_prio=120",
    "              sh-50  [000]  100.070000000: sched_switch:         prev_comm=sh prev_pid=50 prev_prio=120 "
    "prev_state=1 next_comm=swapper/0 next_pid=0 next_prio=120",
    "         cudasim-100 [001]  100.103000000: sched_switch:         prev_comm=cudasim prev_pid=100 prev_prio=120 "
    "prev_state=1 next_comm=swapper/1 next_pid=0 next_prio=120",
    "          <idle>-0   [000]  100.120000000: sched_waking:         comm=kworker/0:1 pid=7 prio=120 target_cpu=000",
]


def test_cpus_whose_switches_do_not_chain_are_named_in_the_report_and_the_timeline(tmp_path):
    """It gave a heavy verdict from a false 102 ms wake-up latency (the idle task as culprit) and drew CPU 1
    empty, and said nothing (issue 25, item 3)."""
    out = tmp_path / "idle.lg"
    out.mkdir()
    import_lines(IDLE_OUTS_MISSING, out, "idle.dat", ["cudasim"])
    report = subprocess.run([*LAUNCHGAP, "report", "--json", str(out)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    # CPU 0: 2 switches, the second's sh not the kworker switched in at 100.050; CPU 1: 2 switches, the
    # second's cudasim not the idle task switched in at 100.000. cudasim's run-queue wait, from its wakeup
    # at 100.001005 to its switch-out, lies wholly in CPU 1's unknown stretch
    assert data["trace"]["inconsistent_cpus"] == [
        {"cpu": 0, "switches": 2, "unmatched": 1, "after_idle": 0, "unknown_ns": 20_000_000, "taken_ns": 0},
        {"cpu": 1, "switches": 2, "unmatched": 1, "after_idle": 1, "unknown_ns": 103_000_000, "taken_ns": 101_995_000},
    ]
    caveat = next(c for c in data["trace"]["caveats"] if "do not chain" in c)
    assert caveat.startswith(
        "the switches of CPUs 0, 1 do not chain: in 2 of their 4 the task switched out is not "
        "the one last switched in there, 1 of them right after a switch-in of the idle task."
    )
    assert "who ran is unknown for 123.000 ms" in caveat and "101.995 ms of the workload's" in caveat
    verdict = data["verdict"]
    assert verdict["taken_ns"] == 101_995_000  # what the trace says; the verdict then says what lies where
    assert verdict["text"].endswith(
        "But 0.102 s of the time taken lies where a CPU's switches do not chain (the "
        "caveat above): who ran there is unknown, so it may not have been taken at "
        "all; without it the share is 0.00% (negligible)."
    )

    # the timeline hatches both stretches, says so, and draws them
    timeline = subprocess.run(
        [*LAUNCHGAP, "timeline", str(out), "-o", str(tmp_path / "t.png")], capture_output=True, text=True
    )
    assert timeline.returncode == 0, timeline.stderr
    assert (
        "the switches of CPUs 0, 1 do not chain (a switch was never recorded), so who ran there is unknown for "
        "123.000 ms of the window, drawn hatched"
    ) in " ".join(timeline.stderr.split())
    drawn = build_timeline(read_trace(out), TimelineOptions())
    assert drawn.unknown.select("cpu", "start_ns", "end_ns", "in_tid", "out_tid").rows() == [
        (0, 100_050_000_000, 100_070_000_000, 7, 50),
        (1, 100_000_000_000, 100_103_000_000, 0, 100),
    ]
    span = shared_span_s([drawn.window])
    assert unknown_segments(drawn, span, 1000).select("cpu", "start_ns", "end_ns").rows() == [
        (0, 100_050_000_000, 100_070_000_000),
        (1, 100_000_000_000, 100_103_000_000),
    ]
    page = subprocess.run(
        [*LAUNCHGAP, "timeline", str(out), "-o", str(tmp_path / "t.html")], capture_output=True, text=True
    )
    assert page.returncode == 0, page.stderr
    # the page's slices: CPU 0's unknown stretch in place of the kworker's run; CPU 1's where it drew nothing
    panel = cores_panel(drawn)
    tasks = [panel.spec["tasks"][i]["comm"] for i in panel.columns["task"]]
    assert tasks == ["sh", UNKNOWN_LABEL, UNKNOWN_LABEL]
