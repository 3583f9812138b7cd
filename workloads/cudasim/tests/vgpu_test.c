/*
 * Unit tests of the virtual GPU timeline, in C: kernels run back to back,
 * a late launch leaves the engine idle, and a sync waits for the queue.
 * Prints the plain "N passed, N failed" line the CI reads.
 */
#include <stdio.h>

#include "vgpu.h"

static int passed, failed;

#define CHECK(cond, what)                                  \
    do {                                                   \
        if (cond) {                                        \
            passed++;                                      \
        } else {                                           \
            failed++;                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
        }                                                  \
    } while (0)

static void back_to_back_when_launched_early(void)
{
    struct vgpu_stream s = {0};
    struct vgpu_span a = vgpu_enqueue(&s, 1000000);
    struct vgpu_span b = vgpu_enqueue(&s, 2000000);
    CHECK(a.end_ns - a.start_ns == 1000000, "first kernel lasts its duration");
    CHECK(b.start_ns == a.end_ns, "second kernel starts exactly when the first ends");
    CHECK(s.done_at_ns == b.end_ns, "stream completes with its last kernel");
}

static void late_launch_leaves_engine_idle(void)
{
    struct vgpu_stream s = {0};
    struct vgpu_span a = vgpu_enqueue(&s, 100000);
    vgpu_sleep_until(a.end_ns + 3000000); /* the CPU thread is 3 ms late */
    struct vgpu_span b = vgpu_enqueue(&s, 100000);
    CHECK(b.start_ns >= a.end_ns + 3000000, "a late launch starts no earlier than it was made");
}

static void sync_waits_for_queue(void)
{
    struct vgpu_stream s = {0};
    vgpu_enqueue(&s, 5000000);
    uint64_t done = vgpu_stream_done_at(&s);
    vgpu_sleep_until(done);
    CHECK(vgpu_now_ns() >= done, "sleeping until the stream is done returns after it");
}

static void engine_is_shared_between_streams(void)
{
    struct vgpu_stream s1 = {0}, s2 = {0};
    struct vgpu_span a = vgpu_enqueue(&s1, 4000000);
    struct vgpu_span b = vgpu_enqueue(&s2, 1000000);
    CHECK(b.start_ns >= a.end_ns, "one engine: a second stream waits for the first's kernel");
    CHECK(vgpu_engine_done_at() == b.end_ns, "the engine is done when its last kernel is");
}

int main(void)
{
    back_to_back_when_launched_early();
    late_launch_leaves_engine_idle();
    sync_waits_for_queue();
    engine_is_shared_between_streams();
    printf("vgpu: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
