#ifndef CUDASIM_KINETO_H
#define CUDASIM_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* How the writer puts a CLOCK_MONOTONIC time on the profiler's clock (kineto.c). */
struct kineto_clock {
    int relative;        /* the layout: 1 relative to baseTimeNanoseconds, 0 absolute epoch microseconds */
    int64_t offset_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC, read bracketed at the run's start */
    uint64_t t0_ns;      /* the drift's origin: the run's start */
    double drift_ppm;
    uint64_t jitter_ns;
    uint64_t seed;
    int first_device; /* the device (and rank) of the run's first process: 0, or I with --rank I */
    int world;        /* distributedInfo's world_size: the processes, or the job's ranks */
};

int64_t kineto_realtime_offset_ns(void);
void kineto_path_of(const char *path, int proc_index, int procs, char *out, size_t room);
int kineto_write(const char *path, const struct kineto_clock *clock, const struct worker_summary *workers,
                 int n_workers, int procs, uint64_t start_ns, uint64_t end_ns);

#endif
