"""Hand-built traces whose every metric is known, for the analysis tests:
written in format 2 (a directory, as the recorder writes it) or, asked, in
format 1, then read back through the reader as any trace is."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from launchgap.trace import Event, read_trace
from launchgap.trace.schema import FORMAT_NAME, FORMAT_VERSION, TASK_DEAD
from launchgap.trace.writer import frames_from_rows, write_trace

IDLE = (0, 0, "swapper/0")
# meta_extra for a trace recorded with GPU activity by launchgap's collector (a CUPTI it names)
GPU_ACTIVITY = {
    "gpu_activity": {
        "recorded": True,
        "cupti": {"path": "libcupti.so.12", "found_via": "test", "version": 28},
        "collector": "built in",
        "channel": ".gpu-channel",
    }
}


@dataclass
class TraceBuilder:
    start_ns: int = 1000
    end_ns: int = 120_000
    command_pid: int = 100
    rows: list[dict] = field(default_factory=list)
    meta_extra: dict = field(default_factory=dict)

    def switch(self, ts, cpu, prev, nxt, voluntary=False, dead=False):
        """prev/nxt: (pid, tid, comm)."""
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.SWITCH,
                "cpu": cpu,
                "pid": prev[0],
                "tid": prev[1],
                "comm": prev[2],
                "voluntary": voluntary or dead,
                "preempt": False,
                "prev_state": TASK_DEAD if dead else (1 if voluntary else 0),
                "next_pid": nxt[0],
                "next_tid": nxt[1],
                "next_comm": nxt[2],
            }
        )

    def wakeup(self, ts, task, target_cpu, new=False):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.WAKEUP_NEW if new else Event.WAKEUP,
                "cpu": target_cpu,
                "pid": task[0],
                "tid": task[1],
                "comm": task[2],
                "target_cpu": target_cpu,
            }
        )

    def migrate(self, ts, task, orig, dest):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.MIGRATE,
                "cpu": orig,
                "pid": task[0],
                "tid": task[1],
                "orig_cpu": orig,
                "dest_cpu": dest,
            }
        )

    def fork(self, ts, cpu, parent, child):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.FORK,
                "cpu": cpu,
                "pid": parent[0],
                "tid": parent[1],
                "comm": child[2],
                "child_pid": child[0],
                "child_tid": child[1],
            }
        )

    def irq(self, ts, cpu, task, kind, name, duration, number=0):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": kind,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "irq": number,
                "irq_name": name,
                "duration_ns": duration,
            }
        )

    def launch(self, ts, cpu, task, api="cuLaunchKernel"):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.LAUNCH,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "api": api,
                "func": 1,
                "stream": 7,
                "grid_x": 1,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 32,
                "block_y": 1,
                "block_z": 1,
                "shared_mem": 0,
            }
        )

    def sync(self, ts, cpu, task, duration, api="cuStreamSynchronize"):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.SYNC,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "api": api,
                "duration_ns": duration,
                "stream": 7,
                "bytes": 0,
            }
        )

    def exec(self, ts, cpu, task, filename):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.EXEC,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "comm": task[2],
                "filename": filename,
            }
        )

    def exit(self, ts, cpu, task):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.EXIT,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "comm": task[2],
                "exit_code": 0,
            }
        )

    def lost(self, ts, cpu, kind, count):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.LOST,
                "cpu": cpu,
                "lost_event": kind,
                "lost_count": count,
                "since_ns": ts - 100,
            }
        )

    def task_cgroup(
        self,
        ts,
        cpu,
        task,
        cgroup_id,
        v1_cpu_cgroup_id=None,
        autogroup_id=None,
        sched_cgroup_id=None,
        group_weight=None,
    ):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.TASK_CGROUP,
                "cpu": cpu,
                "pid": task[0],
                "tid": task[1],
                "cgroup_id": cgroup_id,
                "v1_cpu_cgroup_id": v1_cpu_cgroup_id,
                "autogroup_id": autogroup_id,
                "sched_cgroup_id": sched_cgroup_id,
                "group_weight": group_weight,
            }
        )

    def cgroup(self, ts, hierarchy, cgroup_id, path, container_id=None, pod=None):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.CGROUP,
                "hierarchy": hierarchy,
                "cgroup_id": cgroup_id,
                "cgroup_path": path,
                "container_id": container_id,
                "pod": pod,
            }
        )

    # GPU activity, as the collector sends it (recorded with --gpu-activity: meta_extra gpu_activity must say so,
    # GPU_ACTIVITY below)
    def gpu_api(self, ts, end, task, correlation, api="cuLaunchKernel"):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.GPU_API,
                "end_ns": end,
                "pid": task[0],
                "tid": task[1],
                "api": api,
                "correlation_id": correlation,
                "return_code": 0,
            }
        )

    def gpu_kernel(self, ts, end, pid, correlation, name="k", device=0, stream=7, graph_id=None):
        self.rows.append(
            {
                "ts_ns": ts,
                "event": Event.GPU_KERNEL,
                "end_ns": end,
                "pid": pid,
                "device_id": device,
                "context_id": 1,
                "stream_id": stream,
                "correlation_id": correlation,
                "kernel_name": name,
                "grid_x": 1,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 32,
                "block_y": 1,
                "block_z": 1,
                "shared_mem": 0,
                "graph_id": graph_id,
            }
        )

    def gpu_collector_thread(self, ts, pid, tid):
        self.rows.append({"ts_ns": ts, "event": Event.GPU_COLLECTOR_THREAD, "pid": pid, "tid": tid})

    def write(self, path: Path, clean_end: bool = True, batch_rows: int | None = None, version: int = FORMAT_VERSION):
        """Writes the trace (format VERSION; segments or batches of BATCH_ROWS rows) and reads it back."""
        rows = sorted(self.rows, key=lambda r: r["ts_ns"])
        summary = {"end_ns": self.end_ns, "stop_reason": "test", "lost_events": 0} if clean_end else None
        meta = {
            "format": FORMAT_NAME,
            "version": version,
            "start_ns": self.start_ns,
            "mode": "command",
            "command": ["test"],
            "command_pid": self.command_pid,
            "pids": [],
            "recorder_pid": 1,
            "host": {"hostname": "test", "kernel_release": "test"},
            "topology": {"count": 2},
            **self.meta_extra,
        }
        write_trace(path, frames_from_rows(rows), meta, summary, version=version, segment_rows=batch_rows)
        return read_trace(path)
