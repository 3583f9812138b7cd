#!/usr/bin/env python3
"""A greedy decode loop shaped like Qwen3-0.6B, with random weights.

Part (a) of scripts/gpu-validate.sh runs it untraced and under `launchgap
record`, interleaved, and compares tokens/s. No weights are downloaded: every
tensor is drawn from a seeded generator, so the loop has the real model's
widths and its kernels' shapes (and so its launch count and timing at batch
1) without its values. The architecture follows the published Qwen3 config
(28 layers, hidden 1024, 16 query heads and 8 KV heads of dim 128, per-head
RMSNorm on q and k, RoPE with theta 1e6, SwiGLU MLP of 3072, vocab 151936,
the embedding tied to the output head), written in eager PyTorch the way
Hugging Face's modelling code runs it: RMSNorm in float32, KV heads repeated
for grouped-query attention, one `.item()` per token as a generation loop
that checks for an end token does.

    python3 workloads/gpu/qwen3_decode.py --tokens 300 --result run.json
    tok/s: 212.4

Only PyTorch is needed; `--device cpu --layers 2` runs anywhere (the tests
check the shapes and that the cached decode equals a full recompute).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import threading
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Qwen3Shape:
    """Qwen3-0.6B's published widths; tests shrink layers and vocab."""

    layers: int = 28
    hidden: int = 1024
    query_heads: int = 16
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 3072
    vocab: int = 151936
    rope_theta: float = 1_000_000.0
    rms_eps: float = 1e-6

    @property
    def kv_groups(self) -> int:
        return self.query_heads // self.kv_heads

    def layer_parameters(self) -> int:
        attention = self.hidden * self.head_dim * (2 * self.query_heads + 2 * self.kv_heads) + 2 * self.head_dim
        return attention + 3 * self.hidden * self.intermediate + 2 * self.hidden

    def parameter_count(self) -> int:
        """Weights, the tied embedding counted once (Qwen3-0.6B: 0.6B, 0.44B without the embedding)."""
        return self.vocab * self.hidden + self.layers * self.layer_parameters() + self.hidden


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """As Qwen3's modelling code does it: in float32, then back to the input's dtype."""
    dtype = x.dtype
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(dtype)


def rope_tables(shape: Qwen3Shape, max_len: int, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin, [max_len, head_dim], in the rotate-half layout Qwen3 uses."""
    inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, shape.head_dim, 2, dtype=torch.float32) / shape.head_dim))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    both = torch.cat([angles, angles], dim=-1)
    return both.cos().to(device=device, dtype=dtype), both.sin().to(device=device, dtype=dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [batch, heads, seq, head_dim]; cos/sin: [seq, head_dim]."""
    return x * cos + rotate_half(x) * sin


class RandomQwen3:
    """Qwen3's decoder with random weights and a preallocated KV cache."""

    def __init__(self, shape: Qwen3Shape, max_len: int, batch: int = 1, *, device="cuda",
                 dtype=torch.bfloat16, seed: int = 0):
        self.shape = shape
        self.max_len = max_len
        self.batch = batch
        self.device = torch.device(device)
        self.dtype = dtype
        generator = torch.Generator(device=self.device).manual_seed(seed)
        std = 0.02  # the config's initializer_range: keeps activations finite through 28 layers

        def weight(*dims: int) -> torch.Tensor:
            return (torch.randn(*dims, generator=generator, device=self.device, dtype=torch.float32) * std).to(dtype)

        def ones(n: int) -> torch.Tensor:
            return torch.ones(n, device=self.device, dtype=dtype)

        s = shape
        self.embedding = weight(s.vocab, s.hidden)  # tied: also the output head
        self.layers = [
            {
                "input_norm": ones(s.hidden),
                "q_proj": weight(s.query_heads * s.head_dim, s.hidden),
                "k_proj": weight(s.kv_heads * s.head_dim, s.hidden),
                "v_proj": weight(s.kv_heads * s.head_dim, s.hidden),
                "q_norm": ones(s.head_dim),
                "k_norm": ones(s.head_dim),
                "o_proj": weight(s.hidden, s.query_heads * s.head_dim),
                "post_attention_norm": ones(s.hidden),
                "gate_proj": weight(s.intermediate, s.hidden),
                "up_proj": weight(s.intermediate, s.hidden),
                "down_proj": weight(s.hidden, s.intermediate),
            }
            for _ in range(s.layers)
        ]
        self.final_norm = ones(s.hidden)
        self.cos, self.sin = rope_tables(s, max_len, self.device, dtype)
        # [layers, k/v, batch, kv_heads, max_len, head_dim]
        self.kv_cache = torch.zeros(s.layers, 2, batch, s.kv_heads, max_len, s.head_dim,
                                    device=self.device, dtype=dtype)

    def parameter_count(self) -> int:
        tensors = [self.embedding, self.final_norm] + [t for layer in self.layers for t in layer.values()]
        return sum(t.numel() for t in tensors)

    def _attention(self, layer: int, weights: dict, x: torch.Tensor, start: int) -> torch.Tensor:
        s = self.shape
        batch, seq, _ = x.shape
        q = F.linear(x, weights["q_proj"]).view(batch, seq, s.query_heads, s.head_dim)
        k = F.linear(x, weights["k_proj"]).view(batch, seq, s.kv_heads, s.head_dim)
        v = F.linear(x, weights["v_proj"]).view(batch, seq, s.kv_heads, s.head_dim)
        q = rms_norm(q, weights["q_norm"], s.rms_eps).transpose(1, 2)
        k = rms_norm(k, weights["k_norm"], s.rms_eps).transpose(1, 2)
        v = v.transpose(1, 2)
        cos, sin = self.cos[start:start + seq], self.sin[start:start + seq]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        end = start + seq
        self.kv_cache[layer, 0, :, :, start:end] = k
        self.kv_cache[layer, 1, :, :, start:end] = v
        keys = self.kv_cache[layer, 0, :, :, :end].repeat_interleave(s.kv_groups, dim=1)
        values = self.kv_cache[layer, 1, :, :, :end].repeat_interleave(s.kv_groups, dim=1)
        mask = None
        if seq > 1:  # a query sees the cache and the tokens up to itself
            query_pos = torch.arange(start, end, device=x.device).unsqueeze(1)
            mask = torch.arange(end, device=x.device).unsqueeze(0) <= query_pos
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=1.0 / math.sqrt(s.head_dim))
        return F.linear(out.transpose(1, 2).reshape(batch, seq, s.query_heads * s.head_dim), weights["o_proj"])

    def forward(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        """tokens: [batch, seq] at positions start..start+seq-1; returns logits [batch, seq, vocab]."""
        if start + tokens.shape[1] > self.max_len:
            raise ValueError(f"positions up to {start + tokens.shape[1]} exceed the cache's {self.max_len}")
        s = self.shape
        x = F.embedding(tokens, self.embedding)
        for index, weights in enumerate(self.layers):
            x = x + self._attention(index, weights, rms_norm(x, weights["input_norm"], s.rms_eps), start)
            h = rms_norm(x, weights["post_attention_norm"], s.rms_eps)
            x = x + F.linear(F.silu(F.linear(h, weights["gate_proj"])) * F.linear(h, weights["up_proj"]),
                             weights["down_proj"])
        return F.linear(rms_norm(x, self.final_norm, s.rms_eps), self.embedding)


@torch.inference_mode()
def greedy_decode(model: RandomQwen3, prompt: torch.Tensor, new_tokens: int, *, on_token=None) -> list[int]:
    """Prefill the prompt, then new_tokens greedy steps of one token; the ids generated."""
    logits = model.forward(prompt, 0)
    next_token = logits[:, -1].argmax(dim=-1, keepdim=True)
    position = prompt.shape[1]
    generated: list[int] = []
    for step in range(new_tokens):
        generated.append(next_token.item())  # the per-token sync of a loop that checks for an end token
        if on_token is not None:
            on_token(step)
        logits = model.forward(next_token, position)
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)
        position += 1
    return generated


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(args: argparse.Namespace) -> dict:
    shape = Qwen3Shape(layers=args.layers, vocab=args.vocab)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    max_len = args.prompt + args.warmup + args.tokens + 1
    model = RandomQwen3(shape, max_len, device=device, dtype=dtype, seed=args.seed)
    prompt = torch.randint(0, shape.vocab, (1, args.prompt), device=device,
                           generator=torch.Generator(device=device).manual_seed(args.seed + 1))
    window: dict[str, int] = {}
    timed_from = args.warmup

    def on_token(step: int) -> None:
        # CLOCK_MONOTONIC, the recorder's clock: the trace's launches in this window are the timed tokens'
        if step == timed_from:
            synchronize(device)
            window["start_ns"] = time.monotonic_ns()

    ids = greedy_decode(model, prompt, args.warmup + args.tokens, on_token=on_token)
    synchronize(device)
    window["end_ns"] = time.monotonic_ns()
    seconds = (window["end_ns"] - window["start_ns"]) / 1e9
    return {
        "schema": "launchgap-gpu-decode/1",
        "model": "random weights, Qwen3-0.6B shape",
        "shape": asdict(shape),
        "parameters": model.parameter_count(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "dtype": args.dtype,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "pid": os.getpid(),
        "tid": threading.get_native_id(),
        "prompt_tokens": args.prompt,
        "warmup_tokens": args.warmup,
        "tokens": args.tokens,
        "window_start_ns": window["start_ns"],
        "window_end_ns": window["end_ns"],
        "seconds": seconds,
        "tokens_per_s": args.tokens / seconds,
        "first_ids": ids[:8],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=300, help="timed tokens (default 300)")
    parser.add_argument("--warmup", type=int, default=16, help="tokens decoded before timing (default 16)")
    parser.add_argument("--prompt", type=int, default=32, help="prompt length, prefilled at once (default 32)")
    parser.add_argument("--layers", type=int, default=Qwen3Shape.layers)
    parser.add_argument("--vocab", type=int, default=Qwen3Shape.vocab)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--result", help="write the run's numbers here as JSON")
    args = parser.parse_args(argv)
    for name in ("tokens", "layers", "vocab", "prompt"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("qwen3_decode: CUDA is not available to PyTorch (use --device cpu to run on the CPU)")
    result = run(args)
    print(f"tok/s: {result['tokens_per_s']:.2f}", flush=True)
    if args.result:
        with open(args.result, "w") as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
