"""The game's own AI: plays one side through the world's order API only, like a HOI4 opponent.

Before the war it forms its divisions into armies. At war it assigns every army to the front, holds
it, and every few days (its reaction delay) looks for a place where it is locally stronger: an enemy
province whose defence its concentrated army would outweigh. There it draws an offensive toward the
nearest enemy city and executes it. It answers breakthroughs: the armies' fronts follow the new line
by themselves (the world re-spreads them), and the AI counterattacks weakly held provinces it has lost,
which can cut off an enemy spearhead. A stalled offensive is halted.

`AIConfig.strength` (0..1) sets how well it plays: how quickly it reacts, how much superiority it
waits for before attacking, and whether it picks the weakest point or a merely good one.

Try: hoi4-arena sim-run --preset plains --seed 1 --ai both
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hoi4_arena.maps.model import other_tag
from hoi4_arena.sim.battle import defence_power
from hoi4_arena.sim.world import OrderRefused, World


@dataclass(frozen=True)
class AIConfig:
    """How well the AI plays."""

    strength: float = 0.5
    """0 (slow, timid, scattered) .. 1 (quick, bold, picks the weakest point)."""
    armies: int = 2
    """Armies it forms (they split the front north to south)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.strength <= 1.0:
            raise ValueError(f"AI strength must be within 0..1, not {self.strength}")
        if not 1 <= self.armies <= 4:
            raise ValueError("the AI forms 1 to 4 armies")

    @property
    def decision_hours(self) -> int:
        """Reaction delay: hours between its looks at the map (1 day at strength 1, 4 days at 0)."""
        return 24 * (1 + round(3 * (1.0 - self.strength)))

    @property
    def attack_ratio(self) -> float:
        """Local superiority it waits for before attacking."""
        return 1.7 - 0.6 * self.strength


@dataclass
class GameAI:
    """The AI of one side; call `update(world)` as the game runs (it acts on its own schedule)."""

    tag: str
    config: AIConfig = field(default_factory=AIConfig)
    next_hour: int = 0
    _progress: dict[int, tuple[float, int]] = field(default_factory=dict)

    def update(self, world: World) -> None:
        if world.over or world.hour < self.next_hour:
            return
        self.next_hour = world.hour + self.config.decision_hours
        self._organise(world)
        if not world.at_war:
            return
        enemy = other_tag(self.tag)
        for army in world.armies_of(self.tag):
            if army.front is None:
                world.assign_front(army.id, enemy)
        self._halt_stalled(world)
        if any(a.executing for a in world.armies_of(self.tag)):
            return
        if self.config.strength >= 0.2 and self._counterattack(world, enemy):
            return
        self._attack(world, enemy)

    # --- armies ----------------------------------------------------------------------------------

    def _organise(self, world: World) -> None:
        free = world.unassigned(self.tag)
        if not free:
            return
        free.sort(
            key=lambda i: (world.flank(self.tag, world.divisions[i].province), world.rank(world.divisions[i]))
        )
        if world.armies_of(self.tag):
            world.form_army(self.tag, free)  # late arrivals: a small army of their own
            return
        k = self.config.armies
        for i in range(k):
            chunk = free[i * len(free) // k : (i + 1) * len(free) // k]
            if chunk:
                world.form_army(self.tag, chunk)

    def _halt_stalled(self, world: World) -> None:
        for army in world.armies_of(self.tag):
            if not army.executing:
                self._progress.pop(army.id, None)
                continue
            progress = world.plan_progress(army.id)
            seen = self._progress.get(army.id)
            if seen is None or progress > seen[0]:
                self._progress[army.id] = (progress, world.hour)
                continue
            divs = [world.divisions[i] for i in army.divisions]
            tired = sum(d.org for d in divs) / len(divs) < 0.35
            if tired or world.hour - seen[1] >= 24 * 4:
                world.halt(army.id)
                self._progress.pop(army.id, None)

    # --- decisions -------------------------------------------------------------------------------

    def _counterattack(self, world: World, enemy: str) -> bool:
        """Retake a lost province that the enemy holds weakly (the neck of a breakthrough)."""
        lost = [
            p
            for p in range(1, world.n_provinces + 1)
            if world.owner[p] == self.tag and world.control[p] == enemy
        ]
        best = None
        for p in lost:
            ours = [n for n in world.adj[p] if world.control[n] == self.tag]
            if not ours:
                continue
            held = sum(defence_power(world, world.divisions[i]) for i in world.occupants[p])
            near = sum(1 for n in ours for _ in world.occupants[n])
            if held > 0.6 * max(1, near):
                continue
            key = (held, -len(ours), world.canon[p])
            if best is None or key < best[0]:
                best = (key, p, ours)
        if best is None:
            return False
        _, target, ours = best
        for army in sorted(world.armies_of(self.tag), key=lambda a: a.id):
            share = world.army_front(army.id)
            starts = [n for n in ours if n in share] or [
                n for n in ours if n in world.front_provinces(self.tag, enemy)
            ]
            if not starts:
                continue
            try:
                world.draw_offensive(army.id, target, start=starts[0])
                world.execute(army.id)
            except OrderRefused:
                continue
            return True
        return False

    def _attack(self, world: World, enemy: str) -> bool:
        rules = world.rules
        options = []
        for army in world.armies_of(self.tag):
            divs = [world.divisions[i] for i in army.divisions]
            if sum(d.org for d in divs) / len(divs) < 0.75:
                continue
            share = world.army_front(army.id)
            n_attack = len(divs) - min(len(share) * rules.offensive_hold, len(divs) // 2)
            strength = sum(d.strength for d in divs) / len(divs)
            for f in share:
                for e in world.adj[f]:
                    if world.control[e] != enemy:
                        continue
                    directions = sum(1 for n in world.adj[e] if world.control[n] == self.tag)
                    width = min(
                        rules.width_max,
                        rules.width_base + rules.width_per_direction * (min(directions, 3) - 1),
                    )
                    power = min(width, n_attack) * strength * rules.terrain_attack[world.terrain[e]]
                    power *= rules.river_attack[world.river.get((f, e), 0)] * (
                        1.0 + rules.flank_bonus * (min(directions, 3) - 1)
                    )
                    power *= (max(1.0, n_attack / width)) ** 0.5  # fresh reserves rotate in
                    held = sum(defence_power(world, world.divisions[i]) for i in world.occupants[e])
                    ratio = power / held if held > 0 else 10.0
                    options.append((ratio, army.id, f, e))
        if not options:
            return False
        options.sort(key=lambda o: (-o[0], o[1], world.canon[o[2]], world.canon[o[3]]))
        if self.config.strength < 0.6 and len(options) > 1:
            # A weaker AI settles for one of the three best points rather than the best.
            first = min(len(options) - 1, int(world.rng.random() * 3))
            options.insert(0, options.pop(first))
        for ratio, army_id, start, point in options:
            if ratio < self.config.attack_ratio:
                break
            # Toward the best city behind the point; when that city lies beyond reach through enemy
            # land (a pocket, a bay), take the point itself.
            for target in (self._objective(world, point, enemy), point):
                try:
                    world.draw_offensive(army_id, target, start=start)
                    world.execute(army_id)
                except OrderRefused:
                    continue
                return True
        return False

    def _objective(self, world: World, point: int, enemy: str) -> int:
        """The enemy-held city worth most for its distance from the breakthrough point."""
        dist = world.distance
        cities = [p for p in range(1, world.n_provinces + 1) if world.vp[p] and world.control[p] == enemy]
        if not cities:
            return point
        return min(cities, key=lambda c: (int(dist[point, c]) - world.vp[c] / 6.0, world.canon[c]))
