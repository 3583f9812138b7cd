"""Scenario definitions and the run order."""

from __future__ import annotations

import re

import pytest

from launchgap.experiments.mitigations import MitigationError
from launchgap.experiments.plan import Metric
from launchgap.experiments.runner import run_order
from launchgap.experiments.scenarios import builtin, from_toml


def test_run_order_is_a_warm_up_then_shuffled_rounds_reproducible_by_seed():
    scenarios = builtin(["baseline", "cpu", "network", "disk"])
    order = run_order(scenarios, repeat=3, seed=11)
    assert order[0][0] == 0 and order[0][1].name == "baseline"
    rounds = [[s.name for r, s in order if r == n] for n in (1, 2, 3)]
    assert all(sorted(r) == ["baseline", "cpu", "disk", "network"] for r in rounds)
    assert [s.name for _, s in run_order(scenarios, 3, 11)] == [s.name for _, s in order]
    assert any(
        [s.name for _, s in run_order(scenarios, 3, seed)] != [s.name for _, s in order] for seed in range(12, 20)
    )


def test_toml_scenarios_with_loads_mitigations_and_env(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("""
[scenarios.rt-pinned]
loads = ["cpu", { type = "network", streams = 4 }]
mitigations = { cpus = [1], rt_policy = "fifo", rt_priority = 20 }
env = { OMP_NUM_THREADS = 1 }
""")
    scenarios = from_toml(path)
    assert [s.name for s in scenarios] == ["baseline", "rt-pinned"]
    s = scenarios[1]
    assert s.loads == [{"type": "cpu"}, {"type": "network", "streams": 4}]
    assert (s.mitigations.cpus, s.mitigations.rt_policy, s.mitigations.rt_priority) == ([1], "fifo", 20)
    assert s.env == {"OMP_NUM_THREADS": "1"}


def test_toml_scenarios_with_every_lever(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("""
[scenarios.tuned.mitigations]
cpus = [1]
policy = "rr:5"
isolate = true
irq_away = true
workqueue_away = true
timer_migration = 0
preempt = "full"
[scenarios.partition]
mitigations = { cpus = [1], policy = "batch", isolate = "root" }
""")
    tuned, partition = from_toml(path)[1:]
    m = tuned.mitigations
    assert (str(m.sched_policy), m.isolate, m.irq_away, m.workqueue_away, m.timer_migration, m.preempt) == (
        "rr:5",
        "isolated",
        True,
        True,
        0,
        "full",
    )
    assert m.describe() == (
        "pinned to CPUs 1, SCHED_RR 5, CPUs isolated, IRQs steered away, unbound workqueues "
        "steered away, timer migration off, preemption full"
    )
    assert (str(partition.mitigations.sched_policy), partition.mitigations.isolate) == ("batch", "root")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[scenarios.x]\nmitigations = { preempt = 'server' }",
            "scenarios.x.mitigations.preempt: 'server' is not one of",
        ),
        (
            "[scenarios.x]\nmitigations = { timer_migration = 2 }",
            "scenarios.x.mitigations.timer_migration: 2 is not one of",
        ),
        (
            "[scenarios.x]\nmitigations = { policy = 'fifo:70' }",
            "scenarios.x.mitigations: policy fifo:70: RT priority must be 1..49",
        ),
        (
            "[scenarios.x]\nmitigations = { isolate = true }",
            "scenarios.x.mitigations: isolate needs the workload's cpus",
        ),
        ("[scenarios.x]\nloads = ['gpu']", "unknown load 'gpu'"),
        (
            "[scenarios.x]\nmitigations = { pin = [1] }",
            "scenarios.x.mitigations: unknown key(s) ('pin' was unexpected)",
        ),
        ("nothing = 1", "no [scenarios.NAME] tables"),
        ("[scenarios.x", "Expected"),
    ],
)
def test_bad_scenario_files_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(MitigationError, match=re.escape(message)):
        from_toml(path)


def test_unknown_builtin_scenario_lists_the_known_ones():
    with pytest.raises(
        MitigationError, match="unknown scenario gpu .built in: baseline, cpu, network, disk, heavy, pinned"
    ):
        builtin(["gpu"])


def test_metric_reads_the_last_match_or_wall_time():
    assert Metric(r"tok/s: ([0-9.]+)").read("tok/s: 1.5\ntok/s: 2.5\n", 9.0) == 2.5
    assert Metric(r"tok/s: ([0-9.]+)").read("nothing", 9.0) is None
    assert Metric(None).read("anything", 9.0) == 9.0 and not Metric(None).higher_is_better
