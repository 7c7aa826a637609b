"""Wilson and Newcombe intervals against published values."""

from __future__ import annotations

import pytest

from app.evaluation.statistics import difference_interval, wilson_interval


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # the usual worked example
        (81, 263, 0.2553, 0.3662),  # Newcombe (1998), table I
        (15, 148, 0.0624, 0.1605),  # idem
        (0, 20, 0.0, 0.1611),  # idem: no success, the low bound is exactly 0
        (1, 29, 0.0061, 0.1718),  # idem
        (10, 10, 0.7225, 1.0),
    ],
)
def test_wilson_interval_matches_published_values(
    successes: int, trials: int, low: float, high: float
) -> None:
    interval = wilson_interval(successes, trials)
    assert interval.low == pytest.approx(low, abs=5e-5)
    assert interval.high == pytest.approx(high, abs=5e-5)
    assert interval.confidence == 0.95


def test_no_trials_know_nothing_and_impossible_counts_are_refused() -> None:
    assert (wilson_interval(0, 0).low, wilson_interval(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="11 successes out of 10 trials"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="between 0 and 1"):
        wilson_interval(1, 2, confidence=1.0)


def test_a_wider_confidence_gives_a_wider_interval() -> None:
    narrow, wide = wilson_interval(8, 10, 0.90), wilson_interval(8, 10, 0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


def test_difference_interval_matches_newcombe_method_10() -> None:
    # Newcombe (1998), example (a): 56/70 against 48/80, difference 0.2, CI 0.0524 to 0.3339;
    # the difference is b - a, so the runs are given the other way round.
    interval = difference_interval(48, 80, 56, 70)
    assert interval.low == pytest.approx(0.0524, abs=5e-5)
    assert interval.high == pytest.approx(0.3339, abs=5e-5)
    # example (h): 0/10 against 0/20, CI -0.1611 to 0.2775 (b - a = 0/10 - 0/20)
    interval = difference_interval(0, 20, 0, 10)
    assert interval.low == pytest.approx(-0.1611, abs=5e-5)
    assert interval.high == pytest.approx(0.2775, abs=5e-5)
