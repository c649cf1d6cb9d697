"""Fixtures for play-policy tests: tiny freshly initialised checkpoints, one torch thread."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance

# Narrow widths: the whole policy runs in a few milliseconds a decision on a CPU.
TINY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """One CPU thread: on a shared, busy machine torch's spinning worker threads only slow a batch of one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
