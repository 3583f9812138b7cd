"""Names launchgap did not choose reach the terminal as the characters they hold (issue 22, item 10).

Any user can name a process `[/]` (`echo '[/]' > /proc/self/comm`): rich read it as markup and the report,
the timeline and `experiment show` died on it (a lever experiment saved its results, then crashed printing
the table, and `experiment show` crashed on them for ever). `[bold]x` lost its text to a style, `:smile:`
became an emoji, an escape sequence in a name or a path reached the terminal raw, and two `$` in a name
made matplotlib read it as TeX and fail the drawing. Every view that prints names gets such names here
(traces built as the other tests build them, a results directory, a doctor tree, a library's path, and a
real recording whose workload renames itself): each exits 0 and shows the name literally, control
characters as visible escapes, and nothing raw reaches the terminal."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchgap.trace import Event
from tests.analysis.builder import IDLE, TraceBuilder
from tests.conftest import LIBCUDA
from tests.doctor.trees import FIXTURES, make_tree

ESC = "\x1b"

# each hostile name, and how it must look in the output (written out here, not computed)
NAMES = {
    "[/]": "[/]",
    "[bold]x": "[bold]x",
    "[link=file:///etc/passwd]x[/link]": "[link=file:///etc/passwd]x[/link]",
    "bad\\xffname": "bad\\xffname",  # a byte that was not UTF-8, as the escape that stands for it
    f"{ESC}[31mred": "\\x1b[31mred",  # an SGR colour
    f"{ESC}]8;;http://x\x07t": "\\x1b]8;;http://x\\x07t",  # an OSC 8 hyperlink
    "L" * 300 + "[/]": "L" * 300 + "[/]",
    ":smile:": ":smile:",
    "a$\\frac$b": "a$\\frac$b",  # TeX to matplotlib
    "end\\": "end\\",  # a trailing backslash escapes the markup after it
}
# a path can hold neither "/" in a name nor NUL: [/] across two directories, the rest in one name
HOSTILE_DIR = f"x[:smile:[bold]b{ESC}[31m"
HOSTILE_FILE = "]y.lg"
HOSTILE_PATH_SHOWN = "x[:smile:[bold]b\\x1b[31m/]y.lg"


def png_width(path) -> int:
    """PATH's width, once Pillow has decoded it as a PNG (a file that is not one fails here)."""
    from PIL import Image

    with Image.open(path) as image:
        assert image.format == "PNG"
        image.load()
        return image.size[0]


def launchgap(*args: str, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    # a report fits 100 columns in a pipe (COLUMNS where set): as wide as the widest allowed, so that no
    # hostile name these tests look for is folded across lines
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "1000"},
    )


def succeeded(proc: subprocess.CompletedProcess) -> str:
    """The output of a command that must have run through: exit 0, no traceback, nothing raw."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert ESC not in proc.stdout and ESC not in proc.stderr, "an escape sequence reached the terminal raw"
    assert "\x07" not in proc.stdout + proc.stderr
    return proc.stdout


def hostile_trace(path: Path, mode: str = "command") -> Path:
    """One launching thread per name, each preempted by a task of the same name, and an interrupt named so;
    the command line holds names too. MODE "system" says every task's switches were recorded."""
    b = TraceBuilder(end_ns=2_000_000, meta_extra={"command": ["[/]", f"{ESC}[2J"], "mode": mode})
    t = 2_000
    for i, name in enumerate(NAMES):
        cpu = i % 2
        thread, hog = (100, 101 + i, name), (200 + i, 200 + i, name)
        b.switch(t, cpu, IDLE, thread)
        for k in range(5):
            b.launch(t + 1_000 + k * 100, cpu, thread)
        b.switch(t + 5_000, cpu, thread, hog)
        b.switch(t + 9_000, cpu, hog, thread)
        b.irq(t + 9_500, cpu, thread, Event.HARDIRQ, name, 100, number=30 + i)
        b.switch(t + 10_000, cpu, thread, IDLE, dead=True)
        t += 20_000
    path.parent.mkdir(parents=True, exist_ok=True)
    return b.write(path).path


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return hostile_trace(tmp_path / HOSTILE_DIR / HOSTILE_FILE)


def test_the_report_shows_every_name_literally(trace):
    out = succeeded(launchgap("report", str(trace)))
    header = f"{trace.parent.parent}/{HOSTILE_PATH_SHOWN}: command [/] \\x1b[2J on test"
    assert out.splitlines()[0].startswith(header)
    for i, (_name, shown) in enumerate(NAMES.items()):
        assert f"{shown} 100/{101 + i}" in out, shown  # the thread
        assert re.search(rf"│ {re.escape(shown)} +│ {200 + i} +│ preempted", out), shown  # who ran instead
    assert "interrupts on traced CPUs" in out and "\\x1b[31mred 1" in out
    assert "😄" not in out


def test_timeline_statistics_and_drawings_take_every_name(trace, tmp_path):
    for output in ("cores.png", "cores.html"):
        proc = launchgap("timeline", str(trace), "--color-by", "command", "-o", str(tmp_path / output))
        out = succeeded(proc)
        assert f"{trace.parent.parent}/{HOSTILE_PATH_SHOWN}: per command" in out
        commands = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
        # each name switched in twice: its thread and its hog
        assert sorted(c for c in commands if c != "swapper/0") == sorted(NAMES.values())
        if output.endswith(".png"):  # a PNG that decodes, drawn at the timeline's width (14 in at 150 dpi)
            assert png_width(tmp_path / output) == 2100
    page = (tmp_path / "cores.html").read_text()
    meta = json.loads(re.search(r'<script id="lg-meta" type="application/json">(.*?)</script>', page, re.S)[1])
    assert {task["comm"] for task in meta["panels"][0]["tasks"]} >= set(NAMES)  # the page keeps them exact


def test_running_waiting_and_diff_show_a_hostile_trace_path(trace, tmp_path):
    shown = f"{trace.parent.parent}/{HOSTILE_PATH_SHOWN}"
    # a target-mode recording is refused, the path shown visibly in the one line
    refused = launchgap("running-waiting", str(trace), "-o", str(tmp_path / "rw.png"))
    assert refused.returncode == 2 and ESC not in refused.stderr
    assert refused.stderr.startswith(f"launchgap: {shown}: recorded in target mode")
    system = hostile_trace(tmp_path / "system" / HOSTILE_DIR / HOSTILE_FILE, mode="system")
    out = succeeded(launchgap("running-waiting", str(system), "-o", str(tmp_path / "rw.png")))
    assert out.startswith(f"{system.parent.parent}/{HOSTILE_PATH_SHOWN}: 2 CPUs, peak ")
    out = succeeded(launchgap("diff", str(trace), str(trace)))
    assert out.splitlines()[:2] == [f"A = {shown}", f"B = {shown}"]


def test_an_error_line_shows_a_hostile_path_visibly(tmp_path):
    missing = tmp_path / HOSTILE_DIR / "absent.lg"
    proc = launchgap("report", str(missing))
    assert proc.returncode == 2 and ESC not in proc.stderr
    assert proc.stderr == f"launchgap: {tmp_path}/x[:smile:[bold]b\\x1b[31m/absent.lg: no such file or trace\n"


def run(scenario: str, metric: float, culprit: str, warmup: bool = False) -> dict:
    return {
        "scenario": scenario,
        "metric": metric,
        "wall_s": metric,
        "warmup": warmup,
        "preempted_ms": 1.0,
        "runqueue_ms": 2.0,
        "irq_ms": 0.5,
        "sched_per_1k": 3.0,
        "top_culprit": culprit,
    }


def test_experiment_show_takes_hostile_scenarios_and_culprits(tmp_path):
    """What `experiment run` saves: scenario names from the user's file, culprits from the traces."""
    # scenarios named as the user's file says (TeX included: the plot labels them), culprits from the traces
    scenario_names = ["[/]", "[bold]x", "a$\\frac$b", "bad\\xffname"]
    culprits = [name for name in NAMES if name not in scenario_names]
    scenarios = [{"name": "baseline"}] + [{"name": name} for name in scenario_names]
    runs = [
        run("baseline", 10.0, culprits[0], warmup=True),
        run("baseline", 10.0, culprits[0]),
        run("baseline", 10.5, culprits[0]),
    ]
    for i, name in enumerate(scenario_names):
        runs += [run(name, 11.0 + i, culprits[1 + i]), run(name, 11.5 + i, culprits[1 + i])]
    # the metric's name as the user gave it (--metric-name), markup and all
    results = {
        "schema": "launchgap-experiment/1",
        "status": "complete",
        "metric": "tok/s: ([0-9.]+)",
        "metric_name": "tok/s [/] [bold]x",
        "higher_is_better": True,
        "scenarios": scenarios,
        "runs": runs,
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    out = succeeded(launchgap("experiment", "show", str(tmp_path)))
    assert "tok/s [/] [bold]x (higher is better), status: complete" in out
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in out.splitlines() if line.startswith("│")]
    assert [(r[0], r[-1]) for r in rows] == [("baseline", NAMES[culprits[0]])] + [
        (NAMES[name], NAMES[culprits[1 + i]]) for i, name in enumerate(scenario_names)
    ]
    assert png_width(tmp_path / "slowdown.png") > 0  # a PNG that decodes (its size follows the scenarios)


def test_a_lever_grids_table_takes_a_hostile_culprit(tmp_path):
    """The lever experiment that saved "complete" results and then crashed on its table."""
    cells = [("compute", "other"), ("compute", "fifo:10")]
    scenarios = [{"name": f"{c}/{v}", "class": c, "variant": v, "baseline": "compute/other"} for c, v in cells]
    culprits = {"compute/other": "[/]", "compute/fifo:10": f"{ESC}[31mred"}
    runs = [
        run(s["name"], 2.0 + i * 0.1 + k * 0.01, culprits[s["name"]]) for i, s in enumerate(scenarios) for k in range(3)
    ]
    results = {
        "schema": "launchgap-experiment/1",
        "status": "complete",
        "metric": "elapsed_s",
        "higher_is_better": False,
        "scenarios": scenarios,
        "runs": runs,
        "grid": {"classes": ["compute"]},
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    out = succeeded(launchgap("experiment", "show", str(tmp_path)))
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in out.splitlines() if line.startswith("│")]
    assert [(r[0], r[1], r[-1]) for r in rows] == [("compute", "other", "[/]"), ("compute", "fifo:10", "\\x1b[31mred")]


@pytest.mark.parametrize("name", [n for n in NAMES if " " not in n])
def test_doctor_shows_a_hostile_interrupt_name_literally(tmp_path, name):
    """/proc/interrupts names the devices: a driver (or a trace's copy of the file) chooses them."""
    interrupts = (FIXTURES / "node-4cpu" / "proc" / "interrupts").read_text()
    assert "virtio2-input.0" in interrupts
    root = make_tree(tmp_path, "node-4cpu", {"/proc/interrupts": interrupts.replace("virtio2-input.0", name)})
    out = succeeded(launchgap("doctor", "--root", str(root), "--cpus", "2"))
    flat = " ".join(out.split())
    assert f"lands on isolated CPUs 1-3: {NAMES[name]} (" in flat
    assert f"1-edge {NAMES[name]}" in flat  # the evidence line


def test_probes_shows_a_hostile_library_path_literally(tmp_path):
    directory = tmp_path / HOSTILE_DIR
    directory.mkdir()
    library = directory / "libcuda.so.1"
    shutil.copy(LIBCUDA, library)
    out = succeeded(launchgap("probes", "--cuda-lib", str(library)))
    assert f"driver: {tmp_path}/x[:smile:[bold]b\\x1b[31m/libcuda.so.1 (found via --cuda-lib)" in out
    assert "cuLaunchKernel" in out


RENAMES_ITSELF = r"""
import os, time
with open("/proc/self/comm", "w") as comm:
    comm.write("[/]")
end = time.monotonic() + 0.3
while time.monotonic() < end:
    pass
time.sleep(0.05)
"""


def test_a_real_recording_of_a_workload_that_renames_itself(tmp_path):
    from tests.recorder.conftest import RECORDER, SKIP_REASON

    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    trace = tmp_path / "renamed.lg"
    proc = subprocess.run(
        [str(RECORDER), "-q", "-o", str(trace), "--", sys.executable, "-c", RENAMES_ITSELF],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = succeeded(launchgap("report", str(trace)))
    pid = json.loads((trace / "meta.json").read_text())["command_pid"]
    assert re.search(rf"│ \[/\] {pid}/{pid} +│", out), out  # the workload's thread, by its new name
    out = succeeded(launchgap("timeline", str(trace), "-o", str(tmp_path / "cores.png")))
    assert any(line.startswith("│ [/] ") for line in out.splitlines()), out
    os.remove(tmp_path / "cores.png")


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the hostile process as another user (nobody): needs root")
def test_a_process_named_with_a_byte_that_is_not_utf8_stops_no_scan_of_proc():
    """Another user's process named b"\\xff[/]" made every experiment fail: the leash, the load check and the
    thread watch read /proc/PID/stat as UTF-8 (UnicodeDecodeError in the leash after each run)."""
    from launchgap.experiments import leash, levers, loadgen

    hostile = subprocess.Popen(
        ["runuser", "-u", "nobody", "--", "sh", "-c", r"printf '\377[/]' > /proc/self/comm; echo $$; read never"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert hostile.stdout is not None
        pid = int(hostile.stdout.readline())
        assert Path(f"/proc/{pid}/comm").read_bytes() == b"\xff[/]\n"
        pgid = os.getpgid(pid)
        assert pid in leash.group_members(pgid)
        assert levers.read_thread_policies(pid)[pid]["comm"] == "\\xff[/]"
        assert pid in [int(entry.name) for entry, _ in loadgen._group_processes([pgid])]
        # and a leashed command ends as it did: the leash scans every process when the command exits
        leashed = leash.popen(["true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, stderr = leashed.communicate(timeout=120)
        assert leashed.returncode == 0 and stderr == ""
    finally:
        os.killpg(hostile.pid, 9)
        hostile.wait(timeout=60)


# a busy loop pinned to CPU 1 that names itself with a terminal escape (any user can)
ESCAPING_HOG = f"""
import os
os.sched_setaffinity(0, {{1}})
with open("/proc/self/comm", "w") as comm:
    comm.write("h{ESC}[2Jx")
while True:
    pass
"""


def test_the_gpu_verdict_names_a_culprit_as_the_characters_it_holds(tmp_path):
    """Issue 31, item 5: the GPU-time verdict wrote the culprits' names raw (`_named` in the report), so a process
    named h ESC [2J x cleared the reader's screen; tables, JSON and the timeline escaped it."""
    from tests.conftest import CUDASIM
    from tests.recorder.conftest import RECORDER, SKIP_REASON

    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    if 1 not in os.sched_getaffinity(0):
        pytest.skip("CPU 1 is not one this test may use")
    hog = subprocess.Popen([sys.executable, "-c", ESCAPING_HOG], start_new_session=True)
    try:
        trace = tmp_path / "hogged.lg"
        proc = subprocess.run(
            [
                str(RECORDER),
                "-q",
                "--gpu-activity",
                "-o",
                str(trace),
                "--",
                "taskset",
                "-c",
                "1",
                str(CUDASIM),
                "decode",
                "--quiet",
                "--tokens",
                "20",
                "--kernel-us",
                "2:4",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        os.killpg(hog.pid, 9)
        hog.wait()
    assert proc.returncode == 0, proc.stderr
    report = json.loads(succeeded(launchgap("report", "--json", str(trace))))
    assert report["gpu_time"]["mode"] == "exact"
    assert f"h{ESC}[2Jx" in [c["name"] for c in report["gpu_time"]["culprits"]]
    # the verdict's own words name it (in JSON as it is), and on the terminal as its escape
    assert f"Most of it was h{ESC}[2Jx (pid " in report["verdict"]["text"]
    out = " ".join(succeeded(launchgap("report", str(trace))).split())
    assert "Most of it was h\\x1b[2Jx (pid " in out, out
