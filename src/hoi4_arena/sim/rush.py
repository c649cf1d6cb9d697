"""The simple scripted plan: one army of every division, the front, one offensive, executed early.

A concentrated early offensive is strong in HOI4, and it is what the scripted screen player will do
through the interface. Expressed here through the order API, it is the yardstick the game's AI must
not be unbeatable by: form one army of all divisions, assign it to the front, draw an offensive
toward the enemy's capital and execute it; when a plan is done, draw the next one toward the nearest
enemy city and execute again.

Try: hoi4-arena sim-run --preset plains --seed 1 --ai RED --rush BLU
"""

from __future__ import annotations

from dataclasses import dataclass

from hoi4_arena.maps.model import other_tag
from hoi4_arena.sim.world import OrderRefused, World


@dataclass
class Rush:
    """Plays `tag` with the concentrated-offensive plan; call `update(world)` as the game runs."""

    tag: str
    army: int | None = None

    def update(self, world: World) -> None:
        if world.over:
            return
        if self.army is None or self.army not in world.armies:
            free = world.unassigned(self.tag)
            if not free:
                return
            self.army = world.form_army(self.tag, free[: world.rules.max_army_size])
        if not world.at_war:
            return
        army = world.armies[self.army]
        enemy = other_tag(self.tag)
        if army.front is None:
            world.assign_front(self.army, enemy)
        if army.executing:
            return
        for target in self._targets(world, enemy):
            try:
                world.draw_offensive(self.army, target)
                world.execute(self.army)
                return
            except OrderRefused:
                continue

    def _targets(self, world: World, enemy: str) -> list[int]:
        capital = world.arena.capitals[enemy]
        cities = [p for p in range(1, world.n_provinces + 1) if world.vp[p] and world.control[p] == enemy]
        front = world.front_provinces(self.tag, enemy)
        if not front:
            return cities
        dist = world.distance
        near = sorted(cities, key=lambda c: (min(int(dist[f, c]) for f in front), world.canon[c]))
        return ([capital] if world.control[capital] == enemy else []) + [c for c in near if c != capital]
