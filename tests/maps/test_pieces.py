"""maps/pieces.py: the pieces of an id raster agree with a flood fill, on random rasters and on shapes whose
runs join late (a comb, a spiral), and are numbered by their first pixel."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from hoi4_arena.maps.pieces import count_pieces, label_pieces


def flood_labels(raster: np.ndarray) -> np.ndarray:
    """The reference: a breadth-first flood fill from each unlabelled pixel in raster order."""
    h, w = raster.shape
    labels = np.full((h, w), -1, dtype=np.int64)
    count = 0
    for y in range(h):
        for x in range(w):
            if labels[y, x] >= 0:
                continue
            labels[y, x] = count
            queue = deque([(y, x)])
            while queue:
                cy, cx = queue.popleft()
                for ny, nx in ((cy - 1, cx), (cy + 1, cx), (cy, cx - 1), (cy, cx + 1)):
                    if (
                        0 <= ny < h
                        and 0 <= nx < w
                        and labels[ny, nx] < 0
                        and raster[ny, nx] == raster[cy, cx]
                    ):
                        labels[ny, nx] = count
                        queue.append((ny, nx))
            count += 1
    return labels


def comb(teeth: int) -> np.ndarray:
    """Teeth of id 1 hanging from a bar at the bottom: every tooth's runs meet only in the last row."""
    raster = np.zeros((12, 2 * teeth), dtype=np.uint16)
    raster[:, ::2] = 1
    raster[-1] = 1
    return raster


def spiral(size: int) -> np.ndarray:
    """A one-pixel path of id 1 winding inward on a background of 0."""
    raster = np.zeros((size, size), dtype=np.uint8)
    y, x, dy, dx = 0, 0, 0, 1
    for _ in range(size * size):
        raster[y, x] = 1
        ny, nx = y + 2 * dy, x + 2 * dx
        if not (0 <= ny < size and 0 <= nx < size) or raster[ny, nx]:
            dy, dx = dx, -dy
            ny, nx = y + 2 * dy, x + 2 * dx
            if not (0 <= ny < size and 0 <= nx < size) or raster[ny, nx]:
                break
        raster[y + dy, x + dx] = 1
        y, x = ny, nx
    return raster


@pytest.mark.parametrize("seed", range(40))
def test_random_rasters_match_the_flood_fill(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, w = rng.integers(1, 30, 2)
    raster = rng.integers(0, rng.integers(1, 5), (h, w)).astype(np.uint16)
    expected = flood_labels(raster)
    assert np.array_equal(label_pieces(raster), expected)
    _, first = np.unique(expected, return_index=True)  # each piece's first pixel
    per_id = np.bincount(raster.ravel()[first])
    assert np.array_equal(count_pieces(raster), per_id)


@pytest.mark.parametrize(
    "raster", [comb(9), spiral(21), spiral(20)[::-1], comb(5).T], ids=["comb", "spiral", "flipped", "side"]
)
def test_shapes_whose_runs_join_late_are_one_piece(raster: np.ndarray) -> None:
    assert np.array_equal(label_pieces(raster), flood_labels(raster))
    assert count_pieces(raster)[1] == 1


def test_counts_and_labels_of_a_small_raster() -> None:
    raster = np.array([[1, 2, 1], [1, 2, 1], [3, 3, 3]])
    assert label_pieces(raster).tolist() == [[0, 1, 2], [0, 1, 2], [3, 3, 3]]
    assert count_pieces(raster).tolist() == [0, 2, 1, 1]
    with pytest.raises(ValueError, match="2-D"):
        label_pieces(np.zeros(4))
