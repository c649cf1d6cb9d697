"""`hoi4-arena rung-games PLAYER LADDER OUT`: full games from make-ladder's rung saves, and each rung's promotion.

PLAYER is a policy checkpoint, `scripted` (the scripted player) or `random` (the random policy); LADDER
a make-ladder folder (`play/ladder.py`: its ladder.json lists the rung saves S0..S3). Each game:

1. `SimWorker(save=...)` goes on from one rung save exactly: the save fixes the map, the seeds, the side
   the player plays and the time limit (`--max-days` replaces the limit; 0 keeps the save's);
2. from S0 (paused, no war yet) the match harness starts the match as every game has it; from S1..S3 the
   match already runs, so the harness is skipped and the ARENA log so far (the declaration, the setup
   steps the rung has done) is read from the restored game;
3. the player plays decision by decision to the end (a winner, or the time limit's draw); one row goes
   into OUT/results.jsonl: the runner's GameResult fields, and in the extras `rung` and `save` (the save
   relative to LADDER), game, days, decisions, minutes, declarer, session, setup.

Success (`--success`): `setup` (the default) is the row's setup complete (`gamelog.setup_milestones`: the
offensive drawn and executed, read from the whole log, so what the rung had done counts); `win` is a
win. Invalid games (a crash, a refused input) count in no rate.

Which rung a game plays (`--schedule`): `fixed` goes round the listed rungs, and each rung round its
saves; `adaptive` picks the rung whose success rate over its last `--window` games is nearest 0.5 (a
rung not yet played counts as 0.5: unknown), ties going to the rung whose rate moved most (the last
window against the window before it), then to the fewest games, then to the order listed; the rung's
saves are taken in turn. The plan depends only on the settings and the rows so far, so a resumed run
plays the games the uninterrupted one would have.

Promotion: a rung is promoted when the Wilson lower bound of its success rate over its last `--window`
valid games reaches `--threshold`. Rungs run from S3 (easiest: only the offensive remains) to S0 (the
whole game); the report's `next` is the easiest listed rung not yet promoted, the one to train on next
(null when every listed rung is promoted). The report is printed and written to OUT/rung-games.json.

The games are a run of the one game runner (`play.runner.run_games`, through `RungRun`): resume,
crashed games kept invalid, the progress bars and the rows are its. Re-running with the same OUT
resumes (finished games are skipped); other settings are refused.

Try: hoi4-arena rung-games scripted runs/ladder runs/rung-games --games 8 --max-days 60
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.play.decoding import Decoding
from hoi4_arena.play.runner import GamePlan, slug
from hoi4_arena.results import GameResult, read_results, wilson
from hoi4_arena.screen.game import GameRecord, GameSettings, TokenPlayer

log = logging.getLogger(__name__)

LADDER_RUNGS = ("S0", "S1", "S2", "S3")
"""make-ladder's rungs (`play.ladder.RUNGS`; not imported, so that --help stays light)."""
SETTINGS = "rung-games.settings.json"
REPORT = "rung-games.json"
RESULTS = "results.jsonl"
SCHEDULES = ("fixed", "adaptive")
SUCCESS = ("setup", "win")
BUILTIN = ("scripted", "random")


@dataclass
class RungGamesConfig(Decoding):
    """Settings of `hoi4-arena rung-games`."""

    player: str
    """A policy checkpoint file, `scripted` (the scripted player) or `random` (the random policy)."""
    ladder: Path
    """A make-ladder output folder (its ladder.json lists the rung saves)."""
    out: Path
    """Folder for results.jsonl, the report and the sessions; re-running with it resumes."""
    rungs: str = "all"
    """Rungs to play, comma-separated (e.g. S3,S2), or all: every rung the ladder has, S3 first."""
    games: int = 10
    """How many games in all."""
    schedule: str = "fixed"
    """fixed: round-robin over the rungs and their saves; adaptive: the rung whose success is nearest even."""
    success: str = "setup"
    """What a game's success is: setup (the setup completed: offensive drawn and executed) or win."""
    window: int = 10
    """Promotion and the adaptive schedule look at each rung's last N valid games."""
    threshold: float = 0.6
    """A rung is promoted when the Wilson lower bound of its success over the window reaches this (0..1)."""
    seed: int = 0
    """Seeds the players: game i's player (its sampling, the scripted player's strategy) gets seed + i."""
    max_days: int = 0
    """The games' time limit in game days from the game's start, as the save's own (0: the save's limit)."""
    record: bool = False
    """Record each game as a session under OUT/<session-id>/."""
    codec: str = "x264"
    """Video codec of the sessions: x264 or ffv1."""
    threads: int = 1
    """Torch CPU threads for a checkpoint's policy (0: torch's default)."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.ladder, self.out = Path(self.ladder), Path(self.out)
        self.check_decoding(
            "--point, --deterministic, --reset-memory and --follow-through are for a checkpoint, not "
            f"the {self.player} player"
            if self.player in BUILTIN
            else None
        )
        for what, value, low in (
            ("--games", self.games, 1),
            ("--window", self.window, 1),
            ("--seed", self.seed, 0),
            ("--max-days", self.max_days, 0),
            ("--threads", self.threads, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if not (isinstance(self.threshold, int | float) and 0.0 <= self.threshold <= 1.0):
            raise UserError(f"--threshold must lie in 0..1, not {self.threshold!r}")
        if self.schedule not in SCHEDULES:
            raise UserError(f"--schedule must be fixed or adaptive, not {self.schedule!r}")
        if self.success not in SUCCESS:
            raise UserError(f"--success must be setup or win, not {self.success!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"--codec must be x264 or ffv1, not {self.codec!r}")
        if self.player not in BUILTIN and not Path(self.player).is_file():
            raise UserError(f"PLAYER {self.player}: no such checkpoint file (or give scripted or random)")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        self.listing = read_ladder(self.ladder)
        self.saves = rung_saves(self.listing)
        self.rung_list = pick_rungs(self.rungs, self.saves)


# --- the ladder ----------------------------------------------------------------------------------------


def read_ladder(folder: Path) -> dict[str, Any]:
    """A make-ladder folder's ladder.json; UserError when there is none or it is not one."""
    path = folder / "ladder.json"
    if not path.is_file():
        raise UserError(f"LADDER {folder} has no ladder.json: give a make-ladder output folder")
    try:
        listing = json.loads(path.read_text(encoding="utf-8"))
        rows = listing["rungs"]
        assert isinstance(rows, list) and all("rung" in row for row in rows)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise UserError(f"{path} is not a make-ladder listing (no list of rungs)") from None
    return listing


def rung_saves(listing: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The rungs a ladder made, each with its saves' rows (sorted by save path); missing rungs left out."""
    saves: dict[str, list[dict[str, Any]]] = {}
    for row in listing["rungs"]:
        if not row.get("missing") and row.get("save"):
            saves.setdefault(row["rung"], []).append(row)
    return {rung: sorted(saves[rung], key=lambda row: row["save"]) for rung in sorted(saves, reverse=True)}


def pick_rungs(text: str, saves: dict[str, list[dict[str, Any]]]) -> tuple[str, ...]:
    """The rungs of `--rungs` (in the order written), or all the ladder has, easiest (S3) first."""
    if text == "all":
        if not saves:
            raise UserError("the ladder has no rung saves (every rung is missing)")
        return tuple(saves)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in LADDER_RUNGS]
    if unknown or not names:
        raise UserError(
            f"--rungs takes rungs of {', '.join(LADDER_RUNGS)} comma-separated, or all, not {text!r}"
        )
    absent = [name for name in names if name not in saves]
    if absent:
        raise UserError(
            f"the ladder has no saves of {', '.join(absent)} (it has {', '.join(saves) or 'none'})"
        )
    if len(set(names)) != len(names):
        raise UserError(f"--rungs names a rung twice: {text!r}")
    return tuple(names)


# --- promotion and the schedule (pure) -----------------------------------------------------------------


def window_rate(outcomes: Sequence[bool]) -> Fraction | None:
    """Successes over games, exactly (None: no games)."""
    return Fraction(sum(outcomes), len(outcomes)) if outcomes else None


def promoted(outcomes: Sequence[bool], window: int, threshold: float) -> bool:
    """The rung is passed: the Wilson lower bound of the success over its last `window` games >= threshold."""
    last = outcomes[-window:]
    return bool(last) and wilson(sum(last), len(last)).low >= threshold


def next_rung(rungs: Sequence[str], outcomes: dict[str, Sequence[bool]], window: int) -> str:
    """The adaptive schedule's next rung: success over the last `window` games nearest 1/2 (unplayed: 1/2),
    then the largest move of that rate against the window before, then the fewest games, then `rungs`' order."""

    def key(item: tuple[int, str]) -> tuple[Fraction, Fraction, int, int]:
        order, rung = item
        games = list(outcomes.get(rung, ()))
        rate = window_rate(games[-window:])
        before = window_rate(games[-2 * window : -window])
        moved = abs(rate - before) if rate is not None and before is not None else Fraction(0)
        distance = abs(rate - Fraction(1, 2)) if rate is not None else Fraction(0)
        return distance, -moved, len(games), order

    return min(enumerate(rungs), key=key)[1]


def succeeded(row: GameResult, success: str) -> bool:
    """Whether a valid game's row is a success: its setup complete, or a win."""
    if success == "win":
        return row.outcome == "win"
    return bool((row.extra.get("setup") or {}).get("complete"))


def rung_outcomes(rows: Sequence[GameResult], success: str) -> dict[str, list[bool]]:
    """Each rung's successes, game by game in the order played (valid games only)."""
    outcomes: dict[str, list[bool]] = {}
    for row in sorted(rows, key=lambda r: int(r.extra["game"])):
        if row.valid:
            outcomes.setdefault(row.extra["rung"], []).append(succeeded(row, success))
    return outcomes


def plan_game(index: int, config: RungGamesConfig, rows: Sequence[GameResult]) -> tuple[str, dict[str, Any]]:
    """Game `index`'s rung and save row, from the settings and the rows of the games before it."""
    rungs = config.rung_list
    before = [row for row in rows if int(row.extra["game"]) < index]
    if config.schedule == "fixed":
        rung = rungs[index % len(rungs)]
        turn = index // len(rungs)
    else:
        rung = next_rung(rungs, rung_outcomes(before, config.success), config.window)
        turn = sum(row.extra["rung"] == rung for row in before)
    saves = config.saves[rung]
    return rung, saves[turn % len(saves)]


def _interval(outcomes: Sequence[bool]) -> dict[str, Any] | None:
    """Successes, games, rate and its Wilson interval (`wins` counts the successes); None for no games."""
    return wilson(sum(outcomes), len(outcomes)).to_dict() if outcomes else None


def report(config: RungGamesConfig, rows: Sequence[GameResult]) -> dict[str, Any]:
    """Per rung: games, valid, successes, wins, setups complete, the rate and its Wilson interval (all
    valid games), the window's interval and the promotion; `next`, the easiest rung not promoted."""
    outcomes = rung_outcomes(rows, config.success)
    per_rung: dict[str, Any] = {}
    for rung in config.rung_list:
        mine = [row for row in rows if row.extra["rung"] == rung]
        valid = [row for row in mine if row.valid]
        games = outcomes.get(rung, [])
        last = games[-config.window :]
        per_rung[rung] = {
            "games": len(mine),
            "valid": len(valid),
            "successes": sum(games),
            "wins": sum(row.outcome == "win" for row in valid),
            "setups_complete": sum(succeeded(row, "setup") for row in valid),
            "rate": _interval(games),
            "window": _interval(last),
            "promoted": promoted(games, config.window, config.threshold),
        }
    easiest_first = sorted(config.rung_list, reverse=True)
    return {
        "success": config.success,
        "window": config.window,
        "threshold": config.threshold,
        "schedule": config.schedule,
        "rungs": per_rung,
        "next": next((rung for rung in easiest_first if not per_rung[rung]["promoted"]), None),
    }


# --- the player ----------------------------------------------------------------------------------------


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_policy(config: RungGamesConfig) -> tuple[Any, dict[str, Any]]:
    """The token policy (None for the scripted player) and what identifies the player in the settings."""
    if config.player == "scripted":
        return None, {"player": "scripted"}
    if config.player == "random":
        from hoi4_arena.play.random_policy import RandomPolicy

        policy = RandomPolicy()
        return policy, {"player": policy.name}
    from hoi4_arena.play.policy_player import PolicyPlayer

    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    path = Path(config.player)
    try:
        policy = PolicyPlayer(
            path,
            mode=config.decoding_mode,
            temperature=config.temperature,
            reset_memory=config.reset_memory,
            follow_through=config.follow_through,
            max_hold=config.max_hold,
        )
    except UserError:
        raise
    except Exception as error:  # torch.load of a file that is no checkpoint fails in many ways (KeyError ...)
        raise UserError(
            f"PLAYER {path} is not a policy checkpoint ({type(error).__name__}: {error})"
        ) from None
    return policy, {"player": policy.name, "sha256": _file_digest(path), "layout": policy.layout_version}


def make_player(policy: Any, worker: Any, seed: int, side: str, speed: int) -> Any:
    """The player of one game: the scripted player at the save's screen size, or the token player."""
    if policy is not None:
        return TokenPlayer(policy, seed=seed, side=side, speed=speed)
    from hoi4_arena.players.scripted import ScriptedPlayer
    from hoi4_arena.players.templates import sim_rules

    rgba, hotspot = worker.pointer_image()
    return ScriptedPlayer(
        sim_rules(worker.game.size), seed, cursor=(rgba.shape[1], rgba.shape[0], tuple(hotspot))
    )


# --- the run -------------------------------------------------------------------------------------------


def _row(index: int, rung: str, save: dict[str, Any], name: str, record: GameRecord) -> GameResult:
    return GameResult(
        player=name,
        side=save["side"],
        winner=record.winner,
        valid=record.valid,
        arena=save["preset"],
        seed=int(save["game_seed"]),
        opponent="ai",
        reason=record.reason,
        extra={
            "game": index,
            "rung": rung,
            "save": save["save"],
            "declarer": record.declarer,
            "days": record.days,
            "decisions": record.decisions,
            "minutes": round(record.play_ns / 60e9, 4),
            "session": record.session,
            "setup": record.setup,
        },
    )


class RungRun:
    """rung-games' run for `play.runner.run_games`: game i's rung and save from the schedule and the rows
    so far, a simulator worker restored from the save, the player, the recorder's settings and the row."""

    def __init__(self, config: RungGamesConfig, policy: Any, identity: dict[str, Any], run_id: str) -> None:
        self.config, self.policy, self.identity, self.run_id = config, policy, identity, run_id
        self.name = identity["player"]
        self.speed = int(config.listing.get("settings", {}).get("speed", 5))
        self.planned: dict[int, tuple[str, dict[str, Any]]] = {}

    def rows_so_far(self) -> list[GameResult]:
        """The rows in OUT/results.jsonl: `run_games` appends each game's row before it plans the next."""
        path = self.config.out / RESULTS
        return read_results(path) if path.exists() else []

    def plan(self, index: int) -> GamePlan:
        rung, save = plan_game(index, self.config, self.rows_so_far())
        self.planned[index] = (rung, save)
        return GamePlan(
            index=index,
            arena=save["preset"],
            spec=f"{save['preset']}:{save['map_seed']}",
            seed=self.config.seed + index,
            side=save["side"],
            speed=self.speed,
        )

    @contextlib.contextmanager
    def workers(self) -> Iterator[Callable[[GamePlan], AbstractContextManager[Any]]]:
        from hoi4_arena.screen.sim_worker import SimWorker

        layout = getattr(self.policy, "layout", None) or "cpu"

        @contextlib.contextmanager
        def open_save(plan: GamePlan) -> Iterator[Any]:
            with SimWorker(
                save=self.config.ladder / self.planned[plan.index][1]["save"], layout=layout
            ) as worker:
                if self.config.max_days:
                    worker.game.world.max_days = self.config.max_days
                yield worker

        yield open_save

    def player(self, plan: GamePlan, worker: Any) -> Any:
        return make_player(self.policy, worker, plan.seed, plan.side, plan.speed)

    def game_settings(self, plan: GamePlan, budget_ns: int | None) -> GameSettings:
        running = "declare" in self.planned[plan.index][1].get("done", ())
        return GameSettings(side=plan.side, speed=plan.speed, spec=plan.spec, running=running)

    def session_id(self, plan: GamePlan) -> str:
        rung, save = self.planned[plan.index]
        return f"{slug(self.name)}-{self.run_id}-g{plan.index:04d}-{rung}-{slug(save['preset'], 'map')}-{plan.side}"

    def recorder_settings(self, plan: GamePlan) -> Any:
        if not self.config.record:
            return None
        from hoi4_arena.sessions.recorder import RecorderSettings

        rung, save = self.planned[plan.index]
        return RecorderSettings(
            hz=5.0,
            game_speed=plan.speed,
            source="scripted" if self.policy is None else "policy",
            codec=self.config.codec,
            game="sim",
            side=plan.side,
            after_winner_s=0.0,
            extra={"rung_games": {**self.identity, "game": plan.index, "rung": rung, "save": save["save"]}},
        )

    def row(self, plan: GamePlan, record: GameRecord) -> GameResult:
        rung, save = self.planned.pop(plan.index)
        return _row(plan.index, rung, save, self.name, record)


def run_rung_games(config: RungGamesConfig) -> dict[str, Any]:
    """Play the games (resuming OUT), write OUT/rung-games.json, return the report and the run's summary."""
    from hoi4_arena.play.runner import RunLimits, run_games

    policy, identity = load_policy(config)  # before OUT is made: a bad checkpoint writes nothing
    ladder_json = config.ladder / "ladder.json"
    settings = {
        **identity,
        "ladder_sha256": hashlib.sha256(ladder_json.read_bytes()).hexdigest(),
        "rungs": list(config.rung_list),
        "schedule": config.schedule,
        "success": config.success if config.schedule == "adaptive" else None,
        "window": config.window if config.schedule == "adaptive" else None,
        "seed": config.seed,
        "max_days": config.max_days,
    }
    if policy is not None and config.player not in BUILTIN:
        settings["decoding"] = {
            "point": config.point,
            "deterministic": config.deterministic,
            "temperature": config.temperature,
            "reset_memory": config.reset_memory,
            "follow_through": config.follow_through,
        }
    run_id = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:6]
    run = RungRun(config, policy, identity, run_id)
    summary = run_games(
        run,
        config.out,
        settings_file=SETTINGS,
        settings=settings,
        command="rung-games",
        limits=RunLimits(games=config.games),
        progress=config.progress,
    )
    by_index = {int(r.extra["game"]): r for r in run.rows_so_far()}
    rows = [by_index[i] for i in sorted(by_index) if i < config.games]
    result = report(config, rows)
    (config.out / REPORT).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return {
        **result,
        "player": run.name,
        **{k: summary[k] for k in ("out", "results", "skipped", "interrupted", "this_run")},
    }
