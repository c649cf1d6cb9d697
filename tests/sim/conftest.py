"""Scenario helpers for world tests: a plains map and a way to stage divisions where a test needs them.

The helpers are handed to tests as fixtures (`stage`, `crossing`), so the tests import nothing from here.
"""

from __future__ import annotations

import pytest

from hoi4_arena.maps import ArenaMap, generate
from hoi4_arena.sim.world import World


@pytest.fixture(scope="session")
def plains() -> ArenaMap:
    return generate("plains", 0)


def _stage(world: World, placement: dict[int, int]) -> None:
    """Teleport divisions (id -> province) and park every other division at its capital: a test setup."""
    for d in world.divisions.values():
        where = placement.get(d.id, world.arena.capitals[d.tag])
        world.occupants[d.province].remove(d.id)
        d.province = where
        world.occupants[where].append(d.id)
        d.path, d.progress, d.entrench = [], 0.0, 0.0


def _crossing(world: World, terrain: str = "plains") -> tuple[int, int]:
    """A BLU border province and a RED neighbour of `terrain` with no river between them."""
    for f in world.arena.border_provinces["BLU"]:
        for e in world.adj[f]:
            plain = world.terrain[e] == terrain and (f, e) not in world.river
            if world.owner[e] == "RED" and plain and world.arena.capitals["RED"] != e:
                return f, e
    raise LookupError("no such crossing")


@pytest.fixture(scope="session")
def stage():
    return _stage


@pytest.fixture(scope="session")
def crossing():
    return _crossing
