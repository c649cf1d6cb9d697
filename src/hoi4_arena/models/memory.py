"""The memory: a GRU that carries what the policy has seen and done from one decision to the next.

Each step reads one decision's inputs (encoder summary, cell mean, fovea vector, the previous
decision's action, the game speed, the pointer) plus an attention read-out over this decision's cells
whose query comes from the memory itself: what the policy was attending to steers what it reads now.
Because that query depends on the previous hidden state, the memory steps one decision at a time
(a GRUCell loop over T) rather than through cuDNN's fused sequence kernel.

Try: .venv/bin/python -m pytest -q tests/models/test_policy.py -k chunked
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Memory(nn.Module):
    """h_{t-1}, inputs_t, cells_t -> h_t (and the attention read-out of step t)."""

    def __init__(self, input_dim: int, cell_dim: int, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.query = nn.Linear(hidden, cell_dim)
        self.inputs = nn.Sequential(nn.Linear(input_dim + cell_dim, hidden), nn.LayerNorm(hidden), nn.GELU())
        self.cell = nn.GRUCell(hidden, hidden)
        self.scale = 1.0 / math.sqrt(cell_dim)

    def initial(self, batch: int, device: torch.device | None = None) -> torch.Tensor:
        return torch.zeros(batch, self.hidden, device=device)

    def read(self, h: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        """Attention over cells (N, C, D) with a query from h (N, H): the (N, D) read-out."""
        scores = torch.einsum("ncd,nd->nc", cells, self.query(h)) * self.scale
        return torch.einsum("nc,ncd->nd", F.softmax(scores, dim=-1), cells)

    def step(self, inputs: torch.Tensor, cells: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        readout = self.read(h, cells)
        return self.cell(self.inputs(torch.cat([inputs, readout], dim=-1)), h)

    def run(self, inputs: torch.Tensor, cells: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """inputs (B, T, I), cells (B, T, C, D), h (B, H) -> hidden states (B, T, H)."""
        out = []
        # unbind, not cells[:, t]: each indexing's backward would allocate a zero tensor of all T steps.
        for x, c in zip(inputs.unbind(1), cells.unbind(1), strict=True):
            h = self.step(x, c, h)
            out.append(h)
        return torch.stack(out, dim=1)
