"""The simulator's pointer sprite: one 16x24 arrow with binary alpha and its hotspot.

Headless frames draw it at the pointer (`draw_pointer`); the window hands the same sprite to SDL as a
colour cursor, so the X server's composite of its cursor over a capture of the window is the same
picture, byte for byte. That only holds because alpha is 0 or 255: a partially transparent pixel
would be blended by the X server (premultiplied) and by us (straight) with different rounding.

Try: python -m hoi4_arena.sim.cursor   # prints the sprite as text
"""

from __future__ import annotations

import numpy as np

# K = outline, W = fill, anything else transparent. The tip is the hotspot.
_ART = (
    "K...............",
    "KK..............",
    "KWK.............",
    "KWWK............",
    "KWWWK...........",
    "KWWWWK..........",
    "KWWWWWK.........",
    "KWWWWWWK........",
    "KWWWWWWWK.......",
    "KWWWWWWWWK......",
    "KWWWWWWWWWK.....",
    "KWWWWWWWWWWK....",
    "KWWWWWWWWWWWK...",
    "KWWWWWWKKKKKKK..",
    "KWWWKWWK........",
    "KWWKKWWWK.......",
    "KWK..KWWK.......",
    "KK...KWWWK......",
    "K.....KWWK......",
    "......KWWWK.....",
    ".......KWWK.....",
    ".......KWWK.....",
    "........KK......",
    "................",
)
OUTLINE = (24, 18, 10)
FILL = (236, 204, 118)  # HOI4's cursor is a gold arrow
HOTSPOT = (0, 0)


def cursor_sprite() -> tuple[np.ndarray, tuple[int, int]]:
    """(24, 16, 4) uint8 RGBA with alpha 0 or 255, and the hotspot (x, y)."""
    rgba = np.zeros((len(_ART), len(_ART[0]), 4), dtype=np.uint8)
    for y, row in enumerate(_ART):
        for x, cell in enumerate(row):
            if cell == "K":
                rgba[y, x] = (*OUTLINE, 255)
            elif cell == "W":
                rgba[y, x] = (*FILL, 255)
    return rgba, HOTSPOT


_SPRITE, _HOT = cursor_sprite()
_OPAQUE = _SPRITE[:, :, 3] == 255


def draw_pointer(frame: np.ndarray, pointer: tuple[int, int]) -> None:
    """Copy the sprite's opaque pixels into `frame` ((H, W, 3) uint8, in place) at `pointer`, clipped."""
    h, w = frame.shape[:2]
    sh, sw = _OPAQUE.shape
    left, top = int(pointer[0]) - _HOT[0], int(pointer[1]) - _HOT[1]
    x0, y0 = max(left, 0), max(top, 0)
    x1, y1 = min(left + sw, w), min(top + sh, h)
    if x0 >= x1 or y0 >= y1:
        return
    mask = _OPAQUE[y0 - top : y1 - top, x0 - left : x1 - left]
    region = frame[y0:y1, x0:x1]
    region[mask] = _SPRITE[y0 - top : y1 - top, x0 - left : x1 - left, :3][mask]


if __name__ == "__main__":
    print("\n".join(_ART))
    print(f"hotspot {HOTSPOT}, {_OPAQUE.sum()} opaque pixels")
