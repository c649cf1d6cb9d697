import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoi4_arena.results import wilson

# Reference values: the Wilson score interval at 95% as published tables and R's
# binom::binom.confint(x, n, method = "wilson") give them.
REFERENCE = [
    (0, 10, 0.0, 0.2775328),
    (8, 10, 0.4901625, 0.9433178),
    (56, 100, 0.4622810, 0.6532797),
    (50, 100, 0.4038315, 0.5961685),
    (1, 1, 0.2065493, 1.0),
]


@pytest.mark.parametrize(("wins", "games", "low", "high"), REFERENCE)
def test_wilson_matches_reference(wins: int, games: int, low: float, high: float) -> None:
    interval = wilson(wins, games)
    assert interval.low == pytest.approx(low, abs=1e-6)
    assert interval.high == pytest.approx(high, abs=1e-6)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_the_rate_and_stays_in_bounds(pair: tuple[int, int]) -> None:
    wins, games = pair
    interval = wilson(wins, games)
    assert 0.0 <= interval.low <= interval.rate <= interval.high <= 1.0
    # Symmetry: losses' interval is the mirror of wins'.
    mirror = wilson(games - wins, games)
    assert interval.low == pytest.approx(1 - mirror.high, abs=1e-12)


def test_wilson_refuses_impossible_counts_and_handles_no_games() -> None:
    with pytest.raises(ValueError):
        wilson(3, 2)
    empty = wilson(0, 0)
    assert math.isnan(empty.low) and math.isnan(empty.rate)
