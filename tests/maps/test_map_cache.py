"""Generated maps kept on disk (`maps/cache.py`): the same map as a fresh draw, damaged entries drawn
again, an unwritable folder or the cache turned off costing nothing but time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.maps import PRESETS, cache, generate
from hoi4_arena.maps.generate import _drawn, draw
from hoi4_arena.sim.save import _fingerprint


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    """An empty cache of this test's own; the process's kept maps forgotten before and after."""
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    _drawn.cache_clear()
    yield tmp_path / "cache" / "maps"
    _drawn.cache_clear()


def same_map(a, b) -> bool:
    """Every field equal (the raster's values and type included) and the same digest (a save's name of
    its map)."""
    assert vars(a).keys() == vars(b).keys()
    if _fingerprint(a) != _fingerprint(b):
        return False
    for key, value in vars(a).items():
        other = getattr(b, key)
        if isinstance(value, np.ndarray):
            if value.dtype != other.dtype or not np.array_equal(value, other):
                return False
        elif value != other:
            return False
    return True


@pytest.mark.parametrize("preset", PRESETS)
def test_a_kept_map_is_the_map_drawn(preset: str, folder: Path) -> None:
    seed = 1 + PRESETS.index(preset) % 3
    first = generate(preset, seed)  # drawn and kept
    assert [p.name for p in folder.iterdir()] == [f"{preset}-{seed}-{cache.source_key()}.npz"]
    _drawn.cache_clear()
    kept = cache.load(preset, seed)
    assert kept is not None and same_map(kept, draw(preset, seed)) and same_map(kept, first)
    assert same_map(generate(preset, seed), first)  # read back, not drawn


def test_a_damaged_or_foreign_entry_is_drawn_again_and_replaced(folder: Path) -> None:
    generate("river", 2)
    path = cache.entry("river", 2)
    good = path.read_bytes()
    for damage in (good[: len(good) // 2], b"not a map at all", b""):
        path.write_bytes(damage)
        _drawn.cache_clear()
        assert cache.load("river", 2) is None
        assert same_map(generate("river", 2), draw("river", 2))
        assert path.read_bytes() == good  # written anew
    # An entry that holds another map (renamed by hand) is not taken for this one.
    path.rename(cache.entry("river", 3))
    assert cache.load("river", 3) is None
    assert list(folder.glob("*.partial")) == []


def test_the_name_changes_with_the_generators_code_and_numpy(folder: Path, monkeypatch) -> None:
    key = cache.source_key()
    cache.source_key.cache_clear()
    monkeypatch.setattr(cache.np, "__version__", np.__version__ + ".other")
    try:
        assert cache.source_key() != key
    finally:
        monkeypatch.undo()
        cache.source_key.cache_clear()
    assert cache.source_key() == key
    monkeypatch.setattr(cache, "_SOURCES", (*cache._SOURCES, "folder.py"))
    cache.source_key.cache_clear()
    try:
        assert cache.source_key() != key
    finally:
        monkeypatch.undo()
        cache.source_key.cache_clear()


def test_an_unwritable_folder_or_the_cache_off_only_costs_time(tmp_path: Path, monkeypatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv(cache.ENV, str(blocked))
    _drawn.cache_clear()
    try:
        assert same_map(generate("plains", 4), draw("plains", 4))
        monkeypatch.setenv(cache.ENV, cache.OFF)
        assert cache.cache_folder() is None and cache.entry("plains", 4) is None
        _drawn.cache_clear()
        assert same_map(generate("plains", 4), draw("plains", 4))
    finally:
        _drawn.cache_clear()
    assert blocked.read_text().startswith("a file")


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_folder() == tmp_path / "hoi4-arena" / "maps"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_folder() == tmp_path / "home" / ".cache" / "hoi4-arena" / "maps"


def test_a_save_knows_a_kept_map_as_the_drawn_one(folder: Path) -> None:
    """A save names its map by a digest of its contents, which a map read back shares with the drawn one;
    a save written before names it by the pickled fields of the map drawn afresh, still recognised."""
    from hoi4_arena.sim.save import _pickled_fingerprint, _same_map

    drawn = draw("ford", 2)
    generate("ford", 2)
    _drawn.cache_clear()
    kept = generate("ford", 2)
    assert _same_map(kept, {"arena_digest": _fingerprint(drawn)})
    assert _same_map(kept, {"arena_fingerprint": _pickled_fingerprint(drawn)})
    other = draw("ford", 3)
    assert not _same_map(kept, {"arena_digest": _fingerprint(other)})
    assert not _same_map(kept, {"arena_fingerprint": _pickled_fingerprint(other)})
