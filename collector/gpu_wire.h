/* generated from schema/trace.toml by scripts/gen_schema.py; do not edit */
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUPTI collector's channel to the recorder: one encoder per kind of row it sends
 * (schema/trace.toml's [collector] says the layout; the recorder's decoders are
 * generated from the same table: recorder/src/generated/trace_schema.rs).
 */
#ifndef LAUNCHGAP_GPU_WIRE_H
#define LAUNCHGAP_GPU_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LG_WIRE_MAX_FRAME 8192 /* header included */
#define LG_WIRE_MAX_STRING 4000 /* longer strings are cut */
#define LG_WIRE_FILE_BYTES 67108864u /* a new file once one holds this many */
#define LG_WIRE_STAGING_BYTES 65536u /* written whole: past file_bytes by at most this */
#define LG_WIRE_HEADER 8 /* u32 payload length, u16 frame id, u16 zero */

/* CUPTI's entry points the collector cannot work without */
#define LG_CUPTI_REQUIRED "cuptiGetVersion", "cuptiGetResultString", "cuptiGetTimestamp", "cuptiSetThreadIdType", "cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityGetNextRecord", "cuptiActivityGetNumDroppedRecords", "cuptiActivityFlushAll"

enum lg_frame {
	LG_FRAME_GPU_KERNEL = 1,
	LG_FRAME_GPU_GRAPH = 2,
	LG_FRAME_GPU_MEMCPY = 3,
	LG_FRAME_GPU_MEMSET = 4,
	LG_FRAME_GPU_SYNC = 5,
	LG_FRAME_GPU_API = 6,
	LG_FRAME_GPU_COLLECTOR = 7,
	LG_FRAME_LOST = 8,
	LG_FRAME_GPU_COLLECTOR_THREAD = 9,
};

/* softirq vectors (include/linux/interrupt.h) */
static const char *const lg_softirq_names[] = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
#define LG_SOFTIRQ_COUNT 10

/* x86 system vectors, traced through the irq_vectors tracepoints */
static const char *const lg_irq_vector_names[] = {"LOCAL_TIMER", "RESCHEDULE", "CALL_FUNCTION", "CALL_FUNCTION_SINGLE", "IRQ_WORK"};
#define LG_IRQ_VECTOR_COUNT 5

/* what a copy moved between (CUPTI's CUpti_ActivityMemcpyKind, in its order: H host, D device, A array, P peer) */
static const char *const lg_copy_kind_names[] = {"UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA", "ATOD", "DTOA", "DTOD", "HTOH", "PTOP"};
#define LG_COPY_KIND_COUNT 11

/* what a synchronization waited for (CUPTI's CUpti_ActivitySynchronizationType, in its order) */
static const char *const lg_sync_type_names[] = {"UNKNOWN", "EVENT_SYNCHRONIZE", "STREAM_WAIT_EVENT", "STREAM_SYNCHRONIZE", "CONTEXT_SYNCHRONIZE"};
#define LG_SYNC_TYPE_COUNT 5

/* a CUPTI collector's life in one process (gpu_collector rows); contended: another CUPTI client in the process (the workload's profiler) changed CUPTI's process-wide activity state, and detail says what and what the collector did (docs/gpu-time.md, "PyTorch users") */
static const char *const lg_collector_state_names[] = {"started", "stopped", "failed", "contended"};
#define LG_COLLECTOR_STATE_COUNT 4

/* why a GPU sat idle, the report's GPU time (docs/gpu-time.md): while the launch that ended the idle was not yet made, what its thread was doing (preempted, runqueue and irq are interference; host_work is the app's own code; launch_call the driver's CPU cost; blocked a wait of its own); gpu_side: the launch was made and the GPU had not started it; before_first and after_last: outside the process's GPU work; unknown: the thread's state is not in the trace; measurement: launchgap's own threads ran instead (the recorder's, the collector's and the thread CUPTI calls it on): the cost of measuring, not interference; wakeup_latency: the thread waited to run while its CPU was idle (the CPU waking up, from an idle state or an interrupt's end): no task to blame */
static const char *const lg_gpu_idle_cause_names[] = {"preempted", "runqueue", "irq", "host_work", "launch_call", "blocked", "gpu_side", "before_first", "after_last", "unknown", "measurement", "wakeup_latency"};
#define LG_GPU_IDLE_CAUSE_COUNT 12

/* the driver syncs after whose return the calling thread's GPU work has all finished (its GPU is drained until its next launch): a context sync, a stream sync (taken to be of the stream the thread launches on), a synchronous copy (which waits for the work before it); an event sync waits only for the work before its event, so it is not one. The report's bounds without GPU activity and the monitor's count from them (docs/monitor.md) */
static const char *const lg_drain_api_names[] = {"cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2_ptds"};
#define LG_DRAIN_API_COUNT 7

/* the cgroup hierarchy a cgroup id belongs to (ids are unique within one hierarchy only): v2, the unified hierarchy; v1_cpu, the cgroup v1 hierarchy of the cpu controller, on hosts that mount one */
static const char *const lg_cgroup_hierarchy_names[] = {"v2", "v1_cpu"};
#define LG_CGROUP_HIERARCHY_COUNT 2

/* which wakeup tracepoint a wakeup record came from */
static const char *const lg_wakeup_variant_names[] = {"WAKING", "WAKEUP", "NEW"};
#define LG_WAKEUP_VARIANT_COUNT 3

/* A cursor over a frame being written: `at` past the end means it did not fit. */
struct lg_wire { uint8_t *out; size_t at, room; };

static inline void lg_wire_bytes(struct lg_wire *w, const void *src, size_t n)
{
	if (w->at + n <= w->room)
		memcpy(w->out + w->at, src, n);
	w->at += n;
}

/* x86-64 is little-endian, as the channel is: values are copied as they lie */
static inline void lg_wire_u8(struct lg_wire *w, uint8_t v) { lg_wire_bytes(w, &v, 1); }
static inline void lg_wire_u16(struct lg_wire *w, uint16_t v) { lg_wire_bytes(w, &v, 2); }
static inline void lg_wire_u32(struct lg_wire *w, uint32_t v) { lg_wire_bytes(w, &v, 4); }
static inline void lg_wire_i32(struct lg_wire *w, int32_t v) { lg_wire_bytes(w, &v, 4); }
static inline void lg_wire_u64(struct lg_wire *w, uint64_t v) { lg_wire_bytes(w, &v, 8); }
static inline void lg_wire_i64(struct lg_wire *w, int64_t v) { lg_wire_bytes(w, &v, 8); }

static inline void lg_wire_str(struct lg_wire *w, const char *s)
{
	size_t n = 0;
	while (s && n < LG_WIRE_MAX_STRING && s[n]) /* strnlen, which GCC misjudges on short arrays */
		n++;
	lg_wire_u16(w, (uint16_t)n);
	lg_wire_bytes(w, s, n);
}

/* Starts a frame: its header, the length filled in by lg_wire_end. */
static inline void lg_wire_begin(struct lg_wire *w, uint8_t *out, size_t room, enum lg_frame frame)
{
	w->out = out, w->at = 0, w->room = room < LG_WIRE_MAX_FRAME ? room : LG_WIRE_MAX_FRAME;
	lg_wire_u32(w, 0);
	lg_wire_u16(w, (uint16_t)frame);
	lg_wire_u16(w, 0);
}

/* The frame's length in bytes, header included; 0 when it did not fit. */
static inline size_t lg_wire_end(struct lg_wire *w)
{
	uint32_t payload = (uint32_t)(w->at - LG_WIRE_HEADER);
	if (w->at > w->room)
		return 0;
	memcpy(w->out, &payload, 4);
	return w->at;
}

/* a `gpu_kernel` row: a kernel on the GPU (CUPTI's concurrent-kernel record): ts_ns is its start, end_ns its end */
struct lg_gpu_kernel_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint32_t grid_x;
	uint32_t grid_y;
	uint32_t grid_z;
	uint32_t block_x;
	uint32_t block_y;
	uint32_t block_z;
	uint32_t shared_mem;
	uint64_t end_ns;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	const char * kernel_name;
	uint8_t has_graph_id; /* 0: null */
	uint32_t graph_id;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_kernel(uint8_t *out, size_t room, const struct lg_gpu_kernel_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_KERNEL);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u32(&w, row->grid_x);
	lg_wire_u32(&w, row->grid_y);
	lg_wire_u32(&w, row->grid_z);
	lg_wire_u32(&w, row->block_x);
	lg_wire_u32(&w, row->block_y);
	lg_wire_u32(&w, row->block_z);
	lg_wire_u32(&w, row->shared_mem);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->device_id);
	lg_wire_u32(&w, row->context_id);
	lg_wire_u32(&w, row->stream_id);
	lg_wire_u32(&w, row->correlation_id);
	lg_wire_str(&w, row->kernel_name);
	lg_wire_u8(&w, row->has_graph_id ? 1 : 0);
	if (row->has_graph_id)
		lg_wire_u32(&w, row->graph_id);
	return lg_wire_end(&w);
}

/* a `gpu_graph` row: a CUDA graph's execution on the GPU, as one interval (CUPTI's graph-trace record: its nodes are not recorded one by one) */
struct lg_gpu_graph_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint64_t end_ns;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	uint32_t graph_id;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_graph(uint8_t *out, size_t room, const struct lg_gpu_graph_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_GRAPH);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->device_id);
	lg_wire_u32(&w, row->context_id);
	lg_wire_u32(&w, row->stream_id);
	lg_wire_u32(&w, row->correlation_id);
	lg_wire_u32(&w, row->graph_id);
	return lg_wire_end(&w);
}

/* a `gpu_memcpy` row: a copy made by the GPU's copy engines */
struct lg_gpu_memcpy_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint64_t bytes;
	uint64_t end_ns;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	const char * copy_kind;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_memcpy(uint8_t *out, size_t room, const struct lg_gpu_memcpy_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_MEMCPY);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u64(&w, row->bytes);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->device_id);
	lg_wire_u32(&w, row->context_id);
	lg_wire_u32(&w, row->stream_id);
	lg_wire_u32(&w, row->correlation_id);
	lg_wire_str(&w, row->copy_kind);
	return lg_wire_end(&w);
}

/* a `gpu_memset` row: a memset on the GPU */
struct lg_gpu_memset_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint64_t bytes;
	uint64_t end_ns;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_memset(uint8_t *out, size_t room, const struct lg_gpu_memset_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_MEMSET);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u64(&w, row->bytes);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->device_id);
	lg_wire_u32(&w, row->context_id);
	lg_wire_u32(&w, row->stream_id);
	lg_wire_u32(&w, row->correlation_id);
	return lg_wire_end(&w);
}

/* a `gpu_sync` row: a host thread's wait for the GPU, as CUPTI saw it (an event, stream or context synchronization; a stream waiting on an event) */
struct lg_gpu_sync_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint64_t end_ns;
	uint32_t context_id;
	uint8_t has_stream_id; /* 0: null */
	uint32_t stream_id;
	uint32_t correlation_id;
	const char * sync_type;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_sync(uint8_t *out, size_t room, const struct lg_gpu_sync_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_SYNC);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->context_id);
	lg_wire_u8(&w, row->has_stream_id ? 1 : 0);
	if (row->has_stream_id)
		lg_wire_u32(&w, row->stream_id);
	lg_wire_u32(&w, row->correlation_id);
	lg_wire_str(&w, row->sync_type);
	return lg_wire_end(&w);
}

/* a `gpu_api` row: a CUDA driver or runtime call that made GPU work (a launch, a copy, a memset, a sync), as CUPTI recorded it: the call's thread and the correlation id  */
struct lg_gpu_api_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint32_t tid;
	const char * api;
	int32_t return_code;
	uint64_t end_ns;
	uint32_t correlation_id;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_api(uint8_t *out, size_t room, const struct lg_gpu_api_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_API);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u32(&w, row->tid);
	lg_wire_str(&w, row->api);
	lg_wire_i32(&w, row->return_code);
	lg_wire_u64(&w, row->end_ns);
	lg_wire_u32(&w, row->correlation_id);
	return lg_wire_end(&w);
}

/* a `gpu_collector` row: the CUPTI collector of one process: `started` (CUPTI loaded, activity enabled), then `stopped` (everything flushed at exit) or `failed`; detail (JSON) */
struct lg_gpu_collector_row {
	uint64_t ts_ns;
	uint32_t pid;
	const char * detail;
	const char * state;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_collector(uint8_t *out, size_t room, const struct lg_gpu_collector_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_COLLECTOR);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_str(&w, row->detail);
	lg_wire_str(&w, row->state);
	return lg_wire_end(&w);
}

/* a `lost` row: events the trace cannot hold, made by the recorder in user space; detail says why */
struct lg_lost_row {
	uint64_t ts_ns;
	uint8_t has_cpu; /* 0: null */
	uint32_t cpu;
	const char * lost_event;
	uint64_t lost_count;
	uint64_t since_ns;
	uint8_t has_detail; /* 0: null */
	const char * detail;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_lost(uint8_t *out, size_t room, const struct lg_lost_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_LOST);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u8(&w, row->has_cpu ? 1 : 0);
	if (row->has_cpu)
		lg_wire_u32(&w, row->cpu);
	lg_wire_str(&w, row->lost_event);
	lg_wire_u64(&w, row->lost_count);
	lg_wire_u64(&w, row->since_ns);
	lg_wire_u8(&w, row->has_detail ? 1 : 0);
	if (row->has_detail)
		lg_wire_str(&w, row->detail);
	return lg_wire_end(&w);
}

/* a `gpu_collector_thread` row: a thread launchgap's CUPTI collector runs on in its process (the one CUPTI hands it its buffers on): the time that thread takes from the workload is t */
struct lg_gpu_collector_thread_row {
	uint64_t ts_ns;
	uint32_t pid;
	uint32_t tid;
};

/* Encodes ROW as a frame into OUT; its length, or 0 when ROOM is too small. */
static inline size_t lg_encode_gpu_collector_thread(uint8_t *out, size_t room, const struct lg_gpu_collector_thread_row *row)
{
	struct lg_wire w;
	lg_wire_begin(&w, out, room, LG_FRAME_GPU_COLLECTOR_THREAD);
	lg_wire_u64(&w, row->ts_ns);
	lg_wire_u32(&w, row->pid);
	lg_wire_u32(&w, row->tid);
	return lg_wire_end(&w);
}

#endif /* LAUNCHGAP_GPU_WIRE_H */
