"""The 1024x1024 pointer lattice: its rounding and its round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoi4_arena.screen.lattice import (
    LATTICE,
    clamp_pixel,
    to_lattice,
    to_lattice_array,
    to_pixel,
    to_pixel_array,
)

sides = st.integers(1, 4000)


def test_documented_values() -> None:
    size = (1080, 1920)
    assert to_lattice(0, 0, size) == (0, 0)
    assert to_lattice(1919, 1079, size) == (1023, 1023)
    assert to_lattice(960, 540, size) == (512, 512)
    assert to_pixel(512, 512, size) == (960, 540)
    assert to_pixel(0, 0, size) == (0, 0)
    assert to_pixel(1023, 1023, size) == (1919, 1079)


@given(w=sides, h=sides, data=st.data())
def test_pixel_lattice_pixel_stays_in_the_cell(w: int, h: int, data: st.DataObject) -> None:
    x, y = data.draw(st.integers(0, w - 1)), data.draw(st.integers(0, h - 1))
    cell = to_lattice(x, y, (h, w))
    assert all(0 <= v < LATTICE for v in cell)
    back = to_pixel(*cell, (h, w))
    assert to_lattice(*back, (h, w)) == cell
    if w <= LATTICE:
        assert back[0] == x
    if h <= LATTICE:
        assert back[1] == y


@given(
    w=st.integers(LATTICE, 8000),
    h=st.integers(LATTICE, 8000),
    lx=st.integers(0, 1023),
    ly=st.integers(0, 1023),
)
def test_lattice_pixel_lattice_is_exact_on_large_screens(w: int, h: int, lx: int, ly: int) -> None:
    assert to_lattice(*to_pixel(lx, ly, (h, w)), (h, w)) == (lx, ly)


@given(w=sides, h=sides)
def test_every_pixel_maps_inside_and_order_is_kept(w: int, h: int) -> None:
    xs = np.arange(w)
    cells = to_lattice_array(np.stack([xs, np.zeros_like(xs)], axis=-1), (h, w))[:, 0]
    assert (np.diff(cells) >= 0).all() and cells[0] >= 0 and cells[-1] < LATTICE


def test_arrays_match_scalars() -> None:
    rng = np.random.default_rng(0)
    size = (1080, 1920)
    pixels = np.stack([rng.integers(0, 1920, 100), rng.integers(0, 1080, 100)], axis=-1)
    cells = to_lattice_array(pixels, size)
    assert cells.tolist() == [list(to_lattice(x, y, size)) for x, y in pixels.tolist()]
    assert to_pixel_array(cells, size).tolist() == [list(to_pixel(x, y, size)) for x, y in cells.tolist()]


def test_out_of_range_is_refused_and_clamp_helps() -> None:
    with pytest.raises(ValueError, match="outside"):
        to_lattice(1920, 5, (1080, 1920))
    with pytest.raises(ValueError, match="outside"):
        to_lattice(-1, 5, (1080, 1920))
    with pytest.raises(ValueError, match="outside"):
        to_pixel(1024, 0, (1080, 1920))
    with pytest.raises(ValueError, match="outside"):
        to_lattice_array(np.array([[0, 1080]]), (1080, 1920))
    with pytest.raises(ValueError, match="positive"):
        to_lattice(0, 0, (0, 10))
    assert clamp_pixel(-5, 2000, (1080, 1920)) == (0, 1079)
