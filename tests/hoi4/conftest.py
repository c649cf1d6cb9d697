"""One generated arena mod per test session (generation takes a few seconds), copied for each mutation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hoi4_arena.hoi4.export import write_mod
from hoi4_arena.maps import ArenaMap, generate

PRESET, SEED = "bay", 1  # a preset with sea on the border, so coasts and ports are exercised


@pytest.fixture(scope="session")
def arena() -> ArenaMap:
    return generate(PRESET, SEED)


@pytest.fixture(scope="session")
def good_mod(arena: ArenaMap, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly generated mod; tests must not change it (use `mod_copy`)."""
    out = tmp_path_factory.mktemp("mods") / "bay-1"
    write_mod(arena, out)
    return out


@pytest.fixture
def mod_copy(good_mod: Path, tmp_path: Path) -> Path:
    """A private copy of the good mod, for a test to break."""
    out = tmp_path / "mod"
    shutil.copytree(good_mod, out)
    return out
