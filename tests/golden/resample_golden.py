"""Golden vectors for the exact area average and the views, computed by an independent reference.

The reference here does not use `hoi4_arena.screen.resample`: it builds each axis's coverage matrix
from exact interval overlaps (Python integers on the common grid), multiplies dense matrices in float64
(exact: every partial sum is an integer below 2**53), and rounds half up with integer division. Inputs
are made by `golden_frame`, an integer hash of the pixel index, so they do not depend on any random
number generator's version.

Regenerate (only when the definition of the views changes on purpose, never to make a test pass):

    .venv/bin/python tests/golden/resample_golden.py --write

Check the file against the reference without writing: `.venv/bin/python tests/golden/resample_golden.py`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).with_name("resample.json")

# (name, input (H, W, C), kind of input, output (h, w)); small ones store their full output.
CASES = [
    ("half_rounds_up", (1, 2, 1), "ramp", (1, 1)),
    ("half_rounds_up_255", (1, 2, 1), "top", (1, 1)),
    ("thirds", (3, 1, 1), "ramp", (1, 1)),
    ("downscale_3x5_to_2x2", (3, 5, 1), "hash", (2, 2)),
    ("downscale_7x11_to_3x4", (7, 11, 3), "hash", (3, 4)),
    ("upscale_5x4_to_9x7", (5, 4, 3), "hash", (9, 7)),
    ("upscale_1x1_to_2x3", (1, 1, 3), "hash", (2, 3)),
    ("identity_13x17", (13, 17, 3), "hash", (13, 17)),
    ("mixed_16x9_to_5x12", (16, 9, 3), "hash", (5, 12)),
    ("rgba_10x6_to_4x4", (10, 6, 4), "hash", (4, 4)),
    ("checker_halves_8x8_to_3x3", (8, 8, 3), "checker", (3, 3)),
    ("hd_to_global", (1080, 1920, 3), "hash", (256, 448)),
    ("hd_quadrant_to_quadrant", (540, 960, 3), "hash", (320, 576)),
    ("qhd_to_global", (1440, 2560, 3), "hash", (256, 448)),
    ("hd_to_cpu_global", (1080, 1920, 3), "checker", (72, 128)),
]
STORE_FULL_BELOW = 64 * 64  # outputs with fewer values are stored in full, larger ones as sha256
VIEW_CASES = [
    # (name, layout, pointer (x, y)): views of the 1920x1080 hash frame.
    ("full_centre", "full", (1000, 500)),
    ("full_corner_clamped", "full", (3, 1075)),
    ("cpu_centre", "cpu", (960, 540)),
]


def golden_frame(shape: tuple[int, ...], kind: str = "hash", seed: int = 0) -> np.ndarray:
    """A deterministic uint8 image of `shape` (H, W, C) from an integer formula of the pixel index.

    The flat index (y * W + x) * C + ch is one arange, and the hash runs in place on it in uint32, whose
    wrap-around is the formula's 32-bit mask: a 4K frame costs one array, not three index grids."""
    h, w, c = shape
    if kind == "hash":
        # A multiplicative hash of the flat index with an xorshift finish, modulo 2**32.
        v = np.arange(h * w * c, dtype=np.uint32).reshape(h, w, c)
        v += np.uint32(seed % 2**32)
        v *= np.uint32(2654435761)
        v ^= v >> np.uint32(15)
        v *= np.uint32(2246822519)
        v ^= v >> np.uint32(13)
        v >>= np.uint32(24)
        return v.astype(np.uint8)
    if kind == "ramp":
        return np.arange(h * w * c, dtype=np.int64).reshape(h, w, c).astype(np.uint8)
    y, x, ch = np.ogrid[:h, :w, :c]
    if kind == "top":
        return np.broadcast_to(254 + (x + y) % 2, shape).astype(np.uint8)
    if kind == "checker":
        # 0/255 checks with 1-pixel odd values, so many averages land exactly on a half.
        return np.where((x + y) % 2 == 0, 255, (x * 7 + y * 3 + ch) % 2).astype(np.uint8)
    raise ValueError(f"unknown golden input kind {kind!r}")


def coverage_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) overlaps on the common grid: input i is [i*n_out, (i+1)*n_out), output j is
    [j*n_in, (j+1)*n_in); computed pixel pair by pixel pair with Python integers."""
    matrix = np.zeros((n_out, n_in), dtype=np.float64)
    for j in range(n_out):
        lo, hi = j * n_in, (j + 1) * n_in
        for i in range(lo // n_out, min(n_in, (hi + n_out - 1) // n_out)):
            overlap = min(hi, (i + 1) * n_out) - max(lo, i * n_out)
            if overlap > 0:
                matrix[j, i] = overlap
    return matrix


def reference_resample(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The exact area average by dense matrices: slow and independent of the project's code."""
    h, w = size
    height, width, channels = image.shape
    ay, ax = coverage_matrix(height, h), coverage_matrix(width, w)
    assert height * width * 255 * max(h, w) < 2**53
    out = np.empty((h, w, channels), dtype=np.uint8)
    den = height * width
    for c in range(channels):
        num = (ay @ image[:, :, c].astype(np.float64)) @ ax.T
        exact = num.astype(np.int64)
        assert (exact == num).all()
        out[:, :, c] = (exact + den // 2) // den
    return out


def reference_views(frame: np.ndarray, layout: str, pointer: tuple[int, int]) -> dict[str, np.ndarray]:
    sizes = {"full": ((256, 448), (320, 576), 224), "cpu": ((72, 128), (90, 160), 64)}
    global_size, quadrant_size, fovea = sizes[layout]
    h, w = frame.shape[:2]
    quarters = [
        frame[:h // 2, :w // 2], frame[:h // 2, w // 2:], frame[h // 2:, :w // 2], frame[h // 2:, w // 2:]
    ]  # fmt: skip
    x0 = min(max(pointer[0] - fovea // 2, 0), w - fovea)
    y0 = min(max(pointer[1] - fovea // 2, 0), h - fovea)
    return {
        "global": reference_resample(frame, global_size),
        "quadrants": np.stack([reference_resample(q, quadrant_size) for q in quarters]),
        "fovea": frame[y0 : y0 + fovea, x0 : x0 + fovea],
    }


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def build() -> dict:
    cases = []
    for name, shape, kind, size in CASES:
        out = reference_resample(golden_frame(shape, kind), size)
        case = {"name": name, "input": {"shape": list(shape), "kind": kind}, "size": list(size)}
        case["sha256"] = sha256(out)
        if out.size < STORE_FULL_BELOW:
            case["output"] = out.tolist()
        else:
            case["samples"] = [
                [y, x, c, int(out[y, x, c])] for y, x, c in ((0, 0, 0), (size[0] - 1, size[1] - 1, 2))
            ]
        cases.append(case)
        print(f"{name}: {shape} -> {size}", file=sys.stderr)
    frame = golden_frame((1080, 1920, 3), "hash")
    views = []
    for name, layout, pointer in VIEW_CASES:
        computed = reference_views(frame, layout, pointer)
        views.append(
            {
                "name": name,
                "layout": layout,
                "input": {"shape": [1080, 1920, 3], "kind": "hash"},
                "pointer": list(pointer),
                "sha256": {view: sha256(array) for view, array in computed.items()},
                "shapes": {view: list(array.shape) for view, array in computed.items()},
            }
        )
        print(f"views {name}", file=sys.stderr)
    return {
        "about": "exact integer area average, rounded half up once; see tests/golden/resample_golden.py",
        "regenerate": ".venv/bin/python tests/golden/resample_golden.py --write",
        "cases": cases,
        "views": views,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {GOLDEN.name} (else only compare)")
    args = parser.parse_args()
    golden = build()
    if args.write:
        GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
        print(f"wrote {GOLDEN}")
    elif json.loads(GOLDEN.read_text()) != golden:
        sys.exit(f"{GOLDEN} differs from the reference")
    else:
        print(f"{GOLDEN} matches the reference")


if __name__ == "__main__":
    main()
