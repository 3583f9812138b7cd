"""`launchgap export --perfetto`: a trace for ui.perfetto.dev, written with
Perfetto's own protobuf classes (the `perfetto` package's
perfetto_trace_pb2).

- Scheduling, wakeups, migrations, fork/exec/exit, hard IRQs and softirqs
  become ftrace events, so Perfetto builds its own per-CPU tracks and
  thread-state tracks (Running, Runnable, Runnable (Preempted), Sleeping)
  from them exactly as from a trace it recorded itself.
- CUDA launches become instants and syncs slices on their thread's track;
  x86 system vectors (LOCAL_TIMER, RESCHEDULE, ...) become slices on one
  track per CPU, since ftrace has no generic event for them.
- GPU activity (record --gpu-activity) becomes one track per GPU stream, named
  `GPU d stream s (pid p)`, with a slice per kernel, graph, copy and memset, and
  a flow from each launch to the GPU work it made (Perfetto draws an arrow).
- Timestamps are launchgap's (CLOCK_MONOTONIC) unchanged; Perfetto reads
  them as its default clock, so every event keeps its place relative to the
  others.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from launchgap.analysis.gpu_activity import executions, join_launches
from launchgap.trace import Event, Trace
from launchgap.trace.schema import TASK_DEAD, MetaKey

SEQUENCE_ID = 1
EVENTS_PER_BUNDLE = 4096
# the kinds that become ftrace events; an interrupt's row becomes its entry and its exit
FTRACE_KINDS = (
    Event.SWITCH,
    Event.WAKING,
    Event.WAKEUP,
    Event.WAKEUP_NEW,
    Event.MIGRATE,
    Event.FORK,
    Event.EXEC,
    Event.EXIT,
    Event.HARDIRQ,
    Event.SOFTIRQ,
)
WAKEUP_KINDS = (Event.WAKING, Event.WAKEUP, Event.WAKEUP_NEW)
HARDIRQ_EXIT = f"{Event.HARDIRQ}_exit"
SOFTIRQ_EXIT = f"{Event.SOFTIRQ}_exit"
# the kernel's task state -> sched_switch's reported prev_state (a bit per letter; R+ = preempted in the kernel)
REPORT_RUNNING, REPORT_PREEMPTED, REPORT_DEAD, REPORT_IDLE = 0, 0x100, 0x10, 0x80
TASK_IDLE = 0x402


def report_state(prev_state: pl.Expr, preempt: pl.Expr) -> pl.Expr:
    """The tracepoint's encoding, which Perfetto decodes (kernels since 4.14)."""
    return (
        pl.when((prev_state & TASK_DEAD) != 0)
        .then(REPORT_DEAD)
        .when(prev_state == TASK_IDLE)
        .then(REPORT_IDLE)
        .when((prev_state == 0) & preempt.fill_null(False))
        .then(REPORT_PREEMPTED)
        .otherwise(prev_state & 0x7F)
    )


FTRACE_COLUMNS = (
    "ts_ns",
    "cpu",
    "pid",
    "tid",
    "comm",
    "prio",
    "prev_state",
    "preempt",
    "next_tid",
    "next_comm",
    "next_prio",
    "waker_tid",
    "target_cpu",
    "orig_cpu",
    "dest_cpu",
    "child_tid",
    "filename",
    "irq",
    "irq_name",
    "duration_ns",
)


def _ftrace_rows(trace: Trace) -> pl.DataFrame:
    parts = [trace.scan(kind).with_columns(pl.lit(kind.value).alias("event")) for kind in FTRACE_KINDS]
    ev = pl.concat(parts, how="diagonal_relaxed")
    have = set(ev.collect_schema().names())
    ev = ev.with_columns([pl.lit(None).alias(c) for c in FTRACE_COLUMNS if c not in have])
    rows = ev.with_columns(
        report_state(pl.col("prev_state").cast(pl.Int64).fill_null(0), pl.col("preempt")).alias("report_state")
    ).collect()
    irqs = rows.filter(pl.col("event").is_in([Event.HARDIRQ, Event.SOFTIRQ]))
    # an interrupt row becomes its entry and its exit
    exits = irqs.with_columns(
        (pl.col("ts_ns") + pl.col("duration_ns").fill_null(0)).alias("ts_ns"),
        (pl.col("event") + "_exit").alias("event"),
    )
    return pl.concat([rows, exits]).sort("cpu", "ts_ns", maintain_order=True)


def _ftrace_event(e: pb.FtraceEvent, r: dict) -> None:
    """Fills one event in place (assigning fields of the nested message is
    several times faster than building it apart and copying it in)."""
    e.timestamp = r["ts_ns"]
    e.pid = r["tid"] or 0
    kind = r["event"]
    if kind == Event.SWITCH:
        m = e.sched_switch
        m.prev_comm = r["comm"] or ""
        m.prev_pid = r["tid"]
        m.prev_prio = r["prio"] if r["prio"] is not None else 120
        m.prev_state = r["report_state"]
        m.next_comm = r["next_comm"] or ""
        m.next_pid = r["next_tid"]
        m.next_prio = r["next_prio"] if r["next_prio"] is not None else 120
    elif kind in WAKEUP_KINDS:
        e.pid = r["waker_tid"] or 0
        m = e.sched_waking if kind == Event.WAKING else e.sched_wakeup if kind == Event.WAKEUP else e.sched_wakeup_new
        m.comm = r["comm"] or ""
        m.pid = r["tid"]
        m.prio = r["prio"] if r["prio"] is not None else 120
        m.success = 1
        m.target_cpu = r["target_cpu"] or 0
    elif kind == Event.MIGRATE:
        m = e.sched_migrate_task
        m.comm, m.pid, m.orig_cpu, m.dest_cpu = r["comm"] or "", r["tid"], r["orig_cpu"], r["dest_cpu"]
    elif kind == Event.FORK:
        m = e.sched_process_fork
        m.parent_pid, m.child_comm, m.child_pid = r["tid"], r["comm"] or "", r["child_tid"]
    elif kind == Event.EXEC:
        m = e.sched_process_exec
        m.filename, m.pid, m.old_pid = r["filename"] or "", r["tid"], r["tid"]
    elif kind == Event.EXIT:
        m = e.sched_process_exit
        m.comm, m.pid, m.tgid = r["comm"] or "", r["tid"], r["pid"]
    elif kind == Event.HARDIRQ:
        e.irq_handler_entry.irq, e.irq_handler_entry.name = r["irq"], r["irq_name"] or ""
    elif kind == HARDIRQ_EXIT:
        e.irq_handler_exit.irq, e.irq_handler_exit.ret = r["irq"], 1
    elif kind == Event.SOFTIRQ:
        e.softirq_entry.vec = r["irq"]
    elif kind == SOFTIRQ_EXIT:
        e.softirq_exit.vec = r["irq"]


def _process_tree(trace: Trace) -> pb.TracePacket:
    """Threads grouped into their processes, with names, so Perfetto shows
    `cudasim 4242` rather than bare thread ids."""
    with_names = [kind for kind in Event if "comm" in trace.scan(kind).collect_schema().names()]
    named = pl.concat(
        [
            *[
                trace.scan(kind).filter(pl.col("comm").is_not_null()).select("pid", "tid", "comm", "ts_ns")
                for kind in with_names
            ],
            trace.scan(Event.SWITCH).select(
                pl.col("next_pid").alias("pid"),
                pl.col("next_tid").alias("tid"),
                pl.col("next_comm").alias("comm"),
                "ts_ns",
            ),
        ]
    ).collect()
    threads = (
        named.filter(pl.col("tid") != 0)
        .group_by("pid", "tid")
        .agg(pl.col("comm").sort_by("ts_ns").last())
        .sort("pid", "tid")
    )
    tree = pb.ProcessTree()
    for pid, comm in threads.filter(pl.col("pid") == pl.col("tid")).select("pid", "comm").iter_rows():
        tree.processes.append(pb.ProcessTree.Process(pid=pid, cmdline=[comm]))
    for pid, tid, comm in threads.iter_rows():
        tree.threads.append(pb.ProcessTree.Thread(tid=tid, tgid=pid, name=comm))
    return pb.TracePacket(process_tree=tree, trusted_packet_sequence_id=SEQUENCE_ID)


GPU_TRACK_BASE = 0x200000000


def flow_id(pid: int, correlation_id: int) -> int:
    """One flow per launch: CUPTI's correlation ids are unique within a process."""
    return (pid << 32) | correlation_id


def _gpu_work(trace: Trace) -> pl.DataFrame:
    """Every piece of GPU work, one row each: pid, device_id, stream_id, start, end, name, correlation_id."""
    execs = executions(trace).select(
        "pid",
        "device_id",
        "stream_id",
        "gpu_start_ns",
        "gpu_end_ns",
        "correlation_id",
        pl.when(pl.col("what") == "graph").then(pl.lit("graph")).otherwise(pl.col("kernel_name")).alias("name"),
    )
    copies = trace.of(Event.GPU_MEMCPY).select(
        "pid",
        "device_id",
        "stream_id",
        pl.col("ts_ns").alias("gpu_start_ns"),
        pl.col("end_ns").alias("gpu_end_ns"),
        "correlation_id",
        (pl.lit("memcpy ") + pl.col("copy_kind")).alias("name"),
    )
    memsets = trace.of(Event.GPU_MEMSET).select(
        "pid",
        "device_id",
        "stream_id",
        pl.col("ts_ns").alias("gpu_start_ns"),
        pl.col("end_ns").alias("gpu_end_ns"),
        "correlation_id",
        pl.lit("memset").alias("name"),
    )
    return pl.concat([execs, copies, memsets]).sort("gpu_start_ns")


def _gpu_tracks(trace: Trace) -> list[pb.TracePacket]:
    """One track per GPU stream with a slice per piece of work, each the end of its launch's flow."""
    work = _gpu_work(trace)
    packets: list[pb.TracePacket] = []
    streams = work.select("pid", "device_id", "stream_id").unique().sort("pid", "device_id", "stream_id")
    uuid = {}
    for i, (pid, device, stream) in enumerate(streams.iter_rows()):
        uuid[(pid, device, stream)] = GPU_TRACK_BASE + i
        packets.append(
            pb.TracePacket(
                trusted_packet_sequence_id=SEQUENCE_ID,
                track_descriptor=pb.TrackDescriptor(
                    uuid=uuid[(pid, device, stream)], name=f"GPU {device} stream {stream} (pid {pid})"
                ),
            )
        )
    for pid, device, stream, start, end, correlation, name in work.iter_rows():
        track = uuid[(pid, device, stream)]
        begin = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=track, name=name or "kernel")
        begin.terminating_flow_ids.append(flow_id(pid, correlation))
        packets.append(pb.TracePacket(timestamp=start, trusted_packet_sequence_id=SEQUENCE_ID, track_event=begin))
        packets.append(
            pb.TracePacket(
                timestamp=end,
                trusted_packet_sequence_id=SEQUENCE_ID,
                track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END, track_uuid=track),
            )
        )
    return packets


def _track_events(trace: Trace) -> list[pb.TracePacket]:
    packets: list[pb.TracePacket] = []
    cuda = pl.concat(
        [trace.scan(kind).with_columns(pl.lit(kind.value).alias("event")) for kind in (Event.LAUNCH, Event.SYNC)],
        how="diagonal_relaxed",
    ).collect()
    if trace.count(Event.GPU_API):
        # each launch starts the flow its GPU work ends
        correlated = (
            join_launches(trace)
            .filter(pl.col("gpu_start_ns").is_not_null())
            .select("ts_ns", "pid", "tid", pl.lit(Event.LAUNCH.value).alias("event"), "correlation_id")
        )
        cuda = cuda.join(correlated, on=["ts_ns", "pid", "tid", "event"], how="left")
    else:
        cuda = cuda.with_columns(pl.lit(None, pl.UInt32).alias("correlation_id"))
    vectors = trace.of(Event.IRQ_VECTOR, "ts_ns", "cpu", "irq_name", "duration_ns")
    thread_uuid = {}
    for pid, tid in cuda.select("pid", "tid").unique().sort("tid").iter_rows():
        thread_uuid[tid] = 0x10000 + tid
        packets.append(
            pb.TracePacket(
                trusted_packet_sequence_id=SEQUENCE_ID,
                track_descriptor=pb.TrackDescriptor(
                    uuid=thread_uuid[tid], thread=pb.ThreadDescriptor(pid=pid, tid=tid)
                ),
            )
        )
    cpu_uuid = {}
    for cpu in sorted(vectors["cpu"].unique().to_list()):
        cpu_uuid[cpu] = 0x100000000 + cpu
        packets.append(
            pb.TracePacket(
                trusted_packet_sequence_id=SEQUENCE_ID,
                track_descriptor=pb.TrackDescriptor(uuid=cpu_uuid[cpu], name=f"CPU {cpu} system vectors"),
            )
        )

    def slice_pair(ts, dur, uuid, name, **annotations):
        begin = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=uuid, name=name)
        for key, value in annotations.items():
            begin.debug_annotations.append(pb.DebugAnnotation(name=key, int_value=int(value)))
        return [
            pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=SEQUENCE_ID, track_event=begin),
            pb.TracePacket(
                timestamp=ts + dur,
                trusted_packet_sequence_id=SEQUENCE_ID,
                track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END, track_uuid=uuid),
            ),
        ]

    for r in cuda.sort("ts_ns").iter_rows(named=True):
        if r["event"] == Event.LAUNCH:
            event = pb.TrackEvent(
                type=pb.TrackEvent.TYPE_INSTANT, track_uuid=thread_uuid[r["tid"]], name=r["runtime_api"] or r["api"]
            )
            for key in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem", "stream", "func"):
                if r[key] is not None:
                    event.debug_annotations.append(pb.DebugAnnotation(name=key, int_value=int(r[key])))
            if r["correlation_id"] is not None:
                event.flow_ids.append(flow_id(r["pid"], r["correlation_id"]))
            packets.append(
                pb.TracePacket(timestamp=r["ts_ns"], trusted_packet_sequence_id=SEQUENCE_ID, track_event=event)
            )
        else:
            packets += slice_pair(
                r["ts_ns"],
                r["duration_ns"] or 0,
                thread_uuid[r["tid"]],
                r["runtime_api"] or r["api"],
                bytes=r["bytes"] or 0,
            )
    for ts, cpu, name, dur in vectors.sort("ts_ns").iter_rows():
        packets += slice_pair(ts, dur or 0, cpu_uuid[cpu], name or "vector")
    return packets + _gpu_tracks(trace)


def to_perfetto(trace: Trace) -> pb.Trace:
    out = pb.Trace()
    host = trace.meta.get(MetaKey.HOST) or {}
    out.packet.append(
        pb.TracePacket(
            trusted_packet_sequence_id=SEQUENCE_ID,
            sequence_flags=pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
            system_info=pb.SystemInfo(
                utsname=pb.Utsname(
                    sysname="Linux",
                    release=host.get("kernel_release", ""),
                    version=host.get("kernel_version", ""),
                    machine=host.get("machine", ""),
                )
            ),
        )
    )
    out.packet.append(_process_tree(trace))
    lost_cpus = set(trace.lost["cpu"].drop_nulls().to_list())
    rows = _ftrace_rows(trace).select(
        "ts_ns",
        "event",
        "cpu",
        "pid",
        "tid",
        "comm",
        "prio",
        "report_state",
        "next_tid",
        "next_comm",
        "next_prio",
        "waker_tid",
        "target_cpu",
        "orig_cpu",
        "dest_cpu",
        "child_tid",
        "filename",
        "irq",
        "irq_name",
    )
    for (cpu,), part in rows.group_by("cpu", maintain_order=True):
        for start in range(0, part.height, EVENTS_PER_BUNDLE):
            packet = out.packet.add(trusted_packet_sequence_id=SEQUENCE_ID)
            bundle = packet.ftrace_events
            bundle.cpu = cpu
            bundle.lost_events = cpu in lost_cpus and start == 0
            for r in part.slice(start, EVENTS_PER_BUNDLE).iter_rows(named=True):
                _ftrace_event(bundle.event.add(), r)
    out.packet.extend(_track_events(trace))
    return out


def write_perfetto(trace: Trace, path: str | Path) -> dict:
    """Writes the file; returns counts of what went in."""
    result = to_perfetto(trace)
    Path(path).write_bytes(result.SerializeToString())
    ftrace = sum(len(p.ftrace_events.event) for p in result.packet if p.HasField("ftrace_events"))
    tracks = sum(1 for p in result.packet if p.HasField("track_event"))
    return {"packets": len(result.packet), "ftrace_events": ftrace, "track_events": tracks}
