"""Fixtures for the RL tests: tiny freshly initialised policies, one torch thread, a tiny game."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from hoi4_arena.rl.rollout_game import RolloutSettings

# Narrow widths: the whole policy runs in a few milliseconds a decision on a CPU.
TINY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
SETTINGS = RolloutSettings(size=(360, 640), layout="cpu", speed=5, max_days=4)
"""A tiny game: 4 days at speed 5, about 20 decisions."""


@pytest.fixture
def settings() -> RolloutSettings:
    """The tiny game's rollout settings."""
    return SETTINGS


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def tiny_policy() -> Policy:
    return Policy(PolicyConfig(layout="cpu", **TINY)).eval()


@pytest.fixture
def make_checkpoint(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str = "tiny", layout: str = "cpu", **config) -> Path:
        policy = Policy(PolicyConfig(layout=layout, **{**TINY, **config}))
        return save_checkpoint(
            tmp_path / "ckpt" / f"{name}.pt", policy, provenance=Provenance(data="none", seed=0)
        )

    return make
