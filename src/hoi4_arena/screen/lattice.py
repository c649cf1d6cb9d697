"""The pointer lattice: positions as (x, y) on a 1024 x 1024 grid over the client rectangle.

Actions name pointer targets on this lattice, whatever the screen's size, so a policy trained on one
resolution can point on another. Along an axis of n client pixels, lattice cell l covers the continuous
interval [l * n / 1024, (l + 1) * n / 1024).

Rounding, in exact integer arithmetic:
- pixel -> lattice: the cell that contains the pixel's centre, `floor((2x + 1) * 1024 / (2n))`;
- lattice -> pixel: the pixel that contains the cell's centre, `floor((2l + 1) * n / 2048)`.

So a pixel -> lattice -> pixel round trip lands in the same lattice cell (on screens up to 1024 pixels
wide it returns the very same pixel), and a lattice -> pixel -> lattice round trip is exact on screens
at least 1024 pixels wide (on smaller ones several cells share a pixel).

Try: python -m hoi4_arena.screen.lattice 1920x1080 960,540
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LATTICE = 1024


def _axis_to_lattice(v, n: int):
    return (2 * v + 1) * LATTICE // (2 * n)


def _axis_to_pixel(v, n: int):
    return (2 * v + 1) * n // (2 * LATTICE)


def _check_size(size: Sequence[int]) -> tuple[int, int]:
    h, w = (int(v) for v in size)
    if h < 1 or w < 1:
        raise ValueError(f"client size must be positive, got {w}x{h}")
    return h, w


def to_lattice(x: int, y: int, size: Sequence[int]) -> tuple[int, int]:
    """Client pixel (x, y) on a client of `size` (height, width) -> lattice (lx, ly)."""
    h, w = _check_size(size)
    if not (0 <= x < w and 0 <= y < h):
        raise ValueError(f"pixel ({x}, {y}) is outside the {w}x{h} client")
    return _axis_to_lattice(int(x), w), _axis_to_lattice(int(y), h)


def to_pixel(lx: int, ly: int, size: Sequence[int]) -> tuple[int, int]:
    """Lattice (lx, ly) -> client pixel (x, y) on a client of `size` (height, width)."""
    h, w = _check_size(size)
    if not (0 <= lx < LATTICE and 0 <= ly < LATTICE):
        raise ValueError(f"lattice point ({lx}, {ly}) is outside 0..{LATTICE - 1}")
    return _axis_to_pixel(int(lx), w), _axis_to_pixel(int(ly), h)


def clamp_pixel(x: int, y: int, size: Sequence[int]) -> tuple[int, int]:
    """(x, y) moved to the nearest pixel inside a client of `size` (height, width)."""
    h, w = _check_size(size)
    return min(max(int(x), 0), w - 1), min(max(int(y), 0), h - 1)


def to_lattice_array(xy: np.ndarray, size: Sequence[int]) -> np.ndarray:
    """Vectorised `to_lattice`: (..., 2) integer pixels (x, y) -> (..., 2) int64 lattice points."""
    h, w = _check_size(size)
    xy = np.asarray(xy, dtype=np.int64)
    if xy.shape[-1:] != (2,):
        raise ValueError(f"expected (..., 2) points, got shape {xy.shape}")
    if (xy < 0).any() or (xy[..., 0] >= w).any() or (xy[..., 1] >= h).any():
        raise ValueError(f"some pixels are outside the {w}x{h} client")
    return np.stack([_axis_to_lattice(xy[..., 0], w), _axis_to_lattice(xy[..., 1], h)], axis=-1)


def to_pixel_array(lxy: np.ndarray, size: Sequence[int]) -> np.ndarray:
    """Vectorised `to_pixel`: (..., 2) lattice points -> (..., 2) int64 client pixels."""
    h, w = _check_size(size)
    lxy = np.asarray(lxy, dtype=np.int64)
    if lxy.shape[-1:] != (2,):
        raise ValueError(f"expected (..., 2) points, got shape {lxy.shape}")
    if (lxy < 0).any() or (lxy >= LATTICE).any():
        raise ValueError(f"some lattice points are outside 0..{LATTICE - 1}")
    return np.stack([_axis_to_pixel(lxy[..., 0], w), _axis_to_pixel(lxy[..., 1], h)], axis=-1)


if __name__ == "__main__":
    import sys

    width, height = (int(v) for v in sys.argv[1].split("x"))
    px, py = (int(v) for v in sys.argv[2].split(","))
    point = to_lattice(px, py, (height, width))
    print(
        f"pixel ({px}, {py}) on {width}x{height} -> lattice {point} -> pixel {to_pixel(*point, (height, width))}"
    )
