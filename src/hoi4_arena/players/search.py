"""The search player: the scripted player whose strategic choices are made by rollouts on the world.

It plays through the screen exactly as the scripted player does (`players/scripted.py`: the same
captures, templates, map reading and hand), and only its choices differ. At each choice point the
world is forked and every candidate is rolled out `k` times on the world alone, both sides played to
the end (or `days` ahead) by the scripted plan's world orders and the game's AI (`sim/rollout.py`);
the candidate with the best mean is played. A rollout's orders land as the screen player's do
(`SCREEN_TIMING`: its measured waits, drawn per rollout), and each choice is searched when it takes
effect, from the world as it is then:

- the opening, once its army holds the front (just before the first offensive is drawn; `opening`
  "look": when it has seen its flag): the strategy kind (near / deep / none), the activation delay and
  the replanning period, every combination of `kinds`, `delays_s` and `replans_s`;
- each replan, when the plan is done and the next offensive is due: its aim, among `aims` (city: the
  capital while the enemy holds it, else the enemy city nearest the front, the scripted rule;
  second: the next city; near: just across the border).

Rolling each option out with the base player and taking the best is one step of policy improvement
(Tesauro and Galperin 1996; Bertsekas' rollout algorithms): not worse than the base player in
expectation, where the rollouts model the game well. They did not, at first: searched in the game's
first seconds with fixed waits, the opening's best and worst candidates in the rollouts' world won
alike on the screen (docs/search.md, "Fidelity": the war turns on the days an offensive starts).

The search reads the world (`world_of`: the running game's world and AIs): it is privileged, a teacher,
like the critics that read the ARENA state; a policy trained on its games sees only their pixels and
inputs. So it plays the simulator's headless games only (record-ai refuses --game x11 and --peer),
where the world stands still while it searches (the game's clock is virtual).

Try: hoi4-arena record-ai runs/search --player search --games 2 --arena river:1000 --seed 3000 --no-record
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.players.scripted import STRATEGIES, PlayerConfig, ScriptedPlayer, Seen, Strategy
from hoi4_arena.players.templates import Calibration
from hoi4_arena.sim.ai import GameAI
from hoi4_arena.sim.clock import HOURS_PER_SECOND
from hoi4_arena.sim.rollout import AIMS, OPENING_AIMS, Choice, Score, Timing, search, vp_share
from hoi4_arena.sim.world import World

WorldOf = Callable[[], tuple[World, dict[str, GameAI]]]

SCREEN_TIMING = Timing(
    front=(96, 101, 101, 101, 106, 106, 106, 111, 111, 111),
    draw_first=(48, 48, 53, 53, 53, 53, 57, 58, 110, 115),
    draw=(48, 48, 48, 52, 53, 53, 53, 58, 101, 115),
    execute=(24, 27, 29, 29, 29, 31, 33, 34, 34, 39),
)
"""The scripted player's timing on the screen at speed 5, game hours (the deciles of 48 games on the
training presets: `python scripts/screen_timing.py --games 48`): from the game's first look to the
front held; from the front held (the opening's choice point) to the opening's offensive drawn; from
a replan's choice point to its offensive drawn; from an offensive drawn to its execution, the
activation delay not counted. The long tails are retries (a refused drag, a template not seen)."""
FIXED_TIMING = Timing.fixed(96, 72)
"""The first search's timing: everything of the opening 96 hours after the look, every offensive executed
72 hours after it is drawn, a replan's offensive drawn at once."""
TIMINGS = {"screen": SCREEN_TIMING, "fixed": FIXED_TIMING}
OPENING_POINTS = ("front", "look")
STORED_BEFORE = {"search_timing": "fixed", "search_opening": "look"}
"""What the search played before these settings existed (a stored run without them played this)."""


@dataclass(frozen=True)
class SearchConfig:
    """What the search player searches, and how hard."""

    k: int = 2
    """Rollouts of each candidate (different seeds of the world's battle luck and the AI's picks)."""
    days: int = 0
    """Game days a rollout looks ahead before it is scored (0: to the end of the game)."""
    kinds: tuple[str, ...] = ("deep", "near", "none")
    """The opening's strategy kinds to try."""
    delays_s: tuple[float, ...] = (0.0, 3.0)
    """The opening's activation delays to try, seconds (the scripted mix draws 0..3)."""
    replans_s: tuple[float, ...] = (2.0, 6.0)
    """Replanning periods to try, seconds (the scripted mix draws 2..6)."""
    aims: tuple[str, ...] = ("city", "second", "near")
    """Each replan's aims to try (empty: replan as the scripted player does, no search)."""
    speed: int = 5
    """The game speed the match runs at (turns the seconds above into game hours)."""
    timing: str = "screen"
    """When a rollout's orders land: `screen` (drawn from the screen player's measured timing,
    `SCREEN_TIMING`) or `fixed` (the first search's 96 / 72 hours, `FIXED_TIMING`)."""
    opening: str = "front"
    """When the opening is searched: `front` (once the army holds its front, just before the first
    offensive is drawn: the world as it is when the choice takes effect) or `look` (when the player has
    seen its flag, the game's first seconds: the first search's choice point)."""

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= 1000:
            raise ValueError(f"k must be a whole number in 1..1000, not {self.k!r}")
        if isinstance(self.days, bool) or not isinstance(self.days, int) or self.days < 0:
            raise ValueError(f"days must be a whole number >= 0, not {self.days!r}")
        if not self.kinds or any(kind not in STRATEGIES for kind in self.kinds):
            raise ValueError(f"kinds must be among {', '.join(STRATEGIES)}, not {self.kinds!r}")
        if any(aim not in AIMS or aim == "none" for aim in self.aims):
            raise ValueError(f"aims must be among city, second, near, not {self.aims!r}")
        for name in ("delays_s", "replans_s"):
            values = getattr(self, name)
            if not values or any(not 0 <= v <= 3600 for v in values):
                raise ValueError(f"{name} must be one or more seconds in 0..3600, not {values!r}")
        if min(self.replans_s) * HOURS_PER_SECOND[self.speed - 1] < 1:
            raise ValueError("a replanning period must be at least one game hour")
        if self.timing not in TIMINGS:
            raise ValueError(f"timing must be {' or '.join(TIMINGS)}, not {self.timing!r}")
        if self.opening not in OPENING_POINTS:
            raise ValueError(f"opening must be {' or '.join(OPENING_POINTS)}, not {self.opening!r}")

    @property
    def rollout_timing(self) -> Timing:
        """The rollouts' timing in game hours at the match's speed (measured at speed 5)."""
        timing = TIMINGS[self.timing]
        if self.speed == 5:
            return timing
        scale = HOURS_PER_SECOND[self.speed - 1] / HOURS_PER_SECOND[4]
        return Timing(*(tuple(round(h * scale) for h in getattr(timing, f.name)) for f in fields(Timing)))

    def hours(self, seconds: float) -> int:
        """Seconds of play at the match's speed as whole game hours."""
        return round(seconds * HOURS_PER_SECOND[self.speed - 1])

    def openings(self) -> list[tuple[Strategy, Choice]]:
        """Every opening candidate: the strategy the screen plays and the choice the rollouts play."""
        out = []
        for kind, delay, replan in itertools.product(self.kinds, self.delays_s, self.replans_s):
            choice = Choice(OPENING_AIMS[kind], self.hours(delay), self.hours(replan))
            out.append((Strategy(kind, delay, replan), choice))
        return out


@dataclass(kw_only=True)
class SearchOptions:
    """The search's settings as a command takes them (`--search-*`): record-ai's `--player search` and
    dagger's `--expert search` inherit them (keyword-only fields, after the command's own), so both have
    one set of options, defaults, help texts and checks; the command line reads them from here."""

    search_k: int = 2
    """The search: rollouts of each candidate at a choice point."""
    search_days: int = 0
    """The search: game days a rollout looks ahead before it is scored by the share of victory points
    held (0: to the end of the game)."""
    search_kinds: tuple[str, ...] = ("deep", "near", "none")
    """The search: the opening's strategy kinds to try."""
    search_delays: tuple[float, ...] = (0.0, 3.0)
    """The search: the opening's activation delays to try, seconds."""
    search_replans: tuple[float, ...] = (2.0, 6.0)
    """The search: replanning periods to try, seconds."""
    search_aims: tuple[str, ...] = ("city", "second", "near")
    """The search: each replan's aims to try (city, second, near)."""
    search_timing: str = "screen"
    """The search: when a rollout's orders land: screen (drawn from the screen player's measured timing)
    or fixed (the first search's 96 hours to the opening's orders, 72 from drawing to executing)."""
    search_opening: str = "front"
    """The search: when the opening is searched: front (once the army holds its front, from the world as
    it is then) or look (when the player has seen its flag)."""
    search_value: str | None = None
    """The search: a train-state-value checkpoint that scores a rollout still running after
    --search-days (P(win) from its ARENA facts) instead of the share of victory points held."""

    def search_config(self, speed: int = 5) -> SearchConfig:
        """The search player's settings for games at `speed`; bad values are a UserError naming the option."""
        try:
            return SearchConfig(
                k=self.search_k,
                days=self.search_days,
                kinds=tuple(self.search_kinds),
                delays_s=tuple(self.search_delays),
                replans_s=tuple(self.search_replans),
                aims=tuple(self.search_aims),
                speed=speed,
                timing=self.search_timing,
                opening=self.search_opening,
            )
        except (TypeError, ValueError) as error:
            field, _, rest = str(error).partition(" ")
            option = {"delays_s": "delays", "replans_s": "replans"}.get(field, field)
            if option in ("k", "days", "kinds", "delays", "replans", "aims", "timing", "opening"):
                raise UserError(f"--search-{option} {rest}") from None
            raise UserError(f"--search-replans: {error}") from None

    def check_search(self, searching: bool, speed: int, use: str) -> None:
        """Refuse (UserError) bad search settings when `searching`, and --search-value when not (`use`
        says how to ask for the search, e.g. "use it with --player search")."""
        if not searching:
            if self.search_value is not None:
                raise UserError(f"--search-value is the search player's: {use}")
            return
        self.search_config(speed)  # refused now, with its message
        if self.search_value is not None:
            if not self.search_days:
                raise UserError(
                    "--search-value scores rollouts cut after --search-days: give --search-days N too"
                )
            if not Path(self.search_value).is_file():
                raise UserError(f"--search-value {self.search_value}: no such checkpoint file")

    def search_settings(self, searching: bool) -> dict[str, Any]:
        """The search's part of a run's stored settings: none when not `searching`, no --search-value when
        not given, and --search-timing / --search-opening left out at the first search's `fixed` / `look`
        (runs stored before these existed played those: they resume as they were with them given)."""
        if not searching:
            return {}
        out: dict[str, Any] = {}
        for f in fields(SearchOptions):
            value = getattr(self, f.name)
            if value is not None and STORED_BEFORE.get(f.name) != value:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


SEARCH_FIELDS = tuple(f.name for f in fields(SearchOptions))
"""The search's settings' names (the fields of `SearchOptions`)."""


class SearchPlayer(ScriptedPlayer):
    """The scripted player with its choices searched (see the module docstring). `world_of` returns
    the running game's world and AIs; `score` values a rollout that has not ended after `days`."""

    def __init__(
        self,
        rules: Calibration,
        seed: int,
        world_of: WorldOf,
        search: SearchConfig | None = None,
        config: PlayerConfig | None = None,
        cursor: tuple[int, int, tuple[int, int]] = (16, 24, (0, 0)),
        score: Score = vp_share,
    ) -> None:
        self.search_config = search or SearchConfig()
        self.world_of = world_of
        self.score = score
        self.searches: list[dict[str, Any]] = []
        """Every choice point: when, what, the candidates' means and the choice."""
        self._aim: str | None = None
        self._opening_searched = False
        self._seed = seed
        # Played until the opening is searched (the flag is seen before any plan is drawn).
        strategy, _ = self.search_config.openings()[0]
        super().__init__(rules, seed, config, cursor, strategy)

    def _search(self, now: int, point: str, candidates: list[Choice], opening: bool) -> Choice:
        world, ais = self.world_of()
        cfg = self.search_config
        seed = zlib.crc32(f"search-{self._seed}-{self.own}-{len(self.searches)}".encode())
        found = search(
            world,
            ais,
            self.own,
            candidates,
            cfg.k,
            seed,
            days=cfg.days,
            timing=cfg.rollout_timing,
            opening=opening,
            score=self.score,
        )
        self.searches.append({"t_ns": now, "day": world.day, "point": point, **found.to_dict(candidates)})
        self._note(now, f"search at {point}: {found.best.label} of {len(candidates)} candidates")
        return found.best

    # --- the choice points ------------------------------------------------------------------------

    def _search_opening(self, now: int) -> None:
        self._opening_searched = True
        openings = self.search_config.openings()
        best = self._search(now, "opening", [c for _, c in openings], opening=True)
        self.strategy = next(s for s, c in openings if c == best)

    def _look(self, seen: Seen, frame, now: int) -> None:
        super()._look(seen, frame, now)
        if self.own is not None and self.search_config.opening == "look" and not self._opening_searched:
            self._search_opening(now)

    def _after_front(self, now: int) -> None:
        # The opening's kind matters from here on: searched from the world as it is now, a day or two
        # before its offensive is drawn (with --search-opening front).
        if not self._opening_searched:
            self._search_opening(now)
        super()._after_front(now)

    def _hold(self, seen: Seen, frame, now: int) -> None:
        super()._hold(seen, frame, now)
        if self.phase != "offensive":
            return
        aims = self.search_config.aims
        if aims:
            period = self.search_config.hours(self.strategy.replan_every_s or 0) or None
            candidates = [Choice(aim, 0, period) for aim in aims]
            self._aim = self._search(now, "replan", candidates, opening=False).aim

    def _plan(self, view, attempt: int = 1):
        # The scripted player's retries already walk its aims: attempt 3 takes the second city, 4 and
        # later a province just across the border. A searched aim starts where it belongs.
        if not self._opening and self._aim == "near":
            attempt = max(attempt, 4)
        elif not self._opening and self._aim == "second":
            attempt = max(attempt, 3)
        return super()._plan(view, attempt)

    def summary(self) -> dict[str, Any]:
        return super().summary() | {"searches": self.searches}
