"""Fixtures for the RL tests: tiny freshly initialised policies, one torch thread, a tiny game."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from hoi4_arena.play.rollout_game import RolloutSettings
from tiny import TINY

SETTINGS = RolloutSettings(size=(360, 640), layout="cpu", speed=5, max_days=4)
"""A tiny game: 4 days at speed 5, about 20 decisions."""


@pytest.fixture
def settings() -> RolloutSettings:
    """The tiny game's rollout settings."""
    return SETTINGS


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)


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
