"""Confidence intervals for pass rates: Wilson's score interval for one proportion and
Newcombe's hybrid score interval (his method 10) for the difference of two.

Both stay inside [0, 1] (resp. [-1, 1]) and behave at 0 or n successes and small n, where
the textbook normal interval does not, which is why evaluation reports use them. The normal
quantile comes from the standard library's ``NormalDist``.
"""

from __future__ import annotations

from math import sqrt
from statistics import NormalDist

from pydantic import BaseModel, ConfigDict

#: The confidence level reports use.
CONFIDENCE = 0.95


class Interval(BaseModel):
    """A confidence interval at ``confidence`` (low and high bounds)."""

    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    confidence: float = CONFIDENCE


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence level is between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson's score interval for ``successes`` out of ``trials`` (0 trials: [0, 1], nothing
    is known)."""
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials is not a proportion")
    if trials == 0:
        return Interval(low=0.0, high=1.0, confidence=confidence)
    z = _z(confidence)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # at 0 or n successes a bound is exactly 0 or 1; rounding must not push it past
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(low=low, high=high, confidence=confidence)


def difference_interval(
    successes_a: int,
    trials_a: int,
    successes_b: int,
    trials_b: int,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Newcombe's hybrid score interval for ``p_b - p_a`` (two independent samples), built
    from each rate's Wilson interval."""
    a = wilson_interval(successes_a, trials_a, confidence)
    b = wilson_interval(successes_b, trials_b, confidence)
    p_a = successes_a / trials_a if trials_a else 0.0
    p_b = successes_b / trials_b if trials_b else 0.0
    difference = p_b - p_a
    low = difference - sqrt((p_b - b.low) ** 2 + (a.high - p_a) ** 2)
    high = difference + sqrt((b.high - p_b) ** 2 + (p_a - a.low) ** 2)
    return Interval(low=max(-1.0, low), high=min(1.0, high), confidence=confidence)
