"""The exact area average in torch (training side, CPU and CUDA), byte-identical to `resample.py`.

Same definition: coverage weights on the common grid of input and output (`resample.axis_plan`, shared
by both implementations), integer sums, one round-half-up division at the end. The arithmetic is int32
when every sum fits (255.5 * H * W < 2**31: any screen up to 3840x2160) and int64 beyond, so the result
does not depend on the device, the batch or the order of summation.

Layout: channels last, `(..., H, W, C)` uint8 -> `(..., h, w, C)` uint8, any number of leading batch
dimensions (the frames of a clip, a batch of clips). Decoded video and captured frames are channels
last; a model that wants (C, H, W) permutes after resampling.

Try: python -m hoi4_arena.screen.resample_torch   (compares against the numpy path on a random frame)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hoi4_arena.screen.resample import MAX_AREA, MAX_ROWS, axis_plan, check_size

# Beyond this many taps per output (a downscale by more than ~15x) one prefix sum beats the tap loop.
MAX_TAPS = 16


def _axis_pass(values: torch.Tensor, dim: int, n_out: int, dtype: torch.dtype) -> torch.Tensor:
    """Numerators of `n_out` outputs along `dim` (denominator: the input length), as `dtype` or int64."""
    n_in = values.shape[dim]
    plan = axis_plan(n_in, n_out)
    device = values.device
    shape = [1] * values.ndim
    shape[dim] = n_out
    if plan.taps <= MAX_TAPS:
        start = torch.from_numpy(plan.start.copy()).to(device)
        weights = torch.from_numpy(plan.weights.copy()).to(device=device, dtype=dtype)
        total = None
        for k in range(plan.taps):
            term = values.index_select(dim, start + k).to(dtype)
            term.mul_(weights[:, k].view(shape))
            total = term if total is None else total.add_(term)
        return total
    # Prefix sums on the common grid: S(t) = n_out * P[t // n_out] + (t % n_out) * x[t // n_out] is the
    # integral up to t, and output j is S((j + 1) * n_in) - S(j * n_in). int64 throughout.
    padding = [0, 0] * (values.ndim - 1 - dim % values.ndim) + [1, 0]
    prefix = torch.nn.functional.pad(values.to(torch.int64).cumsum(dim), padding)  # P, one longer
    ends = torch.arange(n_out + 1, device=device, dtype=torch.int64) * n_in
    whole, part = ends // n_out, ends % n_out
    padded = torch.nn.functional.pad(
        values.to(torch.int64), [0, 0] * (values.ndim - 1 - dim % values.ndim) + [0, 1]
    )
    shape[dim] = n_out + 1
    integral = n_out * prefix.index_select(dim, whole) + part.view(shape) * padded.index_select(dim, whole)
    return integral.narrow(dim, 1, n_out) - integral.narrow(dim, 0, n_out)


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

    den = height * width
    # int32 holds every sum when 255.5 * den fits (any screen up to 3840x2160 and a bit more).
    wide = torch.int32 if 255 * den + den // 2 < 2**31 else torch.int64
    # Vertical pass, whole rows at a time: (..., H, W, C) -> (..., h, W, C).
    rows = _axis_pass(images, images.ndim - 3, h, wide)
    # Horizontal pass with the columns last, so each tap gathers single values along a contiguous
    # axis: (..., h, W, C) -> (..., h, C, W) -> (..., h, C, w).
    columns = rows.transpose(-1, -2).contiguous()
    sums = _axis_pass(columns, columns.ndim - 1, w, wide)
    sums.add_(den // 2)
    out = torch.div(sums, den, rounding_mode="floor").to(torch.uint8)
    return out.transpose(-1, -2).contiguous()


if __name__ == "__main__":
    import numpy as np

    from hoi4_arena.screen import resample

    frame = np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    expected = resample.area_resample(frame, (256, 448))
    got = area_resample(torch.from_numpy(frame), (256, 448)).numpy()
    print(f"1920x1080 -> 448x256: torch CPU equals numpy: {bool((got == expected).all())}")
