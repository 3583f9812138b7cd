/*
 * Ranks: N processes, one virtual device each, whose collective kernels end together. A
 * collective's end depends on other processes' future launches, so the virtual GPUs of a job
 * are not resolved at enqueue (vgpu.c) but later, over a job region in shared memory: every
 * rank's queue of GPU work and an arrival table per communicator (ranks.c).
 */
#ifndef CUDASIM_RANKS_H
#define CUDASIM_RANKS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cudasim.h"

#define RANKS_MAX 64          /* a rank's arrival is one bit of a 64-bit mask */
#define RANKS_MAX_COMMS 8
#define RANKS_MAX_STREAMS 64  /* per rank */
#define RANKS_QUEUE 4096      /* GPU work a rank may have queued and not yet reported */
#define RANKS_NONE UINT64_MAX

/* The collective kernels, as NCCL names them (ranks.c: ranks_op_names). */
enum ranks_op { RANKS_OP_NONE = 0, RANKS_OP_GENERIC = 1, RANKS_OP_ALLREDUCE_LL = 2, RANKS_OP_COUNT };

enum ranks_item_kind { RANKS_ITEM_KERNEL = 1, RANKS_ITEM_COLLECTIVE = 2, RANKS_ITEM_COPY = 3 };
enum ranks_item_state { RANKS_PENDING = 1, RANKS_ARRIVED = 2, RANKS_RESOLVED = 3 };

/* One piece of a rank's GPU work, queued in launch order. */
struct ranks_item {
    uint64_t ready_ns;    /* when it was enqueued (the launch's doorbell) */
    uint64_t duration_ns; /* kernels and copies; a collective's is its ranks' */
    uint64_t start_ns;    /* resolved: the latest of ready, the engine's and its stream's last end */
    uint64_t end_ns;
    uint64_t seq;         /* collectives: its number on its communicator, from 0 */
    uint64_t last_arrival_ns; /* collectives: the latest start of any rank's kernel of it */
    int32_t kind;         /* enum ranks_item_kind */
    int32_t state;        /* enum ranks_item_state */
    int32_t stream;       /* the rank's stream slot; -1 for copies (they wait for the whole engine) */
    int32_t comm;         /* collectives: index of its communicator */
    int32_t op;           /* collectives: enum ranks_op, which every rank must agree on */
    int32_t last_rank;    /* collectives: the rank that arrived last (ties: the lowest) */
    int32_t engine;       /* 0 compute, 1 collectives (NCCL's kernels run beside compute), -1 a copy (both) */
    int32_t pad;
    uint64_t deps[2];     /* items it was made to wait for (cuStreamWaitEvent), or RANKS_NONE */
    /* the owner's, untouched here: what it reports once resolved (process-local pointers) */
    uint64_t log_slot;    /* its truth log record, or RANKS_NONE */
    struct cusim_work work;
};

/* One rank's virtual GPU: its engine, streams and queue. */
struct ranks_gpu {
    int32_t pid;
    int32_t pad;
    uint64_t engine_free_ns[2]; /* compute, collectives */
    uint64_t busy_ns;
    uint64_t stream_done_ns[RANKS_MAX_STREAMS];
    uint64_t stream_last[RANKS_MAX_STREAMS]; /* index of the last item queued on it, or RANKS_NONE */
    uint64_t stream_waits[RANKS_MAX_STREAMS][2]; /* what its next item is to wait for (the owner's) */
    uint64_t next_seq[RANKS_MAX_COMMS];
    uint64_t reported; /* items [reported, head) are resolved and not yet taken by the owner */
    uint64_t head;     /* the first not resolved (later ones may be: another engine's) */
    uint64_t tail;
    struct ranks_item items[RANKS_QUEUE];
};

struct ranks_job {
    uint32_t magic;
    int32_t ranks;
    int32_t comms;
    int32_t window;        /* arrival slots per communicator */
    uint64_t transfer_ns;  /* a collective's kernel ends this long after the last rank's started */
    uint64_t timeout_ns;   /* a wait with no progress anywhere in the job this long fails */
    uint64_t comm_ids[RANKS_MAX_COMMS];
    pthread_mutex_t lock;  /* process-shared and robust: every rank resolves every rank */
    uint32_t progress;     /* futex word: bumped whenever anything resolves */
    uint32_t waiters;
    uint32_t dirty;        /* published work nobody has resolved yet (ranks.c: kick) */
    int32_t joined;        /* ranks that have joined (ranks_join), and left */
    int32_t left;
    int32_t failed;
    char message[512];     /* why the job failed */
    size_t arrivals_offset;
    size_t arrival_size;
    /* then ranks x struct ranks_gpu, then comms x window arrival slots */
};

size_t ranks_job_size(int ranks, int comms, int window);
/* Whether JOB is initialised (another process may still be making it), and made with these options. */
int ranks_job_ready(struct ranks_job *job);
int ranks_job_matches(struct ranks_job *job, int ranks, int comms, const uint64_t *comm_ids, int window,
                      uint64_t transfer_ns);
/*
 * RANK joins the job and waits for every rank to have joined, as ncclCommInitRank does: 0, or -1 (the
 * rank had joined already, or the others did not come within the job's timeout; the job then fails).
 */
int ranks_join(struct ranks_job *job, int rank);
/* RANK is done with the job: 1 when it was the last one, 0 otherwise. */
int ranks_leave(struct ranks_job *job);
/* MEM (ranks_job_size bytes, zeroed, shared by every rank): returns 0, or -1 with errno. */
int ranks_job_init(struct ranks_job *job, int ranks, int comms, const uint64_t *comm_ids, int window,
                   uint64_t transfer_ns, uint64_t timeout_ns);
struct ranks_gpu *ranks_gpu_of(struct ranks_job *job, int rank);
const char *ranks_op_name(int op);
const char *ranks_op_demangled(int op);

/*
 * Queues ITEM (kind, duration, stream, comm, op, the owner's fields) on RANK's GPU (the owner's
 * thread only) and resolves what it can, never waiting for the job's lock: if another rank holds it,
 * that one resolves the item. READY_NS 0: now. Returns its index, or RANKS_NONE when the queue is
 * full (report, then wait for ranks_gpu_of(job, rank)->reported) or the job has failed.
 */
uint64_t ranks_enqueue(struct ranks_job *job, int rank, const struct ranks_item *item, uint64_t ready_ns);
/* Resolves every rank as far as arrivals allow; returns how many items moved. */
int ranks_resolve(struct ranks_job *job);
/* Waits until RANK's item INDEX is resolved: 0, or -1 when the job failed or nothing in the whole job
 * moved for its timeout (the job then fails, with a message saying who never arrived). */
int ranks_wait(struct ranks_job *job, int rank, uint64_t index);
/* Makes STREAM's next item wait for item INDEX (cuStreamWaitEvent): 0, or -1 past two waits. Owner. */
int ranks_stream_wait(struct ranks_job *job, int rank, int stream, uint64_t index);
/* Up to MAX resolved items the owner has not taken, in order, into OUT: how many (0: none). The owner's
 * thread only; takes no lock. */
int ranks_take_resolved(struct ranks_job *job, int rank, struct ranks_item *out, int max);
/* When STREAM's (or, -1, the whole engine's) work queued so far ends; -1 if not yet resolved. */
int ranks_done_at(struct ranks_job *job, int rank, int stream, uint64_t *done_ns);
/* The last item queued on STREAM (-1: any), or RANKS_NONE. */
uint64_t ranks_last_item(struct ranks_job *job, int rank, int stream);
/* When item INDEX ended (0 when it left the queue long ago); -1 if not yet resolved. */
int ranks_item_end(struct ranks_job *job, int rank, uint64_t index, uint64_t *end_ns);
/* Marks the job failed (the first message wins) and wakes every waiter. */
void ranks_fail(struct ranks_job *job, const char *message);
/* Whether the job failed, and why (NULL if not). */
const char *ranks_failure(struct ranks_job *job);

#endif
