/*
 * cudasim: a GPU-less stand-in for an LLM decode loop. It drives the
 * stand-in CUDA runtime or driver exactly as a real program would, and the
 * driver's own log becomes the ground truth the recorder is checked against.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda.h"
#include "cuda_runtime.h"
#include "cudasim.h"
#include "model.h"
#include "cupti_client.h"
#include "kineto.h"
#include "ranks.h"
#include "truth.h"

#ifndef CUDASIM_BINARY_NAME
#define CUDASIM_BINARY_NAME "cudasim"
#endif

#define ATTENTION_HEADS 16
#define POSITIONS_PER_ATTENTION_BLOCK 32
#define QWEN3_VOCAB 151936

static const char *const qwen3_layer_kernels[] = {
    "rmsnorm_in", "q_proj",    "k_proj",       "v_proj",  "q_norm",     "k_norm",
    "rope",       "kv_append", "attn_scores",  "softmax", "attn_values", "o_proj",
    "residual_1", "rmsnorm_post", "gate_up_proj", "swiglu", "down_proj"};
#define QWEN3_LAYER_KERNELS (int)(sizeof(qwen3_layer_kernels) / sizeof(qwen3_layer_kernels[0]))

struct model {
    struct kernel_type *layer_kernels;
    struct kernel_type embedding;
    struct kernel_type lm_head;
    CUgraphExec layer_graph;
    CUfunction collectives[RANKS_OP_COUNT][RANKS_MAX_COMMS]; /* --ranks: by NCCL kernel and communicator */
};

/* --rank-cpus: the CPUs each rank's process is pinned to */
static cpu_set_t rank_cpus[RANKS_MAX];
/* --ranks: the job every rank's process shares (made before the fork) */
static void *rank_job;

/* --cupti-client FROM:TO: a second CUPTI client (libcudasim_profiler.so) profiles tokens [FROM, TO) */
static int client_from = -1, client_to = -1;
static struct cupti_client_result client_result;
static int client_ran;

struct worker {
    const struct decode_config *cfg;
    const struct model *model;
    struct worker_summary *summary;
    int proc_index;
    int thread_index;
};

static void die(const char *msg)
{
    fprintf(stderr, "cudasim: %s\n", msg);
    exit(2);
}

static void make_kernel(struct kernel_type *k, const char *name, uint64_t *rng,
                        const struct decode_config *cfg, int grows_with_position)
{
    uint64_t span = cfg->kernel_max_ns - cfg->kernel_min_ns;
    k->name = name;
    k->duration_ns = cfg->kernel_min_ns + (span ? splitmix64(rng) % (span + 1) : 0);
    k->grid[0] = 1 + (unsigned int)(splitmix64(rng) % 1024);
    k->grid[1] = grows_with_position ? ATTENTION_HEADS : 1;
    k->grid[2] = 1;
    k->block[0] = 32u << (splitmix64(rng) % 5);
    k->block[1] = 1;
    k->block[2] = 1;
    k->shared_mem = (unsigned int)(splitmix64(rng) % 4) * 4096;
    k->grows_with_position = grows_with_position;
    k->fn = cusim_function(name, k->duration_ns);
    if (!k->fn)
        die("out of memory creating kernels");
}

static void build_model(struct model *m, const struct decode_config *cfg)
{
    uint64_t rng = cfg->seed;
    uint64_t layer_ns = 0;
    static char generic_names[256][24];

    m->layer_kernels = calloc((size_t)cfg->kernels_per_layer, sizeof(*m->layer_kernels));
    if (!m->layer_kernels)
        die("out of memory");
    make_kernel(&m->embedding, "embedding", &rng, cfg, 0);
    for (int k = 0; k < cfg->kernels_per_layer; k++) {
        const char *name;
        if (cfg->kernels_per_layer == QWEN3_LAYER_KERNELS) {
            name = qwen3_layer_kernels[k];
        } else {
            snprintf(generic_names[k], sizeof(generic_names[k]), "layer_kernel_%d", k);
            name = generic_names[k];
        }
        make_kernel(&m->layer_kernels[k], name, &rng, cfg,
                    name == qwen3_layer_kernels[8] || name == qwen3_layer_kernels[9] ||
                        name == qwen3_layer_kernels[10]);
        layer_ns += m->layer_kernels[k].duration_ns;
    }
    make_kernel(&m->lm_head, "lm_head", &rng, cfg, 0);
    m->layer_graph = cusim_graph((unsigned int)cfg->kernels_per_layer, layer_ns);
    if (!m->layer_graph)
        die("out of memory creating graph");
    for (int op = RANKS_OP_GENERIC; cfg->ranks && op < RANKS_OP_COUNT; op++)
        for (int c = 0; c < cfg->comms; c++)
            if (!(m->collectives[op][c] = cusim_collective_function(op, c)))
                die("out of memory creating collectives");
}

/* --collective-stream own/overlap: the NCCL stream and the events that order it against the layers' */
struct comm_stream {
    CUstream stream;
    CUevent compute_done; /* recorded on the layers' stream: the collective waits for it */
    CUevent comm_done;    /* recorded on the NCCL stream: the next layer waits for it (own) */
};

/*
 * --ranks: a layer's collective (its all-reduce, as tensor parallelism has after a layer), launched as
 * NCCL launches its kernel: through the driver's cuLaunchKernelEx (NCCL's ncclLaunchKernel, for CUDA
 * 11.8 and later), whatever API the rest uses. Its kernel is mostly ncclDevKernel_Generic; every fourth
 * layer's, a small all-reduce, NCCL's specialised LL kernel. The geometry is what NCCL launches on two
 * GPUs: a block per channel, its threads and its shared memory.
 * On the layer's own stream (same), or, as PyTorch's ProcessGroupNCCL runs it, on an NCCL stream made to
 * wait for the layer's work, the next layer then waiting for it (own) or not (overlap, as DDP's
 * gradient all-reduce runs beside the next layers' compute).
 */
static int launch_collective(const struct decode_config *cfg, const struct model *m, int layer,
                             cudaStream_t stream, const struct comm_stream *comm)
{
    int op = layer % 4 == 3 ? RANKS_OP_ALLREDUCE_LL : RANKS_OP_GENERIC;
    CUstream compute = cfg->per_thread_stream ? CU_STREAM_PER_THREAD : stream;
    CUlaunchConfig lc = {.gridDimX = op == RANKS_OP_GENERIC ? 16 : 2, .gridDimY = 1, .gridDimZ = 1,
                         .blockDimX = op == RANKS_OP_GENERIC ? 512 : 96, .blockDimY = 1, .blockDimZ = 1,
                         .sharedMemBytes = 88416, .hStream = compute};
    int failed = 0;

    if (cfg->collective_stream != COLLECTIVE_SAME) {
        failed |= cuEventRecord(comm->compute_done, compute) || cuStreamWaitEvent(comm->stream, comm->compute_done, 0);
        lc.hStream = comm->stream;
    }
    failed |= cuLaunchKernelEx(&lc, m->collectives[op][layer % cfg->comms], NULL, NULL);
    if (cfg->collective_stream == COLLECTIVE_OWN)
        failed |= cuEventRecord(comm->comm_done, comm->stream) || cuStreamWaitEvent(compute, comm->comm_done, 0);
    return failed;
}

/* ---- one launch, through the API path the configuration asks for ----- */

static int launch_one(const struct decode_config *cfg, const struct kernel_type *k,
                      enum launch_kind kind, int position, cudaStream_t stream)
{
    unsigned int grid_x = k->grid[0];
    int ptsz = cfg->per_thread_stream;
    CUresult r;

    if (k->grows_with_position)
        grid_x = 1 + (unsigned int)position / POSITIONS_PER_ATTENTION_BLOCK;

    if (cfg->api == API_RUNTIME) {
        dim3 grid = {grid_x, k->grid[1], k->grid[2]};
        dim3 block = {k->block[0], k->block[1], k->block[2]};
        if (kind == LAUNCH_EX) {
            cudaLaunchConfig_t lc = {.gridDim = grid, .blockDim = block,
                                     .dynamicSmemBytes = k->shared_mem, .stream = stream};
            return ptsz ? cudaLaunchKernelExC_ptsz(&lc, k->fn, NULL)
                        : cudaLaunchKernelExC(&lc, k->fn, NULL);
        }
        if (kind == LAUNCH_COOP)
            return ptsz ? cudaLaunchCooperativeKernel_ptsz(k->fn, grid, block, NULL,
                                                           k->shared_mem, stream)
                        : cudaLaunchCooperativeKernel(k->fn, grid, block, NULL, k->shared_mem,
                                                      stream);
        return ptsz ? cudaLaunchKernel_ptsz(k->fn, grid, block, NULL, k->shared_mem, stream)
                    : cudaLaunchKernel(k->fn, grid, block, NULL, k->shared_mem, stream);
    }

    if (kind == LAUNCH_EX) {
        CUlaunchConfig lc = {.gridDimX = grid_x, .gridDimY = k->grid[1], .gridDimZ = k->grid[2],
                             .blockDimX = k->block[0], .blockDimY = k->block[1],
                             .blockDimZ = k->block[2], .sharedMemBytes = k->shared_mem,
                             .hStream = stream};
        r = ptsz ? cuLaunchKernelEx_ptsz(&lc, k->fn, NULL, NULL)
                 : cuLaunchKernelEx(&lc, k->fn, NULL, NULL);
    } else if (kind == LAUNCH_COOP) {
        r = (ptsz ? cuLaunchCooperativeKernel_ptsz : cuLaunchCooperativeKernel)(
            k->fn, grid_x, k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
            k->shared_mem, stream, NULL);
    } else {
        r = (ptsz ? cuLaunchKernel_ptsz : cuLaunchKernel)(k->fn, grid_x, k->grid[1], k->grid[2],
                                                          k->block[0], k->block[1], k->block[2],
                                                          k->shared_mem, stream, NULL, NULL);
    }
    return r;
}

/*
 * --invalid-every: the same launch with an empty block, which the runtime
 * refuses before calling the driver. Expected to fail, so only another
 * outcome counts as a failure.
 */
static int launch_refused_by_runtime(const struct decode_config *cfg, const struct kernel_type *k,
                                     enum launch_kind kind, int position, cudaStream_t stream)
{
    struct kernel_type empty = *k;
    empty.block[0] = 0;
    return launch_one(cfg, &empty, kind, position, stream) != cudaErrorInvalidConfiguration;
}

static int launch_graph(const struct decode_config *cfg, CUgraphExec graph, cudaStream_t stream)
{
    if (cfg->api == API_RUNTIME)
        return cfg->per_thread_stream ? cudaGraphLaunch_ptsz(graph, stream)
                                      : cudaGraphLaunch(graph, stream);
    return cfg->per_thread_stream ? cuGraphLaunch_ptsz(graph, stream)
                                  : cuGraphLaunch(graph, stream);
}

static int copy(const struct decode_config *cfg, void *host, void *device, size_t bytes,
                int to_device)
{
    int ptsz = cfg->per_thread_stream;
    if (cfg->api == API_RUNTIME) {
        enum cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        void *dst = to_device ? device : host;
        const void *src = to_device ? host : device;
        return ptsz ? cudaMemcpy_ptds(dst, src, bytes, kind) : cudaMemcpy(dst, src, bytes, kind);
    }
    if (to_device)
        return (ptsz ? cuMemcpyHtoD_v2_ptds : cuMemcpyHtoD_v2)((CUdeviceptr)(uintptr_t)device,
                                                                host, bytes);
    return (ptsz ? cuMemcpyDtoH_v2_ptds : cuMemcpyDtoH_v2)(host, (CUdeviceptr)(uintptr_t)device,
                                                            bytes);
}

/* The end-of-token sync: copying the logits back, or an explicit sync. */
static int end_of_token(const struct decode_config *cfg, int token, cudaStream_t stream,
                        CUevent event, void *logits_host, void *logits_device)
{
    enum sync_kind kind = cfg->sync == SYNC_MIXED ? (enum sync_kind)(token % 4) : cfg->sync;
    int ptsz = cfg->per_thread_stream;
    int rt = cfg->api == API_RUNTIME;

    switch (kind) {
    case SYNC_STREAM:
        if (rt)
            return ptsz ? cudaStreamSynchronize_ptsz(stream) : cudaStreamSynchronize(stream);
        return ptsz ? cuStreamSynchronize_ptsz(stream) : cuStreamSynchronize(stream);
    case SYNC_DEVICE:
        return rt ? cudaDeviceSynchronize() : cuCtxSynchronize();
    case SYNC_EVENT:
        if (rt) {
            int r = cudaEventRecord(event, stream);
            return r ? r : cudaEventSynchronize(event);
        } else {
            int r = cuEventRecord(event, stream);
            return r ? r : cuEventSynchronize(event);
        }
    default:
        return copy(cfg, logits_host, logits_device, cfg->logits_bytes, 0);
    }
}

/* The calling thread's schedstat (on-CPU time, run-queue wait, timeslices), read between two clock
 * readings so a test can tell which runs the read saw. */
static void read_schedstat(struct schedstat_reading *reading)
{
    FILE *schedstat;

    reading->read_start_ns = cusim_now_ns();
    schedstat = fopen("/proc/thread-self/schedstat", "r");
    if (schedstat) {
        unsigned long long on_cpu, run_delay, slices;
        /* "0 0 0" where the kernel keeps no sched_info: a thread that has run has had a timeslice */
        if (fscanf(schedstat, "%llu %llu %llu", &on_cpu, &run_delay, &slices) == 3 && slices > 0) {
            reading->on_cpu_ns = on_cpu;
            reading->run_delay_ns = run_delay;
            reading->timeslices = slices;
            reading->read = 1;
        }
        fclose(schedstat);
    }
    reading->read_end_ns = cusim_now_ns();
}

/* The calling thread's schedstat, then its voluntary_ctxt_switches / nonvoluntary_ctxt_switches,
 * each read between two clock readings. */
static void read_switch_counters(struct worker_summary *summary)
{
    char line[256];
    FILE *status;

    read_schedstat(&summary->schedstat);

    summary->counters_read_start_ns = cusim_now_ns();
    status = fopen("/proc/thread-self/status", "r");
    if (status) {
        while (fgets(line, sizeof(line), status)) {
            unsigned long long n;
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) == 1)
                summary->voluntary_switches = n;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &n) == 1)
                summary->nonvoluntary_switches = n;
        }
        fclose(status);
    }
    summary->counters_read_end_ns = cusim_now_ns();
}

/*
 * The workload's own profiler starting (START) or stopping: libcudasim_profiler.so, beside the
 * launcher's libraries, loaded as Python loads an extension (RTLD_LOCAL), its CUPTI calls bound
 * as Kineto's are inside libtorch_cuda.so. Returns nonzero when it cannot run.
 */
static int cupti_client(int start)
{
    static void *library;
    if (!library) {
        char path[4096];
        Dl_info self;
        const char *slash;
        if (!dladdr((void *)cusim_now_ns, &self) || !(slash = strrchr(self.dli_fname, '/')))
            return 1;
        snprintf(path, sizeof(path), "%.*s/libcudasim_profiler.so", (int)(slash - self.dli_fname), self.dli_fname);
        library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            fprintf(stderr, "cudasim: --cupti-client: %s\n", dlerror());
            return 1;
        }
    }
    if (start) {
        cupti_client_start_fn fn = (cupti_client_start_fn)(uintptr_t)dlsym(library, "cupti_client_start");
        return !fn || fn() != 0;
    }
    cupti_client_stop_fn fn = (cupti_client_stop_fn)(uintptr_t)dlsym(library, "cupti_client_stop");
    client_ran = fn && fn(&client_result) == 0;
    return !client_ran;
}

static void *decode_worker(void *arg)
{
    struct worker *w = arg;
    const struct decode_config *cfg = w->cfg;
    const struct model *m = w->model;
    uint64_t rng = cfg->seed * 1000003ull + (uint64_t)w->proc_index * 1009ull +
                   (uint64_t)w->thread_index;
    cudaStream_t stream = NULL;
    CUevent event = NULL;
    void *logits_device = NULL, *weights_device = NULL;
    void *logits_host = calloc(1, cfg->logits_bytes);
    void *weights_host = calloc(1, cfg->weights_bytes);
    int launches_since_stall = 0;
    int launches_since_refused = 0;
    int collectives = 0; /* this rank's, for --skip-collective */
    struct comm_stream comm = {0};
    int stalls = cfg->stall_every && (cfg->stall_rank < 0 || cfg->stall_rank == w->proc_index);
    int failed = 0;

    w->summary->pid = getpid();
    w->summary->tid = (int32_t)syscall(SYS_gettid);
    w->summary->proc_index = w->proc_index;
    w->summary->thread_index = w->thread_index;

    if (!logits_host || !weights_host ||
        cuMemAlloc_v2((CUdeviceptr *)&logits_device, cfg->logits_bytes) ||
        cuMemAlloc_v2((CUdeviceptr *)&weights_device, cfg->weights_bytes) ||
        cuEventCreate(&event, 0)) {
        w->summary->failed = 1;
        return NULL;
    }
    if (!cfg->per_thread_stream &&
        (cfg->api == API_RUNTIME ? cudaStreamCreate(&stream) : cuStreamCreate(&stream, 0))) {
        w->summary->failed = 1;
        return NULL;
    }
    if (cfg->ranks && cfg->collective_stream != COLLECTIVE_SAME &&
        (cuStreamCreate(&comm.stream, 0) || cuEventCreate(&comm.compute_done, 0) ||
         cuEventCreate(&comm.comm_done, 0))) {
        w->summary->failed = 1;
        return NULL;
    }

    read_schedstat(&w->summary->schedstat_at_start);
    w->summary->start_ns = cusim_now_ns();
    failed |= copy(cfg, weights_host, weights_device, cfg->weights_bytes, 1);

    /* Graphs replace whole layers; the single kernels around them stay plain launches. */
    enum launch_kind edge_kind =
        (cfg->launch == LAUNCH_GRAPH || cfg->launch == LAUNCH_MIXED) ? LAUNCH_KERNEL : cfg->launch;

    for (int token = 0; token < cfg->tokens && !failed; token++) {
        int position = token;
        if (w->thread_index == 0 && w->proc_index == 0 && token == client_from)
            failed |= cupti_client(1);
        if (w->thread_index == 0 && w->proc_index == 0 && token == client_to)
            failed |= cupti_client(0);
        failed |= launch_one(cfg, &m->embedding, edge_kind, position, stream);
        for (int layer = 0; layer < cfg->layers && !failed; layer++) {
            enum launch_kind layer_kind = cfg->launch;
            if (layer_kind == LAUNCH_MIXED && splitmix64(&rng) % 4 == 0)
                layer_kind = LAUNCH_GRAPH;
            if (layer_kind == LAUNCH_GRAPH)
                failed |= launch_graph(cfg, m->layer_graph, stream);
            for (int k = 0; layer_kind != LAUNCH_GRAPH && k < cfg->kernels_per_layer && !failed; k++) {
                enum launch_kind kind = layer_kind;
                if (kind == LAUNCH_MIXED)
                    kind = (enum launch_kind)(splitmix64(&rng) % 3);
                failed |= launch_one(cfg, &m->layer_kernels[k], kind, position, stream);
                if (cfg->invalid_every && ++launches_since_refused >= cfg->invalid_every) {
                    launches_since_refused = 0;
                    failed |= launch_refused_by_runtime(cfg, &m->layer_kernels[k], kind, position,
                                                        stream);
                }
                if (stalls && ++launches_since_stall >= cfg->stall_every) {
                    launches_since_stall = 0;
                    usleep((useconds_t)(cfg->stall_ns / 1000));
                }
            }
            if (cfg->ranks && !failed &&
                !(w->proc_index == cfg->skip_rank && collectives++ == cfg->skip_index))
                failed |= launch_collective(cfg, m, layer, stream, &comm);
        }
        failed |= launch_one(cfg, &m->lm_head, edge_kind, position, stream);
        failed |= end_of_token(cfg, token, stream, event, logits_host, logits_device);
        if (!failed) {
            /* sampling and detokenising on the host */
            uint64_t until = cusim_now_ns() + cfg->host_step_ns;
            while (cusim_now_ns() < until)
                ;
            w->summary->tokens++;
        }
    }
    if (w->thread_index == 0 && w->proc_index == 0 && client_from >= 0 && client_to >= cfg->tokens && !failed)
        failed |= cupti_client(0);
    w->summary->end_ns = cusim_now_ns();
    w->summary->failed = failed;
    free(logits_host);
    free(weights_host);
    read_switch_counters(w->summary);
    return NULL;
}

/* Runs every launching thread of one process; the first runs on the calling thread. */
static int run_process(const struct decode_config *cfg, const struct model *m,
                       struct worker_summary *summaries, int proc_index)
{
    int n = cfg->threads;
    struct worker *workers = calloc((size_t)n, sizeof(*workers));
    pthread_t *threads = calloc((size_t)n, sizeof(*threads));
    int failed = 0;

    if (!workers || !threads)
        die("out of memory");
    /* each process initialises CUDA itself, as one that uses CUDA after a fork must (a second
     * call in the parent does nothing); where the driver loads CUDA_INJECTION64_PATH */
    cuInit(0);
    for (int t = 0; t < n; t++) {
        workers[t] = (struct worker){.cfg = cfg, .model = m, .summary = &summaries[t],
                                     .proc_index = proc_index, .thread_index = t};
    }
    if (n == 1) {
        decode_worker(&workers[0]);
    } else {
        for (int t = 0; t < n; t++)
            if (pthread_create(&threads[t], NULL, decode_worker, &workers[t]))
                die("cannot create a thread");
        for (int t = 0; t < n; t++)
            pthread_join(threads[t], NULL);
    }
    for (int t = 0; t < n; t++)
        failed |= summaries[t].failed;
    if (cfg->ranks && !failed)
        failed |= cusim_rank_drain();
    free(workers);
    free(threads);
    return failed;
}

static void usage(FILE *out)
{
    fputs("usage: " CUDASIM_BINARY_NAME " decode [options]\n"
          "\n"
          "Simulates an LLM decode loop on a virtual GPU: per token, an embedding kernel,\n"
          "LAYERS x KERNELS launches in a burst, an lm_head kernel, a sync, then a host step.\n"
          "Prints tok/s; with --truth, writes what the CUDA stand-in saw as JSON.\n"
          "\n"
          "  --tokens N             tokens to generate per thread (default 200)\n"
          "  --layers N             transformer layers (default 28, as Qwen3-0.6B)\n"
          "  --kernels-per-layer N  launches per layer (default 17)\n"
          "  --api runtime|driver   call the runtime (cuda*) or the driver (cu*) (default runtime)\n"
          "  --launch KIND          kernel|ex|coop|graph|mixed (default kernel)\n"
          "  --sync KIND            end-of-token sync: memcpy|stream|device|event|mixed (default memcpy)\n"
          "  --ptsz                 use the per-thread default stream (_ptsz/_ptds entry points)\n"
          "  --threads N            launching threads per process (default 1)\n"
          "  --procs N              forked processes, each with --threads threads (default 1)\n"
          "  --seed N               seed for kernel shapes, durations and mixed choices (default 42)\n"
          "  --host-us N            host-side step per token, busy CPU (default 200)\n"
          "  --launch-ns N          CPU cost of each launch inside the driver (default 2000)\n"
          "  --kernel-us MIN:MAX    kernel durations on the virtual GPU (default 4:16)\n"
          "  --stall-us N           sleep N us inside a burst ... (default 0)\n"
          "  --stall-every N        ... after every N launches, to model a delayed CPU thread\n"
          "  --invalid-every N      after every N layer launches, one more with an empty block,\n"
          "                         which the runtime refuses (--api runtime; logged in the truth)\n"
          "  --truth FILE           write ground truth JSON (schema: docs/cudasim.md)\n"
          "  --kineto PATH          also write the run as the PyTorch profiler would (Kineto's\n"
          "                         Chrome-trace JSON; .gz: gzipped), one file a process\n"
          "                         (PATH-rankN.json with --procs); docs/cudasim.md\n"
          "  --kineto-layout L      relative (to baseTimeNanoseconds, default) or absolute\n"
          "  --kineto-drift-ppm X   the profiler clock's drift from CLOCK_MONOTONIC (default 40)\n"
          "  --kineto-jitter-ns N   each of its readings off by up to N ns (default 150)\n"
          "  --cupti-client FROM:TO a second CUPTI client in the process (as torch.profiler is)\n"
          "                         profiles tokens [FROM, TO) (--procs 1; the truth's cupti_client)\n"
          "  --ranks N              N processes, each a rank with one virtual device, and after every\n"
          "                         layer a collective (NCCL's kernel names) that ends --collective-us\n"
          "                         after the last rank's kernel of it started (--threads 1)\n"
          "  --collective-us T      a collective's transfer time (default 30)\n"
          "  --collective-stream S  same: on the layer's stream (default); own: on an NCCL stream\n"
          "                         ordered after the layer, the next layer after it; overlap: the\n"
          "                         same, but the next layers run beside it (DDP's all-reduce)\n"
          "  --comm-id ID[,ID...]   communicators, the layers' collectives taking them in turn (default 1)\n"
          "  --collective-timeout-ms MS  a rank waiting this long with nothing moving in the job\n"
          "                         fails, saying who never arrived (default 10000)\n"
          "  --rank-cpus L0:L1:...  pin rank i to CPU list Li (taskset's syntax: 0-3,6)\n"
          "  --stall-rank R         only rank R stalls (--stall-us/--stall-every)\n"
          "  --skip-collective R:N  rank R leaves out its Nth collective (from 0): the ranks'\n"
          "                         sequences disagree, to see how a job fails then\n"
          "  --rank I --job NAME    run rank I alone, joining the other ranks of the job NAME, each\n"
          "                         started the same way (/dev/shm/cudasim-NAME, removed once they\n"
          "                         have all joined)\n"
          "  --quiet                print only the tok/s line\n"
          "  -h, --help             this help\n",
          out);
}

static long parse_long(const char *flag, const char *text, long min, long max)
{
    char *end = NULL;
    long v;
    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || !end || *end || v < min || v > max) {
        fprintf(stderr, "cudasim: %s expects an integer in [%ld, %ld], got '%s'\n", flag, min,
                max, text);
        exit(2);
    }
    return v;
}

/* --comm-id ID[,ID...]: decimal or 0x-prefixed hexadecimal, as NCCL logs a commHash */
static void parse_comm_ids(char *text, struct decode_config *cfg)
{
    char *save = NULL;
    cfg->comms = 0;
    for (char *id = strtok_r(text, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        errno = 0;
        if (cfg->comms == RANKS_MAX_COMMS)
            die("--comm-id: at most 8 communicators");
        cfg->comm_ids[cfg->comms] = strtoull(id, &end, 0);
        if (errno || !end || *end || *id == '-')
            die("--comm-id expects integers (0x for hexadecimal), separated by commas");
        for (int c = 0; c < cfg->comms; c++)
            if (cfg->comm_ids[c] == cfg->comm_ids[cfg->comms])
                die("--comm-id: each communicator once");
        cfg->comms++;
    }
    if (!cfg->comms)
        die("--comm-id expects at least one id");
}

/* --rank-cpus L0:L1:...: one CPU list a rank, each as taskset takes them (0-3,6) */
static void parse_rank_cpus(const char *text, int ranks)
{
    const char *at = text;
    int rank = 0;
    for (;;) {
        CPU_ZERO(&rank_cpus[rank]);
        for (;;) {
            char *end;
            long first, last;
            errno = 0;
            first = strtol(at, &end, 10);
            last = first;
            if (end != at && *end == '-') {
                at = end + 1;
                last = strtol(at, &end, 10);
            }
            if (errno || end == at || first < 0 || last < first || last >= CPU_SETSIZE)
                die("--rank-cpus expects CPU lists (0-3,6) separated by ':', one a rank");
            for (long cpu = first; cpu <= last; cpu++)
                CPU_SET((int)cpu, &rank_cpus[rank]);
            at = end;
            if (*at != ',')
                break;
            at++;
        }
        rank++;
        if (*at == '\0')
            break;
        if (*at != ':' || rank == ranks)
            die("--rank-cpus expects one CPU list a rank, separated by ':'");
        at++;
    }
    if (rank != ranks)
        die("--rank-cpus expects one CPU list a rank, separated by ':'");
}

static int parse_choice(const char *flag, const char *text, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(text, names[i]))
            return i;
    fprintf(stderr, "cudasim: %s does not accept '%s'\n", flag, text);
    exit(2);
}

int main(int argc, char **argv)
{
    static const char *const launch_names[] = {"kernel", "ex", "coop", "graph", "mixed"};
    static const char *const sync_names[] = {"memcpy", "stream", "device", "event", "mixed"};
    static const char *const api_names[] = {"runtime", "driver"};
    enum { OPT_TOKENS = 256, OPT_LAYERS, OPT_KPL, OPT_API, OPT_LAUNCH, OPT_SYNC, OPT_PTSZ,
           OPT_THREADS, OPT_PROCS, OPT_SEED, OPT_HOST_US, OPT_LAUNCH_NS, OPT_KERNEL_US,
           OPT_STALL_US, OPT_STALL_EVERY, OPT_INVALID_EVERY, OPT_TRUTH, OPT_QUIET, OPT_KINETO,
           OPT_KINETO_LAYOUT, OPT_KINETO_DRIFT, OPT_KINETO_JITTER, OPT_CUPTI_CLIENT, OPT_RANKS,
           OPT_COLLECTIVE_US, OPT_COMM_ID, OPT_COLLECTIVE_TIMEOUT, OPT_RANK_CPUS, OPT_STALL_RANK,
           OPT_SKIP_COLLECTIVE, OPT_RANK, OPT_JOB, OPT_COLLECTIVE_STREAM };
    static const char *const collective_stream_names[] = {"same", "own", "overlap"};
    static const char *const layout_names[] = {"absolute", "relative"};
    static const struct option options[] = {
        {"tokens", required_argument, NULL, OPT_TOKENS},
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"kernels-per-layer", required_argument, NULL, OPT_KPL},
        {"api", required_argument, NULL, OPT_API},
        {"launch", required_argument, NULL, OPT_LAUNCH},
        {"sync", required_argument, NULL, OPT_SYNC},
        {"ptsz", no_argument, NULL, OPT_PTSZ},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"procs", required_argument, NULL, OPT_PROCS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"host-us", required_argument, NULL, OPT_HOST_US},
        {"launch-ns", required_argument, NULL, OPT_LAUNCH_NS},
        {"kernel-us", required_argument, NULL, OPT_KERNEL_US},
        {"stall-us", required_argument, NULL, OPT_STALL_US},
        {"stall-every", required_argument, NULL, OPT_STALL_EVERY},
        {"invalid-every", required_argument, NULL, OPT_INVALID_EVERY},
        {"truth", required_argument, NULL, OPT_TRUTH},
        {"kineto", required_argument, NULL, OPT_KINETO},
        {"kineto-layout", required_argument, NULL, OPT_KINETO_LAYOUT},
        {"kineto-drift-ppm", required_argument, NULL, OPT_KINETO_DRIFT},
        {"kineto-jitter-ns", required_argument, NULL, OPT_KINETO_JITTER},
        {"cupti-client", required_argument, NULL, OPT_CUPTI_CLIENT},
        {"ranks", required_argument, NULL, OPT_RANKS},
        {"collective-us", required_argument, NULL, OPT_COLLECTIVE_US},
        {"comm-id", required_argument, NULL, OPT_COMM_ID},
        {"collective-timeout-ms", required_argument, NULL, OPT_COLLECTIVE_TIMEOUT},
        {"rank-cpus", required_argument, NULL, OPT_RANK_CPUS},
        {"stall-rank", required_argument, NULL, OPT_STALL_RANK},
        {"skip-collective", required_argument, NULL, OPT_SKIP_COLLECTIVE},
        {"rank", required_argument, NULL, OPT_RANK},
        {"job", required_argument, NULL, OPT_JOB},
        {"collective-stream", required_argument, NULL, OPT_COLLECTIVE_STREAM},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct decode_config cfg = {
        .tokens = 200, .layers = 28, .kernels_per_layer = QWEN3_LAYER_KERNELS, .threads = 1,
        .procs = 1, .seed = 42, .api = API_RUNTIME, .launch = LAUNCH_KERNEL,
        .sync = SYNC_MEMCPY, .host_step_ns = 200000, .launch_cost_ns = 2000,
        .kernel_min_ns = 4000, .kernel_max_ns = 16000,
        .logits_bytes = QWEN3_VOCAB * sizeof(float), .weights_bytes = 1 << 20,
        .comms = 1, .comm_ids = {1}, .collective_ns = 30000, .collective_timeout_ns = 10000000000ull,
        .stall_rank = -1, .skip_rank = -1, .skip_index = -1, .rank = -1};
    int procs_given = 0;
    const char *truth_path = NULL, *kineto_path = NULL;
    struct kineto_clock kineto = {.relative = 1, .drift_ppm = 40.0, .jitter_ns = 150};
    int quiet = 0, opt;
    struct model model;
    struct worker_summary *summaries;
    int n_workers, failed = 0;
    uint64_t start_ns, end_ns, capacity, launches = 0;
    int64_t tokens = 0;

    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case OPT_TOKENS: cfg.tokens = (int)parse_long("--tokens", optarg, 1, 10000000); break;
        case OPT_LAYERS: cfg.layers = (int)parse_long("--layers", optarg, 1, 1000); break;
        case OPT_KPL: cfg.kernels_per_layer = (int)parse_long("--kernels-per-layer", optarg, 1, 256); break;
        case OPT_API: cfg.api = (enum api_path)parse_choice("--api", optarg, api_names, 2); break;
        case OPT_LAUNCH: cfg.launch = (enum launch_kind)parse_choice("--launch", optarg, launch_names, 5); break;
        case OPT_SYNC: cfg.sync = (enum sync_kind)parse_choice("--sync", optarg, sync_names, 5); break;
        case OPT_PTSZ: cfg.per_thread_stream = 1; break;
        case OPT_THREADS: cfg.threads = (int)parse_long("--threads", optarg, 1, 256); break;
        case OPT_PROCS: cfg.procs = (int)parse_long("--procs", optarg, 1, 64); procs_given = 1; break;
        case OPT_SEED: cfg.seed = (uint64_t)parse_long("--seed", optarg, 0, 0x7fffffffL); break;
        case OPT_HOST_US: cfg.host_step_ns = 1000ull * (uint64_t)parse_long("--host-us", optarg, 0, 10000000); break;
        case OPT_LAUNCH_NS: cfg.launch_cost_ns = (uint64_t)parse_long("--launch-ns", optarg, 0, 100000000); break;
        case OPT_KERNEL_US: {
            char *colon = strchr(optarg, ':');
            if (!colon)
                die("--kernel-us expects MIN:MAX in microseconds");
            *colon = '\0';
            cfg.kernel_min_ns = 1000ull * (uint64_t)parse_long("--kernel-us", optarg, 0, 10000000);
            cfg.kernel_max_ns = 1000ull * (uint64_t)parse_long("--kernel-us", colon + 1, 0, 10000000);
            if (cfg.kernel_max_ns < cfg.kernel_min_ns)
                die("--kernel-us: MAX must not be below MIN");
            break;
        }
        case OPT_STALL_US: cfg.stall_ns = 1000ull * (uint64_t)parse_long("--stall-us", optarg, 0, 10000000); break;
        case OPT_STALL_EVERY: cfg.stall_every = (int)parse_long("--stall-every", optarg, 0, 100000000); break;
        case OPT_INVALID_EVERY: cfg.invalid_every = (int)parse_long("--invalid-every", optarg, 0, 100000000); break;
        case OPT_TRUTH: truth_path = optarg; break;
        case OPT_KINETO: kineto_path = optarg; break;
        case OPT_KINETO_LAYOUT: kineto.relative = parse_choice("--kineto-layout", optarg, layout_names, 2); break;
        case OPT_KINETO_DRIFT:
            kineto.drift_ppm = (double)parse_long("--kineto-drift-ppm", optarg, -1000, 1000);
            break;
        case OPT_KINETO_JITTER:
            kineto.jitter_ns = (uint64_t)parse_long("--kineto-jitter-ns", optarg, 0, 1000000);
            break;
        case OPT_CUPTI_CLIENT: {
            char *colon = strchr(optarg, ':');
            if (!colon)
                die("--cupti-client expects FROM:TO in tokens");
            *colon = '\0';
            client_from = (int)parse_long("--cupti-client", optarg, 0, 10000000);
            client_to = (int)parse_long("--cupti-client", colon + 1, 0, 10000000);
            if (client_to <= client_from)
                die("--cupti-client: TO must be above FROM");
            break;
        }
        case OPT_RANKS: cfg.ranks = (int)parse_long("--ranks", optarg, 1, RANKS_MAX); break;
        case OPT_COLLECTIVE_US:
            cfg.collective_ns = 1000ull * (uint64_t)parse_long("--collective-us", optarg, 1, 10000000);
            break;
        case OPT_COMM_ID: parse_comm_ids(optarg, &cfg); break;
        case OPT_COLLECTIVE_TIMEOUT:
            cfg.collective_timeout_ns = 1000000ull * (uint64_t)parse_long("--collective-timeout-ms", optarg, 1, 86400000);
            break;
        case OPT_RANK_CPUS: cfg.rank_cpus = optarg; break;
        case OPT_RANK: cfg.rank = (int)parse_long("--rank", optarg, 0, RANKS_MAX - 1); break;
        case OPT_COLLECTIVE_STREAM:
            cfg.collective_stream = parse_choice("--collective-stream", optarg, collective_stream_names, 3);
            break;
        case OPT_JOB:
            /* a file name in /dev/shm, and a JSON string in the truth as it is */
            if (!*optarg || strlen(optarg) > 200 ||
                strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(optarg))
                die("--job expects a name of letters, digits, '.', '_' and '-' (at most 200)");
            cfg.job = optarg;
            break;
        case OPT_STALL_RANK: cfg.stall_rank = (int)parse_long("--stall-rank", optarg, 0, RANKS_MAX - 1); break;
        case OPT_SKIP_COLLECTIVE: {
            char *colon = strchr(optarg, ':');
            if (!colon)
                die("--skip-collective expects RANK:N");
            *colon = '\0';
            cfg.skip_rank = (int)parse_long("--skip-collective", optarg, 0, RANKS_MAX - 1);
            cfg.skip_index = (int)parse_long("--skip-collective", colon + 1, 0, 100000000);
            *colon = ':';
            break;
        }
        case OPT_QUIET: quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    if (cfg.ranks) {
        /* each rank a process, as torchrun starts them: --procs, if given, must say the same */
        if (procs_given && cfg.procs != cfg.ranks)
            die("--ranks N runs N processes: --procs, if given, must be N too");
        if (cfg.threads != 1)
            die("--ranks needs --threads 1: a rank's collectives come from one launching thread");
        cfg.procs = cfg.ranks;
        if (cfg.rank_cpus)
            parse_rank_cpus(cfg.rank_cpus, cfg.ranks);
        if (cfg.skip_rank >= cfg.ranks || cfg.stall_rank >= cfg.ranks || cfg.rank >= cfg.ranks)
            die("--skip-collective / --stall-rank / --rank: no such rank");
        if ((cfg.rank >= 0) != (cfg.job != NULL))
            die("--rank I and --job NAME go together: this process is rank I of the job NAME");
        if (cfg.rank >= 0) {
            /* one rank, this process: pinned before CUDA starts (its CUPTI thread inherits the mask) */
            cfg.procs = 1;
            if (cfg.rank_cpus && sched_setaffinity(0, sizeof(rank_cpus[cfg.rank]), &rank_cpus[cfg.rank])) {
                fprintf(stderr, "cudasim: rank %d: cannot pin to CPUs: %s\n", cfg.rank, strerror(errno));
                return 2;
            }
        }
    } else if (cfg.rank_cpus || cfg.stall_rank >= 0 || cfg.skip_rank >= 0 || cfg.rank >= 0 || cfg.job ||
               cfg.collective_stream != COLLECTIVE_SAME) {
        die("--rank-cpus, --stall-rank, --skip-collective, --rank, --job and --collective-stream need --ranks");
    }
    if (client_from >= 0 && (cfg.procs != 1 || cfg.ranks))
        die("--cupti-client needs --procs 1 (and no --ranks)");
    if (cfg.invalid_every && cfg.api != API_RUNTIME)
        die("--invalid-every needs --api runtime: the runtime is what refuses the launch");
    if (strcmp(argv[optind], "decode") != 0) {
        fprintf(stderr, "cudasim: unknown mode '%s' (known: decode)\n", argv[optind]);
        return 2;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "cudasim: unexpected argument '%s'\n", argv[optind + 1]);
        return 2;
    }

    n_workers = cfg.procs * cfg.threads;
    capacity = records_per_worker(&cfg) * (uint64_t)n_workers;
    if (cusim_log_init(capacity))
        die("cannot map the ground-truth log");
    summaries = mmap(NULL, sizeof(*summaries) * (size_t)n_workers, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (summaries == MAP_FAILED)
        die("cannot map worker summaries");
    cusim_set_launch_cost_ns(cfg.launch_cost_ns);
    /* the arrival table holds each communicator's collectives of two tokens, twice what a rank can run
     * ahead of the slowest (every token ends in a sync that waits for its collectives) */
    if (cfg.job) {
        char why[512];
        if (!(rank_job = cusim_ranks_open(cfg.job, cfg.ranks, cfg.comms, cfg.comm_ids,
                                          2 * (cfg.layers / cfg.comms + 1) + 8, cfg.collective_ns,
                                          cfg.collective_timeout_ns, why, sizeof(why)))) {
            fprintf(stderr, "cudasim: rank %d: %s\n", cfg.rank, why);
            return 2;
        }
    } else if (cfg.ranks &&
               !(rank_job = cusim_ranks_create(cfg.ranks, cfg.comms, cfg.comm_ids, 2 * (cfg.layers / cfg.comms + 1) + 8,
                                               cfg.collective_ns, cfg.collective_timeout_ns))) {
        die("cannot map the ranks' shared arrival table");
    }
    cuInit(0);
    build_model(&model, &cfg);

    start_ns = cusim_now_ns();
    kineto.offset_ns = kineto_realtime_offset_ns();
    kineto.t0_ns = start_ns;
    kineto.seed = cfg.seed;
    kineto.first_device = cfg.job ? cfg.rank : 0;
    kineto.world = cfg.ranks;
    if (cfg.procs == 1 && !cfg.ranks) {
        failed = run_process(&cfg, &model, summaries, 0);
    } else if (cfg.job) {
        /* --rank I --job NAME: this process is the one rank */
        if (cusim_rank_attach(rank_job, cfg.rank)) {
            fprintf(stderr, "cudasim: rank %d: cannot join the job %s\n", cfg.rank, cfg.job);
            failed = 1;
        } else {
            failed = run_process(&cfg, &model, summaries, cfg.rank);
        }
        cusim_ranks_close(rank_job, cfg.job);
    } else {
        pid_t *children = calloc((size_t)cfg.procs, sizeof(*children));
        if (!children)
            die("out of memory");
        fflush(NULL);
        for (int p = 0; p < cfg.procs; p++) {
            children[p] = fork();
            if (children[p] < 0)
                die("fork failed");
            /* exit(), not _exit(): a child ends like a program, running its atexit handlers
             * (a CUPTI collector flushes its last records there; stdout was flushed above) */
            if (children[p] == 0) {
                if (rank_job) {
                    /* before CUDA starts (and the CUPTI worker it may start inherits the mask) */
                    if (cfg.rank_cpus && sched_setaffinity(0, sizeof(rank_cpus[p]), &rank_cpus[p])) {
                        fprintf(stderr, "cudasim: rank %d: cannot pin to CPUs: %s\n", p, strerror(errno));
                        exit(1);
                    }
                    if (cusim_rank_attach(rank_job, p))
                        die("cannot attach a rank to the job");
                }
                exit(run_process(&cfg, &model, summaries + p * cfg.threads, p) ? 1 : 0);
            }
        }
        for (int p = 0; p < cfg.procs; p++) {
            int status = 0;
            if (waitpid(children[p], &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                failed = 1;
        }
        free(children);
    }
    end_ns = cusim_now_ns();

    for (int w = 0; w < n_workers; w++)
        tokens += summaries[w].tokens;
    for (uint64_t i = 0; i < cusim_log_count(); i++)
        launches += cusim_log_records()[i].kind == CUSIM_KIND_LAUNCH;

    if (!quiet) {
        printf("%s decode: %d process(es) x %d thread(s), %" PRId64 " tokens, %" PRIu64
               " launches in %.3f s\n",
               CUDASIM_BINARY_NAME, cfg.procs, cfg.threads, tokens, launches,
               (double)(end_ns - start_ns) / 1e9);
        if (cfg.procs == 1 && !cfg.ranks)
            printf("virtual GPU busy: %.1f%%\n",
                   100.0 * (double)cusim_gpu_busy_ns() / (double)(end_ns - start_ns));
    }
    printf("tok/s: %.2f\n", (double)tokens / ((double)(end_ns - start_ns) / 1e9));
    fflush(stdout);

    if (cusim_log_overflow())
        fprintf(stderr, "cudasim: ground-truth log overflowed by %" PRIu64 " records\n",
                cusim_log_overflow());
    if (truth_path) {
        FILE *out = fopen(truth_path, "w");
        if (!out) {
            fprintf(stderr, "cudasim: cannot write %s: %s\n", truth_path, strerror(errno));
            return 2;
        }
        if (truth_write_json(out, &cfg, CUDASIM_BINARY_NAME, summaries, n_workers, start_ns,
                             end_ns, kineto_path ? &kineto : NULL, kineto_path,
                             client_ran ? &client_result : NULL) ||
            fclose(out)) {
            fprintf(stderr, "cudasim: failed writing %s\n", truth_path);
            return 2;
        }
    }
    if (kineto_path && kineto_write(kineto_path, &kineto, summaries, n_workers, cfg.procs, start_ns, end_ns))
        return 2;
    if (failed) {
        fprintf(stderr, "cudasim: a launching thread failed\n");
        return 1;
    }
    return cusim_log_overflow() ? 3 : 0;
}
