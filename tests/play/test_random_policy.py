"""The random policy: valid match tokens, uniform kinds and points, the same stream for the same seed."""

from __future__ import annotations

import numpy as np

from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.screen.tokens import KIND_NAMES, MOVE, SLOTS, Tokens


def draws(seed: int, decisions: int) -> np.ndarray:
    policy = RandomPolicy()
    policy.reset(seed)
    return np.stack([policy.decide(None, 5, (0, 0)) for _ in range(decisions)])  # (N, 8, 3)


def test_it_is_exactly_the_documented_draw() -> None:
    rng = np.random.default_rng(11)
    made = draws(11, 3)
    for tokens in made:
        kinds = rng.integers(0, len(KIND_NAMES), SLOTS)
        points = rng.integers(0, 1024, (SLOTS, 2))
        assert np.array_equal(tokens[:, 0], kinds)
        assert np.array_equal(tokens[:, 1:], np.where((kinds == MOVE)[:, None], points, 0))


def test_same_seed_same_decisions_other_seed_others_and_the_screen_is_ignored() -> None:
    assert np.array_equal(draws(3, 50), draws(3, 50))
    assert not np.array_equal(draws(3, 50), draws(4, 50))
    policy = RandomPolicy()
    policy.reset(3)
    seen = policy.decide({"global": np.zeros((2, 2, 3), np.uint8)}, 1, (1023, 0))
    assert np.array_equal(seen, draws(3, 1)[0])


def test_kinds_are_uniform_and_moves_point_anywhere_on_the_lattice() -> None:
    made = draws(0, 4000)  # 32,000 slots
    for tokens in made[:50]:
        Tokens(tokens)  # valid: only moves carry a point
    counts = np.bincount(made[..., 0].ravel(), minlength=len(KIND_NAMES))
    expected = made[..., 0].size / len(KIND_NAMES)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 160, chi2  # 97 degrees of freedom: the 99.99th percentile is about 150
    moves = made[made[..., 0] == MOVE][:, 1:]
    assert len(moves) > 200
    assert moves.min() >= 0 and moves.max() <= 1023
    assert abs(moves.mean() - 511.5) < 40  # uniform on 0..1023: mean 511.5, sd of the mean ~ 15
    assert (made[made[..., 0] != MOVE][:, 1:] == 0).all()
