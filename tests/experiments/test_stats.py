"""Experiment statistics against hand-worked numbers and scipy."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from launchgap.experiments.stats import compare, summarize


def test_summary_uses_the_sample_standard_deviation_and_flags_the_outlier():
    s = summarize([1, 2, 3, 4, 100])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3.0, 22.0, 1.0, 100.0)
    # deviations -21 -20 -19 -18 78: squares sum to 7610, / (n - 1) = 1902.5
    assert s.sd == pytest.approx(math.sqrt(1902.5))
    # MAD = median(2, 1, 0, 1, 97) = 1; 100 scores 0.6745 * 97 = 65.4 > 3.5
    assert s.outliers == [4]


def test_t_interval_of_the_mean_by_hand():
    s = summarize([10, 12, 14])
    # mean 12, sd 2, se 2 / sqrt(3); t(0.975, 2) = 4.302653
    half = 4.302652729911275 * 2 / math.sqrt(3)
    assert (s.ci_low, s.ci_high) == (pytest.approx(12 - half), pytest.approx(12 + half))
    assert s.outliers == []


def test_one_value_has_no_spread():
    s = summarize([7.5])
    assert (s.sd, s.ci_low, s.ci_high, s.p95) == (None, None, None, 7.5)


def test_slowdown_of_a_throughput_with_welch_interval_and_both_tests():
    base, noisy = [100.0, 101.0, 99.0], [80.0, 82.0, 78.0]
    c = compare(base, noisy)
    assert c.slowdown_percent == pytest.approx(20.0)  # medians 100 and 80
    welch = sps.ttest_ind(base, noisy, equal_var=False)
    ci = welch.confidence_interval(0.95)
    assert c.welch_p == pytest.approx(welch.pvalue)
    assert (c.slowdown_ci_low, c.slowdown_ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))  # base mean 100
    assert c.significant is True  # the interval above excludes 0
    # three against three: Mann-Whitney's floor is p = 2/20
    assert c.mannwhitney_p == pytest.approx(0.1)


def test_wall_time_slowdown_is_positive_when_runs_get_longer():
    c = compare([2.0, 2.0, 2.2], [3.0, 3.0, 3.3], higher_is_better=False)
    assert c.slowdown_percent == pytest.approx(50.0)
    # Welch's interval of the longer runs' mean less the baseline's, as a share of the baseline's mean (2.0667)
    ci = sps.ttest_ind([3.0, 3.0, 3.3], [2.0, 2.0, 2.2], equal_var=False).confidence_interval(0.95)
    assert (c.slowdown_ci_low, c.slowdown_ci_high) == (
        pytest.approx(100 * ci.low / (6.2 / 3)),
        pytest.approx(100 * ci.high / (6.2 / 3)),
    )


def test_no_difference_is_not_significant():
    c = compare([100.0, 102.0, 98.0], [101.0, 99.0, 100.0])
    assert not c.significant
    assert c.slowdown_ci_low < 0 < c.slowdown_ci_high
