"""World rollouts of the scripted player's plan: fork a world, play one candidate choice, score the result.

The search teacher (`players/search.py`) asks, at each of the scripted player's strategic choices,
what would happen if it chose this or that. The answer comes from here, on the world alone: no
screen, no views, no frames. A world (a running game's, or one restored from a save: `load_world`)
is forked (`fork`: a deep copy that shares the map and the rules), the player's side plays the
candidate through the order API (`ScriptedPlan`) and the other side is the game's AI, copied with
its schedule, both stepped hour by hour as `SimGame.advance` steps them (the AIs decide at the start
of each day, the order alternating). A rollout ends when the game ends -- win 1, draw 0.5, loss 0
for the side -- or after `days` game days, scored by `score` (default `vp_share`: the share of all
victory points the side controls, 0.5 at the start by the mirror).

`ScriptedPlan` is the scripted player's plan (`players/scripted.py`) in world orders, with the same
semantics: one army of every division (at most `max_army_size`, as shift+click on the alert), the
front against the enemy, then the offensive of its aim -- `near`: an enemy province just across the
border from a front province drawn by its seeded generator; `city`: the enemy's capital while the
enemy holds it, else the enemy city nearest the front (the scripted `deep` opening and every
replan); `second`: the next city of that list; `none`: hold -- executed after the choice's delay;
then, every `replan_hours`, when the army no longer executes, the next `city` offensive. A refused
drag falls back as the scripted player's retries do: the next city, then `near`.

When its orders land is its `Timing`: the waits from the start to the front held, from the front to
the opening's offensive drawn, from a replan's decision to its offensive drawn, and from drawn to
executed, each drawn per use from a tuple of hours by the rollout's own timing generator (the search
player's `SCREEN_TIMING` holds the screen player's measured waits; `Timing()` gives every order at
once, as the order API's rush does).

Where it still differs from the screen player: it reads provinces and cities from the world, not from
pixels (the screen player sorts cities by pixel distance from its front, this by hops, and knows
only the cities it has seen); it never loses an order to a missed click or an event window, nor
gives up a step (its timing's long tails are the screen's retries, not their failures).

Each rollout reseeds the forked world's generator (battle luck, the AI's picks) and its timing with its
seed, so K rollouts of one candidate see K different futures, and candidates compared with the same seeds see
the same K futures (common random numbers). The same world, choice and seed give the same result.

Try: python -m hoi4_arena.sim.rollout river:3
"""

from __future__ import annotations

import contextlib
import copy
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.sim.ai import GameAI
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.save import load_game
from hoi4_arena.sim.world import OrderRefused, World

AIMS = ("near", "city", "second", "none")
"""What an offensive aims at (see the module docstring); the opening kinds near/deep/none are near/city/none."""
OPENING_AIMS = {"near": "near", "deep": "city", "none": "none"}
"""The scripted player's opening kinds as aims."""
OUTCOME = {"win": 1.0, "draw": 0.5, "loss": 0.0}

Score = Callable[[World, str], float]


@dataclass(frozen=True)
class Choice:
    """One candidate at a choice point: the next offensive's aim, the hours before it is executed, and
    the replanning period from then on (None: one offensive, then hold)."""

    aim: str = "city"
    delay_hours: int = 0
    replan_hours: int | None = 96

    def __post_init__(self) -> None:
        if self.aim not in AIMS:
            raise ValueError(f"aim must be one of {', '.join(AIMS)}, not {self.aim!r}")
        if self.delay_hours < 0 or (self.replan_hours is not None and self.replan_hours < 1):
            raise ValueError("delay_hours must be >= 0 and replan_hours >= 1 (or None)")

    @property
    def label(self) -> str:
        replan = "hold" if self.replan_hours is None else f"r{self.replan_hours}h"
        return f"{self.aim}/d{self.delay_hours}h/{replan}"


def vp_share(world: World, side: str) -> float:
    """The share of all victory points `side` controls (0.5 at the start: the map is mirrored)."""
    held = sum(world.vp[p] for p in range(1, world.n_provinces + 1) if world.control[p] == side)
    return held / max(1, sum(world.total_vp.values()))


def outcome(world: World, side: str) -> float:
    """A finished game's value for `side`: win 1, draw 0.5, loss 0."""
    if world.winner is None:
        return OUTCOME["draw"]
    return OUTCOME["win"] if world.winner == side else OUTCOME["loss"]


def fork(world: World, ais: dict[str, GameAI]) -> tuple[World, dict[str, GameAI]]:
    """An independent copy of the world and its AIs, in memory (a save that is never written). The map,
    the rules and the static distances are shared, not copied; the copy writes no log file, keeps no
    log lines and starts with empty front and route caches (they are keyed by the control version and
    refilled on use, so play is unchanged)."""
    memo = {
        id(world.arena): world.arena,
        id(world.rules): world.rules,
        id(world.distance): world.distance,
        id(world._writer): None,
        id(world.log_lines): [],
        id(world._fronts): {},
        id(world._routes): {},
    }
    for name in ("canon", "owner", "adj", "terrain", "vp", "centroid_y", "river", "railway", "total_vp"):
        value = getattr(world, name)  # static for the whole game: shared
        memo[id(value)] = value
    return copy.deepcopy((world, ais), memo)


def load_world(path: str | Path) -> tuple[World, dict[str, GameAI], str]:
    """The world, its AIs and the screen player's side from a simulator save (`sim/save.py`)."""
    game = load_game(path)
    try:
        return game.world, game.ais, game.ui.player
    finally:
        game.close()


@dataclass(frozen=True)
class Timing:
    """When the plan's orders land, in game hours: each wait is drawn, every time it is used, from its
    tuple (an empirical distribution; one value: fixed) by the rollout's timing generator.

    The screen player's are drawn think times, pointer travel, checks and retries; `SCREEN_TIMING` holds
    what its games measured. All zeros: every order at once (the order API's plan)."""

    front: tuple[int, ...] = (0,)
    """From the plan's start to its army formed and holding the front (a plan that starts with an army
    holding its front skips it)."""
    draw_first: tuple[int, ...] = (0,)
    """From the front held to the opening's offensive drawn (an opening plan's first offensive)."""
    draw: tuple[int, ...] = (0,)
    """From a replan's decision (its period run out, the army not executing) to its offensive drawn."""
    execute: tuple[int, ...] = (0,)
    """From an offensive drawn to its execution (the choice's delay on top of its own offensive)."""

    def __post_init__(self) -> None:
        for name in ("front", "draw_first", "draw", "execute"):
            values = getattr(self, name)
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
                raise ValueError(f"timing {name} must be one or more whole hours >= 0, not {values!r}")

    @staticmethod
    def fixed(lag_hours: int, order_hours: int) -> Timing:
        """The first search's fixed timing: army, front and the opening's offensive `lag_hours` after the
        start, every offensive executed `order_hours` after it is drawn, a replan drawn at once."""
        return Timing((lag_hours,), (0,), (0,), (order_hours,))


@dataclass
class ScriptedPlan:
    """The scripted player's plan for `tag` in world orders (see the module docstring); call
    `update(world)` every game hour. `opening`: the choice's offensive is the game's first (it waits
    `timing.draw_first` after the front, else `timing.draw` as a replan's); `clock` draws the waits."""

    tag: str
    choice: Choice
    rng: random.Random
    timing: Timing = Timing()
    clock: random.Random | None = None
    opening: bool = True
    army: int | None = None
    _start: int | None = None
    _front_at: int | None = None
    _aim: str | None = None
    _drawing: str | None = None
    _own: bool = False  # the offensive being drawn is the choice's own (its delay applies)
    _draw_at: int | None = None
    _execute_at: int | None = None
    _replan_at: int | None = None

    def _wait(self, values: tuple[int, ...]) -> int:
        if len(values) == 1:
            return values[0]
        if self.clock is None:
            self.clock = random.Random(f"timing-{self.tag}")
        return values[self.clock.randrange(len(values))]

    def update(self, world: World) -> None:
        if world.over:
            return
        if self._start is None:
            self._start = world.hour
            self._aim = self.choice.aim
            if self.army is None:  # a plan taken over mid-game goes on with the side's army
                self.army = next((a.id for a in world.armies_of(self.tag)), None)
            army = world.armies.get(self.army) if self.army is not None else None
            held = army is not None and army.front is not None
            self._front_at = self._start + (0 if held else self._wait(self.timing.front))
        if world.hour < self._front_at or not world.at_war:
            return
        if self.army is None:
            free = world.unassigned(self.tag)
            if not free:
                return
            self.army = world.form_army(self.tag, free[: world.rules.max_army_size])
        army = world.armies.get(self.army)
        if army is None:
            return  # destroyed: the screen player has no army card left to act with
        if army.front is None:
            world.assign_front(army.id, other_tag(self.tag))
        if self._execute_at is not None:
            if world.hour >= self._execute_at:
                self._execute_at = None
                with contextlib.suppress(OrderRefused):  # the plan was taken already: replan
                    world.execute(army.id)
                self._schedule_replan(world)
            return
        if self._aim is not None:  # the choice's own offensive (once)
            aim, self._aim = self._aim, None
            if aim == "none":
                self._schedule_replan(world)
                return
            wait = self.timing.draw_first if self.opening else self.timing.draw
            self._drawing, self._draw_at, self._own = aim, world.hour + self._wait(wait), True
        elif self._draw_at is None:
            if self._replan_at is None or world.hour < self._replan_at or army.executing:
                return
            self._drawing, self._draw_at, self._own = "city", world.hour + self._wait(self.timing.draw), False
        if world.hour < self._draw_at:
            return
        aim, self._drawing, self._draw_at = self._drawing, None, None
        if self._draw(world, army.id, aim):
            delay = self.choice.delay_hours if self._own else 0
            self._execute_at = world.hour + self._wait(self.timing.execute) + delay
        else:
            self._schedule_replan(world)

    def _schedule_replan(self, world: World) -> None:
        every = self.choice.replan_hours
        self._replan_at = None if every is None else world.hour + every

    def _draw(self, world: World, army_id: int, aim: str) -> bool:
        """Draw the offensive of `aim`, falling back as the screen player's retries do; whether one was
        drawn."""
        enemy = other_tag(self.tag)
        front = world.front_provinces(self.tag, enemy)
        if not front:
            return False
        if aim in ("city", "second"):
            cities = self._cities(world, enemy, front)
            if aim == "second" and len(cities) > 1:
                cities = cities[1:] + cities[:1]
            for target in cities:
                start = min(front, key=lambda f: (int(world.distance[f, target]), world.canon[f]))
                try:
                    world.draw_offensive(army_id, target, start=start)
                    return True
                except OrderRefused:
                    continue
        for _ in range(24):  # just across the border, from a front province drawn at random
            start = front[self.rng.randrange(len(front))]
            across = [n for n in world.adj[start] if world.control[n] == enemy]
            if not across:
                continue
            target = across[self.rng.randrange(len(across))]
            try:
                world.draw_offensive(army_id, target, start=start)
                return True
            except OrderRefused:
                continue
        return False

    @staticmethod
    def _cities(world: World, enemy: str, front: Sequence[int]) -> list[int]:
        """Enemy-held cities, best first: the capital, then by hops from the front."""
        capital = world.arena.capitals[enemy]
        cities = [p for p in range(1, world.n_provinces + 1) if world.vp[p] and world.control[p] == enemy]
        dist = world.distance
        cities.sort(key=lambda c: (c != capital, min(int(dist[f, c]) for f in front), world.canon[c]))
        return cities


def play_out(world: World, ais: dict[str, GameAI], plans: Sequence[ScriptedPlan], end_hour: int) -> None:
    """Step the world hour by hour until it ends or reaches `end_hour`: the AIs at the start of each day
    (the order alternating, as `SimGame.advance`), the plans every hour."""
    while not world.over and world.hour < end_hour:
        if world.hour % 24 == 0:
            for tag in TAGS if world.day % 2 == 0 else TAGS[::-1]:
                ai = ais.get(tag)
                if ai is not None:
                    ai.update(world)
        for plan in plans:
            plan.update(world)
        world.step(1)


def play_choice(
    world: World,
    ais: dict[str, GameAI],
    side: str,
    choice: Choice,
    seed: int,
    *,
    days: int = 0,
    timing: Timing = Timing(),
    opening: bool = True,
) -> World:
    """A fork of `world` where `side` has played `choice` (the other side its AI) for `days` game days
    (0: to the game's end), its orders landing by `timing` (`opening`: the choice is the game's opening,
    else a replan's); `world` and `ais` are not changed."""
    world, ais = fork(world, ais)
    world.rng = random.Random(f"rollout-{seed}")
    ais.pop(side, None)  # the side is the plan's
    plan = ScriptedPlan(
        side, choice, random.Random(f"plan-{seed}"), timing, random.Random(f"timing-{seed}"), opening
    )
    end = world.hour + 24 * days if days else world.max_days * 24 + 1
    play_out(world, ais, [plan], end)
    return world


def rollout(
    world: World,
    ais: dict[str, GameAI],
    side: str,
    choice: Choice,
    seed: int,
    *,
    days: int = 0,
    timing: Timing = Timing(),
    opening: bool = True,
    score: Score = vp_share,
) -> float:
    """`play_choice`'s value for `side`: the outcome when the game has ended, else `score` of the world."""
    world = play_choice(world, ais, side, choice, seed, days=days, timing=timing, opening=opening)
    return outcome(world, side) if world.over else float(score(world, side))


@dataclass(frozen=True)
class Searched:
    """What one search found: the best choice, and every candidate's mean over the rollouts."""

    best: Choice
    means: tuple[float, ...]
    rollouts: int

    def to_dict(self, candidates: Sequence[Choice]) -> dict:
        return {
            "best": self.best.label,
            "means": {c.label: round(m, 4) for c, m in zip(candidates, self.means, strict=True)},
            "rollouts": self.rollouts,
        }


def search(
    world: World,
    ais: dict[str, GameAI],
    side: str,
    candidates: Sequence[Choice],
    k: int,
    seed: int,
    **options,
) -> Searched:
    """Roll each candidate out `k` times (seeds `seed` .. `seed + k - 1`, the same for every candidate)
    and take the best mean; a tie goes to the earlier candidate. `options` go to `rollout`."""
    if not candidates or k < 1:
        raise ValueError("search needs at least one candidate and k >= 1")
    means = tuple(
        sum(rollout(world, ais, side, c, seed + i, **options) for i in range(k)) / k for c in candidates
    )
    best = max(range(len(candidates)), key=lambda i: (means[i], -i))
    return Searched(candidates[best], means, k * len(candidates))


if __name__ == "__main__":
    spec = sys.argv[1] if len(sys.argv) > 1 else "river:3"
    with SimGame(spec, seed=3, ai={"RED": 0.5}, declarer="BLU", news=False) as game:
        choices = [Choice(aim, 0, 96) for aim in ("near", "city", "none")]
        found = search(game.world, game.ais, "BLU", choices, k=2, seed=0, timing=Timing.fixed(48, 0))
        print(found.to_dict(choices))
