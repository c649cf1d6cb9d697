"""How well world rollouts foretell the scripted player's screen games (docs/search.md, "Fidelity").

For every valid game of a record-ai --player scripted results file (`--arena` maps as preset:seed), the
game's strategy is drawn again exactly as the player drew it (its seed's generator, the default mix),
the game's world is made again at its start (map, seed, side, the declarer the row names, the AI on
the other side) and that strategy is rolled out `--k` times on the world alone (`sim/rollout.py`,
the search player's timing, `--timing`). Printed: per game the screen's outcome and the rollouts'
mean; then how often the rollouts' majority agrees with the screen, the mean absolute gap, and both
win rates.

Try: .venv/bin/python scripts/rollout_fidelity.py runs/bench/presets/scripted/results.jsonl --k 4
"""

from __future__ import annotations

import argparse
import random
import sys

from hoi4_arena.maps.model import other_tag
from hoi4_arena.players.scripted import Strategy, StrategyMix
from hoi4_arena.players.search import SearchConfig
from hoi4_arena.results import read_results
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.headless import arena_of
from hoi4_arena.sim.rollout import OPENING_AIMS, OUTCOME, Choice, rollout
from hoi4_arena.sim.rollout import search as search_choices
from hoi4_arena.sim.world import World


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results.jsonl of scripted games")
    parser.add_argument("--k", type=int, default=4, help="rollouts a game (default 4)")
    parser.add_argument("--max-days", type=int, default=365, help="the games' time limit (default 365)")
    parser.add_argument(
        "--timing",
        choices=("screen", "fixed"),
        default="screen",
        help="the rollouts' timing (default screen)",
    )
    parser.add_argument("--quiet", action="store_true", help="the summary line only")
    parser.add_argument(
        "--search",
        action="store_true",
        help="also search the opening (the search player's defaults) and score the choice and the drawn "
        "strategy on --k fresh seeds each: the search's gain inside the rollouts' own world",
    )
    args = parser.parse_args()
    search = SearchConfig(timing=args.timing)
    rows = [r for r in read_results(args.results) if r.valid and r.player == "scripted"]
    if not rows:
        sys.exit(f"{args.results}: no valid scripted games")
    agree, gaps, screen, rolled, gains = 0, [], [], [], []
    timing = {"timing": search.rollout_timing}
    for row in rows:
        strategy = Strategy.draw(random.Random(f"scripted-{row.seed}"), StrategyMix())
        if strategy.label != row.strategy:
            sys.exit(f"game {row.extra.get('game')}: drew {strategy.label}, the row says {row.strategy}")
        every = strategy.replan_every_s
        choice = Choice(
            OPENING_AIMS[strategy.kind],
            search.hours(strategy.activate_delay_s),
            None if every is None else search.hours(every),
        )
        world = World(arena_of(row.extra["map"]), row.seed, max_days=args.max_days)
        world.declare_war(row.extra["declarer"])
        enemy = other_tag(row.side)
        ais = {enemy: GameAI(enemy, AIConfig(strength=0.5))}
        values = [rollout(world, ais, row.side, choice, i, **timing) for i in range(args.k)]
        mean = sum(values) / len(values)
        truth = OUTCOME[row.outcome]
        majority = max(set(values), key=lambda v: (values.count(v), v))
        agree += majority == truth
        gaps.append(abs(mean - truth))
        screen.append(truth == 1.0)
        rolled.append(mean)
        if args.search:
            found = search_choices(
                world, ais, row.side, [c for _, c in search.openings()], search.k, 0, **timing
            )
            # Fresh seeds (1000 on) for both: the search's own rollouts would flatter its choice.
            fresh = [rollout(world, ais, row.side, found.best, 1000 + i, **timing) for i in range(args.k)]
            gains.append(sum(fresh) / len(fresh) - sum(values) / len(values))
        if not args.quiet:
            print(
                f"{row.extra['map']:16} s{row.seed} {row.side} {row.strategy:14} screen {row.outcome:4}  rollouts {mean:.2f}"
            )
    n = len(rows)
    print(
        f"{n} games: the rollouts' majority outcome agrees with the screen's in {agree} ({agree / n:.0%}); "
        f"mean |rollout mean - screen| {sum(gaps) / n:.2f}; screen win rate {sum(screen) / n:.0%}, "
        f"rollouts' mean win value {sum(rolled) / n:.2f}"
    )
    if gains:
        print(
            f"the searched opening against the drawn strategy, on fresh seeds in the rollouts' world: "
            f"{sum(gains) / n:+.3f} mean win value ({sum(g > 0 for g in gains)} better, "
            f"{sum(g < 0 for g in gains)} worse of {n})"
        )


if __name__ == "__main__":
    main()
