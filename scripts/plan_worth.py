"""What a family of plans is worth against the game's AI, in the rollouts' world, beside the scripted player's.

The search can only choose among plans its base player can make; `rollout_fidelity.py --search` found
the scripted player's openings worth about ten points of win rate between them (docs/search.md, "The
ceiling"). This asks what other plans would be worth before any screen player is taught them: for
every valid game of a record-ai --player scripted results file, the game's world is made again at its
start (`rollout_fidelity.game_start`) and the player's side is played K times on the world alone by:

- `scripted`: the game's own drawn strategy (`ScriptedPlan`, the search's timing);
- `scripted@S`: the same strategy at the pace of game speed S (1..5; the benchmark's is 5): its seconds
  (the activation delay, the replanning period) and the screen's waits in the game hours they take at S;
- `hold`: one army on the front and never an offensive;
- `ai:S:A`: the game's own AI at strength S (0..1) forming A armies (1..4) -- quicker looks, bolder
  attacks at the weakest point of the front, more than one army (`sim/ai.py`); its orders land at once.
  `ai:S:A:H`: the same choices, a look at the map every H game hours (the screen player's pace).

Printed per family: the mean win value and, paired game by game with `scripted`, the difference and its
standard error. The rollouts' seeds are the same for every family (common random numbers). With
`--choose`, also a search among the families: in each game the family with the best mean over the K
rollouts (a tie to the earlier listed), scored with the scripted strategy on K fresh seeds (its own
rollouts would flatter the choice).

Try: .venv/bin/python scripts/plan_worth.py runs/bench/presets/scripted/results.jsonl --k 8 \
         --plans scripted hold ai:0.5:2 ai:1:2 ai:1:1
"""

from __future__ import annotations

import random
import signal
import sys
from dataclasses import dataclass

from rollout_fidelity import game_start, games_parser, scripted_rows, standard_error

from hoi4_arena.errors import UserError
from hoi4_arena.players.search import SearchConfig
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.rollout import Choice, fork, outcome, play_out, rollout
from hoi4_arena.sim.rules import Rules
from hoi4_arena.sim.world import World


@dataclass(frozen=True)
class AIPlan:
    """The game's AI as the player's side: its config, and the hours between its looks at the map
    (None: the strength's own)."""

    config: AIConfig
    every: int | None = None


@dataclass
class PacedAI(GameAI):
    """The game's AI looking at the map every `every` hours whatever its strength (its choices are the
    strength's)."""

    every: int = 24

    def update(self, world: World) -> None:
        before = self.next_hour
        super().update(world)
        if self.next_hour != before:  # it looked
            self.next_hour = world.hour + self.every


@dataclass(frozen=True)
class ScriptedAt:
    """The game's scripted strategy at the pace of game speed `speed`."""

    speed: int


def parse_plan(text: str) -> str | AIPlan | ScriptedAt:
    """A --plans entry: `scripted`, `scripted@S`, `hold`, or the game's AI as `ai:S:A[:H]`."""
    if text in ("scripted", "hold"):
        return text
    if text.startswith("scripted@"):
        speed = text.removeprefix("scripted@")
        if speed not in ("1", "2", "3", "4", "5"):
            raise ValueError(f"{text}: the speed must be 1..5")
        return ScriptedAt(int(speed))
    parts = text.split(":")
    if len(parts) not in (3, 4) or parts[0] != "ai":
        raise ValueError(f"a plan is scripted[@SPEED], hold or ai:STRENGTH:ARMIES[:HOURS], not {text!r}")
    try:
        every = int(parts[3]) if len(parts) == 4 else None
        if every is not None and every < 1:
            raise ValueError("the hours between looks must be 1 or more")
        return AIPlan(AIConfig(strength=float(parts[1]), armies=int(parts[2])), every)
    except ValueError as error:
        raise ValueError(f"{text}: {error}") from None


def ai_rollout(world: World, ais: dict[str, GameAI], side: str, plan: AIPlan, seed: int) -> float:
    """A rollout with `side` played by the game's AI of `plan` from `world` (which is not changed)."""
    world, ais = fork(world, ais)
    world.rng = random.Random(f"rollout-{seed}")
    if plan.every is None:
        ais[side] = GameAI(side, plan.config)
    else:
        ais[side] = PacedAI(side, plan.config, every=plan.every)
    play_out(world, ais, [], world.max_days * 24 + 1)
    return outcome(world, side)


def play(
    world: World,
    ais: dict[str, GameAI],
    side: str,
    plan: str | AIPlan | ScriptedAt,
    choice: Choice,
    seeds: range,
) -> float:
    """The mean win value of `plan` for `side` over rollouts of `seeds` from `world` (`choice`: the
    game's own scripted strategy)."""
    if isinstance(plan, AIPlan):
        values = [ai_rollout(world, ais, side, plan, i) for i in seeds]
    else:
        config = SearchConfig(speed=plan.speed if isinstance(plan, ScriptedAt) else SearchConfig.speed)
        if plan == "hold":
            chosen = Choice("none", 0, None)
        else:  # the game's choice, made at the search's speed, in the hours its seconds take at this one
            scale = config.hours(1.0) / SearchConfig().hours(1.0)
            replan = choice.replan_hours
            chosen = Choice(
                choice.aim,
                round(choice.delay_hours * scale),
                None if replan is None else max(1, round(replan * scale)),
            )
        values = [rollout(world, ais, side, chosen, i, timing=config.rollout_timing) for i in seeds]
    return sum(values) / len(values)


def main() -> None:
    parser = games_parser(__doc__.splitlines()[0], 8, "rollouts a game and plan")
    parser.add_argument(
        "--plans",
        nargs="+",
        default=["scripted", "hold", "ai:0.5:2", "ai:1:2"],
        help="the plan families (default: scripted hold ai:0.5:2 ai:1:2)",
    )
    parser.add_argument(
        "--choose",
        action="store_true",
        help="also choose the best family in each game and score it on fresh seeds against scripted",
    )
    args = parser.parse_args()
    try:
        plans = {text: parse_plan(text) for text in args.plans}
        if args.k < 1:
            raise ValueError("--k must be 1 or more")
        rows = scripted_rows(args.results)
    except (ValueError, UserError) as error:
        sys.exit(f"plan_worth: {error}")
    search = SearchConfig()
    means: dict[str, list[float]] = {text: [] for text in plans}
    choices: list[str] = []
    chosen_fresh: list[float] = []  # per game: the chosen family's fresh mean less the scripted one's
    for row in rows:
        try:
            world, ais, choice = game_start(row, search, args.max_days, Rules())
        except ValueError as error:
            sys.exit(str(error))

        for text, plan in plans.items():
            means[text].append(play(world, ais, row.side, plan, choice, range(args.k)))
        if args.choose:
            best = max(plans, key=lambda text: (means[text][-1], -list(plans).index(text)))
            fresh = range(args.k, 2 * args.k)
            choices.append(best)
            chosen_fresh.append(
                play(world, ais, row.side, plans[best], choice, fresh)
                - play(world, ais, row.side, "scripted", choice, fresh)
            )
    n = len(rows)
    base = means.get("scripted")
    print(f"{n} games, {args.k} rollouts a game and plan, the player's side against the game's AI at 0.5")
    for text, values in means.items():
        line = f"{text:12} mean win value {sum(values) / n:.3f}"
        if base is not None and text != "scripted":
            differences = [v - b for v, b in zip(values, base, strict=True)]
            line += (
                f"; against scripted {sum(differences) / n:+.3f} (standard error {standard_error(differences):.3f}; "
                f"better in {sum(d > 0 for d in differences)}, worse in {sum(d < 0 for d in differences)})"
            )
        print(line)
    if chosen_fresh:
        picked = ", ".join(f"{text} {choices.count(text)}" for text in plans if choices.count(text))
        print(
            f"the best family a game ({picked}) on {args.k} fresh seeds against scripted: "
            f"{sum(chosen_fresh) / n:+.3f} (standard error {standard_error(chosen_fresh):.3f}; "
            f"better in {sum(d > 0 for d in chosen_fresh)}, worse in {sum(d < 0 for d in chosen_fresh)})"
        )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
