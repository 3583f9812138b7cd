/*
 * The virtual GPU: one execution engine per process that runs enqueued
 * kernels back to back. A kernel starts when both the engine and its stream
 * are free, so if the launching CPU thread is late the engine sits idle,
 * just as a real GPU starves when its launcher is preempted.
 */
#define _GNU_SOURCE
#include "vgpu.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t engine_free_at_ns; /* when the last enqueued kernel finishes */
static uint64_t engine_busy_ns;    /* total kernel time executed or enqueued */

uint64_t vgpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vgpu_spin_ns(uint64_t ns)
{
    uint64_t until = vgpu_now_ns() + ns;
    while (vgpu_now_ns() < until)
        ;
}

void vgpu_sleep_until(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ull),
                          .tv_nsec = (long)(t_ns % 1000000000ull)};
    if (t_ns <= vgpu_now_ns())
        return;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

struct vgpu_span vgpu_enqueue(struct vgpu_stream *stream, uint64_t duration_ns)
{
    struct vgpu_span span;
    uint64_t now = vgpu_now_ns();

    pthread_mutex_lock(&engine_lock);
    span.start_ns = now;
    if (engine_free_at_ns > span.start_ns)
        span.start_ns = engine_free_at_ns;
    if (stream->done_at_ns > span.start_ns)
        span.start_ns = stream->done_at_ns;
    span.end_ns = span.start_ns + duration_ns;
    engine_free_at_ns = span.end_ns;
    stream->done_at_ns = span.end_ns;
    engine_busy_ns += duration_ns;
    pthread_mutex_unlock(&engine_lock);
    return span;
}

uint64_t vgpu_stream_done_at(const struct vgpu_stream *stream)
{
    uint64_t t;
    pthread_mutex_lock(&engine_lock);
    t = stream->done_at_ns;
    pthread_mutex_unlock(&engine_lock);
    return t;
}

/* The stream's next kernel starts no earlier than T_NS (an event it was made to wait for). */
void vgpu_stream_wait(struct vgpu_stream *stream, uint64_t t_ns)
{
    pthread_mutex_lock(&engine_lock);
    if (stream->done_at_ns < t_ns)
        stream->done_at_ns = t_ns;
    pthread_mutex_unlock(&engine_lock);
}

uint64_t vgpu_engine_done_at(void)
{
    uint64_t t;
    pthread_mutex_lock(&engine_lock);
    t = engine_free_at_ns;
    pthread_mutex_unlock(&engine_lock);
    return t;
}

uint64_t vgpu_busy_ns(void)
{
    uint64_t t;
    pthread_mutex_lock(&engine_lock);
    t = engine_busy_ns;
    pthread_mutex_unlock(&engine_lock);
    return t;
}

/* A copy on the legacy stream waits for all prior work, then takes its own time. */
struct vgpu_span vgpu_copy(uint64_t duration_ns)
{
    struct vgpu_span span;
    uint64_t now = vgpu_now_ns();

    pthread_mutex_lock(&engine_lock);
    span.start_ns = engine_free_at_ns > now ? engine_free_at_ns : now;
    span.end_ns = span.start_ns + duration_ns;
    engine_free_at_ns = span.end_ns;
    pthread_mutex_unlock(&engine_lock);
    return span;
}
