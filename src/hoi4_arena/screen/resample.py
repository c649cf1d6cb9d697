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
accumulates the covered input rows into a uint16 row (int32 when the sums could exceed it; weights are
divided by the gcd of the sizes, the same rational with smaller sums), the horizontal pass reduces that
row in int32 and divides. Several grids (the global view and the quadrants) go through one call, which
reads any pixel layout (`channels` picks RGB out of a BGRA grab, no RGB copy) and splits the rows
between the caller and one helper thread on large frames. `bench/views.py` compares it to OpenCV.

Try: python -m hoi4_arena.screen.resample 1080x1920 256x448
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

# The largest denominator (input crop area) for which the float64 reciprocal rounding below is exact,
# and the largest input height for which the int32 vertical accumulator cannot overflow.
MAX_AREA = 1 << 40
MAX_ROWS = (1 << 31) // 256
# From this many input bytes on, a second thread takes half of the rows (bench/views.py: at 1080p and
# up it pays on two cores; a 960x540 frame's views are done in about a millisecond on one).
THREADED_BYTES = 4_000_000

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
def _area_rows(
    lo, hi, src, ystart, yweights, yplan, yden, yinverse, xindex, xweights, xden, xinverse, xtaps, xwidth,
    acc, num, out,
):  # fmt: skip
    # src (H, W*P) uint8, P bytes per pixel. Output row j in [lo, hi) sums the input rows
    # ystart[j] + k with yweights[j, k] into the row `acc` (uint16 when the sums fit, else int32:
    # narrow integer lanes are what makes this loop fast), then output value t of row j's grid
    # g = yplan[j] sums that row at xindex[g, k, t] (the pixel stride and the channel order are folded
    # into the index) with xweights[g, k, t] and divides. Weights are divided by the gcd of each
    # axis's sizes: the same rational, smaller sums.
    width = src.shape[1]
    for j in range(lo, hi):
        acc[:] = 0
        for k in range(yweights.shape[1]):
            weight = yweights[j, k]
            if weight == 0:
                continue
            row = src[ystart[j] + k]
            for t in range(width):
                acc[t] = acc[t] + weight * row[t]  # (not +=: this form keeps uint16 lanes)
        g = yplan[j]
        n = xwidth[g]
        num[:n] = 0
        for k in range(xtaps[g]):
            for t in range(n):
                num[t] = num[t] + xweights[g, k, t] * acc[xindex[g, k, t]]
        ydenf = yden[j]
        yinv = yinverse[j]
        for t in range(n):
            # floor((num + den // 2) / den), by a multiply: the quotient is at most 255.5 and a
            # fraction is at least 1 / den away from an integer, so adding half of 1 / den absorbs
            # the float64 rounding (a few ulps) without ever crossing an integer while den < 2**40.
            den = ydenf * xden[g, t]
            inverse = yinv * xinverse[g, t]
            value = (np.float64(num[t]) + np.floor(0.5 * den)) * inverse + 0.5 * inverse
            out[j, t] = np.uint8(np.int32(value))


Grid = tuple[tuple[Span, ...], tuple[Span, ...], tuple[int, int]]
"""(row spans, column spans, output size) of one grid of crops."""


@dataclass(frozen=True)
class GridPlan:
    """Everything `_area_rows` needs to resample grids of crops, precomputed once per geometry.

    Rows of every grid are stacked (grid after grid, tile row after tile row); `yplan` says which
    grid's horizontal plan a row uses. Horizontal plans are padded to the same taps and width.
    """

    ystart: np.ndarray  # (rows,) int64
    yweights: np.ndarray  # (rows, taps) uint16 or int32 (the accumulator's dtype)
    yplan: np.ndarray  # (rows,) int64
    yden: np.ndarray  # (rows,) float64
    yinverse: np.ndarray  # (rows,) float64
    xindex: np.ndarray  # (grids, taps, width) int32: byte of the row each tap of an output value reads
    xweights: np.ndarray  # (grids, taps, width) int32 or int64 (the numerator's dtype)
    xden: np.ndarray  # (grids, width) float64
    xinverse: np.ndarray  # (grids, width) float64
    xtaps: np.ndarray  # (grids,) int64: taps of each grid's horizontal plan
    xwidth: np.ndarray  # (grids,) int64: output values per row of each grid (n_cols * w * C)
    heights: tuple[int, ...]  # output rows of each grid (n_rows * h)


def _reduced(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, int]:
    plan = axis_plan(n_in, n_out)
    g = math.gcd(n_in, n_out)
    return plan.start, plan.weights // g, n_in // g


def _pad(arrays: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    return np.stack([np.pad(a, [(0, n - m) for n, m in zip(shape, a.shape, strict=True)]) for a in arrays])


@functools.lru_cache(maxsize=64)
def grid_plan(grids: tuple[Grid, ...], pixel: int, channels: tuple[int, ...]) -> GridPlan:
    """The plan for `area_resample_grids` (cached: a worker resamples the same geometry every frame).

    `pixel` is the input's bytes per pixel and `channels` the byte of a pixel each output channel
    reads (e.g. (2, 1, 0) for RGB out of BGRA).
    """
    ystart, yweights, yden, yplan, heights = [], [], [], [], []
    xplans = []
    for g, (row_spans, col_spans, (h, w)) in enumerate(grids):
        for s, n in row_spans:
            start, weights, den = _reduced(n, h)
            ystart.append(start + s)
            yweights.append(weights)
            yden.append(np.full(h, den))
            yplan.append(np.full(h, g))
        heights.append(len(row_spans) * h)
        index, weights, den = [], [], []
        for s, n in col_spans:
            start, cols, d = _reduced(n, w)
            # (taps, w, C): tap k of output column q, channel c reads byte (start[q] + k) * P + c.
            pixels = (start + s)[None, :] + np.arange(cols.shape[1])[:, None]
            index.append((pixels[:, :, None] * pixel + np.asarray(channels)).reshape(cols.shape[1], -1))
            weights.append(np.repeat(cols.T, len(channels), axis=1))
            den.append(np.full(w * len(channels), d))
        taps = max(a.shape[0] for a in index)
        index = np.concatenate([np.pad(a, ((0, taps - a.shape[0]), (0, 0))) for a in index], axis=1)
        weights = np.concatenate([np.pad(a, ((0, taps - a.shape[0]), (0, 0))) for a in weights], axis=1)
        xplans.append((index, weights, np.concatenate(den)))
    taps = max(index.shape[0] for index, _, _ in xplans)
    widest = max(index.shape[1] for index, _, _ in xplans)
    ytaps = max(a.shape[1] for a in yweights)
    yweights = np.concatenate([np.pad(a, ((0, 0), (0, ytaps - a.shape[1]))) for a in yweights])
    yden = np.concatenate(yden).astype(np.float64)
    xden = np.stack([np.pad(d, (0, widest - d.shape[0]), constant_values=1) for _, _, d in xplans])
    xden = xden.astype(np.float64)
    # uint16 rows while every vertical sum fits (1080p and 4K views do): twice the SIMD lanes of int32;
    # the numerator in int32 while 255.5 * den fits (every screen up to 4K), else int64.
    acc = np.uint16 if 255 * int(yweights.sum(axis=1).max()) <= 0xFFFF else np.int32
    num = np.int32 if 255.5 * float(yden.max()) * float(xden.max()) < 2**31 else np.int64
    arrays = (
        np.concatenate(ystart).astype(np.int64),
        yweights.astype(acc),
        np.concatenate(yplan).astype(np.int64),
        yden,
        1.0 / yden,
        _pad([index for index, _, _ in xplans], (taps, widest)).astype(np.int32),
        _pad([weights for _, weights, _ in xplans], (taps, widest)).astype(num),
        xden,
        1.0 / xden,
        np.array([index.shape[0] for index, _, _ in xplans], dtype=np.int64),
        np.array([index.shape[1] for index, _, _ in xplans], dtype=np.int64),
    )
    for array in arrays:
        array.setflags(write=False)
    return GridPlan(*arrays, heights=tuple(heights))


_POOL: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    # One helper thread per process (a forked child makes its own): the kernel releases the GIL, so
    # the caller's thread and this one resample halves of the rows at once. Plain threads rather than
    # numba's parallel=True: its OpenMP layer is not safe in processes forked after it started.
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="resample"))
    return _POOL[1]


def _run(src: np.ndarray, plan: GridPlan, out: np.ndarray, threads: int) -> None:
    def rows(lo: int, hi: int) -> None:
        acc = np.empty(src.shape[1], dtype=plan.yweights.dtype)
        num = np.empty(plan.xindex.shape[2], dtype=plan.xweights.dtype)
        _area_rows(
            lo, hi, src, plan.ystart, plan.yweights, plan.yplan, plan.yden, plan.yinverse,
            plan.xindex, plan.xweights, plan.xden, plan.xinverse, plan.xtaps, plan.xwidth,
            acc, num, out,
        )  # fmt: skip

    n = plan.ystart.shape[0]
    if threads < 2 or n < 2:
        rows(0, n)
        return
    middle = n // 2
    other = _pool().submit(rows, middle, n)
    rows(0, middle)
    other.result()


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


def _check_grid(image: np.ndarray, grid: Sequence) -> Grid:
    row_spans, col_spans, size = grid
    height, width = image.shape[:2]
    row_spans = check_spans(row_spans, height, "row")
    col_spans = check_spans(col_spans, width, "column")
    tallest = max(n for _, n in row_spans)
    if tallest > MAX_ROWS:
        raise ValueError(f"crops taller than {MAX_ROWS} rows could overflow the exact accumulator")
    if tallest * max(n for _, n in col_spans) >= MAX_AREA:
        raise ValueError(f"crops of {MAX_AREA} pixels or more are too large for exact rounding")
    return row_spans, col_spans, check_size(size)


def area_resample_grids(
    image: np.ndarray,
    grids: Sequence[tuple[Sequence[Span], Sequence[Span], Sequence[int]]],
    channels: Sequence[int] | None = None,
    threads: int | None = None,
) -> list[np.ndarray]:
    """Resample several grids of crops of one image in one call (the global view and the quadrants).

    Each grid is (row_spans, col_spans, (h, w)) as in `area_resample_grid`, and gives an
    (R, C, h, w, ch) uint8 array. `channels` picks and orders the image's channels: (2, 1, 0) turns a
    BGRA grab into RGB views with no RGB copy of the frame (default: all channels in order).
    `threads` (1 or 2) splits the rows between the caller and a helper thread; by default 2 when the
    image is large enough for that to pay (`THREADED_BYTES`).
    """
    image = _as_hwc(image)
    height, width, pixel = image.shape
    order = tuple(range(pixel)) if channels is None else tuple(int(c) for c in channels)
    if not order or any(not 0 <= c < pixel for c in order):
        raise ValueError(f"channels {order} must pick among the image's {pixel} channels")
    checked = tuple(_check_grid(image, grid) for grid in grids)
    if not checked:
        raise ValueError("need at least one grid")
    plan = grid_plan(checked, pixel, order)
    src = np.ascontiguousarray(image).reshape(height, width * pixel)
    out = np.empty((plan.ystart.shape[0], plan.xindex.shape[2]), dtype=np.uint8)
    if threads is None:
        threads = 2 if image.nbytes >= THREADED_BYTES else 1
    _run(src, plan, out, threads)
    results, row = [], 0
    for (row_spans, col_spans, (h, w)), n in zip(checked, plan.xwidth.tolist(), strict=True):
        block = out[row : row + len(row_spans) * h, :n]
        row += len(row_spans) * h
        # (R*h, C*w*ch) -> (R, C, h, w, ch)
        grid = block.reshape(len(row_spans), h, len(col_spans), w, len(order))
        results.append(np.ascontiguousarray(grid.transpose(0, 2, 1, 3, 4)))
    return results


def area_resample_grid(
    image: np.ndarray, row_spans: Sequence[Span], col_spans: Sequence[Span], size: Sequence[int]
) -> np.ndarray:
    """Resample every tile of a grid of crops to `size` in one pass over the image.

    Tile (r, c) is `image[y:y+hh, x:x+ww]` with `(y, hh) = row_spans[r]`, `(x, ww) = col_spans[c]`.
    Returns (len(row_spans), len(col_spans), h, w, C) uint8 (C = 1 for a 2-D image). The four
    quadrants of a frame are the 2x2 grid of its halves; the whole frame is the 1x1 grid.
    """
    return area_resample_grids(image, [(row_spans, col_spans, size)])[0]


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
