"""Benchmark: a map's geometry from its raster (`maps/model.py`'s `raster_geometry`) vs the per-pixel way.

Every map read from the disk cache and every map drawn derives its provinces' areas, centroids, border
lengths, neighbours and coasts from the 2048x1024 raster. `raster_geometry` counts each id's pixels per
row and per column (two counts over the raster) and compares borders in the raster's own dtype. The
baseline is how it was done before: the raster widened to int64, every pixel's x and y made, and the
centroid sums weighted pixel by pixel. In one process this runs both on every preset's map at the
given seeds, alternately, checks they give the same geometry bit for bit, and prints the median CPU time
of each and the ratio.

Try: python bench/map_geometry.py --seeds 2 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from hoi4_arena.maps import PRESETS, generate
from hoi4_arena.maps.model import raster_geometry


def per_pixel(raster: np.ndarray, n: int) -> dict[str, Any]:
    """The baseline: the geometry as it was computed before, each pixel's coordinates made and weighed."""
    r = raster.astype(np.int64)
    h, w = r.shape
    pairs: dict[int, int] = {}
    coastal = np.zeros(n + 1, dtype=bool)
    for a, b in ((r[:, :-1], r[:, 1:]), (r[:-1, :], r[1:, :])):
        m = a != b
        aa, bb = a[m], b[m]
        land = (aa > 0) & (bb > 0)
        key = np.minimum(aa[land], bb[land]) * 65536 + np.maximum(aa[land], bb[land])
        uk, counts = np.unique(key, return_counts=True)
        for k, c in zip(uk.tolist(), counts.tolist(), strict=True):
            pairs[k] = pairs.get(k, 0) + c
        shore = np.maximum(aa[~land], bb[~land])
        coastal[np.unique(shore[shore <= n])] = True
    coastal[0] = False
    flat = r.ravel()
    area = np.bincount(flat, minlength=n + 1)[: n + 1]
    ys, xs = np.divmod(np.arange(h * w), w)
    sx = np.bincount(flat, weights=xs + 0.5, minlength=n + 1)[: n + 1]
    sy = np.bincount(flat, weights=ys + 0.5, minlength=n + 1)[: n + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        cx, cy = sx / np.maximum(area, 1), sy / np.maximum(area, 1)
    adjacency: dict[int, set[int]] = {i: set() for i in range(1, n + 1)}
    lengths: dict[frozenset[int], int] = {}
    for k, c in pairs.items():
        a, b = divmod(k, 65536)
        if a <= n and b <= n:
            adjacency[a].add(b)
            adjacency[b].add(a)
            lengths[frozenset((a, b))] = c
    return {
        "adjacency": {k: frozenset(v) for k, v in adjacency.items()},
        "lengths": lengths,
        "area": area,
        "centroid": (cx, cy),
        "coastal": coastal,
    }


def same(x: Any, y: Any) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, tuple):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, np.ndarray):
        return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
    return x == y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="map seeds of each preset")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each map each way")
    args = parser.parse_args()
    maps = [generate(preset, seed) for preset in PRESETS for seed in range(args.seeds)]
    ours, theirs = [], []
    for arena in maps:
        n = len(arena.provinces)
        for _ in range(args.rounds):
            start = time.process_time()
            found = raster_geometry(arena.raster, n)
            ours.append(time.process_time() - start)
            start = time.process_time()
            before = per_pixel(arena.raster, n)
            theirs.append(time.process_time() - start)
            assert same(found, before), f"{arena.preset}:{arena.seed}: the geometries differ"
    ours_s, base_s = statistics.median(ours), statistics.median(theirs)
    print(
        json.dumps(
            {
                "maps": len(maps),
                "rounds": args.rounds,
                "raster": list(maps[0].raster.shape),
                "counted_ms": round(ours_s * 1000, 1),
                "per_pixel_ms": round(base_s * 1000, 1),
                "ratio": round(base_s / ours_s, 2),
                "same_geometry": True,
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
