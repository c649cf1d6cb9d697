"""Embeddings of lattice positions and of action tokens (kind, x, y).

A lattice position is embedded as its cell plus its column and row inside the cell, the same
factorisation the head's pointer uses. A token is its kind, plus its position for pointer kinds only
(other kinds carry (0, 0) and act wherever the pointer is). The head embeds the tokens it has chosen so
later slots condition on earlier ones; the policy embeds the previous decision's tokens for the memory
and the pointer position at decision start.

Try: .venv/bin/python -m pytest -q tests/models/test_head.py
"""

from __future__ import annotations

import torch
from torch import nn

from hoi4_arena.models.config import ActionSpace, PointerGrid


class LatticeEmbedding(nn.Module):
    """Lattice (x, y) long tensors (...) -> (..., dim)."""

    def __init__(self, grid: PointerGrid, dim: int) -> None:
        super().__init__()
        self.grid = grid
        self.cell = nn.Embedding(grid.count, dim)
        self.column = nn.Embedding(grid.cell_size, dim)
        self.row = nn.Embedding(grid.cell_size, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        size = self.grid.cell_size
        cell = (y // size) * self.grid.cells + x // size
        return self.cell(cell) + self.column(x % size) + self.row(y % size)


class TokenEmbedding(nn.Module):
    """Tokens (kind, x, y) long tensors (...) -> (..., dim); positions count only for pointer kinds."""

    def __init__(self, space: ActionSpace, grid: PointerGrid, dim: int) -> None:
        super().__init__()
        self.kind = nn.Embedding(space.kinds, dim)
        self.position = LatticeEmbedding(grid, dim)
        mask = torch.zeros(space.kinds, dtype=torch.bool)
        mask[list(space.move_kinds)] = True
        self.register_buffer("move_mask", mask, persistent=False)

    def forward(self, kind: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        pointer = self.move_mask[kind].unsqueeze(-1)
        return self.kind(kind) + pointer * self.position(x, y)
