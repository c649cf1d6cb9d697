"""`hoi4-arena record-ai OUT`: play and record games without a person, one after another.

`--player scripted` records the scripted player (`players/scripted.py`) against the game's AI;
`--player search` the search player (`players/search.py`: the scripted player whose strategic choices
are made by rollouts on the world, `--search-*`; headless games only);
`--player ai` records the game's AI against itself, watched from one side by the spectator
(`players/spectator.py`), whose popup clicks are the session's inputs. Each game:

1. a worker on a new, paused game: the headless simulator on its virtual clock (`--game sim`: an hour
   of play records in minutes), or the simulator's window under a private Xvfb through the X11
   worker, in real time (`--game x11`, scripted only);
2. the match harness (`screen.match.start_match`): the console's fair coin picks who declares, the
   game speed is set, the game unpaused; then the worker is armed for the player (match mode; setup
   mode while a `--paused-setup` player may still press space);
3. every 200 ms on the worker's clock: the recorder's frame(s) (`--hz`, a multiple of 5), a capture of
   what the player asks for (template crops, the whole frame when it reads the map), its events applied
   timed and stored with their skills, `wait_until` the next decision;
4. the game ends when the ARENA log (read by the harness, never by the player) names a winner or a
   draw; `--after-end` seconds more are recorded (the end panel); the session's manifest gets the
   orders, each annotated with its frame and, from the log, the province and state it aimed at;
5. one row goes into OUT/results.jsonl (`hoi4_arena.results.GameResult`: player, side, opponent,
   winner, valid, arena, seed, strategy, reason, and extras: game, declarer, days, minutes, session,
   speed, what the player saw at the end, setup milestones).

Games come in side-swapped pairs: games 2k and 2k + 1 play seed `--seed + k` on the same map, BLU first,
then RED; pair k plays `--arena`'s entry k mod n (`--arena all`: the seven presets in turn), and the
speed cycles through `--speeds` pair by pair. The one rule for maps (`maps/specs.py`, as in every
command): a bare preset is its map of seed 0; `preset:A-B` gives each pair map seed
A + (pair seed - A) mod (B - A + 1), so `--arena plains:0-999 --seed 0` plays plains:0, plains:1, ...
(what a bare preset meant here before: map seed = game seed). Rows name a range's games by the preset
and the concrete map in `map`, as the manifest's `record_ai.map` does. `--minutes`
is the play time to record in all (on the game's clock; the game that runs it out is cut, invalid);
`--games` caps the number of games. A game that fails (a worker error) is kept as invalid with its
reason, and the run goes on. Ctrl+C keeps the finished games; re-running with the same OUT and settings
resumes, skipping them and replaying the interrupted one.

`--intent-policy CKPT` (a checkpoint of train-bc --skills) records the scripted player choosing the
intents and the policy carrying them out (`players/intent_player.py`): sessions `intent-g...` of source
`policy`, whose manifest's player summary counts the decisions of each intent.

Every game is played by the one runner (`play/runner.py`); this module is record-ai's settings, its
players (`make_player`) and its results rows.

Try: hoi4-arena record-ai runs/scripted --player scripted --arena all --games 7 --minutes 60
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA, BARE_MAP_SEED
from hoi4_arena.errors import UserError
from hoi4_arena.maps.specs import planned_map
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
from hoi4_arena.players.search import SEARCH_FIELDS, SearchOptions, SearchPlayer
from hoi4_arena.results import GameResult, read_results
from hoi4_arena.screen.backends import backend
from hoi4_arena.screen.game import GameRecord, GameSettings, sampling_seed
from hoi4_arena.screen.worker import Worker
from hoi4_arena.sessions.splits import SPLITS_FILE

log = logging.getLogger(__name__)

SETTINGS = "record-ai.json"
PLAYERS = ("scripted", "ai", "search")


@dataclass
class RecordAIConfig(SearchOptions):
    """Settings of `hoi4-arena record-ai` (with --player search, the search's `--search-*`:
    `players.search.SearchOptions`)."""

    out: Path
    """Folder for the session folders, results.jsonl and record-ai.json; re-running with it resumes."""
    player: str = "scripted"
    """scripted: the scripted player against the game's AI; ai: the game's AI on both sides; search: the
    scripted player with its strategic choices searched by world rollouts (docs/search.md)."""
    minutes: float | None = None
    """Play time to record in all, in minutes of the game's clock; the game that runs it out is cut."""
    games: int | None = None
    """How many games at most (at least one of --minutes and --games is needed)."""
    arena: str = ARENA
    """Preset (its map of seed 0), preset:seed, preset:A-B (pair k's map seed is its game seed wrapped
    into A..B: A + (seed + k - A) mod (B - A + 1)), a map folder, `all` (the presets in turn; all:A-B
    each with that range), or several comma-separated (e.g. plains:0-999,passes:0-999): pairs of games
    cycle over them."""
    seed: int = 0
    """The first pair's seed: games 2k and 2k + 1 play seed + k, from BLU and from RED."""
    speeds: tuple[int, ...] = (5,)
    """Game speeds 1..5, one per game in turn."""
    game: str = "sim"
    """sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb, real time."""
    size: tuple[int, int] = (540, 960)
    """The game's screen, WIDTHxHEIGHT on the command line; the simulator's calibration ships for 960x540
    and 1920x1080."""
    codec: str = "x264"
    """Session video: x264 (CRF 18, 4:4:4) or ffv1 (lossless)."""
    record: bool = True
    """Record each game as a session; --no-record plays the games for their results rows only."""
    hz: int = 5
    """Frames a second recorded: 5 (one per decision) or a multiple of it."""
    max_days: int = 365
    """The game's time limit in days: a draw when reached."""
    ai_strength: float = 0.5
    """Strength of the game's AI, 0..1."""
    paused_setup: bool = False
    """The scripted player pauses (space) for its setup and unpauses to run the plan."""
    after_end_s: float = 2.0
    """Seconds recorded after the log names the winner (the end panel)."""
    think_s: tuple[float, float] = (0.1, 0.4)
    """The scripted player's pause between seeing what to do and starting to move, seconds (low, high)."""
    press_delay_s: tuple[float, float] = (0.25, 0.45)
    """The scripted player's rest between arriving on a target and pressing, seconds (low, high)."""
    first: str | None = None
    """A policy checkpoint that plays each game's opening before the scripted player takes over
    (corrections: `players/handover.py`)."""
    handover: tuple[int, int] = (0, 150)
    """With --first: the decision of the handover, drawn per game uniformly from this range."""
    intent_policy: str | None = None
    """A checkpoint of train-bc --skills that carries out the intents the scripted player chooses
    (players/intent_player.py); the sessions are the policy's (source policy)."""
    wall_minutes: float = 0.0
    """Start no game after this many wall-clock minutes (0: no limit): a guard, not part of a recipe."""
    ray: str | None = None
    """Play each game as a Ray task: auto (this machine's cluster), local (a Ray started for the run) or
    a head's HOST:PORT (`--ray` alone: auto); the same rows and sessions as without (needs Ray: the
    package's cluster extra). Window games (--game x11) play only on stations: nodes with the
    hoi4_station resource."""
    ray_games: int = 0
    """With --ray: at most this many games at a time (0: the cluster's CPUs)."""
    peer: str | None = None
    """Play each game on this station (a name in the peers file; `serve-worker --game sim` there),
    which starts it with new_game; the same rows and sessions as without. Presets only, not --ray."""
    peers: Path | None = None
    """Peers file for --peer (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""
    hold_out: int = 0
    """Hold out the last N valid games for validation: OUT/splits.json marks their sessions split val
    (train-bc's held-out metrics), written again as each run ends; 0: none."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.player not in PLAYERS:
            raise UserError(f"--player must be scripted, ai or search, not {self.player!r}")
        if not backend(self.game).headless and self.player == "ai":
            raise UserError(
                "--player ai runs headless only (--game sim): the window harness plays one side against "
                "the AI"
            )
        if self.player == "search" and (not backend(self.game).headless or self.peer is not None):
            raise UserError(
                "--player search reads the world of the game it plays: headless local games only "
                "(--game sim, no --peer)"
            )
        self.check_search(self.player == "search", min(self.speeds or (5,)), "use it with --player search")
        if self.minutes is None and self.games is None:
            raise UserError("give --minutes (play time to record) or --games (how many), or both")
        if self.minutes is not None and not (
            isinstance(self.minutes, int | float) and 0 < self.minutes <= 10**6
        ):
            raise UserError(f"--minutes must be positive, not {self.minutes!r}")
        for what, value, low in (
            ("--games", self.games, 1),
            ("--seed", self.seed, 0),
            ("--max-days", self.max_days, 1),
            ("--ray-games", self.ray_games, 0),
            ("--hold-out", self.hold_out, 0),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if self.hold_out and not self.record:
            raise UserError("--hold-out holds out recorded sessions: not with --no-record")
        if not self.speeds or any(s not in range(1, 6) for s in self.speeds):
            raise UserError(f"--speeds must be game speeds 1..5 (e.g. 5, or 3,5), not {self.speeds!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"--codec must be x264 or ffv1, not {self.codec!r}")
        if self.hz not in (5, 10, 15, 20, 30, 60):
            raise UserError(
                f"--hz must be 5, 10, 15, 20, 30 or 60 (a multiple of the 5 Hz decisions), not {self.hz!r}"
            )
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError(f"--ai-strength must lie in 0..1, not {self.ai_strength!r}")
        if not 0 <= self.after_end_s <= 60:
            raise UserError(f"--after-end must lie in 0..60 seconds, not {self.after_end_s!r}")
        for what, bounds in (("--think", self.think_s), ("--press-delay", self.press_delay_s)):
            if len(tuple(bounds)) != 2 or not 0 <= bounds[0] <= bounds[1] <= 5:
                raise UserError(f"{what} must be LOW-HIGH seconds with 0 <= LOW <= HIGH <= 5, not {bounds!r}")
        self.think_s, self.press_delay_s = tuple(self.think_s), tuple(self.press_delay_s)
        self.handover = tuple(self.handover)
        if len(self.handover) != 2 or not 0 <= self.handover[0] <= self.handover[1]:
            raise UserError(
                f"--handover must be LOW-HIGH decisions with 0 <= LOW <= HIGH, not {self.handover!r}"
            )
        if self.first is not None:
            if self.player != "scripted":
                raise UserError("--first hands each game over to the scripted player: use --player scripted")
            if self.paused_setup:
                raise UserError(
                    "--first and --paused-setup exclude each other: the policy's opening runs the game"
                )
            if not Path(self.first).is_file():
                raise UserError(f"--first {self.first}: no such checkpoint file")
        if self.intent_policy is not None:
            if self.player != "scripted" or self.first is not None or self.paused_setup:
                raise UserError(
                    "--intent-policy plays the scripted player's intents through a policy: use it with "
                    "--player scripted, without --first and --paused-setup"
                )
            if not Path(self.intent_policy).is_file():
                raise UserError(f"--intent-policy {self.intent_policy}: no such checkpoint file")
        check_size(self.size, "e.g. 960x540, 1920x1080")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        self.maps = run_maps(self.arena)
        check_peer_options(self.peer, self.ray, self.game, [entry.spec for entry in self.maps])
        from hoi4_arena.players.templates import sim_rules

        sim_rules(self.size)  # no calibration for this size: refused now, with the command that makes it

    def plan(self, index: int) -> GamePlan:
        """Game `index`'s map, seed, side and speed.

        Games come in side-swapped pairs, as play-policy plays them: games 2k and 2k + 1 play seed
        `seed + k` on the same map and speed, BLU first, so a side's advantage cancels within a pair; pair
        k plays --arena's entry k mod n, a range's map drawn by the pair's seed (`maps/specs.py`).
        """
        pair = index // 2
        seed, side = side_swapped(index, self.seed)
        entry, spec = planned_map(self.maps, pair, seed)
        return GamePlan(index, entry.name, spec, seed, side, self.speeds[pair % len(self.speeds)])

    def settings(self) -> dict[str, Any]:
        """What decides the games: a resumed run must have the same (record-ai.json)."""
        data = asdict(self)
        for key in (
            "out",
            "progress",
            "minutes",
            "games",
            "wall_minutes",
            "ray",
            "ray_games",
            "peer",
            "peers",
            "record",
            "hold_out",
        ):
            data.pop(key)
        data["size"] = [self.size[1], self.size[0]]
        data["speeds"] = list(self.speeds)
        data["handover"] = list(self.handover)
        data["think_s"], data["press_delay_s"] = list(self.think_s), list(self.press_delay_s)
        # Settings left at their defaults are left out: runs recorded before they existed resume as they were.
        if self.first is None:
            data.pop("first")
            data.pop("handover")
        if self.intent_policy is None:
            data.pop("intent_policy")
        for key in SEARCH_FIELDS:
            data.pop(key)
        data.update(self.search_settings(self.player == "search"))
        for key in ("think_s", "press_delay_s"):
            if tuple(data[key]) == RecordAIConfig.__dataclass_fields__[key].default:
                data.pop(key)
        if any(entry.kind == "bare" for entry in self.maps):
            # A bare preset meant the game seed's map before the one rule (maps/specs.py): a run recorded
            # so lacks this key and is refused, not resumed on other maps; --arena preset:0-N replays it.
            data["bare_map_seed"] = BARE_MAP_SEED
        return data


# --- the players ------------------------------------------------------------------------------------


def make_player(
    config: RecordAIConfig,
    seed: int,
    cursor: tuple[int, int, tuple[int, int]],
    first: Any = None,
    side: str = "BLU",
    speed: int = 5,
    intent_policy: Any = None,
    world_of: Any = None,
    score: Any = None,
):
    """The player of one game: the scripted player, the search player (`world_of` returns the game's
    world and AIs), the AI game's spectator, or -- with `first` (a
    `PolicyPlayer`) -- the policy handing over to the scripted player, or -- with `intent_policy` -- the
    policy carrying out the scripted player's intents."""
    from hoi4_arena.players.templates import sim_rules

    rules = sim_rules(config.size)
    if config.player == "ai":
        from hoi4_arena.players.spectator import Spectator

        return Spectator(rules, seed, cursor)
    from hoi4_arena.players.hand import HandConfig
    from hoi4_arena.players.scripted import PlayerConfig, ScriptedPlayer

    settings = PlayerConfig(
        paused_setup=config.paused_setup,
        think_s=config.think_s,
        hand=HandConfig(press_delay_s=config.press_delay_s),
    )
    if config.player == "search":
        options = {} if score is None else {"score": score}
        return SearchPlayer(
            rules, seed, world_of, config.search_config(min(config.speeds)), settings, cursor, **options
        )
    scripted = ScriptedPlayer(rules, seed, settings, cursor)
    if intent_policy is not None:
        from hoi4_arena.players.intent_player import IntentPlayer

        intent_policy.reset(sampling_seed(seed, side))
        return IntentPlayer(intent_policy, scripted, speed)
    if first is None:
        return scripted
    from hoi4_arena.players.handover import HandoverPlayer, draw_handover

    first.reset(sampling_seed(seed, side))
    return HandoverPlayer(first, scripted, draw_handover(seed, side, *config.handover), speed)


def load_first(config: RecordAIConfig) -> Any:
    """The --first checkpoint as a player, decoded as the quickstart plays (each move on its likeliest
    point, actions followed through, the memory renewed every training window), or None."""
    if config.first is None:
        return None
    from hoi4_arena.play.policy_player import PolicyPlayer

    player = PolicyPlayer(config.first, mode="point", follow_through=True)
    if player.layout.name != "cpu":
        raise UserError(
            f"--first {config.first} reads view layout {player.layout.name!r}; record-ai captures 'cpu'"
        )
    player.reset_memory = int(player.checkpoint.extra.get("train_config", {}).get("window", 0))
    return player


def load_intent_policy(config: RecordAIConfig) -> Any:
    """The --intent-policy checkpoint as a player given an intent each decision (decoded as --first), or
    None; a checkpoint trained without --skills is refused."""
    if config.intent_policy is None:
        return None
    from hoi4_arena.play.policy_player import PolicyPlayer

    player = PolicyPlayer(config.intent_policy, mode="point", follow_through=True, intents=True)
    if not player.config.intents:
        raise UserError(
            f"--intent-policy {config.intent_policy} was trained without --skills: it takes no intent "
            "(play it with play-policy, or record corrections with --first)"
        )
    if player.layout.name != "cpu":
        raise UserError(
            f"--intent-policy {config.intent_policy} reads view layout {player.layout.name!r}; "
            "record-ai captures 'cpu'"
        )
    player.reset_memory = int(player.checkpoint.extra.get("train_config", {}).get("window", 0))
    return player


# --- the run ----------------------------------------------------------------------------------------


class _RecordRun:
    """record-ai's games for the runner: the plan of maps, seeds, sides and speeds, the players, the rows."""

    def __init__(
        self, config: RecordAIConfig, first: Any, intent_policy: Any = None, station: Any = None
    ) -> None:
        self.config = config
        self.station = station
        self.first = first
        self.intent_policy = intent_policy
        self.name = config.player
        self.score = None
        if config.player == "search" and config.search_value is not None:
            # torch: the state value is loaded only when --search-value is given
            from hoi4_arena.training.state_value import load_state_value, world_value

            self.score = world_value(load_state_value(config.search_value))

    def plan(self, index: int) -> GamePlan:
        return self.config.plan(index)

    def workers(self):
        config = self.config
        return game_workers(
            config.game,
            config.size,
            "cpu",
            max_days=config.max_days,
            ai_strength=config.ai_strength,
            ai_both=config.player == "ai",
            player_kind="scripted" if config.player in ("scripted", "search") else None,
            station=self.station,
        )

    def player(self, plan: GamePlan, worker: Worker) -> Any:
        rgba, hotspot = worker.pointer_image()
        cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
        game = getattr(worker, "game", None)  # the search player's privileged view of the world
        return make_player(
            self.config,
            plan.seed,
            cursor,
            self.first,
            plan.side,
            plan.speed,
            self.intent_policy,
            world_of=None if game is None else (lambda: (game.world, game.ais)),
            score=self.score,
        )

    def game_settings(self, plan: GamePlan, budget_ns: int | None) -> GameSettings:
        return GameSettings(
            side=plan.side,
            speed=plan.speed,
            spec=plan.spec,
            hz=self.config.hz,
            after_end_s=self.config.after_end_s,
            budget_ns=budget_ns,
        )

    def session_id(self, plan: GamePlan) -> str:
        kind = self.config.player if self.first is None else "handover"
        if self.intent_policy is not None:
            kind = "intent"
        return f"{kind}-g{plan.index:04d}-{slug(Path(plan.arena).name, 'map')}-s{plan.seed}-{plan.side}"

    def recorder_settings(self, plan: GamePlan) -> Any:
        from hoi4_arena.sessions.recorder import RecorderSettings

        config = self.config
        if not config.record:
            return None
        source = "scripted" if config.player == "search" else config.player  # a session's sources
        return RecorderSettings(
            hz=float(config.hz),
            game_speed=plan.speed,
            source=source if self.intent_policy is None else "policy",
            codec=config.codec,
            game="sim",
            side=plan.side,
            after_winner_s=3600.0,
            realtime=backend(config.game).realtime,
            extra={
                "record_ai": {
                    "game": plan.index,
                    "seed": plan.seed,
                    "map": plan.spec,
                    "player": config.player,
                }
            },
        )

    def row(self, plan: GamePlan, record: GameRecord) -> GameResult:
        config = self.config
        return GameResult(
            player=config.player if self.intent_policy is None else "intent-policy",
            side=plan.side,
            winner=record.winner,
            valid=record.valid,
            arena=plan.arena,
            seed=plan.seed,
            strategy=record.strategy.get("label", "ai" if config.player == "ai" else ""),
            opponent="ai",
            reason=record.reason,
            extra={
                "game": plan.index,
                "map": plan.spec,
                "speed": plan.speed,
                "declarer": record.declarer,
                "days": record.days,
                "minutes": round(record.play_ns / 60e9, 4),
                "decisions": record.decisions,
                "late": record.late,
                "seen": record.seen,
                "orders": sum(1 for o in record.orders if o["order"] in ("front", "offensive", "execute")),
                "session": record.session,
                "setup": record.setup,
                "war": record.war,
                **({"handover": record.handover} if self.first is not None else {}),
                **({"intent_policy": self.intent_policy.name} if self.intent_policy is not None else {}),
                # The search's plan as it chose it (kind, activation delay, replanning period): the
                # strategy label alone does not tell which candidate won.
                **({"plan": _plan(record.strategy)} if config.player == "search" else {}),
            },
        )


def _plan(strategy: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in strategy.items() if key != "label"}


def run_record_ai(config: RecordAIConfig) -> dict[str, Any]:
    """Play and record games (resuming OUT); the summary the command prints."""
    limits = RunLimits(
        games=config.games,
        budget_ns=None if config.minutes is None else round(config.minutes * 60e9),
        decisions_per_game=int(config.max_days * decisions_per_day(min(config.speeds))),
        wall_s=config.wall_minutes * 60,
    )
    first, intent_policy = load_first(config), load_intent_policy(config)
    with open_station(config.peer, config.peers) as station:  # before OUT is touched
        summary = run_games(
            _RecordRun(config, first, intent_policy, station),
            config.out,
            settings_file=SETTINGS,
            settings=config.settings(),
            command="record-ai",
            limits=limits,
            progress=config.progress,
            ray=config.ray,
            ray_games=config.ray_games,
            window=not backend(config.game).headless,
        )
    held_out = {}
    if config.hold_out:
        try:
            held_out = {"held_out": hold_out_last(config.out, config.hold_out)}
        except UserError as error:
            log.warning("%s; no splits.json written", error)
            held_out = {"held_out": []}
    return {"player": config.player, **summary, **held_out, "settings": config.settings()}


def hold_out_last(folder: Path, games: int) -> list[str]:
    """Mark the sessions of the last `games` valid games in `folder`'s results.jsonl split val
    (`folder`/splits.json, written anew); their ids. Refused when that would leave nothing to train on."""
    rows = read_results(folder / "results.jsonl")
    sessions = [row.extra["session"] for row in rows if row.valid and row.extra.get("session")]
    if len(sessions) <= games:
        raise UserError(f"only {len(sessions)} valid games recorded in {folder}: too few to hold out {games}")
    held_out = sessions[-games:]
    (folder / SPLITS_FILE).write_text(json.dumps(dict.fromkeys(held_out, "val"), indent=2) + "\n")
    return held_out
