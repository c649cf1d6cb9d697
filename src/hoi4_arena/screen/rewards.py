"""The reward of a game: named terms read from the ARENA log alone (nothing the policy could not earn from
the screen), one rule for every learner: the Gymnasium env (`rl/env.py`, hoi4_arena/Sim-v0 and
SimFlat-v0) and the project's PPO rollouts (`play/rollout_game.py`) both call `RewardTracker.after`.

The outcome is the game's result for the side played, given at its last decision: a win 1, a draw 0.5,
a loss 0 (so a return is a win probability, the value head's scale); it always weighs 1. Optional
shaping terms, each named and weighted (`train-ppo --reward setup=0.1,provinces=0.05`, the env's
`reward={"setup": 0.1}`), are potential differences from decision to decision, so each term's sum over
a game is its potential at the end minus at the start, whatever happened in between:

- `setup`: the share of the four setup steps (`gamelog.SETUP_STEPS`: army, front, offensive, executed)
  the side has taken so far (0 to 1 over a game);
- `victory_points`: the share of the map's victory points in provinces the side controls;
- `provinces`: the share of the map's provinces the side controls.

The default weights (`parse_weights({})`) are the outcome alone, wherever a game is made.
`RewardTracker.update` returns every term's reward of one decision, unweighted; `total` weights them,
and the caller reports each term apart (the env in `info["terms"]`, train-ppo per finished game), so a
run says what it optimised.

Try: .venv/bin/python -m pytest -q tests/screen/test_rewards.py
"""

from __future__ import annotations

import math
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS, setup_milestones

OUTCOME = "outcome"
TERMS = ("setup", "victory_points", "provinces")
"""The shaping terms a run may weight."""
OUTCOME_REWARD = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def parse_weights(weights: dict[str, Any] | None) -> dict[str, float]:
    """`--reward` as {term: weight} (outcome always weighs 1; None or {}: the outcome alone); UserError for
    an unknown term or a bad weight."""
    if weights is None:
        return {}
    if not isinstance(weights, dict):
        raise UserError(f"reward weights are {{term: weight}}, e.g. {{'setup': 0.1}}, not {weights!r}")
    out: dict[str, float] = {}
    for name, value in weights.items():
        if name not in TERMS:
            raise UserError(
                f"--reward {name}={value}: unknown reward term {name!r}; the terms are {', '.join(TERMS)} "
                "(the outcome always counts, with weight 1)"
            )
        try:
            weight = float(value)
        except (TypeError, ValueError):
            raise UserError(f"--reward {name}={value}: the weight must be a number") from None
        if not math.isfinite(weight):
            raise UserError(f"--reward {name}={value}: the weight must be finite")
        out[name] = weight
    return out


def total(rewards: dict[str, float], weights: dict[str, float]) -> float:
    """One decision's reward: the outcome plus each shaping term times its weight."""
    return rewards.get(OUTCOME, 0.0) + sum(w * rewards.get(name, 0.0) for name, w in weights.items())


class RewardTracker:
    """One game's potentials for side `side` on map `arena`, updated from the match's ARENA log."""

    def __init__(self, side: str, arena: Any) -> None:
        self.side = side
        self.provinces = len(arena.provinces)
        self.points = {p.id: p.victory_points for p in arena.provinces}
        self.owners = {p.id: p.owner for p in arena.provinces}
        """Who holds each province before the log says otherwise: the map's owners."""
        self.all_points = sum(self.points.values())
        self.steps = dict.fromkeys(SETUP_STEPS, False)
        self._read = 0  # log lines folded into self.steps
        self.potential = dict.fromkeys(TERMS, 0.0)
        self.sums = dict.fromkeys((OUTCOME, *TERMS), 0.0)
        """Each term's rewards so far this game (unweighted)."""

    def potentials(self, log: Any) -> dict[str, float]:
        """The terms' potentials now, from a `screen.match.MatchLog`."""
        new = log.lines[self._read :]
        self._read = len(log.lines)
        if new:
            seen = setup_milestones(new, self.side)
            for step in SETUP_STEPS:
                self.steps[step] = self.steps[step] or seen[step] is not None
        control = {**self.owners, **log.state.control}
        own = [pid for pid, owner in control.items() if owner == self.side]
        return {
            "setup": sum(self.steps.values()) / len(SETUP_STEPS),
            "victory_points": sum(self.points.get(pid, 0) for pid in own) / self.all_points
            if self.all_points
            else 0.0,
            "provinces": len(own) / self.provinces,
        }

    def start(self, log: Any) -> None:
        """The potentials at the game's first observation (the start of every term's sum)."""
        self.potential = self.potentials(log)

    def after(self, game: Any) -> dict[str, float]:
        """The rewards of the decision a `screen.game.Game` just played and observed: the outcome once the
        game has ended valid (an invalid end, such as max_decisions, has none), and every shaping term."""
        state = game.log.state
        over = game.ended and game.record.valid
        return self.update(game.log, outcome_of(state.winner, self.side, state.over) if over else None)

    def update(self, log: Any, outcome: str | None = None) -> dict[str, float]:
        """The rewards of the decision that led to this observation; `outcome` (win, draw, loss) at the end."""
        now = self.potentials(log)
        rewards = {name: now[name] - self.potential[name] for name in TERMS}
        rewards[OUTCOME] = OUTCOME_REWARD[outcome] if outcome is not None else 0.0
        self.potential = now
        for name, value in rewards.items():
            self.sums[name] += value
        return rewards


def outcome_of(winner: str | None, side: str, over: bool) -> str | None:
    """win, loss or draw for `side` once the game is over, else None."""
    if winner is not None:
        return "win" if winner == side else "loss"
    return "draw" if over else None
