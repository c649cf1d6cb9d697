"""The results file: one JSON row per game, written by record-ai, play-policy and the quickstart; and the
Wilson score interval every win rate is reported with.

A row names the candidate being measured and how its game ended:

    {"player": "scripted", "side": "BLU", "opponent": "ai", "winner": "BLU", "valid": true,
     "arena": "plains", "seed": 3, "strategy": "deep", "declarer": "RED", "reason": "capitulated",
     "days": 141, "session": "sessions/game-0003"}

`winner` is a tag or null for a draw; `outcome` (win, draw, loss) is derived from it and `side`.
Invalid games (`valid: false`: a crash, a desync, a harness fault) are kept in the file with their
`reason` and left out of every rate.

A win rate from a few dozen games is noisy; the Wilson interval stays inside [0, 1] and keeps its
coverage at small n and near 0 or 1, where the textbook normal interval does not.

Try: python -c "from hoi4_arena.results import wilson; print(wilson(56, 100))"
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS

TAGS = ("BLU", "RED")
OUTCOMES = ("win", "draw", "loss")


@dataclass(frozen=True)
class GameResult:
    """One game from the candidate's point of view."""

    player: str
    side: str
    winner: str | None
    valid: bool = True
    arena: str = ""
    seed: int | None = None
    strategy: str = ""
    opponent: str = "ai"
    reason: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def outcome(self) -> str:
        if self.winner is None:
            return "draw"
        return "win" if self.winner == self.side else "loss"

    def to_dict(self) -> dict:
        row = {
            "player": self.player,
            "side": self.side,
            "opponent": self.opponent,
            "winner": self.winner,
            "outcome": self.outcome,
            "valid": self.valid,
            "arena": self.arena,
            "seed": self.seed,
            "strategy": self.strategy,
            "reason": self.reason,
        }
        row.update(self.extra)
        return row

    @classmethod
    def from_dict(cls, row: dict) -> GameResult:
        if not isinstance(row, dict):
            raise ValueError("a result row must be a JSON object")
        for key in ("side", "winner"):
            if key not in row:
                raise ValueError(f"missing field {key!r}")
        side, winner = row["side"], row["winner"]
        if side not in TAGS:
            raise ValueError(f"side must be one of {TAGS}, got {side!r}")
        if winner is not None and winner not in TAGS:
            raise ValueError(f"winner must be one of {TAGS} or null, got {winner!r}")
        known = {
            "player",
            "side",
            "winner",
            "valid",
            "arena",
            "seed",
            "strategy",
            "opponent",
            "reason",
            "outcome",
        }
        result = cls(
            player=str(row.get("player", "candidate")),
            side=side,
            winner=winner,
            valid=bool(row.get("valid", True)),
            arena=str(row.get("arena", "")),
            seed=row.get("seed"),
            strategy=str(row.get("strategy", "") or ""),
            opponent=str(row.get("opponent", "ai")),
            reason=str(row.get("reason", "")),
            extra={k: v for k, v in row.items() if k not in known},
        )
        if "outcome" in row and row["outcome"] != result.outcome:
            raise ValueError(f"outcome {row['outcome']!r} disagrees with side {side} and winner {winner}")
        return result


def append_result(path: Path, result: GameResult) -> None:
    """Append one row and flush it, so a killed run keeps every finished game."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(result.to_dict(), separators=(",", ":")) + "\n")
        out.flush()


def read_results(path: Path) -> list[GameResult]:
    """Every row of a results file; a bad line is a UserError naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such results file")
    rows = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rows.append(GameResult.from_dict(json.loads(line)))
            except (json.JSONDecodeError, ValueError, TypeError) as error:
                raise UserError(f"{path}:{number}: not a result row ({error})") from None
    return rows


def win_record(rows: list[GameResult]) -> dict[str, Any]:
    """A player's record over result rows: wins, draws and losses of the valid games, the win rate with
    its Wilson interval overall and by side, and how many valid games reached each setup milestone
    (`extra["setup"]`, as `gamelog.setup_milestones` gives it) and completed the setup."""
    valid = [r for r in rows if r.valid]
    wins = sum(r.outcome == "win" for r in valid)
    draws = sum(r.outcome == "draw" for r in valid)
    by_side = {
        tag: wilson(
            sum(r.outcome == "win" for r in valid if r.side == tag), sum(r.side == tag for r in valid)
        )
        for tag in TAGS
    }
    setup = {
        step: sum((r.extra.get("setup") or {}).get(step) is not None for r in valid) for step in SETUP_STEPS
    }
    setup["complete"] = sum(bool((r.extra.get("setup") or {}).get("complete")) for r in valid)
    return {
        "games": len(rows),
        "valid": len(valid),
        "invalid": len(rows) - len(valid),
        "wins": wins,
        "draws": draws,
        "losses": len(valid) - wins - draws,
        "win_rate": wilson(wins, len(valid)).to_dict(),
        "by_side": {tag: interval.to_dict() for tag, interval in by_side.items()},
        "setup": setup,
    }


def open_run(
    out: Path,
    settings_file: str,
    settings: dict[str, Any],
    command: str,
    *,
    added: dict[str, Any] | None = None,
    ignored: tuple[str, ...] = (),
) -> dict[int, GameResult]:
    """Create OUT for a resumable run of games, or check that it holds this run; the rows already played,
    by their game index (`extra["game"]`).

    OUT/`settings_file` stores `settings`; a run with other settings in the same folder is refused with a
    message naming them. A setting in `added` that a stored file lacks counts as that value (a setting
    introduced after the file was written); settings in `ignored` are not compared.
    """
    added = added or {}
    stored_path, results_path = out / settings_file, out / "results.jsonl"
    if stored_path.is_file():
        try:
            stored = json.loads(stored_path.read_text())["settings"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UserError(f"{stored_path} is not a {command} settings file ({error})") from None
        changed = [
            f"{k}: {stored.get(k, added.get(k))!r} there, {v!r} now"
            for k, v in settings.items()
            if k not in ignored and stored.get(k, added.get(k)) != v
        ]
        if changed:
            raise UserError(
                f"{out} holds games of other settings ({'; '.join(changed)}); use a new OUT folder"
            )
    elif out.exists() and any(out.iterdir()):
        raise UserError(f"{out} is not empty and holds no {settings_file}: use a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    stored_path.write_text(json.dumps({"settings": settings, "command": command}, indent=1) + "\n")
    done: dict[int, GameResult] = {}
    if results_path.exists():
        for row in read_results(results_path):
            index = row.extra.get("game")
            if not isinstance(index, int):
                raise UserError(f"{results_path}: a row without a game index is not {command}'s")
            done[index] = row
    return done


# --- the Wilson interval -------------------------------------------------------------------------------

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


@dataclass(frozen=True)
class Interval:
    """A proportion with its confidence interval."""

    successes: int
    trials: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.successes / self.trials if self.trials else float("nan")

    def to_dict(self) -> dict:
        return {
            "wins": self.successes,
            "games": self.trials,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
        }


def wilson(successes: int, trials: int, z: float = Z95) -> Interval:
    """The Wilson score interval for `successes` out of `trials` (NaN bounds when there are none)."""
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return Interval(0, 0, float("nan"), float("nan"))
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # At 0 or n successes the bound is exactly 0 or 1; float rounding would leave it a hair off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(successes, trials, low, high)
