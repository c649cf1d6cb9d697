"""`hoi4-arena record-ai OUT`: play and record games without a person, one after another.

`--player scripted` records the scripted player (`players/scripted.py`) against the game's AI;
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
5. one row goes into OUT/results.jsonl (`evaluation.results.GameResult`: player, side, opponent,
   winner, valid, arena, seed, strategy, reason, and extras: game, declarer, days, minutes, session,
   speed, what the player saw at the end, setup milestones).

Games come in side-swapped pairs: games 2k and 2k + 1 play seed `--seed + k` on map `PRESET:seed` (a
bare preset; `--arena all` cycles the seven presets pair by pair), BLU first, then RED, and the speed
cycles through `--speeds` pair by pair. `--minutes`
is the play time to record in all (on the game's clock; the game that runs it out is cut, invalid);
`--games` caps the number of games. A game that fails (a worker error) is kept as invalid with its
reason, and the run goes on. Ctrl+C keeps the finished games; re-running with the same OUT and settings
resumes, skipping them and replaying the interrupted one.

Try: hoi4-arena record-ai runs/scripted --player scripted --arena all --games 7 --minutes 60
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, parse_line, setup_milestones
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.presets import PRESETS
from hoi4_arena.results import GameResult, append_result, open_run, win_record
from hoi4_arena.screen.match import MatchConfig, MatchLog, finish_match, start_match
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.sim.headless import MIN_SIZE, arena_of

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"
SETTINGS = "record-ai.json"
PLAYERS = ("scripted", "ai")
GAMES = ("sim", "x11")
DECISION_NS = 200_000_000
ALL = "all"


@dataclass
class RecordAIConfig:
    """Settings of `hoi4-arena record-ai`."""

    out: Path
    """Folder for the session folders, results.jsonl and record-ai.json; re-running with it resumes."""
    player: str = "scripted"
    """scripted: the scripted player against the game's AI; ai: the game's AI on both sides."""
    minutes: float | None = None
    """Play time to record in all, in minutes of the game's clock; the game that runs it out is cut."""
    games: int | None = None
    """How many games at most (at least one of --minutes and --games is needed)."""
    arena: str = "plains"
    """Preset (its map of the game's seed), preset:seed, a map folder, or `all` (the presets in turn)."""
    seed: int = 0
    """The first pair's seed: games 2k and 2k + 1 play seed + k, from BLU and from RED."""
    speeds: tuple[int, ...] = (5,)
    """Game speeds 1..5, one per game in turn."""
    game: str = "sim"
    """sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb, real time."""
    size: tuple[int, int] = (540, 960)
    """The game's screen (height, width); the simulator's calibration ships for 960x540 and 1920x1080."""
    codec: str = "x264"
    """Session video: x264 (CRF 18, 4:4:4) or ffv1 (lossless)."""
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
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.player not in PLAYERS:
            raise UserError(f"--player must be scripted or ai, not {self.player!r}")
        if self.game not in GAMES:
            raise UserError(f"--game must be sim or x11, not {self.game!r}")
        if self.game == "x11" and self.player == "ai":
            raise UserError(
                "--player ai runs headless only (--game sim): the window harness plays one side against "
                "the AI"
            )
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
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
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
        height, width = self.size
        if (
            not (MIN_SIZE[0] <= height <= 4320 and MIN_SIZE[1] <= width <= 7680)
            or abs(width * 9 - height * 16) > 16
        ):
            raise UserError(f"--size {width}x{height} must be 16:9 (e.g. 960x540, 1920x1080)")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        if self.arena != ALL:
            arena_of(self.arena if ":" in self.arena or Path(self.arena).is_dir() else f"{self.arena}:0")
        from hoi4_arena.players.templates import sim_rules

        sim_rules(self.size)  # no calibration for this size: refused now, with the command that makes it

    def plan(self, index: int) -> tuple[str, str, int, str, int]:
        """Game `index`'s (arena name, map spec, seed, side, speed).

        Games come in side-swapped pairs, as play-policy plays them: games 2k and 2k + 1 play seed
        `seed + k` on the same map and speed, BLU first, so a side's advantage cancels within a pair.
        """
        pair = index // 2
        seed = self.seed + pair
        name = PRESETS[pair % len(PRESETS)] if self.arena == ALL else self.arena
        spec = f"{name}:{seed}" if name in PRESETS else name
        return name, spec, seed, TAGS[index % 2], self.speeds[pair % len(self.speeds)]

    def settings(self) -> dict[str, Any]:
        """What decides the games: a resumed run must have the same (record-ai.json)."""
        data = asdict(self)
        for key in ("out", "progress", "minutes", "games"):
            data.pop(key)
        data["size"] = [self.size[1], self.size[0]]
        data["speeds"] = list(self.speeds)
        data["handover"] = list(self.handover)
        data["think_s"], data["press_delay_s"] = list(self.think_s), list(self.press_delay_s)
        # Settings left at their defaults are left out: runs recorded before they existed resume as they were.
        if self.first is None:
            data.pop("first")
            data.pop("handover")
        for key in ("think_s", "press_delay_s"):
            if tuple(data[key]) == RecordAIConfig.__dataclass_fields__[key].default:
                data.pop(key)
        return data


# --- one game ---------------------------------------------------------------------------------------


@dataclass
class GameRecord:
    """How one game went and what was recorded."""

    winner: str | None = None
    valid: bool = True
    reason: str = ""
    declarer: str | None = None
    days: int = 0
    decisions: int = 0
    play_ns: int = 0
    """Game-clock time from the unpause to the end."""
    late: int = 0
    seen: str | None = None
    """What the player saw on the end panel: win, loss, draw (None: it never showed)."""
    strategy: dict[str, Any] = field(default_factory=dict)
    orders: list[dict[str, Any]] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)
    session: str | None = None
    notes: list[str] = field(default_factory=list)
    handover: int | None = None
    """With --first: the decision at which the scripted player took over."""


def make_player(
    config: RecordAIConfig,
    seed: int,
    cursor: tuple[int, int, tuple[int, int]],
    first: Any = None,
    side: str = "BLU",
    speed: int = 5,
):
    """The player of one game: the scripted player, the AI game's spectator, or -- with `first` (a
    `PolicyPlayer`) -- the policy handing over to the scripted player."""
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
    scripted = ScriptedPlayer(rules, seed, settings, cursor)
    if first is None:
        return scripted
    from hoi4_arena.play.play_policy import sampling_seed
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


def play_game(
    worker: Worker,
    player: Any,
    *,
    side: str,
    speed: int,
    spec: str | None = None,
    recorder: Any = None,
    session_id: str | None = None,
    budget_ns: int | None = None,
    after_end_s: float = 2.0,
    hz: int = 5,
    on_decision: Callable[[int], None] | None = None,
) -> GameRecord:
    """Play one game on `worker` (a new, paused game) through `player` and finish it.

    `spec` names the map (for the orders' annotation). `recorder` is an unstarted
    `sessions.recorder.Recorder` or None. The game is cut (invalid) when
    `budget_ns` of play have passed on the worker's clock. A `WorkerError` makes the game invalid;
    anything else propagates after the match is finished and the session closed.
    """
    record = GameRecord()
    match_log: MatchLog | None = None
    end = "error: the game did not start"
    steps = hz // 5
    try:
        info = worker.attach()
        worker = SharedCapture(worker)
        started = start_match(worker, MatchConfig(speed=speed))
        record.declarer = started.declarer
        match_log = MatchLog(worker, started.log_offset, started.log_lines)
        if recorder is not None:
            recorder.start(worker, info)
            if session_id is not None:
                recorder.writer.update_manifest(id=session_id)
        mode = "setup" if player.setup_keys else "match"
        worker.arm(mode)
        tick = start = worker.now_ns()
        ended_at: int | None = None
        while True:
            if mode == "setup" and not player.setup_keys:
                mode = "match"  # the paused setup is over: no more space, Esc or speed keys
                worker.arm(mode)
            request = player.request()
            if recorder is not None:
                request = dataclasses.replace(request, full=True)
            capture = worker.capture(request)
            if recorder is not None:
                _record_step(recorder)  # the same capture: the frame stored is the one the player sees
            match_log.poll()
            now = capture.t_ns
            if match_log.over and ended_at is None:
                ended_at = now
            if ended_at is not None and now - ended_at >= after_end_s * 1e9:
                end = "winner" if match_log.winner is not None else "draw"
                break
            if budget_ns is not None and now - start >= budget_ns and ended_at is None:
                end = "cut"
                record.valid = False
                record.reason = "cut: the --minutes budget ran out during this game"
                break
            before = len(player.orders)
            events = player.decide(capture)
            if events:
                worker.apply(events, timed=True)
                if recorder is not None:
                    recorder.add_inputs(events)
            for order in player.orders[before:]:
                order["frame"] = recorder.frames - 1 if recorder is not None else None
            record.decisions += 1
            if on_decision is not None:
                on_decision(record.decisions)
            for k in range(1, steps):  # the recorder's further frames inside this decision
                worker.wait_until(tick + k * DECISION_NS // steps)
                if recorder is not None:
                    _record_step(recorder)
            tick += DECISION_NS
            now = worker.now_ns()
            if now > tick:  # a live game: a decision that overran skips to the next grid point
                missed = (now - tick) // DECISION_NS + 1
                record.late += missed
                tick += missed * DECISION_NS
            worker.wait_until(tick)
        record.play_ns = worker.now_ns() - start
    except WorkerError as error:
        record.valid = False
        record.reason = f"worker: {error}"
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
        if match_log is not None:
            record.orders = annotate_orders(player.orders, match_log.lines, side, spec)
        if recorder is not None and recorder.writer is not None and not recorder.writer.closed:
            recorder.writer.update_manifest(
                orders=record.orders,
                extra={**recorder.writer.manifest.extra, "player": player.summary()},
            )
            recorder.close(end)
            record.session = str(recorder.folder)
    record.seen = player.outcome
    strategy = getattr(player, "strategy", None)
    record.strategy = strategy.to_dict() | {"label": strategy.label} if strategy is not None else {}
    record.notes = list(getattr(player, "notes", []))
    record.handover = getattr(player, "handover", None)
    if match_log is None:
        record.setup = setup_milestones([], side)
        return record
    state = match_log.state
    if record.valid:
        record.winner = state.winner
        record.reason = "capitulation" if state.winner is not None else f"draw: {state.draw}"
    record.days = state.h // 24
    record.setup = setup_milestones(match_log.lines, side)
    return record


class SharedCapture(Worker):
    """A worker whose last capture serves every request of the same instant that it covers: the player's
    capture and the recorder's frame are one grab (one render on the simulator), and the session
    stores the very frame the player saw. Input, time and arming forget it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._last: Capture | None = None

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        request = request or CaptureRequest()
        last = self._last
        if (
            last is not None
            and not request.views
            and (last.frame is not None or not request.full)
            and all(last.regions.get(name) is not None for name in request.regions)
        ):
            return last
        self._last = self.worker.capture(request)
        return self._last

    def _forget(self) -> None:
        self._last = None

    def apply(self, events: list, timed: bool = False) -> dict:
        self._forget()
        return self.worker.apply(events, timed)

    def wait_until(self, t_ns: int) -> None:
        self._forget()
        self.worker.wait_until(t_ns)

    def arm(self, mode) -> None:
        self._forget()
        self.worker.arm(mode)

    def disarm(self) -> None:
        self._forget()
        self.worker.disarm()

    def release(self) -> None:
        self._forget()
        self.worker.release()

    def attach(self) -> dict:
        return self.worker.attach()

    def status(self) -> dict:
        return self.worker.status()

    def focus(self) -> bool:
        return self.worker.focus()

    def events(self) -> list:
        return self.worker.events()

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        return self.worker.game_log(offset)

    def pointer_image(self):
        return self.worker.pointer_image()

    def now_ns(self) -> int:
        return self.worker.now_ns()

    def telemetry(self) -> dict:
        return self.worker.telemetry()

    def close(self) -> None:
        self._forget()
        self.worker.close()


def _record_step(recorder: Any) -> None:
    stop = recorder.step()  # this instant's frame and log lines into the session
    if stop is not None and stop.startswith("error"):
        raise WorkerError("recorder", stop.removeprefix("error: "))


def annotate_orders(
    orders: list[dict[str, Any]], lines: list[str], side: str, spec: str | None
) -> list[dict[str, Any]]:
    """The player's orders, each with what the game made of it, read from the ARENA log (the harness's
    view, never the player's): a front's enemy; an offensive's plan, its target province, who held the
    target then, and the state it lies in (from the map `spec`, known as a person knows the map).

    Army lines are daily: each offensive takes the next plan of `side`'s army that differs from the one
    before (two offensives drawn within one game day show as the second).
    """
    arena = arena_of(spec) if spec else None
    state = ArenaState()
    armies: list[tuple[Any, str | None]] = []  # (army line, who held its plan's target at that line)
    for text in lines:
        line = parse_line(text)
        if line is None:
            continue
        state.update(line)
        if line.kind == "army" and line["tag"] == side:
            plan = line["plan"]
            armies.append((line, state.control.get(plan[-1]) if plan else None))
    out = []
    at, previous = 0, ()
    for order in orders:
        entry = dict(order)
        if order["order"] == "offensive":
            while at < len(armies) and tuple(armies[at][0]["plan"]) in ((), previous):
                at += 1
            if at < len(armies):
                line, holder = armies[at]
                previous = tuple(line["plan"])
                entry["target"] = _target(arena, previous) | {"held_by": holder, "day": line["h"] // 24}
        elif order["order"] == "front":
            fronts = [line["front"] for line, _ in armies if line["front"]]
            entry["front"] = fronts[0] if fronts else None
        out.append(entry)
    return out


def _target(arena: Any, plan: tuple[int, ...]) -> dict[str, Any]:
    target = plan[-1]
    found: dict[str, Any] = {"province": target, "plan": list(plan)}
    if arena is not None:
        province = arena.provinces[target - 1]
        state = next(s for s in arena.states if s.id == province.state)
        found.update(
            state=state.id,
            state_name=state.name,
            owner=province.owner,
            city=province.city,
            victory_points=province.victory_points,
        )
    return found


# --- the run ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _workers(config: RecordAIConfig) -> Iterator[Callable[..., Any]]:
    """`open(spec, seed, side, speed)`: a context manager of one game's worker."""
    if config.game == "sim":
        from hoi4_arena.screen.sim_worker import SimWorker

        @contextlib.contextmanager
        def open_sim(spec: str, seed: int, side: str, speed: int) -> Iterator[Worker]:
            ai = (
                {tag: config.ai_strength for tag in TAGS}
                if config.player == "ai"
                else {other_tag(side): config.ai_strength}
            )
            with SimWorker(
                spec,
                seed,
                size=config.size,
                layout="cpu",
                player=side,
                ai=ai,
                max_days=config.max_days,
                player_kind="scripted" if config.player == "scripted" else None,
            ) as worker:
                yield worker

        yield open_sim
        return
    # The window under a private Xvfb, shared with play-policy.
    from hoi4_arena.screen.layout import ViewLayout
    from hoi4_arena.screen.window_games import WindowGames

    with WindowGames(config.size) as windows:

        @contextlib.contextmanager
        def open_window(spec: str, seed: int, side: str, speed: int) -> Iterator[Worker]:
            with windows.open(
                arena=spec,
                seed=seed,
                side=side,
                layout=ViewLayout.named("cpu"),
                max_days=config.max_days,
                ai_strength=config.ai_strength,
            ) as worker:
                yield worker

        yield open_window


def summarize(rows: list[GameResult], seconds: float, play_s_now: float) -> dict[str, Any]:
    """The run's record (`results.win_record`), the play time it holds and this run's speed."""
    return {
        **win_record(rows),
        "minutes": round(sum(float(r.extra.get("minutes", 0)) for r in rows), 2),
        "this_run": {
            "seconds": round(seconds, 2),
            "play_minutes": round(play_s_now / 60, 2),
            "speedup": round(play_s_now / seconds, 1) if seconds > 0 else None,
        },
    }


def run_record_ai(config: RecordAIConfig) -> dict[str, Any]:
    """Play and record games (resuming OUT); the summary the command prints."""
    from hoi4_arena.sessions.lock import remove_unfinished
    from hoi4_arena.sessions.recorder import Recorder, RecorderSettings

    done = open_run(config.out, SETTINGS, config.settings(), "record-ai")
    results_path = config.out / RESULTS
    budget_ns = None if config.minutes is None else round(config.minutes * 60e9)
    spent_ns = sum(round(float(r.extra.get("minutes", 0)) * 60e9) for r in done.values())
    started = time.perf_counter()
    play_s_now = 0.0
    interrupted = False
    limit = config.games if config.games is not None else 10**9
    index = 0
    first = load_first(config)
    with _Progress(config, len(done)) as progress, _workers(config) as open_game:
        while index < limit:
            if index in done:
                index += 1
                continue
            left = None if budget_ns is None else budget_ns - spent_ns
            if left is not None and left <= 0:
                break
            name, spec, seed, side, speed = config.plan(index)
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).name).strip("-.") or "map"
            kind = config.player if first is None else "handover"
            session_id = f"{kind}-g{index:04d}-{slug}-s{seed}-{side}"
            folder = config.out / session_id
            remove_unfinished(folder)
            recorder = Recorder(
                folder,
                RecorderSettings(
                    hz=float(config.hz),
                    game_speed=speed,
                    source=config.player,
                    codec=config.codec,
                    game="sim",
                    side=side,
                    after_winner_s=3600.0,
                    realtime=config.game == "x11",
                    extra={"record_ai": {"game": index, "seed": seed, "map": spec, "player": config.player}},
                ),
            )
            progress.start_game(index, name, seed, side)
            try:
                try:
                    with open_game(spec, seed, side, speed) as worker:
                        rgba, hotspot = worker.pointer_image()
                        cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
                        player = make_player(config, seed, cursor, first, side, speed)
                        record = play_game(
                            worker,
                            player,
                            side=side,
                            speed=speed,
                            spec=spec,
                            recorder=recorder,
                            session_id=session_id,
                            budget_ns=left,
                            after_end_s=config.after_end_s,
                            hz=config.hz,
                            on_decision=progress.decision,
                        )
                except WorkerError as error:
                    record = GameRecord(valid=False, reason=f"worker: {error}")
                except Exception as error:  # a crashed game is kept, invalid, and the run goes on
                    log.exception("game %d (%s, seed %d, %s) crashed", index, spec, seed, side)
                    record = GameRecord(valid=False, reason=f"crash: {type(error).__name__}: {error}")
                    record.session = str(folder) if (folder / "manifest.json").exists() else None
            except KeyboardInterrupt:
                interrupted = True
                break
            minutes = record.play_ns / 60e9
            spent_ns += record.play_ns
            play_s_now += record.play_ns / 1e9
            row = GameResult(
                player=config.player,
                side=side,
                winner=record.winner,
                valid=record.valid,
                arena=name,
                seed=seed,
                strategy=record.strategy.get("label", "ai" if config.player == "ai" else ""),
                opponent="ai",
                reason=record.reason,
                extra={
                    "game": index,
                    "map": spec,
                    "speed": speed,
                    "declarer": record.declarer,
                    "days": record.days,
                    "minutes": round(minutes, 4),
                    "decisions": record.decisions,
                    "late": record.late,
                    "seen": record.seen,
                    "orders": sum(
                        1 for o in record.orders if o["order"] in ("front", "offensive", "execute")
                    ),
                    "session": session_id if record.session is not None else None,
                    "setup": record.setup,
                    **({"handover": record.handover} if first is not None else {}),
                },
            )
            append_result(results_path, row)
            done[index] = row
            progress.end_game(row)
            index += 1
    seconds = time.perf_counter() - started
    rows = [done[i] for i in sorted(done)]
    return {
        "player": config.player,
        "out": str(config.out),
        "results": str(results_path),
        "interrupted": interrupted,
        **summarize(rows, seconds, play_s_now),
        "settings": config.settings(),
    }


class _Progress:
    """A bar over games on stderr, with the record so far."""

    def __init__(self, config: RecordAIConfig, skipped: int) -> None:
        from hoi4_arena.terminal import progress_bar

        self.config = config
        self.bar = progress_bar() if config.progress else None
        self.skipped = skipped
        self.record = {"win": 0, "draw": 0, "loss": 0, "invalid": 0}

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
            self.task = self.bar.add_task(
                f"{self.config.player}: games", total=self.config.games, completed=self.skipped
            )
        return self

    def start_game(self, index: int, name: str, seed: int, side: str) -> None:
        if self.bar is not None:
            record = " ".join(f"{k} {v}" for k, v in self.record.items())
            self.bar.update(self.task, description=f"game {index} ({name} s{seed} {side})  {record}")

    def decision(self, count: int) -> None:
        pass

    def end_game(self, row: GameResult) -> None:
        self.record["invalid" if not row.valid else row.outcome] += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
