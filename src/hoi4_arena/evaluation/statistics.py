"""Honest statistics for game outcomes: Wilson score intervals for a win rate.

A win rate from a few dozen games is noisy; the Wilson interval stays inside [0, 1] and keeps its
coverage at small n and near 0 or 1, where the textbook normal interval does not.

Try: python -c "from hoi4_arena.evaluation.statistics import wilson; print(wilson(56, 100))"
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


@dataclass(frozen=True)
class Interval:
    """A proportion with its confidence interval."""

    successes: int
    trials: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.successes / self.trials if self.trials else float("nan")

    def to_dict(self) -> dict:
        return {
            "wins": self.successes,
            "games": self.trials,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
        }


def wilson(successes: int, trials: int, z: float = Z95) -> Interval:
    """The Wilson score interval for `successes` out of `trials` (NaN bounds when there are none)."""
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return Interval(0, 0, float("nan"), float("nan"))
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # At 0 or n successes the bound is exactly 0 or 1; float rounding would leave it a hair off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(successes, trials, low, high)
