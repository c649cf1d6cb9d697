"""Run one headless game to its end: who plays each side, who declares, the outcome.

`run_game` is what `hoi4-arena sim-run`, the balance study and the bench call. A side is played by
the game's AI (`ai`), the scripted concentrated offensive (`rush`), or nobody (`idle`: its divisions
stand where they are, unassigned). The declarer is `BLU`, `RED` or `coin` (a fair coin drawn from the
seed); the war is declared at 1936.01.01 00:00.

Try: hoi4-arena sim-run --preset river --seed 3 --ai both --days 200
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import GameLogWriter
from hoi4_arena.maps import ArenaMap, load_arena
from hoi4_arena.maps.model import TAGS
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.rules import Rules
from hoi4_arena.sim.rush import Rush
from hoi4_arena.sim.world import World

PLAYERS = ("ai", "rush", "idle")
PLAYER_KIND = {"ai": "ai", "rush": "scripted"}


@dataclass(frozen=True)
class GameConfig:
    """One headless game."""

    arena: str = ARENA
    """Preset name, preset:seed, or a map folder."""
    seed: int = 0
    """World seed (battle luck, the declarer coin); the map's seed is part of `arena`."""
    blu: str = "ai"
    """Who plays BLU: ai, rush or idle."""
    red: str = "ai"
    """Who plays RED: ai, rush or idle."""
    declarer: str = "coin"
    """BLU, RED or coin."""
    days: int = 365
    """Time limit in game days (a draw when reached)."""
    ai_strength: float = 0.5
    """Strength of the game's AI, 0..1."""

    def __post_init__(self) -> None:
        for side, who in (("BLU", self.blu), ("RED", self.red)):
            if who not in PLAYERS:
                raise UserError(f"{side} must be played by one of {', '.join(PLAYERS)}, not {who!r}")
        if self.declarer not in (*TAGS, "coin"):
            raise UserError(f"declarer must be BLU, RED or coin, not {self.declarer!r}")
        if self.days < 1:
            raise UserError("days must be at least 1")
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError("AI strength must be within 0..1")
        if self.seed < 0:
            raise UserError("seed must be >= 0")

    def declaring_side(self) -> str:
        if self.declarer != "coin":
            return self.declarer
        return TAGS[random.Random(f"declarer-{self.seed}").random() < 0.5]


def make_player(who: str, tag: str, strength: float) -> Any:
    if who == "ai":
        return GameAI(tag, AIConfig(strength=strength))
    if who == "rush":
        return Rush(tag)
    return None


def run_game(
    config: GameConfig,
    *,
    arena: ArenaMap | None = None,
    log_path: str | Path | None = None,
    rules: Rules | None = None,
    cache: bool = True,
) -> dict[str, Any]:
    """Play one game headless to capitulation or the time limit; returns the outcome."""
    arena = arena if arena is not None else load_arena(config.arena)
    writer = GameLogWriter(log_path) if log_path is not None else None
    try:
        world = World(arena, config.seed, max_days=config.days, log=writer, rules=rules, cache=cache)
        players = {
            "BLU": make_player(config.blu, "BLU", config.ai_strength),
            "RED": make_player(config.red, "RED", config.ai_strength),
        }
        for tag, who in (("BLU", config.blu), ("RED", config.red)):
            if who in PLAYER_KIND:
                world.note_player(tag, PLAYER_KIND[who])
        declarer = config.declaring_side()
        world.declare_war(declarer)
        while not world.over:
            # Alternate who decides first each day, so neither side always sees the other's orders.
            for tag in TAGS if world.day % 2 == 0 else TAGS[::-1]:
                if players[tag] is not None:
                    players[tag].update(world)
            world.step(24)
    finally:
        if writer is not None:
            writer.close()
    return outcome(world, config, declarer)


def outcome(world: World, config: GameConfig, declarer: str) -> dict[str, Any]:
    return {
        "arena": world.arena.preset,
        "map_seed": world.arena.seed,
        "seed": world.seed,
        "players": {"BLU": config.blu, "RED": config.red},
        "ai_strength": config.ai_strength,
        "declarer": declarer,
        "winner": world.winner,
        "result": world.end_reason,
        "days": round(world.hour / 24, 2),
        "date": world.date_text(),
        "surrender": {t: round(v, 4) for t, v in world.surrender.items()},
        "casualties": {t: round(v) for t, v in world.casualties.items()},
        "divisions": {t: len(world.divisions_of(t)) for t in TAGS},
        "provinces": {t: sum(1 for c in world.control[1:] if c == t) for t in TAGS},
        "log_lines": len(world.log_lines),
    }
