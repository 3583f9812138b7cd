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
    assert prediction(p.predicted_low_per_s, p.predicted_high_per_s, p.gain_low_percent, p.gain_high_percent,
                      p.measured_per_s, "steps") == (
        "at least 12.50 steps/s instead of 10.00 (25.0% more); no upper bound: the interference may have kept "
        "the GPU idle the whole span")


def test_bounds_inside_the_span_are_a_range():
    p = _prediction(steps=10, active_ns=1_000_000_000, low_ns=200_000_000, high_ns=500_000_000)
    assert (p.predicted_low_per_s, p.predicted_high_per_s, p.gain_low_percent, p.gain_high_percent) == (
        12.5, 20.0, 25.0, 100.0)
    assert prediction(p.predicted_low_per_s, p.predicted_high_per_s, p.gain_low_percent, p.gain_high_percent,
                      p.measured_per_s, "steps") == "12.50 to 20.00 steps/s instead of 10.00 (25.0% to 100.0% more)"
    whole = _prediction(steps=0, active_ns=1_000, low_ns=1_000, high_ns=1_000)
    assert (whole.basis, whole.predicted_low_per_s, whole.gain_low_percent) == ("gpu_span", None, None)
