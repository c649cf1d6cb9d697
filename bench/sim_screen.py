"""Headless decisions per second of the simulator's screen, against redrawing everything every frame.

A decision is what a policy's 200 ms costs the headless game: one pointer move fed, `advance(200)` at
speed 5 (the world steps about five game hours, the game's AI deciding for both sides each day), and a
full frame out with the pointer drawn. The same game (river map, seed 1, AI vs AI, BLU declares) runs
twice in this process at each size: with the renderer's caches, and as the naive baseline
`SimGame(cache=False)`, which rebuilds every map layer and renders every text from scratch on every
frame. Both must produce the same frames, byte for byte (checked on every decision; a mismatch makes
the bench invalid). Times are process CPU time on one core; map generation and the first frame (font
loading, map geometry) are not timed.

The cached run also computes each frame's views (`compute_views`, the sim worker's capture) for the
cpu and the full layout, one thread (`threads=1`: a core's worth), and prints a last table: headless
decisions per second per core with the world, the frame and the views included.

Try: python bench/sim_screen.py --decisions 300
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import numpy as np

from hoi4_arena.maps import generate
from hoi4_arena.screen import resample
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.views import compute_views
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent

SIZES = ((1080, 1920), (540, 960))


LAYOUTS = ("cpu", "full")


def play(
    arena, size: tuple[int, int], decisions: int, cache: bool, views: dict[str, float] | None = None
) -> tuple[list[str], float, float, str]:
    """Frame hashes, seconds in advance(), seconds in frame(), and the final date; with `views`, the
    seconds each layout's views took are added to it."""
    game = SimGame(
        arena,
        1,
        size=size,
        ai={"BLU": 0.5, "RED": 0.5},
        declarer="BLU",
        news=False,
        start_paused=False,
        speed=5,
        cache=cache,
    )
    h, w = size
    hashes = [hashlib.sha256(game.frame().tobytes()).hexdigest()]
    t_advance = t_frame = 0.0
    for i in range(decisions):
        # The pointer wanders like an agent's, never resting on the screen's edge (that would pan).
        x, y = (97 * i) % (w - 40) + 20, (61 * i) % (h - 40) + 20
        start = time.process_time()
        game.feed([SimEvent("move", x, y)])
        game.advance(200)
        middle = time.process_time()
        frame = game.frame()
        t_advance += middle - start
        t_frame += time.process_time() - middle
        for name in views or ():
            begin = time.process_time()
            compute_views(frame, (x, y), ViewLayout.named(name))
            views[name] += time.process_time() - begin
        hashes.append(hashlib.sha256(frame.tobytes()).hexdigest())
    date = game.world.date_text()
    game.close()
    return hashes, t_advance, t_frame, date


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=300, help="decisions per run (300 = 60 s of game)")
    args = parser.parse_args()
    arena = generate("river", 1)
    load = os.getloadavg()[0]
    print(f"river:1, AI vs AI at speed 5, {args.decisions} decisions of 200 ms; load average {load:.2f}")
    print(
        f"{'size':>9} {'run':>6} {'world ms':>9} {'frame ms':>9} {'decision ms':>12} {'decisions/s':>12} {'ratio':>6}"
    )
    # One thread, so that a decision's CPU time is a core's (the views split rows over two threads
    # from 4 MB of frame on; the 960x540 frame is under that anyway).
    resample.THREADED_BYTES = np.iinfo(np.int64).max
    with_views = {}
    for size in SIZES:
        views = dict.fromkeys(LAYOUTS, 0.0)
        fast, fa, ff, date = play(arena, size, args.decisions, cache=True, views=views)
        with_views[size] = (fa, ff, views)
        naive, na, nf, naive_date = play(arena, size, args.decisions, cache=False)
        if fast != naive or date != naive_date:
            raise SystemExit(f"{size}: the cached and naive frames differ; the bench is invalid")
        n = args.decisions
        label = f"{size[1]}x{size[0]}"
        for run, (a, f) in (("cached", (fa, ff)), ("naive", (na, nf))):
            per = (a + f) / n
            ratio = f"{(na + nf) / (fa + ff):>5.1f}x" if run == "cached" else ""
            print(
                f"{label:>9} {run:>6} {a / n * 1e3:>9.2f} {f / n * 1e3:>9.2f} {per * 1e3:>12.2f} {1 / per:>12.0f} {ratio:>6}"
            )
    print(f"(game reached {date}; identical frames in both runs)")
    print("with the views (world + frame + views, one core):")
    print(f"{'size':>9} {'layout':>6} {'views ms':>9} {'decision ms':>12} {'decisions/s/core':>17}")
    for size, (a, f, views) in with_views.items():
        for name, v in views.items():
            per = (a + f + v) / args.decisions
            print(
                f"{size[1]}x{size[0]:<4} {name:>6} {v / args.decisions * 1e3:>9.2f} {per * 1e3:>12.2f} {1 / per:>17.0f}"
            )


if __name__ == "__main__":
    main()
