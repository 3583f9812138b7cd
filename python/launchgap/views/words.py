"""Comparisons said in words, the one way every table, plot and line says them.

Every comparison of speeds in launchgap is a slowdown: positive is slower, negative is faster, whatever
the measure (a throughput that drops and a time that grows are both slower). The JSON keeps that number;
people read it as "34.2% slower" or "3.1% faster", never as a sign to decode."""

from __future__ import annotations

# below half the last digit shown, a change reads as none
DIGITS = 1


def _rounds_to_zero(percent: float, digits: int = DIGITS) -> bool:
    return round(abs(percent), digits) == 0


def speed(slowdown_percent: float | None, digits: int = DIGITS) -> str:
    """A slowdown (positive: slower) in words: "34.2% slower", "3.1% faster", "no change"; "-" for none."""
    if slowdown_percent is None:
        return "-"
    if _rounds_to_zero(slowdown_percent, digits):
        return "no change"
    word = "slower" if slowdown_percent > 0 else "faster"
    return f"{abs(slowdown_percent):.{digits}f}% {word}"


def speed_interval(low: float | None, high: float | None, digits: int = DIGITS) -> str:
    """An interval of slowdowns in words: "12.0 to 40.1% slower", "1.0 to 5.0% faster", or, spanning no
    change, "5.0% faster to 10.0% slower"; "-" for none."""
    if low is None or high is None:
        return "-"
    # rounded as shown (+ 0.0: no "-0.0"), so that the words agree with the digits
    low, high = (round(v, digits) + 0.0 for v in sorted((low, high)))
    if low >= 0:
        return f"{low:.{digits}f} to {high:.{digits}f}% slower"
    if high <= 0:
        return f"{-high:.{digits}f} to {-low:.{digits}f}% faster"
    return f"{-low:.{digits}f}% faster to {high:.{digits}f}% slower"


def change(percent: float | None, digits: int = DIGITS) -> str:
    """A number's own change (positive: larger), in words: "20.0% higher", "5.0% lower", "no change"."""
    if percent is None:
        return "-"
    if _rounds_to_zero(percent, digits):
        return "no change"
    return f"{abs(percent):.{digits}f}% {'higher' if percent > 0 else 'lower'}"


def prediction(
    low_per_s: float | None,
    high_per_s: float | None,
    gain_low: float | None,
    gain_high: float | None,
    measured_per_s: float,
    unit: str,
) -> str:
    """A throughput predicted as a range: "164.58 to 171.20 steps/s instead of 150.00 (9.7% to 14.1% more)";
    a side with no bound is said so, never as the rate of a span shrunk to nothing."""
    if low_per_s is None:
        return (
            f"no bound: the interference may have kept the GPU idle the whole span "
            f"({measured_per_s:,.2f} {unit}/s measured)"
        )
    if high_per_s is None:
        return (
            f"at least {low_per_s:,.2f} {unit}/s instead of {measured_per_s:,.2f} ({gain_low:.1f}% more); no "
            f"upper bound: the interference may have kept the GPU idle the whole span"
        )
    after = f"{high_per_s:,.2f}" if low_per_s == high_per_s else f"{low_per_s:,.2f} to {high_per_s:,.2f}"
    gain = f"{gain_high:.1f}%" if gain_low == gain_high else f"{gain_low:.1f}% to {gain_high:.1f}%"
    return f"{after} {unit}/s instead of {measured_per_s:,.2f} ({gain} more)"
