"""The trace's contract: event kinds, their columns, name tables and constants.

GENERATED from schema/trace.toml by scripts/gen_schema.py: edit that file and run the
script (tests/test_schema_agreement.py fails while they differ). Code refers to event
kinds through `Event`, never by string literals."""

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

EXEC_FILENAME_LEN = 128  # bytes kept of an exec's filename
IRQ_NAME_LEN = 32  # bytes kept of a hard IRQ handler's name
LAUNCH_BATCH_SIZE = 16  # launches a thread stages before they go to the ring buffer as one record
RECORD_LAUNCH_BATCH = 100  # the record type of a launch batch: not an event kind (its drops count as launches)
TASK_COMM_LEN = 16  # bytes of a task name, NUL included (the kernel's TASK_COMM_LEN)
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
}

# softirq vectors (include/linux/interrupt.h)
SOFTIRQ_NAMES: tuple[str, ...] = ('HI', 'TIMER', 'NET_TX', 'NET_RX', 'BLOCK', 'IRQ_POLL', 'TASKLET', 'SCHED', 'HRTIMER', 'RCU')
# x86 system vectors, traced through the irq_vectors tracepoints
IRQ_VECTOR_NAMES: tuple[str, ...] = ('LOCAL_TIMER', 'RESCHEDULE', 'CALL_FUNCTION', 'CALL_FUNCTION_SINGLE', 'IRQ_WORK')
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
}

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
               "the task's name"),
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
               'name of the task switched in'),
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
               "the task's name"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on'),
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
               "the task's name"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on'),
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
               "the task's name"),
        Column('prio', 'int32', False, False, None, 'dictionary',
               "the task's priority (the kernel's prio: 120 is nice 0)"),
        Column('target_cpu', 'uint32', False, False, 'cpu', 'dictionary',
               'the run queue the task is put on'),
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
               'the CPU it leaves'),
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
               'the file executed'),
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
               "the task's name"),
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
               'the name before'),
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
               'the record type lost (a [records] name; unknown for a program the recorder cannot place)'),
        Column('lost_count', 'uint64', False, False, None, 'dictionary',
               'how many'),
        Column('since_ns', 'uint64', False, False, None, 'delta',
               'the losses happened in [since_ns, ts_ns]'),
        Column('detail', 'utf8', True, False, None, 'dictionary',
               'why, as JSON (null: the ring buffer had no room)'),
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
    'cpu_ns': "CPU time of the recorder's own threads while tracing: drain (the ring-buffer reader) and writer (decoding and writing the trace)",
}
