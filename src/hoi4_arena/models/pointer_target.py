"""Soft pointer targets: a demonstrated move scored against a Gaussian blob instead of one point.

People do not click the exact pixel twice; `--pointer-sigma S` lets training score a demonstrated move
against a Gaussian blob of standard deviation S lattice units around it. The blob is exact and
normalised over the whole lattice: because a Gaussian is separable, it is the product of two 1-D
distributions, one over lattice columns and one over rows, each normalised over 0..lattice-1 (so a blob
at the screen's edge is a truncated Gaussian renormalised, not mass lost off screen). Keeping it in
that factored form is what makes the soft loss exact and cheap: the head's pointer factorises the same
way (cell, then column and row inside the cell), see head.py. With sigma = 0 it is the exact point.

Try: python -c "from hoi4_arena.models.pointer_target import gaussian_pointer_target as g; \
print(g(512, 300, 4.0).dense().sum())"
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hoi4_arena.screen.lattice import LATTICE


@dataclass(frozen=True)
class PointerTarget:
    """A separable distribution over the lattice: p(x, y) = px[x] * py[y], each row summing to 1."""

    px: torch.Tensor
    """(..., lattice) distribution over lattice columns."""
    py: torch.Tensor
    """(..., lattice) distribution over lattice rows."""

    def dense(self) -> torch.Tensor:
        """(..., lattice, lattice) indexed [y, x]."""
        return self.py[..., :, None] * self.px[..., None, :]

    def cell_mass(self, cells: int) -> torch.Tensor:
        """(..., cells, cells) indexed [cy, cx]: the target mass of each pointer cell."""
        mx = self.px.unflatten(-1, (cells, -1)).sum(-1)
        my = self.py.unflatten(-1, (cells, -1)).sum(-1)
        return my[..., :, None] * mx[..., None, :]

    def to(self, dtype: torch.dtype) -> PointerTarget:
        return PointerTarget(self.px.to(dtype), self.py.to(dtype))


def _axis(center: torch.Tensor, sigma: float, lattice: int) -> torch.Tensor:
    positions = torch.arange(lattice, dtype=torch.float64)
    if sigma == 0:
        return (positions == center.to(torch.float64)[..., None]).to(torch.float64)
    d = positions - center.to(torch.float64)[..., None]
    # The centre term is exp(0) = 1, so the sum is >= 1 and the division is always safe.
    w = torch.exp(-0.5 * (d / sigma) ** 2)
    return w / w.sum(dim=-1, keepdim=True)


def gaussian_pointer_target(
    x: int | torch.Tensor, y: int | torch.Tensor, sigma: float, lattice: int = LATTICE
) -> PointerTarget:
    """The Gaussian blob of standard deviation `sigma` lattice units around lattice point (x, y).

    `x`, `y` are ints or integer tensors of one shape (...); the result's factors are (..., lattice)
    float64. sigma = 0 gives the exact point (one-hot factors).
    """
    if not sigma >= 0 or sigma == float("inf"):
        raise ValueError(f"pointer sigma must be a finite number >= 0, got {sigma}")
    x = torch.as_tensor(x)
    y = torch.as_tensor(y)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have one shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    for name, v in (("x", x), ("y", y)):
        if v.numel() and (int(v.min()) < 0 or int(v.max()) >= lattice):
            raise ValueError(f"{name} must lie on the lattice 0..{lattice - 1}")
    return PointerTarget(_axis(x, sigma, lattice), _axis(y, sigma, lattice))
