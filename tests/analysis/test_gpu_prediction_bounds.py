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


def _decode_steps(waits_after_wake: list[int], blocked: bool | list[bool] = True):
    """A hand-built decode: drain 0 (the start-up), then steps of two launches each, 10 and 20 ns after the
    drain before them returned, and a drain entered at 30 ns. The GPU has 120 ns of work left after the second
    launch: a drain that blocks is woken 140 ns after its step's start (its return), the GPU done; the thread
    then waits WAITS_AFTER_WAKE[k] behind another task (a delay, from the wakeup) before drain k+1 returns.
    Where the drains do not block (BLOCKED False: no wakeups), each returns at that same time, the wait inside
    the call; BLOCKED, one for each drain after drain 0, says which did. Returns the arrays aligned_lower_bound
    takes."""
    import numpy as np
    import polars as pl

    launches, entries, exits, wakeups, delays = [], [0], [100], [], []
    returned = 100
    blocks = blocked if isinstance(blocked, list) else [blocked] * len(waits_after_wake)
    for wait, blocks_here in zip(waits_after_wake, blocks):
        launches += [returned + 10, returned + 20]
        entries.append(returned + 30)
        woke = returned + 140
        if blocks_here:
            wakeups.append(woke)
        delays.append((woke, woke + wait))
        returned = woke + wait
        exits.append(returned)
    drains = pl.DataFrame({"ts_ns": entries, "exit_ns": exits})
    starts, ends = (np.array([d[i] for d in delays if d[1] > d[0]], np.int64) for i in (0, 1))
    return (np.array(launches, np.int64), drains, np.array(wakeups, np.int64), starts, ends)


def test_a_wait_for_the_cpu_after_the_gpu_woke_the_drain_is_counted():
    """The drain before a step blocked until the GPU was done: what then kept its thread from returning kept the
    GPU idle until the step's first launch, all of it. Six steps after the start-up's drain 0; the steps that
    count end at drains 2 to 6 (the first keeps the start-up), each from the wakeup of the drain before it, so
    the delays after the wakeups of drains 1 to 5 count: 20, 50, 0, 70 and 0 ns, 140 (drain 6's 30 ends no
    step). Counted from the drains' returns, as before, the steps were alike and the bound nothing."""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    assert aligned_lower_bound(*_decode_steps([20, 50, 0, 70, 0, 30])) == (140, 5)


def test_drains_that_block_and_drains_that_spin_mixed():
    """The same steps with every other drain spinning (no wakeup: its wait inside the call), the GPU done at 140 ns
    in every step, so that each wait is GPU idle. A wait counts where it lies inside a counted step (those ending
    at drains 2 to 6): a blocking drain's after its wakeup, in the step after it; a spinning drain's before its
    return, in its own. Drains 1, 3, 5 blocking: drain 1's 20 (step 2's start) and the waits of 2 to 6, 170 ns in
    all; drains 2, 4, 6 blocking: those of 2 to 5 alone, 120 ns (drain 1's ends before step 2, drain 6's after)."""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    waits = [20, 50, 0, 70, 0, 30]
    assert aligned_lower_bound(*_decode_steps(waits, blocked=[True, False] * 3)) == (170, 5)
    assert aligned_lower_bound(*_decode_steps(waits, blocked=[False, True] * 3)) == (120, 5)


def test_a_spinning_drain_counts_only_the_wait_after_the_gpus_finish():
    """No drain blocks (the sync spins, CUDA's default where CPUs outnumber contexts): each is entered at 30 us,
    the GPU finishes at 440 us (420 us after the second launch), and the thread is preempted from 390 us for
    P us, so that it returns at the later of 440 and 390 + P. Only the part of a wait after the GPU's finish
    kept the GPU idle: P - 50 where P > 50. With P of 0, 60, 0, 100, 0 and 30 us at drains 1 to 6 (the steps
    that count end at drains 2 to 6), that is 10 + 50 = 60 us: the bound, since the steps whose sync returned
    at 440 us show the GPU's work left after each launch."""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    assert aligned_lower_bound(*_spinning_steps([0, 60, 0, 100, 0, 30])) == (60_000, 5)


def test_a_drain_woken_by_something_else_that_then_spun_is_a_spinning_one():
    """The same, but each sync also sleeps once, on a lock, woken 5 us after its entry, then spins: its last
    wakeup is no sign that the GPU was done. A thread that ran longer than a return path after it (here over
    300 us) was spinning: the drain is taken as a spinning one, and the bound is the same 60 us. (Taken as the
    GPU's finish, the early wakeups made the GPU's work look 15 us long, and the bound 160 us: over the truth.)"""
    from launchgap.analysis.gpu_time import aligned_lower_bound

    assert aligned_lower_bound(*_spinning_steps([0, 60, 0, 100, 0, 30], lock_wake_us=5)) == (60_000, 5)


def _spinning_steps(preempted_us: list[int], lock_wake_us: int | None = None):
    """As _decode_steps, in microseconds, with syncs that spin (the arrays aligned_lower_bound takes): drain 0
    the start-up's, then per step two launches 10 and 20 us after the previous return, the drain entered at 30
    us, the GPU done at 440 us, the thread preempted over [390, 390 + P) us, its return at the later of 440 and
    390 + P. LOCK_WAKE_US: each sync also blocked on a lock and was woken that long after its entry."""
    import numpy as np
    import polars as pl

    us = 1_000
    launches, entries, exits, wakeups, delays = [], [0], [100 * us], [], []
    returned = 100 * us
    for p in preempted_us:
        launches += [returned + 10 * us, returned + 20 * us]
        entries.append(returned + 30 * us)
        if lock_wake_us is not None:
            wakeups.append(returned + (30 + lock_wake_us) * us)
        if p:
            delays.append((returned + 390 * us, returned + (390 + p) * us))
        returned += max(440, 390 + p) * us
        exits.append(returned)
    drains = pl.DataFrame({"ts_ns": entries, "exit_ns": exits})
    starts, ends = (np.array([d[i] for d in delays], np.int64) for i in (0, 1))
    return np.array(launches, np.int64), drains, np.array(wakeups, np.int64), starts, ends
