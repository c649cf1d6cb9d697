"""The exact area average in torch (training side, CPU and CUDA), byte-identical to `resample.py`.

Same definition: coverage weights on the common grid of input and output (`resample.axis_plan`, shared
by both implementations), integer sums, one round-half-up division at the end. Here the arithmetic is
int32 for the vertical pass (each sum is at most 255 * H) and int64 for the horizontal pass and the
division, so the result does not depend on the device, the batch or the order of summation.

Layout: channels last, `(..., H, W, C)` uint8 -> `(..., h, w, C)` uint8, any number of leading batch
dimensions (the frames of a clip, a batch of clips). Decoded video and captured frames are channels
last; a model that wants (C, H, W) permutes after resampling.

Try: python -m hoi4_arena.screen.resample_torch   (compares against the numpy path on a random frame)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hoi4_arena.screen.resample import MAX_AREA, MAX_ROWS, axis_plan, check_size


def _taps(n_in: int, n_out: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    plan = axis_plan(n_in, n_out)
    start = torch.from_numpy(plan.start.copy()).to(device)
    weights = torch.from_numpy(plan.weights.copy()).to(device)
    return start, weights


def area_resample(images: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """Resample `(..., H, W, C)` uint8 to `(..., h, w, C)` uint8 by the exact area average."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"expected a torch tensor, got {type(images).__name__}")
    if images.dtype != torch.uint8:
        raise ValueError(f"area_resample takes uint8 images, got {images.dtype}")
    if images.ndim < 3:
        raise ValueError(f"expected (..., H, W, C) channels-last images, got shape {tuple(images.shape)}")
    if images.numel() == 0:
        raise ValueError(f"cannot resample an empty tensor of shape {tuple(images.shape)}")
    h, w = check_size(size)
    height, width = int(images.shape[-3]), int(images.shape[-2])
    if height > MAX_ROWS or height * width >= MAX_AREA:
        raise ValueError(f"a {width}x{height} image is too large for the exact accumulators")

    device = images.device
    ystart, yweights = _taps(height, h, device)
    xstart, xweights = _taps(width, w, device)

    # Vertical pass: (..., H, W, C) -> (..., h, W, C), int32.
    rows = torch.zeros((*images.shape[:-3], h, width, images.shape[-1]), dtype=torch.int32, device=device)
    for k in range(yweights.shape[1]):
        weight = yweights[:, k].to(torch.int32).view(h, 1, 1)
        rows += weight * images.index_select(-3, ystart + k).to(torch.int32)
    # Horizontal pass: (..., h, W, C) -> (..., h, w, C), int64.
    sums = torch.zeros((*rows.shape[:-2], w, rows.shape[-1]), dtype=torch.int64, device=device)
    for k in range(xweights.shape[1]):
        sums += xweights[:, k].view(w, 1) * rows.index_select(-2, xstart + k)
    den = height * width
    return torch.div(sums + den // 2, den, rounding_mode="floor").to(torch.uint8)


if __name__ == "__main__":
    import numpy as np

    from hoi4_arena.screen import resample

    frame = np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    expected = resample.area_resample(frame, (256, 448))
    got = area_resample(torch.from_numpy(frame), (256, 448)).numpy()
    print(f"1920x1080 -> 448x256: torch CPU equals numpy: {bool((got == expected).all())}")
