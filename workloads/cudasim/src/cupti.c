/*
 * libcupti.so.12 stand-in: the part of CUPTI's activity API that launchgap's collector
 * calls, with CUPTI 12.9's names, signatures and record layouts (include/cupti.h, checked
 * against NVIDIA's headers by tests/cudasim/test_cupti_standin.py). It is fed by the
 * stand-in driver's activity hooks, so every record holds exactly what cudasim's ground
 * truth holds: each kernel's start and end on the virtual GPU, each call's thread and
 * times.
 *
 * What it mirrors of the real library, as its documentation describes it:
 * - records go into buffers the client hands over (bufferRequested) and come back full
 *   (bufferCompleted), from a worker thread of the library's own, or from the thread
 *   that calls cuptiActivityFlushAll; a record with no buffer to go into is dropped and
 *   counted (cuptiActivityGetNumDroppedRecords, reset when read);
 * - timestamps are on a clock of CUPTI's own (here CLOCK_REALTIME, as CUPTI's are on
 *   Linux) unless the client registers a timestamp callback, whose clock they then follow;
 * - every API call has a correlation id, and the GPU work it makes carries it; a runtime
 *   call and the driver call it makes have different ids (a copy carries both);
 * - kernels are CONCURRENT_KERNEL records; a graph is one GRAPH_TRACE record when that
 *   kind is enabled, else one kernel record per node;
 * - API records for single calls can be enabled by callback id
 *   (cuptiActivityEnableDriverApi/RuntimeApi) or for every call by kind.
 * CUDASIM_CUPTI_FAIL=1 in the environment makes enabling activity fail as NVIDIA's CUPTI
 * does beside a driver it cannot work with (CUPTI_ERROR_NOT_INITIALIZED).
 * CUDASIM_CUPTI_DROP_KERNELS=N drops every Nth kernel record (the Nth, 2Nth, ... of the
 * process), counted as CUPTI counts a record it had no buffer for: the dropped-record
 * path of a real CUPTI under a flood, made to happen at a known rate.
 * Built with -DCUDASIM_CUPTI_OLD it is an older CUPTI: no timestamp callback and no
 * per-call API enabling (those symbols are absent), as before CUDA 12.
 * The callback API's subscriber is one per process, as cupti_callbacks.h says of cuptiSubscribe
 * before CUDA 13.3 (or with a driver older than r610): a second cuptiSubscribe before the first
 * unsubscribed fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39, cupti_result.h).
 * Only the subscription is kept (no callback is made): what a second client runs into.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cudasim.h"
#include "cupti.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef CUDASIM_CUPTI_OLD
#define STANDIN_VERSION 17 /* CUDA 11.8's CUPTI_API_VERSION */
#else
#define STANDIN_VERSION CUPTI_API_VERSION
#endif

#define MAX_QUEUED 256
#define CONTEXT_ID 1u

/* Each API the driver reports, as CUPTI names it: domain, callback id, callback name. */
struct api_name {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    const char *name;
};

#define DRIVER(api) [CUSIM_API_##api] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##api, #api},
/* CUPTI names a runtime callback with its API version: cudaLaunchKernel_v7000 */
#define RUNTIME(api, version) \
    [CUSIM_API_##api] = {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##api##_##version, #api "_" #version},

/* every API the driver logs, with its version where CUPTI's name carries one (cudasim_apis.h) */
static const struct api_name api_names[CUSIM_API_COUNT] = {CUSIM_CUPTI_CALLBACKS(DRIVER, RUNTIME)};
#undef DRIVER
#undef RUNTIME

struct full_buffer {
    uint8_t *buffer;
    size_t size;
    size_t valid;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* the worker: buffers queued, or the flush period */
    pthread_cond_t delivered; /* FlushAll: the worker has handed back what it took */
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    int64_t clock_offset_ns; /* output clock minus CLOCK_MONOTONIC */
    int clock_set;
    uint8_t kinds[64];                 /* enabled activity kinds, by CUpti_ActivityKind (those below 64) */
    uint8_t api_enabled[CUSIM_API_COUNT]; /* by cuptiActivityEnableDriverApi/RuntimeApi */
    CUpti_ActivityThreadIdType thread_id_type;
    uint8_t *buffer; /* the buffer being filled */
    size_t size;
    size_t used;
    struct full_buffer queue[MAX_QUEUED];
    int queued;
    int delivering;
    size_t dropped;
    /* CUDASIM_CUPTI_DROP_KERNELS: drop every Nth kernel record (0: none), and the count so far */
    uint64_t drop_every;
    uint64_t kernels_seen;
    uint32_t flush_period_ms;
    int worker_started;
    int hooks_registered;
    uint32_t next_correlation;
    void *subscriber; /* the callback API's one subscriber, or NULL */
} cupti = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
           .delivered = PTHREAD_COND_INITIALIZER};

/* the runtime call in progress on this thread: a copy it makes carries its id too */
static __thread uint32_t runtime_correlation;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* OTHER's reading minus CLOCK_MONOTONIC's, taken between two monotonic reads. */
static int64_t offset_from_monotonic(uint64_t (*other)(void))
{
    uint64_t before = clock_ns(CLOCK_MONOTONIC);
    uint64_t reading = other();
    uint64_t after = clock_ns(CLOCK_MONOTONIC);
    return (int64_t)(reading - (before + (after - before) / 2));
}

static uint64_t realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }

/* CUPTI's clock, as a CLOCK_MONOTONIC time reads on it. Called with the lock held. */
static uint64_t to_cupti_clock(uint64_t monotonic_ns)
{
    if (!cupti.clock_set) {
        cupti.clock_offset_ns = offset_from_monotonic(realtime_ns);
        cupti.clock_set = 1;
    }
    return (uint64_t)((int64_t)monotonic_ns + cupti.clock_offset_ns);
}

static size_t record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel9);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return sizeof(CUpti_ActivityGraphTrace2);
    default: return 0;
    }
}

static size_t aligned(size_t n) { return (n + ACTIVITY_RECORD_ALIGNMENT - 1) & ~(size_t)(ACTIVITY_RECORD_ALIGNMENT - 1); }

static int kind_on(CUpti_ActivityKind kind) { return kind >= 0 && kind < 64 && cupti.kinds[kind]; }

/* ---- buffers ---------------------------------------------------------- */

/* Queues the buffer being filled (if it holds anything) for delivery. Lock held. */
static void retire_buffer(void)
{
    if (!cupti.buffer || !cupti.used)
        return;
    if (cupti.queued == MAX_QUEUED) /* never expected: the worker keeps up */
        return;
    cupti.queue[cupti.queued++] = (struct full_buffer){cupti.buffer, cupti.size, cupti.used};
    cupti.buffer = NULL;
    cupti.size = cupti.used = 0;
    pthread_cond_signal(&cupti.wake);
}

/* Room for a record of BYTES, or NULL (the record is dropped and counted). Lock held. */
static void *claim(size_t bytes)
{
    void *at;
    if (cupti.buffer && cupti.used + aligned(bytes) > cupti.size)
        retire_buffer();
    if (!cupti.buffer) {
        uint8_t *buffer = NULL;
        size_t size = 0, max_records = 0;
        if (cupti.request)
            cupti.request(&buffer, &size, &max_records);
        if (!buffer || size < aligned(bytes) || ((uintptr_t)buffer & (ACTIVITY_RECORD_ALIGNMENT - 1))) {
            cupti.dropped++;
            return NULL;
        }
        cupti.buffer = buffer;
        cupti.size = size;
        cupti.used = 0;
    }
    at = cupti.buffer + cupti.used;
    memset(at, 0, aligned(bytes));
    cupti.used += aligned(bytes);
    return at;
}

static void deliver(const struct full_buffer *full, int count)
{
    for (int i = 0; i < count; i++)
        if (cupti.complete)
            cupti.complete(NULL, 0, full[i].buffer, full[i].size, full[i].valid);
}

/* Takes every queued buffer out of the queue (lock held); the caller delivers them. */
static int take_queue(struct full_buffer *out)
{
    int n = cupti.queued;
    memcpy(out, cupti.queue, (size_t)n * sizeof(*out));
    cupti.queued = 0;
    return n;
}

/* CUPTI's own thread: hands back full buffers, and every flush period the one being filled. */
static void *worker(void *unused)
{
    static struct full_buffer taken[MAX_QUEUED];
    (void)unused;
    /* named, so a trace shows CUPTI's own thread for what it is when it preempts a launching thread */
    pthread_setname_np(pthread_self(), "cupti-worker");
    pthread_mutex_lock(&cupti.lock);
    for (;;) {
        int n;
        if (!cupti.queued) {
            if (cupti.flush_period_ms) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += (long)(cupti.flush_period_ms % 1000) * 1000000L;
                until.tv_sec += cupti.flush_period_ms / 1000 + until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
                if (pthread_cond_timedwait(&cupti.wake, &cupti.lock, &until) == ETIMEDOUT)
                    retire_buffer();
            } else {
                pthread_cond_wait(&cupti.wake, &cupti.lock);
            }
        }
        n = take_queue(taken);
        if (!n)
            continue;
        cupti.delivering++;
        pthread_mutex_unlock(&cupti.lock);
        deliver(taken, n);
        pthread_mutex_lock(&cupti.lock);
        cupti.delivering--;
        pthread_cond_broadcast(&cupti.delivered);
    }
    return NULL;
}

/* Lock held. */
static void start_worker(void)
{
    pthread_t thread;
    if (cupti.worker_started)
        return;
    if (pthread_create(&thread, NULL, worker, NULL) == 0) {
        pthread_detach(thread);
        cupti.worker_started = 1;
    }
}

/* ---- what the driver reports ------------------------------------------ */

static uint32_t thread_id(void)
{
    if (cupti.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return (uint32_t)syscall(SYS_gettid);
    return (uint32_t)pthread_self();
}

static uint32_t on_call_begin(int api)
{
    uint32_t id = __atomic_add_fetch(&cupti.next_correlation, 1, __ATOMIC_RELAXED);
    if (api >= 0 && api < CUSIM_API_COUNT && api_names[api].domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        runtime_correlation = id;
    return id;
}

static void on_call_end(const struct cusim_call *call, uint64_t t_exit_ns, int result)
{
    const struct api_name *name;
    CUpti_ActivityKind kind;
    CUpti_ActivityAPI *rec;

    if (call->api <= 0 || call->api >= CUSIM_API_COUNT)
        return;
    name = &api_names[call->api];
    if (name->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        runtime_correlation = 0;
    kind = name->domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    pthread_mutex_lock(&cupti.lock);
    if ((kind_on(kind) || cupti.api_enabled[call->api]) && (rec = claim(sizeof(*rec)))) {
        rec->kind = kind;
        rec->cbid = name->cbid;
        rec->start = to_cupti_clock(call->t_enter_ns);
        rec->end = to_cupti_clock(t_exit_ns);
        rec->processId = (uint32_t)getpid();
        rec->threadId = thread_id();
        rec->correlationId = call->correlation_id;
        rec->returnValue = (uint32_t)result;
    }
    pthread_mutex_unlock(&cupti.lock);
}

/* Lock held. */
static void kernel_record(const struct cusim_work *work, uint64_t start_ns, uint64_t end_ns, const char *name,
                          uint32_t graph_id, uint64_t graph_node)
{
    CUpti_ActivityKernel9 *rec;
    if (cupti.drop_every && ++cupti.kernels_seen % cupti.drop_every == 0) {
        cupti.dropped++;
        return;
    }
    rec = claim(sizeof(*rec));
    if (!rec)
        return;
    rec->kind = kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                                                : CUPTI_ACTIVITY_KIND_KERNEL;
    rec->start = to_cupti_clock(start_ns);
    rec->end = rec->completed = to_cupti_clock(end_ns);
    rec->deviceId = work->device_id; /* 0, or the rank's device with --ranks */
    rec->contextId = CONTEXT_ID;
    rec->streamId = work->stream_id;
    rec->gridX = (int32_t)work->grid[0];
    rec->gridY = (int32_t)work->grid[1];
    rec->gridZ = (int32_t)work->grid[2];
    rec->blockX = (int32_t)work->block[0];
    rec->blockY = (int32_t)work->block[1];
    rec->blockZ = (int32_t)work->block[2];
    rec->dynamicSharedMemory = (int32_t)work->shared_mem;
    rec->correlationId = work->correlation_id;
    rec->name = name;
    rec->graphId = graph_id;
    rec->graphNodeId = graph_node;
}

static void on_work(const struct cusim_work *work)
{
    int kernels = kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || kind_on(CUPTI_ACTIVITY_KIND_KERNEL);

    pthread_mutex_lock(&cupti.lock);
    switch (work->kind) {
    case CUSIM_WORK_KERNEL:
        if (kernels)
            kernel_record(work, work->start_ns, work->end_ns, work->name, 0, 0);
        break;
    case CUSIM_WORK_GRAPH:
        if (kind_on(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)) {
            CUpti_ActivityGraphTrace2 *rec = claim(sizeof(*rec));
            if (rec) {
                rec->kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
                rec->correlationId = work->correlation_id;
                rec->start = to_cupti_clock(work->start_ns);
                rec->end = to_cupti_clock(work->end_ns);
                rec->deviceId = rec->endDeviceId = work->device_id;
                rec->contextId = rec->endContextId = CONTEXT_ID;
                rec->graphId = work->graph_id;
                rec->streamId = work->stream_id;
            }
        } else if (kernels) {
            /* node by node: the graph's time split evenly over its nodes, one after another */
            uint64_t span = work->end_ns - work->start_ns;
            for (uint32_t node = 0; node < work->graph_nodes; node++)
                kernel_record(work, work->start_ns + span * node / work->graph_nodes,
                              work->start_ns + span * (node + 1) / work->graph_nodes, "cudasim_graph_node",
                              work->graph_id, node + 1);
        }
        break;
    case CUSIM_WORK_COPY:
        if (kind_on(CUPTI_ACTIVITY_KIND_MEMCPY)) {
            CUpti_ActivityMemcpy6 *rec = claim(sizeof(*rec));
            if (rec) {
                int to_device = work->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
                rec->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
                rec->copyKind = (uint8_t)work->copy_kind;
                rec->srcKind = to_device ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
                rec->dstKind = to_device ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
                rec->bytes = work->bytes;
                rec->start = to_cupti_clock(work->start_ns);
                rec->end = to_cupti_clock(work->end_ns);
                rec->deviceId = work->device_id;
                rec->contextId = CONTEXT_ID;
                rec->streamId = work->stream_id;
                rec->correlationId = work->correlation_id;
                rec->runtimeCorrelationId = runtime_correlation;
                rec->copyCount = 1;
            }
        }
        break;
    case CUSIM_WORK_SYNC:
        if (kind_on(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) {
            CUpti_ActivitySynchronization2 *rec = claim(sizeof(*rec));
            if (rec) {
                rec->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
                rec->type = (CUpti_ActivitySynchronizationType)work->sync_type;
                rec->start = to_cupti_clock(work->start_ns);
                rec->end = to_cupti_clock(work->end_ns);
                rec->correlationId = work->correlation_id;
                rec->contextId = CONTEXT_ID;
                rec->streamId = work->stream_id;
                rec->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
            }
        }
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&cupti.lock);
}

static const struct cusim_activity_hooks hooks = {
    .call_begin = on_call_begin,
    .call_end = on_call_end,
    .work = on_work,
};

/* A forked child has none of its parent's buffers to hand back, nor its worker thread. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&cupti.lock, NULL);
    pthread_cond_init(&cupti.wake, NULL);
    pthread_cond_init(&cupti.delivered, NULL);
    cupti.buffer = NULL;
    cupti.size = cupti.used = 0;
    cupti.queued = cupti.delivering = 0;
    cupti.dropped = 0;
    cupti.kernels_seen = 0;
    cupti.worker_started = 0;
}

/* Only cudasim's driver reports activity: with any other, there is nothing to record. Lock held. */
static CUptiResult register_hooks(void)
{
    void *driver;
    void (*set_hooks)(const struct cusim_activity_hooks *);

    if (cupti.hooks_registered)
        return CUPTI_SUCCESS;
    if (getenv("CUDASIM_CUPTI_FAIL"))
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (getenv("CUDASIM_CUPTI_DROP_KERNELS"))
        cupti.drop_every = strtoull(getenv("CUDASIM_CUPTI_DROP_KERNELS"), NULL, 10);
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    *(void **)(&set_hooks) = driver ? dlsym(driver, "cusim_set_activity_hooks") : NULL;
    if (!set_hooks)
        return CUPTI_ERROR_NOT_INITIALIZED;
    set_hooks(&hooks);
    pthread_atfork(NULL, NULL, after_fork_in_child);
    cupti.hooks_registered = 1;
    return CUPTI_SUCCESS;
}

/* ---- the API ------------------------------------------------------------ */

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = STANDIN_VERSION;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
    if (!name)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (int api = 1; api < CUSIM_API_COUNT; api++) {
        if (api_names[api].domain == domain && api_names[api].cbid == cbid) {
            *name = api_names[api].name;
            return CUPTI_SUCCESS;
        }
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&cupti.lock);
    *timestamp = to_cupti_clock(clock_ns(CLOCK_MONOTONIC));
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
    if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return CUPTI_ERROR_INVALID_PARAMETER;
    cupti.thread_id_type = type;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                 CUpti_BuffersCallbackCompleteFunc completed)
{
    if (!requested || !completed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&cupti.lock);
    cupti.request = requested;
    cupti.complete = completed;
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}

#ifndef CUDASIM_CUPTI_OLD
/* Every timestamp from now on follows the callback's clock. */
EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&cupti.lock);
    cupti.clock_offset_ns = offset_from_monotonic(timestamp);
    cupti.clock_set = 1;
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}
#endif

static CUptiResult set_kind(CUpti_ActivityKind kind, uint8_t on)
{
    CUptiResult result = CUPTI_SUCCESS;
    if (!record_size(kind))
        return CUPTI_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&cupti.lock);
    if (on)
        result = register_hooks();
    if (result == CUPTI_SUCCESS) {
        cupti.kinds[kind] = on;
        if (on)
            start_worker();
    }
    pthread_mutex_unlock(&cupti.lock);
    return result;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, 1); }

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, 0); }

#ifndef CUDASIM_CUPTI_OLD
static CUptiResult set_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint8_t on)
{
    CUptiResult result;
    pthread_mutex_lock(&cupti.lock);
    result = on ? register_hooks() : CUPTI_SUCCESS;
    for (int api = 1; result == CUPTI_SUCCESS && api < CUSIM_API_COUNT; api++)
        if (api_names[api].domain == domain && api_names[api].cbid == cbid)
            cupti.api_enabled[api] = on;
    if (result == CUPTI_SUCCESS && on)
        start_worker();
    pthread_mutex_unlock(&cupti.lock);
    return result;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return set_api(CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return set_api(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}
#endif

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    size_t at;
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*record == NULL) {
        at = 0;
    } else {
        size_t size = record_size((*record)->kind);
        if (!size)
            return CUPTI_ERROR_INVALID_KIND;
        at = (size_t)((uint8_t *)*record - buffer) + aligned(size);
    }
    if (at + sizeof(CUpti_Activity) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + at);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t *dropped)
{
    (void)context, (void)stream_id;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&cupti.lock);
    *dropped = cupti.dropped;
    cupti.dropped = 0;
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}

/* Hands back, in the calling thread, every buffer holding records; waits for the worker's. */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    static struct full_buffer taken[MAX_QUEUED];
    static pthread_mutex_t flushing = PTHREAD_MUTEX_INITIALIZER;
    int n;
    (void)flag;
    pthread_mutex_lock(&flushing);
    pthread_mutex_lock(&cupti.lock);
    retire_buffer();
    n = take_queue(taken);
    while (cupti.delivering)
        pthread_cond_wait(&cupti.delivered, &cupti.lock);
    pthread_mutex_unlock(&cupti.lock);
    deliver(taken, n);
    pthread_mutex_unlock(&flushing);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t period_ms)
{
    pthread_mutex_lock(&cupti.lock);
    cupti.flush_period_ms = period_ms;
    pthread_cond_signal(&cupti.wake);
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiFinalize(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&cupti.lock);
    memset(cupti.kinds, 0, sizeof(cupti.kinds));
    memset(cupti.api_enabled, 0, sizeof(cupti.api_enabled));
    pthread_mutex_unlock(&cupti.lock);
    return CUPTI_SUCCESS;
}

/* ---- the callback API's subscriber: one a process ------------------------------------------------- */

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
};

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata)
{
    CUptiResult result = CUPTI_SUCCESS;
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&cupti.lock);
    if (cupti.subscriber) {
        result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    } else {
        struct CUpti_Subscriber_st *made = calloc(1, sizeof(*made));
        if (!made) {
            result = CUPTI_ERROR_UNKNOWN;
        } else {
            made->callback = callback;
            made->userdata = userdata;
            cupti.subscriber = made;
            *subscriber = made;
        }
    }
    pthread_mutex_unlock(&cupti.lock);
    return result;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    CUptiResult result = CUPTI_SUCCESS;
    pthread_mutex_lock(&cupti.lock);
    if (!subscriber || subscriber != cupti.subscriber)
        result = CUPTI_ERROR_INVALID_PARAMETER;
    else
        cupti.subscriber = NULL;
    pthread_mutex_unlock(&cupti.lock);
    if (result == CUPTI_SUCCESS)
        free(subscriber);
    return result;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain)
{
    (void)enable, (void)domain;
    return subscriber && subscriber == cupti.subscriber ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
