"""trace-cmd .dat import: real .dat files made here, checked against
`trace-cmd report`; and the line parser on hand-written lines."""

from __future__ import annotations

import json
import shutil
import subprocess

import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from launchgap.trace.tracecmd import lines_to_events
from tests.conftest import CUDASIM, ODD_NAME_SHOWN, REPO
from tests.recorder.conftest import needs_bpf
from tests.views.dat_maker import make_dat, report_counts

LAUNCHGAP = [str(REPO / ".venv" / "bin" / "launchgap")]

# the kinds launchgap imports trace-cmd's events as
IMPORTED_AS = {"sched_switch": Event.SWITCH, "sched_wakeup": Event.WAKEUP, "sched_waking": Event.WAKING,
               "sched_wakeup_new": Event.WAKEUP_NEW, "sched_migrate_task": Event.MIGRATE,
               "sched_process_fork": Event.FORK, "sched_process_exec": Event.EXEC, "sched_process_exit": Event.EXIT}


@pytest.fixture(scope="module")
def real_dat(tmp_path_factory):
    if shutil.which("trace-cmd") is None:
        pytest.fail("trace-cmd is not installed: scripts/setup.sh installs it")
    out = tmp_path_factory.mktemp("dat") / "cudasim.dat"
    return make_dat(out, ["sh", "-c", f"sleep 0.1; {CUDASIM} decode --quiet --threads 2 --tokens 40"])


@needs_bpf   # root, for tracefs
def test_import_matches_trace_cmd_report(real_dat, tmp_path):
    out = tmp_path / "imported.lg"
    proc = subprocess.run([*LAUNCHGAP, "import", str(real_dat), "-o", str(out), "--target", "cudasim"],
                          capture_output=True, text=True)
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
    # the workload is named, so the report analyses its threads
    assert trace.meta["pids"] and trace.meta["pid_is_thread_id"]
    report = subprocess.run([*LAUNCHGAP, "report", "--json", str(out)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["verdict"]["level"] in ("negligible", "light", "heavy")
    # without --target nothing names the workload: no verdict about whatever threads happened to run
    unnamed = tmp_path / "unnamed.lg"
    proc = subprocess.run([*LAUNCHGAP, "import", str(real_dat), "-o", str(unnamed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = subprocess.run([*LAUNCHGAP, "report", "--json", str(unnamed)], capture_output=True, text=True)
    verdict = json.loads(report.stdout)["verdict"]
    assert verdict["level"] == "not given" and "no target was named" in verdict["text"], verdict
    assert f"launchgap import {real_dat} --target NAME" in verdict["text"]
    # and every view works on it
    for command in (["timeline", str(out), "-o", str(tmp_path / "t.png")],
                    ["running-waiting", str(out), "-o", str(tmp_path / "rw.png")],
                    ["export", "--perfetto", str(out), "-o", str(tmp_path / "x.pftrace")]):
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
    sw = frames[Event.SWITCH].select("tid", "comm", "prev_state", "voluntary", "preempt", "next_tid",
                                     "next_comm").rows()
    assert sw == [(1665, "C1 CompilerThre", 0, False, True, 77, "kworker/1:0"),   # R+: preempted in the kernel
                  (77, "kworker/1:0", 0x402, True, False, 1665, "C1 CompilerThre"),  # I: idle kernel thread
                  (9, "bash", 0x80, True, False, 0, "swapper/0")]             # X: dead
    # the hard IRQ inside the softirq does not cut the softirq short
    irqs = [frames[kind].select("irq", "irq_name", "duration_ns").rows() for kind in (Event.SOFTIRQ, Event.HARDIRQ)]
    assert irqs == [[(3, "NET_RX", 1000)], [(24, "virtio0-input.0", 100)]]
    # the first hard IRQ entry never exits: dropped, not paired with the second one's exit
    assert frames[Event.WAKING].select("tid", "target_cpu").rows() == [(1665, 1)]
    lost = frames[Event.LOST]
    assert stats["lost_events"] == 42 and set(lost["cpu"].to_list()) == {1}
    assert lost.filter(pl.col("lost_event") == Event.SWITCH)["lost_count"].to_list() == [42]
    assert stats["cpu_count"] == 2


@needs_bpf   # root, for tracefs
def test_a_task_name_that_is_not_utf8_is_imported_escaped(odd_named_sleep, tmp_path):
    """trace-cmd prints the kernel's bytes; they were decoded with U+FFFD for each bad byte, the name lost."""
    dat = make_dat(tmp_path / "odd.dat", [str(odd_named_sleep), "0.05"])
    out = tmp_path / "odd.lg"
    proc = subprocess.run([*LAUNCHGAP, "import", str(dat), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    switched_out = set(trace.of(Event.SWITCH, "comm")["comm"].to_list())
    switched_in = set(trace.of(Event.SWITCH, "next_comm")["next_comm"].to_list())
    assert ODD_NAME_SHOWN in switched_out and ODD_NAME_SHOWN in switched_in
    # trace-cmd prints such a name, and any with stale bytes after its NUL, as ARRAY[ff, 6f, ...]
    assert not any("\ufffd" in name or name.startswith("ARRAY[") for name in switched_out | switched_in)
    execs = trace.of(Event.EXEC, "comm", "filename").filter(pl.col("comm") == ODD_NAME_SHOWN)
    assert execs["filename"].to_list() == [f"{odd_named_sleep.parent}/{ODD_NAME_SHOWN}"]
