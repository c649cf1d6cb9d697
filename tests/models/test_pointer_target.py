"""Gaussian pointer targets: normalised over the lattice, exact, and the exact point as sigma -> 0."""

from __future__ import annotations

import math

import pytest
import torch

from hoi4_arena.models.pointer_target import gaussian_pointer_target


def delta(x: int, y: int, lattice: int = 1024) -> torch.Tensor:
    d = torch.zeros(lattice, lattice, dtype=torch.float64)
    d[y, x] = 1.0
    return d


@pytest.mark.parametrize(("x", "y"), [(512, 300), (0, 0), (1023, 5), (31, 32)])
def test_blob_is_normalised_over_the_lattice(x: int, y: int) -> None:
    target = gaussian_pointer_target(x, y, 6.0)
    dense = target.dense()
    assert dense.shape == (1024, 1024)
    assert dense.sum().item() == pytest.approx(1.0, abs=1e-12)
    assert dense.argmax().item() == y * 1024 + x
    assert target.cell_mass(32).sum().item() == pytest.approx(1.0, abs=1e-12)


def test_blob_is_the_gaussian_density_renormalised() -> None:
    x, y, sigma = 400, 700, 3.0
    dense = gaussian_pointer_target(x, y, sigma).dense()
    # Ratios between lattice points are the Gaussian's, exactly.
    for dx, dy in [(1, 0), (3, 4), (-5, 2)]:
        ratio = dense[y + dy, x + dx] / dense[y, x]
        assert ratio.item() == pytest.approx(math.exp(-(dx * dx + dy * dy) / (2 * sigma * sigma)), rel=1e-12)


def test_blob_at_the_edge_keeps_its_mass_on_screen() -> None:
    edge = gaussian_pointer_target(0, 0, 10.0).dense()
    middle = gaussian_pointer_target(500, 500, 10.0).dense()
    assert edge.sum().item() == pytest.approx(1.0, abs=1e-12)
    # Half the blob is off screen on each axis; its on-screen half is renormalised, so the peak's share
    # grows by (sum over all offsets) / (sum over offsets >= 0) per axis.
    weights = [math.exp(-(d * d) / 200.0) for d in range(200)]
    per_axis = (2 * sum(weights) - 1) / sum(weights)
    assert edge[0, 0].item() == pytest.approx(per_axis**2 * middle[500, 500].item(), rel=1e-9)


def test_blob_reduces_to_the_exact_point_as_sigma_goes_to_zero() -> None:
    x, y = 77, 901
    exact = delta(x, y)
    distances = []
    for sigma in (8.0, 2.0, 0.5, 0.2, 0.05):
        distances.append(0.5 * (gaussian_pointer_target(x, y, sigma).dense() - exact).abs().sum().item())
    assert all(a > b for a, b in zip(distances, distances[1:], strict=False) if a > 0)
    assert distances[0] > 0.5
    assert distances[-1] < 1e-80  # exp(-200): a twentieth of a unit wide, it is the point
    assert torch.equal(gaussian_pointer_target(x, y, 0.0).dense(), exact)


def test_batched_targets_match_one_by_one() -> None:
    xs, ys = torch.tensor([3, 500, 1023]), torch.tensor([1000, 2, 511])
    batch = gaussian_pointer_target(xs, ys, 2.5)
    for i in range(3):
        one = gaussian_pointer_target(int(xs[i]), int(ys[i]), 2.5)
        assert torch.equal(batch.px[i], one.px) and torch.equal(batch.py[i], one.py)


@pytest.mark.parametrize(
    ("x", "y", "sigma", "message"),
    [
        (0, 0, -1.0, "sigma"),
        (0, 0, float("nan"), "sigma"),
        (0, 0, float("inf"), "sigma"),
        (1024, 0, 1.0, "x must lie"),
        (0, -1, 1.0, "y must lie"),
    ],
)
def test_bad_arguments_are_refused(x: int, y: int, sigma: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gaussian_pointer_target(x, y, sigma)
