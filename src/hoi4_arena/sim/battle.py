"""One hour of one battle: the attackers moving into a province against the divisions holding it.

Power is strength x attack (or defence) with the modifiers HOI4 players know: the defended terrain, a
river between attacker and defender, the defender's entrenchment, supply, and the number of directions
attacked from (more directions allow more attackers at once and add a flanking bonus). The ratio of
powers sets how fast each side loses organisation (linear, so the stronger side breaks the other
first); a little seeded luck per battle-hour keeps close fights open. A defender out of organisation
retreats to a friendly neighbour, or is destroyed when it has none (cut off). An attacker out of
organisation breaks off and rests; fresher divisions behind it take its place (concentration).
All battles of an hour are worked out from the state at its start and only then applied, so no
battle (and no side) goes first.

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


@dataclass(slots=True)
class Clash:
    """One battle-hour's result, computed from the state at the start of the hour."""

    province: int
    engaged: list[Division]
    defenders: list[Division]
    attacker_loss: float
    defender_loss: float


def fight(world: World, battle: Battle) -> Clash | None:
    """Work out one battle-hour without changing anything but the luck drawn."""
    rules = world.rules
    pid = battle.province
    defenders = [world.divisions[i] for i in world.occupants[pid]]
    if not defenders or not battle.attackers:
        return None
    directions = len({d.province for d in battle.attackers})
    width = min(rules.width_max, rules.width_base + rules.width_per_direction * (directions - 1))
    engaged = sorted(battle.attackers, key=lambda d: (-d.org, world.rank(d)))[:width]
    attack = sum(attack_power(world, d, pid) for d in engaged)
    attack *= rules.terrain_attack[world.terrain[pid]] * (1.0 + rules.flank_bonus * (directions - 1))
    defence = sum(defence_power(world, d) for d in defenders)
    if defence <= 0.0:
        return Clash(pid, engaged, defenders, 0.0, 0.0)
    ratio = min(10.0, max(0.1, attack / defence))
    luck = 1.0 + rules.battle_noise * (2.0 * world.rng.random() - 1.0)
    return Clash(pid, engaged, defenders, rules.org_damage / (ratio * luck), rules.org_damage * ratio * luck)


def apply_losses(world: World, clash: Clash) -> None:
    """Organisation and strength losses of one clash (all clashes of an hour are applied together)."""
    rules = world.rules
    hour, men = world.hour, rules.men_per_division
    for group, loss in ((clash.engaged, clash.attacker_loss), (clash.defenders, clash.defender_loss)):
        for d in group:
            d.fought = hour
            d.org = max(0.0, d.org - loss)
            hurt = min(d.strength, loss * rules.str_damage)
            d.strength -= hurt
            world.casualties[d.tag] += hurt * men
    for d in clash.engaged:
        if d.org <= rules.stop_org:
            d.resting = True


def settle(world: World, clash: Clash) -> None:
    """After the hour's losses: the spent are destroyed, broken defenders retreat or, cut off, die."""
    for d in clash.engaged + clash.defenders:
        if d.strength < MIN_STRENGTH and d.id in world.divisions:
            world.destroy(d)
    defenders = [d for d in clash.defenders if d.id in world.divisions and d.province == clash.province]
    standing = [d for d in defenders if d.org > 0.0]
    beaten = [d for d in defenders if d.org <= 0.0]
    if standing:
        for d in beaten:  # individually broken defenders fall back if they can; the rest hold
            world.retreat(d, set())
        return
    for d in beaten:
        if not world.retreat(d, set()):
            world.destroy(d)
