/*
 * Unit tests of the virtual GPU timeline, in C: kernels run back to back,
 * a late launch starts when it is made (the engine idle until then), a
 * stream is done exactly when its last kernel ends, one engine serves every
 * stream, a copy waits for all earlier work, and the busy time is the sum of
 * the kernels' durations. Each expected value is worked out by hand from
 * vgpu.c's rule (a kernel starts at the latest of its launch, the engine's
 * last end and its stream's last end); a launch's own moment is bracketed by
 * CLOCK_MONOTONIC reads taken just before and after it. Nothing here tests
 * the operating system's sleep.
 */
#include "check.h"
#include "vgpu.h"

/* Durations far longer than any preemption of this thread between two calls (a loaded CI machine may
 * stall it for tens of milliseconds): a kernel queued behind such a one starts exactly at its end. */
#define LONG_NS 50000000000ull /* 50 s, virtual: nothing waits for it */

/* The engine is one per process: each test starts where the last left it, so each asks it when it is free. */
static uint64_t engine_free_after(uint64_t now)
{
    uint64_t engine = vgpu_engine_done_at();
    return engine > now ? engine : now;
}

static void back_to_back_when_launched_early(void)
{
    struct vgpu_stream s = {0};
    uint64_t before = vgpu_now_ns();
    struct vgpu_span a = vgpu_enqueue(&s, 1000000);
    uint64_t after = vgpu_now_ns();
    struct vgpu_span b = vgpu_enqueue(&s, LONG_NS);
    struct vgpu_span c = vgpu_enqueue(&s, 2000000);
    /* the engine was idle: the first starts at its launch */
    CHECK(before <= a.start_ns && a.start_ns <= after, "an idle engine starts a kernel when it is launched");
    CHECK_U64(a.end_ns - a.start_ns, 1000000, "first kernel lasts its duration");
    CHECK_U64(b.start_ns, a.end_ns, "second kernel starts exactly when the first ends");
    CHECK_U64(c.start_ns, b.end_ns, "third kernel starts exactly when the second ends");
    CHECK_U64(c.end_ns, b.end_ns + 2000000, "third kernel lasts its duration");
    CHECK_U64(vgpu_stream_done_at(&s), c.end_ns, "the stream is done when its last kernel is");
    CHECK_U64(vgpu_engine_done_at(), c.end_ns, "the engine is done when its last kernel is");
}

static void engine_is_shared_between_streams(void)
{
    struct vgpu_stream s1 = {0}, s2 = {0};
    CHECK_U64(vgpu_stream_done_at(&s2), 0, "a stream nothing was launched on has no work");
    struct vgpu_span a = vgpu_enqueue(&s1, 4000000);
    struct vgpu_span b = vgpu_enqueue(&s2, 1000000);
    /* the previous test left the engine busy for LONG_NS: s1's kernel queues behind it, s2's behind s1's */
    CHECK_U64(b.start_ns, a.end_ns, "one engine: a second stream's kernel waits for the first's");
    CHECK_U64(vgpu_stream_done_at(&s1), a.end_ns, "each stream keeps its own last end");
    CHECK_U64(vgpu_stream_done_at(&s2), b.end_ns, "each stream keeps its own last end");
    CHECK_U64(vgpu_engine_done_at(), b.end_ns, "the engine is done when its last kernel is");
}

static void a_copy_waits_for_all_earlier_work(void)
{
    uint64_t engine = vgpu_engine_done_at();
    uint64_t busy = vgpu_busy_ns();
    struct vgpu_span copy = vgpu_copy(3000);
    CHECK_U64(copy.start_ns, engine, "a copy starts when the engine's earlier work ends");
    CHECK_U64(copy.end_ns, engine + 3000, "a copy lasts its duration");
    CHECK_U64(vgpu_engine_done_at(), copy.end_ns, "the engine is busy until the copy ends");
    CHECK_U64(vgpu_busy_ns(), busy, "copies are not kernel time");
}

static void busy_time_is_the_sum_of_kernel_durations(void)
{
    struct vgpu_stream s = {0};
    uint64_t busy = vgpu_busy_ns();
    vgpu_enqueue(&s, 7000);
    vgpu_enqueue(&s, 11000);
    CHECK_U64(vgpu_busy_ns(), busy + 18000, "busy time grows by each kernel's duration");
}

/* In a fresh process the engine would be idle; here earlier tests left it busy far into the future, so the
 * late-launch rule is checked on a stream of its own against the engine's queue: a kernel never starts before
 * its stream's previous one ends, nor before the engine is free, nor before it is launched. */
static void a_kernel_starts_at_the_latest_of_launch_engine_and_stream(void)
{
    struct vgpu_stream s = {.done_at_ns = 0};
    uint64_t before = vgpu_now_ns();
    uint64_t engine = engine_free_after(before);
    struct vgpu_span a = vgpu_enqueue(&s, 5000);
    CHECK_U64(a.start_ns, engine, "behind a busy engine a kernel starts when the engine is free");
    /* a stream whose last kernel ends after the engine's: the stream's end rules */
    uint64_t stream_end = vgpu_engine_done_at() + LONG_NS;
    struct vgpu_stream late = {.done_at_ns = stream_end};
    struct vgpu_span b = vgpu_enqueue(&late, 5000);
    CHECK_U64(b.start_ns, stream_end, "a kernel waits for its own stream's last end");
    CHECK_U64(b.end_ns, b.start_ns + 5000, "and lasts its duration");
}

/* A stream made to wait for an event (cuStreamWaitEvent) starts its next kernel no earlier than the
 * event completes, and an event already past changes nothing. */
static void a_stream_waits_for_an_event(void)
{
    struct vgpu_stream s = {0};
    uint64_t at = engine_free_after(vgpu_now_ns()) + LONG_NS;
    struct vgpu_span a;
    vgpu_stream_wait(&s, at);
    a = vgpu_enqueue(&s, 1000);
    CHECK_U64(a.start_ns, at, "the kernel starts when the event completes");
    vgpu_stream_wait(&s, at - 1);
    CHECK_U64(vgpu_stream_done_at(&s), at + 1000, "an earlier event leaves the stream as it was");
}

int main(void)
{
    back_to_back_when_launched_early();
    engine_is_shared_between_streams();
    a_copy_waits_for_all_earlier_work();
    busy_time_is_the_sum_of_kernel_durations();
    a_kernel_starts_at_the_latest_of_launch_engine_and_stream();
    a_stream_waits_for_an_event();
    return report("vgpu");
}
