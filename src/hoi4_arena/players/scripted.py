"""The scripted player: plays a side through the screen like a person, from captures to input events.

It sees only what a worker captures -- template crops (`players/templates.py`) every decision and, when
it plans, the whole frame, whose map it reads from pixels (`players/map_reader.py`) -- and acts only by
input events (`players/hand.py`), never through the game's state or its log. Its game, one decision
(200 ms) at a time:

1. find its own flag (which country it plays) and close the news (OK);
2. form its divisions into an army: shift+click on "Unassigned divisions" (the simulator forms the army
   at once; where that alone does not, it clicks the alert, then the green +);
3. make sure the army is selected (its card, gold), then draw the front: Z, and a click on enemy land;
4. by its strategy, draw an offensive: X, then a right-drag from its front into enemy land, toward
   a province just across the border (`near`) or the enemy's capital (`deep`); `none` holds the front;
5. wait its activation delay, then click the execute arrow above the army card;
6. hold; with a replanning period, each time it runs out and the plan is done, draw the next offensive
   (the capital while the enemy holds it, else the enemy city nearest the front) and execute it.

Throughout, it closes event windows as they appear and stops when the end panel shows. After every
step it looks for the change the step should make (the banner of the tool, the arrow turning green,
...) and tries again, a bounded number of times, when it does not come.

Each game draws its strategy from a seeded generator (`StrategyMix`): the kind, the activation delay
(0 to 60 s), and whether and how often it replans (every 40 to 120 s). Every event it sends carries
the skill it served; `orders` lists every order with its time, its screen points and what it aimed at.

By default the match is already running when it starts (the harness unpauses): a policy trained on
its inputs can do the same, since match mode has no pause. `paused_setup=True` pauses with space
first and unpauses after drawing the plan; those two key presses are the harness's (source
`harness`), never a training label.

Try: hoi4-arena record-ai out --games 1 --arena plains:3   # a recorded game against the AI; its orders
     are in the session's manifest.json
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoi4_arena.players.hand import Hand, HandConfig
from hoi4_arena.players.map_reader import ENEMY, OWN, City, MapReader, MapView
from hoi4_arena.players.templates import Calibration
from hoi4_arena.screen.tokens import DECISION_NS
from hoi4_arena.screen.worker import Capture, CaptureRequest

RUNNING_NS = 2_000_000_000
"""The game runs if its clock moved within this long (at speed 1 the hour turns every second)."""
STRATEGIES = ("near", "deep", "none")
SEEN = (
    "ready",
    "flag_blu",
    "flag_red",
    "paused",
    "news_ok",
    "event_ok",
    "alert",
    "new_army",
    "card",
    "card_selected",
    "execute_inactive",
    "execute_ready",
    "execute_running",
    "front_tool",
    "offensive_tool",
    "win",
    "loss",
    "draw",
)
"""Every template the player looks at; the calibration must have them all."""
FLAGS = {"flag_blu": "BLU", "flag_red": "RED"}


@dataclass(frozen=True)
class StrategyMix:
    """How a game's strategy is drawn.

    The defaults are tuned (docs/players.md, "Tuning the mix"): the first brief -- activation after 0
    to 60 s, new offensives for half the games every 40 to 120 s -- won 4 of 14 with its best kind,
    because at speed 5 a second is a game day and the game's AI attacks within days. Measured through
    the order API (the rush plan): waiting 30 days before the first attack drops the win rate from 66%
    to 16%, replanning every 40 days to 34%, never replanning to 0 of 84 on the screen. So every game
    replans, soon after its plan runs out, and waits at most a few seconds before its first attack.
    """

    weights: tuple[tuple[str, float], ...] = (("deep", 0.45), ("near", 0.45), ("none", 0.1))
    """Kinds of opening and their chances (`none` holds the front until its first replan)."""
    activate_delay_s: tuple[float, float] = (0.0, 3.0)
    """Seconds between drawing the first plan and executing it."""
    replan_chance: float = 1.0
    """Chance that the player draws new offensives as plans finish (0 of 84 games were won without)."""
    replan_every_s: tuple[float, float] = (2.0, 6.0)
    """Seconds between looks at whether the plan is done (then the next offensive is drawn)."""

    def __post_init__(self) -> None:
        kinds = [kind for kind, _ in self.weights]
        if any(kind not in STRATEGIES for kind in kinds) or len(set(kinds)) != len(kinds):
            raise ValueError(f"strategy kinds must be distinct and among {STRATEGIES}, not {kinds}")
        if any(w < 0 for _, w in self.weights) or sum(w for _, w in self.weights) <= 0:
            raise ValueError("strategy weights must be >= 0 and not all 0")
        if not 0 <= self.replan_chance <= 1:
            raise ValueError(f"replan_chance must lie in 0..1, not {self.replan_chance}")
        for name in ("activate_delay_s", "replan_every_s"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high")


@dataclass(frozen=True)
class Strategy:
    """One game's plan."""

    kind: str
    """near, deep or none."""
    activate_delay_s: float
    replan_every_s: float | None
    """None: one offensive, then hold."""

    @property
    def label(self) -> str:
        """The results file's strategy: the kind, `+replan` when it replans."""
        return self.kind + ("+replan" if self.replan_every_s is not None else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "activate_delay_s": round(self.activate_delay_s, 3),
            "replan_every_s": None if self.replan_every_s is None else round(self.replan_every_s, 3),
        }

    @classmethod
    def draw(cls, rng: random.Random, mix: StrategyMix) -> Strategy:
        kinds, weights = zip(*mix.weights, strict=True)
        kind = rng.choices(kinds, weights)[0]
        delay = rng.uniform(*mix.activate_delay_s)
        replan = rng.uniform(*mix.replan_every_s) if rng.random() < mix.replan_chance else None
        return cls(kind, delay, replan)


@dataclass(frozen=True)
class PlayerConfig:
    """How the scripted player plays (its strategy is drawn per game from `mix`)."""

    mix: StrategyMix = field(default_factory=StrategyMix)
    hand: HandConfig = field(default_factory=HandConfig)
    paused_setup: bool = False
    """Pause (space, as the harness) before the setup and unpause after drawing the plan."""
    think_s: tuple[float, float] = (0.1, 0.4)
    """Seconds between seeing what to do and starting to move."""
    verify_s: float = 1.2
    """How long to look for a step's effect before trying it again."""
    tries: int = 4
    """Attempts at a step before giving it up."""


class Seen:
    """What one capture shows: a template's match is worked out when a phase first asks for it (most
    phases look at a few), and where the topmost event window's OK button is."""

    def __init__(
        self, rules: Calibration, crops: dict[str, np.ndarray], hide: tuple[int, int, int, int], t_ns: int
    ) -> None:
        self.rules, self.crops, self.hide, self.t_ns = rules, crops, hide, t_ns
        self._shows: dict[str, bool] = {}
        self.event_ok = rules.find("event_ok", crops, hide)

    def __getitem__(self, name: str) -> bool:
        found = self._shows.get(name)
        if found is None:
            found = self._shows[name] = self.rules.match(name, self.crops, self.hide)
        return found


class ScriptedPlayer:
    """Plays one game through a worker's captures (see the module docstring).

    Per decision: `request()` says what to capture (template regions; the full frame when it is about
    to read the map), `decide(capture)` returns the input events for the next 200 ms, each with its
    absolute time on the worker's clock. `cursor` is the pointer sprite's (width, height, hotspot), left
    out of template comparisons.
    """

    def __init__(
        self,
        rules: Calibration,
        seed: int,
        config: PlayerConfig | None = None,
        cursor: tuple[int, int, tuple[int, int]] = (16, 24, (0, 0)),
        strategy: Strategy | None = None,
    ) -> None:
        rules.require(*SEEN, clock=True, speed=True, map=True)
        self.rules = rules
        self.config = config or PlayerConfig()
        self.rng = random.Random(f"scripted-{seed}")
        self.strategy = strategy or Strategy.draw(self.rng, self.config.mix)
        self.cursor = cursor
        self.size = rules.size
        self.hand: Hand | None = None
        self.own: str | None = None
        self.reader: MapReader | None = None
        self.cities: dict[tuple[int, int], City] = {}
        self.orders: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.phase = "look"
        self.outcome: str | None = None
        """win, loss or draw, as the end panel says."""
        self.running = False
        """Whether the clock moved within the last `RUNNING_NS` (the game runs)."""
        self.setup_keys = self.config.paused_setup
        """Whether the player may still send the harness's setup keys (the worker must allow them)."""
        self._regions = rules.regions(SEEN, clock=True, speed=True)
        self._need_map = False
        self._pending: tuple[str, int] | None = None  # (step, look for its effect until)
        self._tries: dict[str, int] = {}
        self._look_at = 0  # no new step before this time: the last one's effect is not on screen yet
        self._activate_at: int | None = None
        self._replan_at: int | None = None
        self._opening = True
        self._attempt: dict[str, Any] = {}  # the screen points of the step being tried
        self._attempts = 0  # how many tries the last finished step took
        self._last_clock: np.ndarray | None = None
        self._clock_moved: int | None = None
        self._speed: int | None = None
        self._knows = False  # a step cut short by `interrupt`: the next one starts without a pause

    # --- the interface to the decision loop -------------------------------------------------------

    def request(self) -> CaptureRequest:
        """What the next capture must hold: every template's crops, the whole frame to read the map."""
        return CaptureRequest(views=False, full=self._need_map, regions=self._regions)

    @property
    def over(self) -> bool:
        return self.phase == "over"

    def decide(self, capture: Capture) -> list:
        """The input events for the 200 ms after `capture` (absolute times on the worker's clock)."""
        now = capture.t_ns
        if self.hand is None:
            self.hand = Hand(self.size, self.rng, now, capture.pointer, self.config.hand)
        hand = self.hand
        hand.sync(now)
        until = now + DECISION_NS
        if hand.busy() or self.over or now < self._look_at:
            return hand.due(until)
        seen = self.see(capture)
        if seen["win"] or seen["loss"] or seen["draw"]:
            self.outcome = "win" if seen["win"] else "loss" if seen["loss"] else "draw"
            self._note(now, f"the end panel shows {self.outcome}")
            self.phase = "over"
            return hand.due(until)
        wanted_map = self._need_map
        self._need_map = False
        if seen.event_ok is not None and self.phase != "look":
            self._do(lambda: hand.click(*seen.event_ok, "close_popup"))
            self._need_map = wanted_map
        else:
            # The whole frame only when it was asked for: a recorder sharing the capture must not
            # change when the player reads the map (the same seed plays the same game either way).
            getattr(self, f"_{self.phase}")(seen, capture.frame if wanted_map else None, now)
        return hand.due(until)

    def interrupt(self, t_ns: int, pointer: tuple[int, int]) -> None:
        """Its input was not applied from `t_ns` on (another player's was: `players/shadow.py`): the hand's
        queued events are dropped and the pointer taken where the other left it; a step cut short
        counts as not tried, and the next decision looks at the screen afresh."""
        if self.hand is None:
            return
        if self.hand.busy() and self._pending is not None:
            name = self._pending[0]
            if self._tries.get(name, 0) > 0:
                self._tries[name] -= 1
            self._pending = None
            self._knows = True  # it had seen what to do: it moves again at once, without thinking anew
        self.hand.drop(t_ns, pointer)
        self._look_at = 0

    def see(self, capture: Capture) -> Seen:
        """What the capture shows (the pointer sprite left out of every comparison); notes whether the
        clock moved and the speed the indicator shows."""
        w, h, (hx, hy) = self.cursor
        hide = (capture.pointer[0] - hx, capture.pointer[1] - hy, w, h)
        crops = capture.regions
        clock = crops.get("clock")
        if (
            clock is not None
            and self._last_clock is not None
            and self.rules.clock.changed(self._last_clock, clock)
        ):
            self._clock_moved = capture.t_ns
        self.running = self._clock_moved is not None and capture.t_ns - self._clock_moved <= RUNNING_NS
        self._last_clock = clock
        self._speed = self.rules.speed_level(crops)
        return Seen(self.rules, crops, hide, capture.t_ns)

    # --- steps: act, then look for the effect -----------------------------------------------------

    def _step(self, now: int, name: str, done: bool, act, tries: int | None = None) -> bool | None:
        """One step toward `name`: True once `done` shows; None when it was tried `tries` times in
        vain (given up); False while it is being tried (acting, or looking for the effect)."""
        if done:
            self._attempts = self._tries.pop(name, 0)
            if self._pending is not None and self._pending[0] == name:
                self._pending = None
            return True
        if self._pending is not None and self._pending[0] == name and now <= self._pending[1]:
            return False
        self._pending = None
        if self._tries.get(name, 0) >= (tries or self.config.tries):
            self._tries.pop(name, None)
            self._note(now, f"gave up: {name}")
            return None
        self._tries[name] = self._tries.get(name, 0) + 1
        if act() is False:  # nothing to act on yet (e.g. the map must be captured first)
            self._tries[name] -= 1
            return False
        self._pending = (name, self.hand.free_at + round(self.config.verify_s * 1e9))
        return False

    def _do(self, schedule) -> None:
        """Think a moment, then let the hand carry out `schedule`; look again once it has."""
        if self._knows:
            self._knows = False
        else:
            self.hand.wait_range(self.config.think_s)
        schedule()
        self._look_at = self.hand.free_at + DECISION_NS // 2

    def _point(self, name: str) -> tuple[int, int]:
        """A point near the middle of template `name`'s rectangle (people do not hit the exact centre)."""
        x, y, w, h = self.rules.templates[name].rect
        return (
            x + w // 2 + round(self.rng.uniform(-0.2, 0.2) * w),
            y + h // 2 + round(self.rng.uniform(-0.2, 0.2) * h),
        )

    def _harness_key(self, name: str) -> None:
        hand = self.hand
        hand.source = "harness"
        hand.key(name, "pause")
        hand.source = "scripted"

    # --- the phases, in the order of a game ---------------------------------------------------------

    def _look(self, seen: Seen, frame, now: int) -> None:
        own = [tag for name, tag in FLAGS.items() if seen[name]]
        if not seen["ready"] or len(own) != 1:
            return  # not the game's main screen yet
        self.own = own[0]
        self.reader = MapReader(self.rules.map, self.own)
        state = "running" if self.running else "not running (yet)"
        self._note(now, f"plays {self.own}, strategy {self.strategy.label}; the game is {state}")
        self.phase = "pause" if self.config.paused_setup else "news"

    def _pause(self, seen: Seen, frame, now: int) -> None:
        done = self._step(now, "pause", seen["paused"], lambda: self._do(lambda: self._harness_key("space")))
        if done is not False:
            self.phase = "news"

    def _news(self, seen: Seen, frame, now: int) -> None:
        def act():
            self._do(lambda: self.hand.click(*self._point("news_ok"), "close_popup"))

        if self._step(now, "news", not seen["news_ok"], act) is not False:
            self.phase = "form"

    def _form(self, seen: Seen, frame, now: int) -> None:
        formed = not seen["alert"] and (seen["card"] or seen["card_selected"])

        def act():
            alert = self._point("alert")
            if self._tries["form"] <= 2:
                self._do(lambda: self.hand.click(*alert, "form_army", shift=True))
            else:  # the longer way: select the unassigned divisions, then the green +
                self._do(
                    lambda: (
                        self.hand.click(*alert, "form_army"),
                        self.hand.click(*self._point("new_army"), "form_army"),
                    ),
                )

        done = self._step(now, "form", formed, act)
        if done:
            self._order(now, "form_army", {"attempts": self._attempts})
        if done is not False:
            self.phase = "front"

    def _select(self, seen: Seen, now: int) -> bool | None:
        """The army's card selected (True), being selected (False), or not to be had (None)."""
        if not seen["card_selected"] and not seen["card"] and not self._pending:
            return None

        def act():
            self._do(lambda: self.hand.click(*self._point("card"), "select_army"))

        return self._step(now, "select", seen["card_selected"], act)

    def _front(self, seen: Seen, frame, now: int) -> None:
        selected = self._select(seen, now)
        if selected is None:
            self._note(now, "no army to give a front")
            self._after_front(now)
            return
        if not selected:
            return

        def act():
            self._do(lambda: self.hand.key("z", "front"))

        done = self._step(now, "front_tool", seen["front_tool"], act)
        if done:
            self.phase = "front_click"
        elif done is None:
            self._after_front(now)

    def _front_click(self, seen: Seen, frame, now: int) -> None:
        def act():
            if frame is None:
                self._need_map = True
                return False
            point = self._enemy_point(self._read(frame))
            if point is None:
                self._note(now, "no enemy land in sight")
                return None
            self._attempt = {"click": list(point)}
            self._do(lambda: self.hand.click(*point, "front"))
            return None

        done = self._step(now, "front_click", not seen["front_tool"], act)
        if done:
            self._order(now, "front", {**self._attempt, "attempts": self._attempts})
        if done is not False:
            self._after_front(now)

    def _after_front(self, now: int) -> None:
        if self.strategy.kind != "none":
            self.phase = "offensive"
        elif self.setup_keys:
            self.phase = "unpause"
        else:  # hold the front; a replanning player starts attacking when its period first runs out
            self._hold_on(now)

    def _offensive(self, seen: Seen, frame, now: int) -> None:
        selected = self._select(seen, now)
        if not selected:
            if selected is None:
                self._planned(now, drawn=False)
            return

        def act():
            self._do(lambda: self.hand.key("x", "offensive"))

        done = self._step(now, "offensive_tool", seen["offensive_tool"], act)
        if done:
            self.phase = "offensive_drag"
        elif done is None:
            # X brings no tool when the army has no front (lost with its last province): draw it again.
            self.phase = "front"

    def _offensive_drag(self, seen: Seen, frame, now: int) -> None:
        def act():
            if frame is None:
                self._need_map = True
                return False
            plan = self._plan(self._read(frame), self._tries["offensive_drag"])
            if plan is None:
                self._note(
                    now,
                    f"no offensive toward {'a city' if not self._opening else self.strategy.kind} in sight",
                )
                return None
            start, end, aim = plan
            self._attempt = {"start": list(start), "end": list(end), "aim": aim}
            self._do(lambda: self.hand.drag(start, end, "offensive"))
            return None

        drawn = not seen["offensive_tool"] and seen["execute_ready"]
        done = self._step(now, "offensive_drag", drawn, act)
        if done:
            self._order(now, "offensive", {**self._attempt, "attempts": self._attempts})
        if done is not False:
            self._planned(now, drawn=bool(done))

    def _planned(self, now: int, drawn: bool) -> None:
        """After the offensive: execute it (now when replanning, after the delay in the opening)."""
        delay = self.strategy.activate_delay_s if self._opening else 0.0
        self._activate_at = now + round(delay * 1e9) if drawn else None
        if self.setup_keys:
            self.phase = "unpause"
        else:
            self.phase = "wait" if drawn else "hold"
            if not drawn:
                self._schedule_replan(now)

    def _unpause(self, seen: Seen, frame, now: int) -> None:
        done = self._step(
            now,
            "unpause",
            not seen["paused"] and self.running,
            lambda: self._do(lambda: self._harness_key("space")),
        )
        if done is not False:
            self.setup_keys = False
            if self._activate_at is not None:  # the delay runs from when the game runs again
                self._activate_at = now + round(self.strategy.activate_delay_s * 1e9)
                self.phase = "wait"
            else:
                self._hold_on(now)

    def _wait(self, seen: Seen, frame, now: int) -> None:
        if now >= self._activate_at:
            self.phase = "execute"

    def _execute(self, seen: Seen, frame, now: int) -> None:
        if not seen["execute_ready"] and not seen["execute_running"] and not self._pending:
            self._note(now, "nothing to execute")
            self._hold_on(now)
            return

        def act():
            point = self._point("execute_ready")
            self._attempt = {"click": list(point)}
            self._do(lambda: self.hand.click(*point, "execute"))

        # Two tries: a plan the army cannot take up (its start province lost) stops at once, and the
        # next offensive is drawn instead.
        done = self._step(now, "execute", seen["execute_running"], act, tries=2)
        if done:
            self._order(now, "execute", {**self._attempt, "attempts": self._attempts})
        if done is not False:
            self._hold_on(now)

    def _hold_on(self, now: int) -> None:
        self._opening = False
        self.phase = "hold"
        self._schedule_replan(now)

    def _hold(self, seen: Seen, frame, now: int) -> None:
        if self._replan_at is None or now < self._replan_at or seen["execute_running"]:
            return  # nothing due, or the plan still runs: look again next decision
        # The plan is done, or stopped (its start was lost, or the enemy took part of it back): draw the
        # next one from the front as it stands now rather than pressing on with the old one.
        self.phase = "offensive"

    def _schedule_replan(self, now: int) -> None:
        every = self.strategy.replan_every_s
        self._replan_at = None if every is None else now + round(every * 1e9)

    # --- reading the map --------------------------------------------------------------------------

    def _read(self, frame: np.ndarray) -> MapView:
        """Read the map and update the cities remembered: a marker hidden under a counter is not seen
        again, but the land around where it was still tells who holds it now."""
        view = self.reader.read(frame)
        merge = 3 * view.cell
        for city in view.cities:
            near = [k for k in self.cities if abs(k[0] - city.x) <= merge and abs(k[1] - city.y) <= merge]
            for key in near:
                del self.cities[key]
            self.cities[(city.x, city.y)] = city
        for key, city in list(self.cities.items()):
            holder = view.holder_near(city.x, city.y, city.size)
            self.cities[key] = City(city.x, city.y, city.capital, city.size, holder)
        return view

    def _enemy_point(self, view: MapView) -> tuple[int, int] | None:
        """A point well inside enemy land near the front (where a person clicks to give the front)."""
        solid = np.argwhere(view.solid(ENEMY, 2))
        if not len(solid):
            return None
        front = view.front()
        if front:
            fi, fj = np.array(front).mean(axis=0)
            order = np.argsort(np.hypot(solid[:, 0] - fi, solid[:, 1] - fj), kind="stable")
            solid = solid[order[: max(1, len(order) // 10)]]
        i, j = solid[self.rng.randrange(len(solid))]
        return view.center(int(i), int(j))

    def _plan(
        self, view: MapView, attempt: int = 1
    ) -> tuple[tuple[int, int], tuple[int, int], dict[str, Any]] | None:
        """(start, end, aim) of the next offensive's right-drag, or None when nothing fits.

        The opening of a `near` game aims just across the border; otherwise the enemy's capital while
        the enemy holds it, else the enemy city nearest the front. A drag the game refused (no path
        from that start) is tried again from another point of the front, then at another city, then
        just across the border.
        """
        front = view.front()
        if not front:
            return None
        cells = np.array(front)
        if not (self._opening and self.strategy.kind == "near") and attempt <= 3:
            targets = self._city_targets(view, cells)
            if targets:
                city, kind = targets[min(len(targets) - 1, 1 if attempt == 3 else 0)]
                ti, tj = view.index(city.x, city.y) or (0, 0)
                order = np.argsort(np.hypot(cells[:, 0] - ti, cells[:, 1] - tj), kind="stable")
                pick = 0 if attempt != 2 else self.rng.randrange(min(len(order), 40))
                i, j = cells[order[pick]]
                aim = {"kind": kind, "marker": city.size, "holder": "enemy"}
                return view.center(int(i), int(j)), (city.x, city.y), aim
        for _ in range(24):  # a province just across the border, from a random point of the front
            i, j = front[self.rng.randrange(len(front))]
            end = view.across(int(i), int(j))
            if end is not None:
                return view.center(int(i), int(j)), end, {"kind": "near", "holder": "enemy"}
        return None

    def _city_targets(self, view: MapView, cells: np.ndarray) -> list[tuple[City, str]]:
        """Enemy-held cities, best first: the capital, then by distance from the front."""
        fx = view.x0 + cells[:, 1] * view.cell + view.cell // 2
        fy = view.y0 + cells[:, 0] * view.cell + view.cell // 2
        held = [c for c in self.cities.values() if c.holder == ENEMY]
        held.sort(key=lambda c: (not c.capital, float(np.min(np.hypot(fx - c.x, fy - c.y))), c.y, c.x))
        return [(c, "capital" if c.capital else "city") for c in held]

    # --- records ----------------------------------------------------------------------------------

    def _note(self, now: int, text: str) -> None:
        self.notes.append(f"{now / 1e9:9.2f}s {text}")

    def _order(self, now: int, order: str, fields: dict[str, Any]) -> None:
        """An order the screen showed was taken (its effect seen), with the speed shown at the time."""
        self.orders.append({"order": order, "t_ns": now, "speed_seen": self._speed, **fields})

    def summary(self) -> dict[str, Any]:
        return {
            "own": self.own,
            "strategy": self.strategy.to_dict() | {"label": self.strategy.label},
            "phase": self.phase,
            "running": self.running,
            "outcome": self.outcome,
            "orders": len(self.orders),
            "cities_seen": len(self.cities),
            "own_cities": sum(1 for c in self.cities.values() if c.holder == OWN),
        }
