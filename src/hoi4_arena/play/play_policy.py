"""`hoi4-arena play-policy CKPT OUT --games N`: a checkpoint (or the random policy) plays the game's AI from the screen.

Each game:

1. a worker on a new game: the headless simulator (`--game sim`, virtual clock; with `--peer NAME` a
   station's, started there with the protocol's new_game: cluster/peer_games.py) or the simulator's
   window under a private Xvfb (`--game x11`, wall clock), capturing in the checkpoint's view layout
   (a checkpoint whose layout the worker cannot provide is refused before any game);
2. the match harness (`screen.match.start_match`): the console's fair coin, seeded by the game seed,
   picks who declares; the game speed is set; the game unpaused. Then the worker is armed in match mode;
3. every 200 ms on the worker's clock: capture the views (and the frame the session stores),
   `Observation.from_views`, `policy.act` (the recurrent state carried across the game),
   `tokens_to_events`, `apply(timed=True)`, the applied events into the session,
   `wait_until(t0 + 200 ms)`;
4. it ends when the ARENA log (read by the harness's `MatchLog`, never by the policy) names a winner
   or a draw (the world's time limit, `--max-days`), or after `--max-decisions` (an unfinished game:
   invalid); `finish_match` lets go of everything; the session is closed; one row goes into
   OUT/results.jsonl.

Every game is played by the one runner (`play/runner.py`); this module is play-policy's settings, its
player (`make_player`) and its results rows. A headless run that records nothing (`--no-record`, `--game
sim`, no `--peer` or `--ray`) plays `--lockstep N` games at once over the vector layer
(`play/lockstep.py`, `--workers` processes): one policy call a decision for all of them, the same games
and rows as one after another (`--lockstep 1`).

Seeds: game i plays game seed `--seed + i` (with `--side alternate`: `--seed + i // 2`, BLU for even i,
RED for odd i, so each seed is played from both sides); the policy's sampling generator is seeded per
game from (game seed, side). Same settings, same games, byte for byte (inputs, frames, log).

A `WorkerError` inside a game (a refused input, a window that died) or a crash makes that game invalid
with its reason; the run goes on. Re-running with the same OUT resumes: games already in results.jsonl are
skipped, the settings must match OUT/play.json, and the unfinished session of an interrupted game is
replaced.

Rows (`hoi4_arena.results.GameResult`, read by `hoi4-arena win-rate`): player (the checkpoint's name,
or "random"), side, opponent "ai", arena, seed, winner, valid, reason, and in the extras game, mode,
declarer, days, decisions, session (relative to OUT), setup (`gamelog.setup_milestones` of the side).

Try: hoi4-arena play-policy random runs/random --games 4 --max-days 30 --size 640x360
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.maps.specs import MapEntry, planned_map
from hoi4_arena.play.decoding import Decoding
from hoi4_arena.play.runner import (
    GamePlan,
    RunLimits,
    check_peer_options,
    check_size,
    decisions_per_day,
    game_workers,
    open_station,
    run_games,
    run_maps,
    side_swapped,
    slug,
)
from hoi4_arena.results import GameResult
from hoi4_arena.screen.backends import backend
from hoi4_arena.screen.game import GameRecord, GameSettings, TokenPlayer, TokenPolicy
from hoi4_arena.screen.worker import Worker

log = logging.getLogger(__name__)

SETTINGS = "play.json"
SIDES = ("BLU", "RED", "alternate")
RECORD_HZ = 5.0  # one frame per decision: the recording's frames are the decisions' anchors
RANDOM = "random"
ADDED_SETTINGS = {"reset_memory": 0, "follow_through": False, "max_hold": 0}
"""Settings added after play.json files were first written, with the value the games were played with."""


@dataclass
class PlayConfig(Decoding):
    """Settings of `hoi4-arena play-policy`."""

    checkpoint: str
    """A policy checkpoint (train-bc's last.pt, epoch-NNNN.pt), or the word `random`."""
    out: Path
    """Folder for the sessions, results.jsonl and play.json; re-running with it resumes."""
    games: int
    """How many games to play."""
    arena: str = ARENA
    """Preset name (its map of seed 0), preset:seed, preset:A-B (a game's map seed is its game seed
    wrapped into A..B: A + (seed - A) mod (B - A + 1)) or a map folder, or several comma-separated (e.g.
    plains:0-999,passes:0-999): pairs of games (games, with one --side) cycle over them."""
    seed: int = 0
    """The first game's seed (game i plays seed + i; seed + i // 2 with --side alternate)."""
    side: str = "alternate"
    """The side the policy plays: BLU, RED, or alternate (each seed from both sides, BLU first)."""
    game: str = "sim"
    """sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb, real time."""
    size: tuple[int, int] = (540, 960)
    """The game's screen, WIDTHxHEIGHT on the command line (16:9, e.g. 960x540)."""
    speed: int = 5
    """Game speed 1..5 of the match (5: about a game day per second)."""
    max_days: int = 365
    """The game's time limit in days: a draw when reached."""
    max_decisions: int = 0
    """Stop a game after this many decisions (0: no limit); a game stopped so is unfinished (invalid)."""
    ai_strength: float = 0.5
    """Strength of the game's AI, 0..1."""
    record: bool = True
    """Record each game as a session (source policy) under OUT/<session-id>/."""
    codec: str = "x264"
    """Video codec of the sessions: x264 or ffv1."""
    threads: int = 1
    """Torch CPU threads for the policy (0: torch's default). One decision at a time gains little from
    more, and torch's spinning threads stall badly when the game shares the CPU (x11)."""
    name: str | None = None
    """The player's name in results (default: the checkpoint's folder/stem, or random)."""
    wall_minutes: float = 0.0
    """Start no game after this many wall-clock minutes (0: no limit): a guard, not part of a recipe."""
    ray: str | None = None
    """Play each game as a Ray task: auto (this machine's cluster), local (a Ray started for the run) or
    a head's HOST:PORT (`--ray` alone: auto); the same rows and sessions as without (needs Ray: the
    package's cluster extra). Window games (--game x11) play only on stations: nodes with the
    hoi4_station resource."""
    ray_games: int = 0
    """With --ray: at most this many games at a time (0: the cluster's CPUs)."""
    lockstep: int = 8
    """Headless games that are not recorded (--no-record; not --peer or --ray) play this many at once in
    lockstep, one batched policy call a decision (1: one after another); the same games and rows."""
    workers: int = 0
    """With --lockstep: worker processes that run the games (0: every game in this process)."""
    peer: str | None = None
    """Play each game on this station (a name in the peers file; `serve-worker --game sim` there),
    which starts it with new_game; the same rows and sessions as without. Presets only, not --ray."""
    peers: Path | None = None
    """Peers file for --peer (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for what, value, low in (
            ("--games", self.games, 1),
            ("--seed", self.seed, 0),
            ("--max-days", self.max_days, 1),
            ("--max-decisions", self.max_decisions, 0),
            ("--threads", self.threads, 0),
            ("--ray-games", self.ray_games, 0),
            ("--lockstep", self.lockstep, 1),
            ("--workers", self.workers, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if self.side not in SIDES:
            raise UserError(f"--side must be one of {', '.join(SIDES)}, not {self.side!r}")
        backend(self.game)
        if self.speed not in range(1, 6):
            raise UserError(f"--speed must be 1..5, not {self.speed!r}")
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError(f"--ai-strength must lie in 0..1, not {self.ai_strength!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"--codec must be x264 or ffv1, not {self.codec!r}")
        self.check_decoding(
            "--point, --deterministic, --reset-memory and --follow-through are for a checkpoint: the "
            "random policy only samples, and has no memory"
            if self.checkpoint == RANDOM
            else None
        )
        check_size(self.size)
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        self.entries = run_maps(self.arena)  # malformed entries, unknown presets and bad folders fail now
        self.maps = [entry.spec for entry in self.entries]
        check_peer_options(self.peer, self.ray, self.game, self.maps)

    @property
    def in_lockstep(self) -> bool:
        """Whether the games play `lockstep` at once over the vector layer (a headless run that records
        nothing, on this machine)."""
        return (
            self.lockstep > 1
            and not self.record
            and backend(self.game).headless
            and self.peer is None
            and self.ray is None
        )

    @property
    def mode(self) -> str:
        if self.checkpoint == RANDOM:
            return "random"
        return self.decoding_mode

    @property
    def arena_spec(self) -> str:
        """The maps as both games read them (comma-separated): a bare preset is its map of seed 0, as
        `hoi4-arena sim --preset plains --seed 0` shows it."""
        return ",".join(self.maps)

    def plan(self, index: int) -> tuple[int, str]:
        """Game `index`'s seed and the side the policy plays in it."""
        if self.side == "alternate":
            return side_swapped(index, self.seed)
        return self.seed + index, self.side

    def game_map(self, index: int) -> tuple[MapEntry, str]:
        """Game `index`'s --arena entry and map: the entries in turn pair by pair (game by game with one
        side), a range's map drawn by the game's seed (`maps/specs.py`)."""
        seed, _ = self.plan(index)
        return planned_map(self.entries, index // 2 if self.side == "alternate" else index, seed)


# --- the player -------------------------------------------------------------------------------------


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_player(config: PlayConfig) -> tuple[TokenPolicy, dict[str, Any]]:
    """The player and what identifies it in play.json (the checkpoint's sha256, mode, temperature)."""
    if config.checkpoint == RANDOM:
        from hoi4_arena.play.random_policy import RandomPolicy

        player = RandomPolicy()
        if config.name:
            player.name = config.name
        return player, {"player": player.name, "checkpoint": RANDOM, "mode": "random"}
    from hoi4_arena.play.policy_player import PolicyPlayer

    path = Path(config.checkpoint)
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist (give a checkpoint file, or the word random)")
    player = PolicyPlayer(
        path,
        mode=config.mode,
        temperature=config.temperature,
        name=config.name,
        reset_memory=config.reset_memory,
        follow_through=config.follow_through,
        max_hold=config.max_hold,
    )
    try:
        player.layout.check_screen(config.size)
    except ValueError as error:
        raise UserError(
            f"checkpoint {path} reads view layout {player.layout.name!r}, which a {config.size[1]}x"
            f"{config.size[0]} game cannot provide: {error}; play at a larger --size"
        ) from None
    identity = {
        "player": player.name,
        "checkpoint": str(path),
        "sha256": _file_digest(path),
        "mode": config.mode,
        "temperature": config.temperature if config.mode != "deterministic" else None,
        "reset_memory": config.reset_memory,
        "follow_through": config.follow_through,
        **({"max_hold": config.max_hold} if config.max_hold else {}),
        "layout": player.layout_version,
    }
    return player, identity


def lockstep_of(config: PlayConfig, policy: TokenPolicy) -> Any:
    """The `play.lockstep.Lockstep` of a run that plays in lockstep (`PlayConfig.in_lockstep`), else None."""
    if not config.in_lockstep:
        return None
    from hoi4_arena.play.lockstep import EachGame, Lockstep
    from hoi4_arena.play.policy_player import PolicyGames, PolicyPlayer
    from hoi4_arena.play.random_policy import RandomPolicy
    from hoi4_arena.play.rollout_game import RolloutSettings

    slots = min(config.lockstep, config.games)
    reads = policy.layout is not None
    player = PolicyGames(policy) if isinstance(policy, PolicyPlayer) else EachGame(RandomPolicy, slots)
    settings = RolloutSettings(
        size=config.size,
        # A player that reads no views asks for none, in the cheapest layout (as the runner's TokenPlayer).
        layout=policy.layout.name if reads else "cpu",
        views=reads,
        speed=config.speed,
        max_days=config.max_days,
        max_decisions=config.max_decisions,
    )
    return Lockstep(player, settings, config.ai_strength, games=slots, workers=config.workers)


# --- the run ----------------------------------------------------------------------------------------


def _run_settings(config: PlayConfig, identity: dict[str, Any]) -> dict[str, Any]:
    """What decides the games: a resumed run must have the same (play.json)."""
    return {
        **identity,
        "arena": config.arena,
        "arena_spec": config.arena_spec,
        "seed": config.seed,
        "side": config.side,
        "game": config.game,
        "size": [config.size[1], config.size[0]],
        "speed": config.speed,
        "max_days": config.max_days,
        "max_decisions": config.max_decisions,
        "ai_strength": config.ai_strength,
    }


class _PlayRun:
    """play-policy's games for the runner: the plan of seeds and sides, the token player, the rows."""

    def __init__(
        self,
        config: PlayConfig,
        policy: TokenPolicy,
        identity: dict[str, Any],
        run_id: str,
        station: Any = None,
    ) -> None:
        self.config = config
        self.station = station
        self.policy = policy
        self.identity = identity
        self.run_id = run_id
        self.name = policy.name

    def plan(self, index: int) -> GamePlan:
        seed, side = self.config.plan(index)
        entry, spec = self.config.game_map(index)
        return GamePlan(index, entry.name, spec, seed, side, self.config.speed)

    def workers(self):
        config = self.config
        # A player that reads no views gets the cheapest layout.
        return game_workers(
            config.game,
            config.size,
            self.policy.layout or "cpu",
            max_days=config.max_days,
            ai_strength=config.ai_strength,
            station=self.station,
        )

    def player(self, plan: GamePlan, worker: Worker) -> TokenPlayer:
        return TokenPlayer(self.policy, seed=plan.seed, side=plan.side, speed=plan.speed)

    def game_settings(self, plan: GamePlan, budget_ns: int | None) -> GameSettings:
        return GameSettings(side=plan.side, speed=plan.speed, max_decisions=self.config.max_decisions)

    def session_id(self, plan: GamePlan) -> str:
        return f"{slug(self.name)}-{self.run_id}-g{plan.index:04d}-s{plan.seed}-{plan.side}"

    def recorder_settings(self, plan: GamePlan) -> Any:
        config = self.config
        if not config.record:
            return None
        from hoi4_arena.sessions.recorder import RecorderSettings

        return RecorderSettings(
            hz=RECORD_HZ,
            game_speed=plan.speed,
            source="policy",
            codec=config.codec,
            game="sim",
            side=plan.side,
            after_winner_s=0.0,
            realtime=backend(config.game).realtime,
            extra={
                "play": {
                    **self.identity,
                    "game": plan.index,
                    "seed": plan.seed,
                    "map": plan.spec,  # the ARENA log names only the preset; training's guard needs the seed
                    "run": self.run_id,
                }
            },
        )

    def row(self, plan: GamePlan, record: GameRecord) -> GameResult:
        return GameResult(
            player=self.name,
            side=plan.side,
            winner=record.winner,
            valid=record.valid,
            arena=plan.arena,
            seed=plan.seed,
            opponent="ai",
            reason=record.reason,
            extra={
                "game": plan.index,
                "mode": self.config.mode,
                "declarer": record.declarer,
                "days": record.days,
                "decisions": record.decisions,
                "minutes": round(record.play_ns / 60e9, 4),
                "late": record.late,
                "session": record.session,
                "setup": record.setup,
                "war": record.war,
                # A range's games are named by the preset; the map each played is kept beside it.
                **({"map": plan.spec} if self.config.game_map(plan.index)[0].kind == "range" else {}),
            },
        )


def run_play_policy(config: PlayConfig) -> dict[str, Any]:
    """Play `config.games` games (resuming OUT) and return the summary the command prints."""
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    policy, identity = make_player(config)
    settings = _run_settings(config, identity)
    # The run's id names its sessions: a checkpoint is known by its weights (their sha256), not by its path
    # or its file's provenance (when and where it was written), so the same run in another folder, or the
    # same weights trained again, name their sessions the same.
    named = dict(settings)
    if "sha256" in settings:
        from hoi4_arena.models.checkpoint import weights_sha256

        del named["checkpoint"], named["sha256"]
        named["weights_sha256"] = weights_sha256(policy.policy.state_dict())
    run_id = hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()[:6]
    per_game = math.ceil(config.max_days * decisions_per_day(config.speed))
    limits = RunLimits(
        games=config.games,
        decisions_per_game=min(per_game, config.max_decisions) if config.max_decisions else per_game,
        wall_s=config.wall_minutes * 60,
    )
    # The checkpoint is known by its bytes (sha256): the same file by another path is the same run.
    with open_station(config.peer, config.peers) as station:  # before OUT is touched
        summary = run_games(
            _PlayRun(config, policy, identity, run_id, station),
            config.out,
            settings_file=SETTINGS,
            settings=settings,
            command="play-policy",
            limits=limits,
            progress=config.progress,
            added=ADDED_SETTINGS,
            ignored=("checkpoint",) if "sha256" in settings else (),
            ray=config.ray,
            ray_games=config.ray_games,
            window=not backend(config.game).headless,
            lockstep=lockstep_of(config, policy),
        )
    return {"player": policy.name, "mode": config.mode, **summary, "settings": settings}
