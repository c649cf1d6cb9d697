"""Benchmark: a preset map read from the disk cache (`maps/cache.py`) vs drawn again.

Every new process that plays or checks a game on a preset used to draw its map (`maps/generate.py`);
now the first process draws it and later ones read it back. In one process, with a cache folder of its
own, this draws each preset's map at one seed (the baseline: what a new process paid), then reads each
back as a new process would (the process's kept maps forgotten), checks that the two are the same map,
and prints the median time of each and the ratio drawn / read.

Try: python bench/map_cache.py --seeds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="map seeds of each preset")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-map-cache-") as folder:
        os.environ["HOI4_ARENA_CACHE"] = folder
        from hoi4_arena.maps import PRESETS, generate
        from hoi4_arena.maps.generate import _drawn, draw

        drawn, read = [], []
        for preset in PRESETS:
            for seed in range(args.seeds):
                start = time.perf_counter()
                fresh = draw(preset, seed)
                drawn.append(time.perf_counter() - start)
                generate(preset, seed)  # drawn once more and kept
                _drawn.cache_clear()  # as a new process
                start = time.perf_counter()
                kept = generate(preset, seed)
                read.append(time.perf_counter() - start)
                assert kept.to_json() == fresh.to_json() and np.array_equal(kept.raster, fresh.raster)
    drawn_s, read_s = statistics.median(drawn), statistics.median(read)
    result = {
        "maps": len(drawn),
        "drawn_s": round(drawn_s, 3),
        "read_s": round(read_s, 3),
        "ratio": round(drawn_s / read_s, 1),
        "load": round(os.getloadavg()[0], 2),
    }
    print(f"a map drawn {drawn_s:.3f} s, read from the cache {read_s:.3f} s: {result['ratio']}x")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
