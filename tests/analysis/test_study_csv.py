"""The study's 19-column CSV: written one row per logical launch, and read
back (including the study tool's own double-counted output) with plain
caveats."""

from __future__ import annotations

import csv

from launchgap.analysis.report import build_report
from launchgap.exports.study_csv import COLUMNS, write_study_csv
from launchgap.trace.study_csv import HEADER, read_study_csv
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
    b.irq(11_000, 0, T, "softirq", "NET_RX", 700, number=3)
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
    assert kinds.count("schedSwitch") == 3           # the first switch-in, then out and in around the preemption
    assert kinds.count("syncEnter") == kinds.count("syncExit") == 1
    assert kinds.count("softirqExit") == 1
    outs = [r for r in parsed if r["event_type"] == "schedSwitch" and r["last_offcpu_ns"]]
    assert [int(r["timestamp_ns"]) for r in outs] == [6_000 - 1_000]   # relative to the trace start
    assert {r["pid"] for r in parsed if r["event_type"] == "cuLaunchKernel"} == {"100"}
    assert {r["tid"] for r in parsed if r["event_type"] == "cuLaunchKernel"} == {"101"}
    assert '"launcher, v2"' in text
    irq = next(r for r in parsed if r["event_type"] == "softirqExit")
    assert (irq["irq_name"], irq["duration_ns"]) == ("NET_RX", "700")


def test_reading_our_export_back_gives_the_same_launches(tmp_path):
    out = tmp_path / "t.csv"
    write_study_csv(built(tmp_path), out)
    report = build_report(read_study_csv(out))
    assert report["overview"]["launches"] == 3
    assert report["overview"]["syncs"] == 1
    assert report["trace"]["caveats"]


def test_the_study_tools_own_csv_is_deduplicated_and_its_limits_stated(tmp_path):
    path = tmp_path / "study.csv"
    lines = [HEADER]
    t = 1_000
    for i in range(4):   # the study tool wrote a runtime row, then the driver's echo of the same launch
        lines.append(f"{t},cudaLaunchKernel,100,101,qwen,0,{i + 1},1,1,256,1,1,0,7,,,,,")
        lines.append(f"{t + 50},cuLaunchKernel,100,101,qwen,0,{i + 1},1,1,256,1,1,0,7,,,,,")
        t += 1_000
    lines.append(f"{t},cuLaunchKernel,100,101,qwen,0,9,1,1,256,1,1,0,7,,,,,")          # a driver-only launch
    lines.append(f"{t + 100},schedSwitch,100,101,qwen,0,,,,,,,,,{t + 100},,,,")          # off the CPU ...
    lines.append(f"{t + 5_100},schedSwitch,100,101,qwen,0,,,,,,,,,,{t + 5_100},,,")      # ... back 5 us later
    lines.append(f"{t + 6_000},cuLaunchKernel,100,101,qwen,0,10,1,1,256,1,1,0,7,,,,,")
    path.write_text("\n".join(lines) + "\n")
    trace = read_study_csv(path)
    report = build_report(trace)
    assert report["overview"]["launches"] == 6       # 10 launch rows, 4 of them echoes
    assert report["overview"]["launches_by_api"] == {"cuLaunchKernel": 6}
    runtime_named = trace.of("launch").filter(trace.of("launch")["runtime_api"] == "cudaLaunchKernel")
    assert runtime_named.height == 4
    caveats = " ".join(report["trace"]["caveats"])
    assert "10 rows in the CSV, 4 of them a driver row echoing" in caveats
    assert "never as preemption" in caveats and "main thread" in caveats
    thread = report["taken"]["threads"][0]
    assert (thread["offcpu_ns"], thread["preempted_ns"], thread["blocked_ns"]) == (5_000, 0, 0)
    assert {c["class"]: c["count"] for c in report["gaps"]["classes"]} == {"clean": 4, "offcpu": 1}
