/*
 * cudasim's own extensions to the stand-in driver: making simulated kernels
 * and graphs, configuring the virtual GPU, and the ground-truth log that
 * every test compares the recorder against. Real CUDA has none of these.
 */
#ifndef CUDASIM_H
#define CUDASIM_H

#include <stdint.h>
#include <stdio.h>
#include "cuda.h"
/* CUSIM_APIS: every API the driver logs, generated from launchgap's schema/trace.toml */
#include "cudasim_apis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RUNTIME_ERROR: a runtime call refused before it reached the driver (api is NONE). */
enum cusim_kind { CUSIM_KIND_NONE = 0, CUSIM_KIND_LAUNCH = 1, CUSIM_KIND_SYNC = 2, CUSIM_KIND_RUNTIME_ERROR = 3 };

#define CUSIM_API_ENUM(suffix, name, kind) CUSIM_API_##suffix,
enum cusim_api { CUSIM_APIS(CUSIM_API_ENUM) CUSIM_API_COUNT };
#undef CUSIM_API_ENUM

const char *cusim_api_name(int api);

/* One driver-level call, as the driver itself saw it. */
struct cusim_record {
    uint64_t t_enter_ns; /* CLOCK_MONOTONIC at driver entry */
    uint64_t t_exit_ns;  /* CLOCK_MONOTONIC at driver return */
    int32_t kind;        /* enum cusim_kind */
    int32_t api;         /* driver entry point, enum cusim_api */
    int32_t runtime_api; /* runtime entry point that called it, or CUSIM_API_NONE */
    int32_t pid;
    int32_t tid;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_mem;
    uint64_t func;       /* CUfunction or CUgraphExec handle */
    uint64_t stream;     /* stream handle as passed by the caller */
    uint64_t gpu_start_ns; /* launches: when the virtual GPU began it */
    uint64_t gpu_end_ns;   /* launches: when it finished; syncs: the time waited for */
    uint64_t bytes;      /* memcpy size */
    uint32_t graph_nodes;
    int32_t return_code; /* runtime errors: what the runtime returned */
    /* launches of a collective's kernel (--ranks; all zero otherwise) */
    int32_t collective;  /* enum ranks_op: which NCCL kernel (0: not a collective) */
    int32_t rank;        /* the launching process's rank */
    uint64_t comm_id;    /* its communicator */
    uint64_t coll_seq;   /* its number on that communicator, from 0 */
    uint64_t last_arrival_ns; /* when the last rank's kernel of it started */
    int32_t last_rank;
    int32_t pad;
};

/* Simulated kernels and graphs. */
CUfunction cusim_function(const char *name, uint64_t duration_ns);
CUgraphExec cusim_graph(unsigned int nodes, uint64_t duration_ns);

/* CPU time each launch burns inside the driver (real drivers take microseconds). */
void cusim_set_launch_cost_ns(uint64_t ns);
/* Simulated copy bandwidth in bytes per microsecond and fixed latency. */
void cusim_set_copy_model(uint64_t bytes_per_us, uint64_t latency_ns);

/* Called by the runtime just before it enters the driver, so the log names both. */
void cusim_note_runtime_api(int api);
/* Called by the runtime when it refuses a call without entering the driver. */
void cusim_log_runtime_error(int runtime_api, int return_code);

/*
 * Ground-truth log in a shared anonymous mapping: created once before any
 * fork, so forked children append to the same log as their parent.
 */
int cusim_log_init(uint64_t capacity);
uint64_t cusim_log_count(void);
uint64_t cusim_log_overflow(void);
const struct cusim_record *cusim_log_records(void);

/*
 * GPU activity for the stand-in libcupti (cudasim-only: real CUPTI learns the same
 * from inside NVIDIA's driver). The driver reports every call that can make GPU work
 * and the work itself to the hooks the stand-in registers; with none registered it
 * reports nothing and reads no clock.
 */
enum cusim_work_kind { CUSIM_WORK_KERNEL = 1, CUSIM_WORK_GRAPH = 2, CUSIM_WORK_COPY = 3, CUSIM_WORK_SYNC = 4 };

/* One piece of GPU work, or a host thread's wait for it. */
struct cusim_work {
    int32_t kind;            /* enum cusim_work_kind */
    uint32_t correlation_id; /* of the driver call that made it */
    uint64_t start_ns;       /* virtual GPU, CLOCK_MONOTONIC; a sync: the wait's entry */
    uint64_t end_ns;         /* ... its end; a sync: the wait's return */
    uint32_t stream_id;      /* the stream as CUPTI numbers them; 0xffffffff: none */
    uint32_t shared_mem;
    const char *name;        /* kernels: the function's name */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t graph_id;       /* graphs */
    uint32_t graph_nodes;
    uint64_t bytes;          /* copies */
    int32_t copy_kind;       /* copies: 1 host to device, 2 device to host (CUpti_ActivityMemcpyKind) */
    int32_t sync_type;       /* syncs: CUpti_ActivitySynchronizationType */
    uint32_t device_id;      /* the process's device: 0, or its rank with --ranks */
};

/* A driver or runtime call in progress, as the hooks see it. */
struct cusim_call {
    int32_t api;             /* enum cusim_api */
    uint32_t correlation_id; /* 0: no hooks registered */
    uint64_t t_enter_ns;
};

struct cusim_activity_hooks {
    /* a call begins: its correlation id (never 0) */
    uint32_t (*call_begin)(int api);
    /* ... and ends, with what it returns */
    void (*call_end)(const struct cusim_call *call, uint64_t t_exit_ns, int result);
    void (*work)(const struct cusim_work *work);
};

/* NULL turns reporting off. */
void cusim_set_activity_hooks(const struct cusim_activity_hooks *hooks);
/* For the runtime (and the driver's own entry points): a call begins / ends. */
struct cusim_call cusim_call_begin(int api);
int cusim_call_end(const struct cusim_call *call, int result);

/*
 * Ranks (--ranks; ranks.c): a job region every rank's process shares, made before the fork; each
 * rank's process attaches to it before its first launch, and from then on its virtual GPU is the
 * job's (resolved late, so a collective's kernel can end when the last rank's has started).
 * cusim_ranks_create returns NULL with errno set. cusim_rank_attach waits until every rank has attached
 * (as ncclCommInitRank does) and returns 0, or -1 (it said why).
 */
void *cusim_ranks_create(int ranks, int comms, const uint64_t *comm_ids, int window, uint64_t transfer_ns,
                         uint64_t timeout_ns);
int cusim_rank_attach(void *job, int rank);
/* A rank's end: waits until its GPU has finished everything queued, reported: 0, or -1 (said why). */
int cusim_rank_drain(void);
/* The job region named NAME in /dev/shm, for ranks started one by one; NULL with WHY filled. Its name
 * is removed once every rank has attached (or the rendezvous failed). */
void *cusim_ranks_open(const char *name, int ranks, int comms, const uint64_t *comm_ids, int window,
                       uint64_t transfer_ns, uint64_t timeout_ns, char *why, size_t room);
void cusim_ranks_close(void *job, const char *name);
/* A collective's kernel on communicator COMM (an index into cusim_ranks_create's ids): OP is enum
 * ranks_op, which also names it as NCCL does. Each launch takes the communicator's next number. */
CUfunction cusim_collective_function(int op, int comm);
/* A kernel's name as CUPTI reports it (a collective's mangled), and demangled as Kineto shows it. */
const char *cusim_function_name(uint64_t handle);
const char *cusim_function_demangled(uint64_t handle);

/* Virtual GPU accounting for this process. */
uint64_t cusim_gpu_busy_ns(void);
uint64_t cusim_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
