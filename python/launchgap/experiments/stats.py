"""Statistics for repeated runs: one scenario's summary, and a scenario
against the baseline. Library-backed (scipy) wherever a test or a
distribution is involved.

With three repeats a side, Mann-Whitney U cannot go below p = 0.1 (two
sided: 2 of its 20 orderings are as extreme), so "significant" rests on
Welch's t, and the slowdown's interval comes from Welch's t as well; both
tests are reported.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
# Iglewicz and Hoaglin's modified z-score: 0.6745 (x - median) / MAD, outlier above 3.5
MAD_SCALE = 0.6745
OUTLIER_Z = 3.5


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    sd: float | None  # sample standard deviation (n - 1); None below two values
    min: float
    max: float
    p95: float
    ci_low: float | None  # 95% t interval of the mean
    ci_high: float | None
    outliers: list[int]  # indices, by the modified z-score above

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(values: list[float] | np.ndarray) -> Summary:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to summarise")
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size > 1 else None
    if sd is not None:
        half = float(sps.t.ppf(0.5 + CONFIDENCE / 2, x.size - 1)) * sd / math.sqrt(x.size)
        low, high = mean - half, mean + half
    else:
        low = high = None
    median = float(np.median(x))
    mad = float(np.median(np.abs(x - median)))
    if mad > 0:
        outliers = [int(i) for i in np.flatnonzero(MAD_SCALE * np.abs(x - median) / mad > OUTLIER_Z)]
    else:
        outliers = [int(i) for i in np.flatnonzero(x != median)] if x.size > 2 else []
    return Summary(
        int(x.size), median, mean, sd, float(x.min()), float(x.max()), float(np.quantile(x, 0.95)), low, high, outliers
    )


@dataclass(frozen=True)
class Comparison:
    """A scenario against the baseline. Every signed number is signed as a slowdown: positive when the
    scenario is slower (a throughput lower, a time longer), negative when it is faster, whatever the
    measure's direction (docs/report-schema.md)."""

    slowdown_percent: float  # of medians, in % of the baseline's median
    mean_slowdown_percent: float  # of means, in % of the baseline's mean
    slowdown_ci_low: float | None  # Welch 95% interval of the difference of means, as % of the baseline mean
    slowdown_ci_high: float | None
    welch_t: float | None  # Welch's t statistic
    welch_p: float | None
    mannwhitney_u: float | None  # U of the baseline's sample (a count of pairs: not signed)
    mannwhitney_p: float | None
    significant: bool  # Welch p < 0.05 (see the module note on Mann-Whitney)

    def as_dict(self) -> dict:
        return asdict(self)


def compare(baseline: list[float], scenario: list[float], higher_is_better: bool = True) -> Comparison:
    """How much slower the scenario is than the baseline, in % (positive: slower, negative: faster)."""
    b = np.asarray(baseline, dtype=float)
    s = np.asarray(scenario, dtype=float)
    # base - scenario is a slowdown for a throughput; for a time, scenario - base is
    sign = 1.0 if higher_is_better else -1.0
    base_median, base_mean = float(np.median(b)), float(b.mean())
    slowdown = sign * (base_median - float(np.median(s))) / base_median * 100.0
    mean_slowdown = sign * (base_mean - float(s.mean())) / base_mean * 100.0
    low = high = t = p = u = pu = None
    if b.size > 1 and s.size > 1 and (b.std(ddof=1) > 0 or s.std(ddof=1) > 0):
        welch = sps.ttest_ind(b, s, equal_var=False)
        t, p = sign * float(welch.statistic), float(welch.pvalue)
        ci = welch.confidence_interval(CONFIDENCE)  # of mean(b) - mean(s)
        lo, hi = sign * ci.low / base_mean * 100.0, sign * ci.high / base_mean * 100.0
        low, high = min(lo, hi), max(lo, hi)
    if b.size and s.size:
        mw = sps.mannwhitneyu(b, s, alternative="two-sided")
        u, pu = float(mw.statistic), float(mw.pvalue)
    return Comparison(slowdown, mean_slowdown, low, high, t, p, u, pu, bool(p is not None and p < 1 - CONFIDENCE))
