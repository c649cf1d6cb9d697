"""Benchmark: decisions per second of a headless two-player game against two one-player games.

For each seed, in one process and interleaved (the machine is shared: a slow minute hits both loops):

- one-player (the baseline): two games through `SimWorker` and `play_game`, the player as BLU against
  the game's AI, then as RED (each decision: its capture, the world stepped, the AI deciding);
- two-player: one game through `PairHub` and `play.pair.play_pair_game`, the same player on both sides
  in one world (each tick: both captures, both sides' inputs, the world stepped once for both screens,
  the two sides' threads meeting at the barrier).

Both loops play `--decisions` decisions a game (`max_decisions`, so the loops do the same work whatever
the players do). The player is `views` (random tokens, but it asks for the cpu layout's views, so every
decision draws its frame and computes its views: the cost a policy's screen has) or `random` (no views:
the harness, the clock and the world only). It prints decisions/s of each loop and the ratio
two-player / one-player (the aim is at least 0.8x: the world is stepped once for two screens, but the
two sides hand over to each other at every tick).

Try: .venv/bin/python bench/pair.py --seeds 3 --decisions 150
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from hoi4_arena.play.pair import play_pair_game
from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.pair_worker import PairHub
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.sim.window import parse_size


class ViewsPolicy(RandomPolicy):
    """The random policy, but it asks for the cpu layout's views (and ignores them)."""

    name = "views"
    layout = ViewLayout.named("cpu")


def policy(kind: str):
    return ViewsPolicy() if kind == "views" else RandomPolicy()


def one_player(spec: str, seed: int, size, kind: str, decisions: int) -> tuple[int, float]:
    done, seconds = 0, 0.0
    for side in ("BLU", "RED"):
        start = time.perf_counter()
        with SimWorker(
            spec, seed, size=size, layout="cpu", player=side, max_days=365, player_kind="policy"
        ) as w:
            player = TokenPlayer(policy(kind), seed=seed, side=side, speed=5)
            record = play_game(w, player, GameSettings(side=side, speed=5, max_decisions=decisions))
        seconds += time.perf_counter() - start
        done += record.decisions
    return done, seconds


def two_player(spec: str, seed: int, size, kind: str, decisions: int) -> tuple[int, float]:
    start = time.perf_counter()
    kinds = {"BLU": "policy", "RED": "policy"}
    with PairHub(spec, seed, size=size, layout="cpu", max_days=365, player_kinds=kinds) as hub:
        players = {s: TokenPlayer(policy(kind), seed=seed, side=s, speed=5) for s in hub.game.sides}
        settings = {s: GameSettings(side=s, speed=5, max_decisions=decisions) for s in hub.game.sides}
        sides = play_pair_game(hub, players, settings)
    seconds = time.perf_counter() - start
    return sum(d["record"].decisions for d in sides.values()), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--decisions", type=int, default=150, help="decisions a game (each side)")
    parser.add_argument("--size", default="960x540")
    parser.add_argument("--arena", default="plains:0")
    parser.add_argument("--player", choices=("views", "random"), default="views")
    args = parser.parse_args()
    size = parse_size(args.size)
    one_player(args.arena, 0, size, args.player, 5)  # the map's geometry and the fonts, once
    loops = {"one-player x2": [0, 0.0], "two-player": [0, 0.0]}
    for seed in range(1, args.seeds + 1):
        for name, run in (("one-player x2", one_player), ("two-player", two_player)):
            n, s = run(args.arena, seed, size, args.player, args.decisions)
            loops[name][0] += n
            loops[name][1] += s
    rates = {name: n / s for name, (n, s) in loops.items()}
    ratio = rates["two-player"] / rates["one-player x2"]
    print(
        json.dumps(
            {
                "size": args.size,
                "player": args.player,
                "decisions": {name: n for name, (n, _) in loops.items()},
                "decisions_per_s": {name: round(r, 1) for name, r in rates.items()},
                "ratio": round(ratio, 3),
                "load_average": [round(v, 2) for v in os.getloadavg()],
                "numpy": np.__version__,
            },
            indent=1,
        )
    )
    print(f"two-player / one-player decisions per second: {ratio:.2f}x")


if __name__ == "__main__":
    main()
