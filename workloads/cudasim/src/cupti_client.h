#ifndef CUDASIM_CUPTI_CLIENT_H
#define CUDASIM_CUPTI_CLIENT_H

#include <stdint.h>

/* What the second CUPTI client (cupti_client.c) saw of its window. */
struct cupti_client_result {
    int32_t subscribe_result; /* cuptiSubscribe's CUptiResult */
    int32_t pad;
    uint64_t start_ns, stop_ns;                   /* CLOCK_MONOTONIC, around its window */
    uint64_t start_realtime_ns, stop_realtime_ns; /* its own clock's */
    uint64_t kernels, runtime_calls, other_records;
    uint64_t first_kernel_start, last_kernel_start; /* on its clock */
    uint64_t buffers_requested, buffers_completed;
};

typedef int (*cupti_client_start_fn)(void);
typedef int (*cupti_client_stop_fn)(struct cupti_client_result *out);

#endif
