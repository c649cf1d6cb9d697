"""How armies carry out their orders, every day and after every change of the front, as in HOI4.

An army with a front spreads its divisions over its share of the front line, more where more enemies
stand across it, keeping divisions that are already in place. An army executing an offensive leaves
`Rules.offensive_hold` divisions on each front province away from the attack and sends the rest at
the first province of its plan that the enemy still holds, from every friendly province next to it.
Divisions walk through their own country's land only; attacking is the last step of their path.

Try: python -m pytest -q tests/sim/test_world.py -k offensive
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hoi4_arena.sim.world import Army, Division, World


def command_armies(world: World) -> None:
    for army in sorted(world.armies.values(), key=lambda a: a.id):
        if army.front is not None:
            _command(world, army)


def _command(world: World, army: Army) -> None:
    divs = [world.divisions[i] for i in army.divisions]
    front = world.army_front(army.id)
    if not front or not divs:
        return
    if army.executing:
        target = _next_target(world, army)
        if target is None:
            army.executing = False
        else:
            staging = [n for n in world.adj[target] if world.control[n] == army.tag]
            hold_at = [p for p in front if p not in staging]
            n_hold = min(len(hold_at) * world.rules.offensive_hold, len(divs) // 2)
            holders, attackers = _split(world, divs, target, n_hold)
            _hold(world, holders, hold_at, army.front)
            _attack(world, attackers, target, staging)
            return
    _hold(world, divs, list(front), army.front)


def _next_target(world: World, army: Army) -> int | None:
    """First plan province the enemy holds that touches our land (the plan's current step)."""
    for p in army.plan[1:]:
        if world.control[p] != army.tag:
            if any(world.control[n] == army.tag for n in world.adj[p]):
                return p
            return None
    return None


def _split(
    world: World, divs: list[Division], target: int, n_hold: int
) -> tuple[list[Division], list[Division]]:
    """The divisions farthest from the target hold; the nearest attack."""
    dist = world.distance
    order = sorted(divs, key=lambda d: (int(dist[d.province, target]), world.rank(d)))
    return order[len(order) - n_hold :], order[: len(order) - n_hold]


def _threat(world: World, pid: int, enemy: str) -> int:
    return 1 + sum(len(world.occupants[n]) for n in world.adj[pid] if world.control[n] == enemy)


def _hold(world: World, divs: list[Division], provinces: list[int], enemy: str | None) -> None:
    """Spread `divs` over `provinces`, weighted by the enemy facing each, moving as few as possible."""
    if not divs or not provinces:
        return
    canon = world.canon
    weights = {p: _threat(world, p, enemy) if enemy else 1 for p in provinces}
    n = len(divs)
    slots: dict[int, int] = {}
    if n <= len(provinces):
        for p in sorted(provinces, key=lambda p: (-weights[p], canon[p]))[:n]:
            slots[p] = 1
    else:
        for p in provinces:
            slots[p] = 1
        extra = n - len(provinces)
        total = sum(weights.values())
        shares = {p: extra * weights[p] / total for p in provinces}
        for p in provinces:
            slots[p] += int(shares[p])
        left = n - sum(slots.values())
        for p in sorted(provinces, key=lambda p: (-(shares[p] - int(shares[p])), canon[p]))[:left]:
            slots[p] += 1
    assignment: dict[int, int] = {}
    free: list[Division] = []
    for d in sorted(divs, key=world.rank):
        here = d.path[-1] if d.path and world.control[d.path[-1]] == d.tag else d.province
        if slots.get(here, 0) > 0:
            slots[here] -= 1
            assignment[d.id] = here
        else:
            free.append(d)
    dist = world.distance
    for p in sorted(slots, key=lambda p: (-weights[p], canon[p])):
        while slots[p] > 0 and free:
            best = min(free, key=lambda d: (int(dist[d.province, p]), world.rank(d)))
            free.remove(best)
            assignment[best.id] = p
            slots[p] -= 1
    for d in divs:
        goal = assignment.get(d.id)
        if goal is not None:
            _go(world, d, goal, None)


def _attack(world: World, divs: list[Division], target: int, staging: list[int]) -> None:
    if not divs or not staging:
        return
    count = {s: 0 for s in staging}
    dist = world.distance
    for d in sorted(divs, key=lambda d: (int(dist[d.province, target]), world.rank(d))):
        if d.province in count:
            count[d.province] += 1
            _go(world, d, d.province, target)
            continue
        s = min(staging, key=lambda s: (int(dist[d.province, s]) + count[s], world.canon[s]))
        count[s] += 1
        _go(world, d, s, target)


def _go(world: World, d: Division, goal: int, then: int | None) -> None:
    """Route `d` to `goal` through its own land, then (optionally) into `then`.

    Routes come from the world's per-control-version BFS trees, so asking again each day is cheap, and
    `set_path` keeps the progress already made when the next step is unchanged.
    """
    if d.province == goal:
        path: list[int] = []
    else:
        route = world.route(d.tag, goal, d.province)
        if route is None:
            return  # cut off from its slot: it stays where it is
        path = route
    if then is not None:
        path = path + [then]
    if path != d.path:
        world.set_path(d, path)
