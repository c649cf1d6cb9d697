"""models/conv.py: the CNNs' pixel normalisation and their stride plan."""

from __future__ import annotations

import torch

from hoi4_arena.models.conv import PIXEL_MEAN, PIXEL_SCALE, plan_strides, to_float_images


def test_pixels_become_the_exact_normalised_floats_and_the_input_is_left_alone() -> None:
    pixels = torch.randint(
        0, 256, (3, 9, 16, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    kept = pixels.clone()
    out = to_float_images(pixels)
    assert out.dtype == torch.float32 and out.shape == (3, 3, 9, 16)
    expected = (pixels.permute(0, 3, 1, 2).double() - PIXEL_MEAN) * PIXEL_SCALE  # in float64: exact
    assert torch.equal(out.double(), expected)
    assert out[0, :, 0, 0].tolist() == [(v - 127.5) / 64 for v in pixels[0, 0, 0].tolist()]
    assert torch.equal(pixels, kept)
    # A float input (already converted somewhere) is copied, never normalised in place.
    floats = pixels.float()
    to_float_images(floats)
    assert torch.equal(floats, kept.float())


def test_the_stride_plan_keeps_the_map_at_least_as_tall_as_asked() -> None:
    assert plan_strides(72, stop=4) == 2  # 72 / 4 = 18 -> 9 -> 5 (one more would give 3)
    assert plan_strides(90, stop=8) == 1 and plan_strides(16, stop=4) == 0
