"""One rollout game: a headless simulator game stepped through `screen.game.Game`, one decision per call.

The rollout engine (`rl/rollout.py`) asks a game for its first observation (`begin`), then hands it one
decision's tokens at a time (`step`) and gets the next observation with the decision's rewards. Every
call to the worker is the one `screen.game.play_game` makes for a `TokenPlayer` (attach, the warm-up
capture, the harness's match start, the recorder, arm; then act / observe until the game ends; then
finish), so a game played here is the game play-policy plays with the same seed, side and tokens. The
engine runs this class in worker processes (`play/rollout_worker.py`) or in its own process (serial mode).
With a station (`train-ppo --peer`, `cluster/peer_games.py`) each game is opened there with the
protocol's `new_game` and played through the station's worker with the same calls, from the learner's
process; the rewards read the same map, made here from the plan's preset.

When the game ends, the same call begins the slot's next game (its plan comes with the tokens) and
returns that game's first observation, with the finished game's rewards and summary.

A plan whose opponent is not the game's AI (`GamePlan.rival`) is a two-player game: one world with a
screen per side (`screen.pair_worker.PairHub`), a `Game` per side, the learner's and the rival's, both
through the match harness. The rival is a policy whose tokens come from the learner's process with the
learner's (its observations go back in every `Step`), or the scripted player, which decides here from
its own captures. Each decision the two sides act at once, the rival's in a thread of this game: the
hub's barrier steps the world once both sides' inputs of the tick are in (as collect-pair plays, in
`play/pair.py`). The rewards are read from the learner's side's ARENA log; a rival's game that fails
makes the learner's invalid.

Try: .venv/bin/python -m pytest -q tests/rl/test_rollout.py
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.maps.model import other_tag
from hoi4_arena.screen.game import Game, GameSettings
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.rewards import RewardTracker, outcome_of
from hoi4_arena.screen.tokens import tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest, WorkerError
from hoi4_arena.training.value_data import LiveFacts


@dataclass(frozen=True)
class RolloutSettings:
    """What every rollout game shares (plain values: they travel to worker processes)."""

    size: tuple[int, int] = (360, 640)
    """The game's screen (height, width)."""
    layout: str = "cpu"
    """The view layout the policy reads."""
    speed: int = 5
    """Game speed 1..5."""
    max_days: int = 60
    """Each game's time limit in days (a draw when reached)."""
    max_decisions: int = 0
    """Stop a game after this many decisions, invalid (0: no limit)."""
    record: str | None = None
    """A folder to record every game into as a session (None: no recording)."""
    codec: str = "x264"
    """The sessions' video codec."""
    news: bool = True
    """Show the news window at a new game's start (closing it is the player's job). Like `events`, for a
    one-player game on this machine (the env's settings); a station's and a two-player world's games
    show both."""
    events: bool = True
    """Open event windows every 20-40 game days."""
    shadow: bool = False
    """A shadow expert (the scripted player, `players/shadow.py`) labels every observation with the input
    it would give from that screen (`Step.expert`): what DAgger trains on."""
    state: bool = False
    """Hand back the learner's side's ARENA facts with every observation (`Step.state`): what train-ppo
    --critic state's critic reads; the policy never sees them."""
    views: bool = True
    """Capture the views every decision (False: a player that reads none, the random policy, asks for
    none, as its `TokenPlayer` does in the runner; `Step.views` is then empty)."""


@dataclass(frozen=True)
class GamePlan:
    """One game of a slot: the slot's `number`-th game, drawn from the run's seeded schedule."""

    slot: int
    number: int
    arena: str
    """The preset."""
    spec: str
    """The map, preset:map_seed."""
    seed: int
    """The game's seed (its coin, its AI); the policy's sampling seed is `sampling_seed(seed, side)`."""
    side: str
    ai_strength: float
    opponent: str = "ai"
    """Who plays the other side (`ppo_config.LEAGUE_MEMBERS`): ai (the game's AI, a one-player game);
    scripted (the scripted player, on its own screen of a two-player world); current, recent or old (a
    policy the learner's process runs, on its own screen: the game's `Step`s carry its observations);
    checkpoint (the Gymnasium env's checkpoint rival, a policy too)."""
    save: str | None = None
    """A rung save the game goes on from (make-ladder's; it fixes the map, the world's seeds, the side
    and the AI; `seed` then only seeds the policy's sampling), or None: a new game of `spec`."""
    running: bool = False
    """The save's match already runs (rungs S1..S3): the harness does not start it again."""

    @property
    def rival(self) -> str | None:
        """How the other side plays through its screen: tokens (from the learner's process), scripted,
        or None (the game's AI: no screen)."""
        return None if self.opponent == "ai" else "scripted" if self.opponent == "scripted" else "tokens"

    @property
    def session_id(self) -> str:
        return f"rl-slot{self.slot:03d}-g{self.number:05d}-{self.arena}-s{self.seed}-{self.side}"


@dataclass
class Step:
    """What a rollout game answers: the rewards of the decision just made, and the observation to act on."""

    views: dict[str, np.ndarray]
    """The next observation's views (a new game's first when `done`)."""
    pointer: tuple[int, int]
    """Its pointer on the lattice."""
    speed: int
    rewards: dict[str, float] = field(default_factory=dict)
    """The decision's rewards per term (outcome included), unweighted; empty for a game's first step."""
    done: bool = False
    """The decision ended its game (the observation is the next game's)."""
    valid: bool = True
    """The ended game counts (False: stopped by max_decisions, a worker error, a dead worker process)."""
    summary: dict[str, Any] | None = None
    """The ended game's summary: plan, opponent, outcome, decisions, days, setup, each term's sum."""
    rival_views: dict[str, np.ndarray] | None = None
    """A policy rival's next observation (views and pointer), as `views` and `pointer` are the learner's."""
    rival_pointer: tuple[int, int] | None = None
    expert: np.ndarray | None = None
    """With `RolloutSettings.shadow`: the shadow expert's label (8, 3) of this observation."""
    state: np.ndarray | None = None
    """With `RolloutSettings.state`: float32 (len(FEATURES),) the ARENA facts of the learner's side at this
    observation (`training.value_data.LiveFacts`), read from the harness's log, never from pixels."""


class _Seat:
    """The engine's side of `screen.game.Game`: it asks for the views (and the whole frame with `full`,
    for an env that renders); the tokens come from the learner. `warm_up` takes the same warm-up capture
    a `TokenPlayer` does, so the worker sees the same calls."""

    setup_keys = False

    def __init__(self, layout: Any, full: bool = False, views: bool = True) -> None:
        self.layout = layout
        self.full = full
        self.views = views
        self.shadow: Any = None
        """The game's shadow expert: its template crops and frame are captured too."""

    def request(self) -> CaptureRequest:
        if self.shadow is None:
            return CaptureRequest(views=self.views, full=self.full)
        wanted = self.shadow.request()
        return CaptureRequest(views=self.views, full=self.full or wanted.full, regions=wanted.regions)

    def warm_up(self, capture: Capture) -> None:
        pass


class RolloutGame:
    """A slot's games, one after the other, on fresh `SimWorker`s, or each started on `station` (a
    `cluster.peer_games.PeerGames`: train-ppo --peer); see the module docstring."""

    def __init__(self, settings: RolloutSettings, station: Any = None, render: bool = False) -> None:
        from hoi4_arena.screen.layout import ViewLayout

        self.settings = settings
        self.station = station
        self.layout = ViewLayout.named(settings.layout)
        self.seat = _Seat(self.layout, full=render, views=settings.views)
        self.plan: GamePlan | None = None
        self.worker: Any = None
        self.own: Any = None
        """The learner's side's worker (in a two-player game, its screen of `worker`, the hub)."""
        self.game: Game | None = None
        self.tracker: RewardTracker | None = None
        self.capture: Capture | None = None
        self.rival: Game | None = None
        """The other side's game in a two-player world (None: the game's AI plays it)."""
        self.rival_seat: Any = None
        self.rival_capture: Capture | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._finished = True  # no game to finish yet
        self.facts: LiveFacts | None = None
        """With `RolloutSettings.state`: the game's ARENA facts of the learner's side."""

    def begin(self, plan: GamePlan) -> Step:
        """Open the plan's game and return its first observation."""
        from hoi4_arena.screen.sim_worker import SimWorker
        from hoi4_arena.sim.headless import arena_of

        self.close()
        settings = self.settings
        self.plan = plan
        if plan.save is not None:
            self.worker = SimWorker(save=plan.save, layout=self.layout)
            saved = self.worker.game
            saved.world.max_days = settings.max_days  # from the game's start, as the save's own
            # The save fixes the side played and whether its match runs (a listing may say so already).
            plan = self.plan = replace(plan, side=saved.ui.player, running=saved.world.at_war)
            own = self.worker
        elif plan.rival is None:
            options = dict(
                size=settings.size,
                layout=self.layout,
                ai={other_tag(plan.side): plan.ai_strength},
                max_days=settings.max_days,
                player_kind="policy",
            )
            if self.station is None:
                self.worker = SimWorker(
                    plan.spec,
                    plan.seed,
                    player=plan.side,
                    news=settings.news,
                    events=settings.events,
                    **options,
                )
            else:  # the same game, opened on the station with new_game (the station's SimGames)
                self.worker = self.station.start(
                    f"game {plan.session_id}", plan.spec, plan.seed, plan.side, **options
                )
            own = self.worker
        else:
            own = self._open_pair(plan)
        self.own = own
        recorder = None
        if settings.record is not None:
            recorder = self._recorder(plan)
        self.game = Game(
            own,
            GameSettings(
                side=plan.side,
                speed=settings.speed,
                spec=plan.spec,
                max_decisions=settings.max_decisions,
                running=plan.running,
            ),
            recorder=recorder,
            session_id=plan.session_id if recorder is not None else None,
        )
        self._finished = False
        self.seat.shadow = self._shadow(own, plan) if settings.shadow else None
        self.facts = LiveFacts(plan.side) if settings.state else None
        # The map's provinces and points: the worker's own, or for a station's game the same map made here.
        arena = self.worker.game.arena if self.station is None else arena_of(plan.spec)
        self.tracker = RewardTracker(plan.side, arena)
        try:
            if self.rival is None:
                self.game.start(self.seat)
            else:  # both sides through the harness at once: the barrier holds them in step
                self._both(lambda: self.game.start(self.seat), lambda: self.rival.start(self.rival_seat))
                self.rival_capture = self.rival.observe(self.rival_seat)
            self.capture = self.game.observe(self.seat)
        except BaseException as error:  # a game that cannot start is a broken setup, not a lost game
            self.game.fail(error)
            if self.rival is not None:
                self.rival.fail(error)
            self.close()
            raise
        if self.game.ended:
            self.close()
            raise RuntimeError(f"game {plan} ended before its first decision")
        self.tracker.start(self.game.log)
        return self._observation()

    def step(self, tokens: np.ndarray, next_plan: GamePlan | None, rival: np.ndarray | None = None) -> Step:
        """Apply one decision's tokens (8, 3), and a policy rival's `rival` tokens; the next observation
        (the next plan's first when it ended; with `next_plan` None, the ended game's last, and no game
        begins: the Gymnasium env's episode end)."""
        game, capture, tracker = self.game, self.capture, self.tracker
        assert game is not None and capture is not None and tracker is not None, "begin() first"
        events = tokens_to_events(
            tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy"
        )
        if self.seat.shadow is not None:
            self.seat.shadow.applied(events, capture)  # the expert takes its state from what was played
        if self.rival is not None:
            self._step_pair(events, rival)
        else:
            try:
                game.act(events)
                self.capture = game.observe(self.seat)
            except WorkerError as error:
                game.fail(error)
        rewards = tracker.after(game)  # the Gymnasium env's rule (screen/rewards.py)
        if game.ended:
            return self._end(next_plan, rewards)
        return self._observation(rewards)

    def _observation(self, rewards: dict[str, float] | None = None, label: bool = True) -> Step:
        capture = self.capture
        step = Step(
            views=capture.views,
            pointer=to_lattice(*capture.pointer, capture.size),
            speed=self.settings.speed,
            rewards=rewards or {},
        )
        if self.seat.shadow is not None and label:
            self.seat.shadow.label(capture)
            step.expert = self.seat.shadow.label_tokens
        if self.rival is not None and self.plan.rival == "tokens":
            seen = self.rival_capture
            step.rival_views, step.rival_pointer = seen.views, to_lattice(*seen.pointer, seen.size)
        if self.facts is not None:
            step.state = self.facts.facts(self.game.log)
        return step

    # --- the two-player game ------------------------------------------------------------------------

    def _open_pair(self, plan: GamePlan) -> Any:
        """The plan's two-player world and the rival's game; the learner's side's worker."""
        from hoi4_arena.screen.pair_worker import PairHub

        settings, other = self.settings, other_tag(plan.side)
        kind = "scripted" if plan.rival == "scripted" else "policy"
        self.worker = hub = PairHub(
            plan.spec,
            plan.seed,
            size=settings.size,
            layout=settings.layout,
            max_days=settings.max_days,
            player_kinds={plan.side: "policy", other: kind},
        )
        self.rival = Game(
            hub.worker(other),
            GameSettings(
                side=other, speed=settings.speed, spec=plan.spec, max_decisions=settings.max_decisions
            ),
        )
        if plan.rival == "scripted":
            from hoi4_arena.players.scripted import ScriptedPlayer
            from hoi4_arena.players.templates import sim_rules

            rgba, hotspot = hub.worker(other).pointer_image()
            self.rival_seat = ScriptedPlayer(
                sim_rules(settings.size), plan.seed, cursor=(rgba.shape[1], rgba.shape[0], hotspot)
            )
        else:
            self.rival_seat = _Seat(self.layout)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="rollout-rival")
        return hub.worker(plan.side)

    def _both(self, own: Any, rival: Any) -> None:
        """Run `own()` here and `rival()` in the rival's thread at once; a side that raises leaves the hub
        first (so the other's barrier wait fails instead of waiting), then the error is raised."""
        hub = self.worker

        def guarded(side: str, work: Any) -> None:
            try:
                work()
            except BaseException as error:
                hub.leave(side, f"{type(error).__name__}: {error}")
                raise

        future = self._pool.submit(guarded, self.rival.settings.side, rival)
        error: BaseException | None = None
        try:
            guarded(self.plan.side, own)
        except BaseException as raised:
            error = raised
        try:
            future.result()
        except BaseException as raised:
            error = error or raised
        if error is not None:
            raise error

    def _step_pair(self, events: list, rival_tokens: np.ndarray | None) -> None:
        """One decision of both sides: each acts (the barrier steps the world), then each observes."""
        game, rival, seat, hub = self.game, self.rival, self.rival_seat, self.worker
        seen = self.rival_capture
        if self.plan.rival == "tokens":
            if rival_tokens is None:
                raise ValueError(f"{self.plan.session_id}: the rival's tokens are missing")
            rival_events = lambda: tokens_to_events(  # noqa: E731
                rival_tokens, seen.t_ns, seen.size, pointer=seen.pointer, source="policy"
            )
        else:
            rival_events = lambda: seat.decide(seen)  # noqa: E731

        def act(side_game: Game, side: str, make: Any) -> None:
            try:
                side_game.act(make())
            except WorkerError as error:  # that side's game is over; the other's wait fails at once
                side_game.fail(error)
                hub.leave(side, f"worker: {error}")

        self._both(
            lambda: act(game, self.plan.side, lambda: events),
            lambda: act(rival, rival.settings.side, rival_events),
        )
        if not game.ended:
            try:
                self.capture = game.observe(self.seat)
            except WorkerError as error:
                game.fail(error)
        if not rival.ended:
            try:
                self.rival_capture = rival.observe(seat)
            except WorkerError as error:
                rival.fail(error)
        if rival.ended and rival.end.startswith("error") and not game.ended:
            game.fail(WorkerError("opponent", f"the other side's game failed: {rival.end}"))

    def _end(self, next_plan: GamePlan | None, rewards: dict[str, float]) -> Step:
        """Finish the game, begin `next_plan`'s (if any), and say how the finished one went."""
        plan, game, tracker = self.plan, self.game, self.tracker
        record = game.finish(self.seat)
        if self.rival is not None:
            self.rival.finish(self.rival_seat)
        self._finished = True
        state = game.log.state if game.log is not None else None
        summary = {
            "slot": plan.slot,
            "number": plan.number,
            "arena": plan.arena,
            "spec": plan.spec,
            "seed": plan.seed,
            "side": plan.side,
            "ai_strength": plan.ai_strength,
            "opponent": plan.opponent,
            "save": plan.save,
            "valid": record.valid,
            "reason": record.reason,
            "outcome": outcome_of(record.winner, plan.side, bool(state and state.over))
            if record.valid
            else None,
            "winner": record.winner,
            "declarer": record.declarer,
            "decisions": record.decisions,
            "days": record.days,
            "play_ns": record.play_ns,
            "late": record.late,
            "setup": record.setup,
            "war": record.war,
            "terms": dict(tracker.sums),
            "session": record.session,
        }
        # An episode's last observation gets no label: nobody acts on it.
        step = self.begin(next_plan) if next_plan is not None else self._observation(label=False)
        step.rewards, step.done, step.valid, step.summary = rewards, True, record.valid, summary
        return step

    def _shadow(self, worker: Any, plan: GamePlan) -> Any:
        """The scripted player as the game's shadow expert, with the game's cursor and seed (as DAgger's)."""
        from hoi4_arena.players.scripted import ScriptedPlayer
        from hoi4_arena.players.shadow import ShadowExpert
        from hoi4_arena.players.templates import sim_rules

        rgba, hotspot = worker.pointer_image()
        cursor = (rgba.shape[1], rgba.shape[0], hotspot)
        return ShadowExpert(ScriptedPlayer(sim_rules(self.settings.size), plan.seed, cursor=cursor))

    def _recorder(self, plan: GamePlan) -> Any:
        from hoi4_arena.sessions.lock import remove_unfinished
        from hoi4_arena.sessions.recorder import Recorder, RecorderSettings

        folder = Path(self.settings.record) / plan.session_id
        remove_unfinished(folder)
        return Recorder(
            folder,
            RecorderSettings(
                hz=5.0,
                game_speed=self.settings.speed,
                source="policy",
                codec=self.settings.codec,
                game="sim",
                side=plan.side,
                after_winner_s=0.0,
                realtime=False,
                extra={"rl": {"slot": plan.slot, "number": plan.number, "seed": plan.seed}},
            ),
        )

    def close(self) -> None:
        if self.game is not None and not self._finished:
            self.game.finish(self.seat)
            if self.rival is not None:
                self.rival.finish(self.rival_seat)
        if self.worker is not None:
            if self.station is None:
                self.worker.close()
            else:  # the station's connection serves the run's next game: only this game's input goes
                with contextlib.suppress(WorkerError):
                    self.worker.release()
        self.worker = self.own = self.game = self.capture = None
        self.rival = self.rival_seat = self.rival_capture = None
        self._finished = True

    def shutdown(self) -> None:
        """Close the game and the rival's thread (the slot is done with)."""
        self.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
