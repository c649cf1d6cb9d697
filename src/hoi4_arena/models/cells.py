"""The cell map: one feature vector per screen cell (cells x cells, 32x32 by default).

The cells are what the pointer head scores (a cell is chosen by comparing a query with what the cell
shows) and what the memory's attention reads. Each cell's feature comes from the quadrant reader's
map (and, for tower encoders, the tower's patch tokens pooled onto the same grid), mixed with its
neighbours by a depthwise 3x3 convolution, plus a learned embedding of the cell's place on screen.
Cells are numbered row-major from the top left: cell = cy * cells + cx, as on the pointer lattice.

Try: .venv/bin/python -m pytest -q tests/models/test_policy.py -k shapes
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CellMap(nn.Module):
    """(N, C, cells, cells) detail map [+ (N, E, h, w) encoder map] -> (N, cells*cells, cell_dim)."""

    def __init__(self, cells: int, detail_dim: int, encoder_dim: int, cell_dim: int) -> None:
        super().__init__()
        self.cells = cells
        self.detail = nn.Conv2d(detail_dim, cell_dim, 1)
        self.encoder = nn.Conv2d(encoder_dim, cell_dim, 1) if encoder_dim else None
        self.context = nn.Conv2d(cell_dim, cell_dim, 3, padding=1, groups=cell_dim)
        self.position = nn.Parameter(torch.randn(cells * cells, cell_dim) * 0.02)
        self.norm = nn.LayerNorm(cell_dim)
        self.cell_dim = cell_dim

    def forward(self, detail: torch.Tensor, encoder: torch.Tensor | None = None) -> torch.Tensor:
        x = self.detail(detail)
        if self.encoder is not None:
            if encoder is None:
                raise ValueError("this cell map was built for an encoder map, and none was given")
            x = x + self.encoder(F.adaptive_avg_pool2d(encoder, (self.cells, self.cells)))
        x = F.gelu(x)
        x = x + self.context(x)
        x = x.flatten(2).transpose(1, 2)  # (N, cells*cells, cell_dim), row-major cells
        return self.norm(x + self.position)
