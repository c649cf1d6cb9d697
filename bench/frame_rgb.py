"""Benchmark: a simulator frame's pixels to an RGB array (`sim/render.py`'s `surface_rgb`) vs pygame's bytes.

Every headless frame the simulator draws (`Renderer.rgb`: each capture of a headless game, each recorded
frame) turns the scene's 32-bit surface into an (H, W, 3) uint8 array. The baseline is what it did
before: `pygame.image.tobytes(surface, "RGB")` and a numpy view of those bytes. In one process this
times both on a drawn game screen, alternately, checks they give the same array, and prints the median
CPU time of each and the ratio.

Try: python bench/frame_rgb.py --rounds 200 --size 1080x1920
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="timed conversions each way")
    parser.add_argument("--size", default="540x960", help="the screen, HEIGHTxWIDTH")
    args = parser.parse_args()
    import numpy as np

    from hoi4_arena.sim.headless import SimGame
    from hoi4_arena.sim.render import pygame, surface_rgb

    size = tuple(int(v) for v in args.size.split("x"))
    with SimGame("plains:1", seed=0, size=size) as game:
        game.frame()
        surface = game.renderer.scene(game.ui)

    def baseline() -> np.ndarray:
        return np.frombuffer(pygame.image.tobytes(surface, "RGB"), dtype=np.uint8).reshape(
            size[0], size[1], 3
        )

    ours, theirs = [], []
    for _ in range(args.rounds):
        began = time.process_time()
        a = surface_rgb(surface)
        middle = time.process_time()
        b = baseline()
        ours.append(middle - began)
        theirs.append(time.process_time() - middle)
        assert np.array_equal(a, b), "surface_rgb and pygame's bytes differ"
    ours_ms, base_ms = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
    print(
        json.dumps(
            {
                "size": list(size),
                "rounds": args.rounds,
                "surface_rgb_ms": round(ours_ms, 3),
                "tobytes_ms": round(base_ms, 3),
                "speedup": round(base_ms / ours_ms, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
