"""workloads/gpu/qwen3_decode.py on the CPU, with few layers: the shapes are
Qwen3-0.6B's, and the cached decode is the model itself, not an approximation
of it. PyTorch is not one of launchgap's dependencies: without it these skip,
saying so (the GPU machine has it; so does any venv with torch installed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (not a launchgap dependency)")

SCRIPT = Path(__file__).resolve().parents[2] / "workloads" / "gpu" / "qwen3_decode.py"


def load_module():
    spec = importlib.util.spec_from_file_location("qwen3_decode", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


qd = load_module()
SMALL = qd.Qwen3Shape(layers=2, vocab=512)


def small_model(max_len: int = 32, seed: int = 0):
    return qd.RandomQwen3(SMALL, max_len, device="cpu", dtype=torch.float32, seed=seed)


def test_default_shape_is_qwen3_0_6b():
    shape = qd.Qwen3Shape()
    assert (
        shape.layers,
        shape.hidden,
        shape.query_heads,
        shape.kv_heads,
        shape.head_dim,
        shape.intermediate,
        shape.vocab,
    ) == (28, 1024, 16, 8, 128, 3072, 151936)
    # the model card: 0.6B parameters, 0.44B of them outside the (tied) embedding
    assert shape.parameter_count() == 596_049_920
    assert shape.parameter_count() - shape.vocab * shape.hidden == 440_467_456


def test_weights_and_cache_have_the_real_widths():
    model = small_model(max_len=40)
    layer = model.layers[0]
    assert layer["q_proj"].shape == (16 * 128, 1024)
    assert layer["k_proj"].shape == layer["v_proj"].shape == (8 * 128, 1024)
    assert layer["o_proj"].shape == (1024, 16 * 128)
    assert layer["gate_proj"].shape == layer["up_proj"].shape == (3072, 1024)
    assert layer["down_proj"].shape == (1024, 3072)
    assert layer["q_norm"].shape == layer["k_norm"].shape == (128,)
    assert model.embedding.shape == (512, 1024)
    assert model.kv_cache.shape == (2, 2, 1, 8, 40, 128)
    assert model.parameter_count() == SMALL.parameter_count()


def test_logits_shapes_for_prefill_and_one_token():
    model = small_model()
    with torch.inference_mode():
        prefill = model.forward(torch.tensor([[1, 2, 3, 4, 5]]), 0)
        step = model.forward(torch.tensor([[6]]), 5)
    assert prefill.shape == (1, 5, 512)
    assert step.shape == (1, 1, 512)
    assert torch.isfinite(prefill).all() and torch.isfinite(step).all()


def test_cached_decode_equals_recomputing_the_whole_sequence():
    tokens = torch.tensor([[7, 3, 99, 250, 11, 42, 5, 300]])
    incremental = small_model()
    with torch.inference_mode():
        logits = [incremental.forward(tokens[:, :3], 0)[:, -1]]
        for position in range(3, tokens.shape[1]):
            logits.append(incremental.forward(tokens[:, position : position + 1], position)[:, -1])
        full = small_model().forward(tokens, 0)  # same seed, fresh cache, one pass
    for index, row in enumerate(logits):
        torch.testing.assert_close(row, full[:, 2 + index], rtol=1e-4, atol=1e-4)


def test_greedy_decode_is_deterministic_and_argmax():
    prompt = torch.tensor([[1, 2, 3]])
    first = qd.greedy_decode(small_model(seed=5), prompt, 6)
    second = qd.greedy_decode(small_model(seed=5), prompt, 6)
    assert first == second
    assert len(first) == 6 and all(0 <= t < 512 for t in first)
    with torch.inference_mode():
        expected = int(small_model(seed=5).forward(prompt, 0)[0, -1].argmax())
    assert first[0] == expected


def test_cache_overflow_is_refused():
    model = small_model(max_len=4)
    with pytest.raises(ValueError, match="exceed the cache"):
        model.forward(torch.tensor([[1, 2, 3, 4, 5]]), 0)


def test_main_writes_the_timing_window(tmp_path: Path, capsys):
    result = tmp_path / "run.json"
    assert (
        qd.main(
            [
                "--device",
                "cpu",
                "--dtype",
                "float32",
                "--layers",
                "1",
                "--vocab",
                "256",
                "--tokens",
                "4",
                "--warmup",
                "2",
                "--prompt",
                "3",
                "--result",
                str(result),
            ]
        )
        == 0
    )
    data = json.loads(result.read_text())
    assert capsys.readouterr().out.startswith("tok/s: ")
    assert data["schema"] == "launchgap-gpu-decode/1"
    assert data["tokens"] == 4 and data["warmup_tokens"] == 2 and len(data["first_ids"]) == 6
    assert data["window_end_ns"] > data["window_start_ns"]
    assert data["tokens_per_s"] == pytest.approx(4 / data["seconds"])


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        qd.parse_args(["--tokens", "0"])
