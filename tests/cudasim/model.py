"""A second writing, in Python, of cudasim's decode shape (workloads/cudasim/src/cudasim.c's model, as
docs/cudasim.md describes it).

It re-derives, from the seed alone, the launches the launcher must have
issued, so tests can compare them with what the stand-in driver logged.
It is one algorithm written twice, so it is a regression check, not a truth:
a change of cudasim's shape, or of the driver's logging, shows here. The
truths under it: its SplitMix64 against the generator's published outputs,
and one kernel's shape worked out by hand from them
(tests/cudasim/test_cudasim.py; model.c's own in workloads/cudasim/tests/).
"""

from __future__ import annotations

from dataclasses import dataclass

MASK64 = (1 << 64) - 1
QWEN3_LAYER_KERNELS = [
    "rmsnorm_in",
    "q_proj",
    "k_proj",
    "v_proj",
    "q_norm",
    "k_norm",
    "rope",
    "kv_append",
    "attn_scores",
    "softmax",
    "attn_values",
    "o_proj",
    "residual_1",
    "rmsnorm_post",
    "gate_up_proj",
    "swiglu",
    "down_proj",
]
ATTENTION_KERNELS = {"attn_scores", "softmax", "attn_values"}
ATTENTION_HEADS = 16
POSITIONS_PER_ATTENTION_BLOCK = 32


class SplitMix64:
    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


@dataclass(frozen=True)
class Kernel:
    name: str
    duration_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    grows_with_position: bool


def _make_kernel(name: str, rng: SplitMix64, kmin: int, kmax: int, attention: bool) -> Kernel:
    span = kmax - kmin
    duration = kmin + (rng.next() % (span + 1) if span else 0)
    grid_x = 1 + rng.next() % 1024
    block_x = 32 << (rng.next() % 5)
    shared = (rng.next() % 4) * 4096
    return Kernel(name, duration, (grid_x, ATTENTION_HEADS if attention else 1, 1), (block_x, 1, 1), shared, attention)


def kernels(
    seed: int = 42, kernels_per_layer: int = 17, kmin_ns: int = 4000, kmax_ns: int = 16000
) -> tuple[Kernel, list[Kernel], Kernel]:
    rng = SplitMix64(seed)
    embedding = _make_kernel("embedding", rng, kmin_ns, kmax_ns, False)
    layer = []
    for k in range(kernels_per_layer):
        name = QWEN3_LAYER_KERNELS[k] if kernels_per_layer == 17 else f"layer_kernel_{k}"
        layer.append(_make_kernel(name, rng, kmin_ns, kmax_ns, name in ATTENTION_KERNELS))
    lm_head = _make_kernel("lm_head", rng, kmin_ns, kmax_ns, False)
    return embedding, layer, lm_head


def launch_args(kernel: Kernel, position: int) -> tuple[int, ...]:
    """(grid x, y, z, block x, y, z, shared memory) of one launch at a sequence position."""
    grid_x = kernel.grid[0]
    if kernel.grows_with_position:
        grid_x = 1 + position // POSITIONS_PER_ATTENTION_BLOCK
    return (grid_x, kernel.grid[1], kernel.grid[2], *kernel.block, kernel.shared_mem)


GRAPH_ARGS = (0, 0, 0, 0, 0, 0, 0)


def expected_launches(
    tokens: int, layers: int = 28, seed: int = 42, graph: bool = False, kernels_per_layer: int = 17
) -> list[tuple[int, ...]]:
    """The launch arguments one thread issues, in order, for a non-mixed run."""
    embedding, layer, lm_head = kernels(seed, kernels_per_layer)
    out: list[tuple[int, ...]] = []
    for position in range(tokens):
        out.append(launch_args(embedding, position))
        for _ in range(layers):
            if graph:
                out.append(GRAPH_ARGS)
            else:
                out.extend(launch_args(k, position) for k in layer)
        out.append(launch_args(lm_head, position))
    return out
