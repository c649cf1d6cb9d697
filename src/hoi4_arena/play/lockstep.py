"""A run's games in lockstep: N headless simulator games at once over the vector layer, one policy call a
decision for all of them.

The runner's local loop (`play/runner.py`) plays a run's games one after another, its player deciding
for one game at a time. With a `Lockstep` (play-policy --lockstep N, and so evaluate and benchmark) the
runner hands its pending games here instead:

    round r:  every slot with a game under way  ──> player.decide(slots, views)  (one batched call)
              its tokens, and the games that begin in free slots ──> VectorGames.step  (one request a worker)
              <── each slot's next observation; a game that ended gives its row

- The pending games go in order to the first slots that are free: a slot whose game ended takes the
  next one in the following round (the vector layer's `step(..., begin=...)`), so a long game never
  holds up the games behind it. No game begins once the run's wall-clock guard has run out.
- A game is the runner's: `play/rollout_game.py` makes the calls to its worker that `screen.game.
  play_game` makes for a `TokenPlayer` (the same seed, side, map, AI strength, time limit, decision
  limit), and the player's tokens are its one-game tokens: a memory and a sampling generator per game,
  seeded `screen.game.sampling_seed(game seed, side)` when the game begins
  (`play.policy_player.PolicyGames`: `PolicyPlayer.decide_games` with the runner's decoding). So the
  rows are the runner's game for game, timing aside, with one caveat: the policy's numbers are a
  batch's, which round differently from a batch of one on a CPU (about 1e-7), so a draw or an argmax
  at a near tie could in principle go the other way (docs/play.md, "Many games at once", says how
  often that was seen).
- Rows go into results.jsonl as games end (not in game order); the runner's resume reads them by game
  index. Ctrl+C drops the games under way (no row: a resumed run plays them); a worker process that
  dies ends its games invalid ("worker process died") and a fresh process plays on.
- Unlike the runner's loop, an exception inside a game other than a worker's refusal stops the run (the
  vector layer raises it) instead of leaving that one game invalid; the folder resumes.

Try: hoi4-arena play-policy random runs/lockstep --games 8 --max-days 10 --no-record --lockstep 4
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings, Step
from hoi4_arena.play.vector_games import VectorGames
from hoi4_arena.screen.game import GameRecord, TokenPolicy, sampling_seed
from hoi4_arena.screen.tokens import SLOTS

if TYPE_CHECKING:
    from hoi4_arena.play.runner import Run


class BatchPlayer(Protocol):
    """A player of many games at once: `PolicyGames` (a checkpoint), `EachGame` (a policy per slot)."""

    def reset(self, slot: int, seed: int) -> None:
        """Slot `slot` begins a game whose sampling seed is `seed`."""

    def decide(
        self,
        slots: list[int],
        views: list[dict[str, np.ndarray]],
        speed: int,
        pointers: list[tuple[int, int]],
    ) -> np.ndarray:
        """(len(slots), 8, 3) int64: one decision of each slot's game."""


class EachGame:
    """Token policies that are cheap to make (the random policy) as a batch player: one policy per slot,
    each decision asked of each in turn."""

    def __init__(self, make: Callable[[], TokenPolicy], slots: int) -> None:
        self.policies = [make() for _ in range(slots)]

    def reset(self, slot: int, seed: int) -> None:
        self.policies[slot].reset(seed)

    def decide(
        self,
        slots: list[int],
        views: list[dict[str, np.ndarray]],
        speed: int,
        pointers: list[tuple[int, int]],
    ) -> np.ndarray:
        return np.stack(
            [
                self.policies[s].decide(v or None, speed, p)
                for s, v, p in zip(slots, views, pointers, strict=True)
            ]
        )


@dataclass(frozen=True)
class Lockstep:
    """How a run plays its games in lockstep (see the module docstring)."""

    player: Any
    """The `BatchPlayer`."""
    settings: RolloutSettings
    """What every game shares: screen, layout, speed, time and decision limits (no recording)."""
    ai_strength: float
    """The game's AI on the other side."""
    games: int = 8
    """Games at once (the slots)."""
    workers: int = 0
    """Worker processes that run the games (0: every game in this process)."""

    def __post_init__(self) -> None:
        if self.settings.record is not None:
            raise ValueError("lockstep games are not recorded: a recorded run plays through the runner")


class _NoNextGame:
    """The vector layer's schedule here: a slot never goes on to a next game by itself; `play_lockstep`
    hands out the run's games as slots free up."""

    def __init__(self, slots: int) -> None:
        self.games = slots

    def plan(self, slot: int, number: int) -> None:
        return None


def record_of(summary: dict[str, Any]) -> GameRecord:
    """The runner's record of a game the vector layer ended (`RolloutGame`'s summary, or the vector
    layer's of a game whose worker process died)."""
    return GameRecord(
        winner=summary.get("winner"),
        valid=summary["valid"],
        reason=summary["reason"],
        declarer=summary.get("declarer"),
        days=summary.get("days", 0),
        decisions=summary["decisions"],
        play_ns=summary.get("play_ns", 0),
        late=summary.get("late", 0),
        setup=summary.get("setup", {}),
        war=summary.get("war", {}),
        session=summary.get("session"),
    )


def play_lockstep(
    run: Run,
    lockstep: Lockstep,
    pending: Iterator[int],
    wall_out: Callable[[], bool],
    finished: Callable[[Any, GameRecord], None],
    on_round: Callable[[int], None] | None = None,
) -> bool:
    """Play the run's `pending` games (indices in plan order) in lockstep, each finished game handed to
    `finished(plan, record)` as the runner's loop does, `on_round(decisions so far)` after every round;
    True when Ctrl+C interrupted it (the games under way then have no row)."""
    slots, player, speed = lockstep.games, lockstep.player, lockstep.settings.speed
    playing: dict[int, Any] = {}  # slot -> the runner's plan of its game
    seen: dict[int, Step] = {}  # slot -> the observation its game acts on next
    numbers = [0] * slots
    more = True
    decisions = 0
    with VectorGames(lockstep.settings, _NoNextGame(slots), workers=lockstep.workers) as vector:
        try:
            while True:
                begin: dict[int, GamePlan] = {}
                for slot in range(slots):
                    if slot in playing or not more:
                        continue
                    index = None if wall_out() else next(pending, None)
                    if index is None:
                        more = False
                        break
                    plan = playing[slot] = run.plan(index)
                    begin[slot] = GamePlan(
                        slot, numbers[slot], plan.arena, plan.spec, plan.seed, plan.side, lockstep.ai_strength
                    )
                    numbers[slot] += 1
                if not playing:
                    return False
                acting = [slot for slot in sorted(playing) if slot not in begin]
                tokens = np.zeros((slots, SLOTS, 3), dtype=np.int64)
                if acting:
                    tokens[acting] = player.decide(
                        acting, [seen[s].views for s in acting], speed, [seen[s].pointer for s in acting]
                    )
                answers = vector.step(tokens, begin=begin)
                for slot in begin:
                    plan = playing[slot]
                    seen[slot] = answers[slot]
                    player.reset(slot, sampling_seed(plan.seed, plan.side))
                for slot in acting:
                    step = answers[slot]
                    decisions += 1
                    if step.done:
                        del seen[slot]
                        finished(playing.pop(slot), record_of(step.summary))
                    else:
                        seen[slot] = step
                if on_round is not None:
                    on_round(decisions)
        except KeyboardInterrupt:
            return True
