"""A prediction whose upper bound of GPU idle covers the whole active span has no upper bound: a short run
recorded without GPU activity printed "164.58 to 130,000,000,000.00 steps/s (78988618600.0% more)", the rate of
a span shrunk to one nanosecond."""

from __future__ import annotations

from launchgap.analysis.gpu_time import _prediction
from launchgap.views.words import prediction


def test_a_bound_that_covers_the_span_is_no_bound():
    # 10 steps in 1 s; the interference kept the GPU idle between 0.2 s and all of it
    p = _prediction(steps=10, active_ns=1_000_000_000, low_ns=200_000_000, high_ns=1_000_000_000)
    assert (p.measured_per_s, p.predicted_low_per_s, p.predicted_high_per_s) == (10.0, 12.5, None)
    assert (p.gain_low_percent, p.gain_high_percent) == (25.0, None)
    assert prediction(
        p.predicted_low_per_s,
        p.predicted_high_per_s,
        p.gain_low_percent,
        p.gain_high_percent,
        p.measured_per_s,
        "steps",
    ) == (
        "at least 12.50 steps/s instead of 10.00 (25.0% more); no upper bound: the interference may have kept "
        "the GPU idle the whole span"
    )


def test_bounds_inside_the_span_are_a_range():
    p = _prediction(steps=10, active_ns=1_000_000_000, low_ns=200_000_000, high_ns=500_000_000)
    assert (p.predicted_low_per_s, p.predicted_high_per_s, p.gain_low_percent, p.gain_high_percent) == (
        12.5,
        20.0,
        25.0,
        100.0,
    )
    assert (
        prediction(
            p.predicted_low_per_s,
            p.predicted_high_per_s,
            p.gain_low_percent,
            p.gain_high_percent,
            p.measured_per_s,
            "steps",
        )
        == "12.50 to 20.00 steps/s instead of 10.00 (25.0% to 100.0% more)"
    )
    whole = _prediction(steps=0, active_ns=1_000, low_ns=1_000, high_ns=1_000)
    assert (whole.basis, whole.predicted_low_per_s, whole.gain_low_percent) == ("gpu_span", None, None)


def _decode_steps(waits_after_wake: list[int], blocked: bool = True):
    """A hand-built decode: drain 0 (the start-up), then steps of two launches each, 10 and 20 ns after the
    drain before them returned, and a drain entered at 30 ns. The GPU has 120 ns of work left after the second
    launch: a drain that blocks is woken 140 ns after its step's start (its return), the GPU done; the thread
    then waits WAITS_AFTER_WAKE[k] behind another task (a delay, from the wakeup) before drain k+1 returns.
    Where the drains do not block (BLOCKED False: no wakeups), each returns at that same time, the wait inside
    the call. Returns the arrays aligned_lower_bound takes."""
    import numpy as np
    import polars as pl

    launches, entries, exits, wakeups, delays = [], [0], [100], [], []
    returned = 100
    for wait in waits_after_wake:
        launches += [returned + 10, returned + 20]
        entries.append(returned + 30)
        woke = returned + 140
        wakeups.append(woke)
        delays.append((woke, woke + wait))
        returned = woke + wait
        exits.append(returned)
    drains = pl.DataFrame({"ts_ns": entries, "exit_ns": exits})
    starts, ends = (np.array([d[i] for d in delays if d[1] > d[0]], np.int64) for i in (0, 1))
    return (np.array(launches, np.int64), drains, np.array(wakeups if blocked else [], np.int64), starts, ends)


def test_a_wait_for_the_cpu_after_the_gpu_woke_the_drain_is_counted():
    """The drain before a step blocked until the GPU was done: what then kept its thread from returning kept the
    GPU idle until the step's first launch, all of it. Six steps after the start-up's drain 0; the steps that
    count end at drains 2 to 6 (the first keeps the start-up), each from the wakeup of the drain before it, so
    the delays after the wakeups of drains 1 to 5 count: 20, 50, 0, 70 and 0 ns, 140 (drain 6's 30 ends no
    step). Counted from the drains' returns, as before, the steps were alike and the bound nothing."""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    assert aligned_lower_bound(*_decode_steps([20, 50, 0, 70, 0, 30])) == (140, 5)


def test_a_wait_inside_a_drain_that_did_not_block_is_not_counted():
    """The same times, no drain blocked (no wakeups): the GPU may still have had work while the sync ran, so the
    steps start at the drains' returns, and the bound holds nothing the steps do not show."""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    assert aligned_lower_bound(*_decode_steps([20, 50, 0, 70, 0, 30], blocked=False)) == (0, 5)
