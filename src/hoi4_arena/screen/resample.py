"""The exact area average that turns a captured frame into the policy's views (numpy, capture side).

Each output pixel is the coverage-weighted mean of the input pixels it covers. Along one axis of n_in
input and n_out output pixels, both are laid on a common grid of n_in * n_out units: input pixel i spans
[i * n_out, (i + 1) * n_out) and output pixel j spans [j * n_in, (j + 1) * n_in). Every overlap is an
integer, so the weighted sum of a 2-D output pixel is an integer numerator over the integer denominator
n_in_y * n_in_x (the output's area in common units). It is rounded half up once, at the end, to uint8.
Any sizes work, up- and downscaling, not only integer ratios.

Because nothing here is floating point until the final integer division, `resample_torch.py` (training
side, CPU and CUDA) produces the same bytes; the golden vectors in tests/golden/ pin both.

Speed: the two passes are fused in one compiled loop per output row (numba): the vertical pass
accumulates the covered input rows into an int32 row buffer, the horizontal pass reduces that buffer to
the output row and divides. The input is read once; `bench/views.py` compares it to OpenCV's INTER_AREA.

Try: python -m hoi4_arena.screen.resample 1080x1920 256x448
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

# The largest denominator (input crop area) for which the float64 reciprocal rounding below is exact,
# and the largest input height for which the int32 vertical accumulator cannot overflow.
MAX_AREA = 1 << 40
MAX_ROWS = (1 << 31) // 256

Span = tuple[int, int]
"""(start, length) of a crop along one axis, in input pixels."""


@dataclass(frozen=True)
class AxisPlan:
    """How one axis of n_in input pixels maps to n_out output pixels.

    Output pixel j is `sum(weights[j, k] * input[start[j] + k] for k in range(taps))` over the
    denominator `den[j]`; weights are the overlaps on the common grid and sum to `den[j]`. Taps are
    contiguous and always inside the input (a window near the end is shifted left and its leading
    weights are zero), so a compiled loop can read them without bounds checks.
    """

    start: np.ndarray  # (n_out,) int64
    weights: np.ndarray  # (n_out, taps) int64
    den: np.ndarray  # (n_out,) int64

    @property
    def n_out(self) -> int:
        return int(self.start.shape[0])

    @property
    def taps(self) -> int:
        return int(self.weights.shape[1])

    def shifted(self, offset: int) -> AxisPlan:
        """The same plan reading from `offset` input pixels further on (a crop inside a larger frame)."""
        return AxisPlan(self.start + offset, self.weights, self.den)

    @staticmethod
    def concat(plans: Sequence[AxisPlan]) -> AxisPlan:
        """Several plans side by side (e.g. the left and right quadrants), padded to the same taps."""
        taps = max(plan.taps for plan in plans)
        weights = [np.pad(p.weights, ((0, 0), (0, taps - p.taps))) for p in plans]
        return AxisPlan(
            np.concatenate([p.start for p in plans]),
            np.concatenate(weights),
            np.concatenate([p.den for p in plans]),
        )


@functools.lru_cache(maxsize=256)
def axis_plan(n_in: int, n_out: int) -> AxisPlan:
    """The coverage weights of `n_in` input pixels over `n_out` output pixels (cached, read-only)."""
    if n_in < 1 or n_out < 1:
        raise ValueError(f"axis sizes must be positive, got {n_in} -> {n_out}")
    j = np.arange(n_out, dtype=np.int64)
    lo = j * n_in  # output pixel j spans [lo, hi) on the common grid
    hi = lo + n_in
    first = lo // n_out
    last = (hi - 1) // n_out
    taps = int((last - first).max()) + 1
    start = np.minimum(first, n_in - taps)
    inputs = start[:, None] + np.arange(taps)
    overlap = np.minimum(hi[:, None], (inputs + 1) * n_out) - np.maximum(lo[:, None], inputs * n_out)
    weights = np.maximum(overlap, 0)
    assert (weights.sum(axis=1) == n_in).all()
    for array in (start, weights):
        array.setflags(write=False)
    den = np.full(n_out, n_in, dtype=np.int64)
    den.setflags(write=False)
    return AxisPlan(start, weights, den)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _area_rows(src, ystart, yweights, yden, xindex, xweights, xden, xinverse, out):
    # src (H, W*C) uint8. Output row j (of out's (n_rows, n)) sums the input rows ystart[j] + k with
    # yweights[j, k] into an int32 row, then output value t sums that row at xindex[k, t] with
    # xweights[k, t] (float64, per value: the channel is folded into the index) and divides.
    width = src.shape[1]
    n = xindex.shape[1]
    acc = np.empty(width, np.int32)
    accf = np.empty(width, np.float64)
    num = np.empty(n, np.float64)
    for j in range(ystart.shape[0]):
        acc[:] = 0
        for k in range(yweights.shape[1]):
            weight = np.int32(yweights[j, k])
            if weight == 0:
                continue
            row = src[ystart[j] + k]
            for t in range(width):
                acc[t] += weight * np.int32(row[t])
        # From here on float64 is exact: every partial sum is an integer below 255 * den < 2**48.
        for t in range(width):
            accf[t] = acc[t]
        num[:] = 0.0
        for k in range(xindex.shape[0]):
            for t in range(n):
                num[t] += xweights[k, t] * accf[xindex[k, t]]
        ydenf = np.float64(yden[j])
        yinverse = 1.0 / ydenf
        for t in range(n):
            # floor((num + den // 2) / den), by a multiply: the quotient is at most 255.5 and a
            # fraction is at least 1 / den away from an integer, so adding half of 1 / den absorbs
            # the float64 rounding (a few ulps) without ever crossing an integer while den < 2**40.
            den = ydenf * xden[t]
            inverse = yinverse * xinverse[t]
            value = (num[t] + np.floor(0.5 * den)) * inverse + 0.5 * inverse
            out[j, t] = np.uint8(np.int32(value))


@dataclass(frozen=True)
class GridPlan:
    """Everything `_area_rows` needs to resample a grid of crops, precomputed once per geometry."""

    rows: AxisPlan
    xindex: np.ndarray  # (taps, n_cols * C) int32: where each output value's taps read the row
    xweights: np.ndarray  # (taps, n_cols * C) float64
    xden: np.ndarray  # (n_cols * C,) float64
    xinverse: np.ndarray  # (n_cols * C,) float64


@functools.lru_cache(maxsize=64)
def grid_plan(
    row_spans: tuple[Span, ...], col_spans: tuple[Span, ...], size: tuple[int, int], channels: int
) -> GridPlan:
    """The plan for `area_resample_grid` (cached: a worker resamples the same geometry every frame)."""
    h, w = size
    rows = AxisPlan.concat([axis_plan(n, h).shifted(s) for s, n in row_spans])
    cols = AxisPlan.concat([axis_plan(n, w).shifted(s) for s, n in col_spans])
    # (taps, n_cols, C): tap k of output column q, channel c reads byte (start[q] + k) * C + c.
    pixel = cols.start[None, :] + np.arange(cols.taps)[:, None]
    xindex = (pixel[:, :, None] * channels + np.arange(channels)).reshape(cols.taps, -1)
    xweights = np.repeat(cols.weights.T, channels, axis=1).astype(np.float64)
    xden = np.repeat(cols.den, channels).astype(np.float64)
    arrays = (xindex.astype(np.int32), xweights, xden, 1.0 / xden)
    for array in arrays:
        array.setflags(write=False)
    return GridPlan(rows, *arrays)


def _as_hwc(image: np.ndarray) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"area_resample takes uint8 images, got {image.dtype}")
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3:
        raise ValueError(f"expected an (H, W) or (H, W, C) image, got shape {image.shape}")
    if min(image.shape) < 1:
        raise ValueError(f"cannot resample an empty image of shape {image.shape}")
    return image


def check_size(size: Sequence[int]) -> tuple[int, int]:
    """`size` as a validated (height, width) pair of positive ints."""
    try:
        h, w = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ValueError(f"size must be (height, width), got {size!r}") from None
    if h < 1 or w < 1:
        raise ValueError(f"output size must be positive, got {h}x{w}")
    return h, w


def check_spans(spans: Sequence[Span], limit: int, name: str) -> tuple[Span, ...]:
    """Crop spans as a tuple of (start, length) inside `limit` pixels, or ValueError."""
    if not spans:
        raise ValueError(f"need at least one {name} span")
    checked = []
    for start, length in spans:
        start, length = int(start), int(length)
        if length < 1 or start < 0 or start + length > limit:
            raise ValueError(f"{name} span ({start}, {length}) is outside the image's {limit} pixels")
        checked.append((start, length))
    return tuple(checked)


def area_resample_grid(
    image: np.ndarray, row_spans: Sequence[Span], col_spans: Sequence[Span], size: Sequence[int]
) -> np.ndarray:
    """Resample every tile of a grid of crops to `size` in one pass over the image.

    Tile (r, c) is `image[y:y+hh, x:x+ww]` with `(y, hh) = row_spans[r]`, `(x, ww) = col_spans[c]`.
    Returns (len(row_spans), len(col_spans), h, w, C) uint8 (C = 1 for a 2-D image). The four
    quadrants of a frame are the 2x2 grid of its halves; the whole frame is the 1x1 grid.
    """
    image = _as_hwc(image)
    h, w = check_size(size)
    height, width, channels = image.shape
    row_spans = check_spans(row_spans, height, "row")
    col_spans = check_spans(col_spans, width, "column")
    tallest = max(n for _, n in row_spans)
    if tallest > MAX_ROWS:
        raise ValueError(f"crops taller than {MAX_ROWS} rows could overflow the exact accumulator")
    if tallest * max(n for _, n in col_spans) >= MAX_AREA:
        raise ValueError(f"crops of {MAX_AREA} pixels or more are too large for exact rounding")

    plan = grid_plan(row_spans, col_spans, (h, w), channels)
    src = np.ascontiguousarray(image).reshape(height, width * channels)
    out = np.empty((plan.rows.n_out, plan.xindex.shape[1]), dtype=np.uint8)
    rows = plan.rows
    _area_rows(
        src, rows.start, rows.weights, rows.den, plan.xindex, plan.xweights, plan.xden, plan.xinverse, out
    )
    # (R*h, C*w*ch) -> (R, C, h, w, ch)
    grid = out.reshape(len(row_spans), h, len(col_spans), w, channels)
    return np.ascontiguousarray(grid.transpose(0, 2, 1, 3, 4))


def area_resample(image: np.ndarray, size: Sequence[int]) -> np.ndarray:
    """Resample `image` ((H, W) or (H, W, C) uint8) to `size` (h, w) by the exact area average.

    Returns uint8 of shape (h, w) or (h, w, C). Works for any sizes, up- or downscaling.
    """
    hwc = _as_hwc(image)
    out = area_resample_grid(hwc, [(0, hwc.shape[0])], [(0, hwc.shape[1])], size)[0, 0]
    return out[:, :, 0] if image.ndim == 2 else out


def _main() -> None:
    import argparse
    import hashlib
    import time

    def parse(text: str) -> tuple[int, int]:
        h, _, w = text.partition("x")
        return int(h), int(w)

    parser = argparse.ArgumentParser(description="Resample a seeded random frame and time it.")
    parser.add_argument("input", type=parse, help="input size HxW, e.g. 1080x1920")
    parser.add_argument("output", type=parse, help="output size hxw, e.g. 256x448")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    frame = np.random.default_rng(args.seed).integers(0, 256, (*args.input, 3), dtype=np.uint8)
    area_resample(frame, args.output)  # compile (or load the cached kernel)
    times = []
    for _ in range(20):
        begin = time.perf_counter()
        out = area_resample(frame, args.output)
        times.append(time.perf_counter() - begin)
    print(f"{args.input} -> {out.shape}: {1e3 * float(np.median(times)):.2f} ms median of 20")
    print(f"sha256 {hashlib.sha256(out.tobytes()).hexdigest()}")


if __name__ == "__main__":
    _main()
