"""The study's 19-column CSV: written one row per logical launch, and read
back (including the study tool's own double-counted output) with plain
caveats."""

from __future__ import annotations

import csv

from launchgap.exports.study_csv import COLUMNS, write_study_csv
from launchgap.trace import Event
from launchgap.trace.study_csv import HEADER, read_study_csv
from launchgap.views.report_json import report_json
from tests.analysis.builder import IDLE, TraceBuilder

T = (100, 101, "launcher, v2")  # a comma in the name: must be quoted
HOG = (200, 200, "hog")


def built(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    for ts in (3_000, 4_000, 5_000):
        b.launch(ts, 0, T)
    b.switch(6_000, 0, T, HOG)
    b.switch(9_000, 0, HOG, T)
    b.sync(10_000, 0, T, 4_000, api="cuMemcpyDtoH_v2")
    b.irq(11_000, 0, T, Event.SOFTIRQ, "NET_RX", 700, number=3)
    return b.write(tmp_path / "t.lg")


def test_export_writes_the_studys_layout_one_row_per_launch(tmp_path):
    out = tmp_path / "t.csv"
    rows = write_study_csv(built(tmp_path), out)
    text = out.read_text()
    assert text.splitlines()[0] == HEADER == ",".join(COLUMNS)
    parsed = list(csv.DictReader(text.splitlines()))
    assert rows == len(parsed)
    kinds = [r["event_type"] for r in parsed]
    assert kinds.count("cuLaunchKernel") == 3
    assert kinds.count("schedSwitch") == 3  # the first switch-in, then out and in around the preemption
    assert kinds.count("syncEnter") == kinds.count("syncExit") == 1
    assert kinds.count("softirqExit") == 1
    outs = [r for r in parsed if r["event_type"] == "schedSwitch" and r["last_offcpu_ns"]]
    assert [int(r["timestamp_ns"]) for r in outs] == [6_000 - 1_000]  # relative to the trace start
    assert {r["pid"] for r in parsed if r["event_type"] == "cuLaunchKernel"} == {"100"}
    assert {r["tid"] for r in parsed if r["event_type"] == "cuLaunchKernel"} == {"101"}
    assert '"launcher, v2"' in text
    irq = next(r for r in parsed if r["event_type"] == "softirqExit")
    assert (irq["irq_name"], irq["duration_ns"]) == ("NET_RX", "700")


def test_reading_our_export_back_gives_the_same_launches(tmp_path):
    out = tmp_path / "t.csv"
    write_study_csv(built(tmp_path), out)
    read = read_study_csv(out)
    report = report_json(read)
    assert report["overview"]["launches"] == 3
    assert report["overview"]["syncs"] == 1
    # the reader's caveats, the layout's own limit among them, are the report's
    assert report["trace"]["caveats"] == list(read.meta["caveats"])
    assert any("does not record why a thread left the CPU" in c for c in report["trace"]["caveats"])


def test_the_study_tools_own_csv_is_deduplicated_and_its_limits_stated(tmp_path):
    path = tmp_path / "study.csv"
    lines = [HEADER]
    t = 1_000
    for i in range(4):  # the study tool wrote a runtime row, then the driver's echo of the same launch
        lines.append(f"{t},cudaLaunchKernel,100,101,qwen,0,{i + 1},1,1,256,1,1,0,7,,,,,")
        lines.append(f"{t + 50},cuLaunchKernel,100,101,qwen,0,{i + 1},1,1,256,1,1,0,7,,,,,")
        t += 1_000
    lines.append(f"{t},cuLaunchKernel,100,101,qwen,0,9,1,1,256,1,1,0,7,,,,,")  # a driver-only launch
    lines.append(f"{t + 100},schedSwitch,100,101,qwen,0,,,,,,,,,{t + 100},,,,")  # off the CPU ...
    lines.append(f"{t + 5_100},schedSwitch,100,101,qwen,0,,,,,,,,,,{t + 5_100},,,")  # ... back 5 us later
    lines.append(f"{t + 6_000},cuLaunchKernel,100,101,qwen,0,10,1,1,256,1,1,0,7,,,,,")
    path.write_text("\n".join(lines) + "\n")
    trace = read_study_csv(path)
    report = report_json(trace)
    assert report["overview"]["launches"] == 6  # 10 launch rows, 4 of them echoes
    assert report["overview"]["launches_by_api"] == {"cuLaunchKernel": 6}
    runtime_named = trace.of(Event.LAUNCH).filter(trace.of(Event.LAUNCH)["runtime_api"] == "cudaLaunchKernel")
    assert runtime_named.height == 4
    caveats = " ".join(report["trace"]["caveats"])
    assert "10 rows in the CSV, 4 of them a driver row echoing" in caveats
    assert "never as preemption" in caveats and "main thread" in caveats
    thread = report["taken"]["threads"][0]
    assert (thread["offcpu_ns"], thread["preempted_ns"], thread["blocked_ns"]) == (5_000, 0, 0)
    assert {c["class"]: c["count"] for c in report["gaps"]["classes"]} == {"clean": 4, "offcpu": 1}


# --- the study tool's real output (tests/analysis/study_tool.py says how it was checked) ---


def test_the_tools_own_file_loads_with_hex_streams_ragged_rows_and_zeros(tmp_path):
    from tests.analysis.study_tool import qwen_like

    trace = read_study_csv(qwen_like(tmp_path / "tool.csv"))
    launches = trace.of(Event.LAUNCH)
    assert launches.height == 10  # 16 launch rows, 6 of them driver echoes
    assert set(launches["stream"].to_list()) == {0x7EFD90000C40}  # `0x7efd90000c40`, read as hex
    assert trace.meta["csv_source"] == "cuda_sched_trace"


def test_a_zero_in_the_unused_last_field_is_not_a_switch(tmp_path):
    """The tool writes 0 in the unused one of last_offcpu_ns/last_oncpu_ns: 4 schedSwitch rows are 2
    switch-outs and 2 switch-ins, not 4 of each."""
    from tests.analysis.study_tool import qwen_like

    trace = read_study_csv(qwen_like(tmp_path / "tool.csv"))
    switches = trace.of(Event.SWITCH)
    assert (switches["tid"] == 100).sum() == 2 and (switches["next_tid"] == 100).sum() == 2
    report = report_json(trace)
    assert report["overview"]["switches"] == 2
    main = next(t for t in report["taken"]["threads"] if t["tid"] == 100)
    assert main["offcpu_ns"] == 20_000 + 10_000  # out -> in, twice; never doubled


def test_threads_without_switch_rows_have_a_name_and_a_lifetime(tmp_path):
    from tests.analysis.study_tool import qwen_like

    report = report_json(read_study_csv(qwen_like(tmp_path / "tool.csv")))
    worker = next(t for t in report["taken"]["threads"] if t["tid"] == 101)
    assert worker["comm"] == "llama-worker"
    assert worker["lifetime_ns"] == 3 * 2_000  # first to last launch: 4 launches 2 us apart


def test_no_verdict_from_a_study_csv_and_what_it_supports(tmp_path):
    from tests.analysis.study_tool import qwen_like

    for path in (qwen_like(tmp_path / "tool.csv"), tmp_path / "ours.csv"):
        if path.name == "ours.csv":
            write_study_csv(built(tmp_path), path)
        verdict = report_json(read_study_csv(path))["verdict"]
        assert verdict["level"] == "not given" and verdict["taken_percent"] is None
        text = " ".join(verdict["text"].split())
        assert "No verdict can be given from this file" in text and "What it does support: kernel launches" in text
        assert "negligible" not in text and "no tuning" not in text


def test_reading_our_export_back_has_none_of_the_tools_caveats(tmp_path):
    out = tmp_path / "ours.csv"
    write_study_csv(built(tmp_path), out)
    trace = read_study_csv(out)
    assert trace.meta["csv_source"] == "launchgap export"
    caveats = " ".join(trace.meta["caveats"])
    assert "echo" not in caveats and "main thread" not in caveats and "GPU thread was current" not in caveats
    assert "does not record why a thread left the CPU" in caveats  # a limit of the layout itself
    from tests.analysis.study_tool import qwen_like

    tool = " ".join(read_study_csv(qwen_like(tmp_path / "tool.csv")).meta["caveats"])
    assert "driver row echoing" in tool and "main thread" in tool


def test_the_exports_rows_carry_the_workloads_name_not_the_recorders(tmp_path):
    """Until its exec, the traced command is the recorder's fork and has the recorder's name."""
    b = TraceBuilder()
    gate = (100, 101, "launchgap-recor")
    b.switch(2_000, 0, IDLE, gate)
    b.exec(3_000, 0, T, "/usr/bin/launcher")
    b.launch(4_000, 0, T)
    b.switch(6_000, 0, T, HOG)
    out = tmp_path / "t.csv"
    write_study_csv(b.write(tmp_path / "t.lg"), out)
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert rows[0]["event_type"] == "schedSwitch" and rows[0]["comm"] == T[2]
    assert {r["comm"] for r in rows} == {T[2]}
    assert next(r for r in rows if r["event_type"] == "cuLaunchKernel")["stream"] == "0x7"  # hex, as the tool


def test_the_report_header_of_a_csv_shows_no_unknowns(tmp_path):
    import subprocess
    import sys

    from tests.analysis.study_tool import qwen_like

    path = qwen_like(tmp_path / "tool.csv")
    proc = subprocess.run([sys.executable, "-m", "launchgap.cli", "report", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert "?" not in head and "None" not in head
    assert head == (
        f"{path}: the study's CSV layout, written by the study's tool (cuda_sched_trace); no host, "
        f"kernel or CPU information in the file"
    )


def test_sched_per_1k_both_definitions(tmp_path):
    """launchgap's Sched/1K counts context switches (switch-outs); the study's script divided its tracer's
    schedSwitch counter (a row per switch-out and one per switch-in) by its cuLaunchKernel counter (which
    counts the runtime launches' driver echoes): the report offers both, the second computed exactly as
    the script would on the same file."""
    from tests.analysis.study_tool import qwen_like

    path = qwen_like(tmp_path / "tool.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()))
    script = (
        sum(r["event_type"] == "schedSwitch" for r in rows)
        / sum(r["event_type"] == "cuLaunchKernel" for r in rows)
        * 1000
    )
    m = report_json(read_study_csv(path))["study_metrics"]
    assert m["sched_rows_per_1k_launches_study"] == script == 4 / 10 * 1000
    assert m["sched_per_1k_launches"] == 2 / 10 * 1000
    # on a launchgap trace: switch-outs and switch-ins of the workload, per logical launch
    report = report_json(built(tmp_path))
    assert report["study_metrics"]["sched_per_1k_launches"] == 1 / 3 * 1000
    assert report["study_metrics"]["sched_rows_per_1k_launches_study"] == (1 + 2) / 3 * 1000


# A CSV written by the study's own tracer: cuda_sched_trace built from its public source (eunomia-bpf/gpu_ext,
# tools/cuda_sched_trace{.c,.bpf.c} + cuda_launch_trace_event.h, the 19-column version) against Debian's
# libbpf-dev (PT_REGS_PARM6 defined as r9 for libbpf 1.1), run as root beside
#   cudasim decode --tokens 12 --threads 2 --sync device --layers 2 --kernels-per-layer 3 --seed 7
# with cudasim's libcuda.so.1 and libcudart.so.12 as its arguments, stopped with SIGINT; .log is its stderr
# (libbpf's debug lines dropped, the checkout's path shortened to REPO/). The tool's source is not in this repo.
DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "data"


def tool_counters() -> dict[str, int]:
    """The tracer's own summary: what the study's analyze_scheduler_impact.py read for its table."""
    out = {}
    for line in (DATA / "cuda_sched_trace-cudasim.log").read_text().splitlines():
        name, _, count = line.rpartition(" ")
        if count.isdigit() and name.strip():
            out[name.strip()] = int(count)
    return out


def test_a_csv_written_by_the_study_tool_itself():
    path = DATA / "cuda_sched_trace-cudasim.csv"
    rows = list(csv.DictReader(path.read_text().splitlines()))
    counters = tool_counters()
    assert counters["cudaLaunchKernel"] == 12 * 2 * (2 * 3 + 2)  # tokens x threads x (layers x kernels + 2)
    trace = read_study_csv(path)
    assert trace.meta["csv_source"] == "cuda_sched_trace"
    report = report_json(trace)
    o, m = report["overview"], report["study_metrics"]
    assert o["launches"] == counters["cudaLaunchKernel"]  # every driver echo merged away
    assert o["syncs"] == counters["cudaSync Exit"]
    # the study's Sched/1K, exactly as its script computed it from this run's counters
    assert (
        m["sched_rows_per_1k_launches_study"] == counters["Sched Switches Tracked"] / counters["cuLaunchKernel"] * 1000
    )
    outs = sum(r["event_type"] == "schedSwitch" and r["last_offcpu_ns"] != "0" for r in rows)
    ins = sum(r["event_type"] == "schedSwitch" and r["last_oncpu_ns"] != "0" for r in rows)
    assert outs + ins == counters["Sched Switches Tracked"] and o["switches"] == outs
    assert m["sched_per_1k_launches"] == outs / counters["cudaLaunchKernel"] * 1000
    assert sum(i["count"] for i in o["irqs"] if i["kind"] == "hardirq") == counters["Hard IRQs Tracked"]
    # the launching threads have no switch rows (the tool saw only the main thread's) yet have names and lives
    launching = [t for t in report["taken"]["threads"] if t["launches"]]
    assert len(launching) == 2 and all(t["comm"] == "cudasim" and t["lifetime_ns"] > 0 for t in launching)
    assert report["verdict"]["level"] == "not given"
