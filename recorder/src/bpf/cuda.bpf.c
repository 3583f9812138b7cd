// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA host API, by uprobes. One program per argument layout; the attach
 * cookie says which entry point fired. By default only driver entry points
 * are probed (every launch path ends there), so one launch costs one hit.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "launch_stage.bpf.h"
#include "maps.bpf.h"

/* Offsets of the fields we read from CUlaunchConfig (cuda.h). */
#define LAUNCH_CONFIG_STREAM_OFFSET 32

struct launch_dims {
	__u32 grid[3];
	__u32 block[3];
	__u32 shared_mem;
};

/* A sync in progress on a thread, from its entry probe to its return probe. */
struct sync_start {
	__u64 ts_ns;
	__u64 stream;
	__u64 bytes;
	__u16 api;
	__u16 runtime_api;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_THREADS);
	__type(key, __u32);
	__type(value, struct sync_start);
} syncs_in_progress SEC(".maps");

/* With --api-names: the runtime entry point a thread is inside, until its driver call. */
struct runtime_call {
	__u64 ts_ns;
	__u16 api;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_THREADS);
	__type(key, __u32);
	__type(value, struct runtime_call);
} runtime_call SEC(".maps");

/* The skeleton's Rust types for the records, which the recorder checks its own against. */
struct launch_event launch_event_layout = {};
struct launch_batch launch_batch_layout = {};
struct sync_event sync_event_layout = {};
struct runtime_only_event runtime_only_event_layout = {};

static __always_inline bool traced_thread(__u32 *pid, __u32 *tid)
{
	__u64 id = bpf_get_current_pid_tgid();
	*pid = id >> 32;
	*tid = (__u32)id;
	return system_mode || is_target(*pid, *tid);
}

static __always_inline __u16 take_runtime_call(__u32 tid)
{
	struct runtime_call *call;
	__u16 out = 0;

	if (!api_names)
		return 0; /* no runtime probes: skip a map lookup on every launch */
	call = bpf_map_lookup_elem(&runtime_call, &tid);
	if (call) {
		out = call->api;
		bpf_map_delete_elem(&runtime_call, &tid);
	}
	return out;
}

static __always_inline void fill_launch(struct launch_event *e, __u64 func, __u64 stream,
					const struct launch_dims *dims, __u32 tid, struct pt_regs *ctx)
{
	e->func = func;
	e->stream = stream;
	__builtin_memcpy(e->grid, dims->grid, sizeof(e->grid));
	__builtin_memcpy(e->block, dims->block, sizeof(e->block));
	e->shared_mem = dims->shared_mem;
	e->api = (__u16)bpf_get_attach_cookie(ctx);
	e->runtime_api = take_runtime_call(tid);
}

/*
 * A launch goes into the thread's stage (written out LAUNCH_BATCH_SIZE at a
 * time); only when the thread has no stage (storage could not be allocated)
 * does it take a ring-buffer record of its own.
 */
static __always_inline int emit_launch(__u64 func, __u64 stream, const struct launch_dims *dims,
				       __u32 pid, __u32 tid, struct pt_regs *ctx)
{
	struct launch_batch *stage = own_stage(true);
	struct launch_event *e;
	__u32 n;

	if (stage) {
		n = stage->count;
		if (n >= LAUNCH_BATCH_SIZE) {
			/* a full stage is flushed at once, so this does not happen; never drop silently if it does */
			flush_launches(stage, pid, tid);
			n = 0;
		}
		e = &stage->launches[n];
		e->hdr.ts_ns = bpf_ktime_get_ns();
		e->hdr.type = EVENT_LAUNCH;
		e->hdr.cpu = bpf_get_smp_processor_id();
		e->hdr.pid = pid;
		e->hdr.tid = tid;
		fill_launch(e, func, stream, dims, tid, ctx);
		stage->count = n + 1;
		if (n + 1 == LAUNCH_BATCH_SIZE)
			flush_launches(stage, pid, tid);
		return 0;
	}
	e = reserve_event(sizeof(*e), EVENT_LAUNCH, bpf_ktime_get_ns(), pid, tid);
	if (!e)
		return 0;
	fill_launch(e, func, stream, dims, tid, ctx);
	submit_event(e, sizeof(*e));
	return 0;
}

/*
 * cuLaunchKernel and cuLaunchCooperativeKernel (and _ptsz): f, gridDim x/y/z,
 * blockDim x/y in registers; blockDimZ, sharedMemBytes, hStream on the stack.
 */
SEC("uprobe")
int BPF_UPROBE(launch_kernel, void *f, __u32 gx, __u32 gy, __u32 gz, __u32 bx, __u32 by)
{
	struct {
		__u64 block_z;
		__u64 shared_mem;
		__u64 stream;
	} stack_args = {};
	struct launch_dims dims = {.grid = {gx, gy, gz}};
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	/* at entry the return address is at sp; argument 7 follows it */
	bpf_probe_read_user(&stack_args, sizeof(stack_args), (void *)(PT_REGS_SP(ctx) + 8));
	dims.block[0] = bx;
	dims.block[1] = by;
	dims.block[2] = (__u32)stack_args.block_z;
	dims.shared_mem = (__u32)stack_args.shared_mem;
	return emit_launch((__u64)f, stack_args.stream, &dims, pid, tid, ctx);
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, ...) (and _ptsz). */
SEC("uprobe")
int BPF_UPROBE(launch_kernel_ex, void *config, void *f)
{
	struct launch_dims dims = {};
	__u64 stream = 0;
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	/* gridDimX..sharedMemBytes are the config's first seven 32-bit fields */
	bpf_probe_read_user(&dims, sizeof(dims), config);
	bpf_probe_read_user(&stream, sizeof(stream), config + LAUNCH_CONFIG_STREAM_OFFSET);
	return emit_launch((__u64)f, stream, &dims, pid, tid, ctx);
}

/* cuGraphLaunch(CUgraphExec, CUstream) (and _ptsz): no geometry of its own. */
SEC("uprobe")
int BPF_UPROBE(graph_launch, void *exec, void *stream)
{
	struct launch_dims dims = {};
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	return emit_launch((__u64)exec, (__u64)stream, &dims, pid, tid, ctx);
}

/* Runtime entry points (opt-in): remember the name for the driver call that follows. */
SEC("uprobe")
int BPF_UPROBE(runtime_entry)
{
	struct runtime_call call = {.api = (__u16)bpf_get_attach_cookie(ctx)};
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	call.ts_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&runtime_call, &tid, &call, BPF_ANY);
	return 0;
}

/*
 * The runtime call returns. Its driver call took the name on the way; a name
 * still here means it reached no probed driver entry point: record it, so a
 * launch that failed inside the runtime does not vanish (and the name is not
 * left for an unrelated driver call to take).
 */
SEC("uretprobe")
int BPF_URETPROBE(runtime_exit, long ret)
{
	struct runtime_only_event *e;
	struct runtime_call *call;
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	call = bpf_map_lookup_elem(&runtime_call, &tid);
	if (!call)
		return 0;
	e = reserve_event(sizeof(*e), EVENT_RUNTIME_ONLY, call->ts_ns, pid, tid);
	if (e) {
		e->duration_ns = bpf_ktime_get_ns() - call->ts_ns;
		e->return_code = (__s32)ret;
		e->runtime_api = call->api;
		e->pad = 0;
		submit_event(e, sizeof(*e));
	}
	bpf_map_delete_elem(&runtime_call, &tid);
	return 0;
}

static __always_inline int start_sync(struct pt_regs *ctx, __u64 stream, __u64 bytes)
{
	struct launch_batch *stage;
	struct sync_start s = {};
	__u32 pid, tid;

	if (!traced_thread(&pid, &tid))
		return 0;
	/* the thread is about to wait: its launches go out before it does */
	stage = own_stage(false);
	if (stage)
		flush_launches(stage, pid, tid);
	s.ts_ns = bpf_ktime_get_ns();
	s.stream = stream;
	s.bytes = bytes;
	s.api = (__u16)bpf_get_attach_cookie(ctx);
	s.runtime_api = take_runtime_call(tid);
	bpf_map_update_elem(&syncs_in_progress, &tid, &s, BPF_ANY);
	return 0;
}

/* cuStreamSynchronize(CUstream), cuCtxSynchronize(void), cuEventSynchronize(CUevent) */
SEC("uprobe")
int BPF_UPROBE(sync_enter, void *handle)
{
	return start_sync(ctx, (__u64)handle, 0);
}

/* cuMemcpyHtoD_v2(dst, src, bytes), cuMemcpyDtoH_v2(dst, src, bytes) (and _ptds) */
SEC("uprobe")
int BPF_UPROBE(memcpy_enter, void *dst, void *src, __u64 bytes)
{
	return start_sync(ctx, 0, bytes);
}

SEC("uretprobe")
int BPF_URETPROBE(sync_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct sync_start *s = bpf_map_lookup_elem(&syncs_in_progress, &tid);
	struct sync_event *e;

	if (!s)
		return 0;
	e = reserve_event(sizeof(*e), EVENT_SYNC, s->ts_ns, id >> 32, tid);
	if (e) {
		e->duration_ns = bpf_ktime_get_ns() - s->ts_ns;
		e->stream = s->stream;
		e->bytes = s->bytes;
		e->api = s->api;
		e->runtime_api = s->runtime_api;
		e->pad = 0;
		submit_event(e, sizeof(*e));
	}
	bpf_map_delete_elem(&syncs_in_progress, &tid);
	return 0;
}


/*
 * Run once by the recorder after every probe is detached: writes the
 * launches still staged in any thread (a thread that neither filled its
 * stage, nor synced, nor exited since its last launches).
 */
SEC("iter/task")
int flush_staged_launches(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct launch_batch *stage;

	if (!task)
		return 0;
	stage = bpf_task_storage_get(&launch_stages, task, 0, 0);
	if (stage)
		flush_launches(stage, task->tgid, task->pid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
