"""Simulated game-days per second of the world, AI vs AI on every preset, against a naive baseline.

Each preset's game (map seed 1, world seed 1, BLU declares, time limit 365 days) runs twice in this
process: with the world's caches (front lines and routes kept per control version, reused until a
province changes hands) and as the naive baseline `cache=False`, the same rules that recompute every
front line and every route by breadth-first search at each use. Both runs must produce the same log
(the caches change speed, not play). CPU time is process time; map generation is not timed.

Try: python bench/sim_world.py
"""

from __future__ import annotations

import time

from hoi4_arena.maps import PRESETS, generate
from hoi4_arena.sim.ai import GameAI
from hoi4_arena.sim.world import World


def play(arena, cache: bool) -> tuple[World, float]:
    start = time.process_time()
    world = World(arena, 1, declarer="BLU", max_days=365, cache=cache)
    ais = [GameAI("BLU"), GameAI("RED")]
    while not world.over:
        for ai in ais:
            ai.update(world)
        world.step(24)
    return world, time.process_time() - start


def main() -> None:
    print(
        f"{'preset':9} {'days':>6} {'result':>12} {'game s':>8} {'days/s':>9} {'naive s':>8} {'naive days/s':>13} {'ratio':>6}"
    )
    total, total_naive, total_days = 0.0, 0.0, 0.0
    for preset in PRESETS:
        arena = generate(preset, 1)
        _ = arena.distances  # built once per map; not part of a game
        world, seconds = play(arena, cache=True)
        naive, naive_seconds = play(arena, cache=False)
        if naive.log_lines != world.log_lines:
            raise SystemExit(f"{preset}: the cached and naive worlds diverged; the bench is invalid")
        days = world.hour / 24
        total += seconds
        total_naive += naive_seconds
        total_days += days
        result = f"{world.winner or 'draw'}"
        print(
            f"{preset:9} {days:>6.0f} {result:>12} {seconds:>8.3f} {days / seconds:>9.0f} {naive_seconds:>8.3f} {days / naive_seconds:>13.0f} {naive_seconds / seconds:>5.1f}x"
        )
    print(
        f"{'all':9} {total_days:>6.0f} {'':>12} {total:>8.3f} {total_days / total:>9.0f} {total_naive:>8.3f} {total_days / total_naive:>13.0f} {total_naive / total:>5.1f}x"
    )


if __name__ == "__main__":
    main()
