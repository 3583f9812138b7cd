"""examples/: every example experiment runs as its own comment says (issue 25, item 11), shortened (two
repeats, few tokens), every scenario measured and none failed; together they show every load and every
key a scenario file can hold; and the host settings the lever examples change read as before."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launchgap.experiments.scenarios import LOAD_KINDS, LOAD_OPTIONS, SCENARIO_FILE_SCHEMA, from_toml
from tests.conftest import REPO

EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments record with eBPF: needs root")
# host settings the lever examples change, read before and after (each is put back after every run)
HOST_FILES = ("/proc/sys/kernel/timer_migration", "/sys/devices/virtual/workqueue/cpumask")


def documented_command(example: Path) -> list[str]:
    """The `launchgap experiment run` line of the example's comment, its continuation lines joined."""
    lines = [line.removeprefix("#").strip() for line in example.read_text().splitlines() if line.startswith("#")]
    start = next(i for i, line in enumerate(lines) if line.startswith("launchgap experiment run "))
    text = ""
    for line in lines[start:]:
        text += line.removesuffix("\\") + " "
        if not line.endswith("\\"):
            break
    return shlex.split(text)


def shortened(command: list[str], out: Path) -> list[str]:
    """The documented command with two repeats, 40 tokens and its results in OUT."""
    command = list(command)
    command[command.index("--repeat") + 1] = "2"
    command[command.index("--tokens") + 1] = "40"
    split = command.index("--")
    return [sys.executable, "-m", "launchgap.cli", *command[1:split], "-o", str(out), *command[split:]]


def host_settings() -> dict[str, str | None]:
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    # IRQ affinities apart: only those the experiment changed are compared (irqbalance, or anything else on the
    # host, may move others meanwhile): from its journal, while it runs
    return {path: read(path) for path in HOST_FILES}


def test_there_is_an_example_of_every_kind_and_every_key():
    assert {p.name for p in EXAMPLES} >= {
        "noisy-neighbours.toml",
        "mitigations.toml",
        "policies.toml",
        "host-levers.toml",
    }
    text = "\n".join(p.read_text() for p in EXAMPLES)
    scenario_keys = SCENARIO_FILE_SCHEMA["properties"]["scenarios"]["additionalProperties"]["properties"]
    mitigations = scenario_keys["mitigations"]["properties"]
    keys = [*scenario_keys, *mitigations, *(k for options in LOAD_OPTIONS.values() for k in options)]
    missing = [k for k in keys if not re.search(rf"\b{k}\b", text)]
    assert not missing, f"no example shows {missing}"
    assert all(re.search(rf'"{kind}"', text) for kind in LOAD_KINDS)
    for example in EXAMPLES:
        assert len(from_toml(example)) >= 3, example.name  # valid, and more than a baseline
        assert documented_command(example)[:4] == ["launchgap", "experiment", "run", f"examples/{example.name}"]


@needs_root
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_runs_as_documented(example, tmp_path):
    from launchgap.experiments.levers import LeverHost
    from tests.experiments.lever_hosts import refusal_once_settled

    for scenario in from_toml(example):
        # a cpuset on the CPU left behind (a launchgap-* one: our own leak) fails here, never skips
        problem = refusal_once_settled(lambda: scenario.mitigations.host_refusal(LeverHost()))  # noqa: B023
        assert problem is None, f"{example.name}: scenario {scenario.name}: {problem}"
    changes_host = any(s.mitigations.changes_host for s in from_toml(example))
    before = host_settings() if changes_host else None
    out = tmp_path / "out"
    proc = subprocess.Popen(
        shortened(documented_command(example), out),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    irqs: dict = {}
    try:
        if changes_host:
            from tests.experiments.test_killed import descendants
            from tests.experiments.test_mitigations import journalled_irq_writes

            deadline = time.monotonic() + 1800
            while proc.poll() is None:
                assert time.monotonic() < deadline, "the example ran for 30 minutes"
                for path, old in journalled_irq_writes({proc.pid} | {p for p, _ in descendants(proc.pid)}).items():
                    irqs.setdefault(path, old)
                time.sleep(0.2)
        _, stderr = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "complete" and results["failed_runs"] == 0
    assert [s["name"] for s in results["scenarios"]] == [s.name for s in from_toml(example)]
    summary = json.loads((out / "summary.json").read_text())
    assert {name: entry["runs"] for name, entry in summary.items()} == {s.name: 2 for s in from_toml(example)}
    if changes_host:
        from tests.experiments.test_mitigations import affinities_of

        assert host_settings() == before
        assert affinities_of(irqs) == irqs
