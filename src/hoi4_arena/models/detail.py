"""The detail reader: what the quadrants and the fovea show, at a resolution the global view lacks.

The four quadrants go through one shared CNN; each quadrant's map is pooled to (cells/2, cells/2) and
the four are stitched back into the screen's (cells, cells) map, so cell (cx, cy) of the map covers the
same screen rectangle as cell (cx, cy) of the pointer lattice. The fovea (a native crop around the
pointer) goes through its own CNN to one vector.

Try: .venv/bin/python -m pytest -q tests/models/test_policy.py -k shapes
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hoi4_arena.models.conv import conv_tower, plan_strides, to_float_images


class DetailReader(nn.Module):
    """quadrants (N, 4, h, w, 3) uint8, fovea (N, f, f, 3) uint8 -> screen map, fovea vector."""

    def __init__(
        self, quadrant_hw: tuple[int, int], fovea: int, cells: int, width: int, fovea_dim: int
    ) -> None:
        super().__init__()
        self.half = cells // 2
        # Keep the quadrant map at least as fine as its cells, so no cell is an interpolation.
        self.quadrant, self.map_dim = conv_tower(
            3, width, plan_strides(quadrant_hw[0], stop=self.half), 2 * width
        )
        self.fovea, fovea_channels = conv_tower(3, width, plan_strides(fovea, stop=4), 4 * width)
        self.fovea_out = nn.Sequential(nn.Linear(fovea_channels, fovea_dim), nn.LayerNorm(fovea_dim))
        self.fovea_dim = fovea_dim

    def forward(self, quadrants: torch.Tensor, fovea: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = quadrants.shape[0]
        x = to_float_images(quadrants.flatten(0, 1))
        for block in self.quadrant:
            x = block(x)
        x = F.adaptive_avg_pool2d(x, (self.half, self.half))  # (N*4, C, cells/2, cells/2)
        c = x.shape[1]
        # (N, 2 rows, 2 cols, C, half, half) -> (N, C, rows*half, cols*half): TL TR / BL BR.
        x = x.reshape(n, 2, 2, c, self.half, self.half).permute(0, 3, 1, 4, 2, 5)
        screen = x.reshape(n, c, 2 * self.half, 2 * self.half)
        y = to_float_images(fovea)
        for block in self.fovea:
            y = block(y)
        return screen, self.fovea_out(y.mean(dim=(2, 3)))
