"""rivers.bmp: the arena's rivers as HOI4 river pixels (indexed palette, sources and flow-in markers).

An arena river is a set of province borders (`ArenaMap.rivers`, width 1 or 2). It is drawn on the
pixels of the smaller province id of each pair that touch the other province, then made 4-connected
(HOI4 follows river pixels orthogonally: a diagonal-only step breaks a river) and one pixel wide,
short dead-end stubs (where the line steps from one row of provinces to the next) are pruned, and
every river gets
exactly one marker, as HOI4's map notes ask: where river pixels branch, the longest branch with a free
end is the river and gets a source (green, index 0) at that end; every other branch is a tributary
and gets a flow-in marker (red, index 1) on its pixel next to the junction, and no source.

Palette indices: 0 source, 1 flow-in, 2 flow-out (unused), 3..6 small rivers, 7..11 large rivers;
width 1 is drawn with 4, width 2 with 9; 255 is land, 254 water.

Try: python -m hoi4_arena.hoi4.rivers river 3
"""

from __future__ import annotations

import sys

import numpy as np

from hoi4_arena.maps.pieces import label_pieces

SOURCE, FLOW_IN, LAND, WATER = 0, 1, 255, 254
WIDTH_INDEX = {1: 4, 2: 9}
STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))


def _shift(a: np.ndarray, dy: int, dx: int, fill: int = 0) -> np.ndarray:
    """a shifted so out[y, x] = a[y + dy, x + dx] (no wrap; outside is `fill`)."""
    out = np.full_like(a, fill)
    h, w = a.shape
    out[max(0, -dy) : h - max(0, dy), max(0, -dx) : w - max(0, dx)] = a[
        max(0, dy) : h - max(0, -dy), max(0, dx) : w - max(0, -dx)
    ]
    return out


def river_widths(ids: np.ndarray, n_land: int, rivers: dict[frozenset[int], int]) -> np.ndarray:
    """(H, W) uint8 0/1/2: the river width drawn on each pixel, 4-connected."""
    width = np.zeros((n_land + 1, n_land + 1), dtype=np.uint8)
    for pair, w in rivers.items():
        a, b = sorted(pair)
        width[a, b] = width[b, a] = w
    land = np.where(ids <= n_land, ids, 0)
    drawn = np.zeros(ids.shape, dtype=np.uint8)
    for dy, dx in STEPS:
        other = _shift(land, dy, dx)
        w = width[land, other]
        mark = (w > 0) & (land < other) & (land > 0)
        drawn[mark] = np.maximum(drawn[mark], w[mark])
    # Join diagonal-only steps with one more pixel, on land (never on water).
    for _ in range(8):
        r = drawn > 0
        a, b, c, d = r[:-1, :-1], r[:-1, 1:], r[1:, :-1], r[1:, 1:]
        on_land = land > 0
        fixed = False
        for yy, xx in np.argwhere(a & d & ~b & ~c).tolist():  # join through b (top right) or c
            y, x = (yy, xx + 1) if on_land[yy, xx + 1] else (yy + 1, xx)
            drawn[y, x] = max(drawn[yy, xx], drawn[yy + 1, xx + 1])
            fixed = True
        for yy, xx in np.argwhere(b & c & ~a & ~d).tolist():  # join through a (top left) or d
            y, x = (yy, xx) if on_land[yy, xx] else (yy + 1, xx + 1)
            drawn[y, x] = max(drawn[yy, xx + 1], drawn[yy + 1, xx])
            fixed = True
        # A 2x2 block of river: drop a pixel whose only river neighbours are in the block (its two
        # neighbours stay joined through the block's fourth pixel).
        r = drawn > 0
        deg = degrees(r)
        full = r[:-1, :-1] & r[:-1, 1:] & r[1:, :-1] & r[1:, 1:]
        for yy, xx in np.argwhere(full).tolist():
            block = [(yy, xx), (yy, xx + 1), (yy + 1, xx), (yy + 1, xx + 1)]
            if not all(drawn[p] for p in block):
                continue  # an earlier removal already broke this block
            loose = [p for p in block if deg[p] == 2]
            if loose:
                drawn[loose[0]] = 0
                deg = degrees(drawn > 0)
                fixed = True
        if not fixed:
            break
    return _prune_spurs(drawn)


SPUR = 8  # a branch this short between a free end and a junction is a drawing artefact, not a river


def _prune_spurs(drawn: np.ndarray) -> np.ndarray:
    """Remove short dead-end stubs where a river's line steps from one row of provinces to the next."""
    for _ in range(4):
        river = drawn > 0
        deg = degrees(river)
        h, w = drawn.shape
        removed = False
        for y, x in np.argwhere(river & (deg == 1)).tolist():
            path, prev, cur = [], None, (y, x)
            while len(path) <= SPUR:
                if deg[cur] >= 3:
                    break
                path.append(cur)
                nxt = [
                    (cur[0] + dy, cur[1] + dx)
                    for dy, dx in STEPS
                    if 0 <= cur[0] + dy < h
                    and 0 <= cur[1] + dx < w
                    and river[cur[0] + dy, cur[1] + dx]
                    and (cur[0] + dy, cur[1] + dx) != prev
                ]
                if not nxt:
                    path = []  # a whole short river, not a spur: keep it
                    break
                prev, cur = cur, nxt[0]
            if path and len(path) <= SPUR and deg[cur] >= 3:
                for p in path:
                    drawn[p] = 0
                removed = True
        if not removed:
            break
    return drawn


def degrees(river: np.ndarray) -> np.ndarray:
    return sum(_shift(river.astype(np.int32), dy, dx) for dy, dx in STEPS) * river


def draw_rivers(ids: np.ndarray, n_land: int, rivers: dict[frozenset[int], int]) -> np.ndarray:
    """(H, W) uint8 rivers.bmp indices for the mod's province ids."""
    drawn = river_widths(ids, n_land, rivers)
    out = np.where(ids <= n_land, LAND, WATER).astype(np.uint8)
    river = drawn > 0
    out[drawn == 1] = WIDTH_INDEX[1]
    out[drawn == 2] = WIDTH_INDEX[2]
    deg = degrees(river)
    junction = river & (deg >= 3)
    branches = label_pieces(np.where(river & ~junction, 1, 0))
    branches = np.where(river & ~junction, branches + 1, 0)
    pieces = label_pieces(river.astype(np.uint8))
    near_junction = np.zeros(river.shape, dtype=bool)
    for dy, dx in STEPS:
        near_junction |= _shift(junction, dy, dx)
    near_water = np.zeros(river.shape, dtype=bool)
    for dy, dx in STEPS:
        near_water |= _shift(ids > n_land, dy, dx)
    ends = river & ~junction & (deg <= 1)
    # Per branch: its size, its piece, an end pixel, a pixel next to a junction.
    flat_b = branches.ravel()
    sizes = np.bincount(flat_b)
    by_piece: dict[int, list[int]] = {}
    first_end: dict[int, tuple[int, int]] = {}
    first_join: dict[int, tuple[int, int]] = {}
    # Prefer an end away from the sea for the source (rivers flow to the sea).
    for y, x in sorted(np.argwhere(ends).tolist(), key=lambda p: (bool(near_water[p[0], p[1]]), p)):
        first_end.setdefault(int(branches[y, x]), (y, x))
    for y, x in np.argwhere(river & ~junction & near_junction).tolist():
        first_join.setdefault(int(branches[y, x]), (y, x))
    for b in range(1, len(sizes)):
        if sizes[b]:
            y, x = np.unravel_index(int(np.argmax(flat_b == b)), branches.shape)
            by_piece.setdefault(int(pieces[y, x]), []).append(b)
    for members in by_piece.values():
        with_end = [b for b in members if b in first_end]
        main = (
            max(with_end, key=lambda b: (sizes[b], -b)) if with_end else max(members, key=lambda b: sizes[b])
        )
        y, x = first_end.get(main) or np.unravel_index(int(np.argmax(flat_b == main)), branches.shape)
        out[y, x] = SOURCE
        for b in members:
            if b != main and b in first_join:
                y, x = first_join[b]
                out[y, x] = FLOW_IN
    return out


def palette() -> dict[int, tuple[int, int, int]]:
    colours = {
        SOURCE: (0, 255, 0),
        FLOW_IN: (255, 0, 0),
        2: (255, 252, 0),
        LAND: (255, 255, 255),
        WATER: (122, 122, 122),
    }
    for i in range(3, 12):
        colours[i] = (0, max(0, 255 - 24 * i), 255 - 10 * i)
    return colours


def river_problems(indices: np.ndarray) -> list[tuple[str, int, int]]:
    """(what, x, y) for each river piece that breaks HOI4's rules: no marker, two sources, 2x2 blocks."""
    river = indices < WATER
    problems = []
    pieces = label_pieces(river.astype(np.uint8))
    for piece in np.unique(pieces[river]).tolist():
        mask = (pieces == piece) & river
        sources = int((mask & (indices == SOURCE)).sum())
        markers = sources + int((mask & (indices == FLOW_IN)).sum())
        y, x = np.argwhere(mask)[0]
        if markers == 0:
            problems.append(("river without a source or flow-in marker", int(x), int(y)))
        if sources > 1:
            problems.append(("river with more than one source", int(x), int(y)))
    a, b, c, d = river[:-1, :-1], river[:-1, 1:], river[1:, :-1], river[1:, 1:]
    for y, x in np.argwhere(a & b & c & d).tolist()[:5]:
        problems.append(("river two pixels wide", x, y))
    for y, x in np.argwhere((a & d & ~b & ~c) | (b & c & ~a & ~d)).tolist()[:5]:
        problems.append(("river pixels touching only at a corner", x, y))
    return problems


if __name__ == "__main__":
    from hoi4_arena.hoi4.provinces import split_water
    from hoi4_arena.maps import generate

    arena = generate(
        sys.argv[1] if len(sys.argv) > 1 else "river", int(sys.argv[2]) if len(sys.argv) > 2 else 0
    )
    pm = split_water(arena)
    indices = draw_rivers(pm.ids, len(arena.provinces), arena.rivers)
    print({"river_pixels": int((indices < WATER).sum()), "problems": river_problems(indices)[:10]})
