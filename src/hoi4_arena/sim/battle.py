"""One hour of one battle: the attackers moving into a province against the divisions holding it.

Power is strength x attack (or defence) with the modifiers HOI4 players know: the defended terrain, a
river between attacker and defender, the defender's entrenchment, supply, and the number of directions
attacked from (more directions allow more attackers at once and add a flanking bonus). The ratio of
powers sets how fast each side loses organisation (linear, so the stronger side breaks the other
first); a little seeded luck per battle-hour keeps close fights open. A defender out of organisation
retreats to a friendly neighbour, or is destroyed when it has none (cut off). An attacker out of
organisation breaks off and rests; fresher divisions behind it take its place (concentration).

Try: python -m pytest -q tests/sim/test_rules.py
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hoi4_arena.sim.world import Division, World

MIN_STRENGTH = 0.02  # below this a division is gone


@dataclass(slots=True)
class Battle:
    """Attackers gathered this hour against one province."""

    province: int
    attackers: list[Division] = field(default_factory=list)


def attack_power(world: World, d: Division, province: int) -> float:
    """One attacker's power against `province` before terrain and flanking."""
    rules = world.rules
    river = rules.river_attack[world.river.get((d.province, province), 0)]
    return d.attack * d.strength * river * (1.0 - rules.low_supply_power * (1.0 - d.supply))


def defence_power(world: World, d: Division) -> float:
    rules = world.rules
    if d.org <= 0.0:
        return 0.0
    return (
        d.defence
        * d.strength
        * (1.0 + rules.entrench_bonus * d.entrench)
        * (1.0 - rules.low_supply_power * (1.0 - d.supply))
    )


def resolve_battle(world: World, battle: Battle) -> None:
    rules = world.rules
    pid = battle.province
    defenders = [world.divisions[i] for i in world.occupants[pid]]
    if not defenders or not battle.attackers:
        return
    directions = len({d.province for d in battle.attackers})
    width = min(rules.width_max, rules.width_base + rules.width_per_direction * (directions - 1))
    engaged = sorted(battle.attackers, key=lambda d: (-d.org, d.id))[:width]
    attack = sum(attack_power(world, d, pid) for d in engaged)
    attack *= rules.terrain_attack[world.terrain[pid]] * (1.0 + rules.flank_bonus * (directions - 1))
    defence = sum(defence_power(world, d) for d in defenders)
    hour = world.hour
    men = rules.men_per_division
    if defence > 0.0:
        ratio = min(10.0, max(0.1, attack / defence))
        luck = 1.0 + rules.battle_noise * (2.0 * world.rng.random() - 1.0)
        defender_loss = rules.org_damage * ratio * luck
        attacker_loss = rules.org_damage / (ratio * luck)
        for d in engaged:
            d.fought = hour
            d.org = max(0.0, d.org - attacker_loss)
            hurt = min(d.strength, attacker_loss * rules.str_damage)
            d.strength -= hurt
            world.casualties[d.tag] += hurt * men
            if d.org <= rules.stop_org:
                d.resting = True
        for d in defenders:
            d.fought = hour
            d.org = max(0.0, d.org - defender_loss)
            hurt = min(d.strength, defender_loss * rules.str_damage)
            d.strength -= hurt
            world.casualties[d.tag] += hurt * men
    for d in engaged + defenders:
        if d.strength < MIN_STRENGTH and d.id in world.divisions:
            world.destroy(d)
    standing = [d for d in defenders if d.id in world.divisions and d.org > 0.0]
    beaten = [d for d in defenders if d.id in world.divisions and d.org <= 0.0]
    if standing:
        for d in beaten:  # individually broken defenders fall back if they can; the rest hold
            world.retreat(d, set())
        return
    for d in beaten:
        if not world.retreat(d, set()):
            world.destroy(d)
