"""Convolution stages shared by the small CNNs (the cnn encoder, the quadrant and fovea readers).

Every CNN here is a stride-4 patch stem followed by 3x3 stages; how many stride-2 stages follow is
planned from the view's size, so one architecture serves the "cpu" and the "full" layout. Group norm,
never batch norm: a decision's features must not depend on which other frames share its batch (the
chunked training path and batch-1 play would disagree otherwise).

Try: python -c "from hoi4_arena.models.conv import plan_strides; print(plan_strides(90, stop=16))"
"""

from __future__ import annotations

import torch
from torch import nn

# uint8 pixels -> roughly zero-mean unit-range floats; the same constants for every small CNN.
PIXEL_MEAN = 127.5
PIXEL_SCALE = 1.0 / 64.0
STEM_STRIDE = 4


def to_float_images(pixels: torch.Tensor) -> torch.Tensor:
    """(N, H, W, C) uint8 -> (N, C, H, W) float32, normalised inside the model so callers pass uint8.

    One new tensor, normalised in place: a third of the time of `(x.float() - mean) * scale`, which
    writes two more screen-sized tensors (bench/pixels.py), with the same values (the scale is a power
    of two: every step is exact) and the same strides."""
    return pixels.permute(0, 3, 1, 2).to(torch.float32, copy=True).sub_(PIXEL_MEAN).mul_(PIXEL_SCALE)


def plan_strides(height: int, stop: int) -> int:
    """How many stride-2 stages follow the stem so the map keeps a height of at least `stop`."""
    size = max(1, height // STEM_STRIDE)
    count = 0
    while (size + 1) // 2 >= stop:
        size = (size + 1) // 2
        count += 1
    return count


def stem(in_channels: int, out_channels: int) -> nn.Sequential:
    """Non-overlapping 4x4 patches: the cheapest way to shrink a screen 16-fold before any 3x3 work."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, STEM_STRIDE, stride=STEM_STRIDE),
        nn.GroupNorm(4, out_channels),
        nn.GELU(),
    )


class ConvStage(nn.Module):
    """A 3x3 convolution (optionally stride 2) and a residual 3x3 convolution."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.down = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1),
            nn.GroupNorm(4, out_channels),
            nn.GELU(),
        )
        self.mix = nn.Sequential(
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
            nn.GroupNorm(4, out_channels),
            nn.GELU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.down(x)
        return x + self.mix(x)


def conv_tower(in_channels: int, width: int, strides: int, max_width: int) -> tuple[nn.ModuleList, int]:
    """The stem, one stride-1 stage, then `strides` stride-2 stages doubling width up to `max_width`.

    Returned as a list of blocks (so leading blocks can be frozen) with the output channel count.
    """
    blocks = nn.ModuleList([stem(in_channels, width), ConvStage(width, width, 1)])
    channels = width
    for _ in range(strides):
        out = min(channels * 2, max_width)
        blocks.append(ConvStage(channels, out, 2))
        channels = out
    return blocks, channels
