"""Fixtures for the policy tests: a tiny config, random views of a layout, token windows."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Observation
from tiny import TINY


@pytest.fixture
def tiny_config() -> PolicyConfig:
    return PolicyConfig(layout="cpu", **TINY)


@pytest.fixture
def space() -> ActionSpace:
    return ActionSpace.default()


@pytest.fixture
def make_obs() -> Callable[..., Observation]:
    """make_obs(config, *lead, seed=0): random uint8 views (and speed, pointer) for a config."""

    def make(config: PolicyConfig, *lead: int, seed: int = 0) -> Observation:
        g = torch.Generator().manual_seed(seed)
        sizes = config.sizes

        def pixels(*shape: int) -> torch.Tensor:
            return torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)

        clip = (sizes.clip,) if config.reads_clip else ()
        return Observation(
            global_view=pixels(*clip, *sizes.global_hw, 3),
            quadrants=pixels(4, *sizes.quadrant_hw, 3),
            fovea=pixels(sizes.fovea, sizes.fovea, 3),
            speed=torch.randint(1, config.speeds + 1, lead, generator=g),
            pointer=torch.randint(0, 1024, (*lead, 2), generator=g),
        )

    return make


@pytest.fixture
def make_tokens(space: ActionSpace) -> Callable[..., torch.Tensor]:
    """make_tokens(*lead, seed=0, move_share=0.4): random valid actions, moves with lattice points."""

    def make(*lead: int, seed: int = 0, move_share: float = 0.4) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        shape = (*lead, space.slots)
        kind = torch.randint(0, space.kinds, shape, generator=g)
        move = torch.rand(shape, generator=g) < move_share
        kind = torch.where(move, torch.tensor(space.move_kinds[0]), kind)
        pointer = torch.tensor(space.move_kinds)
        is_pointer = (kind[..., None] == pointer).any(-1)
        xy = torch.randint(0, space.lattice, (*shape, 2), generator=g)
        xy = torch.where(is_pointer[..., None], xy, 0)
        return torch.cat([kind[..., None], xy], dim=-1)

    return make
