"""The one game runner: every game any command plays goes through `screen.game` (`Game`, `play_game`), every
run of games through `run_games`.

One game is `screen.game.play_game` (the step-driven `Game`, which the Gymnasium env steps too); its
docstring says what a game is. This module plays runs of them.

A run (`run_games`) is a command's `Run`: the plan of game i (map, seed, side, speed), how to open its
worker, the player of a game, the recorder's settings and the results row. The runner resumes OUT
(`results.open_run`: the settings must match, finished games are skipped, an interrupted game's
unfinished session is replaced), keeps a crashed game as invalid with its reason and goes on, shows the
progress, appends one row a game to OUT/results.jsonl and returns the summary. The pending games are
played one after another here, as Ray tasks (`play/ray_games.py`), or, for a headless run that records
nothing, N at once in lockstep over the vector layer (`play/lockstep.py`: the same games and rows).

Try: hoi4-arena play-policy random runs/random --games 2 --max-days 10
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.specs import MapEntry, map_entries
from hoi4_arena.play.lockstep import Lockstep, play_lockstep
from hoi4_arena.play.ray_games import RayGames
from hoi4_arena.results import GameResult, append_result, open_run, win_record
from hoi4_arena.screen.backends import backend
from hoi4_arena.screen.game import GameRecord, GameSettings, play_game
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import DECISION_NS
from hoi4_arena.screen.worker import Worker, WorkerError
from hoi4_arena.sim.clock import HOURS_PER_SECOND
from hoi4_arena.sim.headless import MIN_SIZE, arena_of

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"


# --- the workers of a run -----------------------------------------------------------------------------


def check_size(size: tuple[int, int], hint: str = "e.g. 960x540, 640x360") -> None:
    """Refuse (UserError) a game screen that is not 16:9 or lies outside the simulator's sizes."""
    height, width = size
    if (
        not (MIN_SIZE[0] <= height <= 4320 and MIN_SIZE[1] <= width <= 7680)
        or abs(width * 9 - height * 16) > 16
    ):
        raise UserError(
            f"--size {width}x{height} must be 16:9 and within {MIN_SIZE[1]}x{MIN_SIZE[0]}..7680x4320 ({hint})"
        )


def run_maps(text: str) -> tuple[MapEntry, ...]:
    """The maps of a run from `--arena` (`maps/specs.py`: presets, preset:seed, preset:A-B, map folders,
    `all`, comma-separated): a malformed entry, an unknown preset or a folder that holds no map is refused
    now, with its message."""
    entries = map_entries(text)
    for entry in entries:
        if entry.kind == "folder":
            arena_of(entry.text)  # a map folder is read now; anything else is refused now, with its message
    return entries


def map_list(text: str) -> list[str]:
    """The maps of a run from `--arena` as the commands' settings keep them (`run_maps`): a bare preset is
    its map of seed 0 (the one rule, `maps/specs.py`), a range stays a range."""
    return [entry.spec for entry in run_maps(text)]


@dataclass(frozen=True)
class GamePlan:
    """One game of a run: which map, seed, side and speed."""

    index: int
    arena: str
    """The arena's name in results (a preset, preset:seed or a map folder as given: `MapEntry.name`)."""
    spec: str
    """The map as both games read it: preset:seed (a range's drawn for the game) or a folder."""
    seed: int
    side: str
    speed: int


def side_swapped(index: int, first_seed: int) -> tuple[int, str]:
    """Games 2k and 2k + 1 play seed `first_seed + k`, BLU first: a side's advantage cancels in a pair."""
    return first_seed + index // 2, TAGS[index % 2]


@contextlib.contextmanager
def game_workers(
    game: str,
    size: tuple[int, int],
    layout: ViewLayout | str,
    *,
    max_days: int,
    ai_strength: float,
    ai_both: bool = False,
    player_kind: str | None = "policy",
    station: Any = None,
) -> Iterator[Callable[[GamePlan], AbstractContextManager[Worker]]]:
    """A factory of one run's game workers: `open(plan)` is a context manager of a new, paused game's
    worker. sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb
    (one for the run), through the X11 worker, in real time. `station` (a `cluster.peer_games.PeerGames`,
    sim only): each game is the station's, started there with new_game."""
    layout = ViewLayout.named(layout) if isinstance(layout, str) else layout

    def ai_of(side: str) -> dict[str, float]:
        return {tag: ai_strength for tag in TAGS} if ai_both else {other_tag(side): ai_strength}

    if station is not None:
        with station.workers(
            size, layout, max_days=max_days, ai_of=ai_of, player_kind=player_kind
        ) as open_game:
            yield open_game
        return
    if game == "sim":
        from hoi4_arena.screen.sim_worker import SimWorker

        def open_sim(plan: GamePlan) -> AbstractContextManager[Worker]:
            return SimWorker(
                plan.spec,
                plan.seed,
                size=size,
                layout=layout,
                player=plan.side,
                ai=ai_of(plan.side),
                max_days=max_days,
                player_kind=player_kind,
            )

        yield open_sim
        return
    from hoi4_arena.screen.window_games import WindowGames

    with WindowGames(size) as windows:

        def open_window(plan: GamePlan) -> AbstractContextManager[Worker]:
            return windows.open(
                arena=plan.spec,
                seed=plan.seed,
                side=plan.side,
                layout=layout,
                max_days=max_days,
                ai_strength=ai_strength,
            )

        yield open_window


def check_peer_options(peer: str | None, ray: str | None, game: str, maps: list[str]) -> None:
    """Refuse (UserError) what --peer cannot do: with --ray, window games, map folders."""
    if peer is None:
        return
    if ray is not None:
        raise UserError("--peer and --ray are two ways to place games: give one of them")
    if not backend(game).headless:
        raise UserError(f"--peer plays the station's simulator games (--game sim), not --game {game}")
    from hoi4_arena.cluster.peer_games import check_peer_maps

    check_peer_maps(maps)


def open_station(peer: str | None, peers: Path | None) -> AbstractContextManager[Any]:
    """The station of --peer held for the run (`cluster.peer_games.PeerGames`), or None without it:
    an unknown name, an unreachable station or one that cannot start games is a UserError now."""
    if peer is None:
        return contextlib.nullcontext()
    from hoi4_arena.cluster.peer_games import PeerGames

    return PeerGames.connect(peer, peers)


# --- a run of games -----------------------------------------------------------------------------------


class Run(Protocol):
    """What a command tells the runner about its games (play-policy's, record-ai's and rung-games'
    drivers)."""

    name: str
    """The player's name on the progress bar."""

    def plan(self, index: int) -> GamePlan: ...

    def workers(self) -> AbstractContextManager[Callable[[GamePlan], AbstractContextManager[Worker]]]: ...

    def player(self, plan: GamePlan, worker: Worker) -> Any: ...

    def game_settings(self, plan: GamePlan, budget_ns: int | None) -> GameSettings: ...

    def session_id(self, plan: GamePlan) -> str: ...

    def recorder_settings(self, plan: GamePlan) -> Any: ...

    """The session's `sessions.recorder.RecorderSettings`, or None to play without recording."""

    def row(self, plan: GamePlan, record: GameRecord) -> GameResult: ...


@dataclass
class RunLimits:
    """How many games a run plays."""

    games: int | None
    """At most this many games (None: until the budget runs out)."""
    budget_ns: int | None = None
    """Play time on the games' clocks for the whole run (the game that runs it out is cut, invalid)."""
    decisions_per_game: int = 0
    """A guess of one game's decisions, for the progress bar (0: none)."""
    wall_s: float = 0.0
    """Start no game after this many wall-clock seconds of the run (0: no limit): a guard a user chooses,
    never part of a recipe (on a slower day it plays fewer games)."""


def slug(text: str, fallback: str = "policy") -> str:
    """A name made safe for a folder: letters, digits, `_`, `.` and `-`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or fallback


def play_planned(
    run: Run,
    plan: GamePlan,
    open_worker: Callable[[GamePlan], AbstractContextManager[Worker]],
    out: Path,
    left: int | None,
    on_decision: Callable[[int], None] | None = None,
) -> GameRecord:
    """Play one planned game, recording its session (if the run records) into out/<session id>; its
    record, the session relative to `out`. A crashed game or a worker's refusal is an invalid record; a
    UserError or Ctrl+C goes up. The local loop's game, and a Ray task's (`play/ray_games.py`)."""
    from hoi4_arena.sessions.lock import remove_unfinished
    from hoi4_arena.sessions.recorder import Recorder

    session_id = run.session_id(plan)
    recorder_settings = run.recorder_settings(plan)
    recorder = None
    folder = out / session_id
    if recorder_settings is not None:
        remove_unfinished(folder)
        recorder = Recorder(folder, recorder_settings)
    try:
        with open_worker(plan) as worker:
            player = run.player(plan, worker)
            record = play_game(
                worker,
                player,
                run.game_settings(plan, left),
                recorder=recorder,
                session_id=session_id,
                on_decision=on_decision,
            )
    except UserError:
        raise
    except WorkerError as error:  # the game's worker could not be opened or closed
        record = GameRecord(valid=False, reason=f"worker: {error}")
    except Exception as error:  # a crashed game is kept, invalid, and the run goes on
        log.exception("game %d (%s, seed %d, %s) crashed", plan.index, plan.spec, plan.seed, plan.side)
        record = GameRecord(valid=False, reason=f"crash: {type(error).__name__}: {error}")
        record.session = str(folder) if (folder / "manifest.json").exists() else None
    if record.session is not None:
        record.session = session_id  # relative to OUT: the folder can move
    return record


def play_in_order(
    pending: Iterator[int],
    plan_of: Callable[[int], Any],
    play: Callable[[Any, int | None], Any],
    budget_left: Callable[[], int | None],
    wall_out: Callable[[], bool],
    finished: Callable[[Any, Any], None],
    start: Callable[[Any], None] | None = None,
) -> bool:
    """The local loop over a run's `pending` games (indices in plan order): each `plan_of(index)` played by
    `play(plan, budget left)` and handed to `finished(plan, outcome)`, until the play-time budget or the
    wall clock runs out; True when Ctrl+C interrupted a game (which is then not finished). One-player runs
    (`run_games`) and collect-pair's pair games both go through it; on Ray, `RayGames.play` keeps the same
    order and budget."""
    for index in pending:
        left = budget_left()
        if (left is not None and left <= 0) or wall_out():
            return False
        plan = plan_of(index)
        if start is not None:
            start(plan)
        try:
            outcome = play(plan, left)
        except KeyboardInterrupt:
            return True
        finished(plan, outcome)
    return False


def play_one(run: Run, plan: GamePlan, folder: Path, left: int | None) -> GameRecord:
    """One game of a one-player run in a Ray task (`play_planned`), its session recorded into `folder`."""
    with run.workers() as open_worker:
        return play_planned(run, plan, open_worker, folder, left)


def run_games(
    run: Run,
    out: Path,
    *,
    settings_file: str,
    settings: dict[str, Any],
    command: str,
    limits: RunLimits,
    progress: bool = True,
    added: dict[str, Any] | None = None,
    ignored: tuple[str, ...] = (),
    ray: str | None = None,
    ray_games: int = 0,
    window: bool = False,
    lockstep: Lockstep | None = None,
) -> dict[str, Any]:
    """Play a run's games into `out` (resuming it); the summary: the record, decisions, play minutes,
    this run's speed. `ray`: play them as Ray tasks on that cluster instead (`play/ray_games.py`: auto,
    local or an address), at most `ray_games` at a time (0: the cluster's CPUs); the same rows and
    sessions as the local loop writes; `window`: the games need a screen, so on Ray each goes to a
    station. `lockstep`: play them N at once over the vector layer (`play/lockstep.py`; headless games,
    no recording, no play-time budget), the same rows as the local loop writes."""
    if lockstep is not None and (ray is not None or limits.budget_ns is not None):
        raise ValueError("a lockstep run plays on this machine, with no play-time budget")
    cluster = None
    if ray is not None:
        # Before OUT is touched: a bad address, or window games and no station, writes nothing.
        cluster = RayGames.connect(ray, ray_games, window)
    done = open_run(out, settings_file, settings, command, added=added, ignored=ignored)
    limit = limits.games if limits.games is not None else 10**9
    skipped = sum(1 for i in done if i < limit)
    results_path = out / RESULTS
    spent_ns = sum(round(float(r.extra.get("minutes", 0)) * 60e9) for r in done.values())
    started = time.perf_counter()
    decisions_now = games_now = 0
    play_ns_now = 0
    interrupted = stopped_by_wall = False

    def budget_left() -> int | None:
        return None if limits.budget_ns is None else limits.budget_ns - spent_ns

    def wall_out() -> bool:
        nonlocal stopped_by_wall
        stopped_by_wall = bool(limits.wall_s) and time.perf_counter() - started >= limits.wall_s
        return stopped_by_wall

    def finished(plan: GamePlan, record: GameRecord) -> None:
        nonlocal spent_ns, play_ns_now, decisions_now, games_now
        spent_ns += record.play_ns
        play_ns_now += record.play_ns
        decisions_now += record.decisions
        games_now += 1
        row = run.row(plan, record)
        append_result(results_path, row)
        done[plan.index] = row
        bar.end_game(row)

    pending = (index for index in range(limit) if index not in done)
    with _Progress(run.name, limits, skipped, progress) as bar:
        if cluster is not None:
            with cluster:
                interrupted = cluster.play(run, out, pending, budget_left, wall_out, finished, play_one, bar)
        elif lockstep is not None:
            bar.lockstep(lockstep.games)
            interrupted = play_lockstep(run, lockstep, pending, wall_out, finished, bar.decisions_made)
        else:
            with run.workers() as open_worker:

                def play(plan: GamePlan, left: int | None) -> GameRecord:
                    return play_planned(run, plan, open_worker, out, left, bar.decision)

                interrupted = play_in_order(
                    pending, run.plan, play, budget_left, wall_out, finished, bar.start_game
                )
    seconds = time.perf_counter() - started
    rows = [done[i] for i in sorted(done) if i < limit]
    return {
        "out": str(out),
        "results": str(results_path),
        "skipped": skipped,
        "interrupted": interrupted,
        "stopped_by_wall_clock": stopped_by_wall,
        **summarize(rows, seconds, decisions_now, games_now, play_ns_now / 1e9),
        **({} if cluster is None else {"ray": {"placed": cluster.placed, "stopped": cluster.stopped}}),
    }


def summarize(
    rows: list[GameResult], seconds: float, decisions_now: int, games_now: int, play_s_now: float
) -> dict[str, Any]:
    """A run's record (`results.win_record`), the decisions and play time it holds, this run's speed."""
    return {
        **win_record(rows),
        "decisions": sum(int(r.extra.get("decisions", 0)) for r in rows),
        "minutes": round(sum(float(r.extra.get("minutes", 0)) for r in rows), 2),
        "this_run": {
            "games": games_now,
            "decisions": decisions_now,
            "seconds": round(seconds, 2),
            "decisions_per_s": round(decisions_now / seconds, 1) if seconds > 0 else None,
            "games_per_minute": round(60 * games_now / seconds, 2) if seconds > 0 else None,
            "play_minutes": round(play_s_now / 60, 2),
            "speedup": round(play_s_now / seconds, 1) if seconds > 0 else None,
        },
    }


def decisions_per_day(speed: int) -> float:
    """Decisions in one game day at game speed `speed`."""
    return 24 / (HOURS_PER_SECOND[speed - 1] * DECISION_NS / 1e9)


class _Progress:
    """Two bars on stderr: the run's games with the record so far, and the decisions of the game being
    played."""

    def __init__(self, name: str, limits: RunLimits, skipped: int, enabled: bool) -> None:
        from hoi4_arena.terminal import progress_bar

        self.name = name
        self.limits = limits
        self.bar = progress_bar() if enabled else None
        self.skipped = skipped
        self.record = {"win": 0, "draw": 0, "loss": 0, "invalid": 0}

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
            self.games = self.bar.add_task(
                f"{self.name}: games", total=self.limits.games, completed=self.skipped
            )
            self.decisions = self.bar.add_task("decisions", total=self.limits.decisions_per_game or None)
        return self

    def start_game(self, plan: GamePlan) -> None:
        if self.bar is not None:
            self.bar.reset(
                self.decisions,
                total=self.limits.decisions_per_game or None,
                description=f"game {plan.index} ({Path(plan.spec).name} s{plan.seed} {plan.side})",
            )

    def _open_ended(self, description: str) -> None:
        """The second bar as a count without a total (rich's reset keeps the old total when given None)."""
        assert self.bar is not None
        self.bar.remove_task(self.decisions)
        self.decisions = self.bar.add_task(description, total=None)

    def waiting(self, plan: GamePlan, in_flight: int) -> None:
        """On Ray the games play elsewhere: the second bar names the game awaited, not its decisions."""
        if self.bar is not None:
            self._open_ended(
                f"waiting for game {plan.index} ({Path(plan.spec).name} s{plan.seed} {plan.side});"
                f" {in_flight} on Ray"
            )

    def decision(self, count: int) -> None:
        if self.bar is not None and count % 5 == 0:
            self.bar.update(self.decisions, completed=count)

    def lockstep(self, games: int) -> None:
        """The second bar counts the decisions of every game played at once."""
        if self.bar is not None:
            self._open_ended(f"decisions, {games} games at once")

    def decisions_made(self, count: int) -> None:
        if self.bar is not None:
            self.bar.update(self.decisions, completed=count)

    def end_game(self, row: GameResult) -> None:
        self.record["invalid" if not row.valid else row.outcome] += 1
        if self.bar is not None:
            record = " ".join(f"{k} {v}" for k, v in self.record.items())
            self.bar.update(self.games, advance=1, description=f"{self.name}: {record}")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
