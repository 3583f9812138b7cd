"""Per-scenario summaries from hand-made results: medians and the share of
the slowdown that the scheduler and interrupts explain."""

from __future__ import annotations

import pytest

from launchgap.experiments.results import RESULTS_SCHEMA, results_from_json
from launchgap.experiments.summary import summarize_results


def run(scenario, metric, wall_s, preempted, runqueue, irq, warmup=False):
    return {
        "scenario": scenario,
        "metric": metric,
        "wall_s": wall_s,
        "preempted_ms": preempted,
        "runqueue_ms": runqueue,
        "irq_ms": irq,
        "warmup": warmup,
        "top_culprit": "stress-ng-cpu",
    }


def results(runs):
    return results_from_json(
        {
            "schema": RESULTS_SCHEMA,
            "status": "complete",
            "metric": "tok/s: ([0-9.]+)",
            "scenarios": [{"name": "baseline"}, {"name": "cpu"}],
            "higher_is_better": True,
            "runs": runs,
        }
    )


def test_explained_is_extra_time_taken_over_extra_wall_time():
    summary = summarize_results(
        results(
            [
                run("baseline", 100.0, 2.0, 5, 10, 5),
                run("baseline", 101.0, 2.2, 7, 12, 5),
                run("baseline", 99.0, 2.1, 6, 11, 6),
                run("baseline", 10.0, 9.0, 900, 900, 900, warmup=True),  # the warm-up counts for nothing
                run("cpu", 70.0, 3.1, 400, 300, 10),
                run("cpu", 72.0, 3.0, 380, 280, 8),
                run("cpu", 68.0, 3.3, 420, 320, 12),
            ]
        )
    )
    assert summary["baseline"]["wall_s"] == 2.1
    assert summary["cpu"]["wall_s"] == 3.1
    # medians: taken 0.4 + 0.3 + 0.01 s vs 0.006 + 0.011 + 0.005 s; wall 3.1 vs 2.1 s
    expected = 100 * ((0.400 + 0.300 + 0.010) - (0.006 + 0.011 + 0.005)) / (3.1 - 2.1)
    assert summary["cpu"]["explained_percent"] == pytest.approx(expected)
    assert "explained_percent" not in summary["baseline"]


def test_explained_is_absent_when_nothing_got_slower():
    summary = summarize_results(
        results(
            [
                run("baseline", 100.0, 2.0, 5, 10, 5),
                run("baseline", 100.0, 2.0, 5, 10, 5),
                run("cpu", 101.0, 1.9, 6, 10, 5),
                run("cpu", 101.0, 1.9, 6, 10, 5),
            ]
        )
    )
    assert summary["cpu"]["explained_percent"] is None
