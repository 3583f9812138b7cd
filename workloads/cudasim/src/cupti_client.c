/*
 * A second CUPTI client inside the workload, as the PyTorch profiler (Kineto) is one: a shared
 * library linked against libcupti.so.12 (Kineto is linked into libtorch_cuda.so, which Python
 * loads with RTLD_LOCAL), so its calls bind to CUPTI's symbols as Kineto's do. What it does is
 * what Kineto's CuptiActivityApi does around a profiling window (read in pytorch/kineto's
 * libkineto/src/CuptiActivityApi.cpp and CuptiCallbackApi.cpp for its calls, not copied):
 * subscribe to the callback API (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED when another
 * client holds it), register its own buffer callbacks and its own timestamp callback (Kineto's
 * is CLOCK_REALTIME through the TSC: here CLOCK_REALTIME), enable kernel and runtime records;
 * at the window's end flush, disable what it enabled and unsubscribe. It counts what it got, so
 * a test can tell whether it lost any of it.
 */
#define _GNU_SOURCE
#include "cupti_client.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti.h"

#define EXPORT __attribute__((visibility("default")))
#define BUFFER_BYTES (1u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cupti_client_result result;
static CUpti_SubscriberHandle subscriber;
static int active;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI realtime(void) { return clock_ns(CLOCK_REALTIME); }

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *memory = NULL;
    *max_records = 0;
    if (posix_memalign(&memory, 8, BUFFER_BYTES) != 0)
        memory = NULL;
    *buffer = memory;
    *size = memory ? BUFFER_BYTES : 0;
    pthread_mutex_lock(&lock);
    result.buffers_requested++;
    pthread_mutex_unlock(&lock);
}

static void CUPTIAPI completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    CUpti_Activity *record = NULL;
    (void)context, (void)stream, (void)size;
    pthread_mutex_lock(&lock);
    result.buffers_completed++;
    while (valid && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel9 *k = (const CUpti_ActivityKernel9 *)record;
            result.kernels++;
            if (!result.first_kernel_start || k->start < result.first_kernel_start)
                result.first_kernel_start = k->start;
            if (k->start > result.last_kernel_start)
                result.last_kernel_start = k->start;
        } else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            result.runtime_calls++;
        } else {
            result.other_records++;
        }
    }
    pthread_mutex_unlock(&lock);
    free(buffer);
}

EXPORT int cupti_client_start(void)
{
    result.subscribe_result = (int)cuptiSubscribe(&subscriber, NULL, NULL);
    result.start_ns = clock_ns(CLOCK_MONOTONIC);
    result.start_realtime_ns = clock_ns(CLOCK_REALTIME);
    if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS)
        return -1;
#ifndef CUDASIM_CUPTI_OLD
    cuptiActivityRegisterTimestampCallback(realtime);
#endif
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS)
        return -1;
    active = 1;
    return 0;
}

EXPORT int cupti_client_stop(struct cupti_client_result *out)
{
    if (!active)
        return -1;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (result.subscribe_result == CUPTI_SUCCESS)
        cuptiUnsubscribe(subscriber);
    active = 0;
    pthread_mutex_lock(&lock);
    result.stop_ns = clock_ns(CLOCK_MONOTONIC);
    result.stop_realtime_ns = clock_ns(CLOCK_REALTIME);
    *out = result;
    pthread_mutex_unlock(&lock);
    return 0;
}
