/*
 * Unit tests of model.c, the decode workload's shape, against truths that are
 * not model.c: splitmix64 against the values Vigna's reference splitmix64.c
 * produces (as published in the `reference` test of the rand_xoshiro crate,
 * rust-random/rngs, rand_xoshiro/src/splitmix64.rs: seed 1477776061723855037),
 * and the launch and record counts worked out by hand from docs/cudasim.md's
 * description of a token (embedding, every layer's kernels or one graph per
 * layer, lm_head; one sync per token, one weight upload).
 */
#include "check.h"
#include "model.h"

static void splitmix64_is_the_reference_generator(void)
{
    static const uint64_t published[] = {1985237415132408290ull, 2979275885539914483ull,
                                         13511426838097143398ull, 8488337342461049707ull,
                                         15141737807933549159ull};
    uint64_t state = 1477776061723855037ull;
    for (unsigned i = 0; i < sizeof(published) / sizeof(published[0]); i++)
        CHECK_U64(splitmix64(&state), published[i], "splitmix64 output against the reference's");
    /* the state advances by the golden-ratio increment once per output */
    CHECK_U64(state, 1477776061723855037ull + 5 * 0x9e3779b97f4a7c15ull, "state after five outputs");
}

static struct decode_config config(int layers, int kernels_per_layer, enum launch_kind launch)
{
    struct decode_config cfg = {0};
    cfg.tokens = 30;
    cfg.layers = layers;
    cfg.kernels_per_layer = kernels_per_layer;
    cfg.launch = launch;
    return cfg;
}

static void launches_per_token_by_hand(void)
{
    /* Qwen3-0.6B's shape: 28 layers of 17 kernels, plus embedding and lm_head: 2 + 476 */
    struct decode_config cfg = config(28, 17, LAUNCH_KERNEL);
    CHECK_U64(launches_per_token(&cfg), 478, "28 layers x 17 kernels + 2");
    cfg.launch = LAUNCH_EX;
    CHECK_U64(launches_per_token(&cfg), 478, "cuLaunchKernelEx launches the same kernels");
    cfg.launch = LAUNCH_COOP;
    CHECK_U64(launches_per_token(&cfg), 478, "cooperative launches the same kernels");
    cfg.launch = LAUNCH_GRAPH;
    CHECK_U64(launches_per_token(&cfg), 30, "one graph per layer: 28 + 2");
    cfg.launch = LAUNCH_MIXED;
    CHECK_U64(launches_per_token(&cfg), 0, "mixed: not known from the config (graphs at random)");
    cfg = config(2, 4, LAUNCH_KERNEL);
    CHECK_U64(launches_per_token(&cfg), 10, "2 layers x 4 kernels + 2");
}

static void records_per_worker_by_hand(void)
{
    /* per token: 478 launches and one sync; one weight upload in all: 30 x 479 + 1 */
    struct decode_config cfg = config(28, 17, LAUNCH_KERNEL);
    CHECK_U64(records_per_worker(&cfg), 14371, "30 tokens x (478 + 1) + 1");
    /* a refused launch every 100: at most 478 / 100 + 1 = 5 more a token: 30 x 484 + 1 */
    cfg.invalid_every = 100;
    CHECK_U64(records_per_worker(&cfg), 14521, "30 tokens x (478 + 5 + 1) + 1");
    /* graphs launch fewer records; the bound is the kernels' count: the same */
    cfg = config(28, 17, LAUNCH_GRAPH);
    CHECK_U64(records_per_worker(&cfg), 14371, "graphs: bounded by the kernel launches' count");
}

int main(void)
{
    splitmix64_is_the_reference_generator();
    launches_per_token_by_hand();
    records_per_worker_by_hand();
    return report("model");
}
