"""GAE against examples worked by hand (rl/gae.py)."""

from __future__ import annotations

import pytest
import torch

from hoi4_arena.rl.gae import gae


def test_gae_matches_a_hand_worked_rollout() -> None:
    # Column 0: a game ending at the last row (its bootstrap 0.3 must not count).
    #   delta2 = 1 - 0.8 = 0.2                A2 = 0.2
    #   delta1 = 0 + 0.8 - 0.6 = 0.2          A1 = 0.2 + 0.5 * 0.2 = 0.3
    #   delta0 = 0 + 0.6 - 0.5 = 0.1          A0 = 0.1 + 0.5 * 0.3 = 0.25
    # Column 1: a game ending at row 1 (reward 0.5, a draw), the slot's next game runs on (bootstrap 0.9).
    #   delta2 = 0 + 0.9 - 0.7 = 0.2          A2 = 0.2
    #   delta1 = 0.5 - 0.5 = 0                A1 = 0 (nothing flows back across the game's end)
    #   delta0 = 0 + 0.5 - 0.4 = 0.1          A0 = 0.1 + 0.5 * 0 = 0.1
    rewards = torch.tensor([[0.0, 0.0], [0.0, 0.5], [1.0, 0.0]])
    values = torch.tensor([[0.5, 0.4], [0.6, 0.5], [0.8, 0.7]])
    dones = torch.tensor([[False, False], [False, True], [True, False]])
    advantages, returns = gae(rewards, values, dones, torch.tensor([0.3, 0.9]), gamma=1.0, lam=0.5)
    expected = torch.tensor([[0.25, 0.1], [0.3, 0.0], [0.2, 0.2]])
    assert torch.allclose(advantages, expected, atol=1e-6)
    assert torch.allclose(returns, expected + values, atol=1e-6)


def test_lambda_one_gives_discounted_returns() -> None:
    # gamma 0.9, lambda 1: the return is the discounted reward to the end, 0.81 * 1 at row 0.
    #   A2 = 1 - 0.8 = 0.2; A1 = 0.9 * 0.8 - 0.6 + 0.9 * 0.2 = 0.30; A0 = 0.9 * 0.6 - 0.5 + 0.9 * 0.30 = 0.31
    rewards = torch.tensor([[0.0], [0.0], [1.0]])
    values = torch.tensor([[0.5], [0.6], [0.8]])
    dones = torch.tensor([[False], [False], [True]])
    advantages, returns = gae(rewards, values, dones, torch.tensor([0.0]), gamma=0.9, lam=1.0)
    assert torch.allclose(advantages[:, 0], torch.tensor([0.31, 0.30, 0.2]), atol=1e-6)
    assert torch.allclose(returns[:, 0], torch.tensor([0.81, 0.9, 1.0]), atol=1e-6)


def test_a_game_running_on_bootstraps_from_the_last_value() -> None:
    rewards = torch.zeros(2, 1)
    values = torch.tensor([[0.2], [0.4]])
    _, returns = gae(rewards, values, torch.zeros(2, 1, dtype=torch.bool), torch.tensor([0.7]))
    assert torch.allclose(returns[:, 0], torch.tensor([0.7, 0.7]))


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="last_value"):
        gae(torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3))
