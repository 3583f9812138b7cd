/*
 * launchgap's CUPTI activity collector.
 *
 * `launchgap record --gpu-activity` starts the command with CUDA_INJECTION64_PATH naming
 * this library: NVIDIA's driver loads it at cuInit and calls InitializeInjection(), once
 * in each process (Nsight Systems' agents get in the same way). It loads CUPTI (the
 * library LAUNCHGAP_CUPTI names: the recorder found it and checked it loads), enables
 * activity records for kernels (concurrent kind: kernels are not serialised), graphs,
 * copies, memsets and synchronisations, and API records for the calls that make them,
 * converts every timestamp to the recorder's clock (CLOCK_MONOTONIC), and writes each
 * record as one frame of the collector channel (schema/trace.toml [collector]; the
 * encoders are generated into gpu_wire.h) to a file of its own in LAUNCHGAP_GPU_CHANNEL.
 * The recorder reads those files as they grow and writes the trace; nothing here writes
 * the trace itself.
 *
 * Built against NVIDIA's CUPTI 12.9 headers (the nvidia-cuda-cupti-cu12 wheel, fetched
 * by scripts/fetch_real_cuda.sh), so every record is read at the real layout's offsets;
 * CUPTI itself is opened at run time and its newer entry points are used where present.
 *
 * A profiler in the workload that uses CUPTI too (torch.profiler) is kept apart from the
 * collector, neither losing its data (cupti_clients.h), and each time it touches CUPTI's
 * process-wide state is a `contended` row. Nothing is lost silently: records CUPTI drops, and
 * frames that could not be written, become `lost` rows; the `stopped` row at exit says everything was flushed, and a
 * process that never writes one (killed, or ended by _exit) is counted by the recorder.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "gpu_wire.h"

#define EXPORT __attribute__((visibility("default")))

/* CUPTI hands back buffers of this size, full or at a flush; a few MB is what profilers use */
#define BUFFER_BYTES (2u << 20)
/* and flushes at least this often, so the recorder sees GPU activity while it runs */
#define FLUSH_PERIOD_MS 500u
/* a channel file is closed at this size and the next one started; the recorder removes read ones
 * (the schema's [collector] file_bytes: the recorder reads no file past it plus the staging buffer) */
#define CHANNEL_FILE_BYTES LG_WIRE_FILE_BYTES
/* frames are gathered and written together, the buffer whole */
#define STAGING_BYTES LG_WIRE_STAGING_BYTES

/* ---- CUPTI, opened at run time ------------------------------------------ */

/* The entry points the collector needs (required) and those newer CUPTIs have (optional). */
static struct {
    CUptiResult (*get_version)(uint32_t *);
    CUptiResult (*get_result_string)(CUptiResult, const char **);
    CUptiResult (*get_timestamp)(uint64_t *);
    CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*get_next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*get_dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*get_callback_name)(CUpti_CallbackDomain, uint32_t, const char **);
    /* optional */
    CUptiResult (*register_timestamp_callback)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t);
    CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t);
    CUptiResult (*flush_period)(uint32_t);
} cupti;

/* The calls whose API records are kept: every one that makes GPU work or waits for it. */
struct api_call {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
};

#define D(name) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name}
#define R(name) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name}
static const struct api_call kept_calls[] = {
    /* launches */
    D(cuLaunchKernel), D(cuLaunchKernel_ptsz), D(cuLaunchKernelEx), D(cuLaunchKernelEx_ptsz),
    D(cuLaunchCooperativeKernel), D(cuLaunchCooperativeKernel_ptsz), D(cuLaunchCooperativeKernelMultiDevice),
    D(cuGraphLaunch), D(cuGraphLaunch_ptsz), D(cuLaunch), D(cuLaunchGrid), D(cuLaunchGridAsync),
    R(cudaLaunchKernel_v7000), R(cudaLaunchKernel_ptsz_v7000), R(cudaLaunchKernelExC_v11060),
    R(cudaLaunchKernelExC_ptsz_v11060), R(cudaLaunchCooperativeKernel_v9000),
    R(cudaLaunchCooperativeKernel_ptsz_v9000), R(cudaGraphLaunch_v10000), R(cudaGraphLaunch_ptsz_v10000),
    /* copies and memsets */
    D(cuMemcpy), D(cuMemcpyAsync), D(cuMemcpy_ptds), D(cuMemcpyAsync_ptsz), D(cuMemcpyHtoD_v2),
    D(cuMemcpyHtoDAsync_v2), D(cuMemcpyDtoH_v2), D(cuMemcpyDtoHAsync_v2), D(cuMemcpyDtoD_v2),
    D(cuMemcpyDtoDAsync_v2), D(cuMemcpyHtoD_v2_ptds), D(cuMemcpyDtoH_v2_ptds), D(cuMemcpyHtoDAsync_v2_ptsz),
    D(cuMemcpyDtoHAsync_v2_ptsz), D(cuMemcpyDtoD_v2_ptds), D(cuMemcpyDtoDAsync_v2_ptsz), D(cuMemsetD8_v2),
    D(cuMemsetD32_v2), D(cuMemsetD8Async), D(cuMemsetD32Async), D(cuMemsetD8_v2_ptds), D(cuMemsetD32_v2_ptds),
    D(cuMemsetD8Async_ptsz), D(cuMemsetD32Async_ptsz),
    R(cudaMemcpy_v3020), R(cudaMemcpy_ptds_v7000), R(cudaMemcpyAsync_v3020), R(cudaMemcpyAsync_ptsz_v7000),
    R(cudaMemset_v3020), R(cudaMemsetAsync_v3020), R(cudaMemset_ptds_v7000), R(cudaMemsetAsync_ptsz_v7000),
    /* waits */
    D(cuStreamSynchronize), D(cuStreamSynchronize_ptsz), D(cuCtxSynchronize), D(cuEventSynchronize),
    D(cuStreamWaitEvent), D(cuStreamWaitEvent_ptsz),
    R(cudaStreamSynchronize_v3020), R(cudaStreamSynchronize_ptsz_v7000), R(cudaDeviceSynchronize_v3020),
    R(cudaEventSynchronize_v3020), R(cudaStreamWaitEvent_v3020), R(cudaStreamWaitEvent_ptsz_v7000),
};
#undef D
#undef R
#define KEPT_CALLS (sizeof(kept_calls) / sizeof(kept_calls[0]))

/* The activity kinds enabled, and whether the collection fails without one. */
static const struct {
    CUpti_ActivityKind kind;
    const char *name;
    int required;
} activity_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "concurrent_kernel", 1},
    {CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graph_trace", 0},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", 0},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memset", 0},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization", 0},
};
#define ACTIVITY_KINDS (sizeof(activity_kinds) / sizeof(activity_kinds[0]))

/* ---- state ------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t pid;             /* the process this state belongs to (0: not started here) */
    int fd;                /* the channel file being written */
    unsigned file_seq;
    uint64_t file_bytes;
    const char *channel;
    int64_t clock_offset_ns; /* CUPTI's clock minus CLOCK_MONOTONIC (0 with the timestamp callback) */
    const char *clock_method;
    uint64_t clock_error_ns;
    int api_by_kind;       /* API records enabled wholesale (older CUPTI): keep only kept_calls */
    uint64_t frames;       /* rows written */
    uint64_t unwritten;    /* rows that could not be written (the channel failed) */
    uint64_t dropped;      /* records CUPTI dropped */
    uint64_t drops_since_ns;
    uint64_t cpu_ns;       /* CPU spent turning CUPTI's buffers into frames and writing them */
    uint8_t staging[STAGING_BYTES];
    size_t staged;
} state = {.fd = -1};

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI's timestamp callback: every CUPTI time on the recorder's clock. */
static uint64_t CUPTIAPI monotonic_timestamp(void) { return monotonic_ns(); }

static const char *result_text(CUptiResult result)
{
    const char *text = NULL;
    if (cupti.get_result_string && cupti.get_result_string(result, &text) == CUPTI_SUCCESS && text)
        return text;
    return "an unknown CUPTI error";
}

/* ---- the channel -------------------------------------------------------------- */

static int open_channel_file(void)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%d-%06u.lgc", state.channel, (int)state.pid, state.file_seq);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -1;
    state.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    state.file_bytes = 0;
    return state.fd;
}

/* Writes everything staged (lock held); on failure the rows it held are counted as unwritten. */
static void write_staged(uint64_t rows_staged)
{
    size_t at = 0;
    while (state.fd >= 0 && at < state.staged) {
        ssize_t n = write(state.fd, state.staging + at, state.staged - at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        at += (size_t)n;
    }
    if (at < state.staged)
        state.unwritten += rows_staged;
    state.file_bytes += at;
    state.staged = 0;
    if (state.fd >= 0 && state.file_bytes >= CHANNEL_FILE_BYTES) {
        /* the next file first: the recorder removes a file once a later one exists and it read it all */
        int old = state.fd;
        state.file_seq++;
        if (open_channel_file() < 0)
            state.fd = -1;
        close(old);
    }
}

/* Rows staged since the last write. */
static uint64_t staged_rows;

/* Stages one frame (lock held), writing first when the staging buffer is full. */
static void stage(size_t (*encode)(uint8_t *, size_t, const void *), const void *row)
{
    size_t n;
    if (STAGING_BYTES - state.staged < LG_WIRE_MAX_FRAME) {
        write_staged(staged_rows);
        staged_rows = 0;
    }
    n = encode(state.staging + state.staged, STAGING_BYTES - state.staged, row);
    if (!n) { /* cannot happen: strings are cut to fit */
        state.unwritten++;
        return;
    }
    state.staged += n;
    state.frames++;
    staged_rows++;
}

static void flush_staged(void)
{
    write_staged(staged_rows);
    staged_rows = 0;
}

#define STAGE(kind, row) stage((size_t (*)(uint8_t *, size_t, const void *))lg_encode_##kind, (row))

/* A gpu_collector row; DETAIL is JSON. Lock held. */
static void stage_state(int state_index, const char *detail)
{
    struct lg_gpu_collector_row row = {.ts_ns = monotonic_ns(), .pid = (uint32_t)state.pid,
                                       .state = lg_collector_state_names[state_index], .detail = detail};
    STAGE(gpu_collector, &row);
}

enum { STARTED, STOPPED, FAILED, CONTENDED };

/* ---- records into rows --------------------------------------------------------- */

static uint64_t on_trace_clock(uint64_t cupti_ns) { return (uint64_t)((int64_t)cupti_ns - state.clock_offset_ns); }

/* The API's name as the trace names it: CUPTI's callback name, less the runtime's version tag. */
static const char *api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, char *out, size_t room)
{
    const char *name = NULL;
    size_t n;
    if (!cupti.get_callback_name || cupti.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) {
        snprintf(out, room, "%s#%u", domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", cbid);
        return out;
    }
    snprintf(out, room, "%s", name);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) { /* cudaLaunchKernel_v7000 -> cudaLaunchKernel */
        char *tag = strrchr(out, '_');
        if (tag && tag[1] == 'v' && (n = strspn(tag + 2, "0123456789")) >= 4 && tag[2 + n] == '\0')
            *tag = '\0';
    }
    return out;
}

static int kept(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < KEPT_CALLS; i++)
        if (kept_calls[i].domain == domain && kept_calls[i].cbid == cbid)
            return 1;
    return 0;
}

static void convert(const CUpti_Activity *record)
{
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel9 *k = (const CUpti_ActivityKernel9 *)record;
        struct lg_gpu_kernel_row row = {
            .ts_ns = on_trace_clock(k->start), .end_ns = on_trace_clock(k->end), .pid = (uint32_t)state.pid,
            .device_id = k->deviceId, .context_id = k->contextId, .stream_id = k->streamId,
            .correlation_id = k->correlationId, .kernel_name = k->name ? k->name : "",
            .grid_x = (uint32_t)k->gridX, .grid_y = (uint32_t)k->gridY, .grid_z = (uint32_t)k->gridZ,
            .block_x = (uint32_t)k->blockX, .block_y = (uint32_t)k->blockY, .block_z = (uint32_t)k->blockZ,
            .shared_mem = (uint32_t)k->dynamicSharedMemory, .has_graph_id = k->graphId != 0,
            .graph_id = k->graphId};
        STAGE(gpu_kernel, &row);
        break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
        const CUpti_ActivityGraphTrace2 *g = (const CUpti_ActivityGraphTrace2 *)record;
        struct lg_gpu_graph_row row = {
            .ts_ns = on_trace_clock(g->start), .end_ns = on_trace_clock(g->end), .pid = (uint32_t)state.pid,
            .device_id = g->deviceId, .context_id = g->contextId, .stream_id = g->streamId,
            .correlation_id = g->correlationId, .graph_id = g->graphId};
        STAGE(gpu_graph, &row);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)record;
        struct lg_gpu_memcpy_row row = {
            .ts_ns = on_trace_clock(m->start), .end_ns = on_trace_clock(m->end), .pid = (uint32_t)state.pid,
            .device_id = m->deviceId, .context_id = m->contextId, .stream_id = m->streamId,
            .correlation_id = m->correlationId,
            .copy_kind = lg_copy_kind_names[m->copyKind < LG_COPY_KIND_COUNT ? m->copyKind : 0],
            .bytes = m->bytes};
        STAGE(gpu_memcpy, &row);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)record;
        struct lg_gpu_memset_row row = {
            .ts_ns = on_trace_clock(m->start), .end_ns = on_trace_clock(m->end), .pid = (uint32_t)state.pid,
            .device_id = m->deviceId, .context_id = m->contextId, .stream_id = m->streamId,
            .correlation_id = m->correlationId, .bytes = m->bytes};
        STAGE(gpu_memset, &row);
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)record;
        struct lg_gpu_sync_row row = {
            .ts_ns = on_trace_clock(s->start), .end_ns = on_trace_clock(s->end), .pid = (uint32_t)state.pid,
            .context_id = s->contextId, .correlation_id = s->correlationId,
            .has_stream_id = s->streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE, .stream_id = s->streamId,
            .sync_type = lg_sync_type_names[(uint32_t)s->type < LG_SYNC_TYPE_COUNT ? s->type : 0]};
        STAGE(gpu_sync, &row);
        break;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)record;
        CUpti_CallbackDomain domain =
            record->kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
        char name[128];
        struct lg_gpu_api_row row;
        if (state.api_by_kind && !kept(domain, a->cbid))
            break;
        row = (struct lg_gpu_api_row){
            .ts_ns = on_trace_clock(a->start), .end_ns = on_trace_clock(a->end), .pid = a->processId,
            .tid = a->threadId, .api = api_name(domain, a->cbid, name, sizeof(name)),
            .correlation_id = a->correlationId, .return_code = (int32_t)a->returnValue};
        STAGE(gpu_api, &row);
        break;
    }
    default:
        break;
    }
}

/*
 * The records CUPTI dropped since it was last asked. Asked with the collector's lock NOT held:
 * CUPTI may ask for a buffer (buffer_requested, which takes that lock) while it holds a lock of
 * its own, the one this call takes, so asking here under ours deadlocks the two threads (seen:
 * cudasim's CUPTI asks for a buffer under its lock, and a recording beside stress-ng hung with
 * the application thread in buffer_requested and CUPTI's in buffer_completed).
 */
static size_t dropped_since_asked(CUcontext context, uint32_t stream_id)
{
    size_t dropped = 0;
    if (cupti.get_dropped(context, stream_id, &dropped) != CUPTI_SUCCESS)
        return 0;
    return dropped;
}

/* Records DROPPED (dropped_since_asked) as a lost row. Lock held. */
static void stage_drops(size_t dropped)
{
    uint64_t now = monotonic_ns();
    char detail[64];
    if (!dropped)
        return;
    /* the process, so the recorder counts these records' launches lost once, not again as undelivered */
    snprintf(detail, sizeof(detail), "{\"cause\": \"cupti_dropped\", \"pid\": %d}", (int)getpid());
    state.dropped += dropped;
    struct lg_lost_row row = {.ts_ns = now, .lost_event = "gpu_activity", .lost_count = dropped,
                              .since_ns = state.drops_since_ns, .has_detail = 1, .detail = detail};
    STAGE(lost, &row);
    state.drops_since_ns = now;
}

/* ---- the collector's threads ------------------------------------------------------- */

/*
 * CUPTI hands full buffers back on a thread of its own (its periodic flush), and the
 * collector's work there is the cost of measuring, not the workload's: the recorder is
 * told that thread's id once, so the report never names it a culprit. A flush someone
 * calls (the collector at exit, a profiler in the workload) delivers on the caller's own
 * thread instead, an application thread: such deliveries name no thread.
 */
#define NAMED_THREADS 16
static __thread int flushing_here;
static pid_t named_threads[NAMED_THREADS];
static int n_named_threads;

/* A flush of every buffer, delivered on this thread. */
static void flush_all_here(void)
{
    flushing_here++;
    cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    flushing_here--;
}

/* Says, once, that the calling thread is one CUPTI delivers buffers on (lock held). */
static void name_delivering_thread(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (flushing_here)
        return;
    for (int i = 0; i < n_named_threads; i++)
        if (named_threads[i] == tid)
            return;
    if (n_named_threads == NAMED_THREADS)
        return;
    named_threads[n_named_threads++] = tid;
    struct lg_gpu_collector_thread_row row = {.ts_ns = monotonic_ns(), .pid = (uint32_t)state.pid,
                                              .tid = (uint32_t)tid};
    STAGE(gpu_collector_thread, &row);
}

/* ---- another CUPTI client in the process ------------------------------------------ */

#include "cupti_clients.h"

/* ---- CUPTI's buffer callbacks ---------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *memory = NULL;
    CUpti_BuffersCallbackRequestFunc theirs;
    pthread_mutex_lock(&lock);
    theirs = collecting() && client.complete ? client.request : NULL;
    pthread_mutex_unlock(&lock);
    if (theirs) {
        /* the other client's memory, as it expects to get back: read here first, then handed to it */
        theirs(buffer, size, max_records);
        pthread_mutex_lock(&lock);
        if (*buffer && !remember_buffer(*buffer)) /* cannot happen: CUPTI holds a few buffers at a time */
            *size = 0;
        pthread_mutex_unlock(&lock);
        return;
    }
    *max_records = 0;
    if (posix_memalign(&memory, 8, BUFFER_BYTES) != 0) /* CUPTI then drops, and counts */
        memory = NULL;
    *buffer = memory;
    *size = memory ? BUFFER_BYTES : 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    CUpti_Activity *record = NULL;
    CUpti_BuffersCallbackCompleteFunc theirs = NULL;
    size_t theirs_valid = 0;
    uint64_t cpu_before = thread_cpu_ns();
    /* state.pid read unlocked here: set before CUPTI has these callbacks; a delivery racing the stop, which
     * clears it, asks CUPTI once more, harmlessly, and the check under the lock below decides */
    size_t dropped = state.pid == getpid() ? dropped_since_asked(context, stream_id) : 0;
    pthread_mutex_lock(&lock);
    if (state.pid == getpid()) {
        name_delivering_thread();
        if (client.timestamp) /* records on the other client's clock: its offset now, as it drifts */
            measure_client_clock();
        while (valid && cupti.get_next_record(buffer, valid, &record) == CUPTI_SUCCESS)
            convert(record);
        stage_drops(dropped);
        flush_staged();
        state.cpu_ns += thread_cpu_ns() - cpu_before;
    }
    if (was_clients(buffer)) {
        theirs = client.complete;
        theirs_valid = keep_clients_records(buffer, valid);
    }
    pthread_mutex_unlock(&lock);
    if (theirs)
        theirs(context, stream_id, buffer, size, theirs_valid);
    else
        free(buffer);
}

/* ---- the clock ------------------------------------------------------------------ */

/*
 * CUPTI's clock against CLOCK_MONOTONIC: the CUPTI reading taken between two monotonic
 * ones in the narrowest of several tries; the offset is at the middle, and wrong by at
 * most half the width.
 */
static void measure_offset(int64_t *offset_ns, uint64_t *error_ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 32; i++) {
        uint64_t reading = 0, before = monotonic_ns();
        if (cupti.get_timestamp(&reading) != CUPTI_SUCCESS)
            continue;
        uint64_t after = monotonic_ns();
        if (after - before < best) {
            best = after - before;
            *offset_ns = (int64_t)(reading - (before + best / 2));
            *error_ns = (best + 1) / 2;
        }
    }
}

/* Puts CUPTI's times on the recorder's clock; returns 0 or fills WHY. Lock held. */
static int align_clock(char *why, size_t room)
{
    int64_t residual = 0;
    uint64_t width = 0;
    if (cupti.register_timestamp_callback) {
        CUptiResult r = cupti.register_timestamp_callback(monotonic_timestamp);
        if (r == CUPTI_SUCCESS) {
            /* CUPTI now reads our clock: what is left is how far its readings stray from it */
            measure_offset(&residual, &width);
            state.clock_method = "timestamp_callback";
            state.clock_offset_ns = 0;
            state.clock_error_ns = (uint64_t)(residual < 0 ? -residual : residual) + width;
            return 0;
        }
    }
    if (!cupti.get_timestamp) {
        snprintf(why, room, "CUPTI has no timestamp callback and no cuptiGetTimestamp");
        return -1;
    }
    measure_offset(&state.clock_offset_ns, &state.clock_error_ns);
    state.clock_method = "measured_offset";
    return 0;
}

/* ---- start and stop ------------------------------------------------------------- */

#define REQUIRE(field, symbol)                                                   \
    do {                                                                         \
        *(void **)(&cupti.field) = dlsym(library, symbol);                       \
        if (!cupti.field) {                                                      \
            snprintf(why, room, "%s lacks %s: not a CUPTI this collector can use", path, symbol); \
            return -1;                                                           \
        }                                                                        \
    } while (0)
#define OPTIONAL(field, symbol) (*(void **)(&cupti.field) = dlsym(library, symbol))

static int load_cupti(const char *path, char *why, size_t room)
{
    void *library;
    if (!path || !*path) {
        snprintf(why, room, "LAUNCHGAP_CUPTI names no CUPTI library");
        return -1;
    }
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(why, room, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    /* the list the recorder checked too (schema/trace.toml [collector] cupti_required) */
    static const char *const required[] = {LG_CUPTI_REQUIRED};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!dlsym(library, required[i])) {
            snprintf(why, room, "%s lacks %s: not a CUPTI this collector can use", path, required[i]);
            return -1;
        }
    }
    REQUIRE(get_version, "cuptiGetVersion");
    REQUIRE(get_result_string, "cuptiGetResultString");
    REQUIRE(get_timestamp, "cuptiGetTimestamp");
    REQUIRE(set_thread_id_type, "cuptiSetThreadIdType");
    REQUIRE(register_callbacks, "cuptiActivityRegisterCallbacks");
    REQUIRE(enable, "cuptiActivityEnable");
    REQUIRE(get_next_record, "cuptiActivityGetNextRecord");
    REQUIRE(get_dropped, "cuptiActivityGetNumDroppedRecords");
    REQUIRE(flush_all, "cuptiActivityFlushAll");
    OPTIONAL(get_callback_name, "cuptiGetCallbackName");
    OPTIONAL(register_timestamp_callback, "cuptiActivityRegisterTimestampCallback");
    OPTIONAL(enable_driver_api, "cuptiActivityEnableDriverApi");
    OPTIONAL(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
    OPTIONAL(flush_period, "cuptiActivityFlushPeriod");
    return 0;
}

/* JSON string content: the characters JSON needs escaped, escaped. */
static void json_text(char *out, size_t room, const char *text)
{
    size_t at = 0;
    for (; *text && at + 7 < room; text++) {
        unsigned char c = (unsigned char)*text;
        if (c == '"' || c == '\\')
            at += (size_t)snprintf(out + at, room - at, "\\%c", c);
        else if (c < 0x20)
            at += (size_t)snprintf(out + at, room - at, "\\u%04x", c);
        else
            out[at++] = (char)c;
    }
    out[at] = '\0';
}

static void fail(const char *why)
{
    char text[1024], detail[1200];
    json_text(text, sizeof(text), why);
    snprintf(detail, sizeof(detail), "{\"reason\": \"%s\"}", text);
    stage_state(FAILED, detail);
    flush_staged();
}

/* Enables what is collected; 0, or -1 with WHY. Lock held. */
static int enable_activity(char *kinds_json, size_t room, char *why, size_t why_room)
{
    size_t at = 0;
    at += (size_t)snprintf(kinds_json + at, room - at, "[");
    for (size_t i = 0; i < ACTIVITY_KINDS; i++) {
        CUptiResult r = cupti.enable(activity_kinds[i].kind);
        if (r != CUPTI_SUCCESS && activity_kinds[i].required) {
            snprintf(why, why_room, "cuptiActivityEnable(%s) failed: %s", activity_kinds[i].name, result_text(r));
            return -1;
        }
        if (r == CUPTI_SUCCESS)
            at += (size_t)snprintf(kinds_json + at, room - at, "%s\"%s\"", at > 1 ? ", " : "",
                                   activity_kinds[i].name);
    }
    if (cupti.enable_driver_api && cupti.enable_runtime_api) {
        /* only the calls that make GPU work: the per-call cost stays off every other call */
        for (size_t i = 0; i < KEPT_CALLS; i++) {
            if (kept_calls[i].domain == CUPTI_CB_DOMAIN_DRIVER_API)
                cupti.enable_driver_api(kept_calls[i].cbid, 1);
            else
                cupti.enable_runtime_api(kept_calls[i].cbid, 1);
        }
        at += (size_t)snprintf(kinds_json + at, room - at, "%s\"api_by_call\"", at > 1 ? ", " : "");
    } else {
        CUptiResult driver = cupti.enable(CUPTI_ACTIVITY_KIND_DRIVER);
        CUptiResult runtime = cupti.enable(CUPTI_ACTIVITY_KIND_RUNTIME);
        if (driver != CUPTI_SUCCESS && runtime != CUPTI_SUCCESS) {
            snprintf(why, why_room, "cuptiActivityEnable(driver and runtime API) failed: %s", result_text(driver));
            return -1;
        }
        state.api_by_kind = 1;
        at += (size_t)snprintf(kinds_json + at, room - at, "%s\"api_by_kind\"", at > 1 ? ", " : "");
    }
    snprintf(kinds_json + at, room - at, "]");
    return 0;
}

static void stop(void)
{
    char detail[512];
    int64_t offset_end = 0;
    uint64_t error_end = 0;

    if (!state.pid || state.pid != getpid())
        return;
    /* forced: every buffer CUPTI holds, full or not, comes back now (into buffer_completed) */
    flush_all_here();
    size_t dropped = dropped_since_asked(NULL, 0);
    pthread_mutex_lock(&lock);
    if (strcmp(state.clock_method, "measured_offset") == 0)
        measure_offset(&offset_end, &error_end);
    stage_drops(dropped);
    snprintf(detail, sizeof(detail),
             "{\"rows\": %" PRIu64 ", \"unwritten\": %" PRIu64 ", \"dropped\": %" PRIu64
             ", \"cpu_ns\": %" PRIu64 ", \"clock_offset_end_ns\": %" PRId64 ", \"clock_error_end_ns\": %" PRIu64 "}",
             state.frames, state.unwritten, state.dropped, state.cpu_ns, offset_end, error_end);
    stage_state(STOPPED, detail);
    flush_staged();
    if (state.fd >= 0)
        close(state.fd);
    state.fd = -1;
    state.pid = 0;
    pthread_mutex_unlock(&lock);
}

/* A forked child's state is its parent's: it starts afresh when it initialises CUDA. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    if (state.fd >= 0)
        close(state.fd);
    state.fd = -1;
    state.pid = 0;
    state.staged = 0;
    staged_rows = 0;
}

static int start(void)
{
    char why[1024] = "", kinds[256], cupti_path[1024], detail[2048];
    uint32_t version = 0;
    const char *path = getenv("LAUNCHGAP_CUPTI");
    static int atexit_set;

    state.pid = getpid();
    state.channel = getenv("LAUNCHGAP_GPU_CHANNEL");
    state.file_seq = 1;
    state.frames = state.unwritten = state.dropped = state.cpu_ns = 0;
    state.drops_since_ns = monotonic_ns();
    if (!state.channel || open_channel_file() < 0) {
        /* no channel, no way to tell the recorder: the one place the workload's stderr hears from us */
        fprintf(stderr, "launchgap collector (pid %d): cannot write to the channel %s: %s; GPU activity is "
                        "not recorded for this process\n",
                (int)state.pid, state.channel ? state.channel : "(LAUNCHGAP_GPU_CHANNEL is not set)",
                strerror(errno));
        state.pid = 0;
        return 0;
    }
    if (load_cupti(path, why, sizeof(why)) < 0 || cupti.get_version(&version) != CUPTI_SUCCESS ||
        (cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), 0) || align_clock(why, sizeof(why)) < 0 ||
        enable_activity(kinds, sizeof(kinds), why, sizeof(why)) < 0) {
        if (!why[0])
            snprintf(why, sizeof(why), "cuptiGetVersion failed");
        fail(why);
        close(state.fd);
        state.fd = -1;
        state.pid = 0;
        return 0;
    }
    {
        CUptiResult r = cupti.register_callbacks(buffer_requested, buffer_completed);
        if (r != CUPTI_SUCCESS) {
            snprintf(why, sizeof(why), "cuptiActivityRegisterCallbacks failed: %s", result_text(r));
            fail(why);
            close(state.fd);
            state.fd = -1;
            state.pid = 0;
            return 0;
        }
    }
    if (cupti.flush_period)
        cupti.flush_period(FLUSH_PERIOD_MS);
    json_text(cupti_path, sizeof(cupti_path), path);
    snprintf(detail, sizeof(detail),
             "{\"cupti\": \"%s\", \"cupti_version\": %u, \"clock\": {\"method\": \"%s\", \"offset_ns\": %" PRId64
             ", \"error_ns\": %" PRIu64 "}, \"kinds\": %s, \"flush_period_ms\": %u}",
             cupti_path, version, state.clock_method, state.clock_offset_ns, state.clock_error_ns, kinds,
             cupti.flush_period ? FLUSH_PERIOD_MS : 0);
    stage_state(STARTED, detail);
    flush_staged();
    if (!atexit_set) {
        atexit(stop);
        pthread_atfork(NULL, NULL, after_fork_in_child);
        atexit_set = 1;
    }
    return 1;
}

/* Called by the driver at cuInit, once in each process. */
EXPORT int InitializeInjection(void)
{
    int ok;
    pthread_mutex_lock(&lock);
    ok = state.pid == getpid() ? 1 : start();
    pthread_mutex_unlock(&lock);
    return ok;
}
