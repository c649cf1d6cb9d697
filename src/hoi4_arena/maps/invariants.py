"""The invariants every arena map keeps, checked on generation (tests) and on every load.

`check_invariants(arena)` returns a list of plain-language problems (empty when the map is sound);
`maps.folder.load_map` refuses a folder with the first one. The pixel-level checks (`four_way_corners`,
`maps.pieces.count_pieces`) work on any id raster and are what HOI4's own map validator would complain
about.

Try: python -c "from hoi4_arena.maps import generate; from hoi4_arena.maps.invariants import check_invariants; print(check_invariants(generate('bay', 1)))"
"""

from __future__ import annotations

from collections import deque

import numpy as np

from hoi4_arena.maps.model import TAGS, TERRAINS, ArenaMap
from hoi4_arena.maps.pieces import count_pieces

PROVINCES_PER_SIDE = 96
STATES_PER_SIDE = 8


def four_way_corners(raster: np.ndarray) -> np.ndarray:
    """(N, 2) (x, y) top-left corners of 2x2 pixel blocks where four ids meet or ids touch only diagonally.

    Both patterns make a border point ambiguous (HOI4 calls them X-crossings); water counts as an id.
    """
    r = raster
    a, b, c, d = r[:-1, :-1], r[:-1, 1:], r[1:, :-1], r[1:, 1:]
    four = (a != b) & (a != c) & (a != d) & (b != c) & (b != d) & (c != d)
    diagonal = (a == d) & (b == c) & (a != b)
    ys, xs = np.nonzero(four | diagonal)
    return np.stack([xs, ys], axis=1)


def _connected(nodes: set[int], adjacency: dict[int, frozenset[int]]) -> bool:
    if not nodes:
        return True
    start = next(iter(nodes))
    seen = {start}
    queue = deque([start])
    while queue:
        for n in adjacency[queue.popleft()]:
            if n in nodes and n not in seen:
                seen.add(n)
                queue.append(n)
    return seen == nodes


def check_invariants(arena: ArenaMap) -> list[str]:
    """Every way `arena` breaks the arena-map contract, most basic first (empty list: sound)."""
    problems: list[str] = []
    raster = arena.raster
    h, w = raster.shape
    n = len(arena.provinces)
    if raster.dtype != np.uint16:
        problems.append(f"raster must hold 16-bit ids, not {raster.dtype}")
    if h % 256 or w % 256 or h == 0 or w == 0:
        problems.append(f"raster sides must be multiples of 256, not {w}x{h}")
    if n != 2 * PROVINCES_PER_SIDE:
        problems.append(f"an arena has {2 * PROVINCES_PER_SIDE} provinces, this one {n}")
    present = np.unique(raster)
    ids = set(present.tolist()) - {0}
    if ids != set(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - ids)[:5]
        extra = sorted(ids - set(range(1, n + 1)))[:5]
        problems.append(f"raster ids do not match the province list (missing {missing}, unknown {extra})")
    if problems:
        return problems  # the rest assumes a well-formed raster

    # Half-turn mirror: pixel (x, y) <-> (W-1-x, H-1-y) with ids mapped by `mirror`.
    lut = np.array([arena.mirror(i) for i in range(n + 1)], dtype=np.uint16)
    if not np.array_equal(lut[raster[::-1, ::-1]], raster):
        bad = np.argwhere(lut[raster[::-1, ::-1]] != raster)[0]
        problems.append(f"raster is not a half-turn mirror (first difference at x={bad[1]}, y={bad[0]})")
    for p in arena.provinces:
        if p.owner not in TAGS:
            problems.append(f"province {p.id} has unknown owner {p.owner!r}")
        if p.terrain not in TERRAINS:
            problems.append(f"province {p.id} has unknown terrain {p.terrain!r}")
        if p.victory_points < 0:
            problems.append(f"province {p.id} has negative victory points")
        q = arena.province(arena.mirror(p.id))
        if q.owner == p.owner or q.terrain != p.terrain or q.victory_points != p.victory_points:
            problems.append(f"province {p.id} and its mirror {q.id} differ in owner, terrain or points")
        if arena.mirror_state(p.state) != q.state:
            problems.append(f"province {p.id}'s state does not mirror to its partner's")
    for tag in TAGS:
        count = sum(1 for p in arena.provinces if p.owner == tag)
        if count != PROVINCES_PER_SIDE:
            problems.append(f"{tag} has {count} provinces, not {PROVINCES_PER_SIDE}")
    corners = four_way_corners(raster)
    if len(corners):
        x, y = corners[0]
        problems.append(f"{len(corners)} four-way pixel corners (first at x={x}, y={y})")
    pieces = count_pieces(raster)
    split = [i for i in range(1, n + 1) if pieces[i] != 1]
    if split:
        problems.append(f"provinces {split[:5]} are not one connected piece")
    if not _connected(set(range(1, n + 1)), arena.adjacency):
        problems.append("the land is not connected")

    state_ids = {s.id for s in arena.states}
    if len(arena.states) != 2 * STATES_PER_SIDE or state_ids != set(range(1, 2 * STATES_PER_SIDE + 1)):
        problems.append(f"an arena has states 1..{2 * STATES_PER_SIDE}")
    for s in arena.states:
        if not s.provinces:
            problems.append(f"state {s.id} has no provinces")
            continue
        if any(arena.province(pid).owner != s.owner for pid in s.provinces):
            problems.append(f"state {s.id} holds provinces of another owner")
        if not _connected(set(s.provinces), arena.adjacency):
            problems.append(f"state {s.id} ({s.name}) is not contiguous")

    for pair, width in arena.rivers.items():
        a, b = sorted(pair) if len(pair) == 2 else (0, 0)
        if width not in (1, 2):
            problems.append(f"river {a}-{b} has width {width}, not 1 or 2")
        if not a or b not in arena.adjacency.get(a, ()):
            problems.append(f"river {a}-{b} is not on a border between adjacent provinces")
        elif arena.rivers.get(frozenset((arena.mirror(a), arena.mirror(b)))) != width:
            problems.append(f"river {a}-{b} has no mirrored twin")

    for tag in TAGS:
        cap = arena.capitals.get(tag)
        if cap is None or not 1 <= cap <= n or arena.province(cap).owner != tag:
            problems.append(f"{tag}'s capital must be one of its provinces")
            continue
        path = arena.railways.get(tag, ())
        if not path or path[0] != cap:
            problems.append(f"{tag}'s railway must start at its capital")
        for a, b in zip(path, path[1:], strict=False):
            if not (1 <= a <= n and 1 <= b <= n) or b not in arena.adjacency[a]:
                problems.append(f"{tag}'s railway is not a path of adjacent provinces ({a}-{b})")
                break
        if any(not 1 <= p <= n or arena.province(p).owner != tag for p in path):
            problems.append(f"{tag}'s railway leaves its own land")
    if not problems and arena.capitals["RED"] != arena.mirror(arena.capitals["BLU"]):
        problems.append("the capitals are not mirrors of each other")
    if not problems and tuple(arena.mirror(p) for p in arena.railways["BLU"]) != arena.railways["RED"]:
        problems.append("the railways are not mirrors of each other")
    return problems
