"""The rules of the land war, each checked on a staged battle."""

from __future__ import annotations

import pytest

from hoi4_arena.sim.world import World


def _battle(
    stage,
    crossing,
    arena,
    attackers: int,
    defenders: int,
    hours: int,
    *,
    river: int = 0,
    terrain: str | None = None,
    entrench: float = 0.0,
    seed: int = 0,
) -> World:
    world = World(arena, seed, declarer="BLU")
    f, e = crossing(world)
    if river:
        world.river[(f, e)] = world.river[(e, f)] = river
    if terrain:
        world.terrain[e] = terrain
    blu = list(range(1, attackers + 1))
    red = list(range(25, 25 + defenders))
    stage(world, {**{d: f for d in blu}, **{d: e for d in red}})
    for d in red:
        world.divisions[d].entrench = entrench
    for d in blu:
        world.move(d, e)
    world.step(hours)
    world.front_province, world.target_province = f, e
    return world


def test_a_stronger_attack_wins_and_captures_on_arrival(plains, stage, crossing) -> None:
    world = _battle(stage, crossing, plains, attackers=3, defenders=1, hours=72)
    e = world.target_province
    assert world.controller(e) == "BLU"
    assert any(d.province == e for d in world.divisions_of("BLU"))
    assert world.divisions[25].province != e  # the beaten defender fell back
    assert any(line.startswith("ARENA control") and f"province={e} " in line for line in world.log_lines)


def test_a_weaker_attack_fails_and_breaks_off(plains, stage, crossing) -> None:
    world = _battle(stage, crossing, plains, attackers=1, defenders=3, hours=72, entrench=1.0)
    assert world.controller(world.target_province) == "RED"
    attacker = world.divisions[1]
    assert attacker.province == world.front_province and attacker.org < 0.9
    assert min(world.divisions[d].org for d in (25, 26, 27)) > attacker.org


@pytest.mark.parametrize(
    "handicap",
    [{"river": 1}, {"river": 2}, {"terrain": "forest"}, {"terrain": "mountain"}, {"entrench": 1.0}],
)
def test_rivers_terrain_and_entrenchment_hurt_the_attacker(plains, handicap, stage, crossing) -> None:
    # Same seed, same luck: the only difference is the handicap.
    even = _battle(stage, crossing, plains, attackers=2, defenders=2, hours=10)
    hard = _battle(stage, crossing, plains, attackers=2, defenders=2, hours=10, **handicap)
    org = lambda w, ids: sum(w.divisions[i].org for i in ids)  # noqa: E731
    assert org(hard, (25, 26)) > org(even, (25, 26))
    assert org(hard, (1, 2)) < org(even, (1, 2))


def test_larger_rivers_are_slower_to_cross(plains, crossing) -> None:
    world = World(plains, 0)
    f, e = crossing(world)
    plain = world._move_need(f, e)
    world.river[(f, e)] = 2
    assert world._move_need(f, e) == plain * world.rules.river_move[2] > plain


def test_concentration_from_more_directions_adds_width(plains, stage, crossing) -> None:
    world = World(plains, 0, declarer="BLU")
    _, e = crossing(world)
    sources = [n for n in world.adj[e] if world.owner[n] == "BLU"]
    assert len(sources) >= 2, "the staged crossing needs two BLU neighbours"
    stage(world, {1: sources[0], 2: sources[0], 3: sources[0], 4: sources[1], 5: sources[1], 25: e, 26: e})
    for d in range(1, 6):
        world.move(d, e)
    world.step(1)
    fought = [d for d in range(1, 6) if world.divisions[d].fought == 0]
    assert len(fought) == 5  # width 3 from one direction, +2 for the second


def test_a_cut_off_defender_is_destroyed(plains, stage, crossing) -> None:
    world = World(plains, 0, declarer="BLU")
    f, e = crossing(world)
    stage(world, {1: f, 2: f, 3: f, 25: e})
    for n in world.adj[e]:  # surround e: every neighbour in BLU's hands
        if world.control[n] == "RED":
            world._capture(n, "BLU")
    world.step(24)
    assert world.divisions[25].encircled
    before = world.divisions[25].strength
    world.step(24)
    assert world.divisions[25].strength < before  # encircled: losing strength every day
    for d in (1, 2, 3):
        world.move(d, e)
    world.step(96)
    assert 25 in world.destroyed and world.controller(e) == "BLU"


def test_supply_falls_with_distance_from_the_railway(plains, stage) -> None:
    world = World(plains, 0, declarer="BLU")
    rail = set(world.arena.railways["BLU"])
    far = max(world.arena.provinces_of("BLU"), key=lambda p: min(int(world.distance[p, r]) for r in rail))
    stage(world, {1: world.arena.railways["BLU"][-1], 2: far})
    world.step(24)
    assert world.divisions[1].supply == 1.0 and world.divisions[2].supply < 1.0


def test_manpower_reinforces_losses(plains) -> None:
    world = World(plains, 0)
    world.divisions[1].strength = 0.5
    pool = world.manpower["BLU"]
    world.step(48)
    d = world.divisions[1]
    assert d.strength == pytest.approx(0.5 + 2 * world.rules.reinforce_rate * d.supply)
    assert world.manpower["BLU"] < pool + 2 * world.rules.manpower_daily


def test_capitulation_ends_the_game_with_a_winner(plains) -> None:
    world = World(plains, 0, declarer="RED")
    cities = sorted((p for p in plains.provinces_of("BLU") if world.vp[p]), key=lambda p: -world.vp[p])
    for p in cities:
        if world.over:
            break
        world._capture(p, "RED")
    assert world.over and world.winner == "RED" and world.end_reason == "capitulation"
    assert world.surrender["BLU"] >= world.rules.surrender_limit
    assert world.log_lines[-1].startswith("ARENA capitulated") and "winner=RED" in world.log_lines[-1]
    hour = world.hour
    world.step(24)
    assert world.hour == hour  # a finished game does not advance


def test_the_time_limit_is_a_draw(plains) -> None:
    world = World(plains, 0, max_days=3)
    world.step(24 * 5)
    assert world.over and world.winner is None and world.hour == 72
    assert world.log_lines[-1].startswith("ARENA draw") and "reason=timeout" in world.log_lines[-1]
