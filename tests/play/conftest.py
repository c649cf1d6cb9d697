"""Fixtures for play-policy tests: tiny freshly initialised checkpoints, one torch thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from tiny import TINY


@pytest.fixture
def tiny() -> dict:
    """The tiny widths, for tests that build a policy themselves."""
    return dict(TINY)


@pytest.fixture
def make_checkpoint(tmp_path: Path) -> Callable[..., Path]:
    """make_checkpoint(name="tiny", layout="cpu", **config): a fresh policy saved as a checkpoint file."""

    def make(name: str = "tiny", layout: str = "cpu", **config) -> Path:
        policy = Policy(PolicyConfig(layout=layout, **{**TINY, **config}))
        return save_checkpoint(
            tmp_path / "ckpt" / f"{name}.pt", policy, provenance=Provenance(data="none", seed=0)
        )

    return make


@pytest.fixture
def tiny_checkpoint(make_checkpoint: Callable[..., Path]) -> Path:
    return make_checkpoint()
