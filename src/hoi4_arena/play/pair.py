"""`hoi4-arena collect-pair CONFIG.json OUT`: two players face each other in one simulated world.

A pair config (JSON, read into `PairConfig` and checked field by field) names both players -- each a
policy checkpoint, `random`, `scripted` or `ai` (the game's AI) -- and the side each plays in the
first game, the arena schedule, the budgets (games, minutes of play on the game's clock) and the seed,
salted by the pair id:

    {"pair_id": "ppo-vs-bc",
     "players": [{"player": "runs/ppo/last.pt", "side": "BLU", "name": "ppo"},
                 {"player": "runs/bc/last.pt", "side": "RED", "name": "bc"}],
     "schedule": {"arenas": ["plains", "river:3"], "swap_sides": true},
     "budget": {"games": 20, "minutes": 60},
     "seed": 1000, "size": [960, 540], "speed": 5, "max_days": 365, "deterministic": false}

Checkpoints are frozen: each is copied to OUT/players/<sha256>.pt and played from there; a player
entry's `sha256`, or the hash OUT already holds for it, must match the file's bytes (a changed file is
refused). Games 2k and 2k + 1 play the same seed (`game_seed(pair_id, seed + k)`) with the sides
swapped (`swap_sides`), the maps cycling pair by pair.

Each game is one `screen.pair_worker.PairHub` (one world, a screen and a worker per played side; the
game's AI for an `ai` side, which makes it the one-player game) and one `screen.game.Game` per side,
played by `play_game` in its own thread: the barrier in the workers' `wait_until` holds them in
lockstep (the world steps once per tick after both sides' inputs of that tick are in), and each
player's inputs are dispatched from its own thread, so a slow player never delays the other's. Both
sides go through the same match harness as every game (both type the same keys at the same instants;
the shared clock makes that one start).

Gates, from the screens (the top bar's date box, cropped every few decisions) and the ARENA log each
worker read; the first that fails marks the game invalid with its reason (the game is kept):

- ready: both sides started the match (the harness read one declarer) and made decisions;
- healthy: no worker refused a request, no harness error;
- disconnect: no side left early (a player that raised, a barrier wait that timed out);
- paused: the date box never froze while the world ran on (nobody held the game paused);
- desync: the two screens' date boxes agree whenever both were read at one instant (pointer away),
  and each log's game hour lies within a day of the other's read just before and after it;
- speed: the game hours the log shows match the match's speed over its play time;
- winner: the log named a winner or a draw, and both sides saw the same end.

Each decision's `late_ms` is the wall time from the capture request to the inputs handed to the worker
(how late its first slot would reach a live game); a decision of 200 ms or more is a `deadline_miss`.

    OUT/pair.json                  the config, the resolved players (sha256), checked on resume
    OUT/players/<sha256>.pt        the frozen checkpoints
    OUT/results.jsonl              two rows a game (`results.GameResult`, one per player)
    OUT/g0000/manifest.json        the game: plan, gates, valid, reason, per side its record, late_ms
    OUT/g0000/<SIDE>/              each player's session (unless "record": false)
    OUT/g0000/worker-<SIDE>.jsonl  each worker's log: every event it fed with its virtual times

Re-running with the same OUT resumes (games with rows are skipped). With `--ray ADDRESS` each game is a Ray
task (`play/ray_games.py`), its folder and rows written into OUT in plan order as the local loop
writes them; a game whose task died is kept invalid (`ray: ...`). The summary goes to stdout as JSON;
the exit status is 1 when a game failed a gate outside the players (ready, healthy, disconnect, paused,
desync, speed), 0 otherwise (a player that raised is the player's failure: that game invalid, the run
goes on).

Try: hoi4-arena collect-pair pair.json runs/pair   (with {"pair_id": "t", "players": [{"player":
     "random", "side": "BLU"}, {"player": "scripted", "side": "RED"}], "budget": {"games": 2}})
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import other_tag
from hoi4_arena.play.pair_config import KINDS, CollectPairConfig, PairConfig, PairPlan, plan_game
from hoi4_arena.play.runner import decisions_per_day, play_in_order
from hoi4_arena.results import GameResult, append_result, read_results, win_record
from hoi4_arena.screen.game import GameRecord, GameSettings, play_game
from hoi4_arena.screen.tokens import DECISION_NS
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError

log = logging.getLogger(__name__)

SETTINGS = "pair.json"
RESULTS = "results.jsonl"
DEADLINE_MS = DECISION_NS / 1e6
OUTSIDE = ("ready", "healthy", "disconnect", "paused", "desync", "speed")
"""Gates whose failure is not the players': the run exits 1 when a game fails one."""
GATES = ("ready", "healthy", "disconnect", "paused", "desync", "speed", "winner")
DATE_BOX = "pair_date"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def freeze_players(
    config: PairConfig, out: Path, stored: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Each player's identity; checkpoints copied to OUT/players/<sha256>.pt. A checkpoint whose bytes
    differ from its entry's sha256, or from the hash OUT already holds for it, is refused."""
    identities = []
    for i, player in enumerate(config.players):
        identity: dict[str, Any] = {"name": player.label, "kind": player.kind, "player": player.player}
        if player.kind == "checkpoint":
            digest = file_sha256(Path(player.player))
            expected = player.sha256 or (stored[i].get("sha256") if stored else None)
            if expected is not None and digest != expected:
                raise UserError(
                    f"checkpoint {player.player} has changed: its sha256 is {digest}, the pair expects "
                    f"{expected}; give the file it was frozen from, or use a new OUT"
                )
            frozen = out / "players" / f"{digest}.pt"
            if not frozen.is_file():
                frozen.parent.mkdir(parents=True, exist_ok=True)
                partial = frozen.with_suffix(".part")
                shutil.copyfile(player.player, partial)
                partial.replace(frozen)
            if file_sha256(frozen) != digest:
                raise UserError(f"{frozen} does not hold the bytes its name says; remove it and run again")
            identity.update(sha256=digest, frozen=str(frozen.relative_to(out)))
        identities.append(identity)
    return identities


# --- the players of one game ----------------------------------------------------------------------------


class TimedPlayer:
    """A player whose decisions are timed: `late_ms` per decision, wall clock from its capture request
    to the events it returns (everything else is the player's); `failed`: what its `decide` raised."""

    def __init__(self, player: Any) -> None:
        self.player = player
        self.late_ms: list[float] = []
        self.failed: BaseException | None = None
        self._asked = 0.0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.player, name)
        if name != "warm_up":
            return value

        def warm_up(capture: Capture) -> None:  # its decision is the player's too
            try:
                value(capture)
            except BaseException as error:
                self.failed = error
                raise

        return warm_up

    def request(self) -> CaptureRequest:
        self._asked = time.perf_counter()
        return self.player.request()

    def decide(self, capture: Capture) -> list:
        try:
            events = self.player.decide(capture)
        except BaseException as error:
            self.failed = error
            raise
        self.late_ms.append(round((time.perf_counter() - self._asked) * 1e3, 3))
        return events


class _Players:
    """The run's players, loaded once (a checkpoint from its frozen copy); `make(i, side, plan, worker)`
    gives player i's player for one game."""

    def __init__(self, config: PairConfig, identities: list[dict[str, Any]], out: Path) -> None:
        self.config = config
        self.policies: list[Any] = []
        for player, identity in zip(config.players, identities, strict=True):
            if player.kind == "checkpoint":
                from hoi4_arena.play.policy_player import PolicyPlayer

                mode = "deterministic" if config.deterministic else player.mode
                policy = PolicyPlayer(
                    out / identity["frozen"],
                    mode=mode,
                    temperature=player.temperature,
                    reset_memory=player.reset_memory,
                    follow_through=player.follow_through and mode == "point",
                    max_hold=player.max_hold,
                )
                policy.name = player.label
                try:
                    policy.layout.check_screen(config.size)
                except ValueError as error:
                    raise UserError(
                        f"checkpoint {player.player} reads view layout {policy.layout.name!r}, which a "
                        f"{config.size[1]}x{config.size[0]} game cannot provide: {error}"
                    ) from None
                self.policies.append(policy)
            elif player.kind == "random":
                from hoi4_arena.play.random_policy import RandomPolicy

                policy = RandomPolicy()
                policy.name = player.label
                self.policies.append(policy)
            else:
                self.policies.append(None)

    def layout(self, i: int) -> str:
        policy = self.policies[i]
        layout = getattr(policy, "layout", None)
        return layout.name if layout is not None else "cpu"

    def make(self, i: int, side: str, plan: PairPlan, worker: Worker) -> Any:
        from hoi4_arena.screen.game import TokenPlayer

        player = self.config.players[i]
        if player.kind in ("checkpoint", "random"):
            return TokenPlayer(self.policies[i], seed=plan.seed, side=side, speed=self.config.speed)
        from hoi4_arena.players.scripted import ScriptedPlayer
        from hoi4_arena.players.templates import sim_rules

        rgba, hotspot = worker.pointer_image()
        return ScriptedPlayer(
            sim_rules(self.config.size), plan.seed, cursor=(rgba.shape[1], rgba.shape[0], hotspot)
        )


# --- what the gates read ----------------------------------------------------------------------------------


class GateProbe(Worker):
    """A worker that passes everything through and notes what the gates read: every `every`-th capture
    also crops the top bar's date box (`samples`: t_ns, pointer, crop), and every log read the game hour
    and whether the log had named the end (`hours`: t_ns, h, over)."""

    def __init__(self, worker: Worker, box: tuple[int, int, int, int], every: int) -> None:
        from hoi4_arena.gamelog import ArenaState

        self.worker = worker
        self.box = box
        self.every = every
        self.samples: list[tuple[int, tuple[int, int], bytes]] = []
        self.hours: list[tuple[int, int, bool]] = []
        self._state = ArenaState()
        self._captures = 0
        self.match_ns: int | None = None
        """When the worker was first armed in match mode (the harness's start is over)."""

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        request = request or CaptureRequest()
        sample = self._captures % self.every == 0
        self._captures += 1
        if sample:
            request = dataclasses.replace(request, regions={**request.regions, DATE_BOX: self.box})
        capture = self.worker.capture(request)
        if sample:
            crop = capture.regions.get(DATE_BOX)
            if crop is not None:
                self.samples.append((capture.t_ns, tuple(capture.pointer), crop.tobytes()))
        return capture

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        from hoi4_arena.gamelog import GameLogError, parse_line

        lines, end = self.worker.game_log(offset)
        for text in lines:
            with contextlib.suppress(GameLogError):
                line = parse_line(text)
                if line is not None:
                    self._state.update(line)
        self.hours.append((self.worker.now_ns(), self._state.h, self._state.over))
        return lines, end

    def attach(self) -> dict:
        return self.worker.attach()

    def status(self) -> dict:
        return self.worker.status()

    def arm(self, mode) -> None:
        self.worker.arm(mode)
        if mode == "match" and self.match_ns is None:
            self.match_ns = self.worker.now_ns()

    def disarm(self) -> None:
        self.worker.disarm()

    def apply(self, events: list, timed: bool = False) -> dict:
        return self.worker.apply(events, timed)

    def release(self) -> None:
        self.worker.release()

    def focus(self) -> bool:
        return self.worker.focus()

    def events(self) -> list:
        return self.worker.events()

    def pointer_image(self):
        return self.worker.pointer_image()

    def now_ns(self) -> int:
        return self.worker.now_ns()

    def wait_until(self, t_ns: int) -> None:
        self.worker.wait_until(t_ns)

    def telemetry(self) -> dict:
        return self.worker.telemetry()

    def close(self) -> None:
        self.worker.close()


def _near(pointer: tuple[int, int], box: tuple[int, int, int, int], margin: int = 32) -> bool:
    x, y = pointer
    bx, by, bw, bh = box
    return bx - margin <= x < bx + bw + margin and by - margin <= y < by + bh + margin


def check_gates(
    sides: dict[str, dict[str, Any]],
    *,
    speed: int,
    box: tuple[int, int, int, int],
    left: dict[str, str],
    wall_clock: bool = False,
) -> dict[str, str | None]:
    """Each gate's failure (a reason) or None (passed), from what each side's game and probe saw.

    `sides[side]`: `record` (its `GameRecord`), `error` (what its thread raised, or None), `samples` and
    `hours` (its `GateProbe`'s). `left`: the barrier's sides that left, and why. `wall_clock`: the world
    ran on the wall clock (`--game x11`'s windows), where a loaded machine makes it slower than its speed
    (each step is capped, as a game skips frames): the speed gate then refuses only a faster world."""
    from hoi4_arena.sim.clock import HOURS_PER_SECOND

    hps = HOURS_PER_SECOND[speed - 1]
    out: dict[str, str | None] = dict.fromkeys(GATES)
    records = {s: d["record"] for s, d in sides.items()}
    declarers = {r.declarer for r in records.values()}
    if any(r.declarer is None or r.decisions == 0 for r in records.values()) or len(declarers) != 1:
        out["ready"] = "a side never started the match: " + ", ".join(
            f"{s} declarer {r.declarer} after {r.decisions} decisions" for s, r in records.items()
        )
    for side, data in sides.items():
        error, record = data["error"], records[side]
        if error is not None and data.get("player_failed") is None and not isinstance(error, WorkerError):
            out["healthy"] = (
                out["healthy"] or f"{side} crashed outside its player: {type(error).__name__}: {error}"
            )
        if (
            record.reason.startswith("worker:")
            and "disconnect" not in record.reason
            and out["healthy"] is None
        ):
            out["healthy"] = f"{side}'s {record.reason}"
        if record.reason.startswith("worker: disconnect") and out["disconnect"] is None:
            out["disconnect"] = f"{side}: {record.reason.removeprefix('worker: ')}"
    early = {s: why for s, why in left.items() if why not in ("its game ended", "closed")}
    if early and out["disconnect"] is None:
        out["disconnect"] = "; ".join(f"{s} left: {why}" for s, why in early.items())
    # Paused: a side's date box did not change between two samples the clock should have moved >= 2 h.
    for side, data in sides.items():
        over_at = next((t for t, _, over in data["hours"] if over), None)
        start = data.get("match_ns") or 0
        samples = [sample for sample in data["samples"] if sample[0] >= start]
        for (t0, _, crop0), (t1, _, crop1) in zip(samples, samples[1:], strict=False):
            if over_at is not None and t1 >= over_at:
                break
            if crop0 == crop1 and (t1 - t0) * hps / 1e9 >= 2:
                out["paused"] = f"{side}'s date did not move from {t0 / 1e9:.1f} s to {t1 / 1e9:.1f} s"
                break
        if out["paused"]:
            break
    # Desync: both screens' date boxes, read at one instant with the pointers away, must be equal.
    if len(sides) == 2:
        (sa, da), (sb, db) = sides.items()
        at_b = {t: (p, crop) for t, p, crop in db["samples"]}
        for t, pa, crop in da["samples"]:
            if t in at_b and not _near(pa, box) and not _near(at_b[t][0], box) and at_b[t][1] != crop:
                out["desync"] = f"{sa}'s and {sb}'s screens showed other dates at {t / 1e9:.2f} s"
                break
        # The logs' game hours: one world's hours only grow, so the hour A read at t lies between the
        # hours B read just before and just after t (the same instant in lockstep; on the wall clock,
        # where two workers never read at one instant, its neighbours), within a day.
        times_b = [t for t, _, _ in db["hours"]]
        hours_b = [h for _, h, _ in db["hours"]]
        for t, h, _ in da["hours"]:
            after = bisect.bisect_left(times_b, t)
            before = after if after < len(times_b) and times_b[after] == t else after - 1
            if out["desync"] is not None or before < 0 or after >= len(times_b):
                continue
            if h <= hours_b[before] - 24 or h >= hours_b[after] + 24:
                out["desync"] = f"{sa}'s and {sb}'s logs showed other days at {t / 1e9:.2f} s"
    # Speed: the log's game hours over the play time before the end, against the match speed.
    for side, data in sides.items():
        running = [(t, h) for t, h, over in data["hours"] if not over and h > 0]
        if len(running) >= 2:
            (t0, h0), (t1, h1) = running[0], running[-1]
            expected = (t1 - t0) * hps / 1e9
            off = (h1 - h0) - expected
            if expected >= 72 and (off if wall_clock else abs(off)) > 26 + 0.05 * expected:
                out["speed"] = (
                    f"{side}'s log ran {h1 - h0} game hours where speed {speed} gives {expected:.0f}"
                )
                break
    ends = {(r.winner, r.reason) for r in records.values()}
    if not all(r.valid for r in records.values()) or len(ends) != 1:
        out["winner"] = "; ".join(f"{s}: {r.reason or 'no end'}" for s, r in records.items())
    return out


# --- one game ------------------------------------------------------------------------------------------


def play_pair_game(
    hub: Any,
    players: dict[str, Any],
    settings: dict[str, GameSettings],
    *,
    recorders: dict[str, Any] | None = None,
    session_ids: dict[str, str] | None = None,
    probes: dict[str, Worker] | None = None,
) -> dict[str, dict[str, Any]]:
    """Play one game of a `PairHub`: each played side's `play_game` in its own thread, held in lockstep
    by the hub's barrier. Returns per side: `record`, `error` (what its thread raised, or None).
    `probes`: the worker each side plays through (default: the hub's worker of that side)."""
    recorders = recorders or {}
    session_ids = session_ids or {}
    out: dict[str, dict[str, Any]] = {s: {"record": None, "error": None} for s in players}

    def run(side: str) -> None:
        worker = (probes or {}).get(side) or hub.worker(side)
        try:
            record = out[side]["record"] = play_game(
                worker,
                players[side],
                settings[side],
                recorder=recorders.get(side),
                session_id=session_ids.get(side),
            )
            ended = record.valid or record.reason.startswith(("max_decisions", "cut", "worker: disconnect"))
            hub.leave(side, "its game ended" if ended else record.reason)  # a refused worker ends both
        except BaseException as error:  # the player raised (play_game finished the game first)
            if not isinstance(error, KeyboardInterrupt):
                log.warning("%s's game raised", side, exc_info=error)
            out[side]["error"] = error
            hub.leave(side, f"{type(error).__name__}: {error}")

    threads = [
        threading.Thread(target=run, args=(side,), name=f"pair-{side}", daemon=True) for side in players
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except KeyboardInterrupt:
        for side in players:
            hub.leave(side, "interrupted")
        for thread in threads:
            thread.join(hub.barrier_timeout_s + 5)
        raise
    for data in out.values():
        if data["record"] is None:
            error = data["error"]
            data["record"] = GameRecord(valid=False, reason=f"crash: {type(error).__name__}: {error}")
    return out


# --- the run -------------------------------------------------------------------------------------------


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


DECODING_ADDED = {"reset_memory": 0, "follow_through": False, "max_hold": 0}
"""A checkpoint player's decoding settings added after collect-pair stored its first runs, with the values
those runs played with."""


def _stored(out: Path, settings: dict[str, Any]) -> list[dict[str, Any]] | None:
    path = out / SETTINGS
    if not path.is_file():
        if out.exists() and any(out.iterdir()):
            raise UserError(f"{out} is not empty and holds no {SETTINGS}: use a new or empty folder")
        return None
    try:
        stored = json.loads(path.read_text())
        config, players = stored["config"], stored["players"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path} is not a collect-pair settings file ({error})") from None
    mine = {k: v for k, v in settings.items() if k != "players"}
    theirs = {k: v for k, v in config.items() if k != "players"}
    changed = [
        f"{k}: {theirs.get(k)!r} there, {v!r} now"
        for k, v in mine.items()
        if k != "budget" and theirs.get(k) != v
    ]
    for i, (a, b) in enumerate(zip(config["players"], settings["players"], strict=True)):
        for key in ("side", "name", "mode", "temperature", "ai_strength"):
            if a.get(key) != b.get(key):
                changed.append(f"players[{i}].{key}: {a.get(key)!r} there, {b.get(key)!r} now")
        for key, default in DECODING_ADDED.items():  # settings stored before them had their defaults
            if a.get(key, default) != b.get(key, default):
                changed.append(
                    f"players[{i}].{key}: {a.get(key, default)!r} there, {b.get(key, default)!r} now"
                )
        if (a["player"] in KINDS[1:]) != (b["player"] in KINDS[1:]) or (
            a["player"] in KINDS[1:] and a["player"] != b["player"]
        ):
            changed.append(f"players[{i}]: {a['player']!r} there, {b['player']!r} now")
    if changed:
        raise UserError(f"{out} holds games of another pair config ({'; '.join(changed)}); use a new OUT")
    return players


def run_collect_pair(options: CollectPairConfig, config: PairConfig | None = None) -> dict[str, Any]:
    """Play the pair's games into OUT (resuming it); the summary the command prints."""
    config = config or PairConfig.load(options.config)
    if options.game == "sim":
        with _ray_games(options) as cluster:  # before OUT is touched: a bad address writes nothing
            return _collect_pair(options, config, None, cluster)
    ai = [p.label for p in config.players if p.kind == "ai"]
    if ai:
        raise UserError(
            f"--game x11 plays both sides through windows; {', '.join(ai)} is the game's AI, which has no "
            "window (play it with --game sim)"
        )
    from hoi4_arena.screen.pair_windows import PairWindows

    with PairWindows(config.size) as windows:
        return _collect_pair(options, config, windows, None)


def _ray_games(options: CollectPairConfig) -> contextlib.AbstractContextManager[Any]:
    """The run's `play.ray_games.RayGames` with --ray, else None."""
    if options.ray is None:
        return contextlib.nullcontext()
    from hoi4_arena.play.ray_games import RayGames

    return RayGames.connect(options.ray, options.ray_games)


@dataclasses.dataclass
class PairOutcome:
    """One pair game as the run writes it into OUT: its rows, and what the summary counts."""

    index: int
    session: str | None
    """Its folder under OUT (g0000: manifest, worker logs, both sessions), None when it wrote none."""
    rows: list[GameResult]
    valid: bool
    reason: str
    winner: str | None
    play_ns: int
    """The first played side's play time: what the game spends of the minutes budget."""
    decisions: int
    outside: str | None = None
    """The failed gate outside the players (OUTSIDE), with its reason."""


class _PairRun:
    """collect-pair's games: `plan(index)`, and `play(plan, out, left)`, which plays one into
    out/g<index> and gives its `PairOutcome`; the same in the local loop and in a Ray task
    (`play_pair_task`)."""

    def __init__(
        self,
        options: CollectPairConfig,
        config: PairConfig,
        identities: list[dict[str, Any]],
        players: _Players,
        windows: Any,
    ) -> None:
        from hoi4_arena.sim.clock import HOURS_PER_SECOND
        from hoi4_arena.sim.ui_layout import Layout

        self.options, self.config, self.identities = options, config, identities
        self.players, self.windows = players, windows
        self.name = config.pair_id
        self.box = tuple(Layout(config.size)["date_box"])
        self.every = max(5, math.ceil(2 / (HOURS_PER_SECOND[config.speed - 1] * DECISION_NS / 1e9)) + 1)
        # Without a decision limit a game held paused would never end: the time limit's decisions, and some.
        self.cap = math.ceil(1.2 * config.max_days * decisions_per_day(config.speed)) + 100

    def plan(self, index: int) -> PairPlan:
        return plan_game(self.config, index)

    def play(self, plan: PairPlan, out: Path, left: int | None) -> PairOutcome:
        """Play game `plan` into out/g<index> with `left` of the minutes budget (None: no budget). A world
        that cannot be opened is a UserError; Ctrl+C goes up (the unfinished sessions stay, replaced on
        resume)."""
        from hoi4_arena.screen.pair_worker import PairHub
        from hoi4_arena.sessions.lock import remove_unfinished
        from hoi4_arena.sessions.recorder import Recorder, RecorderSettings

        config, options, identities, players = self.config, self.options, self.identities, self.players
        box, every, index = self.box, self.every, plan.index
        folder = out / f"g{index:04d}"
        screen_sides = [s for s, i in plan.sides.items() if config.players[i].kind != "ai"]
        ai = {
            s: config.players[i].ai_strength for s, i in plan.sides.items() if config.players[i].kind == "ai"
        }
        kinds = {
            s: "scripted" if config.players[plan.sides[s]].kind == "scripted" else "policy"
            for s in screen_sides
        }
        layouts = {s: players.layout(plan.sides[s]) for s in screen_sides}
        game_stack = contextlib.ExitStack()
        try:
            if self.windows is None:
                hub = PairHub(
                    plan.spec,
                    plan.seed,
                    size=config.size,
                    layout=layouts,
                    sides=tuple(screen_sides),
                    ai=ai,
                    max_days=config.max_days,
                    player_kinds=kinds,
                    barrier_timeout_s=options.barrier_timeout_s,
                )
                game_stack.callback(hub.close)
            else:
                hub = game_stack.enter_context(
                    self.windows.open(
                        arena=plan.spec,
                        seed=plan.seed,
                        layouts=layouts,
                        max_days=config.max_days,
                        kinds=kinds,
                        barrier_timeout_s=options.barrier_timeout_s,
                    )
                )
        except WorkerError as error:
            game_stack.close()
            raise UserError(f"game {index}: the pair's world could not be opened: {error}") from None
        with game_stack:
            timed, settings_of, recorders, session_ids, probes = {}, {}, {}, {}, {}
            for side in screen_sides:
                i = plan.sides[side]
                probes[side] = GateProbe(hub.worker(side), box, every)
                timed[side] = TimedPlayer(players.make(i, side, plan, hub.worker(side)))
                settings_of[side] = GameSettings(
                    side=side,
                    speed=config.speed,
                    spec=plan.spec,
                    max_decisions=config.max_decisions or self.cap,
                    budget_ns=left,
                )
                if config.record:
                    session_ids[side] = f"{folder.name}-{side}"
                    remove_unfinished(folder / side)
                    recorders[side] = Recorder(
                        folder / side,
                        RecorderSettings(
                            hz=5.0,
                            game_speed=config.speed,
                            source=kinds[side],
                            codec=config.codec,
                            game="sim",
                            side=side,
                            after_winner_s=0.0,
                            realtime=self.windows is not None,
                            extra={
                                "pair": {
                                    "pair_id": config.pair_id,
                                    "game": index,
                                    "seed": plan.seed,
                                    "player": identities[i],
                                    "opponent": _opponent(identities, plan, side),
                                }
                            },
                        ),
                    )
            folder.mkdir(parents=True, exist_ok=True)
            sides = play_pair_game(
                hub, timed, settings_of, recorders=recorders, session_ids=session_ids, probes=probes
            )
            for side, data in sides.items():
                data.update(
                    samples=probes[side].samples, hours=probes[side].hours, match_ns=probes[side].match_ns
                )
            player_error = None
            for side, data in sides.items():
                failed = data["player_failed"] = timed[side].failed
                if failed is not None and player_error is None:
                    player_error = f"player: {side}: {type(failed).__name__}: {failed}"
            gates = check_gates(
                sides, speed=config.speed, box=box, left=dict(hub.left), wall_clock=self.windows is not None
            )
            broken = next(((g, why) for g, why in gates.items() if why is not None and g != "winner"), None)
            outside = None
            if player_error is not None:
                reason = player_error  # what it caused (the other side's disconnect) is the player's too
            elif broken is not None:
                reason = f"{broken[0]}: {broken[1]}"
                if broken[0] in OUTSIDE:
                    outside = f"game {index}: {reason}"
            elif gates["winner"] is not None:
                reason = next(r.reason for r in (d["record"] for d in sides.values()) if not r.valid)
            else:
                reason = ""
            valid = not reason
            for side in screen_sides:
                _write_worker_log(folder / f"worker-{side}.jsonl", hub.worker(side))
            manifest = _manifest(config, plan, identities, sides, gates, valid, reason, timed)
            (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        first = sides[screen_sides[0]]["record"]
        return PairOutcome(
            index=index,
            session=folder.name,
            rows=_rows(config, plan, identities, sides, valid, reason, timed, folder.name),
            valid=valid,
            reason=reason,
            winner=first.winner,
            play_ns=first.play_ns,
            decisions=sum(d["record"].decisions for d in sides.values()),
            outside=outside,
        )

    def lost(self, plan: PairPlan, record: GameRecord) -> PairOutcome:
        """A game whose Ray task died (`record`: the invalid record of it): invalid, its rows without a
        session."""
        sides = {s: {"record": record} for s in plan.sides if self.config.players[plan.sides[s]].kind != "ai"}
        timed = {s: TimedPlayer(None) for s in sides}
        rows = _rows(self.config, plan, self.identities, sides, False, record.reason, timed, "")
        return PairOutcome(plan.index, None, rows, False, record.reason, None, 0, 0)


def play_pair_task(run: _PairRun, plan: PairPlan, folder: Path, left: int | None) -> PairOutcome:
    """A pair game in a Ray task (`play.ray_games.RayGames.play`'s game): played into `folder`."""
    return run.play(plan, folder, left)


def _collect_pair(
    options: CollectPairConfig, config: PairConfig, windows: Any, cluster: Any
) -> dict[str, Any]:
    """run_collect_pair's games: in one headless `PairHub` each (`windows` None), or through `windows`
    (a `screen.pair_windows.PairWindows`: each side's window on its own Xvfb, its own X11 worker); as
    Ray tasks with `cluster` (a `play.ray_games.RayGames`, headless only), written into OUT in plan
    order as the local loop writes them."""
    out = options.out
    settings = config.to_dict()
    stored = _stored(out, settings)
    out.mkdir(parents=True, exist_ok=True)
    identities = freeze_players(config, out, stored)
    (out / SETTINGS).write_text(json.dumps({"config": settings, "players": identities}, indent=1) + "\n")
    if options.threads:
        import torch

        torch.set_num_threads(options.threads)
    run = _PairRun(options, config, identities, _Players(config, identities, out), windows)
    results = out / RESULTS
    rows = read_results(results) if results.exists() else []
    done = {r.extra.get("game") for r in rows}
    minutes = {r.extra.get("game"): float(r.extra.get("minutes", 0)) for r in rows}  # a game's rows agree
    spent_ns = sum(round(m * 60e9) for m in minutes.values())
    budget_ns = None if config.budget.minutes is None else round(config.budget.minutes * 60e9)
    started = time.perf_counter()
    games_now = decisions_now = 0
    outside: list[str] = []
    interrupted = False

    def budget_left() -> int | None:
        return None if budget_ns is None else budget_ns - spent_ns

    def wall_out() -> bool:
        return bool(options.wall_minutes) and time.perf_counter() - started >= options.wall_minutes * 60

    def finished(plan: PairPlan, game: PairOutcome | GameRecord) -> None:
        nonlocal spent_ns, games_now, decisions_now
        if isinstance(game, GameRecord):  # its Ray task died
            game = run.lost(plan, game)
        for row in game.rows:
            append_result(results, row)
        rows.extend(game.rows)
        spent_ns += game.play_ns
        games_now += 1
        decisions_now += game.decisions
        if game.outside is not None:
            outside.append(game.outside)
        if options.progress:
            from hoi4_arena.terminal import stderr

            stderr.print(
                f"game {plan.index} ({plan.spec} s{plan.seed}): "
                + ", ".join(f"{identities[i]['name']} {s}" for s, i in plan.sides.items())
                + f" -> {game.winner or 'draw'}"
                + ("" if game.valid else f" [invalid: {game.reason}]"),
                highlight=False,
            )

    pending = (index for index in range(config.budget.games) if index not in done)
    if cluster is not None:
        interrupted = cluster.play(run, out, pending, budget_left, wall_out, finished, game=play_pair_task)
    else:
        interrupted = play_in_order(
            pending, run.plan, lambda plan, left: run.play(plan, out, left), budget_left, wall_out, finished
        )
    seconds = time.perf_counter() - started
    lates: list[float] = []  # every decision of every game in OUT, from the games' manifests
    for folder in sorted(out.glob("g[0-9][0-9][0-9][0-9]")):
        manifest_path = folder / "manifest.json"
        if manifest_path.is_file():
            for side_data in json.loads(manifest_path.read_text())["sides"].values():
                lates += side_data.get("late_ms", [])
    by_player = {
        identity["name"]: win_record([r for r in rows if r.player == identity["name"]])
        for identity, player in zip(identities, config.players, strict=True)
        if player.kind != "ai"
    }
    games = sorted({r.extra.get("game") for r in rows})
    return {
        "out": str(out),
        "pair_id": config.pair_id,
        "players": identities,
        "games": len(games),
        "valid": len({r.extra.get("game") for r in rows if r.valid}),
        "invalid": invalid_by_reason(rows),
        "records": by_player,
        "late_ms": {
            "p50": _quantile(lates, 0.5),
            "p99": _quantile(lates, 0.99),
            "max": max(lates, default=None),
        },
        "deadline_miss": sum(v >= DEADLINE_MS for v in lates),
        "failed_outside_players": outside,
        "interrupted": interrupted,
        "this_run": {
            "games": games_now,
            "decisions": decisions_now,
            "seconds": round(seconds, 2),
            "decisions_per_s": round(decisions_now / seconds, 1) if seconds > 0 and decisions_now else None,
        },
        "settings": settings,
        **({} if cluster is None else {"ray": {"placed": cluster.placed, "stopped": cluster.stopped}}),
    }


def invalid_by_reason(rows: list[GameResult]) -> dict[str, int]:
    """Invalid games of OUT by the first word of their reason (ready, paused, player, max_decisions...)."""
    reasons = {r.extra.get("game"): r.reason.split(":")[0] for r in rows if not r.valid}
    counts: dict[str, int] = {}
    for reason in reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items()))


def _opponent(identities: list[dict[str, Any]], plan: PairPlan, side: str) -> dict[str, Any]:
    return identities[plan.sides[other_tag(side)]]


def _write_worker_log(path: Path, worker: Any) -> None:
    with path.open("w") as handle:
        if not hasattr(worker, "fed_log"):  # an X11 worker (--game x11): what it sent is in the session
            handle.write(
                json.dumps({"status": worker.status(), "telemetry": worker.telemetry()}, default=str) + "\n"
            )
            return
        for fed in worker.fed_log:
            handle.write(json.dumps(fed._asdict()) + "\n")
        handle.write(
            json.dumps({"telemetry": worker._counts, "left": worker.hub.left.get(worker.side)}) + "\n"
        )


def _manifest(config, plan, identities, sides, gates, valid, reason, timed) -> dict[str, Any]:
    by_side = {}
    for side, data in sides.items():
        record: GameRecord = data["record"]
        late = timed[side].late_ms if side in timed else []
        by_side[side] = {
            "player": identities[plan.sides[side]],
            "winner": record.winner,
            "valid": record.valid,
            "reason": record.reason,
            "declarer": record.declarer,
            "days": record.days,
            "decisions": record.decisions,
            "minutes": round(record.play_ns / 60e9, 4),
            "session": record.session and f"{side}",
            "setup": record.setup,
            "late_ms": late,
            "deadline_miss": sum(v >= DEADLINE_MS for v in late),
        }
    for side, i in plan.sides.items():
        if side not in by_side:
            by_side[side] = {"player": identities[i], "ai": True}
    return {
        "pair_id": config.pair_id,
        "game": plan.index,
        "map": plan.spec,
        "seed": plan.seed,
        "speed": config.speed,
        "sides": by_side,
        "gates": {g: why is None for g, why in gates.items()},
        "gate_reasons": {g: why for g, why in gates.items() if why is not None},
        "valid": valid,
        "reason": reason,
        "deadline_miss": sum(s.get("deadline_miss", 0) for s in by_side.values()),
    }


def _rows(config, plan, identities, sides, valid, reason, timed, folder) -> list[GameResult]:
    rows = []
    first = next(iter(sides.values()))["record"]
    for side, i in plan.sides.items():
        identity = identities[i]
        if identity["kind"] == "ai":
            continue
        record: GameRecord = sides[side]["record"]
        late = timed[side].late_ms
        rows.append(
            GameResult(
                player=identity["name"],
                side=side,
                winner=first.winner if valid else record.winner,
                valid=valid,
                arena=plan.spec,
                seed=plan.seed,
                opponent=_opponent(identities, plan, side)["name"],
                reason=reason if not valid else record.reason,
                extra={
                    "game": plan.index,
                    "pair_id": config.pair_id,
                    "declarer": record.declarer,
                    "days": record.days,
                    "decisions": record.decisions,
                    "minutes": round(record.play_ns / 60e9, 4),
                    "late_ms_p99": _quantile(late, 0.99),
                    "deadline_miss": sum(v >= DEADLINE_MS for v in late),
                    "session": f"{folder}/{side}" if record.session else None,
                    "setup": record.setup,
                },
            )
        )
    return rows


# --- head to head: evaluate A B OUT --head-to-head --------------------------------------------------------

HEAD_TO_HEAD = "head-to-head"


def run_head_to_head(config: Any) -> dict[str, Any]:
    """`evaluate A B OUT --head-to-head --pairs N` (`config`: play.evaluate's `EvaluateConfig`): A plays B
    in one world, 2N games into OUT/head-to-head/ through collect-pair (A BLU then RED on each seed, the
    seeds salted by the pair id "evaluate"), then the paired report.

    Each seed's two games are one pair, keyed by (seed, BLU): A's game as BLU against B's game as BLU
    (`evaluation.paired.compare`; keying each seed once, as the mirror pair would count it twice). The
    discordant pairs are seeds one player won from both sides; A's score over the pairs is
    (1 + score difference) / 2, and without draws its 95% interval is that of the win-rate difference
    (Newcombe's), mapped the same way.

    With `--league DIR`, A, B and every checkpoint in DIR (`*.pt`) play each other the same way (each
    pair into OUT/league/<i>-vs-<j>/), and `league` is the Elo table fitted to all those games
    (`elo_table`).
    """
    from hoi4_arena.evaluation.paired import format_report

    if config.game != "sim":
        raise UserError("--head-to-head plays both players in one simulated world: --game sim only")
    config.out.mkdir(parents=True, exist_ok=True)
    names = (config.names[0], config.names[1])
    members = [(config.a, names[0]), (config.b, names[1])]
    if config.league is not None:
        members += _league_members(Path(config.league), {p for p, _ in members}, {n for _, n in members})
    pair_config, summary, rows = _play_pair(
        config, members[0], members[1], config.out / HEAD_TO_HEAD, "head-to-head"
    )
    planned = [(plan_game(pair_config, 2 * k).seed, "BLU") for k in range(config.pairs)]
    result = head_to_head_report(rows, planned, names)
    interrupted = summary["interrupted"]
    outside = list(summary["failed_outside_players"])
    if config.league is not None:
        league_rows = list(rows)
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                if (i, j) == (0, 1) or interrupted:
                    continue
                folder = config.out / "league" / f"{i:02d}-vs-{j:02d}"
                _, played, pair_rows = _play_pair(
                    config, members[i], members[j], folder, f"league-{i:02d}-vs-{j:02d}"
                )
                league_rows += pair_rows
                interrupted = interrupted or played["interrupted"]
                outside += played["failed_outside_players"]
        result["league"] = elo_table(league_rows, [n for _, n in members])
    if interrupted:
        result["incomplete"].append("interrupted")
        result["complete"] = False
    result.update(
        pairs=config.pairs,
        interrupted=interrupted,
        out=str(config.out),
        folders={"games": str(config.out / HEAD_TO_HEAD)},
        collect_pair={
            k: summary[k]
            for k in ("games", "valid", "invalid", "late_ms", "deadline_miss", "ray")
            if k in summary
        },
        failed_outside_players=outside,
        command="evaluate --head-to-head",
    )
    (config.out / "evaluate.json").write_text(json.dumps(_finite(result), indent=1) + "\n")
    if config.progress:
        from hoi4_arena.terminal import stderr

        stderr.print(format_report(result), end="", highlight=False, soft_wrap=True)
    return result


def _league_members(folder: Path, players: set[str], names: set[str]) -> list[tuple[str, str]]:
    """The checkpoints of a league folder, by name (the file's stem, made unique), A's and B's files left out."""
    if not folder.is_dir():
        raise UserError(f"--league {folder} is not a folder of checkpoints")
    found = []
    for path in sorted(folder.glob("*.pt")):
        if str(path) in players:
            continue
        name, k = f"league/{path.stem}", 2
        while name in names:
            name, k = f"league/{path.stem}-{k}", k + 1
        names.add(name)
        found.append((str(path), name))
    if not found:
        raise UserError(f"--league {folder} holds no checkpoint (*.pt)")
    return found


def _play_pair(
    config: Any, first: tuple[str, str], second: tuple[str, str], out: Path, label: str
) -> tuple[PairConfig, dict[str, Any], list[GameResult]]:
    """collect-pair's games of `first` (BLU first) against `second`, into `out`, with evaluate's settings."""
    mode = "deterministic" if config.deterministic else "point" if config.point else "sample"
    players = []
    for (player, name), side in ((first, "BLU"), (second, "RED")):
        entry: dict[str, Any] = {"player": player, "side": side, "name": name}
        if player not in KINDS[1:]:
            entry.update(mode=mode, temperature=config.temperature)
            # Written only when asked for: the pair configs of runs before these options stay the same.
            asked = {
                "reset_memory": config.reset_memory,
                "follow_through": config.follow_through,
                "max_hold": config.max_hold,
            }
            entry.update({k: v for k, v in asked.items() if v})
        players.append(entry)
    data = {
        "pair_id": "evaluate",
        "players": players,
        "schedule": {"arenas": [config.arena_spec], "swap_sides": True},
        "budget": {"games": 2 * config.pairs},
        "seed": config.seed,
        "size": [config.size[1], config.size[0]],
        "speed": config.speed,
        "max_days": config.max_days,
        "record": config.record,
        "codec": config.codec,
    }
    pair_config = PairConfig.from_dict(data)  # bad players are refused before anything is written
    config_path = config.out / f"{label}.json"
    config_path.write_text(json.dumps(data, indent=1) + "\n")
    options = CollectPairConfig(
        config_path,
        out,
        threads=config.threads,
        progress=config.progress,
        ray=config.ray,
        ray_games=config.ray_games,
    )
    summary = run_collect_pair(options, pair_config)
    rows = read_results(out / RESULTS) if (out / RESULTS).exists() else []
    return pair_config, summary, rows


def elo_table(rows: list[GameResult], names: list[str], prior: float = 1.0) -> list[dict[str, Any]]:
    """Elo ratings fitted to head-to-head games (valid rows, one per player per game; a draw is half a
    win): the Bradley-Terry model's maximum a posteriori strengths by Hunter's (2004) MM iteration, each
    player given `prior` virtual draws against a fixed 1500 player (so an unbeaten or winless record still
    has a finite rating), on the Elo scale (400 log10 of the strength ratio). Sorted best first."""
    scores = {n: 0.0 for n in names}
    meetings: dict[tuple[str, str], float] = {}
    for row in rows:
        if not row.valid or row.player not in scores or row.opponent not in scores:
            continue
        scores[row.player] += {"win": 1.0, "draw": 0.5, "loss": 0.0}[row.outcome]
        key = tuple(sorted((row.player, row.opponent)))
        meetings[key] = meetings.get(key, 0.0) + 0.5  # each game has a row from either side
    strength = {n: 1.0 for n in names}
    for _ in range(2000):
        new = {}
        for n in names:
            wins = scores[n] + prior / 2
            denom = prior / (strength[n] + 1.0)  # the virtual games against strength 1 (1500)
            for (a, b), count in meetings.items():
                if n in (a, b):
                    other = b if n == a else a
                    denom += count / (strength[n] + strength[other])
            new[n] = wins / denom
        done = max(abs(math.log(new[n] / strength[n])) for n in names) < 1e-10
        strength = new
        if done:
            break
    table = []
    for n in names:
        games = sum(count for (a, b), count in meetings.items() if n in (a, b))
        table.append(
            {
                "player": n,
                "elo": round(1500 + 400 * math.log10(strength[n]), 1),
                "games": int(round(games)),
                "score": round(scores[n] / games, 3) if games else None,
            }
        )
    return sorted(table, key=lambda r: -r["elo"])


def head_to_head_report(
    rows: list[GameResult], planned: list[tuple[int, str]], names: tuple[str, str]
) -> dict[str, Any]:
    """`evaluation.paired.compare` of A's rows against B's, `planned` one (seed, BLU) key per seed, plus
    A's head-to-head score and its interval (see `run_head_to_head`)."""
    from hoi4_arena.evaluation.paired import compare

    report = compare(
        [r for r in rows if r.player == names[0]], [r for r in rows if r.player == names[1]], planned, names
    )
    score = report["score_difference"]["estimate"]
    difference = report["win_rate_difference"]
    report["head_to_head"] = {
        "a_score": (1 + score) / 2 if math.isfinite(score) else None,
        "a_score_low": (1 + difference["low"]) / 2 if math.isfinite(difference["low"]) else None,
        "a_score_high": (1 + difference["high"]) / 2 if math.isfinite(difference["high"]) else None,
        "p_value": report["score_difference"]["p_value"],
        "draws": sum(r.outcome == "draw" for r in rows if r.valid and r.player == names[0]),
        "note": "each seed is a pair (A as BLU and as RED); the interval is exact in this form without draws",
    }
    return report


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
