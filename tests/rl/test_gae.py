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


def test_exponents_discount_each_step_by_its_own_clock() -> None:
    # gamma 0.5, lambda 0.5: a step of e ticks discounts by 0.5^e and carries 0.25^e of the next advantage.
    # Column 0 (exponents 2, 0, 1; the game runs on, bootstrap 0.4):
    #   e=1: delta2 = 1 + 0.5 * 0.4 - 0.8 = 0.4                  A2 = 0.4
    #   e=0: delta1 = 0 + 1 * 0.8 - 0.6 = 0.2                    A1 = 0.2 + 1 * 0.4 = 0.6 (a free step)
    #   e=2: delta0 = 0 + 0.25 * 0.6 - 0.5 = -0.35               A0 = -0.35 + 0.0625 * 0.6 = -0.3125
    # Column 1 (exponents 0.5, 3, 2; its game ends at row 1, the next runs on from bootstrap 0.9):
    #   e=2: delta2 = 0 + 0.25 * 0.9 - 0.7 = -0.475              A2 = -0.475
    #   done: delta1 = 0.5 - 0.5 = 0                             A1 = 0 (its exponent 3 never counts)
    #   e=0.5: delta0 = 0 + sqrt(0.5) * 0.5 - 0.4 = -0.0464466   A0 = -0.0464466 + 0.5 * 0 = -0.0464466
    rewards = torch.tensor([[0.0, 0.0], [0.0, 0.5], [1.0, 0.0]])
    values = torch.tensor([[0.5, 0.4], [0.6, 0.5], [0.8, 0.7]])
    dones = torch.tensor([[False, False], [False, True], [False, False]])
    exponents = torch.tensor([[2.0, 0.5], [0.0, 3.0], [1.0, 2.0]])
    advantages, returns = gae(
        rewards, values, dones, torch.tensor([0.4, 0.9]), gamma=0.5, lam=0.5, exponents=exponents
    )
    expected = torch.tensor([[-0.3125, -0.0464466], [0.6, 0.0], [0.4, -0.475]])
    assert torch.allclose(advantages, expected, atol=1e-6)
    assert torch.allclose(returns, expected + values, atol=1e-6)


def test_exponents_of_one_give_plain_gae_exactly_and_gamma_one_ignores_them() -> None:
    generator = torch.Generator().manual_seed(0)
    rewards, values = torch.rand(9, 3, generator=generator), torch.rand(9, 3, generator=generator)
    dones = torch.rand(9, 3, generator=generator) < 0.2
    last = torch.rand(3, generator=generator)
    plain = gae(rewards, values, dones, last, gamma=0.9, lam=0.95)
    ones = gae(rewards, values, dones, last, gamma=0.9, lam=0.95, exponents=torch.ones(9, 3))
    assert all(torch.equal(a, b) for a, b in zip(plain, ones, strict=True))
    # With gamma 1 and lambda 1 (train-ppo's defaults) the clock changes nothing, whatever it says.
    plain = gae(rewards, values, dones, last)
    clocked = gae(rewards, values, dones, last, exponents=torch.rand(9, 3, generator=generator) * 30)
    assert all(torch.equal(a, b) for a, b in zip(plain, clocked, strict=True))
    with pytest.raises(ValueError, match="exponents"):
        gae(rewards, values, dones, last, exponents=torch.ones(9))
