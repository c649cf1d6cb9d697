"""One game on a worker, decision by decision: the match every player plays, recorded or not.

`Game` is a match stepped by hand: `start` (attach; a player that reads views must read the worker's
layout; a player with `warm_up` makes one decision that is thrown away, since the first call of a
model is slow and on a live game would make the first real decision late; the harness's
`start_match`, or on a restored save whose match already runs (`GameSettings.running`) the log so
far; the session's recorder starts; the worker is armed: setup mode while a paused-setup player may
still press space, else match mode), then `observe` / `act` until `ended`, then `finish`.
`play_game` is that loop for a player that answers a capture with events; the Gymnasium env steps the
same object one action at a time, and the runs of games of `play/runner.py` call `play_game`.

Every 200 ms on a fixed grid of the worker's clock: one capture of what the player asks for (with the
full frame when recording: `SharedCapture` makes it the recorder's frame too, so the session stores the
very frame the player saw), the ARENA log polled (by the harness, never the player), the player's
events applied timed and stored, the recorder's further frames of the decision (`hz` above 5), then a
wait for the next grid point; a decision that overran skips the grid points it missed (`late`, live
games only). The game ends `after_end_s` after the ARENA log names a winner or a draw (the world's time
limit), or invalid: after `max_decisions` decisions, when `budget_ns` of play have passed on the
worker's clock, or when the worker refuses (`WorkerError`). `finish` lets go of everything
(`finish_match`), annotates the player's orders from the log into the manifest with its summary, and
closes the session with the reason.

The recorder is a `sessions.recorder.Recorder` (duck-typed here: sessions sit above the screen layer).

Try: python -m hoi4_arena.screen.game river 3
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, parse_line, setup_milestones, war_summary
from hoi4_arena.maps.model import TAGS
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.match import MatchConfig, MatchLog, finish_match, start_match
from hoi4_arena.screen.shared_capture import SharedCapture
from hoi4_arena.screen.tokens import DECISION_NS, tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.sim.headless import arena_of

# --- players ------------------------------------------------------------------------------------------


class Player(Protocol):
    """What the runner plays: a capture in, the next 200 ms of input events out.

    The scripted player, the AI game's spectator and the handover player are such players; a policy that
    answers in tokens (a checkpoint, the random policy) becomes one through `TokenPlayer`. Optional:
    `orders` (annotated from the log into the manifest), `summary()`, `notes`, `strategy`, `outcome`
    (what the end panel showed), `handover`, `layout` (the views it reads), `warm_up(capture)`.
    """

    setup_keys: bool
    """Whether it may still press setup-mode keys (a paused setup's space): the worker stays in setup mode."""

    def request(self) -> CaptureRequest: ...

    def decide(self, capture: Capture) -> list[InputEvent]: ...


class TokenPolicy(Protocol):
    """A policy that answers in tokens: `play.policy_player.PolicyPlayer`, `play.random_policy.RandomPolicy`."""

    name: str
    layout: ViewLayout | None

    def reset(self, seed: int) -> None: ...

    def decide(
        self, views: dict[str, np.ndarray] | None, speed: int, pointer: tuple[int, int]
    ) -> np.ndarray: ...


def sampling_seed(game_seed: int, side: str) -> int:
    """A policy's sampling seed for one game: a stream apart from the game's own seeded randomness."""
    return int(np.random.SeedSequence([game_seed, TAGS.index(side), 0x706C6179]).generate_state(1)[0])


class TokenPlayer:
    """A token policy as a runner player: its tokens become the events of the decision after the capture.

    The policy is reset with the game's sampling seed (`sampling_seed(seed, side)`), so the same game
    gives the same tokens whatever was played before.
    """

    setup_keys = False

    def __init__(self, policy: TokenPolicy, *, seed: int, side: str, speed: int) -> None:
        self.policy = policy
        self.name = policy.name
        self.layout = policy.layout
        self.speed = speed
        self._seed = sampling_seed(seed, side)

    def request(self) -> CaptureRequest:
        return CaptureRequest(views=self.layout is not None)

    def warm_up(self, capture: Capture) -> None:
        """One decision thrown away (its allocations made before the match), then the game's stream."""
        self.policy.reset(0)
        self.decide(capture)
        self.policy.reset(self._seed)

    def decide(self, capture: Capture) -> list[InputEvent]:
        pointer = to_lattice(*capture.pointer, capture.size)
        tokens = self.policy.decide(capture.views or None, self.speed, pointer)
        # The decision's slots count from its capture: a recording cuts decisions at the frames.
        return tokens_to_events(tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy")


# --- one game -----------------------------------------------------------------------------------------


LATE_EVENTS_NS = DECISION_NS
"""A decision whose events come this long after the capture they were timed from (a player slower than
a live game: a loaded CPU, a large model on a CPU) is played from now, its events' spacing kept; the
worker would refuse events timed further than its watchdog from now, and the game would end invalid.
On the simulator's clock, which stands still while a player thinks, it never happens."""


@dataclass
class GameRecord:
    """How one game went, from the player's side, and what was recorded."""

    winner: str | None = None
    valid: bool = True
    reason: str = ""
    declarer: str | None = None
    days: int = 0
    decisions: int = 0
    play_ns: int = 0
    """Time on the worker's clock from the unpause to the end."""
    late: int = 0
    """Decision slots of the 200 ms grid skipped because a decision overran (live games only)."""
    seen: str | None = None
    """What the player saw on the end panel: win, loss, draw (None: it never showed, or it does not look)."""
    strategy: dict[str, Any] = field(default_factory=dict)
    orders: list[dict[str, Any]] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)
    war: dict[str, int] = field(default_factory=dict)
    """The side's offensives drawn and days executing (`gamelog.war_summary`)."""
    session: str | None = None
    notes: list[str] = field(default_factory=list)
    handover: int | None = None
    """The decision at which a handover player's scripted player took over."""


@dataclass(frozen=True)
class GameSettings:
    """How one game is played and recorded, whoever plays it."""

    side: str
    """The side the player plays (its outcome, setup milestones and orders are that side's)."""
    speed: int = 5
    """Game speed 1..5 of the match."""
    spec: str | None = None
    """The map (preset:seed or a folder), for annotating orders with what they aimed at."""
    hz: int = 5
    """Frames a second the recorder stores: 5 (one per decision) or a multiple of it."""
    after_end_s: float = 0.0
    """Seconds played and recorded after the log names the winner (the end panel)."""
    max_decisions: int = 0
    """Stop after this many decisions (0: no limit); a game stopped so is unfinished (invalid)."""
    budget_ns: int | None = None
    """Stop when this much play has passed on the worker's clock (invalid: cut)."""
    running: bool = False
    """The match already runs (a restored save past its declaration, rung-games' S1..S3): no harness
    start (it would type the declaration again and press space, pausing the game); the log so far,
    declaration and setup steps done, is read from the game."""


class Game:
    """One match on a worker, stepped decision by decision: `start`, then `observe` / `act` until
    `ended`, then `finish` (always, in a `finally`). `play_game` is the loop a command runs; the
    Gymnasium env steps the same object one action at a time."""

    def __init__(
        self, worker: Worker, settings: GameSettings, *, recorder: Any = None, session_id: str | None = None
    ) -> None:
        self.worker: Worker = SharedCapture(worker)
        self.settings = settings
        self.recorder = recorder
        self.session_id = session_id
        self.record = GameRecord()
        self.log: MatchLog | None = None
        self.info: dict[str, Any] = {}
        self.end: str | None = None
        """Why the game ended (winner, draw, cut, max_decisions, error: ...), None while it runs."""
        self._mode = "match"
        self._tick = self._start = 0
        self._ended_at: int | None = None

    @property
    def ended(self) -> bool:
        return self.end is not None

    def start(self, player: Any) -> None:
        """Attach, warm the player up, start the match and the recording, arm the worker."""
        worker, record = self.worker, self.record
        self.end = "error: the game did not start"
        self.info = worker.attach()
        layout = getattr(player, "layout", None)
        if layout is not None and self.info.get("layout") != layout.version:
            raise UserError(
                f"the worker captures view layout {self.info.get('layout')!r}, the player reads "
                f"{layout.version!r} ({layout.name}); it cannot play this game"
            )
        if hasattr(player, "warm_up"):
            player.warm_up(worker.capture(player.request()))
        if self.settings.running:
            self.log = MatchLog(worker)
            self.log.poll()  # the restored game's whole log: its declaration and the setup steps done
            record.declarer = self.log.declarer
        else:
            started = start_match(worker, MatchConfig(speed=self.settings.speed))
            record.declarer = started.declarer
            self.log = MatchLog(worker, started.log_offset, started.log_lines)
        if self.recorder is not None:
            self.recorder.start(worker, self.info)
            if self.session_id is not None:
                self.recorder.writer.update_manifest(id=self.session_id)
        self._mode = "setup" if player.setup_keys and not self.settings.running else "match"
        worker.arm(self._mode)
        self._tick = self._start = worker.now_ns()
        self.end = None

    def observe(self, player: Any) -> Capture:
        """This decision's capture (recorded), the log polled, and whether the game has now ended."""
        worker, settings, record = self.worker, self.settings, self.record
        assert self.log is not None, "start() the game first"
        if self._mode == "setup" and not player.setup_keys:
            self._mode = "match"  # the paused setup is over: no more space, Esc or speed keys
            worker.arm(self._mode)
        request = player.request()
        if self.recorder is not None:
            request = dataclasses.replace(request, full=True)
        capture = worker.capture(request)
        if self.recorder is not None:
            self._record_step()  # the same capture: the frame stored is the one the player sees
        self.log.poll()
        now = capture.t_ns
        if self.log.over and self._ended_at is None:
            self._ended_at = now
        if self._ended_at is not None and now - self._ended_at >= settings.after_end_s * 1e9:
            self.end = "winner" if self.log.winner is not None else "draw"
        elif settings.max_decisions and record.decisions >= settings.max_decisions:
            self.end = "max_decisions"
            record.valid = False
            record.reason = (
                f"max_decisions: stopped after {settings.max_decisions} decisions, the game had not ended"
            )
        elif (
            settings.budget_ns is not None
            and now - self._start >= settings.budget_ns
            and self._ended_at is None
        ):
            self.end = "cut"
            record.valid = False
            record.reason = "cut: the --minutes budget ran out during this game"
        return capture

    def act(self, events: list[InputEvent], orders: list[dict[str, Any]] | None = None) -> None:
        """Apply one decision's events (timed from its capture), store them, and wait for the next grid
        point. `orders`: the player's orders given in this decision (they get the frame they were seen at)."""
        worker, recorder, record = self.worker, self.recorder, self.record
        if events:
            behind = worker.now_ns() - min(event.t_ns for event in events)
            if behind > LATE_EVENTS_NS:
                events = [dataclasses.replace(event, t_ns=event.t_ns + behind) for event in events]
            worker.apply(events, timed=True)
            if recorder is not None:
                recorder.add_inputs(events)
        for order in orders or ():
            order["frame"] = recorder.frames - 1 if recorder is not None else None
        record.decisions += 1
        steps = self.settings.hz // 5
        for k in range(1, steps):  # the recorder's further frames inside this decision
            worker.wait_until(self._tick + k * DECISION_NS // steps)
            if recorder is not None:
                self._record_step()
        self._tick += DECISION_NS
        now = worker.now_ns()
        if now > self._tick:  # a live game: a decision that overran skips to the next grid point
            missed = (now - self._tick) // DECISION_NS + 1
            record.late += missed
            self._tick += missed * DECISION_NS
        worker.wait_until(self._tick)

    def fail(self, error: BaseException) -> None:
        """The game cannot go on: a worker's refusal makes it invalid; anything else is the reason the
        session ends with (the caller re-raises it)."""
        if isinstance(error, WorkerError):
            self.record.valid = False
            self.record.reason = f"worker: {error}"
            self.end = f"error: {error}"
        elif isinstance(error, KeyboardInterrupt):
            self.end = "interrupt"
        else:
            self.end = f"error: {type(error).__name__}: {error}"

    def finish(self, player: Any) -> GameRecord:
        """Let go of everything, annotate the orders, close the session; the game's record."""
        worker, record, side = self.worker, self.record, self.settings.side
        if self.log is not None and self.end is None:
            self.end = "interrupt"
        if self.log is not None:
            record.play_ns = worker.now_ns() - self._start
        with contextlib.suppress(WorkerError):
            finish_match(worker)
        orders = getattr(player, "orders", None)
        if self.log is not None and orders is not None:
            record.orders = annotate_orders(orders, self.log.lines, side, self.settings.spec)
        recorder = self.recorder
        if recorder is not None and recorder.writer is not None and not recorder.writer.closed:
            if hasattr(player, "summary"):
                recorder.writer.update_manifest(
                    orders=record.orders,
                    extra={**recorder.writer.manifest.extra, "player": player.summary()},
                )
            recorder.close(self.end or "error: the game did not start")
            record.session = str(recorder.folder)
        record.seen = getattr(player, "outcome", None)
        strategy = getattr(player, "strategy", None)
        record.strategy = strategy.to_dict() | {"label": strategy.label} if strategy is not None else {}
        record.notes = list(getattr(player, "notes", []))
        record.handover = getattr(player, "handover", None)
        if self.log is None:  # the match never started
            record.setup = setup_milestones([], side)
            record.war = war_summary([], side)
            return record
        state = self.log.state
        if record.valid:
            record.winner = state.winner
            record.reason = "capitulation" if state.winner is not None else f"draw: {state.draw}"
        record.days = state.h // 24
        record.setup = setup_milestones(self.log.lines, side)
        record.war = war_summary(self.log.lines, side)
        return record

    def _record_step(self) -> None:
        stop = self.recorder.step()  # this instant's frame and log lines into the session
        if stop is not None and stop.startswith("error"):
            raise WorkerError("recorder", stop.removeprefix("error: "))


def play_game(
    worker: Worker,
    player: Any,
    settings: GameSettings,
    *,
    recorder: Any = None,
    session_id: str | None = None,
    on_decision: Callable[[int], None] | None = None,
    on_start: Callable[[], None] | None = None,
    until: Callable[[int], bool] | None = None,
) -> GameRecord:
    """Play one game on `worker` (a new, paused game) through `player` and finish it; see the module
    docstring. `recorder` is an unstarted `sessions.recorder.Recorder` or None; `session_id` names its
    session. `on_start()` runs once the match harness has started the game, `on_decision(decisions)`
    after each decision, and `until(decisions)`, after each decision too, ends the game early when it
    says so (make-ladder stops once its last rung is saved). A `WorkerError` makes the game invalid;
    anything else propagates after the match is finished and the session closed."""
    game = Game(worker, settings, recorder=recorder, session_id=session_id)
    try:
        game.start(player)
        if on_start is not None:
            on_start()
        while True:
            capture = game.observe(player)
            if game.ended:
                break
            orders = getattr(player, "orders", None)
            before = len(orders) if orders is not None else 0
            events = player.decide(capture)
            game.act(events, orders[before:] if orders is not None else None)
            if on_decision is not None:
                on_decision(game.record.decisions)
            if until is not None and until(game.record.decisions):
                break
    except WorkerError as error:
        game.fail(error)
    except BaseException as error:
        game.fail(error)
        raise
    finally:
        record = game.finish(player)
    return record


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


if __name__ == "__main__":
    import sys

    from hoi4_arena.screen.sim_worker import SimWorker

    class _Idle:
        """A player that only watches: the game's AI plays the other side."""

        setup_keys = False

        def request(self) -> CaptureRequest:
            return CaptureRequest(views=False)

        def decide(self, capture: Capture) -> list[InputEvent]:
            return []

    preset = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with SimWorker(f"{preset}:{seed}", seed, size=(360, 640), layout="cpu", max_days=60) as worker:
        print(play_game(worker, _Idle(), GameSettings(side="BLU")))
