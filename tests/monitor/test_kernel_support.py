"""Which kernels the monitor runs on, decided before anything is loaded (the
recorder's side, and how kernels are played: tests/recorder/test_kernel_support.py).
A kernel without what the monitor needs gets one line and exit 1 with no
program loaded; what only the recorder needs does not stop the monitor; on a
kernel with older layouts its programs adapt and count what the kernel counts."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.monitor.conftest import MONITOR, needs_bpf, running_monitor
from tests.recorder.test_kernel_support import as_linux_5_15, bullseye_btf, played, refused_before_attaching  # noqa: F401 (bullseye_btf: a fixture)

pytestmark = needs_bpf


def refusal(btf, tmp_path) -> str:
    return refused_before_attaching([str(MONITOR), "--listen", "127.0.0.1:0"], btf, tmp_path)


def test_debian_bullseyes_kernel_is_refused_in_one_line(bullseye_btf, tmp_path):  # noqa: F811 (the fixture)
    assert refusal(bullseye_btf, tmp_path) == (
        f"launchgap-monitor: this kernel (BTF {bullseye_btf}) lacks bpf_get_current_task_btf (Linux 5.11+), task "
        "local storage in tracing programs (Linux 5.13+) and BPF cookies on uprobes (Linux 5.15+): upgrade to Linux "
        "5.15 or later, or to a distribution kernel that backports them"
    )


def test_a_kernel_without_bpf_cookies_is_refused_in_one_line(tmp_path):
    btf = played(tmp_path, lambda b: b.drop_enum_value("bpf_func_id", "BPF_FUNC_get_attach_cookie"))
    assert refusal(btf, tmp_path) == (
        f"launchgap-monitor: this kernel (BTF {btf}) lacks BPF cookies on uprobes (Linux 5.15+): upgrade to Linux "
        "5.15 or later, or to a distribution kernel that backports it"
    )


def test_a_kernel_without_the_ring_buffer_still_runs_the_monitor(tmp_path):
    btf = played(tmp_path, lambda b: b.drop_enum_value("bpf_map_type", "BPF_MAP_TYPE_RINGBUF"))
    with running_monitor(env={**os.environ, "LAUNCHGAP_VMLINUX_BTF": str(btf)}) as monitor:
        assert "launchgap_monitor_info" in monitor.scrape().names()  # it serves


def voluntary_switches(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


SLEEPS = 20
# blocks on stdin; at each line, sleeps SLEEPS times and says so, then blocks again
_SLEEPER = (
    "import sys, time\n"
    "for _ in sys.stdin:\n"
    f"    [time.sleep(0.005) for _ in range({SLEEPS})]\n"
    "    print('slept', flush=True)\n"
)


def test_on_a_kernel_with_older_layouts_the_monitor_adapts_and_counts_what_the_kernel_counts(tmp_path):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    btf = played(tmp_path, as_linux_5_15)
    sleeper = subprocess.Popen(
        [sys.executable, "-c", _SLEEPER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    try:
        with running_monitor("-p", str(sleeper.pid), env={**os.environ, "LAUNCHGAP_VMLINUX_BTF": str(btf)}) as monitor:
            before = voluntary_switches(sleeper.pid)  # blocked on stdin since it started: nothing changes it
            sleeper.stdin.write("go\n")
            sleeper.stdin.flush()
            assert sleeper.stdout.readline() == "slept\n"
            monitor.settle(0.5)
            counted = voluntary_switches(sleeper.pid) - before  # blocked on stdin again
            assert counted >= SLEEPS
            scrape = monitor.scrape()
            pid = str(sleeper.pid)
            assert scrape.total("launchgap_context_switches_total", pid=pid, kind="voluntary") == counted
            assert scrape.total("launchgap_migrations_total", pid=pid) == 0
            assert scrape.total("launchgap_blocked_seconds_total", pid=pid) >= SLEEPS * 0.005
    finally:
        sleeper.kill()
        sleeper.wait()
