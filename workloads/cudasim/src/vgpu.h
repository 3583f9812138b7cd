#ifndef CUDASIM_VGPU_H
#define CUDASIM_VGPU_H

#include <stdint.h>

struct vgpu_stream {
    uint64_t done_at_ns; /* when the last kernel enqueued on it finishes */
};

struct vgpu_span {
    uint64_t start_ns;
    uint64_t end_ns;
};

uint64_t vgpu_now_ns(void);
void vgpu_spin_ns(uint64_t ns);
void vgpu_sleep_until(uint64_t t_ns);
struct vgpu_span vgpu_enqueue(struct vgpu_stream *stream, uint64_t duration_ns);
struct vgpu_span vgpu_copy(uint64_t duration_ns);
uint64_t vgpu_stream_done_at(const struct vgpu_stream *stream);
void vgpu_stream_wait(struct vgpu_stream *stream, uint64_t t_ns);
uint64_t vgpu_engine_done_at(void);
uint64_t vgpu_busy_ns(void);

#endif
