/*
 * Unit tests of ranks.c, the arrival table that resolves a job's virtual GPUs late: ranks whose
 * collective kernels start at known times give known ends. Every enqueue here names its own moment
 * (ready_ns), so nothing depends on this machine's clock or scheduling, and each expected value is
 * worked out by hand from the rule in ranks.c's header: a kernel starts at the latest of its enqueue,
 * its engine's last end and its stream's last end; a collective's kernel ends TRANSFER after the
 * last rank's kernel of it started, and waits inside itself from its own start to that last start.
 * The timeouts are the only tests that wait (50 ms each).
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "ranks.h"

#define TRANSFER 100

static struct ranks_job *new_job(int ranks, int comms, uint64_t timeout_ns)
{
    static const uint64_t ids[RANKS_MAX_COMMS] = {0x1111, 0x2222};
    size_t size = ranks_job_size(ranks, comms, 8);
    struct ranks_job *job = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (job == MAP_FAILED || ranks_job_init(job, ranks, comms, ids, 8, TRANSFER, timeout_ns)) {
        fprintf(stderr, "cannot make a job\n");
        return NULL;
    }
    return job;
}

static void free_job(struct ranks_job *job, int ranks, int comms)
{
    munmap(job, ranks_job_size(ranks, comms, 8));
}

static uint64_t kernel(struct ranks_job *job, int rank, int stream, uint64_t ready, uint64_t duration)
{
    struct ranks_item it = {.kind = RANKS_ITEM_KERNEL, .duration_ns = duration, .stream = stream,
                            .log_slot = RANKS_NONE};
    return ranks_enqueue(job, rank, &it, ready);
}

static uint64_t collective(struct ranks_job *job, int rank, int comm, int op, uint64_t ready)
{
    struct ranks_item it = {.kind = RANKS_ITEM_COLLECTIVE, .stream = 0, .comm = comm, .op = op,
                            .log_slot = RANKS_NONE};
    return ranks_enqueue(job, rank, &it, ready);
}

/* The resolved item INDEX of RANK (taken in order by ranks_take_resolved until it comes). */
static struct ranks_item item(struct ranks_job *job, int rank, uint64_t index)
{
    return ranks_gpu_of(job, rank)->items[index % RANKS_QUEUE];
}

static uint64_t end_of(struct ranks_job *job, int rank, uint64_t index)
{
    uint64_t end = 0;
    return ranks_item_end(job, rank, index, &end) ? UINT64_MAX : end;
}

/*
 * Rank 0: a kernel at 1,000 for 500 (ends 1,500), its collective enqueued at 1,200 (starts 1,500, when
 * the engine is free), a kernel at 1,300 for 200 behind it. Rank 1 launches its collective at 4,000:
 * the last arrival. Both collectives end 4,000 + 100 = 4,100; rank 0's waited 4,000 - 1,500 = 2,500
 * inside the kernel, rank 1's not at all; rank 0's next kernel runs 4,100 to 4,300.
 */
static void a_collective_ends_a_transfer_after_the_last_rank_started(void)
{
    struct ranks_job *job = new_job(2, 1, 1000000000ull);
    uint64_t k0, c0, k1, c1, done = 0;
    struct ranks_item a, b;

    k0 = kernel(job, 0, 0, 1000, 500);
    c0 = collective(job, 0, 0, RANKS_OP_GENERIC, 1200);
    k1 = kernel(job, 0, 0, 1300, 200);
    CHECK_U64(end_of(job, 0, k0), 1500, "a kernel alone resolves at once");
    CHECK_U64(end_of(job, 0, c0), UINT64_MAX, "a collective with a rank missing has no end yet");
    CHECK_U64(end_of(job, 0, k1), UINT64_MAX, "nor has the kernel queued behind it");
    CHECK(ranks_done_at(job, 0, 0, &done) == -1, "the stream's end is not known while a collective waits");
    CHECK_U64(item(job, 0, c0).start_ns, 1500, "its start is known: it arrived when the engine was free");

    c1 = collective(job, 1, 0, RANKS_OP_GENERIC, 4000);
    a = item(job, 0, c0);
    b = item(job, 1, c1);
    CHECK_U64(a.end_ns, 4100, "rank 0's collective ends the transfer after rank 1's started");
    CHECK_U64(b.end_ns, 4100, "rank 1's ends at the same moment");
    CHECK_U64(a.last_arrival_ns, 4000, "the last arrival is rank 1's start");
    CHECK_U64((uint64_t)a.last_rank, 1, "rank 1 arrived last");
    CHECK_U64(a.last_arrival_ns - a.start_ns, 2500, "rank 0 waited 2,500 inside its kernel");
    CHECK_U64(b.last_arrival_ns - b.start_ns, 0, "rank 1 did not wait");
    CHECK_U64(a.seq, 0, "the communicator's first collective is number 0");
    CHECK_U64(end_of(job, 0, k1), 4300, "the kernel behind it starts when it ends");
    CHECK(ranks_done_at(job, 0, 0, &done) == 0 && done == 4300, "the stream ends with its last kernel");
    CHECK(ranks_done_at(job, 1, -1, &done) == 0 && done == 4100, "rank 1's engine is free at 4,100");
    CHECK_U64(ranks_gpu_of(job, 0)->busy_ns, 500 + 2600 + 200, "a waiting collective keeps its engine busy");
    free_job(job, 2, 1);
}

/* The owner takes its resolved work in launch order, with its times, once each. */
static void the_owner_takes_resolved_work_in_order(void)
{
    struct ranks_job *job = new_job(2, 1, 1000000000ull);
    struct ranks_item out, batch[4];
    kernel(job, 0, 0, 10, 5);
    collective(job, 0, 0, RANKS_OP_GENERIC, 20);
    CHECK(ranks_take_resolved(job, 0, &out, 1) == 1 && out.end_ns == 15, "the kernel first");
    CHECK(ranks_take_resolved(job, 0, &out, 1) == 0, "the collective is not resolved yet");
    collective(job, 1, 0, RANKS_OP_GENERIC, 30);
    CHECK(ranks_take_resolved(job, 0, &out, 1) == 1 && out.kind == RANKS_ITEM_COLLECTIVE && out.end_ns == 130,
          "then the collective, ending at 30 + 100");
    CHECK(ranks_take_resolved(job, 0, &out, 1) == 0, "each once");
    kernel(job, 1, 0, 200, 10);
    kernel(job, 1, 0, 200, 20);
    CHECK(ranks_take_resolved(job, 1, batch, 4) == 3, "a batch: rank 1's collective and two kernels");
    CHECK(batch[0].kind == RANKS_ITEM_COLLECTIVE && batch[1].end_ns == 210 && batch[2].end_ns == 230,
          "in launch order");
    free_job(job, 2, 1);
}

/*
 * An arrival that becomes known only through another rank's: rank 1 queues collective 0 at 100, a
 * kernel (50) and collective 1 at 110, then stops launching. Rank 0 arrives at collective 0 at 1,000:
 * it ends at 1,100 on both; rank 1's kernel runs 1,100-1,150 and its collective 1 starts at 1,150, all
 * resolved by rank 0's enqueue. Rank 0's collective 1, enqueued at 1,120, starts then (its engine free
 * since 1,100) and ends at 1,150 + 100 = 1,250 after waiting 30. Ties go to the lowest rank.
 */
static void a_stopped_rank_still_has_its_gpu_run(void)
{
    struct ranks_job *job = new_job(2, 1, 1000000000ull);
    uint64_t r1c0, r1k, r1c1, r0c0, r0c1, t0, t1;

    r1c0 = collective(job, 1, 0, RANKS_OP_GENERIC, 100);
    r1k = kernel(job, 1, 0, 105, 50);
    r1c1 = collective(job, 1, 0, RANKS_OP_GENERIC, 110);
    r0c0 = collective(job, 0, 0, RANKS_OP_GENERIC, 1000);
    CHECK_U64(end_of(job, 1, r1c0), 1100, "collective 0 ends 100 after rank 0's start at 1,000");
    CHECK_U64(end_of(job, 0, r0c0), 1100, "on both ranks");
    CHECK_U64(item(job, 1, r1c0).last_arrival_ns - item(job, 1, r1c0).start_ns, 900, "rank 1 waited 900");
    CHECK_U64(end_of(job, 1, r1k), 1150, "rank 1's kernel runs after it, with nobody launching on rank 1");
    CHECK_U64(item(job, 1, r1c1).state, RANKS_ARRIVED, "and its collective 1 has arrived, at 1,150");
    CHECK_U64(item(job, 1, r1c1).seq, 1, "numbered 1");
    r0c1 = collective(job, 0, 0, RANKS_OP_GENERIC, 1120);
    CHECK_U64(item(job, 0, r0c1).start_ns, 1120, "rank 0's collective 1 starts when enqueued");
    CHECK_U64(end_of(job, 0, r0c1), 1250, "and ends 100 after rank 1's start at 1,150");
    CHECK_U64(item(job, 0, r0c1).last_arrival_ns - item(job, 0, r0c1).start_ns, 30, "having waited 30");
    CHECK_U64((uint64_t)item(job, 0, r0c1).last_rank, 1, "for rank 1");

    /* collective 2: both start at 2,000: the last arrival is 2,000 and the tie goes to rank 0 */
    t0 = collective(job, 1, 0, RANKS_OP_GENERIC, 2000);
    t1 = collective(job, 0, 0, RANKS_OP_GENERIC, 2000);
    CHECK_U64((uint64_t)item(job, 0, t1).last_rank, 0, "a tie names the lowest rank");
    CHECK_U64(end_of(job, 1, t0), 2100, "and ends 100 later");
    free_job(job, 2, 1);
}

/* Communicators count their collectives apart: an arrival on one completes nothing on another. */
static void communicators_number_their_own_collectives(void)
{
    struct ranks_job *job = new_job(2, 2, 1000000000ull);
    uint64_t a0, a1, b1;
    a0 = collective(job, 0, 0, RANKS_OP_GENERIC, 100);
    a1 = collective(job, 0, 1, RANKS_OP_GENERIC, 200); /* behind a0 on rank 0's stream */
    b1 = collective(job, 1, 1, RANKS_OP_GENERIC, 150);
    CHECK_U64(item(job, 0, a1).seq, 0, "the second communicator's first collective is its number 0");
    CHECK_U64(end_of(job, 0, a0), UINT64_MAX, "rank 1's arrival on communicator 2 ends nothing on 1");
    CHECK_U64(end_of(job, 1, b1), UINT64_MAX, "nor its own, with rank 0's still queued behind another");
    collective(job, 1, 0, RANKS_OP_GENERIC, 300); /* behind b1 on rank 1's stream */
    CHECK_U64(end_of(job, 1, b1), UINT64_MAX, "two ranks each waiting on the other's communicator");
    free_job(job, 2, 2);
    /* (a job like this one deadlocks: it is what the timeout is for) */
}

/* Ranks that launch different kernels as the same collective: the job fails at once, saying so. */
static void disagreeing_ranks_fail_at_once(void)
{
    struct ranks_job *job = new_job(2, 1, 1000000000ull);
    const char *why;
    collective(job, 0, 0, RANKS_OP_GENERIC, 100);
    collective(job, 1, 0, RANKS_OP_ALLREDUCE_LL, 100);
    why = ranks_failure(job);
    CHECK(why && strstr(why, "sequences of collectives disagree") && strstr(why, "communicator 0x1111"),
          "the failure names the disagreement and the communicator");
    CHECK(ranks_wait(job, 0, 0) == -1, "and every wait fails");
    CHECK(collective(job, 0, 0, RANKS_OP_GENERIC, 200) == RANKS_NONE, "as every enqueue does");
    free_job(job, 2, 1);
}

/* A collective rank 1 never launches: the wait ends after the timeout with nothing moving, naming it. */
static void a_rank_that_never_arrives_times_out(void)
{
    struct ranks_job *job = new_job(3, 1, 50000000ull);
    uint64_t c;
    const char *why;
    c = collective(job, 0, 0, RANKS_OP_GENERIC, 100);
    collective(job, 2, 0, RANKS_OP_GENERIC, 100);
    CHECK(ranks_wait(job, 0, c) == -1, "the wait fails");
    why = ranks_failure(job);
    CHECK(why && strstr(why, "rank 0: collective 0 of communicator 0x1111") && strstr(why, "rank(s) 1 to launch it"),
          "naming the collective and the rank that never launched it");
    if (why)
        printf("  (the timeout says: %s)\n", why);
    free_job(job, 3, 1);
}

/* A copy waits for the whole engine, whatever stream the work before it was on. */
static void a_copy_waits_for_the_engine(void)
{
    struct ranks_job *job = new_job(1, 1, 1000000000ull);
    struct ranks_item copy = {.kind = RANKS_ITEM_COPY, .duration_ns = 40, .stream = -1, .log_slot = RANKS_NONE};
    uint64_t c;
    kernel(job, 0, 3, 100, 500);
    c = ranks_enqueue(job, 0, &copy, 200);
    CHECK_U64(item(job, 0, c).start_ns, 600, "the copy starts when stream 3's kernel ends");
    CHECK_U64(end_of(job, 0, c), 640, "and lasts its duration");
    free_job(job, 1, 1);
}

/* The rendezvous: a job of one is complete at once; a rank joins once; one that waits alone times out. */
static void ranks_join_once_and_wait_for_each_other(void)
{
    struct ranks_job *job = new_job(1, 1, 1000000000ull);
    const char *why;
    CHECK(ranks_join(job, 0) == 0, "a job of one rank is complete when it joins");
    CHECK(ranks_join(job, 0) == -1, "a rank joins once");
    why = ranks_failure(job);
    CHECK(why && strstr(why, "rank 0 joined the job twice"), "and the failure says so");
    free_job(job, 1, 1);

    job = new_job(3, 1, 50000000ull);
    CHECK(ranks_join(job, 1) == -1, "a rank alone waits out the timeout");
    why = ranks_failure(job);
    CHECK(why && strstr(why, "for rank(s) 0 2 to join the job"), "naming the ranks that never came");
    free_job(job, 3, 1);
}

/* A rank that dies holding the job's lock (killed mid-launch): the next to take it fails the job, saying
 * so, instead of every rank hanging on the lock. The job here is shared with a forked child that locks
 * it and exits. */
static void a_rank_dying_with_the_lock_fails_the_job(void)
{
    static const uint64_t ids[1] = {1};
    size_t size = ranks_job_size(2, 1, 8);
    struct ranks_job *job = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const char *why;
    pid_t child;
    int status = 0;

    if (job == MAP_FAILED || ranks_job_init(job, 2, 1, ids, 8, TRANSFER, 1000000000ull)) {
        CHECK(0, "a shared job");
        return;
    }
    child = fork();
    if (child == 0) {
        pthread_mutex_lock(&job->lock);
        _exit(0);
    }
    waitpid(child, &status, 0);
    CHECK(ranks_resolve(job) == 0, "the next to lock it gets in");
    why = ranks_failure(job);
    CHECK(why && strstr(why, "a rank died while it held the job's lock"), "and the job has failed, saying why");
    munmap(job, size);
}

/*
 * Collectives beside compute (--collective-stream own/overlap): rank 0's compute on stream 0 (engine 0),
 * its collective on stream 1 (engine 1), made to wait for the compute before it, as PyTorch orders its
 * NCCL stream. K1 runs 100-200; C, enqueued at 150, starts at 200 (K1's end) and waits; K2, enqueued at
 * 210, runs 210-310 beside it (another engine, another stream); stream 0 is then made to wait for C, so
 * K3 (at 320) waits too; a copy (at 400) waits for everything. Rank 1 arrives at 1,000: C ends 1,100,
 * K3 runs 1,100-1,150, the copy 1,150-1,190.
 */
static void collectives_beside_compute_are_ordered_only_by_streams(void)
{
    struct ranks_job *job = new_job(2, 1, 1000000000ull);
    struct ranks_item c_item = {.kind = RANKS_ITEM_COLLECTIVE, .stream = 1, .engine = 1, .op = RANKS_OP_GENERIC,
                                .log_slot = RANKS_NONE};
    struct ranks_item copy = {.kind = RANKS_ITEM_COPY, .duration_ns = 40, .stream = -1, .engine = -1,
                              .log_slot = RANKS_NONE};
    struct ranks_item taken[8];
    uint64_t k1, c, k2, k3, cp, done = 0;

    k1 = kernel(job, 0, 0, 100, 100);
    CHECK(ranks_stream_wait(job, 0, 1, k1) == 0, "stream 1 waits for K1");
    c = ranks_enqueue(job, 0, &c_item, 150);
    k2 = kernel(job, 0, 0, 210, 100);
    CHECK(ranks_stream_wait(job, 0, 0, c) == 0, "stream 0 waits for C");
    k3 = kernel(job, 0, 0, 320, 50);
    cp = ranks_enqueue(job, 0, &copy, 400);
    CHECK_U64(item(job, 0, c).start_ns, 200, "the collective starts when the compute it waits for ends");
    CHECK_U64(end_of(job, 0, k2), 310, "compute after it runs beside it, on the other engine");
    CHECK_U64(end_of(job, 0, k3), UINT64_MAX, "compute made to wait for it waits");
    CHECK_U64(end_of(job, 0, cp), UINT64_MAX, "and so does the copy");
    CHECK(ranks_done_at(job, 0, 0, &done) == -1, "stream 0 is not done");
    CHECK(ranks_take_resolved(job, 0, taken, 8) == 1, "the owner takes K1 only: K2 waits its turn behind C");

    ranks_enqueue(job, 1, &c_item, 1000);
    CHECK_U64(end_of(job, 0, c), 1100, "the collective ends 100 after rank 1's start");
    CHECK_U64(item(job, 0, k3).start_ns, 1100, "K3 starts when it ends");
    CHECK_U64(end_of(job, 0, cp), 1190, "the copy after K3 (1,150), for 40");
    CHECK(ranks_done_at(job, 0, -1, &done) == 0 && done == 1190, "the device is done when the copy is");
    CHECK(ranks_take_resolved(job, 0, taken, 8) == 4 && taken[0].kind == RANKS_ITEM_COLLECTIVE &&
              taken[1].end_ns == 310 && taken[3].kind == RANKS_ITEM_COPY,
          "then the rest, in launch order");
    CHECK(ranks_stream_wait(job, 0, 2, 1) == 0 && ranks_stream_wait(job, 0, 2, 2) == 0 &&
              ranks_stream_wait(job, 0, 2, 3) == -1,
          "a stream waits for two events before its next work, not three");
    free_job(job, 2, 1);
}

int main(void)
{
    a_collective_ends_a_transfer_after_the_last_rank_started();
    the_owner_takes_resolved_work_in_order();
    a_stopped_rank_still_has_its_gpu_run();
    communicators_number_their_own_collectives();
    disagreeing_ranks_fail_at_once();
    a_rank_that_never_arrives_times_out();
    a_copy_waits_for_the_engine();
    ranks_join_once_and_wait_for_each_other();
    a_rank_dying_with_the_lock_fails_the_job();
    collectives_beside_compute_are_ordered_only_by_streams();
    return report("cudasim-ranks-test");
}
