"""Recorded games as value-learning data: each session's outcome for its recorded side, and the ARENA
state at each of its 200 ms decisions.

The critic (critic.py), the state-value baseline (state_value.py) and the advantages (advantage.py) all
learn or use V(decision) = P(the recorded side wins), so they share this module:

- `session_outcome`: win 1, draw 0.5, loss 0 for the manifest's `side`, from its `winner`; None when
  the game did not end (or the session records no side).
- `read_game`: per decision the game day and a feature vector of the ARENA state folded from
  arena-log.jsonl up to the decision's anchor frame (what the reader's `Decision.arena` holds, without
  copying the state each time): the day, for each side (the recorded one first) divisions, strength,
  provinces controlled, surrender, casualties and manpower, the shares of strength and provinces, who
  declared, whether the recorded side is BLU, the setup milestones reached so far (`SETUP_STEPS`, by
  the rules of `gamelog.setup_milestones`) and whether the winner is already known. Never pixels.
- `LiveFacts`: the same features of a game under way, from its harness's ARENA log (train-ppo
  --critic state reads them at each decision of its rollouts).
- `value_games`: the usable sessions of a data folder (`data.sources.find_sessions`), each read once,
  split into train and held-out games. The data's own `val` split is used when it has one; otherwise a
  seeded share of the *maps* (arena and seed of the ARENA start line) is held out, so that the two
  sessions record-ai plays on one seed (one from each side) never land on both sides of the split.

Try: .venv/bin/python -m hoi4_arena.training.value_data runs/critic-data
"""

from __future__ import annotations

import json
import logging
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.data.sources import SessionSource, find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS, ArenaState, parse_line
from hoi4_arena.sessions.format import SOURCES
from hoi4_arena.sessions.reader import SessionReader

log = logging.getLogger(__name__)

SIDE_FEATURES = ("divisions", "strength", "controlled", "surrender", "casualties_k", "manpower_k")
FEATURES: tuple[str, ...] = (
    "day",
    "at_war",
    "own_declared",
    "own_is_blu",
    *(f"own_{name}" for name in SIDE_FEATURES),
    *(f"enemy_{name}" for name in SIDE_FEATURES),
    "own_strength_share",
    "own_controlled_share",
    *(f"own_setup_{step}" for step in SETUP_STEPS),
    *(f"enemy_setup_{step}" for step in SETUP_STEPS),
    "winner_known",
)
"""The state-value model's inputs, in order (a checkpoint stores them; another list is refused)."""

OUTCOMES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def session_outcome(winner: str | None, side: str | None) -> float | None:
    """The game's outcome for `side`: win 1, draw 0.5, loss 0; None when unknown (no winner, no side)."""
    if winner is None or side is None:
        return None
    if winner == "draw":
        return OUTCOMES["draw"]
    return OUTCOMES["win"] if winner == side else OUTCOMES["loss"]


@dataclass
class Game:
    """One session as value data."""

    source: SessionSource
    outcome: float
    """Win 1, draw 0.5, loss 0 for the recorded side."""
    side: str
    group: str
    """The map it was played on (arena:seed): games of one group stay on one side of the split."""
    days: np.ndarray
    """float64 (N,) the game day (hours / 24 of the last ARENA line) at each decision."""
    features: np.ndarray
    """float32 (N, len(FEATURES)) the ARENA state at each decision."""

    @property
    def id(self) -> str:
        return self.source.id


def _side_values(state: ArenaState, tag: str) -> list[float]:
    side = state.sides.get(tag)
    if side is None:
        return [0.0] * len(SIDE_FEATURES)
    return [
        float(side.divisions),
        float(side.strength),
        float(side.controlled),
        float(side.surrender),
        side.casualties / 1000.0,
        side.manpower / 1000.0,
    ]


def _share(own: float, enemy: float) -> float:
    return own / (own + enemy) if own + enemy > 0 else 0.5


def state_features(state: ArenaState, side: str, reached: dict[str, set[str]]) -> list[float]:
    """FEATURES of `state` seen from `side` (BLU or RED); `reached[tag]` holds its setup steps so far."""
    enemy = "RED" if side == "BLU" else "BLU"
    own, other = _side_values(state, side), _side_values(state, enemy)
    winner = 0.0 if state.winner is None else (1.0 if state.winner == side else -1.0)
    return [
        state.h / 24.0,
        float(state.at_war),
        float(state.attacker == side),
        float(side == "BLU"),
        *own,
        *other,
        _share(own[1], other[1]),
        _share(own[2], other[2]),
        *(float(step in reached[side]) for step in SETUP_STEPS),
        *(float(step in reached[enemy]) for step in SETUP_STEPS),
        winner,
    ]


def _reach(reached: set[str], fields: dict, enemy: str) -> None:
    """Setup steps an army line shows, by the rules of `gamelog.setup_milestones`."""
    reached.add("army")
    if fields["front"] == enemy:
        reached.add("front")
    if fields["plan"]:
        reached.add("offensive")
    if fields["executing"] == 1:
        reached.add("executed")


class LiveFacts:
    """FEATURES of one side of a game under way, at each decision: `facts(log)` reads a harness's
    `screen.match.MatchLog` (`lines`, the raw ARENA lines so far; `state`, their fold) and folds the setup
    steps of the lines it has not seen, as `read_game` does for a recorded game. One per game."""

    def __init__(self, side: str) -> None:
        self.side = side
        self.reached: dict[str, set[str]] = {"BLU": set(), "RED": set()}
        self._read = 0

    def facts(self, log: Any) -> np.ndarray:
        """float32 (len(FEATURES),) the state now, seen from the side."""
        for text in log.lines[self._read :]:
            line = parse_line(text)
            if line is not None and line.kind == "army" and line["tag"] in self.reached:
                _reach(self.reached[line["tag"]], line.fields, "RED" if line["tag"] == "BLU" else "BLU")
        self._read = len(log.lines)
        return np.asarray(state_features(log.state, self.side, self.reached), np.float32)


def read_game(source: SessionSource) -> Game | str:
    """The session's outcome and per-decision ARENA state, or the reason it cannot serve (a string)."""
    reader = SessionReader(source.path)
    manifest = reader.manifest
    if not reader.log_records:
        return "it has no ARENA log lines (arena-log.jsonl is empty), so nothing says who won"
    side = manifest.side
    if side not in ("BLU", "RED"):
        return f"its manifest names no recorded side (side {side!r})"
    outcome = session_outcome(manifest.winner, side)
    if outcome is None:
        return "the game did not end (the manifest has no winner)"
    state = ArenaState()
    reached: dict[str, set[str]] = {"BLU": set(), "RED": set()}
    days, rows = [], []
    for lines in reader.arena_lines_by_decision():
        for line in lines:
            if line.kind == "start":
                state, reached = ArenaState(), {"BLU": set(), "RED": set()}
            state.update(line)
            if line.kind == "army" and line["tag"] in reached:
                _reach(reached[line["tag"]], line.fields, "RED" if line["tag"] == "BLU" else "BLU")
        days.append(state.h / 24.0)
        rows.append(state_features(state, side, reached))
    first = ArenaState.from_lines([r.line for r in reader.log_records[:8]])
    group = f"{first.arena}:{first.seed}" if first.arena is not None else f"{manifest.arena}:{manifest.id}"
    return Game(
        source,
        outcome,
        side,
        group,
        np.asarray(days, np.float64),
        np.asarray(rows, np.float32).reshape(len(rows), len(FEATURES)),
    )


@dataclass
class ValueData:
    """The games a value model trains on and is scored on."""

    data_dir: str
    train: list[Game]
    val: list[Game]
    held_out_by: str
    """'split' (the sessions' own val split) or 'maps' (a seeded share of the maps)."""
    skipped: list[dict[str, str]] = field(default_factory=list)

    def describe(self) -> dict:
        return {
            "data_dir": self.data_dir,
            "held_out_by": self.held_out_by,
            "train": [[g.id, g.source.decisions] for g in self.train],
            "val": [[g.id, g.source.decisions] for g in self.val],
        }


def value_games(
    data_dir: str | Path,
    sources: tuple[str, ...] = SOURCES,
    layout: str = "cpu",
    val_share: float = 0.25,
    seed: int = 0,
    *,
    need_val: bool = True,
) -> ValueData:
    """Every usable game under `data_dir`, split into train and held-out (see the module docstring).

    UserError when no session has an outcome to learn (no ARENA log, no winner), and, with `need_val`,
    when nothing is left to hold out.
    """
    found = find_sessions(data_dir, tuple(sources), layout)
    games: list[Game] = []
    skipped = list(found.skipped)
    for source in found.train + found.val:
        got = read_game(source)
        if isinstance(got, str):
            log.warning("skipping session %s: %s", source.path, got)
            skipped.append({"path": source.path, "reason": got})
            continue
        games.append(got)
    if not games:
        reasons = sorted({s["reason"] for s in skipped})
        raise UserError(
            f"no session under {data_dir} has an outcome to learn from ({len(skipped)} skipped: "
            f"{'; '.join(reasons[:3]) or 'none found'}); a value model needs sessions whose ARENA log and "
            "manifest say who won, e.g. from `hoi4-arena record-ai`"
        )
    held = [g for g in games if g.source.split == "val"]
    if held:
        return ValueData(str(data_dir), [g for g in games if g.source.split != "val"], held, "split", skipped)
    groups = sorted({g.group for g in games})
    random.Random(seed).shuffle(groups)
    count = round(val_share * len(groups))
    if need_val and val_share > 0 and len(groups) >= 2:
        count = min(max(count, 1), len(groups) - 1)
    val_groups = set(groups[:count])
    data = ValueData(
        str(data_dir),
        [g for g in games if g.group not in val_groups],
        [g for g in games if g.group in val_groups],
        "maps",
        skipped,
    )
    if need_val and not data.val:
        raise UserError(
            f"{data_dir}: {len(games)} game(s) on {len(groups)} map(s), nothing to hold out for the report; "
            "record games on at least two maps (or seeds), or mark some sessions split val in splits.json"
        )
    if not data.train:
        raise UserError(f"{data_dir}: every game is held out; lower --val-share or record more games")
    return data


if __name__ == "__main__":
    try:
        got = value_games(sys.argv[1])
    except UserError as error:
        sys.exit(f"error: {error}")
    print(
        json.dumps({**got.describe(), "outcomes": {g.id: g.outcome for g in got.train + got.val}}, indent=1)
    )
