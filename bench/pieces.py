"""Benchmark: the pieces of an id raster (`maps/pieces.py`) vs the union-find in Python it replaced.

The arena's invariants count each province's pieces when a map is drawn or loaded, and the HOI4 mod's
export and audit label water and river pieces. Both used to join the raster's runs with a union-find
looping in Python over every link and every run; `maps.pieces` joins them in numpy. In one process this
times both on every preset's map (its province ids, then a water-like mask of it), checks they give the
same labels, and prints the median CPU time of each and the ratio.

Try: python bench/pieces.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def union_find_labels(raster: np.ndarray) -> np.ndarray:
    """The baseline: runs linked row to row, joined by a union-find in Python (labels as maps.pieces gives)."""
    r = raster.astype(np.int64)
    h, w = r.shape
    starts = np.ones((h, w), dtype=bool)
    starts[:, 1:] = r[:, 1:] != r[:, :-1]
    run_id = starts.ravel().astype(np.int64).cumsum().reshape(h, w) - 1
    n_runs = int(run_id[-1, -1]) + 1
    same = (r[:-1, :] == r[1:, :]) & (starts[:-1, :] | starts[1:, :])
    links = np.unique(run_id[:-1, :][same] * n_runs + run_id[1:, :][same])
    parent = list(range(n_runs))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for link in links.tolist():
        x, y = find(link // n_runs), find(link % n_runs)
        if x != y:
            parent[max(x, y)] = min(x, y)
    roots = np.fromiter((find(i) for i in range(n_runs)), dtype=np.int64, count=n_runs)
    _, compact = np.unique(roots, return_inverse=True)
    return compact[run_id]


def cpu_seconds(function, raster: np.ndarray) -> tuple[float, np.ndarray]:
    start = time.process_time()
    labels = function(raster)
    return time.process_time() - start, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds over every raster")
    parser.add_argument("--seed", type=int, default=1, help="map seed of each preset")
    args = parser.parse_args()
    from hoi4_arena.maps import PRESETS, generate
    from hoi4_arena.maps.pieces import label_pieces

    rasters = []
    for preset in PRESETS:
        ids = generate(preset, args.seed).raster
        rasters += [ids, (ids % 7 == 0).astype(np.uint8)]  # provinces, and a mask of many small pieces
    ours, baseline = [], []
    for _ in range(args.rounds):
        for raster in rasters:
            t_ours, labels = cpu_seconds(label_pieces, raster)
            t_base, expected = cpu_seconds(union_find_labels, raster)
            assert np.array_equal(labels, expected), "maps.pieces and the union-find disagree"
            ours.append(t_ours)
            baseline.append(t_base)
    ours_ms, base_ms = statistics.median(ours) * 1e3, statistics.median(baseline) * 1e3
    print(
        json.dumps(
            {
                "rasters": len(rasters),
                "shape": list(rasters[0].shape),
                "rounds": args.rounds,
                "pieces_ms": round(ours_ms, 2),
                "union_find_ms": round(base_ms, 2),
                "ratio": round(base_ms / ours_ms, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
