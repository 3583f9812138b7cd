"""A driver library replaced on disk while a CUDA process runs (a driver
upgrade under a running job): the monitor probes the file the process
runs, through /proc/PID/map_files, as the recorder does; the new file at
the old name is not what the process calls."""

from __future__ import annotations

from tests.monitor.conftest import needs_bpf, running_monitor
from tests.recorder.conftest import running_on_a_replaced_driver, stop

pytestmark = needs_bpf


def test_a_driver_deleted_on_disk_is_probed_and_counted(tmp_path):
    workload = running_on_a_replaced_driver(tmp_path, 100_000)
    pid = str(workload.pid)
    try:
        with running_monitor("-p", pid) as monitor:
            monitor.settle()
            first = monitor.scrape()
            monitor.settle()
            second = monitor.scrape()
            assert workload.poll() is None, "cudasim ended before the second scrape: give it more tokens"
    finally:
        stop(workload)
    # the deleted file, reached through map_files (besides the drivers discovery finds on disk)
    libraries = first.select("launchgap_monitor_info")[0].labels["libraries"].split(",")
    deleted = [lib for lib in libraries if lib.startswith(f"/proc/{pid}/map_files/")]
    assert len(deleted) == 1, libraries
    assert first.total("launchgap_monitor_probes", state="failed") == 0
    # launches through the deleted file are counted (probes on the new file at its name would count none)
    launched = [s.total("launchgap_kernel_launches_total", pid=pid) for s in (first, second)]
    assert 0 < launched[0] < launched[1], launched
