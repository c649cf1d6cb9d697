"""hoi4/provinces.py's colour lookup: provinces.bmp's pixels to province ids."""

from __future__ import annotations

import numpy as np

from hoi4_arena.hoi4.provinces import ids_of_colours


def test_each_pixel_gets_the_id_of_its_colour_and_unknown_colours_get_0() -> None:
    rgb = np.array(
        [[[10, 20, 30], [0, 0, 1], [255, 255, 255]], [[10, 20, 30], [7, 7, 7], [0, 1, 0]]], np.uint8
    )
    packed, ids = ids_of_colours(rgb, {4: (10, 20, 30), 9: (0, 0, 1), 2: (255, 255, 255), 5: (0, 1, 0)})
    assert ids.tolist() == [[4, 9, 2], [4, 0, 5]]
    assert packed[0, 0] == (10 << 16) | (20 << 8) | 30 and packed[1, 2] == 1 << 8


def test_a_channel_out_of_range_or_an_id_below_1_matches_nothing_and_a_shared_colour_is_the_larger_id() -> (
    None
):
    rgb = np.array([[[0, 1, 44], [1, 44, 0], [3, 3, 3], [9, 9, 9]]], np.uint8)
    colours = {
        6: (0, 0, 300),  # packed by hand, 300 would read as (0, 1, 44)
        7: (0, 300, 0),  # and this as (1, 44, 0)
        -1: (3, 3, 3),
        0: (9, 9, 9),
        11: (5, 5, 5),
        12: (5, 5, 5),
    }
    _, ids = ids_of_colours(rgb, colours)
    assert ids.tolist() == [[0, 0, 0, 0]]
    _, ids = ids_of_colours(np.array([[[5, 5, 5]]], np.uint8), colours)
    assert ids.tolist() == [[12]]
    _, ids = ids_of_colours(np.array([[[5, 5, 5]]], np.uint8), {12: (5, 5, 5), 11: (5, 5, 5)})
    assert ids.tolist() == [[12]]
