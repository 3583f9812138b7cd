"""Measured values as a reader should see them: a value and its spread rounded to the same place, the
place set by the spread (its first two significant figures), so that no digit is shown that the runs'
scatter makes noise ("227.3 (sd 10.0)", never "227.26 +- 9.9872")."""

from __future__ import annotations

import math
from collections.abc import Iterable

SPREAD_FIGURES = 2  # significant figures a standard deviation is shown to
VALUE_FIGURES = 4  # ... and a value when nothing says how much it scatters
MAX_PLACES = 6


def _places(x: float, figures: int) -> int:
    return max(0, min(MAX_PLACES, figures - 1 - math.floor(math.log10(abs(x)))))


def places(spreads: Iterable[float | None], values: Iterable[float | None] = ()) -> int:
    """Decimal places for a column of measurements: the smallest nonzero spread to SPREAD_FIGURES
    significant figures; with none, the smallest nonzero value to VALUE_FIGURES; else 2."""
    usable = [abs(s) for s in spreads if s is not None and math.isfinite(s) and s != 0]
    if usable:
        return _places(min(usable), SPREAD_FIGURES)
    usable = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    return _places(min(usable), VALUE_FIGURES) if usable else 2


def fixed(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


def with_sd(mean: float, sd: float | None, decimals: int) -> str:
    """'227.3 (sd 10.0)'; the mean alone when there is no spread (one run)."""
    return fixed(mean, decimals) + (f" (sd {fixed(sd, decimals)})" if sd is not None else "")


def span(low: float | None, high: float | None, decimals: int) -> str:
    return "-" if low is None or high is None else f"{fixed(low, decimals)}..{fixed(high, decimals)}"


def rounds(numbers: list[int]) -> str:
    """'round 3' / 'rounds 1 and 3' / 'rounds 1, 2 and 4'."""
    said = [str(n) for n in numbers]
    if len(said) == 1:
        return f"round {said[0]}"
    return f"rounds {', '.join(said[:-1])} and {said[-1]}"
