"""The settings of `hoi4-arena collect-pair`: the pair config file (`PairConfig`, read from JSON and checked
field by field, one clear message for each mistake), the command's options (`CollectPairConfig`), and
the plan of the games (`plan_game`: seeds salted by the pair id, sides swapped in each pair).

This module imports neither torch nor numpy: `hoi4-arena --help` builds the command's options from it.

Try: python -c "from hoi4_arena.play.pair_config import game_seed; print(game_seed('ppo-vs-bc', 0))"
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA, TEMPERATURE, temperature_problem
from hoi4_arena.errors import UserError
from hoi4_arena.results import TAGS  # (maps.model would import numpy through the maps package)
from hoi4_arena.screen.backends import backend

KINDS = ("checkpoint", "random", "scripted", "ai")
"""What a player can be: a checkpoint file, or one of the words."""
MODES = ("sample", "point", "deterministic")


# --- the config -------------------------------------------------------------------------------------


def _whole(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
    return value


def _keys(data: Any, cls: type, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise UserError(f"{what} must be a JSON object, not {data!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError(f"{what} has unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return data


@dataclass
class PairPlayer:
    """One player of a pair."""

    player: str
    """A policy checkpoint file, `random`, `scripted` (the scripted player) or `ai` (the game's AI)."""
    side: str
    """The side it plays in the first game (BLU or RED); with swap_sides, game 2k + 1 swaps."""
    name: str | None = None
    """Its name in results (default: the checkpoint's folder/stem, or the kind)."""
    mode: str = "sample"
    """A checkpoint's decoding: sample, point or deterministic (the config's `deterministic` forces it)."""
    temperature: float = TEMPERATURE
    """A checkpoint's sampling temperature."""
    reset_memory: int = 0
    """A checkpoint: its memory starts afresh every N decisions (0: never; `PolicyPlayer`'s)."""
    follow_through: bool = False
    """A checkpoint in point mode: a decision that acts completes its action with the likeliest kinds."""
    max_hold: int = 0
    """A checkpoint: a button or key held down through N decisions is released (0: never)."""
    sha256: str | None = None
    """The checkpoint's expected sha256: a file with other bytes is refused."""
    ai_strength: float = 0.5
    """The game's AI's strength 0..1, for an `ai` player."""

    def __post_init__(self) -> None:
        if not isinstance(self.player, str) or not self.player:
            raise UserError(f"a player must name a checkpoint, random, scripted or ai, not {self.player!r}")
        if self.side not in TAGS:
            raise UserError(f"player {self.player}: side must be BLU or RED, not {self.side!r}")
        if self.mode not in MODES:
            raise UserError(
                f"player {self.player}: mode must be one of {', '.join(MODES)}, not {self.mode!r}"
            )
        if why := temperature_problem(self.temperature):
            raise UserError(f"player {self.player}: temperature {why}")
        if not isinstance(self.ai_strength, int | float) or not 0 <= self.ai_strength <= 1:
            raise UserError(f"player {self.player}: ai_strength must lie in 0..1, not {self.ai_strength!r}")
        for what, value in (("reset_memory", self.reset_memory), ("max_hold", self.max_hold)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UserError(f"player {self.player}: {what} must be a whole number >= 0, not {value!r}")
        if self.follow_through and self.mode != "point":
            raise UserError(f"player {self.player}: follow_through completes the actions of mode point")
        decoding = self.mode != "sample" or self.reset_memory or self.follow_through or self.max_hold
        if self.kind != "checkpoint" and (self.sha256 is not None or decoding):
            raise UserError(f"player {self.player}: sha256, mode and the decoding are for a checkpoint")
        if self.kind == "checkpoint" and not Path(self.player).is_file():
            raise UserError(
                f"unknown player {self.player!r}: not a checkpoint file, nor random, scripted or ai"
            )

    @property
    def kind(self) -> str:
        return self.player if self.player in KINDS[1:] else "checkpoint"

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind != "checkpoint":
            return self.kind
        path = Path(self.player)
        return f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem


@dataclass
class PairSchedule:
    """Which maps the games play, and whether the sides swap."""

    arenas: tuple[str, ...] = (ARENA,)
    """Presets (a bare preset is its map of seed 0), preset:seed, preset:A-B (a game's map seed is its
    game seed wrapped into A..B, maps/specs.py) or map folders, cycled pair by pair."""
    swap_sides: bool = True
    """Games 2k and 2k + 1 play one seed with the players' sides swapped."""


@dataclass
class PairBudget:
    """How much a run plays."""

    games: int = 2
    """At most this many games."""
    minutes: float | None = None
    """At most this much play in all, in minutes of the game's clock (the game that runs it out is cut)."""

    def __post_init__(self) -> None:
        _whole(self.games, "budget.games", 1)
        if self.minutes is not None and (
            isinstance(self.minutes, bool)
            or not isinstance(self.minutes, int | float)
            or not self.minutes > 0
        ):
            raise UserError(f"budget.minutes must be a number > 0 (or left out), not {self.minutes!r}")


@dataclass
class PairConfig:
    """A pair config file: who plays whom, on what, for how long."""

    pair_id: str
    """The pair's name: it salts the game seeds (another id plays other games)."""
    players: tuple[PairPlayer, PairPlayer]
    """The two players, on opposite sides."""
    schedule: PairSchedule = field(default_factory=PairSchedule)
    budget: PairBudget = field(default_factory=PairBudget)
    seed: int = 0
    """The first pair's seed before salting: pair k plays game_seed(pair_id, seed + k)."""
    size: tuple[int, int] = (540, 960)
    """The screen (height, width); in JSON [width, height], e.g. [960, 540]."""
    speed: int = 5
    """Game speed 1..5."""
    max_days: int = 365
    """Each game's time limit in days: a draw when reached."""
    max_decisions: int = 0
    """Stop a game after this many decisions (0: no limit; a game stopped so is invalid)."""
    deterministic: bool = False
    """Evaluation mode: every checkpoint decodes deterministically (argmax), so a game depends only on
    its seed."""
    record: bool = True
    """Record both players' sessions."""
    codec: str = "x264"
    """Session video codec: x264 or ffv1."""

    def __post_init__(self) -> None:
        from hoi4_arena.play.runner import check_size, run_maps

        if not isinstance(self.pair_id, str) or not self.pair_id.strip():
            raise UserError(f"pair_id must be a non-empty name, not {self.pair_id!r}")
        if len(self.players) != 2:
            raise UserError(f"a pair has two players, not {len(self.players)}")
        a, b = self.players
        if a.side == b.side:
            raise UserError(f"both players are on one side ({a.side}): give one BLU and the other RED")
        if a.kind == "ai" and b.kind == "ai":
            raise UserError("both players are the game's AI: at least one must play through the screen")
        if a.label == b.label:
            raise UserError(f"both players are named {a.label!r}: give one of them a name")
        _whole(self.seed, "seed", 0)
        _whole(self.max_days, "max_days", 1)
        _whole(self.max_decisions, "max_decisions", 0)
        if self.speed not in range(1, 6):
            raise UserError(f"speed must be 1..5, not {self.speed!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"codec must be x264 or ffv1, not {self.codec!r}")
        check_size(self.size)
        if any(p.kind == "scripted" for p in self.players) and self.size not in ((540, 960), (1080, 1920)):
            raise UserError("the scripted player's calibration ships for 960x540 and 1920x1080 only")
        if not self.schedule.arenas:
            raise UserError("schedule.arenas needs at least one map")
        self.entries = run_maps(",".join(self.schedule.arenas))  # maps/specs.py: the one rule of --arena

    @classmethod
    def from_dict(cls, data: Any) -> PairConfig:
        data = dict(_keys(data, cls, "the pair config"))
        for key in ("pair_id", "players"):
            if key not in data:
                raise UserError(f"the pair config needs {key!r}")
        players = data["players"]
        if not isinstance(players, list) or len(players) != 2:
            raise UserError(f"players must be a list of two players, not {players!r}")
        made = []
        for i, entry in enumerate(players):
            entry = _keys(entry, PairPlayer, f"players[{i}]")
            if "player" not in entry or "side" not in entry:
                raise UserError(f"players[{i}] needs 'player' and 'side'")
            made.append(PairPlayer(**entry))
        data["players"] = tuple(made)
        schedule = dict(_keys(data.get("schedule", {}), PairSchedule, "schedule"))
        if "arenas" in schedule:
            arenas = schedule["arenas"]
            if isinstance(arenas, str):
                arenas = [arenas]
            if not isinstance(arenas, list) or not all(isinstance(a, str) for a in arenas):
                raise UserError(f"schedule.arenas must be a list of maps, not {arenas!r}")
            schedule["arenas"] = tuple(arenas)
        data["schedule"] = PairSchedule(**schedule)
        data["budget"] = PairBudget(**_keys(data.get("budget", {}), PairBudget, "budget"))
        if "size" in data:
            size = data["size"]
            if not isinstance(size, list) or len(size) != 2 or not all(isinstance(v, int) for v in size):
                raise UserError(f"size must be [width, height], e.g. [960, 540], not {size!r}")
            data["size"] = (size[1], size[0])
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> PairConfig:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as error:
            raise UserError(f"cannot read the pair config {path}: {error.strerror or error}") from None
        except ValueError as error:
            raise UserError(f"{path} is not JSON: {error}") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["size"] = [self.size[1], self.size[0]]
        data["schedule"]["arenas"] = list(self.schedule.arenas)
        data["players"] = [dataclasses.asdict(p) for p in self.players]
        return data


@dataclass
class CollectPairConfig:
    """Settings of `hoi4-arena collect-pair`."""

    config: Path
    """The pair config (JSON): players, schedule, budgets, seed (docs/play.md, "Two players in one world")."""
    out: Path
    """Folder for the frozen players, the games' sessions and manifests, results.jsonl; re-running resumes."""
    threads: int = 1
    """Torch CPU threads per policy (0: torch's default)."""
    barrier_timeout_s: float = 60.0
    """Wall-clock seconds a side waits at the barrier for the other before its game is a disconnect."""
    wall_minutes: float = 0.0
    """Start no game after this many wall-clock minutes (0: no limit): a guard, not part of a recipe."""
    progress: bool = True
    """A line per game on stderr."""
    game: str = "sim"
    """sim: one headless world on a virtual clock; x11: real windows, each side's on its own private Xvfb, each
    driven by its own X11 worker, on the wall clock (both players must play through a screen)."""
    ray: str | None = None
    """Play each game (one world, both sides) as a Ray task: auto (this machine's cluster), local (a Ray
    started for the run) or a head's HOST:PORT (`--ray` alone: auto); the same rows and sessions as
    without (needs Ray: the package's cluster extra). --game sim only."""
    ray_games: int = 0
    """With --ray: at most this many games at a time (0: the cluster's CPUs)."""

    def __post_init__(self) -> None:
        self.config, self.out = Path(self.config), Path(self.out)
        if not backend(self.game).headless and self.ray is not None:
            raise UserError("--ray plays pair games in headless worlds (--game sim), not --game x11")
        _whole(self.threads, "--threads", 0)
        _whole(self.ray_games, "--ray-games", 0)
        if not self.barrier_timeout_s > 0:
            raise UserError(f"--barrier-timeout-s must be > 0, not {self.barrier_timeout_s!r}")
        if not self.wall_minutes >= 0:
            raise UserError(f"--wall-minutes must be >= 0, not {self.wall_minutes!r}")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")


# --- seeds, plans, frozen players ---------------------------------------------------------------------


def game_seed(pair_id: str, base: int) -> int:
    """A game seed salted by the pair id: the same id and base give the same game, another id another."""
    digest = hashlib.sha256(f"hoi4-arena pair {pair_id} {base}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class PairPlan:
    """One game of a pair run."""

    index: int
    spec: str
    seed: int
    sides: dict[str, int]
    """Side -> the index of the player who plays it."""


def plan_game(config: PairConfig, index: int) -> PairPlan:
    k = index // 2 if config.schedule.swap_sides else index
    swap = config.schedule.swap_sides and index % 2 == 1
    sides = {}
    for i, player in enumerate(config.players):
        sides[TAGS[1 - TAGS.index(player.side)] if swap else player.side] = i
    seed = game_seed(config.pair_id, config.seed + k)
    spec = config.entries[k % len(config.entries)].game_map(seed)  # a range's map drawn by the game's seed
    return PairPlan(index, spec, seed, dict(sorted(sides.items())))
