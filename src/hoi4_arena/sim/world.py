"""The simulator's world: HOI4's land war on an arena map, advanced in hours from 1936.01.01 00:00.

Everything that changes the world goes through one small order API, used alike by the screen, the
game's AI (`sim/ai.py`), scripted players and tests:

    declare_war(tag)                      the war starts (the harness decides who declares)
    form_army(tag, division_ids) -> id    an army (with a general) from divisions of one side
    assign_front(army_id, enemy_tag)      the army spreads along its country's border with the enemy
    draw_offensive(army_id, target, start=None)   a path of provinces from the front into enemy land
    execute(army_id) / halt(army_id)      advance along the plan / go back to holding the front
    move(division_id, province_id)        a direct order (the division leaves its army)

An illegal order raises `OrderRefused` (a `ValueError`) saying why, before anything changes. The
world owns one seeded `random.Random`; the same seed and the same orders give the same log, byte for
byte. Per hour it only advances movement and battles; supply, reinforcement, army orders and the
daily log lines run once a day. Armies act on their own once ordered, as in HOI4.

Try: hoi4-arena sim-run --preset river --seed 3 --ai both --days 200
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from hoi4_arena.gamelog import SCHEMA_VERSION, GameLogWriter, format_line
from hoi4_arena.maps.model import TAGS, ArenaMap, other_tag
from hoi4_arena.sim.battle import Battle, apply_losses, fight, settle
from hoi4_arena.sim.command import command_armies
from hoi4_arena.sim.rules import Rules

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # HOI4's calendar has no leap days
GENERALS = {
    "BLU": (
        "Harlan",
        "Aldric",
        "Vessant",
        "Morrow",
        "Castell",
        "Brandt",
        "Iselin",
        "Tolland",
        "Wrenfield",
        "Osric",
    ),
    "RED": (
        "Kovac",
        "Drazhin",
        "Velikov",
        "Stanek",
        "Moravin",
        "Rostov",
        "Zhukar",
        "Bielny",
        "Tarkov",
        "Grodek",
    ),
}


class OrderRefused(ValueError):
    """An illegal order; the message says why. The world is unchanged."""


def date_text(hour: int) -> str:
    """HOI4-style date of `hour` hours after 1936.01.01 00:00: `YYYY.MM.DD.HH`."""
    days, hh = divmod(hour, 24)
    year = 1936 + days // 365
    day_of_year = days % 365
    month = 0
    while day_of_year >= MONTH_DAYS[month]:
        day_of_year -= MONTH_DAYS[month]
        month += 1
    return f"{year}.{month + 1:02d}.{day_of_year + 1:02d}.{hh:02d}"


@dataclass(eq=False, slots=True)
class Division:
    """One infantry division. Strength and organisation are fractions of full (0..1)."""

    id: int
    tag: str
    province: int
    strength: float = 1.0
    org: float = 1.0
    attack: float = 1.0
    defence: float = 1.0
    entrench: float = 0.0
    army: int | None = None
    path: list[int] = field(default_factory=list)
    progress: float = 0.0
    need: float = 0.0
    resting: bool = False
    fought: int = -1  # last hour in battle
    supply: float = 1.0
    encircled: bool = False

    @property
    def name(self) -> str:
        return f"{self.id}. Infantry"


@dataclass(eq=False, slots=True)
class Army:
    """An army: its divisions, its general, its front (enemy tag) and its offensive plan."""

    id: int
    tag: str
    name: str
    divisions: list[int]
    front: str | None = None
    plan: list[int] = field(default_factory=list)
    executing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tag": self.tag,
            "name": self.name,
            "divisions": list(self.divisions),
            "front": self.front,
            "plan": list(self.plan),
            "executing": self.executing,
        }


class World:
    """The deterministic world of one game on `arena`; see the module docstring for the orders."""

    def __init__(
        self,
        arena: ArenaMap,
        seed: int = 0,
        *,
        declarer: str | None = None,
        max_days: int | None = None,
        log: GameLogWriter | None = None,
        rules: Rules | None = None,
        cache: bool = True,
    ) -> None:
        self.arena = arena
        self.seed = int(seed)
        self.rules = rules or Rules()
        self.max_days = int(max_days if max_days is not None else self.rules.max_days)
        if self.max_days < 1:
            raise ValueError("max_days must be at least 1")
        self.rng = random.Random(self.seed)
        self.cache = cache  # False: the naive baseline that recomputes fronts and routes on every use
        self._writer = log
        self.log_lines: list[str] = []
        self.hour = 0
        self.at_war = False
        self.declarer: str | None = None
        self.over = False
        self.winner: str | None = None
        self.end_reason: str | None = None

        n = len(arena.provinces)
        self.n_provinces = n
        # Fair by construction: every tie is broken by keys that the half-turn maps onto each other, so
        # RED's choices on a mirrored position are the mirror of BLU's. `canon` is a province's id on
        # BLU's side of the mirror; neighbours are listed in canonical order, own side first.
        self.canon = [0] + [min(p, arena.mirror(p)) for p in range(1, n + 1)]
        self.owner = [""] + [p.owner for p in arena.provinces]
        self.adj: list[tuple[int, ...]] = [()] + [
            tuple(
                sorted(arena.adjacency[p], key=lambda q, p=p: (self.canon[q], self.owner[q] != self.owner[p]))
            )
            for p in range(1, n + 1)
        ]
        self.terrain = [""] + [p.terrain for p in arena.provinces]
        self.vp = [0] + [p.victory_points for p in arena.provinces]
        self.total_vp = {
            tag: sum(p.victory_points for p in arena.provinces if p.owner == tag) for tag in TAGS
        }
        self.control: list[str] = list(self.owner)
        self.centroid_y = [0.0] + [p.centroid[1] for p in arena.provinces]
        self.river: dict[tuple[int, int], int] = {}
        for pair, width in arena.rivers.items():
            a, b = sorted(pair)
            self.river[(a, b)] = self.river[(b, a)] = width
        self.railway = {tag: frozenset(path) for tag, path in arena.railways.items()}
        self.distance = arena.distances  # static hop counts, for choosing who goes where
        self._version = 0  # bumped on every change of control: keys the caches below
        self._fronts: dict[tuple[str, str], tuple[int, tuple[int, ...]]] = {}
        self._routes: dict[tuple[str, int], tuple[int, dict[int, int]]] = {}
        self._dirty_armies = False

        self.divisions: dict[int, Division] = {}
        self._order: list[Division] | None = None
        self._order_reversed: list[Division] = []
        self.destroyed: list[int] = []
        self.armies: dict[int, Army] = {}
        self._next_army = 1
        self._generals_used = {tag: 0 for tag in TAGS}
        self.occupants: list[list[int]] = [[] for _ in range(n + 1)]
        self.manpower = {tag: self.rules.manpower_start for tag in TAGS}
        self.casualties = {tag: 0.0 for tag in TAGS}
        self.surrender = {tag: 0.0 for tag in TAGS}
        self._deploy()
        self._emit("start", arena=arena.preset, seed=self.seed, tags=list(TAGS), version=SCHEMA_VERSION)
        self._daily_supply()
        if declarer is not None:
            self.declare_war(declarer)

    # --- set-up -----------------------------------------------------------------------------------

    def _deploy(self) -> None:
        """Each side's divisions stand unassigned on and just behind its border; RED mirrors BLU."""
        arena = self.arena
        red = [p.id for p in arena.provinces if p.owner == "RED"]
        blu = [p.id for p in arena.provinces if p.owner == "BLU"]
        hops = {p: min(int(self.distance[p, r]) for r in red) - 1 for p in blu}
        candidates = sorted((p for p in blu if hops[p] <= 2), key=lambda p: (hops[p], self.centroid_y[p], p))
        n = self.rules.divisions_per_side
        for i in range(n):
            pid = candidates[i % len(candidates)]
            for tag, did, where in (("BLU", i + 1, pid), ("RED", n + i + 1, arena.mirror(pid))):
                self.divisions[did] = Division(id=did, tag=tag, province=where)
                self.occupants[where].append(did)

    # --- reading the world --------------------------------------------------------------------------

    def date_text(self) -> str:
        return date_text(self.hour)

    @property
    def day(self) -> int:
        return self.hour // 24

    def flank(self, tag: str, pid: int) -> float:
        """Where `pid` lies from `tag`'s left flank (0) to its right: north to south for BLU, which faces
        east, south to north for RED."""
        return self.centroid_y[pid] if tag == TAGS[0] else self.centroid_y[self.arena.mirror(pid)]

    def rank(self, d: Division) -> int:
        """A division's number within its side (BLU's 1 and RED's 25 are both 1): a mirror-fair tie key."""
        return d.id if d.tag == TAGS[0] else d.id - self.rules.divisions_per_side

    def controller(self, pid: int) -> str:
        if not 1 <= pid <= self.n_provinces:
            raise KeyError(f"no land province {pid}")
        return self.control[pid]

    def divisions_of(self, tag: str) -> list[Division]:
        return [d for d in self.divisions.values() if d.tag == tag]

    def armies_of(self, tag: str) -> list[Army]:
        return [a for a in self.armies.values() if a.tag == tag]

    def unassigned(self, tag: str) -> list[int]:
        """Divisions of `tag` in no army (HOI4's "Unassigned divisions" alert)."""
        return [d.id for d in self.divisions.values() if d.tag == tag and d.army is None]

    def front_provinces(self, tag: str, enemy: str) -> tuple[int, ...]:
        """Provinces `tag` controls that touch land `enemy` controls, from its left flank to its right."""
        key = (tag, enemy)
        cached = self._fronts.get(key)
        if self.cache and cached is not None and cached[0] == self._version:
            return cached[1]
        control, adj = self.control, self.adj
        front = tuple(
            sorted(
                (
                    p
                    for p in range(1, self.n_provinces + 1)
                    if control[p] == tag and any(control[n] == enemy for n in adj[p])
                ),
                key=lambda p: (self.flank(tag, p), self.canon[p]),
            )
        )
        self._fronts[key] = (self._version, front)
        return front

    def army_front(self, army_id: int) -> tuple[int, ...]:
        """The share of its country's front an army holds (armies on one front split it flank to flank)."""
        army = self.armies[army_id]
        if army.front is None:
            return ()
        front = self.front_provinces(army.tag, army.front)
        sharing = sorted(
            (a for a in self.armies.values() if a.tag == army.tag and a.front == army.front),
            key=lambda a: a.id,
        )
        if len(sharing) == 1 or not front:
            return front
        sizes = [max(1, len(a.divisions)) for a in sharing]
        total, start = sum(sizes), 0
        for a, size in zip(sharing, sizes, strict=True):
            stop = start + max(1, round(len(front) * size / total))
            if a is sharing[-1]:
                stop = len(front)
            if a.id == army_id:
                return front[start:stop] or front[-1:]
            start = stop
        return front

    def plan_progress(self, army_id: int) -> float:
        """Share of the plan's provinces (after its start) that the army's side controls."""
        army = self.armies[army_id]
        steps = army.plan[1:]
        if not steps:
            return 0.0
        return sum(1 for p in steps if self.control[p] == army.tag) / len(steps)

    def snapshot(self) -> dict[str, Any]:
        """The whole state as a JSON-able dict (for tests and training only; the agent never sees it)."""
        return {
            "hour": self.hour,
            "date": self.date_text(),
            "at_war": self.at_war,
            "declarer": self.declarer,
            "over": self.over,
            "winner": self.winner,
            "end_reason": self.end_reason,
            "control": self.control[1:],
            "surrender": {t: round(v, 4) for t, v in self.surrender.items()},
            "manpower": dict(self.manpower),
            "casualties": {t: round(v) for t, v in self.casualties.items()},
            "divisions": [
                {
                    "id": d.id,
                    "tag": d.tag,
                    "province": d.province,
                    "strength": round(d.strength, 4),
                    "org": round(d.org, 4),
                    "entrench": round(d.entrench, 4),
                    "army": d.army,
                    "path": list(d.path),
                }
                for d in sorted(self.divisions.values(), key=lambda d: d.id)
            ],
            "destroyed": list(self.destroyed),
            "armies": [
                a.to_dict() | {"progress": round(self.plan_progress(a.id), 4)}
                for a in sorted(self.armies.values(), key=lambda a: a.id)
            ],
        }

    # --- orders -----------------------------------------------------------------------------------

    def _check_tag(self, tag: str) -> None:
        if tag not in TAGS:
            raise OrderRefused(f"unknown country {tag!r}; the arena has {', '.join(TAGS)}")

    def _check_open(self) -> None:
        if self.over:
            raise OrderRefused(f"the game is over ({self.end_reason})")

    def _army(self, army_id: int) -> Army:
        army = self.armies.get(army_id) if isinstance(army_id, int) else None
        if army is None:
            raise OrderRefused(f"there is no army {army_id!r}")
        return army

    def _province(self, pid: int) -> int:
        if not isinstance(pid, int) or isinstance(pid, bool) or not 1 <= pid <= self.n_provinces:
            raise OrderRefused(
                f"{pid!r} is not a land province (1..{self.n_provinces}; water cannot be entered)"
            )
        return pid

    def declare_war(self, tag: str) -> None:
        """`tag` declares war on the other country."""
        self._check_open()
        self._check_tag(tag)
        if self.at_war:
            raise OrderRefused(f"already at war (declared by {self.declarer})")
        self.at_war, self.declarer = True, tag
        self._emit("declare", attacker=tag, defender=other_tag(tag))

    def form_army(self, tag: str, division_ids: list[int] | tuple[int, ...]) -> int:
        """A new army of `tag` from these divisions (taken from their old armies); returns its id."""
        self._check_open()
        self._check_tag(tag)
        ids = list(division_ids)
        if not ids:
            raise OrderRefused("an army needs at least one division")
        if len(set(ids)) != len(ids):
            raise OrderRefused("a division is listed twice")
        if len(ids) > self.rules.max_army_size:
            raise OrderRefused(f"an army holds at most {self.rules.max_army_size} divisions, not {len(ids)}")
        for did in ids:
            d = self.divisions.get(did) if isinstance(did, int) else None
            if d is None:
                raise OrderRefused(f"there is no division {did!r}")
            if d.tag != tag:
                raise OrderRefused(f"division {did} belongs to {d.tag}, not {tag}")
        for did in ids:
            self._leave_army(self.divisions[did])
        used = self._generals_used[tag]
        self._generals_used[tag] += 1
        pool = GENERALS[tag]
        name = pool[used % len(pool)] + ("" if used < len(pool) else f"{used // len(pool) + 1}")
        army = Army(id=self._next_army, tag=tag, name=name, divisions=sorted(ids))
        self._next_army += 1
        self.armies[army.id] = army
        for did in ids:
            self.divisions[did].army = army.id
        self._dirty_armies = True
        return army.id

    def assign_front(self, army_id: int, enemy_tag: str) -> None:
        """The army holds its country's border with `enemy_tag` (cancels any offensive plan)."""
        self._check_open()
        army = self._army(army_id)
        self._check_tag(enemy_tag)
        if enemy_tag == army.tag:
            raise OrderRefused(f"{army.name}'s army cannot hold a front against its own country")
        if not self.at_war:
            raise OrderRefused(f"{army.tag} is not at war with {enemy_tag}: declare war first")
        army.front, army.plan, army.executing = enemy_tag, [], False
        self._update_armies()

    def draw_offensive(self, army_id: int, target_province: int, start: int | None = None) -> list[int]:
        """Plan a path from the army's front into enemy land to `target_province`; returns the path."""
        self._check_open()
        army = self._army(army_id)
        target = self._province(target_province)
        if army.front is None:
            raise OrderRefused(f"{army.name}'s army has no front: assign a front before drawing an offensive")
        if self.control[target] != army.front:
            raise OrderRefused(f"province {target} is not held by {army.front}, the enemy of this front")
        front = self.front_provinces(army.tag, army.front)
        if start is not None:
            self._province(start)
            if start not in front:
                raise OrderRefused(f"province {start} is not on {army.tag}'s front line")
            starts = [start]
        else:
            own = self.army_front(army.id)
            starts = list(own) if own else list(front)
        path = self._offensive_path(starts, target, army.front)
        if path is None:
            raise OrderRefused(f"no path through {army.front}'s land from the front to province {target}")
        army.plan, army.executing = path, False
        return list(path)

    def execute(self, army_id: int) -> None:
        """The army advances along its plan: divisions attack the next province on the path."""
        self._check_open()
        army = self._army(army_id)
        if not army.plan:
            raise OrderRefused(f"{army.name}'s army has no offensive plan: draw one first")
        if all(self.control[p] == army.tag for p in army.plan[1:]):
            raise OrderRefused(f"{army.name}'s army has already taken every province of its plan")
        army.executing = True
        self._update_armies()

    def halt(self, army_id: int) -> None:
        """Stop executing the plan; the army goes back to holding its front (the plan is kept)."""
        self._check_open()
        army = self._army(army_id)
        army.executing = False
        self._update_armies()

    def move(self, division_id: int, province_id: int) -> list[int]:
        """Send one division to a province (its own side's land, or an adjacent enemy province to attack)."""
        self._check_open()
        d = self.divisions.get(division_id) if isinstance(division_id, int) else None
        if d is None:
            raise OrderRefused(f"there is no division {division_id!r}")
        target = self._province(province_id)
        if target == d.province:
            raise OrderRefused(f"division {d.id} is already in province {target}")
        holder = self.control[target]
        if holder == d.tag:
            route = self.route(d.tag, target, d.province)
            if route is None:
                raise OrderRefused(f"division {d.id} has no path through {d.tag}'s land to province {target}")
        else:
            if not self.at_war:
                raise OrderRefused(f"{d.tag} is not at war with {holder}: cannot enter its province {target}")
            best = None
            for n in self.adj[target]:
                if self.control[n] == d.tag:
                    r = [] if n == d.province else self.route(d.tag, n, d.province)
                    if r is not None and (best is None or len(r) < len(best)):
                        best = r
            if best is None:
                raise OrderRefused(
                    f"province {target} is not next to {d.tag}'s land reachable by division {d.id}"
                )
            route = best + [target]
        self._leave_army(d)
        self.set_path(d, route)
        return list(route)

    def note_player(self, tag: str, kind: str) -> None:
        """Record who controls a side (the harness calls this): ai, human, scripted or policy."""
        from hoi4_arena.gamelog import PLAYER_KINDS

        self._check_tag(tag)
        if kind not in PLAYER_KINDS:
            raise OrderRefused(f"player kind must be one of {', '.join(PLAYER_KINDS)}, not {kind!r}")
        self._emit("player", tag=tag, kind=kind)

    # --- time --------------------------------------------------------------------------------------

    def step(self, hours: int = 1) -> None:
        """Advance `hours` whole hours (stops early when the game ends)."""
        if not isinstance(hours, int) or hours < 0:
            raise ValueError(f"hours must be a whole number >= 0, not {hours!r}")
        for _ in range(hours):
            if self.over:
                return
            self._hour()

    def _hour(self) -> None:
        rules = self.rules
        hour = self.hour
        if self._order is None:  # rebuilt only when a division is destroyed
            self._order = sorted(self.divisions.values(), key=lambda d: d.id)
            self._order_reversed = self._order[::-1]
        divs = (
            self._order_reversed if hour % 2 else self._order
        )  # alternate who moves first: no side wins ties
        battles: dict[int, Battle] = {}
        control, occupants = self.control, self.occupants
        # Movement in two phases, so that no side moves first: who attacks and who advances is read
        # from the state at the start of the hour, then the arrivals happen.
        arrivals: list[Division] = []
        for d in divs:
            if not d.path:
                continue
            nxt = d.path[0]
            if control[nxt] != d.tag and occupants[nxt]:
                if d.resting or nxt not in self.adj[d.province]:
                    continue
                battle = battles.get(nxt)
                if battle is None:
                    battle = battles[nxt] = Battle(nxt)
                battle.attackers.append(d)
                continue
            d.progress += 1.0
            if d.progress >= d.need:
                arrivals.append(d)
        for d in arrivals:
            nxt = d.path[0]
            if control[nxt] != d.tag and occupants[nxt]:
                continue  # an enemy got there first this hour: attack it next hour
            self._arrive(d, nxt)
            if self.over:
                return
        if battles:
            clashes = [
                c for pid in sorted(battles, key=self.canon.__getitem__) if (c := fight(self, battles[pid]))
            ]
            for clash in clashes:
                apply_losses(self, clash)
            for clash in clashes:
                settle(self, clash)
        # Organisation recovery and entrenchment for every division not fighting this hour.
        recovery, step_entrench = rules.org_recovery, 1.0 / rules.entrench_hours
        for d in divs:
            if d.fought == hour:
                continue
            if d.org < 1.0:
                gain = recovery * d.supply * (0.5 if d.path else 1.0)
                d.org = min(1.0, d.org + gain)
                if d.resting and d.org >= rules.resume_org:
                    d.resting = False
            if not d.path and d.entrench < 1.0:
                d.entrench = min(1.0, d.entrench + step_entrench)
        self.hour += 1
        if self._dirty_armies and not self.over:
            self._update_armies()
        if self.hour % 24 == 0 and not self.over:
            self._daily()

    def _arrive(self, d: Division, pid: int) -> None:
        if self.control[pid] != d.tag:
            self._capture(pid, d.tag)
        self.occupants[d.province].remove(d.id)
        d.province = pid
        self.occupants[pid].append(d.id)
        d.path.pop(0)
        d.progress = 0.0
        d.entrench = 0.0
        d.need = self._move_need(pid, d.path[0]) if d.path else 0.0

    def _move_need(self, a: int, b: int) -> float:
        rules = self.rules
        return rules.move_hours[self.terrain[b]] * rules.river_move[self.river.get((a, b), 0)]

    def set_path(self, d: Division, path: list[int]) -> None:
        if d.path and path and d.path[0] == path[0]:
            d.path = list(path)  # same next step: keep the progress made toward it
            return
        d.path = list(path)
        d.progress = 0.0
        d.need = self._move_need(d.province, path[0]) if path else 0.0

    def _capture(self, pid: int, tag: str) -> None:
        before = self.control[pid]
        self.control[pid] = tag
        self._version += 1
        self._dirty_armies = True
        self._emit("control", province=pid, **{"from": before, "to": tag})
        owner = self.owner[pid]
        if self.vp[pid]:
            lost = sum(
                self.vp[p]
                for p in range(1, self.n_provinces + 1)
                if self.owner[p] == owner and self.control[p] != owner
            )
            self.surrender[owner] = lost / max(1, self.total_vp[owner])
            if self.surrender[owner] >= self.rules.surrender_limit:
                self._finish(winner=other_tag(owner), reason="capitulation")

    def destroy(self, d: Division) -> None:
        """Remove a division (beaten with no way to retreat); its men count as casualties."""
        self.casualties[d.tag] += d.strength * self.rules.men_per_division
        self.occupants[d.province].remove(d.id)
        del self.divisions[d.id]
        self._order = None
        self.destroyed.append(d.id)
        self._leave_army(d)

    def retreat(self, d: Division, away_from: set[int]) -> bool:
        """Move a beaten defender to a friendly neighbour; False when it is cut off."""
        options = [n for n in self.adj[d.province] if self.control[n] == d.tag and n not in away_from]
        if not options:
            return False
        control, adj = self.control, self.adj
        enemy = other_tag(d.tag)

        def danger(n: int) -> tuple[int, int, int]:
            return (sum(1 for m in adj[n] if control[m] == enemy), -len(self.occupants[n]), self.canon[n])

        dest = min(options, key=danger)
        loss = min(d.strength - 0.01, self.rules.retreat_str_loss)
        if loss > 0:
            d.strength -= loss
            self.casualties[d.tag] += loss * self.rules.men_per_division
        self.occupants[d.province].remove(d.id)
        d.province = dest
        self.occupants[dest].append(d.id)
        d.org, d.entrench, d.resting = 0.0, 0.0, True
        d.path, d.progress, d.need = [], 0.0, 0.0
        self._dirty_armies = True
        return True

    def _leave_army(self, d: Division) -> None:
        if d.army is None:
            return
        army = self.armies.get(d.army)
        d.army = None
        if army is None:
            return
        army.divisions.remove(d.id)
        if not army.divisions:
            del self.armies[army.id]
        self._dirty_armies = True

    # --- daily work --------------------------------------------------------------------------------

    def _daily(self) -> None:
        self._daily_supply()
        self._reinforce()
        self._update_armies()
        self._daily_log()
        if self.hour >= self.max_days * 24 and not self.over:
            self._finish(winner=None, reason="timeout")

    def _daily_supply(self) -> None:
        """Per division: supply from hops to the nearest connected railway/capital; encircled if cut off."""
        rules = self.rules
        table = rules.supply_by_distance
        for tag in TAGS:
            capital = self.arena.capitals[tag]
            connected = self._connected_to_capital(tag, capital)
            sources = [p for p in self.railway[tag] if p in connected]
            if capital in connected and capital not in sources:
                sources.append(capital)
            hops = {p: 0 for p in sources}
            queue = deque(sources)
            while queue:
                p = queue.popleft()
                for n in self.adj[p]:
                    if n in connected and n not in hops:
                        hops[n] = hops[p] + 1
                        queue.append(n)
            for d in self.divisions.values():
                if d.tag != tag:
                    continue
                h = hops.get(d.province)
                if h is None:
                    d.encircled, d.supply = True, rules.encircled_recovery
                else:
                    d.encircled, d.supply = False, table[min(h, len(table) - 1)]

    def _connected_to_capital(self, tag: str, capital: int) -> set[int]:
        if self.control[capital] != tag:
            return set()
        seen = {capital}
        queue = deque([capital])
        control, adj = self.control, self.adj
        while queue:
            for n in adj[queue.popleft()]:
                if n not in seen and control[n] == tag:
                    seen.add(n)
                    queue.append(n)
        return seen

    def _reinforce(self) -> None:
        rules = self.rules
        men = rules.men_per_division
        for tag in TAGS:
            self.manpower[tag] += rules.manpower_daily
        for d in sorted(self.divisions.values(), key=lambda d: d.id):
            if d.encircled:
                loss = min(d.strength - 0.01, rules.encircled_attrition)
                if loss > 0:
                    d.strength -= loss
                    self.casualties[d.tag] += loss * men
                continue
            want = min(1.0 - d.strength, rules.reinforce_rate * d.supply)
            if want <= 0:
                continue
            give = min(want, self.manpower[d.tag] / men)
            d.strength += give
            self.manpower[d.tag] -= round(give * men)

    def _daily_log(self) -> None:
        n_states = len(self.arena.states)
        state_of = [0] + [p.state for p in self.arena.provinces]
        for tag in TAGS:
            by_state = [0] * n_states
            strength = 0.0
            count = 0
            for d in self.divisions.values():
                if d.tag == tag:
                    by_state[state_of[d.province] - 1] += 1
                    strength += d.strength
                    count += 1
            controlled = [p for p in range(1, self.n_provinces + 1) if self.control[p] == tag]
            self._emit(
                "day",
                tag=tag,
                divisions=count,
                by_state=by_state,
                strength=strength,
                casualties=round(self.casualties[tag]),
                manpower=self.manpower[tag],
                controlled=len(controlled),
                provinces=controlled,
                surrender=self.surrender[tag],
            )
            for army in sorted(self.armies_of(tag), key=lambda a: a.id):
                self._emit(
                    "army",
                    tag=tag,
                    id=army.id,
                    name=army.name,
                    divisions=army.divisions,
                    front=army.front,
                    plan=army.plan,
                    progress=self.plan_progress(army.id),
                    executing=int(army.executing),
                )

    def _finish(self, winner: str | None, reason: str) -> None:
        if self.over:
            return
        self.over, self.winner, self.end_reason = True, winner, reason
        if winner is None:
            self._emit("draw", reason=reason)
        else:
            loser = other_tag(winner)
            self._emit("capitulated", loser=loser, winner=winner, surrender=self.surrender[loser])

    def _emit(self, kind: str, /, **fields: Any) -> None:
        line = format_line(kind, date=self.date_text(), h=self.hour, **fields)
        self.log_lines.append(line)
        if self._writer is not None:
            self._writer.write(line)

    # --- paths -------------------------------------------------------------------------------------

    def _route_tree(self, tag: str, target: int) -> dict[int, int]:
        """BFS over `tag`'s land from `target`: province -> next hop toward it (cached per control version)."""
        key = (tag, target)
        cached = self._routes.get(key)
        if self.cache and cached is not None and cached[0] == self._version:
            return cached[1]
        control, adj = self.control, self.adj
        nxt = {target: target}
        queue = deque([target])
        while queue:
            p = queue.popleft()
            for n in adj[p]:
                if n not in nxt and control[n] == tag:
                    nxt[n] = p
                    queue.append(n)
        if self.cache:
            if len(self._routes) > 4096:
                self._routes.clear()
            self._routes[key] = (self._version, nxt)
        return nxt

    def route(self, tag: str, target: int, source: int) -> list[int] | None:
        """Provinces to walk from `source` to `target` through `tag`'s land (excluding source)."""
        if self.control[target] != tag:
            return None
        tree = self._route_tree(tag, target)
        if source not in tree:
            return None
        path = []
        p = source
        while p != target:
            p = tree[p]
            path.append(p)
        return path

    def _offensive_path(self, starts: list[int], target: int, enemy: str) -> list[int] | None:
        """Cheapest path (movement hours) from any start into `enemy`'s land to `target`."""
        import heapq

        dist: dict[int, float] = {}
        prev: dict[int, int] = {}
        canon = self.canon
        heap = [(0.0, canon[s], s) for s in starts]
        for _, _, s in heap:
            dist[s] = 0.0
        heapq.heapify(heap)
        while heap:
            cost, _, p = heapq.heappop(heap)
            if cost > dist.get(p, float("inf")):
                continue
            if p == target:
                break
            for n in self.adj[p]:
                if self.control[n] != enemy:
                    continue
                c = cost + self._move_need(p, n) * (1.0 + 0.5 * self.river.get((p, n), 0))
                if c < dist.get(n, float("inf")):
                    dist[n], prev[n] = c, p
                    heapq.heappush(heap, (c, canon[n], n))
        if target not in prev:
            return None
        path = [target]
        while path[-1] in prev:
            path.append(prev[path[-1]])
        return list(reversed(path))

    # --- armies act on their orders ------------------------------------------------------------------

    def _update_armies(self) -> None:
        self._dirty_armies = False
        command_armies(self)
