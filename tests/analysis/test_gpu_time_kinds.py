"""GPU time's three kinds (records.py: GpuTimeExact, GpuTimeBounds, GpuTimeNotEstimated) hold only their own
numbers, yet write one JSON layout, the one `gpu_time` had while a string `mode` said which fields were null
(issue 35, item 2): every key in its place, `mode` included, and what a kind has no number for as a trace
without GPU time writes it."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from launchgap.analysis.records import GPU_TIME_KEYS, GpuTimeBounds, GpuTimeExact, GpuTimeNotEstimated

# an exact kind's one number, and the JSON's low and high that both write it
ONE_NUMBER = {
    "interference_ns": ("interference_low_ns", "interference_high_ns"),
    "hidden_ns": ("hidden_low_ns", "hidden_high_ns"),
    "wakeup_latency_ns": ("wakeup_latency_low_ns", "wakeup_latency_high_ns"),
}

EXACT = GpuTimeExact(
    span_ns=2000,
    busy_ns=1500,
    idle_ns=500,
    busy_percent=75.0,
    causes=[],
    interference_ns=300,
    own_ns=200,
    culprits=[],
    cpu_interference_ns=400,
    hidden_ns=100,
    hidden_percent=25.0,
    processes=[],
    active_ns=1800,
    prediction=None,
    culprits_by_cgroup=None,
    culprits_by_process=[],
    measurement=None,
    wakeup_latency_ns=7,
    window_busy_percent=75.0,
)
BOUNDS = GpuTimeBounds(
    why="attached with -p",
    interference_low_ns=100,
    interference_high_ns=300,
    culprits=[],
    cpu_interference_ns=400,
    hidden_low_ns=100,
    hidden_high_ns=300,
    active_ns=1800,
    prediction=None,
    note="from 3 steps",
    culprits_by_cgroup=[],
    culprits_by_process=[],
    measurement=None,
    wakeup_latency_low_ns=0,
    wakeup_latency_high_ns=9,
)
NONE = GpuTimeNotEstimated(why="no target was named")


@pytest.mark.parametrize("g", [EXACT, BOUNDS, NONE], ids=["exact", "bounds", "none"])
def test_every_kind_writes_the_one_layout(g):
    as_json = g.to_json()
    assert list(as_json) == list(GPU_TIME_KEYS)
    assert as_json["mode"] == g.MODE
    json.dumps(as_json)  # plain JSON all the way down


@pytest.mark.parametrize("kind", [GpuTimeExact, GpuTimeBounds, GpuTimeNotEstimated])
def test_every_field_of_a_kind_reaches_the_json(kind):
    """A field added to a kind but not to GPU_TIME_KEYS would be left out of the JSON silently."""
    names = {f.name for f in fields(kind)}
    assert names - set(GPU_TIME_KEYS) - set(ONE_NUMBER) == set()


def test_exact_numbers_are_written_as_bounds_that_meet():
    as_json = EXACT.to_json()
    for one, (low, high) in ONE_NUMBER.items():
        assert as_json[low] == as_json[high] == getattr(EXACT, one), one
    assert (as_json["why"], as_json["note"]) == (None, None)


def test_bounds_write_no_gpu_busy_or_idle_and_their_span_is_the_active_span():
    as_json = BOUNDS.to_json()
    assert as_json["span_ns"] == BOUNDS.active_ns
    for key in ("busy_ns", "idle_ns", "busy_percent", "own_ns", "hidden_percent", "window_busy_percent"):
        assert as_json[key] is None, key
    assert (as_json["causes"], as_json["processes"]) == ([], [])
    assert as_json["culprits_by_cgroup"] == []  # the kind's own: a trace recording cgroups with none found


def test_not_estimated_writes_what_a_section_without_gpu_time_always_wrote():
    assert NONE.to_json() == {
        "mode": "none",
        "why": "no target was named",
        "span_ns": 0,
        "busy_ns": None,
        "idle_ns": None,
        "busy_percent": None,
        "causes": [],
        "interference_low_ns": 0,
        "interference_high_ns": 0,
        "own_ns": None,
        "culprits": [],
        "cpu_interference_ns": 0,
        "hidden_low_ns": 0,
        "hidden_high_ns": 0,
        "hidden_percent": None,
        "processes": [],
        "active_ns": 0,
        "prediction": None,
        "note": None,
        "culprits_by_cgroup": None,
        "culprits_by_process": [],
        "measurement": None,
        "wakeup_latency_low_ns": 0,
        "wakeup_latency_high_ns": 0,
        "window_busy_percent": None,
    }
