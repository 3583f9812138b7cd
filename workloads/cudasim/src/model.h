#ifndef CUDASIM_MODEL_H
#define CUDASIM_MODEL_H

#include <stdint.h>
#include "cuda.h"

enum launch_kind { LAUNCH_KERNEL, LAUNCH_EX, LAUNCH_COOP, LAUNCH_GRAPH, LAUNCH_MIXED };
enum sync_kind { SYNC_MEMCPY, SYNC_STREAM, SYNC_DEVICE, SYNC_EVENT, SYNC_MIXED };
enum api_path { API_RUNTIME, API_DRIVER };
enum collective_stream { COLLECTIVE_SAME, COLLECTIVE_OWN, COLLECTIVE_OVERLAP };

struct decode_config {
    int tokens;
    int layers;
    int kernels_per_layer;
    int threads;
    int procs;
    uint64_t seed;
    enum api_path api;
    enum launch_kind launch;
    enum sync_kind sync;
    int per_thread_stream; /* --ptsz: the _ptsz/_ptds entry points and the per-thread stream */
    uint64_t host_step_ns;
    uint64_t launch_cost_ns;
    uint64_t kernel_min_ns;
    uint64_t kernel_max_ns;
    uint64_t stall_ns;  /* injected CPU-side delay inside a burst */
    int stall_every;    /* ... after every this many launches (0: never) */
    int invalid_every;  /* after every this many launches, one the runtime refuses (0: never) */
    uint64_t logits_bytes;
    uint64_t weights_bytes;
    /* --ranks: each process a rank with a collective per layer (0: no ranks, nothing below used) */
    int ranks;
    int comms;                    /* communicators the layers' collectives take in turn */
    uint64_t comm_ids[8];
    uint64_t collective_ns;       /* the transfer: a collective ends this long after its last rank */
    uint64_t collective_timeout_ns;
    int stall_rank;               /* --stall-rank: only this rank stalls (-1: every one) */
    int skip_rank, skip_index;    /* --skip-collective: this rank leaves out its Nth collective (-1: none) */
    const char *rank_cpus;        /* --rank-cpus as given, or NULL */
    int rank;                     /* --rank: this process is that rank alone (-1: every rank, forked) */
    const char *job;              /* --job: the named job region the ranks started one by one share */
    int collective_stream;        /* --collective-stream: enum collective_stream */
};

/* One simulated kernel type: its launch geometry and its duration on the virtual GPU. */
struct kernel_type {
    const char *name;
    CUfunction fn;
    uint64_t duration_ns;
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem;
    int grows_with_position; /* attention kernels: grid.x follows the sequence length */
};

/* What one launching thread did, kept in shared memory so the parent sees children's too. */
/* One read of /proc/thread-self/schedstat between two clock readings. */
struct schedstat_reading {
    uint64_t on_cpu_ns;
    uint64_t run_delay_ns;
    uint64_t timeslices;
    uint64_t read_start_ns;
    uint64_t read_end_ns;
    int32_t read; /* 0 where the kernel keeps no sched_info */
    int32_t pad;
};

struct worker_summary {
    int32_t pid;
    int32_t tid;
    int32_t proc_index;
    int32_t thread_index;
    int64_t tokens;
    uint64_t start_ns;
    uint64_t end_ns;
    int32_t failed;
    int32_t pad;
    /* the kernel's own switch counters for this thread, read as it finished */
    uint64_t voluntary_switches;
    uint64_t nonvoluntary_switches;
    uint64_t counters_read_start_ns;
    uint64_t counters_read_end_ns;
    /* /proc/thread-self/schedstat, read just before: the kernel's sched_info (run_delay: time
     * runnable on a run queue, woken or preempted, before running) */
    struct schedstat_reading schedstat;
    /* the same as the thread began its work: a recorder starts its command held at a gate, after
     * the command's first runs (fork, then waiting at the gate), so the kernel's counts since this
     * reading are what a recording can see */
    struct schedstat_reading schedstat_at_start;
};

uint64_t splitmix64(uint64_t *state);
uint64_t launches_per_token(const struct decode_config *cfg);
uint64_t records_per_worker(const struct decode_config *cfg);

#endif
