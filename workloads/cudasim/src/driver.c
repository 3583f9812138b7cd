/*
 * libcuda.so.1 stand-in. Every exported entry point is an ordinary function
 * built with frame pointers, so it begins `push %rbp; mov %rsp,%rbp` like the
 * real libraries: the cheap, emulated case for an x86 uprobe.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cudasim.h"
#include "ranks.h"
#include "vgpu.h"

#define CUSIM_EXPORT __attribute__((visibility("default")))

#define FUNCTION_MAGIC 0x6b65726eu /* "kern" */
#define GRAPH_MAGIC 0x67726170u    /* "grap" */
#define STREAM_MAGIC 0x7374726du   /* "strm" */
#define EVENT_MAGIC 0x6576656eu    /* "even" */

struct sim_function {
    uint32_t magic;
    uint64_t duration_ns;
    int32_t collective; /* enum ranks_op, 0 for a plain kernel */
    int32_t comm;       /* collectives: the communicator's index */
    char name[96];      /* NCCL's mangled names run to 80 characters */
};

struct sim_graph {
    uint32_t magic;
    uint32_t nodes;
    uint64_t duration_ns;
    uint32_t id; /* as CUPTI numbers graphs: from 1, in creation order */
};

struct CUstream_st {
    uint32_t magic;
    uint32_t cupti_id; /* as CUPTI numbers streams; 0 until first reported */
    struct vgpu_stream queue;
    int32_t rank_slot; /* --ranks: 1 + its slot on the rank's GPU; 0 until first used */
};

/* CUPTI's stream ids: the legacy default stream is 7 on NVIDIA's driver; others follow. */
#define LEGACY_STREAM_ID 7u
#define NO_STREAM_ID 0xffffffffu
static uint32_t next_stream_id = 13;
static uint32_t next_graph_id = 1;

struct CUevent_st {
    uint32_t magic;
    uint64_t completes_at_ns;
    uint64_t rank_item; /* --ranks: the last work queued before it, resolved when it is synced */
};

struct log_header {
    uint64_t capacity;
    uint64_t count;    /* slots claimed, may exceed capacity */
    uint64_t overflow; /* records that did not fit */
};

static struct CUstream_st legacy_stream = {.magic = STREAM_MAGIC};
static __thread struct CUstream_st per_thread_stream = {.magic = STREAM_MAGIC};
static __thread int pending_runtime_api = CUSIM_API_NONE;

static uint64_t launch_cost_ns = 2000;
static uint64_t copy_bytes_per_us = 10000; /* 10 GB/s */
static uint64_t copy_latency_ns = 5000;

static struct log_header *truth_log;

/* --ranks: the job this process is a rank of (NULL: its own virtual GPU, vgpu.c), and its rank */
static struct ranks_job *rank_job;
static int my_rank;
static int rank_streams; /* stream slots given out on this rank's GPU */
static void say_job_failed(void);
static char job_path[256]; /* a named job's /dev/shm name (--job), or empty */

/* The stand-in libcupti's hooks (NULL: nobody listens, nothing is reported). */
static const struct cusim_activity_hooks *activity_hooks;

#define CUSIM_API_NAME(suffix, name, kind) name,
static const char *const api_names[] = {CUSIM_APIS(CUSIM_API_NAME)};
#undef CUSIM_API_NAME

CUSIM_EXPORT const char *cusim_api_name(int api)
{
    if (api < 0 || api >= CUSIM_API_COUNT)
        return "?";
    return api_names[api];
}

/* ---- ground-truth log ------------------------------------------------ */

CUSIM_EXPORT int cusim_log_init(uint64_t capacity)
{
    size_t size = sizeof(struct log_header) + capacity * sizeof(struct cusim_record);
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    truth_log = map;
    truth_log->capacity = capacity;
    return 0;
}

CUSIM_EXPORT uint64_t cusim_log_count(void)
{
    if (!truth_log)
        return 0;
    uint64_t n = __atomic_load_n(&truth_log->count, __ATOMIC_ACQUIRE);
    return n < truth_log->capacity ? n : truth_log->capacity;
}

CUSIM_EXPORT uint64_t cusim_log_overflow(void)
{
    return truth_log ? __atomic_load_n(&truth_log->overflow, __ATOMIC_ACQUIRE) : 0;
}

CUSIM_EXPORT const struct cusim_record *cusim_log_records(void)
{
    return truth_log ? (const struct cusim_record *)(truth_log + 1) : NULL;
}

/* Claims the next slot in call order; NULL when logging is off or full. */
static struct cusim_record *log_claim(int kind, int api)
{
    struct cusim_record *rec;
    uint64_t slot;

    if (!truth_log)
        return NULL;
    slot = __atomic_fetch_add(&truth_log->count, 1, __ATOMIC_ACQ_REL);
    if (slot >= truth_log->capacity) {
        __atomic_fetch_add(&truth_log->overflow, 1, __ATOMIC_ACQ_REL);
        return NULL;
    }
    rec = (struct cusim_record *)(truth_log + 1) + slot;
    memset(rec, 0, sizeof(*rec));
    rec->kind = kind;
    rec->api = api;
    rec->runtime_api = pending_runtime_api;
    rec->pid = getpid();
    rec->tid = (int32_t)syscall(SYS_gettid);
    return rec;
}

/* ---- configuration and handles ------------------------------------- */

CUSIM_EXPORT void cusim_set_launch_cost_ns(uint64_t ns) { launch_cost_ns = ns; }

CUSIM_EXPORT void cusim_set_copy_model(uint64_t bytes_per_us, uint64_t latency_ns)
{
    copy_bytes_per_us = bytes_per_us ? bytes_per_us : 1;
    copy_latency_ns = latency_ns;
}

CUSIM_EXPORT void cusim_note_runtime_api(int api) { pending_runtime_api = api; }

CUSIM_EXPORT void cusim_log_runtime_error(int runtime_api, int return_code)
{
    struct cusim_record *rec = log_claim(CUSIM_KIND_RUNTIME_ERROR, CUSIM_API_NONE);
    if (rec) {
        rec->runtime_api = runtime_api;
        rec->return_code = return_code;
        rec->t_enter_ns = rec->t_exit_ns = vgpu_now_ns();
    }
}

CUSIM_EXPORT uint64_t cusim_now_ns(void) { return vgpu_now_ns(); }

CUSIM_EXPORT uint64_t cusim_gpu_busy_ns(void) { return vgpu_busy_ns(); }

CUSIM_EXPORT CUfunction cusim_function(const char *name, uint64_t duration_ns)
{
    struct sim_function *fn = calloc(1, sizeof(*fn));
    if (!fn)
        return NULL;
    fn->magic = FUNCTION_MAGIC;
    fn->duration_ns = duration_ns;
    strncpy(fn->name, name, sizeof(fn->name) - 1);
    return (CUfunction)fn;
}

CUSIM_EXPORT CUfunction cusim_collective_function(int op, int comm)
{
    struct sim_function *fn;
    if (op <= RANKS_OP_NONE || op >= RANKS_OP_COUNT || comm < 0 || comm >= RANKS_MAX_COMMS)
        return NULL;
    fn = (struct sim_function *)cusim_function(ranks_op_name(op), 0);
    if (fn) {
        fn->collective = op;
        fn->comm = comm;
    }
    return (CUfunction)fn;
}

CUSIM_EXPORT const char *cusim_function_name(uint64_t handle)
{
    const struct sim_function *fn = (const struct sim_function *)(uintptr_t)handle;
    return fn && fn->magic == FUNCTION_MAGIC ? fn->name : "?";
}

CUSIM_EXPORT const char *cusim_function_demangled(uint64_t handle)
{
    const struct sim_function *fn = (const struct sim_function *)(uintptr_t)handle;
    if (!fn || fn->magic != FUNCTION_MAGIC)
        return "?";
    return fn->collective ? ranks_op_demangled(fn->collective) : fn->name;
}

CUSIM_EXPORT CUgraphExec cusim_graph(unsigned int nodes, uint64_t duration_ns)
{
    struct sim_graph *graph = calloc(1, sizeof(*graph));
    if (!graph)
        return NULL;
    graph->magic = GRAPH_MAGIC;
    graph->nodes = nodes;
    graph->duration_ns = duration_ns;
    graph->id = __atomic_fetch_add(&next_graph_id, 1, __ATOMIC_RELAXED);
    return (CUgraphExec)graph;
}

/* ---- GPU activity, for the stand-in libcupti ------------------------ */

CUSIM_EXPORT void cusim_set_activity_hooks(const struct cusim_activity_hooks *hooks)
{
    __atomic_store_n(&activity_hooks, hooks, __ATOMIC_RELEASE);
}

static const struct cusim_activity_hooks *hooks_now(void)
{
    return __atomic_load_n(&activity_hooks, __ATOMIC_ACQUIRE);
}

CUSIM_EXPORT struct cusim_call cusim_call_begin(int api)
{
    const struct cusim_activity_hooks *hooks = hooks_now();
    struct cusim_call call = {.api = api};
    if (hooks) {
        call.t_enter_ns = vgpu_now_ns();
        call.correlation_id = hooks->call_begin(api);
    }
    return call;
}

CUSIM_EXPORT int cusim_call_end(const struct cusim_call *call, int result)
{
    const struct cusim_activity_hooks *hooks = hooks_now();
    if (hooks && call->correlation_id)
        hooks->call_end(call, vgpu_now_ns(), result);
    return result;
}

static void report_work(const struct cusim_call *call, struct cusim_work *work)
{
    const struct cusim_activity_hooks *hooks = hooks_now();
    if (!hooks || !call->correlation_id)
        return;
    work->correlation_id = call->correlation_id;
    hooks->work(work);
}

static uint32_t stream_id_of(struct CUstream_st *stream)
{
    uint32_t id = __atomic_load_n(&stream->cupti_id, __ATOMIC_RELAXED);
    if (id)
        return id;
    id = stream == &legacy_stream ? LEGACY_STREAM_ID : __atomic_fetch_add(&next_stream_id, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&stream->cupti_id, id, __ATOMIC_RELAXED);
    return id;
}

/* Resolves a caller's stream handle the way CUDA does for each API flavour. */
static struct CUstream_st *resolve_stream(CUstream handle, int per_thread_default)
{
    if (handle == CU_STREAM_PER_THREAD || (handle == NULL && per_thread_default))
        return &per_thread_stream;
    if (handle == NULL || handle == CU_STREAM_LEGACY)
        return &legacy_stream;
    if (handle->magic != STREAM_MAGIC)
        return NULL;
    return handle;
}

/* ---- ranks: a job's virtual GPUs, resolved late (ranks.c) ------------ */

CUSIM_EXPORT void *cusim_ranks_create(int ranks, int comms, const uint64_t *comm_ids, int window,
                                      uint64_t transfer_ns, uint64_t timeout_ns)
{
    size_t size = ranks_job_size(ranks, comms, window);
    /* shared and anonymous, made before the fork: every rank's process maps the same pages */
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return NULL;
    if (ranks_job_init(map, ranks, comms, comm_ids, window, transfer_ns, timeout_ns)) {
        int saved = errno;
        munmap(map, size);
        errno = saved;
        return NULL;
    }
    return map;
}

/*
 * The same job region, named (/dev/shm/cudasim-NAME), for ranks started one by one (--rank I --job NAME),
 * as a launcher on each node, or one recorder a rank, starts them: the first to come makes it, the others
 * wait for it to be made and check it was made with their options. NULL with a message in WHY.
 */
CUSIM_EXPORT void *cusim_ranks_open(const char *name, int ranks, int comms, const uint64_t *comm_ids, int window,
                                    uint64_t transfer_ns, uint64_t timeout_ns, char *why, size_t room)
{
    char path[256];
    size_t size = ranks_job_size(ranks, comms, window);
    uint64_t deadline = vgpu_now_ns() + timeout_ns;
    struct ranks_job *job;
    struct stat st;
    int made = 1;
    int fd;

    snprintf(path, sizeof(path), "/cudasim-%s", name);
    fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        made = 0;
        fd = shm_open(path, O_RDWR, 0);
    }
    if (fd < 0) {
        snprintf(why, room, "cannot open /dev/shm%s: %s", path, strerror(errno));
        return NULL;
    }
    if (made && ftruncate(fd, (off_t)size)) {
        snprintf(why, room, "cannot size /dev/shm%s: %s", path, strerror(errno));
        close(fd);
        shm_unlink(path);
        return NULL;
    }
    /* the maker may not have sized it yet; sized otherwise, it was made with other options */
    while (!made && (fstat(fd, &st) || !st.st_size) && vgpu_now_ns() < deadline)
        usleep(1000);
    if (!made && (size_t)st.st_size != size) {
        snprintf(why, room,
                 "/dev/shm%s is %s: every rank of a job takes the same --ranks, --layers, --comm-id and "
                 "--collective-us (remove it if a run before left it)",
                 path, st.st_size ? "a job made with other options" : "never set up");
        close(fd);
        return NULL;
    }
    job = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (job == MAP_FAILED) {
        snprintf(why, room, "cannot map /dev/shm%s (made with other options?): %s", path, strerror(errno));
        return NULL;
    }
    snprintf(job_path, sizeof(job_path), "%s", path);
    if (made && ranks_job_init(job, ranks, comms, comm_ids, window, transfer_ns, timeout_ns)) {
        snprintf(why, room, "cannot set up /dev/shm%s: %s", path, strerror(errno));
        munmap(job, size);
        shm_unlink(path);
        return NULL;
    }
    while (!ranks_job_ready(job) && vgpu_now_ns() < deadline)
        usleep(1000);
    if (!ranks_job_ready(job) || !ranks_job_matches(job, ranks, comms, comm_ids, window, transfer_ns)) {
        snprintf(why, room,
                 "/dev/shm%s is %s: every rank of a job takes the same --ranks, --layers, --comm-id and "
                 "--collective-us (remove it if a run before left it)",
                 path, ranks_job_ready(job) ? "a job made with other options" : "never set up");
        munmap(job, size);
        return NULL;
    }
    return job;
}

/* This rank is done with the job (a named one's name is long gone: see cusim_rank_attach). */
CUSIM_EXPORT void cusim_ranks_close(void *job, const char *name)
{
    struct ranks_job *j = job;
    (void)name;
    if (j)
        ranks_leave(j);
}

/*
 * Joins the job as RANK, once every rank has (ncclCommInitRank's rendezvous): 0, or -1 (said why).
 * A named job's name is removed then, by every rank (the first removal wins): every rank has it mapped
 * by then and nobody else may join, so a rank that dies later leaves nothing behind in /dev/shm. A
 * rendezvous that fails removes it too: that job is over.
 */
CUSIM_EXPORT int cusim_rank_attach(void *job, int rank)
{
    struct ranks_job *j = job;
    int result = 0;
    if (!j || rank < 0 || rank >= j->ranks)
        return -1;
    my_rank = rank;
    __atomic_store_n(&rank_job, j, __ATOMIC_RELEASE);
    if (ranks_join(j, rank)) {
        say_job_failed();
        result = -1;
    }
    if (job_path[0])
        shm_unlink(job_path);
    return result;
}

/* The stream's slot on this rank's GPU (a stream is one process's), or -1 when there are too many. */
static int rank_stream_slot(struct CUstream_st *stream)
{
    int slot = __atomic_load_n(&stream->rank_slot, __ATOMIC_RELAXED);
    if (!slot) {
        slot = __atomic_add_fetch(&rank_streams, 1, __ATOMIC_RELAXED);
        if (slot > RANKS_MAX_STREAMS)
            return -1;
        __atomic_store_n(&stream->rank_slot, slot, __ATOMIC_RELAXED);
    }
    return slot - 1;
}

/* Once the job has resolved it, a piece of work this rank queued gets its times: in the truth log and,
 * like a real CUPTI's kernel records that come after the kernel ends, in the activity records. */
static void report_item(struct ranks_item *it)
{
    if (it->log_slot != RANKS_NONE) {
        struct cusim_record *rec = (struct cusim_record *)(truth_log + 1) + it->log_slot;
        rec->gpu_start_ns = it->start_ns;
        rec->gpu_end_ns = it->end_ns;
        if (it->kind == RANKS_ITEM_COLLECTIVE) {
            rec->coll_seq = it->seq;
            rec->last_arrival_ns = it->last_arrival_ns;
            rec->last_rank = it->last_rank;
        }
    }
    if (it->work.correlation_id) {
        const struct cusim_activity_hooks *hooks = hooks_now();
        it->work.start_ns = it->start_ns;
        it->work.end_ns = it->end_ns;
        if (hooks)
            hooks->work(&it->work);
    }
}

static void report_resolved(void)
{
    struct ranks_item taken[32];
    int n;
    /* in batches: one lock a batch, not one an item, as every rank takes the same lock */
    while ((n = ranks_take_resolved(rank_job, my_rank, taken, 32)) > 0)
        for (int i = 0; i < n; i++)
            report_item(&taken[i]);
}

/* Says, once a process, why the job failed: every rank stops, each saying so. */
static void say_job_failed(void)
{
    static int said;
    const char *why = ranks_failure(rank_job);
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr, "cudasim: rank %d stopped: %s\n", my_rank, why ? why : "the job failed");
}

/* Waits until this rank's item INDEX is resolved, reporting what resolves meanwhile: 0, or -1 (said why). */
static int rank_wait(uint64_t index)
{
    int result = ranks_wait(rank_job, my_rank, index);
    report_resolved();
    if (result)
        say_job_failed();
    return result;
}

/* Queues ITEM on this rank's GPU (waiting while its queue is full, as a real launch blocks on a full
 * push buffer): its index, or RANKS_NONE when the job failed. */
static uint64_t rank_enqueue(struct ranks_item *item)
{
    for (;;) {
        uint64_t index = ranks_enqueue(rank_job, my_rank, item, 0);
        struct ranks_gpu *gpu = ranks_gpu_of(rank_job, my_rank);
        if (index != RANKS_NONE) {
            report_resolved();
            if (ranks_failure(rank_job)) {
                /* this very launch showed the ranks disagree: it was queued, but nothing will run */
                say_job_failed();
                return RANKS_NONE;
            }
            return index;
        }
        report_resolved();
        if (ranks_failure(rank_job)) {
            say_job_failed();
            return RANKS_NONE;
        }
        if (gpu->tail - gpu->reported >= RANKS_QUEUE && rank_wait(__atomic_load_n(&gpu->reported, __ATOMIC_ACQUIRE)))
            return RANKS_NONE;
    }
}

/*
 * A rank's end: its GPU finishes what it queued, as a real context does before it is torn down (a
 * program may end without a sync that covers everything, e.g. an event recorded on another stream),
 * and every piece gets its times before the process's CUPTI client flushes at exit. 0, or -1.
 */
CUSIM_EXPORT int cusim_rank_drain(void)
{
    if (!rank_job)
        return 0;
    return rank_wait(ranks_last_item(rank_job, my_rank, -1));
}

/* ---- launches -------------------------------------------------------- */

/* What a launch runs: a kernel (name) or a graph (graph set). */
struct launch_target {
    uint64_t handle;
    uint64_t duration_ns;
    const char *name;
    const struct sim_graph *graph;
    int collective; /* enum ranks_op */
    int comm;
};

/* A launch on a rank's GPU: logged and queued now, its times known when the job resolves it. */
static CUresult enqueue_rank_launch(const struct cusim_call *call, const struct launch_target *target,
                                    const unsigned int grid[3], const unsigned int block[3],
                                    unsigned int shared_mem, CUstream stream_handle,
                                    struct CUstream_st *stream, uint64_t t_enter)
{
    struct ranks_item item = {0};
    struct cusim_record *rec;
    int slot = rank_stream_slot(stream);

    if (slot < 0) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    vgpu_spin_ns(launch_cost_ns);
    item.kind = target->collective ? RANKS_ITEM_COLLECTIVE : RANKS_ITEM_KERNEL;
    /* NCCL's kernels take a few SMs of their own: they run beside compute, ordered only by streams */
    item.engine = target->collective ? 1 : 0;
    item.duration_ns = target->duration_ns;
    item.stream = slot;
    item.comm = target->comm;
    item.op = target->collective;
    item.work.kind = target->graph ? CUSIM_WORK_GRAPH : CUSIM_WORK_KERNEL;
    item.work.correlation_id = hooks_now() ? call->correlation_id : 0;
    item.work.stream_id = stream_id_of(stream);
    item.work.name = target->name;
    memcpy(item.work.grid, grid, sizeof(item.work.grid));
    memcpy(item.work.block, block, sizeof(item.work.block));
    item.work.shared_mem = shared_mem;
    item.work.device_id = (uint32_t)my_rank;
    if (target->graph) {
        item.work.graph_id = target->graph->id;
        item.work.graph_nodes = target->graph->nodes;
    }
    rec = log_claim(CUSIM_KIND_LAUNCH, call->api);
    pending_runtime_api = CUSIM_API_NONE;
    item.log_slot = rec ? (uint64_t)(rec - (struct cusim_record *)(truth_log + 1)) : RANKS_NONE;
    if (rec) {
        rec->t_enter_ns = t_enter;
        memcpy(rec->grid, grid, sizeof(rec->grid));
        memcpy(rec->block, block, sizeof(rec->block));
        rec->shared_mem = shared_mem;
        rec->func = target->handle;
        rec->stream = (uint64_t)(uintptr_t)stream_handle;
        rec->graph_nodes = target->graph ? target->graph->nodes : 0;
        rec->rank = my_rank;
        rec->collective = target->collective;
        rec->comm_id = target->collective ? rank_job->comm_ids[target->comm] : 0;
        rec->last_rank = -1;
    }
    if (rank_enqueue(&item) == RANKS_NONE)
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    if (rec)
        rec->t_exit_ns = vgpu_now_ns();
    return CUDA_SUCCESS;
}

static CUresult enqueue_launch(const struct cusim_call *call, const struct launch_target *target,
                               const unsigned int grid[3], const unsigned int block[3],
                               unsigned int shared_mem, CUstream stream_handle, int per_thread)
{
    int api = call->api;
    uint64_t t_enter = vgpu_now_ns();
    struct CUstream_st *stream = resolve_stream(stream_handle, per_thread);
    struct cusim_record *rec;
    struct vgpu_span span;
    struct cusim_work work = {0};

    if (!stream)
        return CUDA_ERROR_INVALID_VALUE;
    if (rank_job)
        return enqueue_rank_launch(call, target, grid, block, shared_mem, stream_handle, stream, t_enter);
    vgpu_spin_ns(launch_cost_ns);
    span = vgpu_enqueue(&stream->queue, target->duration_ns);
    work.kind = target->graph ? CUSIM_WORK_GRAPH : CUSIM_WORK_KERNEL;
    work.start_ns = span.start_ns;
    work.end_ns = span.end_ns;
    work.stream_id = stream_id_of(stream);
    work.name = target->name;
    memcpy(work.grid, grid, sizeof(work.grid));
    memcpy(work.block, block, sizeof(work.block));
    work.shared_mem = shared_mem;
    if (target->graph) {
        work.graph_id = target->graph->id;
        work.graph_nodes = target->graph->nodes;
    }
    report_work(call, &work);
    rec = log_claim(CUSIM_KIND_LAUNCH, api);
    pending_runtime_api = CUSIM_API_NONE;
    if (rec) {
        rec->t_enter_ns = t_enter;
        memcpy(rec->grid, grid, sizeof(rec->grid));
        memcpy(rec->block, block, sizeof(rec->block));
        rec->shared_mem = shared_mem;
        rec->func = target->handle;
        rec->stream = (uint64_t)(uintptr_t)stream_handle;
        rec->gpu_start_ns = span.start_ns;
        rec->gpu_end_ns = span.end_ns;
        rec->graph_nodes = target->graph ? target->graph->nodes : 0;
        rec->t_exit_ns = vgpu_now_ns();
    }
    return CUDA_SUCCESS;
}

static CUresult launch_function(const struct cusim_call *call, CUfunction f, unsigned int gx,
                                unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                                unsigned int bz, unsigned int shared_mem, CUstream stream,
                                int per_thread)
{
    const struct sim_function *fn = (const struct sim_function *)f;
    const unsigned int grid[3] = {gx, gy, gz};
    const unsigned int block[3] = {bx, by, bz};
    struct launch_target target;

    if (!fn || fn->magic != FUNCTION_MAGIC) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    target = (struct launch_target){.handle = (uint64_t)(uintptr_t)f, .duration_ns = fn->duration_ns,
                                    .name = fn->name, .collective = fn->collective, .comm = fn->comm};
    if (fn->collective && !rank_job) {
        /* a collective's kernel needs its ranks: without a job there is nobody to wait for */
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    return enqueue_launch(call, &target, grid, block, shared_mem, stream, per_thread);
}

static CUresult launch_ex(const struct cusim_call *call, const CUlaunchConfig *config, CUfunction f,
                          int per_thread)
{
    if (!config) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    return launch_function(call, f, config->gridDimX, config->gridDimY, config->gridDimZ,
                           config->blockDimX, config->blockDimY, config->blockDimZ,
                           config->sharedMemBytes, config->hStream, per_thread);
}

static CUresult launch_graph(const struct cusim_call *call, CUgraphExec exec, CUstream stream,
                             int per_thread)
{
    const struct sim_graph *graph = (const struct sim_graph *)exec;
    const unsigned int none[3] = {0, 0, 0};
    struct launch_target target;

    if (!graph || graph->magic != GRAPH_MAGIC) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    target = (struct launch_target){.handle = (uint64_t)(uintptr_t)exec,
                                    .duration_ns = graph->duration_ns, .graph = graph};
    return enqueue_launch(call, &target, none, none, 0, stream, per_thread);
}

/*
 * Like NVIDIA's driver, cuInit loads the library CUDA_INJECTION64_PATH names and calls
 * its InitializeInjection() (how Nsight Systems and other CUPTI agents get in), once
 * in each process: a forked child that initialises CUDA again is injected again. A
 * library that cannot be loaded, or lacks the function, is ignored.
 */
static pthread_mutex_t injection_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t injected_in;

static void inject_once(void)
{
    const char *path;
    void *library;
    int (*initialize)(void);
    pid_t me = getpid();

    pthread_mutex_lock(&injection_lock);
    if (injected_in == me) {
        pthread_mutex_unlock(&injection_lock);
        return;
    }
    injected_in = me;
    path = getenv("CUDA_INJECTION64_PATH");
    library = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    *(void **)(&initialize) = library ? dlsym(library, "InitializeInjection") : NULL;
    if (initialize)
        initialize();
    pthread_mutex_unlock(&injection_lock);
}

CUSIM_EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    inject_once();
    return CUDA_SUCCESS;
}

/* Each entry point that can make GPU work reports its call around what it does. */
#define TRACED_CALL(api, body)                                \
    do {                                                      \
        struct cusim_call call = cusim_call_begin(api);       \
        return (CUresult)cusim_call_end(&call, (body));       \
    } while (0)

CUSIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shared_mem, CUstream stream,
                                     void **params, void **extra)
{
    (void)params, (void)extra;
    TRACED_CALL(CUSIM_API_cuLaunchKernel,
                launch_function(&call, f, gx, gy, gz, bx, by, bz, shared_mem, stream, 0));
}

CUSIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shared_mem,
                                          CUstream stream, void **params, void **extra)
{
    (void)params, (void)extra;
    TRACED_CALL(CUSIM_API_cuLaunchKernel_ptsz,
                launch_function(&call, f, gx, gy, gz, bx, by, bz, shared_mem, stream, 1));
}

CUSIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                       void **extra)
{
    (void)params, (void)extra;
    TRACED_CALL(CUSIM_API_cuLaunchKernelEx, launch_ex(&call, config, f, 0));
}

CUSIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                            void **params, void **extra)
{
    (void)params, (void)extra;
    TRACED_CALL(CUSIM_API_cuLaunchKernelEx_ptsz, launch_ex(&call, config, f, 1));
}

CUSIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                unsigned int gz, unsigned int bx, unsigned int by,
                                                unsigned int bz, unsigned int shared_mem,
                                                CUstream stream, void **params)
{
    (void)params;
    TRACED_CALL(CUSIM_API_cuLaunchCooperativeKernel,
                launch_function(&call, f, gx, gy, gz, bx, by, bz, shared_mem, stream, 0));
}

CUSIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                     unsigned int gy, unsigned int gz,
                                                     unsigned int bx, unsigned int by,
                                                     unsigned int bz, unsigned int shared_mem,
                                                     CUstream stream, void **params)
{
    (void)params;
    TRACED_CALL(CUSIM_API_cuLaunchCooperativeKernel_ptsz,
                launch_function(&call, f, gx, gy, gz, bx, by, bz, shared_mem, stream, 1));
}

CUSIM_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream)
{
    TRACED_CALL(CUSIM_API_cuGraphLaunch, launch_graph(&call, exec, stream, 0));
}

CUSIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream)
{
    TRACED_CALL(CUSIM_API_cuGraphLaunch_ptsz, launch_graph(&call, exec, stream, 1));
}

/* ---- streams, events, syncs ----------------------------------------- */

CUSIM_EXPORT CUresult cuStreamCreate(CUstream *out, unsigned int flags)
{
    struct CUstream_st *stream;
    (void)flags;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    stream = calloc(1, sizeof(*stream));
    if (!stream)
        return CUDA_ERROR_INVALID_VALUE;
    stream->magic = STREAM_MAGIC;
    *out = stream;
    return CUDA_SUCCESS;
}

CUSIM_EXPORT CUresult cuStreamDestroy_v2(CUstream stream)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD ||
        stream->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    stream->magic = 0;
    free(stream);
    return CUDA_SUCCESS;
}

/*
 * Logs a sync that blocks the caller until `wait_until_ns` (virtual GPU time); a sync
 * of SYNC_TYPE (CUpti_ActivitySynchronizationType, 0 for a copy's wait) is reported
 * to the hooks, on STREAM_ID.
 */
static CUresult blocking_sync(const struct cusim_call *call, uint64_t t_enter, uint64_t wait_until_ns,
                              uint64_t stream, uint64_t bytes, int sync_type, uint32_t stream_id,
                              uint64_t copy_start_ns)
{
    int api = call->api;
    struct cusim_record *rec = log_claim(CUSIM_KIND_SYNC, api);
    pending_runtime_api = CUSIM_API_NONE;
    vgpu_sleep_until(wait_until_ns);
    if (sync_type) {
        struct cusim_work work = {.kind = CUSIM_WORK_SYNC, .start_ns = t_enter, .end_ns = vgpu_now_ns(),
                                  .stream_id = stream_id, .sync_type = sync_type};
        report_work(call, &work);
    }
    if (rec) {
        rec->t_enter_ns = t_enter;
        rec->stream = stream;
        rec->gpu_end_ns = wait_until_ns;
        rec->gpu_start_ns = copy_start_ns;
        rec->bytes = bytes;
        rec->t_exit_ns = vgpu_now_ns();
    }
    return CUDA_SUCCESS;
}

/* CUpti_ActivitySynchronizationType, as the stand-in libcupti's header names them */
#define SYNC_EVENT 1
#define SYNC_STREAM 3
#define SYNC_CONTEXT 4

/*
 * --ranks: when the work STREAM (NULL: the whole engine) has queued ends, once the job has resolved
 * it (a sync on a collective waits for the other ranks to launch theirs); 0, or -1 (said why).
 */
static int rank_done_at(struct CUstream_st *stream, uint64_t *done_ns)
{
    int slot = stream ? rank_stream_slot(stream) : -1;
    if (stream && slot < 0)
        return -1;
    if (rank_wait(ranks_last_item(rank_job, my_rank, slot)))
        return -1;
    return ranks_done_at(rank_job, my_rank, slot, done_ns);
}

static CUresult stream_sync(const struct cusim_call *call, CUstream handle, int per_thread)
{
    uint64_t t_enter = vgpu_now_ns();
    struct CUstream_st *stream = resolve_stream(handle, per_thread);
    uint64_t done_ns;
    if (!stream) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!rank_job)
        done_ns = vgpu_stream_done_at(&stream->queue);
    else if (rank_done_at(stream, &done_ns)) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    return blocking_sync(call, t_enter, done_ns, (uint64_t)(uintptr_t)handle, 0, SYNC_STREAM,
                         stream_id_of(stream), 0);
}

CUSIM_EXPORT CUresult cuStreamSynchronize(CUstream stream)
{
    TRACED_CALL(CUSIM_API_cuStreamSynchronize, stream_sync(&call, stream, 0));
}

CUSIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream)
{
    TRACED_CALL(CUSIM_API_cuStreamSynchronize_ptsz, stream_sync(&call, stream, 1));
}

static CUresult ctx_sync(const struct cusim_call *call)
{
    uint64_t t_enter = vgpu_now_ns();
    uint64_t done_ns;
    if (!rank_job)
        done_ns = vgpu_engine_done_at();
    else if (rank_done_at(NULL, &done_ns)) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    return blocking_sync(call, t_enter, done_ns, 0, 0, SYNC_CONTEXT, NO_STREAM_ID, 0);
}

CUSIM_EXPORT CUresult cuCtxSynchronize(void)
{
    TRACED_CALL(CUSIM_API_cuCtxSynchronize, ctx_sync(&call));
}

CUSIM_EXPORT CUresult cuEventCreate(CUevent *out, unsigned int flags)
{
    struct CUevent_st *event;
    (void)flags;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    event = calloc(1, sizeof(*event));
    if (!event)
        return CUDA_ERROR_INVALID_VALUE;
    event->magic = EVENT_MAGIC;
    *out = event;
    return CUDA_SUCCESS;
}

CUSIM_EXPORT CUresult cuEventDestroy_v2(CUevent event)
{
    if (!event || event->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    event->magic = 0;
    free(event);
    return CUDA_SUCCESS;
}

CUSIM_EXPORT CUresult cuEventRecord(CUevent event, CUstream handle)
{
    struct CUstream_st *stream = resolve_stream(handle, 0);
    if (!event || event->magic != EVENT_MAGIC || !stream)
        return CUDA_ERROR_INVALID_VALUE;
    if (rank_job) {
        /* the work before it may not be resolved yet: remember which, and learn when at the sync */
        int slot = rank_stream_slot(stream);
        if (slot < 0)
            return CUDA_ERROR_INVALID_VALUE;
        event->rank_item = ranks_last_item(rank_job, my_rank, slot);
        event->completes_at_ns = 0;
        return CUDA_SUCCESS;
    }
    event->completes_at_ns = vgpu_stream_done_at(&stream->queue);
    return CUDA_SUCCESS;
}

/*
 * The stream's later work waits for the event's (as PyTorch's ProcessGroupNCCL orders its NCCL stream
 * after the current stream, and the current stream after a collective it waits for). Not logged: it
 * blocks no thread. Without ranks, the stream's next kernel starts no earlier than the event completes.
 */
CUSIM_EXPORT CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags)
{
    struct CUstream_st *stream = resolve_stream(handle, 0);
    (void)flags;
    if (!event || event->magic != EVENT_MAGIC || !stream)
        return CUDA_ERROR_INVALID_VALUE;
    if (rank_job) {
        int slot = rank_stream_slot(stream);
        if (slot < 0 || ranks_stream_wait(rank_job, my_rank, slot, event->rank_item))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    vgpu_stream_wait(&stream->queue, event->completes_at_ns);
    return CUDA_SUCCESS;
}

static CUresult event_sync(const struct cusim_call *call, CUevent event)
{
    uint64_t t_enter = vgpu_now_ns();
    if (!event || event->magic != EVENT_MAGIC) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (rank_job && (rank_wait(event->rank_item) ||
                     ranks_item_end(rank_job, my_rank, event->rank_item, &event->completes_at_ns))) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    return blocking_sync(call, t_enter, event->completes_at_ns, 0, 0, SYNC_EVENT, NO_STREAM_ID, 0);
}

CUSIM_EXPORT CUresult cuEventSynchronize(CUevent event)
{
    TRACED_CALL(CUSIM_API_cuEventSynchronize, event_sync(&call, event));
}

/* ---- memory ---------------------------------------------------------- */

CUSIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes)
{
    void *mem;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    mem = calloc(1, bytes ? bytes : 1);
    if (!mem)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (CUdeviceptr)(uintptr_t)mem;
    return CUDA_SUCCESS;
}

CUSIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr)
{
    free((void *)(uintptr_t)ptr);
    return CUDA_SUCCESS;
}

/* A synchronous copy on a rank's GPU: queued behind all its work, which the job may still have to
 * resolve; reported, like vgpu_copy's, once its span is known. */
static CUresult rank_copy(const struct cusim_call *call, void *dst, const void *src, size_t bytes, int copy_kind,
                          uint64_t t_enter, uint64_t duration_ns)
{
    struct ranks_item item = {.kind = RANKS_ITEM_COPY, .duration_ns = duration_ns, .stream = -1, .engine = -1,
                              .log_slot = RANKS_NONE};
    uint64_t index, start_ns = 0, end_ns = 0;

    if (!dst || !src) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    item.work = (struct cusim_work){.kind = CUSIM_WORK_COPY, .correlation_id = call->correlation_id,
                                    .stream_id = stream_id_of(&legacy_stream), .bytes = bytes,
                                    .copy_kind = copy_kind, .device_id = (uint32_t)my_rank};
    memcpy(dst, src, bytes);
    index = rank_enqueue(&item);
    if (index == RANKS_NONE || rank_wait(index) || ranks_item_end(rank_job, my_rank, index, &end_ns)) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    start_ns = end_ns - duration_ns;
    return blocking_sync(call, t_enter, end_ns, 0, bytes, 0, NO_STREAM_ID, start_ns);
}

/*
 * Synchronous copies wait for all queued work, then for the transfer itself, on the
 * legacy stream. COPY_KIND: CUpti_ActivityMemcpyKind (1 host to device, 2 device to host).
 */
static CUresult sync_copy(const struct cusim_call *call, void *dst, const void *src, size_t bytes,
                          int copy_kind)
{
    uint64_t t_enter = vgpu_now_ns();
    uint64_t duration_ns = copy_latency_ns + bytes / copy_bytes_per_us * 1000ull;
    struct vgpu_span span;
    struct cusim_work work;
    if (rank_job)
        return rank_copy(call, dst, src, bytes, copy_kind, t_enter, duration_ns);
    span = vgpu_copy(duration_ns);
    work = (struct cusim_work){.kind = CUSIM_WORK_COPY, .start_ns = span.start_ns, .end_ns = span.end_ns,
                               .stream_id = stream_id_of(&legacy_stream), .bytes = bytes,
                               .copy_kind = copy_kind};
    if (!dst || !src) {
        pending_runtime_api = CUSIM_API_NONE;
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(dst, src, bytes);
    report_work(call, &work);
    return blocking_sync(call, t_enter, span.end_ns, 0, bytes, 0, NO_STREAM_ID, span.start_ns);
}

#define HTOD 1
#define DTOH 2

CUSIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    TRACED_CALL(CUSIM_API_cuMemcpyHtoD_v2, sync_copy(&call, (void *)(uintptr_t)dst, src, bytes, HTOD));
}

CUSIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    TRACED_CALL(CUSIM_API_cuMemcpyDtoH_v2, sync_copy(&call, dst, (const void *)(uintptr_t)src, bytes, DTOH));
}

CUSIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t bytes)
{
    TRACED_CALL(CUSIM_API_cuMemcpyHtoD_v2_ptds,
                sync_copy(&call, (void *)(uintptr_t)dst, src, bytes, HTOD));
}

CUSIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t bytes)
{
    TRACED_CALL(CUSIM_API_cuMemcpyDtoH_v2_ptds,
                sync_copy(&call, dst, (const void *)(uintptr_t)src, bytes, DTOH));
}
