# generated from schema/trace.toml by scripts/gen_schema.py; do not edit
"""The trace's contract: event kinds, their columns, name tables and constants, the metadata's and the
closing summary's keys; and the words shared beside it: thread states, launch-gap classes, the CUDA entry
points probed, the recorder's thread names.

Edit schema/trace.toml and run scripts/gen_schema.py (tests/test_schema_agreement.py
fails while they differ). Code refers to event kinds through `Event`, never by string
literals."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

FORMAT_NAME = 'launchgap-trace'
FORMAT_VERSION = 2
VERSIONS_READ = (1, 2)

# format 2's directory layout
META_FILE = 'meta.json'
END_FILE = 'end.json'
SEGMENT_DIGITS = 6
SEGMENT_SUFFIX = '.parquet'
PARTIAL_SUFFIX = '.partial'
SEGMENT_SECONDS = 1
SEGMENT_ROWS = 262144

CGROUP_PATH_LEN = 1024  # bytes kept of the path of a cgroup made while recording, NUL included: what the kernel's cgroup tracepoints give (TRACE_CGROUP_PATH_LEN), which cut a longer path there
EXEC_FILENAME_LEN = 128  # bytes kept of an exec's filename
IRQ_NAME_LEN = 32  # bytes kept of a hard IRQ handler's name
LAUNCH_BATCH_SIZE = 16  # launches a thread stages before they go to the ring buffer as one record
RECORD_LAUNCH_BATCH = 100  # the record type of a launch batch: not an event kind (its drops count as launches)
TASK_COMM_LEN = 16  # bytes of a task name, NUL included (the kernel's TASK_COMM_LEN)
TASK_CPU_UNKNOWN = 4294967295  # the CPU a wakeup's target_cpu or a migration's orig_cpu holds on a kernel whose task_struct has no CPU field launchgap knows ((u32)-1: a number no CPU has; core_fixes.bpf.h task_cpu_of); the readers take it as unknown, not as an impossible CPU
TASK_DEAD = 0x80  # the prev_state bit of a task's last switch-out (include/linux/sched.h)

# enum event_type: the record types BPF programs put in the ring buffer; `lost_event` values
RECORDS: dict[str, int] = {
    'launch': 1,
    'sync': 2,
    'switch': 3,
    'wakeup': 4,
    'migrate': 5,
    'fork': 6,
    'exec': 7,
    'exit': 8,
    'comm': 9,
    'hardirq': 10,
    'softirq': 11,
    'irq_vector': 12,
    'runtime_only': 13,
    'task_cgroup': 14,
    'cgroup_made': 15,
}

# softirq vectors (include/linux/interrupt.h)
SOFTIRQ_NAMES: tuple[str, ...] = ('HI', 'TIMER', 'NET_TX', 'NET_RX', 'BLOCK', 'IRQ_POLL', 'TASKLET', 'SCHED', 'HRTIMER', 'RCU')
# x86 system vectors, traced through the irq_vectors tracepoints
IRQ_VECTOR_NAMES: tuple[str, ...] = ('LOCAL_TIMER', 'RESCHEDULE', 'CALL_FUNCTION', 'CALL_FUNCTION_SINGLE', 'IRQ_WORK')
# what a copy moved between (CUPTI's CUpti_ActivityMemcpyKind, in its order: H host, D device, A array, P peer)
COPY_KIND_NAMES: tuple[str, ...] = ('UNKNOWN', 'HTOD', 'DTOH', 'HTOA', 'ATOH', 'ATOA', 'ATOD', 'DTOA', 'DTOD', 'HTOH', 'PTOP')
# what a synchronization waited for (CUPTI's CUpti_ActivitySynchronizationType, in its order)
SYNC_TYPE_NAMES: tuple[str, ...] = ('UNKNOWN', 'EVENT_SYNCHRONIZE', 'STREAM_WAIT_EVENT', 'STREAM_SYNCHRONIZE', 'CONTEXT_SYNCHRONIZE')
# a CUPTI collector's life in one process (gpu_collector rows); contended: another CUPTI client in the process (the workload's profiler) changed CUPTI's process-wide activity state, and detail says what and what the collector did (docs/gpu-time.md, "PyTorch users")
COLLECTOR_STATE_NAMES: tuple[str, ...] = ('started', 'stopped', 'failed', 'contended')
# why a GPU sat idle, the report's GPU time (docs/gpu-time.md): while the launch that ended the idle was not yet made, what its thread was doing (preempted, runqueue and irq are interference; host_work is the app's own code; launch_call the driver's CPU cost; blocked a wait of its own); gpu_side: the launch was made and the GPU had not started it; before_first and after_last: outside the process's GPU work; unknown: the thread's state is not in the trace; measurement: launchgap's own threads ran instead (the recorder's, the collector's and the thread CUPTI calls it on): the cost of measuring, not interference; wakeup_latency: the thread waited to run while its CPU was idle (the CPU waking up, from an idle state or an interrupt's end): no task to blame
GPU_IDLE_CAUSE_NAMES: tuple[str, ...] = ('preempted', 'runqueue', 'irq', 'host_work', 'launch_call', 'blocked', 'gpu_side', 'before_first', 'after_last', 'unknown', 'measurement', 'wakeup_latency')
# the driver syncs after whose return the calling thread's GPU work has all finished (its GPU is drained until its next launch): a context sync, a stream sync (taken to be of the stream the thread launches on), a synchronous copy (which waits for the work before it); an event sync waits only for the work before its event, so it is not one. The report's bounds without GPU activity and the monitor's count from them (docs/monitor.md)
DRAIN_API_NAMES: tuple[str, ...] = ('cuCtxSynchronize', 'cuStreamSynchronize', 'cuStreamSynchronize_ptsz', 'cuMemcpyHtoD_v2', 'cuMemcpyDtoH_v2', 'cuMemcpyHtoD_v2_ptds', 'cuMemcpyDtoH_v2_ptds')
# the cgroup hierarchy a cgroup id belongs to (ids are unique within one hierarchy only): v2, the unified hierarchy; v1_cpu, the cgroup v1 hierarchy of the cpu controller, on hosts that mount one
CGROUP_HIERARCHY_NAMES: tuple[str, ...] = ('v2', 'v1_cpu')
# which wakeup tracepoint a wakeup record came from
WAKEUP_VARIANT_NAMES: tuple[str, ...] = ('WAKING', 'WAKEUP', 'NEW')


class Event(str, Enum):
    """An event kind: one table in format 2, one `event` value in format 1."""

    LAUNCH = 'launch'
    SYNC = 'sync'
    RUNTIME_ONLY = 'runtime_only'
    SWITCH = 'switch'
    WAKING = 'waking'
    WAKEUP = 'wakeup'
    WAKEUP_NEW = 'wakeup_new'
    MIGRATE = 'migrate'
    FORK = 'fork'
    EXEC = 'exec'
    EXIT = 'exit'
    COMM = 'comm'
    HARDIRQ = 'hardirq'
    SOFTIRQ = 'softirq'
    IRQ_VECTOR = 'irq_vector'
    LOST = 'lost'
    TASK_CGROUP = 'task_cgroup'
    CGROUP = 'cgroup'
    GPU_KERNEL = 'gpu_kernel'
    GPU_GRAPH = 'gpu_graph'
    GPU_MEMCPY = 'gpu_memcpy'
    GPU_MEMSET = 'gpu_memset'
    GPU_SYNC = 'gpu_sync'
    GPU_API = 'gpu_api'
    GPU_COLLECTOR = 'gpu_collector'
    GPU_COLLECTOR_THREAD = 'gpu_collector_thread'

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Column:
    """One column of a kind: its Arrow type, whether it may be null or absent, and its meaning."""

    name: str
    type: str
    nullable: bool
    optional: bool
    role: str | None
    encoding: str
    doc: str


# the wire record each kind is decoded from (None: made by the recorder in user space)
KIND_RECORD: dict[Event, str | None] = {
    Event.LAUNCH: 'launch',
    Event.SYNC: 'sync',
    Event.RUNTIME_ONLY: 'runtime_only',
    Event.SWITCH: 'switch',
    Event.WAKING: 'wakeup',
    Event.WAKEUP: 'wakeup',
    Event.WAKEUP_NEW: 'wakeup',
    Event.MIGRATE: 'migrate',
    Event.FORK: 'fork',
    Event.EXEC: 'exec',
    Event.EXIT: 'exit',
    Event.COMM: 'comm',
    Event.HARDIRQ: 'hardirq',
    Event.SOFTIRQ: 'softirq',
    Event.IRQ_VECTOR: 'irq_vector',
    Event.LOST: None,
    Event.TASK_CGROUP: 'task_cgroup',
    Event.CGROUP: 'cgroup_made',
    Event.GPU_KERNEL: None,
    Event.GPU_GRAPH: None,
    Event.GPU_MEMCPY: None,
    Event.GPU_MEMSET: None,
    Event.GPU_SYNC: None,
    Event.GPU_API: None,
    Event.GPU_COLLECTOR: None,
    Event.GPU_COLLECTOR_THREAD: None,
}

# the kinds the CUPTI collector sends (--gpu-activity), by their frame id on its channel
COLLECTOR_FRAMES: dict[Event, int] = {
    Event.GPU_KERNEL: 1,
    Event.GPU_GRAPH: 2,
    Event.GPU_MEMCPY: 3,
    Event.GPU_MEMSET: 4,
    Event.GPU_SYNC: 5,
    Event.GPU_API: 6,
    Event.GPU_COLLECTOR: 7,
    Event.LOST: 8,
    Event.GPU_COLLECTOR_THREAD: 9,
}

# the kinds of GPU activity (--gpu-activity): what CUPTI saw, not what a host CPU did
GPU_ACTIVITY_KINDS: frozenset[Event] = frozenset((
    Event.GPU_KERNEL,
    Event.GPU_GRAPH,
    Event.GPU_MEMCPY,
    Event.GPU_MEMSET,
    Event.GPU_SYNC,
    Event.GPU_API,
    Event.GPU_COLLECTOR,
    Event.GPU_COLLECTOR_THREAD,
))
# the kinds of host events: every kind but GPU activity, lost rows and those that describe the
# tasks (their cgroups); each has pid, tid and cpu
HOST_KINDS: tuple[Event, ...] = (
    Event.LAUNCH,
    Event.SYNC,
    Event.RUNTIME_ONLY,
    Event.SWITCH,
    Event.WAKING,
    Event.WAKEUP,
    Event.WAKEUP_NEW,
    Event.MIGRATE,
    Event.FORK,
    Event.EXEC,
    Event.EXIT,
    Event.COMM,
    Event.HARDIRQ,
    Event.SOFTIRQ,
    Event.IRQ_VECTOR,
)

KIND_DOC: dict[Event, str] = {
    Event.LAUNCH: "one logical kernel launch: exactly one driver-entry uprobe hit, whichever API path the application took (the driver's return is not probed: a launch the driver refuses is still a row; one the runtime refuses is a runtime_only row)",
    Event.SYNC: 'a blocking sync or synchronous copy; ts_ns is its entry',
    Event.RUNTIME_ONLY: 'with --api-names: a runtime call that returned without reaching any driver entry point launchgap probes. With a nonzero return_code, an attempt that failed inside the runtime (a launch with no device, an invalid configuration): it never became a launch. With 0, a call that succeeded through a driver function launchgap does not probe. ts_ns is the runtime entry',
    Event.SWITCH: 'a context switch; pid, tid and comm are the task switched out',
    Event.WAKING: "sched_waking: a wakeup starts, on the waker's CPU; pid, tid, comm, prio are the task woken",
    Event.WAKEUP: 'sched_wakeup: the task woken is runnable on a run queue',
    Event.WAKEUP_NEW: "sched_wakeup_new: a new task's first wakeup",
    Event.MIGRATE: "the task moves to another CPU's run queue",
    Event.FORK: 'a process or thread is created; pid and tid are the parent',
    Event.EXEC: 'a task executes a file',
    Event.EXIT: 'a thread exits (its last switch-out follows, with prev_state TASK_DEAD)',
    Event.COMM: 'a task renames itself',
    Event.HARDIRQ: 'a device interrupt handler; ts_ns is its entry; pid and tid are the task interrupted (0 for idle)',
    Event.SOFTIRQ: 'a softirq; ts_ns is its entry; pid and tid are the task interrupted',
    Event.IRQ_VECTOR: 'an x86 system vector, which never passes through irq_handler_entry; ts_ns is its entry',
    Event.LOST: 'events the trace cannot hold, made by the recorder in user space; detail says why',
    Event.TASK_CGROUP: "a task's cgroups: recorded at the first recorded switch the task takes part in (either side), and again at the first after they change; the task is in them from then until its next task_cgroup row (and, before its first, since the trace began). The cgroup rows give their paths",
    Event.CGROUP: 'a cgroup of a hierarchy the task_cgroup rows refer to, with its path and the container and pod named in it: every one there when tracing started (ts_ns: then), and each one made while recording (ts_ns: when; from the cgroup_mkdir tracepoint, so a cgroup made and removed while recording is named too)',
    Event.GPU_KERNEL: "a kernel on the GPU (CUPTI's concurrent-kernel record): ts_ns is its start, end_ns its end",
    Event.GPU_GRAPH: "a CUDA graph's execution on the GPU, as one interval (CUPTI's graph-trace record: its nodes are not recorded one by one)",
    Event.GPU_MEMCPY: "a copy made by the GPU's copy engines",
    Event.GPU_MEMSET: 'a memset on the GPU',
    Event.GPU_SYNC: "a host thread's wait for the GPU, as CUPTI saw it (an event, stream or context synchronization; a stream waiting on an event)",
    Event.GPU_API: "a CUDA driver or runtime call that made GPU work (a launch, a copy, a memset, a sync), as CUPTI recorded it: the call's thread and the correlation id its GPU work carries. A launch row and its gpu_api row are the same call: same thread, same order",
    Event.GPU_COLLECTOR: "the CUPTI collector of one process: `started` (CUPTI loaded, activity enabled), then `stopped` (everything flushed at exit) or `failed`; detail (JSON) says which CUPTI, how its clock was converted to the trace's and within what error, and why it failed",
    Event.GPU_COLLECTOR_THREAD: "a thread launchgap's CUPTI collector runs on in its process (the one CUPTI hands it its buffers on): the time that thread takes from the workload is the cost of measuring, not interference. Sent by the collector from that very thread, once; the recorder believes it only of a thread of that process",
}

KIND_COLUMNS: dict[Event, tuple[Column, ...]] = {
    Event.LAUNCH: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', True, True, None, 'dictionary',
               "the thread's name: only in traces read from the study's CSV"),
        Column('api', 'utf8', False, False, None, 'dictionary',
               'the driver entry point (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch, cuStreamSynchronize, ..., with their _ptsz/_ptds variants)'),
        Column('runtime_api', 'utf8', True, False, None, 'dictionary',
               'the runtime entry point that led here (recorded with --api-names, else null)'),
        Column('func', 'uint64', True, False, None, 'dictionary',
               "the CUfunction (CUgraphExec for graph launches); null where the source has none (the study's CSV)"),
        Column('stream', 'uint64', False, False, None, 'dictionary',
               'the CUstream handle'),
        Column('grid_x', 'uint32', False, False, None, 'dictionary',
               'grid size, x'),
        Column('grid_y', 'uint32', False, False, None, 'dictionary',
               'grid size, y'),
        Column('grid_z', 'uint32', False, False, None, 'dictionary',
               'grid size, z'),
        Column('block_x', 'uint32', False, False, None, 'dictionary',
               'block size, x'),
        Column('block_y', 'uint32', False, False, None, 'dictionary',
               'block size, y'),
        Column('block_z', 'uint32', False, False, None, 'dictionary',
               'block size, z'),
        Column('shared_mem', 'uint32', False, False, None, 'dictionary',
               'dynamic shared memory bytes (0 for graphs, which carry no geometry of their own)'),
    ),
    Event.SYNC: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', True, True, None, 'dictionary',
               "the thread's name: only in traces read from the study's CSV"),
        Column('duration_ns', 'uint64', False, False, 'duration', 'plain',
               'entry to return'),
        Column('api', 'utf8', False, False, None, 'dictionary',
               'the driver entry point (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch, cuStreamSynchronize, ..., with their _ptsz/_ptds variants)'),
        Column('runtime_api', 'utf8', True, False, None, 'dictionary',
               'the runtime entry point that led here (recorded with --api-names, else null)'),
        Column('stream', 'uint64', True, False, None, 'dictionary',
               'the handle for stream syncs, else 0 (null where the source has none)'),
        Column('bytes', 'uint64', True, False, None, 'dictionary',
               'copies, else 0 (null where the source has none)'),
    ),
    Event.RUNTIME_ONLY: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('duration_ns', 'uint64', False, False, 'duration', 'plain',
               'entry to return'),
        Column('runtime_api', 'utf8', False, False, None, 'dictionary',
               'the runtime entry point that led here (recorded with --api-names, else null)'),
        Column('return_code', 'int32', False, False, None, 'dictionary',
               "the runtime's return value (a cudaError_t)"),
    ),
    Event.SWITCH: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the task's name (its bytes escaped where not UTF-8: see Task and file names)"),
        Column('prev_state', 'int64', False, False, None, 'dictionary',
               "the kernel's task state of the task switched out"),
        Column('preempt', 'bool', True, False, None, 'dictionary',
               "the tracepoint's flag: preempted inside the kernel"),
        Column('voluntary', 'bool', True, False, None, 'dictionary',
               "counted in the task's voluntary_ctxt_switches (it blocked); false: still runnable; null where the source cannot tell (the study's CSV)"),
        Column('nvcsw', 'uint64', True, False, None, 'dictionary',
               "the kernel's voluntary switch counter of the task after this switch"),
        Column('nivcsw', 'uint64', True, False, None, 'dictionary',
               "the kernel's involuntary switch counter of the task after this switch"),
        Column('prio', 'int32', True, False, None, 'dictionary',
               'priority of the task switched out'),
        Column('next_pid', 'uint32', False, False, 'task', 'dictionary',
               'process id of the task switched in'),
        Column('next_tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id of the task switched in'),
        Column('next_comm', 'utf8', False, False, None, 'dictionary',
               'name of the task switched in (escaped as comm)'),
        Column('next_prio', 'int32', True, False, None, 'dictionary',
               'priority of the task switched in'),
    ),
    Event.WAKING: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the task's name (its bytes escaped where not UTF-8: see Task and file names)"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on, or TASK_CPU_UNKNOWN (4294967295) on a kernel whose task_struct has no CPU field launchgap knows: not known, not a CPU'),
        Column('waker_tid', 'uint32', False, False, 'task', 'dictionary',
               'the thread whose action woke it (0 from interrupt context)'),
    ),
    Event.WAKEUP: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the task's name (its bytes escaped where not UTF-8: see Task and file names)"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on, or TASK_CPU_UNKNOWN (4294967295) on a kernel whose task_struct has no CPU field launchgap knows: not known, not a CPU'),
        Column('waker_tid', 'uint32', False, False, 'task', 'dictionary',
               'the thread whose action woke it (0 from interrupt context)'),
    ),
    Event.WAKEUP_NEW: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the task's name (its bytes escaped where not UTF-8: see Task and file names)"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on, or TASK_CPU_UNKNOWN (4294967295) on a kernel whose task_struct has no CPU field launchgap knows: not known, not a CPU'),
        Column('waker_tid', 'uint32', False, False, 'task', 'dictionary',
               'the thread whose action woke it (0 from interrupt context)'),
    ),
    Event.MIGRATE: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', True, True, None, 'dictionary',
               "the task's name: only in traces imported from trace-cmd"),
        Column('orig_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU it leaves, or TASK_CPU_UNKNOWN (4294967295) as in target_cpu'),
        Column('dest_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU it moves to'),
    ),
    Event.FORK: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the child's name"),
        Column('child_pid', 'uint32', False, False, 'task', 'dictionary',
               "the child's process id (a new thread has child_pid == pid)"),
        Column('child_tid', 'uint32', False, False, 'task', 'dictionary',
               "the child's thread id"),
    ),
    Event.EXEC: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               'the new name'),
        Column('filename', 'utf8', False, False, None, 'dictionary',
               'the file executed (escaped as comm)'),
    ),
    Event.EXIT: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               "the task's name (its bytes escaped where not UTF-8: see Task and file names)"),
        Column('exit_code', 'int32', True, False, None, 'dictionary',
               'the exit code'),
    ),
    Event.COMM: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('comm', 'utf8', False, False, None, 'dictionary',
               'the new name'),
        Column('old_comm', 'utf8', False, False, None, 'dictionary',
               'the name before (escaped as comm)'),
    ),
    Event.HARDIRQ: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('duration_ns', 'uint64', False, False, 'duration', 'plain',
               'entry to return'),
        Column('irq', 'int32', False, False, None, 'dictionary',
               'the IRQ line'),
        Column('irq_name', 'utf8', False, False, None, 'dictionary',
               "the handler's name"),
    ),
    Event.SOFTIRQ: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('duration_ns', 'uint64', False, False, 'duration', 'plain',
               'entry to return'),
        Column('irq', 'int32', False, False, None, 'dictionary',
               'the vector'),
        Column('irq_name', 'utf8', False, False, None, 'dictionary',
               "the vector's name (names.softirq)"),
    ),
    Event.IRQ_VECTOR: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('duration_ns', 'uint64', False, False, 'duration', 'plain',
               'entry to return'),
        Column('irq', 'int32', False, False, None, 'dictionary',
               'its index in names.irq_vector'),
        Column('irq_name', 'utf8', False, False, None, 'dictionary',
               'its name (names.irq_vector)'),
    ),
    Event.LOST: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', True, False, 'cpu', 'dictionary',
               'where they were lost; null when the kernel does not say'),
        Column('lost_event', 'utf8', False, False, None, 'dictionary',
               'the record type lost (a [records] name; unknown for a program the recorder cannot place), or with --gpu-activity a kind of GPU activity (gpu_kernel, gpu_graph, ...; gpu_activity where CUPTI does not say which)'),
        Column('lost_count', 'uint64', False, False, None, 'dictionary',
               'how many'),
        Column('since_ns', 'uint64', False, False, None, 'delta',
               'the losses happened in [since_ns, ts_ns]'),
        Column('detail', 'utf8', True, False, None, 'dictionary',
               'why, as JSON (null: the ring buffer had no room)'),
    ),
    Event.TASK_CGROUP: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the CPU the event happened on'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               'thread id'),
        Column('cgroup_id', 'uint64', False, False, None, 'dictionary',
               'its cgroup v2 (hierarchy v2)'),
        Column('v1_cpu_cgroup_id', 'uint64', True, False, None, 'dictionary',
               'its cgroup in the cgroup v1 hierarchy of the cpu controller (hierarchy v1_cpu), where the host mounts the cpu controller on cgroup v1; null elsewhere'),
        Column('ns_pid', 'uint32', True, False, 'task', 'dictionary',
               "its process id in its own pid namespace (a container's), which a profiler inside it records; null in traces older than it"),
        Column('ns_tid', 'uint32', True, False, 'task', 'dictionary',
               'its thread id in its own pid namespace; null in traces older than it'),
        Column('autogroup_id', 'uint64', True, False, None, 'dictionary',
               'its autogroup; null where its scheduler group is not one (sched_autogroup off, or a cgroup other than the root), and in traces older than it'),
        Column('sched_cgroup_id', 'uint64', True, False, None, 'dictionary',
               "its scheduler group's cgroup where that is not an autogroup; null in an autogroup and in traces older than it"),
        Column('group_weight', 'uint32', True, False, None, 'dictionary',
               "its scheduler group's weight; null on a kernel without group scheduling and in traces older than it"),
    ),
    Event.CGROUP: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('cgroup_id', 'uint64', False, False, None, 'dictionary',
               "its id in its hierarchy (the task_cgroup rows' cgroup_id for v2, v1_cpu_cgroup_id for v1_cpu)"),
        Column('hierarchy', 'utf8', False, False, None, 'dictionary',
               'which hierarchy cgroup_id is in (names.cgroup_hierarchy)'),
        Column('cgroup_path', 'utf8', False, False, None, 'dictionary',
               'the cgroup\'s path from its hierarchy\'s root ("/" is the root), as /proc/PID/cgroup shows it; bytes that are not UTF-8 are replaced (U+FFFD)'),
        Column('container_id', 'utf8', True, False, None, 'dictionary',
               "the container id in the cgroup path (the last run of 64 hex digits: docker/<id>, docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>), as the monitor's container_id label; null when there is none"),
        Column('pod', 'utf8', True, False, None, 'dictionary',
               "the Kubernetes pod UID in the cgroup path (pod<uid> under kubepods, either cgroup driver's spelling, given with dashes); null when there is none"),
    ),
    Event.GPU_KERNEL: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'the process that launched it'),
        Column('grid_x', 'uint32', False, False, None, 'dictionary',
               'grid size, x'),
        Column('grid_y', 'uint32', False, False, None, 'dictionary',
               'grid size, y'),
        Column('grid_z', 'uint32', False, False, None, 'dictionary',
               'grid size, z'),
        Column('block_x', 'uint32', False, False, None, 'dictionary',
               'block size, x'),
        Column('block_y', 'uint32', False, False, None, 'dictionary',
               'block size, y'),
        Column('block_z', 'uint32', False, False, None, 'dictionary',
               'block size, z'),
        Column('shared_mem', 'uint32', False, False, None, 'dictionary',
               'dynamic shared memory bytes'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('device_id', 'uint32', False, False, None, 'dictionary',
               'the GPU, as CUPTI numbers devices'),
        Column('context_id', 'uint32', False, False, None, 'dictionary',
               'the CUDA context, as CUPTI numbers contexts'),
        Column('stream_id', 'uint32', False, False, None, 'dictionary',
               "the stream, as CUPTI numbers streams (not the CUstream handle of the launch row's `stream`)"),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
        Column('kernel_name', 'utf8', False, False, None, 'dictionary',
               "the kernel's (mangled) name"),
        Column('graph_id', 'uint32', True, False, None, 'dictionary',
               'the graph it is a node of (only when graphs are traced node by node); null for a kernel launched alone'),
    ),
    Event.GPU_GRAPH: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'the process that launched it'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('device_id', 'uint32', False, False, None, 'dictionary',
               'where its first node ran'),
        Column('context_id', 'uint32', False, False, None, 'dictionary',
               'where its first node ran'),
        Column('stream_id', 'uint32', False, False, None, 'dictionary',
               "the stream, as CUPTI numbers streams (not the CUstream handle of the launch row's `stream`)"),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
        Column('graph_id', 'uint32', False, False, None, 'dictionary',
               "the CUDA graph's id (CUPTI's)"),
    ),
    Event.GPU_MEMCPY: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('bytes', 'uint64', False, False, None, 'dictionary',
               'bytes copied'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('device_id', 'uint32', False, False, None, 'dictionary',
               'the GPU, as CUPTI numbers devices'),
        Column('context_id', 'uint32', False, False, None, 'dictionary',
               'the CUDA context, as CUPTI numbers contexts'),
        Column('stream_id', 'uint32', False, False, None, 'dictionary',
               "the stream, as CUPTI numbers streams (not the CUstream handle of the launch row's `stream`)"),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
        Column('copy_kind', 'utf8', False, False, None, 'dictionary',
               'what the copy moved between (names.copy_kind)'),
    ),
    Event.GPU_MEMSET: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('bytes', 'uint64', False, False, None, 'dictionary',
               'bytes set'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('device_id', 'uint32', False, False, None, 'dictionary',
               'the GPU, as CUPTI numbers devices'),
        Column('context_id', 'uint32', False, False, None, 'dictionary',
               'the CUDA context, as CUPTI numbers contexts'),
        Column('stream_id', 'uint32', False, False, None, 'dictionary',
               "the stream, as CUPTI numbers streams (not the CUstream handle of the launch row's `stream`)"),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
    ),
    Event.GPU_SYNC: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('context_id', 'uint32', False, False, None, 'dictionary',
               'the CUDA context, as CUPTI numbers contexts'),
        Column('stream_id', 'uint32', True, False, None, 'dictionary',
               'the stream waited for; null for a context synchronization'),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
        Column('sync_type', 'utf8', False, False, None, 'dictionary',
               'what the synchronization waited for (names.sync_type)'),
    ),
    Event.GPU_API: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               "the calling thread (the kernel's thread id)"),
        Column('api', 'utf8', False, False, None, 'dictionary',
               'the entry point (cuLaunchKernel, cudaLaunchKernel, ...)'),
        Column('return_code', 'int32', False, False, None, 'dictionary',
               'what the call returned (a CUresult or cudaError_t)'),
        Column('end_ns', 'uint64', False, False, 'time', 'delta',
               "when it ended, on the trace's clock (CLOCK_MONOTONIC ns)"),
        Column('correlation_id', 'uint32', False, False, None, 'plain',
               "CUPTI's correlation id: the same number on the API call and on the GPU work it made, within one process"),
    ),
    Event.GPU_COLLECTOR: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('detail', 'utf8', False, False, None, 'dictionary',
               'why, as JSON (null: the ring buffer had no room)'),
        Column('state', 'utf8', False, False, None, 'dictionary',
               "the collector's state (names.collector_state)"),
    ),
    Event.GPU_COLLECTOR_THREAD: (
        Column('ts_ns', 'uint64', False, False, 'time', 'delta',
               'CLOCK_MONOTONIC ns (bpf_ktime_get_ns)'),
        Column('pid', 'uint32', False, False, 'task', 'dictionary',
               'process id (tgid)'),
        Column('tid', 'uint32', False, False, 'task', 'dictionary',
               "the thread (the kernel's thread id)"),
    ),
}

# every column's Arrow type (one type wherever it appears)
COLUMN_TYPES: dict[str, str] = {
    'ts_ns': 'uint64',
    'event': 'utf8',
    'cpu': 'uint32',
    'pid': 'uint32',
    'tid': 'uint32',
    'comm': 'utf8',
    'duration_ns': 'uint64',
    'api': 'utf8',
    'runtime_api': 'utf8',
    'func': 'uint64',
    'stream': 'uint64',
    'grid_x': 'uint32',
    'grid_y': 'uint32',
    'grid_z': 'uint32',
    'block_x': 'uint32',
    'block_y': 'uint32',
    'block_z': 'uint32',
    'shared_mem': 'uint32',
    'bytes': 'uint64',
    'prev_state': 'int64',
    'preempt': 'bool',
    'voluntary': 'bool',
    'nvcsw': 'uint64',
    'nivcsw': 'uint64',
    'prio': 'int32',
    'next_pid': 'uint32',
    'next_tid': 'uint32',
    'next_comm': 'utf8',
    'next_prio': 'int32',
    'target_cpu': 'uint32',
    'waker_tid': 'uint32',
    'orig_cpu': 'uint32',
    'dest_cpu': 'uint32',
    'child_pid': 'uint32',
    'child_tid': 'uint32',
    'filename': 'utf8',
    'old_comm': 'utf8',
    'exit_code': 'int32',
    'irq': 'int32',
    'irq_name': 'utf8',
    'lost_event': 'utf8',
    'lost_count': 'uint64',
    'since_ns': 'uint64',
    'detail': 'utf8',
    'return_code': 'int32',
    'end_ns': 'uint64',
    'device_id': 'uint32',
    'context_id': 'uint32',
    'stream_id': 'uint32',
    'correlation_id': 'uint32',
    'kernel_name': 'utf8',
    'graph_id': 'uint32',
    'copy_kind': 'utf8',
    'sync_type': 'utf8',
    'state': 'utf8',
    'cgroup_id': 'uint64',
    'v1_cpu_cgroup_id': 'uint64',
    'hierarchy': 'utf8',
    'cgroup_path': 'utf8',
    'container_id': 'utf8',
    'pod': 'utf8',
    'ns_pid': 'uint32',
    'ns_tid': 'uint32',
    'autogroup_id': 'uint64',
    'sched_cgroup_id': 'uint64',
    'group_weight': 'uint32',
}

# format 1: one wide table, these columns in this order
FORMAT1_COLUMNS: tuple[str, ...] = (
    'ts_ns',
    'event',
    'cpu',
    'pid',
    'tid',
    'comm',
    'duration_ns',
    'api',
    'runtime_api',
    'func',
    'stream',
    'grid_x',
    'grid_y',
    'grid_z',
    'block_x',
    'block_y',
    'block_z',
    'shared_mem',
    'bytes',
    'prev_state',
    'preempt',
    'voluntary',
    'nvcsw',
    'nivcsw',
    'prio',
    'next_pid',
    'next_tid',
    'next_comm',
    'next_prio',
    'target_cpu',
    'waker_tid',
    'orig_cpu',
    'dest_cpu',
    'child_pid',
    'child_tid',
    'filename',
    'old_comm',
    'exit_code',
    'irq',
    'irq_name',
    'lost_event',
    'lost_count',
    'since_ns',
    'detail',
    'return_code',
    'end_ns',
    'device_id',
    'context_id',
    'stream_id',
    'correlation_id',
    'kernel_name',
    'graph_id',
    'copy_kind',
    'sync_type',
    'state',
    'cgroup_id',
    'v1_cpu_cgroup_id',
    'hierarchy',
    'cgroup_path',
    'container_id',
    'pod',
    'ns_pid',
    'ns_tid',
    'autogroup_id',
    'sched_cgroup_id',
    'group_weight',
)
# the columns format 1 began with (a file without one is damaged)
FORMAT1_ORIGINAL: frozenset[str] = frozenset((
    'ts_ns',
    'event',
    'cpu',
    'pid',
    'tid',
    'comm',
    'duration_ns',
    'api',
    'runtime_api',
    'func',
    'stream',
    'grid_x',
    'grid_y',
    'grid_z',
    'block_x',
    'block_y',
    'block_z',
    'shared_mem',
    'bytes',
    'prev_state',
    'preempt',
    'voluntary',
    'nvcsw',
    'nivcsw',
    'prio',
    'next_pid',
    'next_tid',
    'next_comm',
    'next_prio',
    'target_cpu',
    'waker_tid',
    'orig_cpu',
    'dest_cpu',
    'child_pid',
    'child_tid',
    'filename',
    'old_comm',
    'exit_code',
    'irq',
    'irq_name',
    'lost_event',
    'lost_count',
    'since_ns',
    'detail',
))
# format 1's closing row (format 2: END_FILE)
FORMAT1_END_EVENT = 'trace_end'

# the closing summary's keys
END_KEYS: dict[str, str] = {
    'end_ns': 'CLOCK_MONOTONIC when the recorder stopped tracing',
    'stop_reason': 'what ended the recording (the command exited, signal N, the duration elapsed, ...)',
    'command_exit_code': "the traced command's exit code (null in -p and --system mode, or when it was still running)",
    'lost_events': "the sum of every lost row's lost_count",
    'proc_counters': '/proc/softirqs and /proc/interrupts right after attaching and right before detaching (below)',
    'rows': 'rows written, by kind',
    'cpu_ns': "CPU time of the recorder's own threads while tracing, from start_ns on: drain (the ring-buffer reader) and writer (decoding and writing the trace)",
    'gpu_activity': 'with --gpu-activity: collectors_started, collectors_stopped, collectors_failed, launching_processes_without_collector, launches and gpu_executions (kernels alone and graphs), over every process',
}



class MetaKey:
    """A key of the metadata (meta.json), for code to name one."""

    FORMAT = 'format'
    VERSION = 'version'
    RECORDER = 'recorder'
    START_NS = 'start_ns'
    MODE = 'mode'
    COMMAND = 'command'
    COMMAND_PID = 'command_pid'
    PIDS = 'pids'
    RECORDER_PID = 'recorder_pid'
    HOST = 'host'
    TOPOLOGY = 'topology'
    CLOCK = 'clock'
    PROFILER = 'profiler'  # written by the PyTorch profiler reader (`launchgap report TRACE.json.gz`, `import`, `report --kineto`) only
    KERNEL_SUPPORT = 'kernel_support'
    HOST_FILES = 'host_files'
    OPTIONS = 'options'
    CUDA_LIBRARIES = 'cuda_libraries'
    GPU_ACTIVITY = 'gpu_activity'
    CGROUPS = 'cgroups'
    PROBES = 'probes'
    SOURCE = 'source'  # written by launchgap import only
    PID_IS_THREAD_ID = 'pid_is_thread_id'  # written by launchgap import only
    EVERY_SWITCH = 'every_switch'  # written by launchgap import only
    IMPORTED_EVENTS = 'imported_events'  # written by launchgap import only
    CONVERTED_FROM = 'converted_from'  # written by launchgap convert only
    CAVEATS = 'caveats'  # written by the study CSV reader only
    CSV_SOURCE = 'csv_source'  # written by the study CSV reader only
    STUDY_COUNTS = 'study_counts'  # written by the study CSV reader only


# the metadata's keys whose value's type the reader checks (the analysis relies on them): the JSON
# types each may have
META_CHECKED_TYPES: dict[str, tuple[str, ...]] = {
    MetaKey.START_NS: ('integer',),
    MetaKey.MODE: ('string',),
    MetaKey.COMMAND: ('array', 'null'),
    MetaKey.COMMAND_PID: ('integer', 'null'),
    MetaKey.PIDS: ('array',),
    MetaKey.RECORDER_PID: ('integer', 'null'),
    MetaKey.HOST: ('object',),
    MetaKey.TOPOLOGY: ('object',),
    MetaKey.EVERY_SWITCH: ('bool',),
    MetaKey.CAVEATS: ('array',),
}


# the recorder's binary (its main thread's name, which its unnamed threads inherit) and the threads it
# names itself
RECORDER_BINARY = 'launchgap-record'
RECORDER_THREADS: tuple[str, ...] = ('trace-writer',)


# thread states: where a thread is, by its own switches and wakeups; the analysis numbers its
# segments in this order
THREAD_STATES: tuple[str, ...] = ('running', 'preempted', 'runqueue', 'blocked', 'offcpu', 'unknown', 'dead')
# waiting for a CPU another task holds: who ran instead is the culprit
WAITING_STATES: tuple[str, ...] = ('preempted', 'runqueue')


class ThreadState:
    """A thread state (THREAD_STATES), for code to name one."""

    RUNNING = 'running'  # on a CPU
    PREEMPTED = 'preempted'  # switched out still runnable (counted in the kernel's nivcsw): on that CPU's run queue
    RUNQUEUE = 'runqueue'  # woken after a block, runnable, not yet running
    BLOCKED = 'blocked'  # switched out voluntarily (counted in nvcsw): the application's own time (sync, copy, I/O, sleep, lock)
    OFFCPU = 'offcpu'  # switched out, whether voluntarily not known (imported study CSV only): unclassified
    UNKNOWN = 'unknown'  # before its first event, when that event does not tell: counted nowhere
    DEAD = 'dead'  # switched out for the last time (TASK_DEAD): the thread ends


# launch-gap classes: the cause that took the most time inside a gap (the first of equal largest,
# in this order), clean when none took any
GAP_CLASSES: tuple[str, ...] = ('clean', 'preempted', 'runqueue', 'irq', 'sync', 'blocked', 'offcpu')
# interference: another task's or an interrupt's doing, what isolating the workload would remove
INTERFERENCE_CAUSES: tuple[str, ...] = ('preempted', 'runqueue', 'irq')


class GapClassName:
    """A launch-gap class (GAP_CLASSES), for code to name one."""

    CLEAN = 'clean'  # nothing took time inside the gap
    PREEMPTED = 'preempted'  # the thread was preempted
    RUNQUEUE = 'runqueue'  # the thread was woken and waited to run
    IRQ = 'irq'  # interrupts ran over the thread (their exclusive time)
    SYNC = 'sync'  # the thread blocked voluntarily inside a gap holding a sync (the sync's wait)
    BLOCKED = 'blocked'  # the thread blocked voluntarily, no sync in the gap
    OFFCPU = 'offcpu'  # unclassified off-CPU time (imported study CSV only)


@dataclass(frozen=True)
class CudaApi:
    """A CUDA entry point launchgap probes: its library (driver or runtime) and what it does (launch, sync,
    or copy: a synchronous copy, which waits as a sync does)."""

    name: str
    layer: str
    does: str


# the CUDA entry points launchgap probes, in the order that numbers them (a record's api id is the
# position plus one), the driver's first
CUDA_APIS: tuple[CudaApi, ...] = (
    CudaApi('cuLaunchKernel', 'driver', 'launch'),
    CudaApi('cuLaunchKernel_ptsz', 'driver', 'launch'),
    CudaApi('cuLaunchCooperativeKernel', 'driver', 'launch'),
    CudaApi('cuLaunchCooperativeKernel_ptsz', 'driver', 'launch'),
    CudaApi('cuLaunchKernelEx', 'driver', 'launch'),
    CudaApi('cuLaunchKernelEx_ptsz', 'driver', 'launch'),
    CudaApi('cuGraphLaunch', 'driver', 'launch'),
    CudaApi('cuGraphLaunch_ptsz', 'driver', 'launch'),
    CudaApi('cuStreamSynchronize', 'driver', 'sync'),
    CudaApi('cuStreamSynchronize_ptsz', 'driver', 'sync'),
    CudaApi('cuCtxSynchronize', 'driver', 'sync'),
    CudaApi('cuEventSynchronize', 'driver', 'sync'),
    CudaApi('cuMemcpyHtoD_v2', 'driver', 'copy'),
    CudaApi('cuMemcpyDtoH_v2', 'driver', 'copy'),
    CudaApi('cuMemcpyHtoD_v2_ptds', 'driver', 'copy'),
    CudaApi('cuMemcpyDtoH_v2_ptds', 'driver', 'copy'),
    CudaApi('cudaLaunchKernel', 'runtime', 'launch'),
    CudaApi('cudaLaunchKernel_ptsz', 'runtime', 'launch'),
    CudaApi('cudaLaunchKernelExC', 'runtime', 'launch'),
    CudaApi('cudaLaunchKernelExC_ptsz', 'runtime', 'launch'),
    CudaApi('cudaLaunchCooperativeKernel', 'runtime', 'launch'),
    CudaApi('cudaLaunchCooperativeKernel_ptsz', 'runtime', 'launch'),
    CudaApi('cudaGraphLaunch', 'runtime', 'launch'),
    CudaApi('cudaGraphLaunch_ptsz', 'runtime', 'launch'),
    CudaApi('cudaDeviceSynchronize', 'runtime', 'sync'),
    CudaApi('cudaStreamSynchronize', 'runtime', 'sync'),
    CudaApi('cudaStreamSynchronize_ptsz', 'runtime', 'sync'),
    CudaApi('cudaEventSynchronize', 'runtime', 'sync'),
    CudaApi('cudaMemcpy', 'runtime', 'copy'),
    CudaApi('cudaMemcpy_ptds', 'runtime', 'copy'),
)
# the runtime's launch entry points: a runtime_only row of one with a nonzero return code is a launch
# attempt that failed before the driver
RUNTIME_LAUNCH_APIS: tuple[str, ...] = (
    'cudaLaunchKernel',
    'cudaLaunchKernel_ptsz',
    'cudaLaunchKernelExC',
    'cudaLaunchKernelExC_ptsz',
    'cudaLaunchCooperativeKernel',
    'cudaLaunchCooperativeKernel_ptsz',
    'cudaGraphLaunch',
    'cudaGraphLaunch_ptsz',
)
# the suffixes of the per-thread default stream's variants: the same API path as the entry point named
# without it
STREAM_VARIANT_SUFFIXES: tuple[str, ...] = ('_ptsz', '_ptds')
