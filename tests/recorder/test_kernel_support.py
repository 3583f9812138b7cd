"""Which kernels the recorder runs on, decided before anything is loaded.

Kernels this machine does not run are played through LAUNCHGAP_VMLINUX_BTF:
a real older kernel's BTF (Debian bullseye's Linux 5.10, fetched by
scripts/fetch_kernel_btf.sh), and this kernel's own BTF with what a newer
kernel added or moved taken back out (kernel_btf.py). A kernel that lacks
what the recorder needs gets one line naming it and the Linux that has it,
exit 1, nothing loaded, the command never started and no output written. A
kernel with an older layout is adapted to (bpf/core_fixes.bpf.h): CO-RE
relocates the programs against the played BTF, they load and run here, and
what they record is checked against what the kernel itself says."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from launchgap.trace import Event
from tests.census import in_ci
from tests.conftest import REPO
from tests.recorder.conftest import RECORDER, assert_switches_as_the_kernel_counted, cudasim_command, needs_bpf
from tests.recorder.kernel_btf import STRUCT, Btf

pytestmark = needs_bpf

KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")
BULLSEYE_BTF = REPO / ".cache" / "kernel-btf" / "debian-bullseye.btf"
MIRROR_UNREACHABLE = 2  # scripts/fetch_kernel_btf.sh's status when Debian's mirror cannot be reached


@pytest.fixture(scope="session")
def bullseye_btf() -> Path:
    """Debian bullseye's kernel BTF, cached by `make setup` (scripts/setup.sh, which in CI fails without it). Here
    when missing: in CI a failure (set-up should have cached it); elsewhere fetched now, skipped, saying why,
    only when the mirror cannot be reached; any other failure fails."""
    if not BULLSEYE_BTF.exists() and in_ci():
        pytest.fail(
            f"CI: {BULLSEYE_BTF.relative_to(REPO)} is missing: `make setup` caches it "
            "(scripts/fetch_kernel_btf.sh); the Linux 5.10 tests cannot run without it"
        )
    if not BULLSEYE_BTF.exists():
        proc = subprocess.run(
            [str(REPO / "scripts" / "fetch_kernel_btf.sh")], capture_output=True, text=True, timeout=900
        )
        if proc.returncode == MIRROR_UNREACHABLE:
            said = re.sub(r"\x1b\[[0-9;]*m", "", proc.stderr).strip()  # the script's bold, not for a skip reason
            pytest.skip(f"Debian's mirror cannot be reached to fetch Linux 5.10's BTF: {said}")
        assert proc.returncode == 0 and BULLSEYE_BTF.exists(), proc.stderr
    return BULLSEYE_BTF


# include/linux/sched.h
TASK_INTERRUPTIBLE, TASK_DEAD = 0x1, 0x80
TASK_STATE_MAX = 0x10000  # every state bit is below it (6.1's TASK_FREEZABLE, 0x2000, among them)


def played(tmp_path: Path, *changes: Callable[[Btf], None]) -> Path:
    """This kernel's BTF with CHANGES made: the BTF of a kernel we are not running."""
    btf = Btf.read(KERNEL_BTF)
    for change in changes:
        change(btf)
    path = tmp_path / "vmlinux.btf"
    btf.write(path)
    return path


_BPF_CALL = re.compile(r"\b(?:bpf\((BPF_\w+)(?:, \{prog_type=(\w+))?|(perf_event_open)\()")


def refused_before_attaching(command: list[str], btf: Path, tmp_path: Path) -> str:
    """The one line COMMAND refuses the kernel of BTF with, exit 1; checked from its system calls (strace) that
    it attached nothing: no link, raw tracepoint, perf event (uprobes) or map, and no program but feature probes
    (socket filters, closed at once), so nothing can be left attached. Other tests load programs meanwhile:
    the kernel's list of loaded programs could not tell."""
    calls = tmp_path / "strace.txt"
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=bpf,perf_event_open", "-o", str(calls), *command],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LAUNCHGAP_VMLINUX_BTF": str(btf)},
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    made = [m.groups() for m in _BPF_CALL.finditer(calls.read_text())]
    assert all(made_call == ("BPF_PROG_LOAD", "BPF_PROG_TYPE_SOCKET_FILTER", None) for made_call in made), made
    return lines[0]


def refusal(tmp_path: Path, btf: Path) -> str:
    """The recorder's one line on a kernel it refuses; the command never started and nothing was written."""
    out, marker = tmp_path / "x.lg", tmp_path / "the-command-ran"
    line = refused_before_attaching([str(RECORDER), "-o", str(out), "--", "touch", str(marker)], btf, tmp_path)
    assert not marker.exists() and not out.exists()
    return line


def test_debian_bullseyes_kernel_is_refused_in_one_line(tmp_path, bullseye_btf):
    assert refusal(tmp_path, bullseye_btf) == (
        f"launchgap-record: this kernel (BTF {bullseye_btf}) lacks bpf_get_current_task_btf (Linux 5.11+), task "
        "local storage in tracing programs (Linux 5.13+) and BPF cookies on uprobes (Linux 5.15+): upgrade to Linux "
        "5.15 or later, or to a distribution kernel that backports them"
    )


# each feature the recorder cannot do without, and what a kernel before it lacks in its BTF
WITHOUT = {
    "BTF-enabled tracepoints (tp_btf)": ("5.5", lambda b: b.drop_enum_value("bpf_attach_type", "BPF_TRACE_RAW_TP")),
    "bpf_probe_read_kernel_str": ("5.5", lambda b: b.drop_enum_value("bpf_func_id", "BPF_FUNC_probe_read_kernel_str")),
    "the BPF ring buffer": ("5.8", lambda b: b.drop_enum_value("bpf_map_type", "BPF_MAP_TYPE_RINGBUF")),
    "the BPF task iterator": ("5.8", lambda b: b.rename_type(STRUCT, "bpf_iter__task", "bpf_iter__task_unknown")),
    "bpf_get_current_task_btf": ("5.11", lambda b: b.drop_enum_value("bpf_func_id", "BPF_FUNC_get_current_task_btf")),
    "task local storage in tracing programs": ("5.13", lambda b: b.drop_member("task_struct", "bpf_storage")),
    "BPF cookies on uprobes": ("5.15", lambda b: b.drop_enum_value("bpf_func_id", "BPF_FUNC_get_attach_cookie")),
}


@pytest.mark.parametrize("feature", list(WITHOUT))
def test_a_kernel_without_a_needed_feature_is_refused_in_one_line(tmp_path, feature):
    since, take_out = WITHOUT[feature]
    btf = played(tmp_path, take_out)
    assert refusal(tmp_path, btf) == (
        f"launchgap-record: this kernel (BTF {btf}) lacks {feature} (Linux {since}+): upgrade to Linux 5.15 or "
        "later, or to a distribution kernel that backports it"
    )


def test_a_kernel_without_btf_is_refused_in_one_line(tmp_path):
    missing = tmp_path / "no-btf"
    assert refusal(tmp_path, missing) == (
        f"launchgap-record: this kernel ({os.uname().release}) exposes no BTF ({missing}): launchgap needs one built "
        "with CONFIG_DEBUG_INFO_BTF=y, as most distributions' kernels since Linux 5.4 are"
    )


def as_linux_5_15(btf: Btf) -> None:
    """What 5.18 (sched_switch's prev_state), 5.16 (thread_info::cpu) and 5.14 (task_struct::__state) changed,
    undone: the switched-out task's state is no tracepoint argument, a task's CPU is task_struct::cpu, and its
    state task_struct::state. The bytes stay where this kernel has them."""
    assert btf.tracepoint_arity("sched_switch") == 4
    btf.drop_last_tracepoint_arg("sched_switch")
    btf.rename_member("task_struct", "__state", "state")
    cpu = btf.member_bit_offset("task_struct", "thread_info") + btf.member_bit_offset("thread_info", "cpu")
    btf.move_member("thread_info", "cpu", "task_struct", cpu)


def test_on_a_kernel_with_older_layouts_the_programs_adapt_and_record_what_the_kernel_says(tmp_path, record):
    cpu = sorted(os.sched_getaffinity(0))[-1]  # not CPU 0: a CPU read as 0 would show
    btf = played(tmp_path, as_linux_5_15)
    run = record(
        cudasim_command("--tokens", "20", "--threads", "2"),
        env={**os.environ, "LAUNCHGAP_VMLINUX_BTF": str(btf)},
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    trace, truth = run.trace, run.truth
    assert trace.meta["kernel_support"] == {
        "btf": str(btf),
        "adapted": [
            {"feature": "task_struct::__state", "since": "5.14", "instead": "task_struct::state is read, at its size"},
            {"feature": "thread_info::cpu", "since": "5.16", "instead": "task_struct::cpu is read"},
            {
                "feature": "sched_switch's prev_state argument",
                "since": "5.18",
                "instead": "the state is read from the task at the switch (a wakeup racing the switch can show it running)",
            },
        ],
    }
    workers = {t["tid"] for p in truth["processes"] for t in p["threads"]}
    # a woken thread is on the one CPU it may run on (task_struct::cpu, read at this kernel's offset)
    wakeups = trace.of(Event.WAKEUP).filter(pl.col("tid").is_in(list(workers)))
    assert set(wakeups["target_cpu"].to_list()) == {cpu}
    # and every block the kernel counted before a worker read its counters ended in a recorded wakeup (the
    # worker was running again to read them)
    for thread in (t for p in truth["processes"] for t in p["threads"]):
        counters = thread["kernel_switches"]
        woken = wakeups.filter((pl.col("tid") == thread["tid"]) & (pl.col("ts_ns") <= counters["read_end_ns"]))
        assert woken.height >= counters["voluntary"], (thread["tid"], woken.height, counters)
    switches = trace.of(Event.SWITCH).filter(pl.col("tid").is_in(list(workers)))
    states = switches["prev_state"].to_list()
    # task_struct::state, read at its size (read wider, the next field would show above the state bits): only
    # task state bits; the workers sleep (TASK_INTERRUPTIBLE) ...
    assert all(state < TASK_STATE_MAX for state in states), sorted(set(states))
    assert switches.filter(pl.col("voluntary") & (pl.col("prev_state") & TASK_INTERRUPTIBLE != 0)).height > 0
    # ... and each leaves the CPU for the last time dead
    for tid in workers:
        last = switches.filter(pl.col("tid") == tid).sort("ts_ns")["prev_state"].to_list()[-1]
        assert last & TASK_DEAD, (tid, last)
    # voluntary or not as the kernel counted each thread's switches
    for thread in (t for p in truth["processes"] for t in p["threads"]):
        assert_switches_as_the_kernel_counted(
            switches.filter(pl.col("tid") == thread["tid"]), thread["kernel_switches"]
        )


def test_this_kernel_is_used_as_it_is(record):
    run = record(cudasim_command("--tokens", "3"))
    assert run.trace.meta["kernel_support"] == {"btf": str(KERNEL_BTF), "adapted": []}
