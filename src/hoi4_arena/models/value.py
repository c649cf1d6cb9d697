"""The value head: the memory's estimate that this game ends in a win, a scalar in [0, 1].

Behaviour cloning does not train it; the critic and PPO do, with binary cross-entropy against the
game's outcome. It returns the logit as well, because BCE on logits is the numerically stable form.

Try: .venv/bin/python -m pytest -q tests/models/test_policy.py -k value
"""

from __future__ import annotations

import torch
from torch import nn


class ValueHead(nn.Module):
    """(..., hidden) -> (value in [0, 1], logit), both shaped (...)."""

    def __init__(self, hidden: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(hidden, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logit = self.net(h).squeeze(-1)
        return torch.sigmoid(logit), logit
