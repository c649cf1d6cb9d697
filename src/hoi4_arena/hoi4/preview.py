"""A picture of a generated HOI4 mod's map, read back from its own files (not from the arena model).

Terrain colours from terrain.bmp, province borders from provinces.bmp (land dark, water faint), rivers
from rivers.bmp (sources green, flow-in markers red), and the two countries' land tinted by owner from
history/states: what the game would be given, drawn so a person can look at it.

Try: python -m hoi4_arena.hoi4.preview /tmp/arena-river docs/screenshots/hoi4-mod.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from hoi4_arena.hoi4.provinces import ids_of_colours
from hoi4_arena.hoi4.script import Block, parse

TINTS = {"BLU": np.array([60, 100, 210]), "RED": np.array([205, 60, 50])}


def _ids(mod: Path) -> np.ndarray:
    from PIL import Image

    colours = {}
    for line in (mod / "map" / "definition.csv").read_text(encoding="utf-8").splitlines()[1:]:
        p = line.split(";")
        colours[int(p[0])] = (int(p[1]), int(p[2]), int(p[3]))
    with Image.open(mod / "map" / "provinces.bmp") as image:
        rgb = np.asarray(image.convert("RGB"))
    return ids_of_colours(rgb, colours)[1]


def _owners(mod: Path, n: int) -> np.ndarray:
    owner = np.zeros(n + 1, dtype=np.int8)
    for path in (mod / "history" / "states").glob("*.txt"):
        for node in parse(path.read_text(encoding="utf-8")).get("state"):
            state = node.value
            if not isinstance(state, Block):
                continue
            history = state.first("history")
            tag = history.value.first("owner") if history and isinstance(history.value, Block) else None
            provinces = state.first("provinces")
            if tag is None or provinces is None or not isinstance(provinces.value, Block):
                continue
            for word, _line in provinces.value.words():
                if word.isdigit() and int(word) <= n:
                    owner[int(word)] = 1 if tag.value == "BLU" else 2
    return owner


def _grow(mask: np.ndarray, r: int) -> np.ndarray:
    out = mask.copy()
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out |= np.roll(mask, (dy, dx), axis=(0, 1))
    return out


def render(mod: str | Path, scale: float = 0.5) -> np.ndarray:
    """(h, w, 3) uint8 picture of the mod's map."""
    from PIL import Image

    mod = Path(mod)
    ids = _ids(mod)
    with Image.open(mod / "map" / "terrain.bmp") as image:
        terrain = np.asarray(image.convert("RGB")).astype(np.float64)
    with Image.open(mod / "map" / "rivers.bmp") as image:
        rivers = np.asarray(image)
    owner = _owners(mod, int(ids.max()))[ids]
    picture = terrain.copy()
    for code, tag in ((1, "BLU"), (2, "RED")):
        mask = owner == code
        picture[mask] = 0.5 * picture[mask] + 0.5 * TINTS[tag]
    border = np.zeros(ids.shape, dtype=bool)
    border[:, 1:] |= ids[:, 1:] != ids[:, :-1]
    border[1:, :] |= ids[1:, :] != ids[:-1, :]
    land = owner > 0
    picture[border & land] = (30, 30, 30)
    picture[border & ~land] = 0.7 * picture[border & ~land] + 0.3 * 255
    # Rivers are one pixel wide: drawn two pixels thicker (markers four) so they survive the scaling.
    picture[_grow((rivers >= 3) & (rivers <= 11), 1)] = (40, 90, 255)
    picture[_grow(rivers == 0, 3)] = (0, 255, 0)
    picture[_grow(rivers == 1, 3)] = (255, 0, 0)
    image = Image.fromarray(np.clip(picture, 0, 255).astype(np.uint8), "RGB")
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return np.asarray(image.resize(size, Image.Resampling.BOX))


if __name__ == "__main__":
    from PIL import Image

    if len(sys.argv) != 3:
        sys.exit("usage: python -m hoi4_arena.hoi4.preview MOD OUT.png")
    Image.fromarray(render(sys.argv[1])).save(sys.argv[2], optimize=True)
    print(sys.argv[2])
