"""CSV files exactly as the original study's tracer writes them.

Checked against the tracer's public source (eunomia-bpf/gpu_ext, commit
a2732715: tools/cuda_sched_trace.c `handle_event` and its printf formats,
tools/cuda_sched_trace.bpf.c for what each field holds), line by line:
- the header names 19 columns;
- launch rows: `%llu,%s,%u,%u,%s,%u,` then `%u,%u,%u,%u,%u,%u,%u,0x%llx,` then
  `%llu,%llu\\n`: 16 fields, the stream pointer in hex, last_offcpu_ns and
  last_oncpu_ns both `0` (the IRQ columns are simply absent: a ragged row);
- schedSwitch rows: the same 6 leading fields, `,,,,,,,,` then the two
  last_* values: the one that applies is the absolute ktime of the switch,
  the other `0` ("0 means N/A"); pid and tid are both the task's kernel pid
  (its thread id); only tasks whose *pid* is in the tool's GPU map (the main
  thread) get rows at all;
- syncEnter/syncExit rows: the 6 leading fields, then `,,,,,,,,` and `,`:
  16 fields, every one after cpu empty;
- IRQ rows: the 6 leading fields, `,,,,,,,,`, `,,`, then `irq,name,duration`
  (19 fields): an Entry row (duration 0) and an Exit row (its duration);
- `comm` is printed with %s, unquoted; timestamp_ns counts from the first event.
Then checked against the real thing: the tool built from that source and run on cudasim wrote
tests/data/cuda_sched_trace-cudasim.csv (see test_study_csv.py), whose rows have exactly these shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HEADER = (
    "timestamp_ns,event_type,pid,tid,comm,cpu,grid_x,grid_y,grid_z,block_x,block_y,block_z,shared_mem,"
    "stream,last_offcpu_ns,last_oncpu_ns,irq_num,irq_name,duration_ns"
)
# where bpf_ktime_get_ns() stood when the tool saw its first event (the last_* fields are absolute)
KTIME_AT_FIRST_EVENT = 807_316_145_614


@dataclass
class StudyToolCsv:
    lines: list[str] = field(default_factory=lambda: [HEADER])

    def _lead(self, ts, kind, pid, tid, comm, cpu) -> str:
        return f"{ts},{kind},{pid},{tid},{comm},{cpu},"

    def launch(self, ts, pid, tid, comm, cpu, grid, block, shared_mem=0, stream=0x7EFD90000C40, runtime=False) -> None:
        kind = "cudaLaunchKernel" if runtime else "cuLaunchKernel"
        geometry = ",".join(str(v) for v in (*grid, *block, shared_mem))
        self.lines.append(self._lead(ts, kind, pid, tid, comm, cpu) + f"{geometry},0x{stream:x}," + "0,0")

    def runtime_launch(self, ts, pid, tid, comm, cpu, grid, block, echo_after=50, **kw) -> None:
        """A cudaLaunchKernel and the driver probe's echo of it, as the tool recorded every runtime launch."""
        self.launch(ts, pid, tid, comm, cpu, grid, block, runtime=True, **kw)
        self.launch(ts + echo_after, pid, tid, comm, cpu, grid, block, **kw)

    def switch_out(self, ts, task_pid, comm, cpu) -> None:
        self.lines.append(
            self._lead(ts, "schedSwitch", task_pid, task_pid, comm, cpu) + ",,,,,,,," + f"{KTIME_AT_FIRST_EVENT + ts},0"
        )

    def switch_in(self, ts, task_pid, comm, cpu) -> None:
        self.lines.append(
            self._lead(ts, "schedSwitch", task_pid, task_pid, comm, cpu) + ",,,,,,,," + f"0,{KTIME_AT_FIRST_EVENT + ts}"
        )

    def sync(self, ts, pid, tid, comm, cpu, duration) -> None:
        for at, kind in ((ts, "syncEnter"), (ts + duration, "syncExit")):
            self.lines.append(self._lead(at, kind, pid, tid, comm, cpu) + ",,,,,,,," + ",")

    def irq(self, ts, pid, tid, comm, cpu, number, name, duration, soft=False) -> None:
        kind = "softirq" if soft else "hardirq"
        self.lines.append(
            self._lead(ts, f"{kind}Entry", pid, tid, comm, cpu) + ",,,,,,,," + ",," + f"{number},{name},0"
        )
        self.lines.append(
            self._lead(ts + duration, f"{kind}Exit", pid, tid, comm, cpu)
            + ",,,,,,,,"
            + ",,"
            + f"{number},{name},{duration}"
        )

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n")
        return path


def qwen_like(path: Path) -> Path:
    """A llama.cpp-like run: the main thread (pid 100) launches through the runtime, blocks in syncs and is
    switched out and in; a second thread (101) launches through the driver and has no switch rows, as the
    tool never saw any thread but the main one."""
    csv = StudyToolCsv()
    main, worker = (100, 100, "llama-cli"), (100, 101, "llama-worker")
    t = 0
    for i in range(6):
        csv.runtime_launch(t, *main, cpu=0, grid=(i + 1, 1, 1), block=(256, 1, 1))
        t += 1_000
    csv.switch_out(t, 100, "llama-cli", 0)  # off the CPU ...
    csv.switch_in(t + 20_000, 100, "llama-cli", 0)  # ... 20 us later
    t += 21_000
    csv.sync(t, *main, cpu=0, duration=5_000)
    t += 6_000
    csv.switch_out(t, 100, "llama-cli", 0)
    csv.switch_in(t + 10_000, 100, "llama-cli", 1)
    t += 11_000
    for _ in range(4):
        csv.launch(t, *worker, cpu=1, grid=(9, 1, 1), block=(128, 1, 1))
        t += 2_000
    csv.irq(t, *main, cpu=0, number=24, name="virtio0-input.0", duration=3_000)
    csv.irq(t + 4_000, *main, cpu=0, number=3, name="NET_RX", duration=7_000, soft=True)
    return csv.write(path)
