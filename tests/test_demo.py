"""`make demo`'s main job: record cudasim and print the report (as root), or
cudasim's ground truth without root."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO


def test_demo_prints_a_report_or_the_ground_truth():
    proc = subprocess.run(
        [str(REPO / "scripts" / "demo.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # words, wherever a console wrapped them
    if os.geteuid() == 0:
        assert "Verdict:" in text and "kernel launches" in text
        assert "191,200 (cuLaunchKernel 191,200)" in text  # 2 threads x 200 tokens x 478
        # the GPU time section, first, from the GPU activity the demo records
        assert text.index("GPU time (exact, from GPU activity)") < text.index("Overview")
        assert "191,200 kernels and graphs" in text and "every launch joined to its GPU work" in text
    else:
        assert "cudasim ground truth" in text
