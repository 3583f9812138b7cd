/*
 * The virtual GPUs of a job of ranks, resolved late. On one virtual GPU (vgpu.c) a kernel's start
 * and end are known when it is enqueued. A collective's kernel is different: it starts like any
 * kernel, then spins until every rank's kernel of the same collective has started, and ends a
 * transfer time after the last one did. So each rank queues its GPU work here, in shared memory,
 * and an item is resolved as soon as what it depends on is known:
 * - a kernel or copy at the head of its rank's queue: at once (start = the latest of its
 *   enqueue, the engine's last end and its stream's last end, as vgpu.c);
 * - a collective at the head: its start is known at once and published in the arrival table
 *   (communicator, sequence number, rank); its end when the last rank has arrived.
 * Any rank resolves every rank, under one process-shared lock, whenever it enqueues or waits: a
 * rank whose launching thread is off the CPU (preempted, stalled) still has its GPU run, exactly
 * as a real GPU runs what was queued while its launcher sleeps. Resolution depends only on the
 * times recorded, never on when it is done, so the timeline is the same whoever resolves it.
 * A launch never waits for the lock (kick): each rank publishes its own work without it, and
 * resolves only if the lock is free, else leaves it to the holder; so a rank preempted while it
 * holds the lock delays no other rank's launches, only, at worst, a sync due meanwhile.
 *
 * Liveness: an item's arrival is published at the latest when the enqueue that makes it known
 * happens, and that is never after its start, so a waiter learns every end before it is due.
 */
#define _GNU_SOURCE
#include "ranks.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JOB_MAGIC 0x72616e6bu /* "rank" */

/*
 * The kernels a collective runs, as NCCL 2.2x builds name them. src/device/generate.py
 * (NVIDIA/nccl) specialises a kernel for a few functions (best_kernel(): AllReduce Sum of each type
 * with the RING or TREE algorithm and the LL protocol) and sends every other one through
 * `ncclDevKernel_Generic`, which names no operation; both take `ncclDevKernelArgs4K`, a typedef of
 * `ncclDevKernelArgsStorage<(4<<10)>` (src/include/device.h). CUPTI reports the mangled symbol;
 * Kineto and Nsight show it demangled, `ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)`.
 * The mangled name is the one a dump of librccl.so's symbols shows (RCCL keeps NCCL's declaration).
 * (The PyTorch traces in shared/real-traces/kineto hold an older NCCL's kernel,
 * `ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)`, from before
 * NCCL generated its kernels as ncclDevKernel_*, the Generic one among them.)
 */
static const char *const op_names[RANKS_OP_COUNT] = {
    [RANKS_OP_NONE] = "",
    [RANKS_OP_GENERIC] = "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE",
    [RANKS_OP_ALLREDUCE_LL] = "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE",
};
static const char *const op_demangled[RANKS_OP_COUNT] = {
    [RANKS_OP_NONE] = "",
    [RANKS_OP_GENERIC] = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
    [RANKS_OP_ALLREDUCE_LL] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
};

const char *ranks_op_name(int op) { return op > 0 && op < RANKS_OP_COUNT ? op_names[op] : "?"; }

const char *ranks_op_demangled(int op) { return op > 0 && op < RANKS_OP_COUNT ? op_demangled[op] : "?"; }

/* One collective's arrivals: which ranks' kernels have started, and when. */
struct arrival {
    uint64_t seq; /* the collective the slot holds, or RANKS_NONE */
    uint64_t mask;
    uint64_t last_ns;
    int32_t arrived;
    int32_t op;
    int32_t last_rank;
    int32_t pad;
    uint64_t at_ns[]; /* per rank */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t arrival_size(int ranks)
{
    return (sizeof(struct arrival) + (size_t)ranks * sizeof(uint64_t) + 63) & ~(size_t)63;
}

static size_t gpus_offset(void) { return (sizeof(struct ranks_job) + 63) & ~(size_t)63; }

size_t ranks_job_size(int ranks, int comms, int window)
{
    return gpus_offset() + (size_t)ranks * sizeof(struct ranks_gpu) +
           (size_t)comms * (size_t)window * arrival_size(ranks);
}

struct ranks_gpu *ranks_gpu_of(struct ranks_job *job, int rank)
{
    return (struct ranks_gpu *)((char *)job + gpus_offset()) + rank;
}

static struct arrival *arrival_of(struct ranks_job *job, int comm, uint64_t seq)
{
    size_t slot = (size_t)comm * (size_t)job->window + (size_t)(seq % (uint64_t)job->window);
    return (struct arrival *)((char *)job + job->arrivals_offset + slot * job->arrival_size);
}

int ranks_job_init(struct ranks_job *job, int ranks, int comms, const uint64_t *comm_ids, int window,
                   uint64_t transfer_ns, uint64_t timeout_ns)
{
    pthread_mutexattr_t attr;

    if (ranks < 1 || ranks > RANKS_MAX || comms < 1 || comms > RANKS_MAX_COMMS || window < 1) {
        errno = EINVAL;
        return -1;
    }
    job->ranks = ranks;
    job->comms = comms;
    job->window = window;
    job->transfer_ns = transfer_ns;
    job->timeout_ns = timeout_ns;
    memcpy(job->comm_ids, comm_ids, (size_t)comms * sizeof(*comm_ids));
    job->arrival_size = arrival_size(ranks);
    job->arrivals_offset = gpus_offset() + (size_t)ranks * sizeof(struct ranks_gpu);
    /* robust: a rank killed while it holds the lock fails the job instead of hanging every other */
    if (pthread_mutexattr_init(&attr) || pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) ||
        pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) || pthread_mutex_init(&job->lock, &attr))
        return -1;
    pthread_mutexattr_destroy(&attr);
    for (int r = 0; r < ranks; r++) {
        struct ranks_gpu *gpu = ranks_gpu_of(job, r);
        for (int s = 0; s < RANKS_MAX_STREAMS; s++)
            gpu->stream_last[s] = gpu->stream_waits[s][0] = gpu->stream_waits[s][1] = RANKS_NONE;
    }
    for (int c = 0; c < comms; c++)
        for (int s = 0; s < window; s++)
            arrival_of(job, c, (uint64_t)s)->seq = RANKS_NONE;
    __atomic_store_n(&job->magic, JOB_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

int ranks_job_ready(struct ranks_job *job) { return __atomic_load_n(&job->magic, __ATOMIC_ACQUIRE) == JOB_MAGIC; }

int ranks_job_matches(struct ranks_job *job, int ranks, int comms, const uint64_t *comm_ids, int window,
                      uint64_t transfer_ns)
{
    return job->ranks == ranks && job->comms == comms && job->window == window &&
           job->transfer_ns == transfer_ns && !memcmp(job->comm_ids, comm_ids, (size_t)comms * sizeof(*comm_ids));
}

static void wake_all(struct ranks_job *job)
{
    __atomic_add_fetch(&job->progress, 1, __ATOMIC_RELEASE);
    /* a launch that moved nothing anyone waits for costs no system call */
    if (__atomic_load_n(&job->waiters, __ATOMIC_ACQUIRE))
        syscall(SYS_futex, &job->progress, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Lock held. */
static void fail_locked(struct ranks_job *job, const char *message)
{
    if (!job->failed) {
        snprintf(job->message, sizeof(job->message), "%s", message);
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELEASE);
    }
    wake_all(job);
}

/* A lock whose holder died is the job's end, not every other rank's hang. */
static void owner_died(struct ranks_job *job)
{
    pthread_mutex_consistent(&job->lock);
    fail_locked(job, "a rank died while it held the job's lock");
}

static void lock_job(struct ranks_job *job)
{
    if (pthread_mutex_lock(&job->lock) == EOWNERDEAD)
        owner_died(job);
}

static int try_lock_job(struct ranks_job *job)
{
    int result = pthread_mutex_trylock(&job->lock);
    if (result == EOWNERDEAD)
        owner_died(job);
    return result == 0 || result == EOWNERDEAD;
}

static int resolve_locked(struct ranks_job *job);

/*
 * Resolves what was published, without ever waiting for the lock: a launch must not block because
 * another rank was preempted while it held it (the simulation's own coupling, which a real GPU does
 * not have). Whoever fails to take it leaves `dirty` set; whoever holds it clears `dirty` before each
 * pass and looks at it again after letting go, so everything published is resolved by someone.
 */
static void kick(struct ranks_job *job)
{
    for (;;) {
        __atomic_store_n(&job->dirty, 1, __ATOMIC_SEQ_CST);
        if (!try_lock_job(job))
            return;
        while (__atomic_exchange_n(&job->dirty, 0, __ATOMIC_SEQ_CST))
            resolve_locked(job);
        pthread_mutex_unlock(&job->lock);
        if (!__atomic_load_n(&job->dirty, __ATOMIC_SEQ_CST))
            return;
    }
}

/* Every unlock looks at `dirty` after it (kick's rule). */
static void unlock_job(struct ranks_job *job)
{
    pthread_mutex_unlock(&job->lock);
    if (__atomic_load_n(&job->dirty, __ATOMIC_SEQ_CST))
        kick(job);
}

/* A pass with the lock held: what is published after `dirty` is cleared is seen by the next one. */
static int resolve_held(struct ranks_job *job)
{
    __atomic_store_n(&job->dirty, 0, __ATOMIC_SEQ_CST);
    return resolve_locked(job);
}

void ranks_fail(struct ranks_job *job, const char *message)
{
    lock_job(job);
    fail_locked(job, message);
    unlock_job(job);
}

const char *ranks_failure(struct ranks_job *job)
{
    return __atomic_load_n(&job->failed, __ATOMIC_ACQUIRE) ? job->message : NULL;
}

/* Publishes rank R's start of collective IT. Lock held; -1 when the ranks disagree. */
static int arrive(struct ranks_job *job, int r, const struct ranks_item *it)
{
    struct arrival *a = arrival_of(job, it->comm, it->seq);
    char why[400];

    if (a->seq != it->seq) {
        /* a rank can run at most a token of collectives ahead of the slowest (every token ends in a
         * sync that waits for them all), which the window holds twice over */
        if (a->seq != RANKS_NONE && a->arrived < job->ranks) {
            snprintf(why, sizeof(why),
                     "rank %d launched collective %" PRIu64 " of communicator 0x%" PRIx64
                     " while collective %" PRIu64 " still waits for ranks (more than %d apart)",
                     r, it->seq, job->comm_ids[it->comm], a->seq, job->window);
            fail_locked(job, why);
            return -1;
        }
        memset(a, 0, job->arrival_size);
        a->seq = it->seq;
        a->op = it->op;
    }
    if (a->op != it->op) {
        int other = __builtin_ctzll(a->mask);
        snprintf(why, sizeof(why),
                 "the ranks' sequences of collectives disagree: collective %" PRIu64 " of communicator 0x%" PRIx64
                 " is %s on rank %d but %s on rank %d",
                 it->seq, job->comm_ids[it->comm], ranks_op_demangled(it->op), r, ranks_op_demangled(a->op), other);
        fail_locked(job, why);
        return -1;
    }
    a->at_ns[r] = it->start_ns;
    a->mask |= 1ull << r;
    if (!a->arrived || it->start_ns > a->last_ns || (it->start_ns == a->last_ns && r < a->last_rank)) {
        a->last_ns = it->start_ns;
        a->last_rank = r;
    }
    a->arrived++;
    return 0;
}

/* Whether RANK's item INDEX is resolved: below head, or resolved out of order (another engine's work
 * behind a collective), or so old that its slot holds later work. */
static int is_resolved(struct ranks_gpu *gpu, uint64_t index)
{
    uint64_t tail = __atomic_load_n(&gpu->tail, __ATOMIC_ACQUIRE);
    if (index == RANKS_NONE || index < __atomic_load_n(&gpu->head, __ATOMIC_ACQUIRE) || tail - index > RANKS_QUEUE)
        return 1;
    return index < tail && __atomic_load_n(&gpu->items[index % RANKS_QUEUE].state, __ATOMIC_ACQUIRE) == RANKS_RESOLVED;
}

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Lock held. */
static void finish(struct ranks_gpu *gpu, struct ranks_item *it, uint64_t end_ns)
{
    it->end_ns = end_ns;
    if (it->engine >= 0)
        gpu->engine_free_ns[it->engine] = end_ns;
    else /* a copy holds the whole device */
        gpu->engine_free_ns[0] = gpu->engine_free_ns[1] = end_ns;
    if (it->stream >= 0)
        gpu->stream_done_ns[it->stream] = end_ns;
    gpu->busy_ns += end_ns - it->start_ns;
    __atomic_store_n(&it->state, RANKS_RESOLVED, __ATOMIC_RELEASE);
}

/*
 * Resolves rank R's queue as far as it can. Each stream and each engine runs its items in launch order
 * (a blocked one holds up the later ones on its stream and its engine, not the other engine's), a copy
 * waits for everything before it, and an item made to wait for another (cuStreamWaitEvent) waits for
 * its end. Lock held; -1 when
 * the job failed.
 */
static int resolve_rank(struct ranks_job *job, int r)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, r);
    /* the owner publishes an item by moving tail, after writing it */
    uint64_t tail = __atomic_load_n(&gpu->tail, __ATOMIC_ACQUIRE);
    int blocked[2] = {0, 0}, anything_before = 0;
    uint64_t streams_blocked = 0; /* a bit a stream (RANKS_MAX_STREAMS is 64) */
    int moved = 0;

    for (uint64_t i = gpu->head; i < tail; i++) {
        struct ranks_item *it = &gpu->items[i % RANKS_QUEUE];
        int e = it->engine, ready;
        uint64_t start;

        if (it->state == RANKS_RESOLVED)
            continue;
        ready = e >= 0 ? !blocked[e] : !anything_before;
        if (it->stream >= 0 && (streams_blocked & (1ull << it->stream)))
            ready = 0;
        for (int d = 0; d < 2 && ready; d++)
            ready = is_resolved(gpu, it->deps[d]);
        if (ready && it->state == RANKS_PENDING) {
            start = later(it->ready_ns, e >= 0 ? gpu->engine_free_ns[e]
                                               : later(gpu->engine_free_ns[0], gpu->engine_free_ns[1]));
            if (it->stream >= 0)
                start = later(start, gpu->stream_done_ns[it->stream]);
            for (int d = 0; d < 2; d++) {
                uint64_t end = 0;
                if (it->deps[d] != RANKS_NONE && tail - it->deps[d] <= RANKS_QUEUE)
                    end = gpu->items[it->deps[d] % RANKS_QUEUE].end_ns;
                start = later(start, end);
            }
            it->start_ns = start;
            moved++;
            if (it->kind != RANKS_ITEM_COLLECTIVE) {
                finish(gpu, it, start + it->duration_ns);
                continue;
            }
            if (arrive(job, r, it))
                return -1;
            it->state = RANKS_ARRIVED;
        }
        if (ready) {
            struct arrival *a = arrival_of(job, it->comm, it->seq);
            if (a->arrived == job->ranks) {
                it->last_arrival_ns = a->last_ns;
                it->last_rank = a->last_rank;
                it->duration_ns = a->last_ns + job->transfer_ns - it->start_ns;
                finish(gpu, it, a->last_ns + job->transfer_ns);
                moved++;
                continue;
            }
        }
        /* still waiting: later work on its stream and its engine (on both, for a copy) waits behind it */
        if (e >= 0)
            blocked[e] = 1;
        else
            blocked[0] = blocked[1] = 1;
        if (it->stream >= 0)
            streams_blocked |= 1ull << it->stream;
        anything_before = 1;
    }
    /* the owner takes what is below head without the lock: every item is written before head passes it */
    while (gpu->head < tail && gpu->items[gpu->head % RANKS_QUEUE].state == RANKS_RESOLVED)
        __atomic_store_n(&gpu->head, gpu->head + 1, __ATOMIC_RELEASE);
    return moved;
}

/* Lock held. */
static int resolve_locked(struct ranks_job *job)
{
    int total = 0, moved;
    if (job->failed)
        return 0;
    /* a rank's arrival can complete a collective another rank, already passed over, waits on */
    do {
        moved = 0;
        for (int r = 0; r < job->ranks; r++) {
            int n = resolve_rank(job, r);
            if (n < 0)
                return total;
            moved += n;
        }
        total += moved;
    } while (moved);
    if (total)
        wake_all(job);
    return total;
}

int ranks_resolve(struct ranks_job *job)
{
    int moved;
    lock_job(job);
    moved = resolve_held(job);
    unlock_job(job);
    return moved;
}

/* The owner alone writes its items at tail, tail itself, reported, next_seq and stream_last. */
uint64_t ranks_enqueue(struct ranks_job *job, int rank, const struct ranks_item *item, uint64_t ready_ns)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    struct ranks_item *it;
    uint64_t index;

    if (__atomic_load_n(&job->failed, __ATOMIC_ACQUIRE) || gpu->tail - gpu->reported >= RANKS_QUEUE)
        return RANKS_NONE;
    index = gpu->tail;
    it = &gpu->items[index % RANKS_QUEUE];
    *it = *item;
    it->ready_ns = ready_ns ? ready_ns : now_ns();
    it->state = RANKS_PENDING;
    it->start_ns = it->end_ns = it->last_arrival_ns = 0;
    it->last_rank = -1;
    if (it->kind == RANKS_ITEM_COLLECTIVE)
        it->seq = gpu->next_seq[it->comm]++;
    it->deps[0] = it->deps[1] = RANKS_NONE;
    if (it->stream >= 0) {
        /* what cuStreamWaitEvent made this stream wait for, before its next work */
        memcpy(it->deps, gpu->stream_waits[it->stream], sizeof(it->deps));
        gpu->stream_waits[it->stream][0] = gpu->stream_waits[it->stream][1] = RANKS_NONE;
        gpu->stream_last[it->stream] = index;
    }
    __atomic_store_n(&gpu->tail, index + 1, __ATOMIC_RELEASE);
    kick(job);
    return index;
}

/* Why RANK's head collective cannot end: who never arrived. Lock held. */
static void describe_stall(struct ranks_job *job, int rank, uint64_t waited_ns, char *out, size_t room)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    const struct ranks_item *it = &gpu->items[gpu->head % RANKS_QUEUE];
    const struct arrival *a = arrival_of(job, it->comm, it->seq);
    size_t used;

    used = (size_t)snprintf(out, room,
                            "rank %d: collective %" PRIu64 " of communicator 0x%" PRIx64
                            " (%s) waited %.3f s for rank(s)",
                            rank, it->seq, job->comm_ids[it->comm], ranks_op_demangled(it->op),
                            (double)waited_ns / 1e9);
    for (int r = 0; r < job->ranks && used < room; r++)
        if (!(a->mask & (1ull << r)))
            used += (size_t)snprintf(out + used, room - used, " %d", r);
    if (used < room)
        snprintf(out + used, room - used,
                 " to launch it: the ranks' sequences of collectives disagree, or a rank stopped");
}

int ranks_wait(struct ranks_job *job, int rank, uint64_t index)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    uint64_t since = now_ns();
    uint32_t seen = __atomic_load_n(&job->progress, __ATOMIC_ACQUIRE);

    for (;;) {
        uint32_t progress;
        uint64_t now, left;
        struct timespec chunk;

        lock_job(job);
        resolve_held(job);
        if (job->failed) {
            unlock_job(job);
            return -1;
        }
        if (is_resolved(gpu, index)) {
            unlock_job(job);
            return 0;
        }
        progress = job->progress;
        now = now_ns();
        /* the timeout counts from the last time anything in the job moved, not from the wait's
         * start: a slow rank that keeps launching is slow, one that launches nothing is stuck */
        if (progress != seen) {
            seen = progress;
            since = now;
        }
        if (now - since >= job->timeout_ns) {
            char why[512];
            describe_stall(job, rank, now - since, why, sizeof(why));
            fail_locked(job, why);
            unlock_job(job);
            return -1;
        }
        __atomic_add_fetch(&job->waiters, 1, __ATOMIC_ACQ_REL);
        unlock_job(job);
        left = job->timeout_ns - (now - since);
        if (left > 100000000ull)
            left = 100000000ull;
        chunk.tv_sec = (time_t)(left / 1000000000ull);
        chunk.tv_nsec = (long)(left % 1000000000ull);
        /* not FUTEX_PRIVATE: the word is in memory every rank's process maps */
        syscall(SYS_futex, &job->progress, FUTEX_WAIT, progress, &chunk, NULL, 0);
        __atomic_sub_fetch(&job->waiters, 1, __ATOMIC_ACQ_REL);
    }
}

int ranks_join(struct ranks_job *job, int rank)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    uint64_t since = now_ns();
    char why[400];

    lock_job(job);
    if (gpu->pid) {
        snprintf(why, sizeof(why), "rank %d joined the job twice (pid %d, then %d)", rank, gpu->pid, (int)getpid());
        fail_locked(job, why);
        unlock_job(job);
        return -1;
    }
    gpu->pid = (int32_t)getpid();
    job->joined++;
    wake_all(job);
    for (;;) {
        uint32_t progress;
        uint64_t waited = now_ns() - since, left;
        struct timespec chunk;
        if (job->failed) {
            unlock_job(job);
            return -1;
        }
        if (job->joined == job->ranks) {
            unlock_job(job);
            return 0;
        }
        if (waited >= job->timeout_ns) {
            size_t used = (size_t)snprintf(why, sizeof(why), "rank %d waited %.3f s for rank(s)", rank,
                                           (double)waited / 1e9);
            for (int r = 0; r < job->ranks && used < sizeof(why); r++)
                if (!ranks_gpu_of(job, r)->pid)
                    used += (size_t)snprintf(why + used, sizeof(why) - used, " %d", r);
            if (used < sizeof(why))
                snprintf(why + used, sizeof(why) - used, " to join the job");
            fail_locked(job, why);
            unlock_job(job);
            return -1;
        }
        progress = job->progress;
        __atomic_add_fetch(&job->waiters, 1, __ATOMIC_ACQ_REL);
        unlock_job(job);
        left = job->timeout_ns - waited;
        if (left > 100000000ull)
            left = 100000000ull;
        chunk.tv_sec = (time_t)(left / 1000000000ull);
        chunk.tv_nsec = (long)(left % 1000000000ull);
        syscall(SYS_futex, &job->progress, FUTEX_WAIT, progress, &chunk, NULL, 0);
        lock_job(job);
        __atomic_sub_fetch(&job->waiters, 1, __ATOMIC_ACQ_REL);
    }
}

int ranks_leave(struct ranks_job *job)
{
    int last;
    lock_job(job);
    last = ++job->left == job->ranks;
    unlock_job(job);
    return last;
}

/* Without the lock: items below head are final (finish() moves head after writing them). */
int ranks_stream_wait(struct ranks_job *job, int rank, int stream, uint64_t index)
{
    uint64_t *waits = ranks_gpu_of(job, rank)->stream_waits[stream];
    if (index == RANKS_NONE)
        return 0;
    for (int d = 0; d < 2; d++) {
        if (waits[d] == RANKS_NONE || waits[d] == index) {
            waits[d] = index;
            return 0;
        }
    }
    return -1;
}

int ranks_take_resolved(struct ranks_job *job, int rank, struct ranks_item *out, int max)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    uint64_t head = __atomic_load_n(&gpu->head, __ATOMIC_ACQUIRE);
    int took = 0;
    for (; took < max && gpu->reported < head; took++)
        out[took] = gpu->items[gpu->reported++ % RANKS_QUEUE];
    return took;
}

uint64_t ranks_last_item(struct ranks_job *job, int rank, int stream)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    uint64_t index;
    lock_job(job);
    if (stream >= 0)
        index = gpu->stream_last[stream];
    else
        index = gpu->tail ? gpu->tail - 1 : RANKS_NONE;
    unlock_job(job);
    return index;
}

int ranks_done_at(struct ranks_job *job, int rank, int stream, uint64_t *done_ns)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    int result = -1;
    lock_job(job);
    if (stream >= 0 ? is_resolved(gpu, gpu->stream_last[stream]) : gpu->head == gpu->tail) {
        *done_ns = stream >= 0 ? gpu->stream_done_ns[stream] : later(gpu->engine_free_ns[0], gpu->engine_free_ns[1]);
        result = 0;
    }
    unlock_job(job);
    return result;
}

int ranks_item_end(struct ranks_job *job, int rank, uint64_t index, uint64_t *end_ns)
{
    struct ranks_gpu *gpu = ranks_gpu_of(job, rank);
    int result = -1;
    lock_job(job);
    if (index == RANKS_NONE || gpu->tail - index > RANKS_QUEUE) {
        *end_ns = 0; /* nothing, or long done: its slot holds later work now */
        result = 0;
    } else if (is_resolved(gpu, index)) {
        *end_ns = gpu->items[index % RANKS_QUEUE].end_ns;
        result = 0;
    }
    unlock_job(job);
    return result;
}
