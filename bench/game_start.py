"""Benchmark: a game's start on a map whose first view was drawn before, vs drawing that view again.

Every headless game (record-ai, play-policy, rollouts, evaluation) starts a `SimGame` and draws its first
frame, and every game of a run on one map starts from the same camera view. The map keeps the static
layers of its last views (`sim/render_map.py`'s `MapGeometry.views`), so only the first game draws
them. In one process this times a game's start (the game, its first frame) both ways, alternately:
with the map's kept views (the project), and with the views dropped before each start (the baseline,
what every start cost before). It checks the first frames are equal and prints the median CPU time of
each and the ratio.

Try: python bench/game_start.py --games 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20, help="timed starts each way")
    parser.add_argument("--arena", default="plains:1", help="the map (preset:seed)")
    parser.add_argument("--size", default="540x960", help="the screen, HEIGHTxWIDTH")
    args = parser.parse_args()
    import numpy as np

    from hoi4_arena.sim.headless import SimGame

    size = tuple(int(v) for v in args.size.split("x"))

    def start(drop_views: bool) -> tuple[float, np.ndarray]:
        began = time.process_time()
        with SimGame(args.arena, seed=0, size=size) as game:
            if drop_views:
                game.geo.views.clear()
            frame = game.frame()
            return time.process_time() - began, frame

    _, reference = start(drop_views=False)  # draws the map and its first view once
    kept, drawn = [], []
    for _ in range(args.games):
        t_kept, frame = start(drop_views=False)
        assert np.array_equal(frame, reference), "a kept view drew a different first frame"
        t_drawn, frame = start(drop_views=True)
        assert np.array_equal(frame, reference), "a drawn view drew a different first frame"
        kept.append(t_kept)
        drawn.append(t_drawn)
    kept_ms, drawn_ms = statistics.median(kept) * 1e3, statistics.median(drawn) * 1e3
    print(
        json.dumps(
            {
                "arena": args.arena,
                "size": list(size),
                "games": args.games,
                "start_ms_kept_view": round(kept_ms, 1),
                "start_ms_view_drawn": round(drawn_ms, 1),
                "speedup": round(drawn_ms / kept_ms, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
