"""How well world rollouts foretell the scripted player's screen games (docs/search.md, "Fidelity").

For every valid game of a record-ai --player scripted results file (`--arena` maps as preset:seed), the
game's strategy is drawn again exactly as the player drew it (its seed's generator, the default mix),
the game's world is made again at its start (map, seed, side, the declarer the row names, the AI on
the other side) and that strategy is rolled out `--k` times on the world alone (`sim/rollout.py`,
the search player's timing, `--timing`). Printed: per game the screen's outcome and the rollouts'
mean; then how often the rollouts' majority agrees with the screen, the mean absolute gap, the Brier
score (against the constant forecast of the screen's own win rate) and both win rates, with the
rollouts' means in four bins against the screen's outcomes there (calibration).

The same figures against a stand-in: one more rollout of each game on a seed the K did not use. A
model that were the screen game itself would foretell the screen exactly as well as it foretells the
stand-in, so the stand-in's row is the most any rollouts could agree with games this random: where the
screen's row is near it, the games' own luck, not the model, is what the rollouts miss.

Try: .venv/bin/python scripts/rollout_fidelity.py runs/bench/presets/scripted/results.jsonl --k 4
"""

from __future__ import annotations

import argparse
import math
import random
import signal
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import other_tag
from hoi4_arena.players.scripted import Strategy, StrategyMix
from hoi4_arena.players.search import SearchConfig
from hoi4_arena.results import GameResult, read_results
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.headless import arena_of
from hoi4_arena.sim.rollout import OPENING_AIMS, OUTCOME, Choice, rollout
from hoi4_arena.sim.rollout import search as search_choices
from hoi4_arena.sim.rules import Rules
from hoi4_arena.sim.world import World

BINS = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))
"""The calibration bins of a game's rollout mean: [lo, hi), the last one [0.75, 1]."""


@dataclass(frozen=True)
class Foretold:
    """How well K rollouts a game foretold one outcome a game."""

    games: int
    agree: int  # the rollouts' majority outcome equals the game's
    gap: float  # mean |rollout mean - outcome|
    brier: float  # mean (rollout mean - outcome)^2
    base_brier: float  # the same for the constant forecast of the outcomes' mean
    bins: tuple[tuple[int, float, float], ...]  # per bin: games, mean rollout mean, mean outcome

    def line(self, name: str) -> str:
        bins = ", ".join(
            f"{lo:.2f}-{hi:.2f}: {n} games, {m:.2f} against {o:.2f}"
            for (lo, hi), (n, m, o) in zip(BINS, self.bins, strict=True)
            if n
        )
        return (
            f"{name}: majority agrees in {self.agree} of {self.games} ({self.agree / self.games:.0%}), "
            f"mean gap {self.gap:.2f}, Brier {self.brier:.3f} (constant forecast {self.base_brier:.3f}); "
            f"rollout mean against outcome by bin: {bins}"
        )


def majority(values: Sequence[float]) -> float:
    """The most common outcome of a game's rollouts (a tie to the better one)."""
    return max(set(values), key=lambda v: (values.count(v), v))


def foretold(games: Sequence[tuple[Sequence[float], float]]) -> Foretold:
    """How well each game's rollout values (win 1, draw 0.5, loss 0) foretold its outcome."""
    if not games:
        raise ValueError("no games")
    means = [sum(values) / len(values) for values, _ in games]
    truths = [truth for _, truth in games]
    base = sum(truths) / len(truths)
    bins = []
    for lo, hi in BINS:
        inside = [(m, t) for m, t in zip(means, truths, strict=True) if lo <= m < hi or m == hi == 1.0]
        n = len(inside)
        bins.append((n, sum(m for m, _ in inside) / max(n, 1), sum(t for _, t in inside) / max(n, 1)))
    n = len(games)
    return Foretold(
        games=n,
        agree=sum(majority(values) == truth for values, truth in games),
        gap=sum(abs(m - t) for m, t in zip(means, truths, strict=True)) / n,
        brier=sum((m - t) ** 2 for m, t in zip(means, truths, strict=True)) / n,
        base_brier=sum((base - t) ** 2 for t in truths) / n,
        bins=tuple(bins),
    )


def scripted_rows(path: str) -> list[GameResult]:
    """The valid scripted games of a results file; a UserError when there are none."""
    rows = [r for r in read_results(path) if r.valid and r.player == "scripted"]
    if not rows:
        raise UserError(f"{path}: no valid scripted games")
    return rows


def game_start(
    row: GameResult, search: SearchConfig, max_days: int, rules: Rules
) -> tuple[World, dict[str, GameAI], Choice]:
    """A scripted game's world made again at its start (map, seed, declarer, the AI on the other side)
    and its strategy drawn again from its seed as the player drew it, as a rollout's choice."""
    strategy = Strategy.draw(random.Random(f"scripted-{row.seed}"), StrategyMix())
    if strategy.label != row.strategy:
        raise ValueError(f"game {row.extra.get('game')}: drew {strategy.label}, the row says {row.strategy}")
    every = strategy.replan_every_s
    choice = Choice(
        OPENING_AIMS[strategy.kind],
        search.hours(strategy.activate_delay_s),
        None if every is None else search.hours(every),
    )
    world = World(arena_of(row.extra["map"]), row.seed, max_days=max_days, rules=rules)
    world.declare_war(row.extra["declarer"])
    enemy = other_tag(row.side)
    return world, {enemy: GameAI(enemy, AIConfig(strength=0.5))}, choice


def standard_error(values: Sequence[float]) -> float:
    """The standard error of the values' mean (0 for fewer than two)."""
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def games_parser(description: str, k: int, k_help: str) -> argparse.ArgumentParser:
    """A parser of the scripted games' results file, the rollouts a game (`--k`) and `--max-days`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("results", help="a results.jsonl of scripted games")
    parser.add_argument("--k", type=int, default=k, help=f"{k_help} (default {k})")
    parser.add_argument("--max-days", type=int, default=365, help="the games' time limit (default 365)")
    return parser


def main() -> None:
    parser = games_parser(__doc__.splitlines()[0], 4, "rollouts a game")
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
    parser.add_argument(
        "--stand-ins",
        type=int,
        default=1,
        help="stand-in rollouts a game for the ceiling's row, each scored against the K (default 1)",
    )
    parser.add_argument(
        "--search-k",
        type=int,
        default=SearchConfig.k,
        help=f"with --search: rollouts of each candidate (default {SearchConfig.k}, the search player's)",
    )
    parser.add_argument(
        "--battle-noise",
        type=float,
        default=Rules.battle_noise,
        help=f"the rollouts' battle luck, the share a battle-hour's losses swing either way (default "
        f"{Rules.battle_noise:g}, the rules'; the screen's games keep theirs)",
    )
    parser.add_argument(
        "--search-delays",
        default=",".join(f"{d:g}" for d in SearchConfig.delays_s),
        help="with --search: the opening's activation delays to try, seconds, comma-separated",
    )
    parser.add_argument(
        "--search-replans",
        default=",".join(f"{r:g}" for r in SearchConfig.replans_s),
        help="with --search: the replanning periods to try, seconds, comma-separated",
    )
    args = parser.parse_args()
    if min(args.k, args.stand_ins, args.search_k) < 1:
        sys.exit("--k, --stand-ins and --search-k must be 1 or more")
    if not 0 <= args.battle_noise < 1:
        sys.exit("--battle-noise must be in 0..1")
    rules = replace(Rules(), battle_noise=args.battle_noise)
    try:
        delays, replans = (
            tuple(float(v) for v in text.split(",")) for text in (args.search_delays, args.search_replans)
        )
        search = SearchConfig(timing=args.timing, k=args.search_k, delays_s=delays, replans_s=replans)
    except ValueError as error:
        sys.exit(f"bad --search-* setting: {error}")
    try:
        rows = scripted_rows(args.results)
    except UserError as error:
        sys.exit(str(error))
    games, stand_ins, gains = [], [], []
    timing = {"timing": search.rollout_timing}
    for row in rows:
        try:
            world, ais, choice = game_start(row, search, args.max_days, rules)
        except ValueError as error:
            sys.exit(str(error))
        values = [rollout(world, ais, row.side, choice, i, **timing) for i in range(args.k)]
        mean = sum(values) / len(values)
        games.append((values, OUTCOME[row.outcome]))
        seeds = range(args.k, args.k + args.stand_ins)
        stand_ins += [(values, rollout(world, ais, row.side, choice, seed, **timing)) for seed in seeds]
        if args.search:
            found = search_choices(
                world, ais, row.side, [c for _, c in search.openings()], search.k, 0, **timing
            )
            # Fresh seeds (1000 on) for both: the search's own rollouts would flatter its choice.
            fresh = [rollout(world, ais, row.side, found.best, 1000 + i, **timing) for i in range(args.k)]
            gains.append(sum(fresh) / len(fresh) - sum(values) / len(values))
        if not args.quiet:
            print(
                f"{row.extra['map']:16} s{row.seed} {row.side} {row.strategy:14} screen {row.outcome:4}  "
                f"rollouts {mean:.2f}  stand-in {stand_ins[-1][1]:.1f}"
            )
    n = len(rows)
    wins = sum(truth == 1.0 for _, truth in games)
    rolled = sum(sum(values) / len(values) for values, _ in games) / n
    print(f"{n} games: screen win rate {wins / n:.0%}, rollouts' mean win value {rolled:.2f}")
    print(foretold(games).line(f"the screen (K = {args.k})"))
    print(foretold(stand_ins).line(f"{args.stand_ins} stand-in rollout(s) a game (the ceiling)"))
    if gains:
        print(
            f"the searched opening against the drawn strategy, on fresh seeds in the rollouts' world: "
            f"{sum(gains) / n:+.3f} mean win value (standard error {standard_error(gains):.3f}; "
            f"search K = {args.search_k} of {len(search.openings())} candidates; {sum(g > 0 for g in gains)} better, "
            f"{sum(g < 0 for g in gains)} worse of {n})"
        )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
