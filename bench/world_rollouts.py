"""Headless world rollouts (what the search teacher runs) against the same game days on the headless screen.

A game of river:1 is played by the game's AI on both sides for 10 days and saved (`sim/save.py`). From
that save, this process times:

- the project: `sim.rollout.play_choice` (a rollout before its score): each a fork of the saved world,
  BLU holding its front by the scripted plan's world orders (`none`, no replanning: the longest of
  the plan's games there, about 330 days) against RED's AI, `--days` game days or to the game's end,
  no screen; `--rollouts` of them, seeds 0, 1, ...;
- the baseline: the same save restored as a `SimGame` and advanced 200 ms of virtual time at speed 5
  per decision with the screen drawn each decision (`frame()`, what a rollout through the screen needs
  at the least: a player reads captures), both sides its AI, for a rollout's mean game days.

CPU time is process time; making and loading the save is not timed. It prints game days per second of
each and the ratio.

Try: python bench/world_rollouts.py --rollouts 5
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.rollout import Choice, load_world, play_choice
from hoi4_arena.sim.save import load_game, write_save

SPEC = "river:1"
SIZE = (540, 960)
DAY = 10


def make_save(folder: Path) -> Path:
    with SimGame(
        SPEC, seed=1, size=SIZE, ai={"BLU": 0.5, "RED": 0.5}, declarer="BLU", news=False, speed=5
    ) as game:
        game.clock.paused = False
        while game.world.day < DAY:
            game.advance(200)
        return write_save(game, folder / "mid.simsave")


def rollouts(path: Path, days: int, count: int) -> tuple[float, int]:
    """CPU seconds and game days of `count` world rollouts from the save (a game may end first)."""
    world, ais, _ = load_world(path)
    choice = Choice("none", 0, None)  # BLU holds: the longest of the plan's games on this map
    stepped = 0
    start = time.process_time()
    for seed in range(count):
        end = play_choice(world, ais, "BLU", choice, seed, days=days)
        stepped += (end.hour - world.hour) // 24
    return time.process_time() - start, stepped


def screen_days(path: Path, days: int) -> tuple[float, int]:
    """CPU seconds and game days of the restored game advanced decision by decision, a frame each."""
    game = load_game(path)
    try:
        game.clock.paused = False
        start_hour = game.world.hour
        start = time.process_time()
        while not game.over and game.world.hour < start_hour + 24 * days:
            game.advance(200)
            game.frame()
        seconds = time.process_time() - start
        return seconds, (game.world.hour - start_hour) // 24
    finally:
        game.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=0, help="game days a rollout (default 0: to the end)")
    parser.add_argument("--rollouts", type=int, default=5, help="world rollouts timed (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = make_save(Path(folder))
        r_seconds, r_days = rollouts(path, args.days, args.rollouts)
        s_seconds, s_days = screen_days(path, max(1, r_days // args.rollouts))
    r_rate, s_rate = r_days / r_seconds, s_days / s_seconds
    print(f"{'run':34} {'game days':>9} {'cpu s':>7} {'days/s':>8}")
    print(f"{'world rollouts (project)':34} {r_days:9d} {r_seconds:7.2f} {r_rate:8.0f}")
    print(f"{'headless screen, a frame/decision':34} {s_days:9d} {s_seconds:7.2f} {s_rate:8.1f}")
    print(
        f"ratio: {r_rate / s_rate:.0f}x the game days per CPU second; "
        f"{args.rollouts / r_seconds:.1f} rollouts/s of {r_days / args.rollouts:.0f} days"
    )


if __name__ == "__main__":
    main()
