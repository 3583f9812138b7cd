"""The views on a real `--system` recording: a two-thread cudasim beside a
CPU hog. The PNG is checked to render at its size, the HTML is drawn by
headless Chromium (screenshot taken, colours of the workload's tasks found
in it), and the Perfetto export is decoded and counted."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess

import numpy as np
import polars as pl
import pytest
from matplotlib.colors import to_rgb
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from PIL import Image

from launchgap.analysis.core_map import Window, choose_window
from launchgap.analysis.running_waiting import running_waiting
from launchgap.trace import Event, read_trace
from launchgap.views.timeline import TimelineOptions, build_timeline
from tests.conftest import CUDASIM, REPO
from tests.recorder.conftest import RECORDER, needs_bpf
from tests.views.test_hand_built_views import windowed_counts_equal_whole, windowed_equals_clipped

LAUNCHGAP = [str(REPO / ".venv" / "bin" / "launchgap")]
CHROMIUM = next(
    (shutil.which(n) for n in ("chromium-headless-shell", "chromium", "chromium-browser") if shutil.which(n)), None
)


def launchgap(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*LAUNCHGAP, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def system_trace(tmp_path_factory):
    out = tmp_path_factory.mktemp("system") / "system.lg"
    hog = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout", "60", "--quiet"], start_new_session=True)
    try:
        proc = subprocess.run(
            [
                str(RECORDER),
                "--system",
                "-o",
                str(out),
                "--",
                str(CUDASIM),
                "decode",
                "--quiet",
                "--threads",
                "2",
                "--tokens",
                "40",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    return read_trace(out)


def png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@needs_bpf
def test_timeline_png_of_a_real_system_recording(system_trace, tmp_path):
    out = tmp_path / "cores.png"
    proc = launchgap("timeline", str(system_trace.path), "-o", str(out), "--target", "cudasim")
    width, height = png_size(out)
    # worked out by hand: 14 in wide; two CPUs' rows of 0.25 in, 1.4 in of axes and 0.6 in of title: 2.5 in
    # high; at 150 dpi
    assert (width, height) == (2100, 375)
    assert out.stat().st_size > 20_000
    assert proc.stdout.startswith(f"{system_trace.path}: per command")
    # the data behind the figure and the table, against the trace's own switch rows: every switch-in of a
    # cudasim thread is a slice, and each command's switch-ins and tasks are those its rows show
    data = build_timeline(system_trace, TimelineOptions(target="cudasim"))
    switch_ins = system_trace.of(Event.SWITCH, "next_comm", "next_tid").filter(pl.col("next_comm") == "cudasim")
    drawn = data.slices.filter((pl.col("comm") == "cudasim") & pl.col("switched_in")).height
    assert drawn == switch_ins.height
    stats = {r["comm"]: r for r in data.stats.iter_rows(named=True)}
    assert (stats["cudasim"]["switches_in"], stats["cudasim"]["tasks"]) == (
        switch_ins.height,
        switch_ins["next_tid"].n_unique(),
    )
    # the window's own switches give the runs of the whole trace cut to it: tenths of the recording
    lo, hi = (int(t) for t in system_trace.span_ns())
    tenths = [lo + (hi - lo) * k // 10 for k in range(11)]
    assert windowed_equals_clipped(system_trace, [Window(lo, a, b) for a in tenths for b in tenths if a < b]) == 55


def busy_ns_from_switch_rows(trace, lo: int, hi: int) -> int:
    """Time some task other than a CPU's idle task (tid 0) ran, between LO and HI, from the trace's switch rows
    alone, CPU by CPU: from each switch to the CPU's next its next task ran; before its first switch, the
    task that switch took off (a --system trace records every switch); after its last, to HI, the one it put
    on."""
    total = 0
    switches = trace.of(Event.SWITCH, "ts_ns", "cpu", "tid", "next_tid")
    for (_,), rows in switches.sort("cpu", "ts_ns", maintain_order=True).group_by("cpu", maintain_order=True):
        edges = [lo, *rows["ts_ns"].to_list(), hi]
        running = [rows["tid"][0], *rows["next_tid"].to_list()]
        total += sum(max(0, min(b, hi) - max(a, lo)) for a, b, tid in zip(edges, edges[1:], running) if tid != 0)
    return total


@needs_bpf
def test_running_waiting_of_a_real_system_recording(system_trace, tmp_path):
    out = tmp_path / "rw.png"
    launchgap("running-waiting", str(system_trace.path), "-o", str(out))
    assert png_size(out)[0] == 14 * 150
    window = choose_window(system_trace)
    rw = running_waiting(system_trace, window, 2)
    steps = rw.steps
    t = steps["ts_ns"].to_numpy()
    busy_ns = int(np.sum(np.diff(np.append(t, window.hi_ns)) * steps["running"].to_numpy()))
    # running counts integrate to the time the trace's switch rows show a task other than idle on a CPU
    assert busy_ns == busy_ns_from_switch_rows(system_trace, int(t[0]), window.hi_ns)
    # (consistency, not a truth) read for a window, the events that bear on it give what the whole trace's do:
    # tenths of the recording
    lo, hi = (int(t) for t in system_trace.span_ns())
    tenths = [lo + (hi - lo) * k // 10 for k in range(11)]
    assert (
        windowed_counts_equal_whole(system_trace, [Window(lo, a, b) for a in tenths for b in tenths if a < b], 2) == 55
    )
    assert steps["running"].max() <= 2 and (steps["runnable"] >= steps["running"]).all()


@needs_bpf
def test_timeline_html_in_headless_chromium(system_trace, tmp_path):
    if CHROMIUM is None:
        pytest.fail("no headless Chromium: scripts/setup.sh installs chromium-headless-shell")
    page = tmp_path / "cores.html"
    launchgap("timeline", str(system_trace.path), "-o", str(page), "--target", "cudasim")
    assert page.stat().st_size < 5_000_000
    shot = tmp_path / "shot.png"
    base = [
        CHROMIUM,
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
        "--window-size=1400,500",
    ]
    subprocess.run([*base, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert 'data-ready="yes"' in dom and "data-error" not in dom
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    assert Image.open(shot).size == (1400, 500)
    present = {tuple(p) for p in np.unique(pixels, axis=0)}
    data = build_timeline(system_trace, TimelineOptions(target="cudasim"))
    colours = data.slices.filter(pl.col("comm") == "cudasim")["color"].unique().to_list()
    for colour in colours:
        assert tuple(round(255 * c) for c in to_rgb(colour)) in present, colour
    rw_page = tmp_path / "rw.html"
    launchgap("running-waiting", str(system_trace.path), "-o", str(rw_page))
    dom = subprocess.run([*base, "--dump-dom", rw_page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    steps = running_waiting(system_trace, choose_window(system_trace), 2).steps.height
    assert 'data-ready="yes"' in dom and f'data-drawn="{steps}"' in dom


@needs_bpf
def test_perfetto_export_decodes_with_counts_and_order(system_trace, tmp_path):
    out = tmp_path / "run.pftrace"
    launchgap("export", "--perfetto", str(system_trace.path), "-o", str(out))
    decoded = pb.Trace()
    decoded.ParseFromString(out.read_bytes())
    switches, per_cpu_last, irq_entries, irq_exits = 0, {}, 0, 0
    for packet in decoded.packet:
        if not packet.HasField("ftrace_events"):
            continue
        bundle = packet.ftrace_events
        for event in bundle.event:
            assert event.timestamp >= per_cpu_last.get(bundle.cpu, 0)  # in time order on each CPU
            per_cpu_last[bundle.cpu] = event.timestamp
            switches += event.HasField("sched_switch")
            irq_entries += event.HasField("softirq_entry")
            irq_exits += event.HasField("softirq_exit")
    trace = system_trace
    assert switches == trace.of(Event.SWITCH, "ts_ns").height
    assert irq_entries == irq_exits == trace.of(Event.SOFTIRQ, "ts_ns").height
    instants = [
        p for p in decoded.packet if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_INSTANT
    ]
    assert len(instants) == trace.of(Event.LAUNCH, "ts_ns").height == 2 * 40 * 478
    begins = [
        p
        for p in decoded.packet
        if p.HasField("track_event")
        and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
        and p.track_event.name.startswith("cu")
    ]
    assert len(begins) == trace.of(Event.SYNC, "ts_ns").height
    threads = {t.tid: t.name for p in decoded.packet if p.HasField("process_tree") for t in p.process_tree.threads}
    cudasim_tids = set(trace.of(Event.LAUNCH, "tid")["tid"].unique().to_list())
    assert all(threads[tid] == "cudasim" for tid in cudasim_tids)


@needs_bpf
def test_running_waiting_refuses_a_real_target_mode_recording(tmp_path):
    """What the issue saw (issue 25, item 2): "peak 76 runnable" on 2 CPUs, from a recording without --system."""
    out = tmp_path / "target.lg"
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
            "-o",
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--threads",
            "2",
            "--tokens",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert read_trace(out).meta["mode"] == "command"
    rw = subprocess.run(
        [*LAUNCHGAP, "running-waiting", str(out), "-o", str(tmp_path / "rw.png")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rw.returncode == 2 and rw.stdout == "" and not (tmp_path / "rw.png").exists()
    lines = rw.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"launchgap: {out}: recorded in target mode"), rw.stderr
