/*
 * cudasim's own run as the PyTorch profiler (Kineto) would have written it: the ground truth's
 * launches, syncs and copies as a Chrome-trace JSON file per process, with its kernels, graph
 * nodes and copies on the GPU, for tests that join a profiler trace to a recording of the same
 * run and check the answer against truth.json.
 *
 * The layout mirrors libkineto's ChromeTraceLogger (output_json.cpp, read for its shapes, and
 * the real traces in shared/real-traces/kineto): a top-level object with schemaVersion,
 * deviceProperties, distributedInfo, then either baseTimeNanoseconds and `ts` in microseconds
 * relative to it (Kineto since 2024) or `ts` in microseconds since the epoch (before), both
 * written with three decimals (nanoseconds: `{}.{:03}`); one event per brace group; GPU work
 * filed under pid = the device index and tid = the stream, its call under the process and the
 * thread (the kernel's thread id), linked by args.correlation; a graph launched with
 * cudaGraphLaunch traced node by node (every node with the launch's correlation id, no graph
 * id); a `Trace` span and a `Record Window End` mark for the profiler's window.
 *
 * Kineto's clock is CLOCK_REALTIME read through the TSC, fitted to the system clock at the
 * profiler's start and end; here a time on CLOCK_MONOTONIC (the truth's) becomes
 *   t + (REALTIME - MONOTONIC, read bracketed at the run's start) + drift_ppm * (t - t0) / 1e6
 *     + jitter,
 * the jitter uniform in [-jitter_ns, jitter_ns], drawn from the seed: the profiler's clock
 * drifts from the recorder's as a TSC fit does, and every reading is off by a little. The
 * truth's `kineto` object holds the offset, t0 and the parameters, so tests know the mapping.
 */
#define _GNU_SOURCE
#include "kineto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "cudasim.h"

/* CUPTI's stream id of the legacy default stream on NVIDIA's driver, as the stand-in numbers it */
#define LEGACY_STREAM_ID 7u

struct out {
    FILE *plain;
    gzFile zipped;
    int failed;
};

static void put(struct out *o, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf)) {
        o->failed = 1;
        return;
    }
    if (o->zipped ? gzwrite(o->zipped, buf, (unsigned)n) != n : fwrite(buf, 1, (size_t)n, o->plain) != (size_t)n)
        o->failed = 1;
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t kineto_realtime_offset_ns(void)
{
    uint64_t best = UINT64_MAX;
    int64_t offset = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t before = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME), after = clock_ns(CLOCK_MONOTONIC);
        if (after - before < best) {
            best = after - before;
            offset = (int64_t)real - (int64_t)(before + (after - before) / 2);
        }
    }
    return offset;
}

/* The profiler's time of MONOTONIC time T: see the top of this file. */
static int64_t profiler_ns(const struct kineto_clock *c, uint64_t t, uint64_t *rng)
{
    int64_t drift = (int64_t)((double)c->drift_ppm * 1e-6 * (double)((int64_t)t - (int64_t)c->t0_ns));
    int64_t jitter = 0;
    if (c->jitter_ns)
        jitter = (int64_t)(splitmix64(rng) % (2 * c->jitter_ns + 1)) - (int64_t)c->jitter_ns;
    return (int64_t)t + c->offset_ns + drift + jitter;
}

/* A time as Kineto writes it: microseconds with three decimals, relative to BASE (0: absolute). */
static void put_us(struct out *o, const char *key, int64_t ns)
{
    if (ns < 0) /* Kineto clamps a time just before its base to 0 */
        ns = 0;
    put(o, "\"%s\": %" PRId64 ".%03" PRId64, key, ns / 1000, ns % 1000);
}

static const char *runtime_or_driver(const struct cusim_record *r, const char **cat)
{
    if (r->runtime_api != CUSIM_API_NONE) {
        *cat = "cuda_runtime";
        return cusim_api_name(r->runtime_api);
    }
    *cat = "cuda_driver";
    return cusim_api_name(r->api);
}

static uint32_t stream_of(uint64_t handle)
{
    return handle ? LEGACY_STREAM_ID + 6u + (uint32_t)(handle % 1000u) : LEGACY_STREAM_ID;
}

static void put_call(struct out *o, const struct kineto_clock *c, uint64_t base, uint64_t *rng,
                     const struct cusim_record *r, uint32_t correlation, int *first)
{
    const char *cat, *name = runtime_or_driver(r, &cat);
    int64_t start = profiler_ns(c, r->t_enter_ns, rng), end = profiler_ns(c, r->t_exit_ns, rng);
    put(o, "%s\n  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n    ",
        *first ? "" : ",", cat, name, r->pid, r->tid);
    put_us(o, "ts", start - (int64_t)base);
    put(o, ", ");
    put_us(o, "dur", end > start ? end - start : 0);
    put(o, ",\n    \"args\": {\n      \"External id\": %u, \"correlation\": %u\n    }\n  }", correlation, correlation);
    *first = 0;
}

static void put_gpu(struct out *o, const struct kineto_clock *c, uint64_t base, uint64_t *rng, const char *cat,
                    const char *name, int device, uint32_t stream, uint64_t start_ns, uint64_t end_ns,
                    uint32_t correlation, uint64_t bytes)
{
    int64_t start = profiler_ns(c, start_ns, rng), end = profiler_ns(c, end_ns, rng);
    put(o, ",\n  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %u,\n    ", cat, name,
        device, stream);
    put_us(o, "ts", start - (int64_t)base);
    put(o, ", ");
    put_us(o, "dur", end > start ? end - start : 0);
    put(o, ",\n    \"args\": {\n      \"External id\": %u, \"queued\": 0, \"device\": %d, \"context\": 1, \"stream\": %u, "
           "\"correlation\": %u",
        correlation, device, stream, correlation);
    if (bytes)
        put(o, ", \"bytes\": %" PRIu64, bytes);
    put(o, "\n    }\n  }");
}

/* One process's file. */
static int write_process(const char *path, const struct kineto_clock *c, const struct cusim_record *recs, uint64_t n,
                         int pid, int device, int world, uint64_t start_ns, uint64_t end_ns)
{
    struct out o = {0};
    size_t len = strlen(path);
    uint64_t rng = c->seed ^ (uint64_t)pid;
    uint64_t base = 0;
    uint32_t correlation = 0;
    int first = 1;

    if (len > 3 && !strcmp(path + len - 3, ".gz"))
        o.zipped = gzopen(path, "wb6");
    else
        o.plain = fopen(path, "w");
    if (!o.zipped && !o.plain)
        return -1;
    if (c->relative)
        base = (uint64_t)profiler_ns(c, start_ns, &rng) - 1000000; /* Kineto's base: before the window */
    put(&o, "\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": %d, \"name\": \"cudasim "
            "virtual GPU\", \"totalGlobalMem\": 0,\n      \"computeMajor\": 0, \"computeMinor\": 0\n    }\n  ],\n",
        device);
    put(&o, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n", device, world);
    if (c->relative)
        put(&o, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRIu64 ",\n", base);
    put(&o, "  \"traceEvents\": [");
    for (uint64_t i = 0; i < n; i++) {
        const struct cusim_record *r = &recs[i];
        if (r->pid != pid || (r->kind != CUSIM_KIND_LAUNCH && r->kind != CUSIM_KIND_SYNC))
            continue;
        correlation++;
        if (r->kind == CUSIM_KIND_LAUNCH && r->collective) {
            /* the c10d call around NCCL's launch, as PyTorch's profiler records it (the real traces in
             * shared/real-traces/kineto: a user_annotation "nccl:all_reduce" on the calling thread),
             * its External id the one the launch and the kernel carry, as Kineto links an op to them */
            int64_t start = profiler_ns(c, r->t_enter_ns, &rng), end = profiler_ns(c, r->t_exit_ns, &rng);
            put(&o, "%s\n  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:all_reduce\", "
                    "\"pid\": %d, \"tid\": %d,\n    ", first ? "" : ",", r->pid, r->tid);
            put_us(&o, "ts", start - (int64_t)base);
            put(&o, ", ");
            put_us(&o, "dur", end > start ? end - start : 0);
            put(&o, ",\n    \"args\": {\n      \"External id\": %u\n    }\n  }", correlation);
            first = 0;
        }
        put_call(&o, c, base, &rng, r, correlation, &first);
        if (r->kind == CUSIM_KIND_LAUNCH && r->graph_nodes) {
            /* node by node, the graph's time split evenly over them (as the CUPTI stand-in does) */
            uint64_t span = r->gpu_end_ns - r->gpu_start_ns;
            for (uint32_t node = 0; node < r->graph_nodes; node++)
                put_gpu(&o, c, base, &rng, "kernel", "cudasim_graph_node", device, stream_of(r->stream),
                        r->gpu_start_ns + span * node / r->graph_nodes,
                        r->gpu_start_ns + span * (node + 1) / r->graph_nodes, correlation, 0);
        } else if (r->kind == CUSIM_KIND_LAUNCH) {
            char name[48];
            snprintf(name, sizeof(name), "cudasim_kernel_%" PRIx64, r->func);
            /* a collective's kernel as Kineto shows NCCL's: demangled */
            put_gpu(&o, c, base, &rng, "kernel", r->collective ? cusim_function_demangled(r->func) : name, device, stream_of(r->stream), r->gpu_start_ns, r->gpu_end_ns,
                    correlation, 0);
        } else if (r->bytes && r->gpu_start_ns) {
            put_gpu(&o, c, base, &rng, "gpu_memcpy",
                    r->api == CUSIM_API_cuMemcpyHtoD_v2 || r->api == CUSIM_API_cuMemcpyHtoD_v2_ptds
                        ? "Memcpy HtoD (Pageable -> Device)" : "Memcpy DtoH (Device -> Pageable)",
                    device, LEGACY_STREAM_ID, r->gpu_start_ns, r->gpu_end_ns, correlation, r->bytes);
        }
    }
    /* the process and its device, the window, and its end mark, as Kineto closes a trace */
    put(&o, ",\n  {\n    \"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %d, \"tid\": 0,\n    "
            "\"args\": {\n      \"name\": \"cudasim\"\n    }\n  },\n  {\n    \"name\": \"process_labels\", \"ph\": \"M\", "
            "\"ts\": 0.000, \"pid\": %d, \"tid\": 0,\n    \"args\": {\n      \"labels\": \"GPU %d\"\n    }\n  }",
        pid, device, device);
    {
        int64_t window_start = profiler_ns(c, start_ns, &rng), window_end = profiler_ns(c, end_ns, &rng);
        put(&o, ",\n  {\n    \"ph\": \"X\", \"cat\": \"Trace\", ");
        put_us(&o, "ts", window_start - (int64_t)base);
        put(&o, ", ");
        put_us(&o, "dur", window_end - window_start);
        put(&o, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n"
                "    \"args\": {\n      \"Op count\": 0\n    }\n  },\n  {\n    \"name\": \"Record Window End\", \"ph\": "
                "\"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", ");
        put_us(&o, "ts", window_end - (int64_t)base);
        put(&o, "\n  }\n  ],\n  \"traceName\": \"%s\"\n}\n", path);
    }
    if (o.zipped ? gzclose(o.zipped) != Z_OK : fclose(o.plain) != 0)
        o.failed = 1;
    return o.failed ? -1 : 0;
}

void kineto_path_of(const char *path, int proc_index, int procs, char *out, size_t room)
{
    const char *dot;
    if (procs == 1) {
        snprintf(out, room, "%s", path);
        return;
    }
    /* trace.json.gz -> trace-rank1.json.gz: one file a process, as each rank writes its own */
    dot = strstr(path, ".json");
    if (!dot)
        dot = path + strlen(path);
    snprintf(out, room, "%.*s-rank%d%s", (int)(dot - path), path, proc_index, dot);
}

int kineto_write(const char *path, const struct kineto_clock *clock, const struct worker_summary *workers,
                 int n_workers, int procs, uint64_t start_ns, uint64_t end_ns)
{
    const struct cusim_record *recs = cusim_log_records();
    uint64_t n = cusim_log_count();
    for (int p = 0; p < procs; p++) {
        char file[4096];
        int pid = -1;
        int device = clock->first_device + p;
        for (int w = 0; w < n_workers; w++)
            if (workers[w].proc_index == device)
                pid = workers[w].pid;
        if (pid < 0)
            continue;
        kineto_path_of(path, device, procs, file, sizeof(file));
        if (write_process(file, clock, recs, n, pid, device, clock->world ? clock->world : procs, start_ns,
                          end_ns) < 0) {
            fprintf(stderr, "cudasim: cannot write %s: %s\n", file, strerror(errno ? errno : EIO));
            return -1;
        }
    }
    return 0;
}
