"""Where the real PyTorch profiler traces are (shared/real-traces/kineto, beside the repository: read from
there, never copied in), and a skip that says why when they are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO

REAL_KINETO = REPO.parent / "shared" / "real-traces" / "kineto"


def real_trace(name: str) -> Path:
    """The real trace NAME (e.g. simple_add.json.gz), or a skip naming where it was looked for."""
    path = REAL_KINETO / name
    if not path.is_file():
        pytest.skip(
            f"{path} is absent: the real PyTorch profiler traces live in shared/real-traces/kineto beside "
            f"the repository (its README gives their known figures)"
        )
    return path
