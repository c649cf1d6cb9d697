"""`hoi4-arena play-policy CKPT OUT --games N`: a checkpoint (or the random policy) plays the game's AI from the screen.

Each game:

1. a worker on a new game: the headless simulator (`--game sim`, virtual clock) or the simulator's
   window under a private Xvfb (`--game x11`, wall clock), capturing in the checkpoint's view layout
   (a checkpoint whose layout the worker cannot provide is refused before any game);
2. the match harness (`screen.match.start_match`): the console's fair coin, seeded by the game seed,
   picks who declares; the game speed is set; the game unpaused. Then the worker is armed in match mode;
3. every 200 ms on the worker's clock: record a frame (the session's recorder), capture the views,
   `Observation.from_views`, `policy.act` (the recurrent state carried across the game),
   `tokens_to_events`, `apply(timed=True)`, the applied events into the session,
   `wait_until(t0 + 200 ms)`;
4. it ends when the ARENA log (read by the harness's `MatchLog`, never by the policy) names a winner
   or a draw (the world's time limit, `--max-days`), or after `--max-decisions` (an unfinished game:
   invalid); `finish_match` lets go of everything; the session is closed; one row goes into
   OUT/results.jsonl.

Seeds: game i plays game seed `--seed + i` (with `--side alternate`: `--seed + i // 2`, BLU for even i,
RED for odd i, so each seed is played from both sides); the policy's sampling generator is seeded per
game from (game seed, side). Same settings, same games, byte for byte (inputs, frames, log).

A `WorkerError` inside a game (a refused input, a window that died) makes that game invalid with its
reason; the run goes on. Re-running with the same OUT resumes: games already in results.jsonl are
skipped, the settings must match OUT/play.json, and the unfinished session of an interrupted game is
replaced.

Rows (`evaluation.results.GameResult`, read by `hoi4-arena win-rate`): player (the checkpoint's name,
or "random"), side, opponent "ai", arena, seed, winner, valid, reason, and in the extras game, mode,
declarer, days, decisions, session (relative to OUT), setup (`gamelog.setup_milestones` of the side).

Try: hoi4-arena play-policy random runs/random --games 4 --max-days 30 --size 640x360
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import setup_milestones
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.presets import PRESETS
from hoi4_arena.results import GameResult, append_result, open_run, win_record
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.match import MatchConfig, MatchLog, finish_match, start_match
from hoi4_arena.screen.tokens import DECISION_NS, tokens_to_events
from hoi4_arena.screen.worker import CaptureRequest, Worker, WorkerError
from hoi4_arena.sim.headless import MIN_SIZE, arena_of

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"
SETTINGS = "play.json"
GAMES = ("sim", "x11")
SIDES = ("BLU", "RED", "alternate")
HOURS_PER_SECOND = (1, 3, 6, 12, 24)  # the game speeds of HOI4 and the simulator (sim/clock.py)
RECORD_HZ = 5.0  # one frame per decision: the recording's frames are the decisions' anchors
RANDOM = "random"
ADDED_SETTINGS = {"reset_memory": 0, "follow_through": False}
"""Settings added after play.json files were first written, with the value the games were played with."""


class Player(Protocol):
    """What the decision loop plays: the checkpoint (`PolicyPlayer`) or the random policy."""

    name: str
    layout: ViewLayout | None
    """The view layout it reads, or None when it reads no views."""

    def describe(self) -> dict[str, Any]: ...

    def reset(self, seed: int) -> None: ...

    def decide(
        self, views: dict[str, np.ndarray] | None, speed: int, pointer: tuple[int, int]
    ) -> np.ndarray: ...


@dataclass
class PlayConfig:
    """Settings of `hoi4-arena play-policy`."""

    checkpoint: str
    """A policy checkpoint (train-bc's last.pt, epoch-NNNN.pt), or the word `random`."""
    out: Path
    """Folder for the sessions, results.jsonl and play.json; re-running with it resumes."""
    games: int
    """How many games to play."""
    arena: str = "plains"
    """Preset name, preset:seed or a map folder (a bare preset is its map of seed 0)."""
    seed: int = 0
    """The first game's seed (game i plays seed + i; seed + i // 2 with --side alternate)."""
    side: str = "alternate"
    """The side the policy plays: BLU, RED, or alternate (each seed from both sides, BLU first)."""
    point: bool = False
    """Put each move on its likeliest spot (the pointer distribution's argmax); kinds stay sampled."""
    deterministic: bool = False
    """Argmax everywhere: the likeliest kind, and each move on its likeliest spot."""
    temperature: float = 1.0
    """Sampling temperature of the kinds (and, without --point, of the pointer)."""
    reset_memory: int = 0
    """Start the policy's memory afresh every N decisions, as train-bc's windows of N do (0: never)."""
    follow_through: bool = False
    """With --point: once a decision acts, its later slots take their likeliest kinds (a multi-token action
    is completed, not sampled token by token)."""
    game: str = "sim"
    """sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb, real time."""
    size: tuple[int, int] = (540, 960)
    """The game's screen (height, width), 16:9 (--size 960x540)."""
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
            ("--reset-memory", self.reset_memory, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if self.side not in SIDES:
            raise UserError(f"--side must be one of {', '.join(SIDES)}, not {self.side!r}")
        if self.game not in GAMES:
            raise UserError(f"--game must be one of {', '.join(GAMES)}, not {self.game!r}")
        if self.speed not in range(1, 6):
            raise UserError(f"--speed must be 1..5, not {self.speed!r}")
        if not (isinstance(self.temperature, int | float) and 0 <= self.temperature <= 100):
            raise UserError(f"--temperature must lie in 0..100, not {self.temperature!r}")
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError(f"--ai-strength must lie in 0..1, not {self.ai_strength!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"--codec must be x264 or ffv1, not {self.codec!r}")
        if self.checkpoint == RANDOM and (
            self.point or self.deterministic or self.reset_memory or self.follow_through
        ):
            raise UserError(
                "--point, --deterministic, --reset-memory and --follow-through are for a checkpoint: the "
                "random policy only samples, and has no memory"
            )
        if self.follow_through and self.mode != "point":
            raise UserError("--follow-through completes the actions of --point decoding: give --point too")
        height, width = self.size
        if (
            not (MIN_SIZE[0] <= height <= 4320 and MIN_SIZE[1] <= width <= 7680)
            or abs(width * 9 - height * 16) > 16
        ):
            raise UserError(
                f"--size {width}x{height} must be 16:9 and within {MIN_SIZE[1]}x{MIN_SIZE[0]}..7680x4320 "
                "(e.g. 960x540, 640x360)"
            )
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        arena_of(self.arena_spec)  # an unknown preset or a bad map folder fails now, with its message

    @property
    def mode(self) -> str:
        if self.checkpoint == RANDOM:
            return "random"
        return "deterministic" if self.deterministic else "point" if self.point else "sample"

    @property
    def arena_spec(self) -> str:
        """The map as both games read it: `hoi4-arena sim --preset plains --seed S` would take map seed S."""
        name = self.arena
        return f"{name}:0" if name in PRESETS else name

    def plan(self, index: int) -> tuple[int, str]:
        """Game `index`'s seed and the side the policy plays in it."""
        if self.side == "alternate":
            return self.seed + index // 2, TAGS[index % 2]
        return self.seed + index, self.side

    @property
    def decisions_per_day(self) -> float:
        return 24 / (HOURS_PER_SECOND[self.speed - 1] * DECISION_NS / 1e9)


def sampling_seed(game_seed: int, side: str) -> int:
    """The policy's sampling seed for one game: a stream apart from the game's own seeded randomness."""
    return int(np.random.SeedSequence([game_seed, TAGS.index(side), 0x706C6179]).generate_state(1)[0])


# --- the player -------------------------------------------------------------------------------------


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_player(config: PlayConfig) -> tuple[Player, dict[str, Any]]:
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
        "layout": player.layout_version,
    }
    return player, identity


# --- one game ---------------------------------------------------------------------------------------


@dataclass
class GameOutcome:
    """How one game went, from the policy's side."""

    winner: str | None = None
    valid: bool = True
    reason: str = ""
    declarer: str | None = None
    days: int = 0
    decisions: int = 0
    late: int = 0
    """Decision slots of the 200 ms grid skipped because a decision overran (live games only)."""
    setup: dict[str, Any] = field(default_factory=dict)
    session: str | None = None


def play_game(
    worker: Worker,
    player: Player,
    *,
    side: str,
    speed: int,
    seed: int,
    max_decisions: int = 0,
    recorder: Any = None,
    session_id: str | None = None,
    on_decision: Callable[[int, MatchLog], None] | None = None,
) -> GameOutcome:
    """Play one game on `worker` (a new, paused game) and finish it; see the module docstring.

    `recorder` is an unstarted `sessions.recorder.Recorder` or None; `session_id` names its session
    (the manifest's id). A `WorkerError` makes the game invalid; anything else propagates after the
    match is finished and the session closed.
    """
    outcome = GameOutcome()
    match_log: MatchLog | None = None
    end = "error: the game did not start"
    try:
        info = worker.attach()
        if player.layout is not None and info.get("layout") != player.layout.version:
            raise UserError(
                f"the worker captures view layout {info.get('layout')!r}, the policy reads "
                f"{player.layout.version!r} ({player.layout.name}); it cannot play this game"
            )
        request = CaptureRequest(views=player.layout is not None)
        # One decision before the match, thrown away: the first call of a model is slow (allocations,
        # kernels), and on a live game that would make the first real decision late.
        capture = worker.capture(request)
        player.reset(0)
        player.decide(capture.views or None, speed, to_lattice(*capture.pointer, capture.size))
        started = start_match(worker, MatchConfig(speed=speed))
        outcome.declarer = started.declarer
        match_log = MatchLog(worker, started.log_offset, started.log_lines)
        if recorder is not None:
            recorder.start(worker, info)
            if session_id is not None:
                recorder.writer.update_manifest(id=session_id)
        worker.arm("match")
        player.reset(sampling_seed(seed, side))
        # Decisions start on a fixed 200 ms grid of the worker's clock (a live game's captures drift
        # otherwise, and a recording is cut into decisions on that grid); a decision that overran its
        # 200 ms skips to the next grid point.
        tick = worker.now_ns()
        while True:
            if recorder is not None:
                stop = recorder.step()  # this instant's frame and log lines into the session
                if stop is not None and stop.startswith("error"):
                    raise WorkerError("recorder", stop.removeprefix("error: "))
            capture = worker.capture(request)
            match_log.poll()
            if match_log.over:
                end = "winner" if match_log.winner is not None else "draw"
                break
            if max_decisions and outcome.decisions >= max_decisions:
                end = "max_decisions"
                outcome.valid = False
                outcome.reason = (
                    f"max_decisions: stopped after {max_decisions} decisions, the game had not ended"
                )
                break
            # The decision's slots count from its capture: a recording cuts decisions at the frames.
            t0 = capture.t_ns
            pointer = to_lattice(*capture.pointer, capture.size)
            tokens = player.decide(capture.views or None, started.speed, pointer)
            events = tokens_to_events(tokens, t0, capture.size, pointer=capture.pointer, source="policy")
            worker.apply(events, timed=True)
            if recorder is not None:
                recorder.add_inputs(events)
            outcome.decisions += 1
            if on_decision is not None:
                on_decision(outcome.decisions, match_log)
            tick += DECISION_NS
            now = worker.now_ns()
            if now > tick:
                missed = (now - tick) // DECISION_NS + 1
                outcome.late += missed
                tick += missed * DECISION_NS
            worker.wait_until(tick)
    except WorkerError as error:
        outcome.valid = False
        outcome.reason = f"worker: {error}"
        end = f"error: {error}"
    except KeyboardInterrupt:
        end = "interrupt"
        raise
    except BaseException as error:
        end = f"error: {type(error).__name__}: {error}"
        raise
    finally:
        with contextlib.suppress(WorkerError):
            finish_match(worker)
        if recorder is not None and recorder.writer is not None and not recorder.writer.closed:
            recorder.close(end)
            outcome.session = str(recorder.folder)
    if match_log is None:  # the match never started
        outcome.setup = setup_milestones([], side)
        return outcome
    state = match_log.state
    outcome.winner = state.winner if outcome.valid else None
    if outcome.valid:
        outcome.reason = "capitulation" if state.winner is not None else f"draw: {state.draw}"
    outcome.days = state.h // 24
    outcome.setup = setup_milestones(match_log.lines, side)
    return outcome


# --- the run ----------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "policy"


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


@contextlib.contextmanager
def _games(config: PlayConfig, layout: ViewLayout | None) -> Iterator[Callable[[int, str], Any]]:
    """A factory of game workers for the run: `open(seed, side)` is a context manager of a `Worker`."""
    layout = layout or ViewLayout.named("cpu")  # a player that reads no views: the cheapest layout
    if config.game == "sim":
        from hoi4_arena.screen.sim_worker import SimWorker

        @contextlib.contextmanager
        def open_sim(seed: int, side: str) -> Iterator[Worker]:
            with SimWorker(
                config.arena_spec,
                seed,
                size=config.size,
                layout=layout,
                player=side,
                ai={other_tag(side): config.ai_strength},
                max_days=config.max_days,
                player_kind="policy",
            ) as worker:
                yield worker

        yield open_sim
        return
    from hoi4_arena.screen.window_games import WindowGames

    with WindowGames(config.size) as windows:

        def open_window(seed: int, side: str):
            return windows.open(
                arena=config.arena_spec,
                seed=seed,
                side=side,
                layout=layout,
                max_days=config.max_days,
                ai_strength=config.ai_strength,
            )

        yield open_window


def summarize(rows: list[GameResult], seconds: float, decisions_now: int, games_now: int) -> dict[str, Any]:
    """The run's record: wins, draws, losses, the win rate with its Wilson interval, setup counts."""
    return {
        **win_record(rows),
        "decisions": sum(int(r.extra.get("decisions", 0)) for r in rows),
        "this_run": {
            "games": games_now,
            "decisions": decisions_now,
            "seconds": round(seconds, 2),
            "decisions_per_s": round(decisions_now / seconds, 1) if seconds > 0 else None,
            "games_per_minute": round(60 * games_now / seconds, 2) if seconds > 0 else None,
        },
    }


def run_play_policy(config: PlayConfig) -> dict[str, Any]:
    """Play `config.games` games (resuming OUT) and return the summary the command prints."""
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    player, identity = make_player(config)
    settings = _run_settings(config, identity)
    # The checkpoint is known by its bytes (sha256): the same file by another path is the same run.
    done = open_run(
        config.out,
        SETTINGS,
        settings,
        "play-policy",
        added=ADDED_SETTINGS,
        ignored=("checkpoint",) if "sha256" in settings else (),
    )
    run_id = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:6]
    results_path = config.out / RESULTS
    todo = [i for i in range(config.games) if i not in done]
    skipped = config.games - len(todo)
    started = time.perf_counter()
    decisions_now = games_now = 0
    interrupted = False
    with _Progress(config, skipped, player.name) as progress, _games(config, player.layout) as open_game:
        for index in todo:
            seed, side = config.plan(index)
            session_id = f"{_slug(player.name)}-{run_id}-g{index:04d}-s{seed}-{side}"
            recorder = None
            if config.record:
                from hoi4_arena.sessions.lock import remove_unfinished
                from hoi4_arena.sessions.recorder import Recorder, RecorderSettings

                folder = config.out / session_id
                remove_unfinished(folder)
                recorder = Recorder(
                    folder,
                    RecorderSettings(
                        hz=RECORD_HZ,
                        game_speed=config.speed,
                        source="policy",
                        codec=config.codec,
                        game="sim",
                        side=side,
                        after_winner_s=0.0,
                        realtime=config.game == "x11",
                        extra={"play": {**identity, "game": index, "seed": seed, "run": run_id}},
                    ),
                )
            progress.start_game(index, seed, side)
            try:
                try:
                    with open_game(seed, side) as worker:
                        outcome = play_game(
                            worker,
                            player,
                            side=side,
                            speed=config.speed,
                            seed=seed,
                            max_decisions=config.max_decisions,
                            recorder=recorder,
                            session_id=session_id,
                            on_decision=progress.decision,
                        )
                except WorkerError as error:  # the game's worker could not be opened or closed
                    outcome = GameOutcome(valid=False, reason=f"worker: {error}")
            except KeyboardInterrupt:
                interrupted = True
                break
            if outcome.session is not None:
                outcome.session = session_id  # relative to OUT: the folder can move
            row = GameResult(
                player=player.name,
                side=side,
                winner=outcome.winner,
                valid=outcome.valid,
                arena=config.arena,
                seed=seed,
                opponent="ai",
                reason=outcome.reason,
                extra={
                    "game": index,
                    "mode": config.mode,
                    "declarer": outcome.declarer,
                    "days": outcome.days,
                    "decisions": outcome.decisions,
                    "late": outcome.late,
                    "session": outcome.session,
                    "setup": outcome.setup,
                },
            )
            append_result(results_path, row)
            done[index] = row
            decisions_now += outcome.decisions
            games_now += 1
            progress.end_game(row)
    seconds = time.perf_counter() - started
    rows = [done[i] for i in sorted(done) if i < config.games]
    return {
        "player": player.name,
        "mode": config.mode,
        "out": str(config.out),
        "results": str(results_path),
        "skipped": skipped,
        "interrupted": interrupted,
        **summarize(rows, seconds, decisions_now, games_now),
        "settings": settings,
    }


class _Progress:
    """Two bars on stderr: games of the run, and decisions of the game being played."""

    def __init__(self, config: PlayConfig, skipped: int, name: str) -> None:
        from hoi4_arena.terminal import progress_bar

        self.config = config
        self.bar = progress_bar() if config.progress else None
        self.skipped = skipped
        self.name = name
        self.record = {"win": 0, "draw": 0, "loss": 0, "invalid": 0}
        per_game = int(np.ceil(config.max_days * config.decisions_per_day))
        self.per_game = min(per_game, config.max_decisions) if config.max_decisions else per_game

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
            self.games = self.bar.add_task(
                f"{self.name}: games", total=self.config.games, completed=self.skipped
            )
            self.decisions = self.bar.add_task("decisions", total=self.per_game)
        return self

    def start_game(self, index: int, seed: int, side: str) -> None:
        if self.bar is not None:
            self.bar.reset(
                self.decisions, total=self.per_game, description=f"game {index} (seed {seed}, {side})"
            )

    def decision(self, count: int, match_log: MatchLog) -> None:
        if self.bar is not None and count % 5 == 0:
            self.bar.update(self.decisions, completed=count)

    def end_game(self, row: GameResult) -> None:
        self.record["invalid" if not row.valid else row.outcome] += 1
        if self.bar is not None:
            record = " ".join(f"{k} {v}" for k, v in self.record.items())
            self.bar.update(self.games, advance=1, description=f"{self.name}: {record}")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
