"""Generalised advantage estimation (Schulman et al. 2016) over a rollout of (T, N) decisions.

    delta_t = r_t + gamma^e_t * V_{t+1} * (1 - done_t) - V_t
    A_t     = delta_t + (gamma * lambda)^e_t * (1 - done_t) * A_{t+1}
    return_t = A_t + V_t

`V_{t+1}` is the next decision's value, `last_value` after the last row; a row with done_t set ends its
game, so nothing after it flows back into it (the next row is another game of the same slot). With
lambda 1 (train-ppo's default) and gamma 1 the return is the game's remaining reward when the game
ends inside the rollout, and the bootstrapped value otherwise.

e_t is how much time step t takes on the discount's clock: 1 for every decision unless `exponents` are
given (InfoPPO's information clock gives each decision the collecting policy's entropy there, so a step
taken with certainty costs no horizon). With gamma 1 and lambda 1 the exponents change nothing.

Try: .venv/bin/python -m pytest -q tests/rl/test_gae.py
"""

from __future__ import annotations

import torch


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_value: torch.Tensor,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
    exponents: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns, both (T, N), of rewards, values and dones (T, N) and last_value (N,);
    `exponents` (T, N), if given, raise each step's gamma and gamma * lambda to that power."""
    if rewards.shape != values.shape or rewards.shape != dones.shape or last_value.shape != rewards.shape[1:]:
        raise ValueError(
            f"rewards, values, dones must be (T, N) and last_value (N,); got {tuple(rewards.shape)}, "
            f"{tuple(values.shape)}, {tuple(dones.shape)}, {tuple(last_value.shape)}"
        )
    if exponents is not None and exponents.shape != rewards.shape:
        raise ValueError(f"exponents must be (T, N) like rewards, not {tuple(exponents.shape)}")
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_value)
    next_value = last_value
    carry = 1.0 - dones.to(rewards.dtype)
    for t in range(rewards.shape[0] - 1, -1, -1):
        if exponents is None:
            discount, trace = gamma, gamma * lam
        else:
            e = exponents[t].to(rewards.dtype)
            discount, trace = gamma**e, (gamma * lam) ** e
        delta = rewards[t] + discount * next_value * carry[t] - values[t]
        running = delta + trace * carry[t] * running
        advantages[t] = running
        next_value = values[t]
    return advantages, advantages + values
