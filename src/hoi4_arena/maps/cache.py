"""Generated preset maps kept on disk, so that each new process reads a map instead of drawing it again.

Drawing a preset map takes about 0.7 s of CPU, and every process that plays or checks a game draws its
maps once: each `sim` window, worker, rollout process, Ray task's worker and command. `generate` looks
here first. A map is stored as its raster, its `map.json` contents (`ArenaMap.to_json`, the map
folder's own format; no pickle) and the order of its rivers in one compressed .npz of about 40 kB, and
read back through `from_json` (about 90 ms in all): the same map, field by field, its rivers even in
the drawn map's order (what iterates them meets them as it did).

An entry is named by everything the drawing depends on: the preset, the seed, and a key made of the
source files of the generator and the map model and numpy's version. A change to any of them names new
entries, so a stale map is never read (old ones stay in the folder until it is cleared). A file that
cannot be read is drawn again and written anew; one that cannot be written (a read-only home, a full
disk) is skipped with a debug message: the cache only ever saves time.

The folder: `$HOI4_ARENA_CACHE/maps` when set, else `$XDG_CACHE_HOME/hoi4-arena/maps`, else
`~/.cache/hoi4-arena/maps`. `HOI4_ARENA_CACHE=off` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from hoi4_arena.maps.model import ArenaMap, from_json

log = logging.getLogger(__name__)

ENV = "HOI4_ARENA_CACHE"
OFF = "off"
_SOURCES = ("generate.py", "invariants.py", "model.py", "presets.py")
"""The files of this package whose code decides what a drawn map holds."""


def cache_folder() -> Path | None:
    """Where maps are kept now, or None when the cache is off."""
    root = os.environ.get(ENV)
    if root == OFF:
        return None
    if root:
        return Path(root) / "maps"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hoi4-arena" / "maps"


@functools.lru_cache(maxsize=1)
def source_key() -> str:
    """16 hex digits naming this generator: its source files and numpy's version."""
    digest = hashlib.sha256(np.__version__.encode())
    here = Path(__file__).parent
    for name in _SOURCES:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()[:16]


def entry(preset: str, seed: int) -> Path | None:
    folder = cache_folder()
    return None if folder is None else folder / f"{preset}-{seed}-{source_key()}.npz"


def load(preset: str, seed: int) -> ArenaMap | None:
    """The kept map of (preset, seed), or None when there is none (or it cannot be read)."""
    path = entry(preset, seed)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            raster, text = stored["raster"], stored["map"].tobytes().decode()
            river_order = stored["river_order"].tolist()
        arena = from_json(raster, json.loads(text))
        arena.rivers = _in_order(arena.rivers, river_order)
    except Exception as error:  # noqa: BLE001 -- a damaged entry is only a miss: the map is drawn again
        log.debug("map cache: %s unreadable (%s); drawing the map again", path, error)
        return None
    if (arena.preset, arena.seed) != (preset, seed):
        log.debug("map cache: %s holds %s:%s; drawing the map again", path, arena.preset, arena.seed)
        return None
    return arena


def store(arena: ArenaMap) -> None:
    """Keep a freshly drawn map (written whole, then renamed: a reader never sees half a file)."""
    path = entry(arena.preset, arena.seed)
    if path is None:
        return
    text = json.dumps(arena.to_json(), separators=(",", ":")).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez_compressed(
                    out,
                    raster=arena.raster,
                    map=np.frombuffer(text, dtype=np.uint8),
                    river_order=np.array([(*pair, w) for pair, w in arena.rivers.items()], dtype=np.int64),
                )
            os.replace(partial, path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    except OSError as error:
        log.debug("map cache: cannot write %s (%s)", path, error)


def _in_order(rivers: dict[frozenset[int], int], order: list[list[int]]) -> dict[frozenset[int], int]:
    """`rivers` (as `map.json` gives them, sorted) in the drawn map's own order: the dict's and each
    pair's."""
    ordered: dict[frozenset[int], int] = {}
    for a, b, width in order:
        pair = frozenset((a, b))
        if tuple(pair) != (a, b):
            pair = frozenset((b, a))  # the same set, its elements met in the drawn pair's order
        if tuple(pair) != (a, b) or rivers.get(pair) != width:
            raise ValueError(f"river order entry {a}, {b} is not one of the map's rivers")
        ordered[pair] = width
    if len(ordered) != len(rivers):
        raise ValueError("the river order does not hold every river once")
    return ordered
