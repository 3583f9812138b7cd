/* The decode workload's shape: kernel types, their geometry and durations. */
#include "model.h"

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Per token: an embedding kernel, every layer's kernels (or one graph per layer) and, with ranks, its
 * collective, an lm_head. */
uint64_t launches_per_token(const struct decode_config *cfg)
{
    uint64_t per_layer = cfg->launch == LAUNCH_GRAPH ? 1 : (uint64_t)cfg->kernels_per_layer;
    if (cfg->launch == LAUNCH_MIXED)
        return 0; /* depends on the seed: graphs replace whole layers at random */
    return 2 + (uint64_t)cfg->layers * (per_layer + (cfg->ranks ? 1 : 0));
}

/* Upper bound of log records one launching thread produces: launches, syncs, one upload. */
uint64_t records_per_worker(const struct decode_config *cfg)
{
    uint64_t launches = 2 + (uint64_t)cfg->layers * ((uint64_t)cfg->kernels_per_layer + (cfg->ranks ? 1 : 0));
    uint64_t refused = cfg->invalid_every ? launches / (uint64_t)cfg->invalid_every + 1 : 0;
    return (uint64_t)cfg->tokens * (launches + refused + 1) + 1;
}
