"""Generate an arena map from (preset, seed): the province raster first, then everything on it.

The raster is built in a warped "design space" (u, v), in province cells: u runs 0..24 west to east
(BLU's 12 columns, then RED's), v runs 0..8 north to south. A smooth random displacement that is
antisymmetric under the half-turn (n(rot p) = -n(p)) bends every border and the coastline while
keeping the picture an exact mirror. Rows of provinces are laid like bricks (adjacent rows' column
borders are offset by half a cell, and BLU's row lines sit 0.4 rows from RED's), so no four provinces
ever meet at one point and each province, the image of a convex-ish cell under a smooth one-to-one
map, is one connected piece. Only the left half is labelled; the right half is its mirror image.

Then, on the province graph: terrain, states, cities and victory points, the capital, rivers (sets of
borders that separate two regions, so they form continuous lines), and the trunk railway. Only BLU's
half is designed; RED's is its mirror.

Try: python -m hoi4_arena.maps.generate river 3
"""

from __future__ import annotations

import copy
import functools
import heapq
import sys

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.maps import cache as map_cache
from hoi4_arena.maps.invariants import four_way_corners
from hoi4_arena.maps.model import ArenaMap, build_map, raster_geometry
from hoi4_arena.maps.pieces import count_pieces
from hoi4_arena.maps.presets import DESIGNS, PRESETS, Design

WIDTH, HEIGHT = 2048, 1024
CELL_W, CELL_H = 76.0, 96.0  # pixels per province cell in design space
COLS, ROWS = 12, 8  # per side
N_SIDE = COLS * ROWS
WEST, EAST = -0.45, 24.45  # coastline in u
NORTH, SOUTH = -0.4, 8.4  # coastline in v
ROW_OFFSET = 0.2  # BLU row lines at v = l + 0.2, RED's at l - 0.2: never the same point on the border
MOVE_COST = {"plains": 1.0, "urban": 1.0, "forest": 1.6, "hills": 2.0, "marsh": 3.0, "mountain": 4.0}

SYLLABLES = {
    "BLU": (
        "al",
        "ber",
        "cas",
        "dor",
        "el",
        "fen",
        "gar",
        "hal",
        "is",
        "lin",
        "mar",
        "nor",
        "or",
        "pel",
        "ros",
        "sil",
        "tor",
        "val",
        "wen",
        "ast",
    ),
    "RED": (
        "ka",
        "ro",
        "vi",
        "sk",
        "ze",
        "mo",
        "dra",
        "gu",
        "li",
        "no",
        "pra",
        "ty",
        "ov",
        "ra",
        "sta",
        "bo",
        "che",
        "ya",
        "kov",
        "mir",
    ),
}


# --- the raster ------------------------------------------------------------------------------------


def _interp_matrix(n: int, spacing: float, offset: float) -> np.ndarray:
    """(n, m) weights that smoothly interpolate a coarse 1-D grid with `spacing` pixels per knot."""
    t = (np.arange(n) + 0.5) / spacing + offset
    i = np.floor(t).astype(int)
    f = t - i
    w = f * f * (3.0 - 2.0 * f)  # smoothstep: the field's gradient stays continuous at knots
    m = int(i.max()) + 2
    out = np.zeros((n, m), dtype=np.float32)
    rows = np.arange(n)
    out[rows, i] = 1.0 - w
    out[rows, i + 1] = w
    return out


def _smooth_field(rng: np.random.Generator, octaves: tuple[tuple[float, float], ...]) -> np.ndarray:
    """A smooth random (H, W) field: sum of value-noise octaves (spacing in cells, amplitude in cells)."""
    total = np.zeros((HEIGHT, WIDTH), dtype=np.float32)
    for spacing, amplitude in octaves:
        ay = _interp_matrix(HEIGHT, spacing * CELL_H, float(rng.uniform(0, 1)))
        ax = _interp_matrix(WIDTH, spacing * CELL_W, float(rng.uniform(0, 1)))
        knots = rng.uniform(-amplitude, amplitude, size=(ay.shape[1], ax.shape[1])).astype(np.float32)
        total += ay @ knots @ ax.T
    return total


def _antisymmetric(field: np.ndarray) -> np.ndarray:
    """n(p) = (f(p) - f(rot p)) / 2: smooth and exactly odd under the half-turn."""
    return 0.5 * (field - field[::-1, ::-1])


class _Shape:
    """The design's border and water as functions of v (all in cells)."""

    def __init__(self, design: Design, rng: np.random.Generator) -> None:
        self.bulge_amp = float(rng.uniform(1.7, 2.4)) if design.salient else 0.0
        self.bulge_at = float(rng.uniform(1.7, 2.5))
        self.bay_width = float(rng.uniform(1.1, 1.5)) if design.bay else 0.0
        self.bay_depth = float(rng.uniform(2.3, 2.9))
        self.lake_width = float(rng.uniform(1.0, 1.3)) if design.lake else 0.0
        self.lake_height = float(rng.uniform(1.2, 1.5))

    def bulge(self, v: np.ndarray) -> np.ndarray:
        """Eastward shift of the border; odd about v = 4 so the mirror holds."""
        if not self.bulge_amp:
            return np.zeros_like(v)
        w = 1.35
        return self.bulge_amp * (
            np.exp(-(((v - self.bulge_at) / w) ** 2)) - np.exp(-(((v - 8 + self.bulge_at) / w) ** 2))
        )

    def gap(self, v: np.ndarray) -> np.ndarray:
        """Half-width of water on the border line (bays, lake); even about v = 4."""
        g = np.zeros_like(v)
        if self.bay_width:
            top = NORTH - 0.3
            for vv in (v, 8.0 - v):
                t = (vv - top) / (self.bay_depth + 0.3)
                g += self.bay_width * np.sqrt(np.clip(1.0 - t * t, 0.0, None)) * (vv >= top)
        if self.lake_width:
            t = (v - 4.0) / self.lake_height
            g += self.lake_width * np.sqrt(np.clip(1.0 - t * t, 0.0, None))
        return g


def _blu_label(
    u: np.ndarray, v: np.ndarray, east: np.ndarray, bounds: np.ndarray, tilts: np.ndarray
) -> np.ndarray:
    """BLU province ids (1..96) for design-space points known to be BLU land."""
    s = COLS * (u - WEST) / (east - WEST)
    row = np.clip(np.floor(v - ROW_OFFSET), 0, ROWS - 1).astype(np.int64)
    within = np.clip(v - ROW_OFFSET - row - 0.5, -0.5, 0.5)  # -0.5 at a row's top, +0.5 at its bottom
    # Border k lies within 0.43 of s = k (offset 0.25 + jitter 0.08 + slant 0.1), so every border up to
    # floor(s - 0.5) is passed and only the next one needs a look.
    passed = np.clip(np.floor(s - 0.5), 0, COLS - 1).astype(np.int64)
    padded = np.concatenate([bounds, np.full((ROWS, 1), np.inf)], axis=1)
    slant = np.concatenate([tilts, np.zeros((ROWS, 1))], axis=1)
    col = passed + (s >= padded[row, passed] + slant[row, passed] * within)
    return (1 + row * COLS + col).astype(np.uint16)


def _mirror_lut() -> np.ndarray:
    ids = np.arange(2 * N_SIDE + 1)
    lut = np.where(ids <= N_SIDE, ids + N_SIDE, ids - N_SIDE)
    lut[0] = 0
    return lut.astype(np.uint16)


def _raster(design: Design, rng: np.random.Generator) -> np.ndarray:
    shape = _Shape(design, rng)
    # Column borders per BLU row, brick-offset by +-0.25 and jittered: adjacent rows stay >= 0.26 apart.
    base = (
        np.arange(1, COLS, dtype=np.float64)[None, :]
        + np.where(np.arange(ROWS) % 2 == 0, 0.25, -0.25)[:, None]
    )
    # Each column border is also slanted; jitter and slant together keep adjacent rows' borders
    # at least 0.14 cells apart where they meet a row line.
    bounds = base + rng.uniform(-0.08, 0.08, size=(ROWS, COLS - 1))
    tilts = rng.uniform(-0.2, 0.2, size=(ROWS, COLS - 1))
    octaves = ((2.2, 0.32), (0.9, 0.16), (0.45, 0.07), (0.22, 0.025))
    nu = _antisymmetric(_smooth_field(rng, octaves))
    nv = _antisymmetric(_smooth_field(rng, octaves))
    half = WIDTH // 2
    x = np.arange(half, dtype=np.float32)
    y = np.arange(HEIGHT, dtype=np.float32)
    u = ((x + 0.5 - WIDTH / 2) / CELL_W + 12.0)[None, :] + nu[:, :half]
    v = ((y + 0.5 - HEIGHT / 2) / CELL_H + 4.0)[:, None] + nv[:, :half]
    u, v = u.ravel().astype(np.float64), v.ravel().astype(np.float64)

    bulge, gap = shape.bulge(v), shape.gap(v)
    land = (u >= WEST) & (u <= EAST) & (v >= NORTH) & (v <= SOUTH)
    blu = land & (u < 12.0 + bulge - gap)
    red = land & (u > 12.0 + bulge + gap)
    labels = np.zeros(u.shape, dtype=np.uint16)
    labels[blu] = _blu_label(u[blu], v[blu], (12.0 + bulge - gap)[blu], bounds, tilts)
    # A RED point is the half-turn image of a BLU point at (24 - u, 8 - v).
    ru, rv = 24.0 - u[red], 8.0 - v[red]
    labels[red] = _blu_label(ru, rv, (12.0 + shape.bulge(rv) - shape.gap(rv)), bounds, tilts) + N_SIDE
    left = labels.reshape(HEIGHT, half)
    lut = _mirror_lut()
    return np.concatenate([left, lut[left[::-1, ::-1]]], axis=1)


def _repair_corners(raster: np.ndarray) -> np.ndarray:
    """Resolve rare pixel-level defects symmetrically: four-way corners and diagonal-only contacts.

    Where a border runs at nearly 45 degrees the rounding of two level sets can leave a pixel that touches
    the rest of its province only at a corner; joining the diagonal keeps every province one piece.
    """
    lut = _mirror_lut()
    h, w = raster.shape

    def put(y: int, x: int, value: int) -> None:
        raster[y, x] = value
        raster[h - 1 - y, w - 1 - x] = lut[value]

    for _ in range(12):
        r = raster
        a, b, c, d = r[:-1, :-1], r[:-1, 1:], r[1:, :-1], r[1:, 1:]
        join_ad = (a == d) & (a != b) & (a != c)
        join_bc = (b == c) & (b != a) & (b != d)
        four = (a != b) & (a != c) & (a != d) & (b != c) & (b != d) & (c != d)
        if not (join_ad.any() or join_bc.any() or four.any()):
            break
        for y, x in np.argwhere(join_ad).tolist():
            put(y, x + 1, int(raster[y, x]))
        for y, x in np.argwhere(join_bc).tolist():
            put(y + 1, x + 1, int(raster[y, x + 1]))
        for y, x in np.argwhere(four).tolist():
            put(y + 1, x + 1, int(raster[y + 1, x]))
    return raster


def _sound_raster(design: Design, rng: np.random.Generator) -> np.ndarray:
    for _attempt in range(6):
        raster = _repair_corners(_raster(design, rng))
        pieces = count_pieces(raster)
        if len(four_way_corners(raster)) == 0 and len(pieces) == 2 * N_SIDE + 1 and (pieces[1:] == 1).all():
            return raster
    raise RuntimeError(f"could not draw a sound raster for {design.name}")  # a generator bug, not bad input


# --- what lies on it ------------------------------------------------------------------------------


def _cell(pid: int) -> tuple[int, int]:
    """(row, col) of a BLU province id in BLU's own grid."""
    return divmod(pid - 1, COLS)


def _pid(row: int, col: int) -> int:
    return 1 + row * COLS + col


def _name(rng: np.random.Generator, tag: str, used: set[str]) -> str:
    syll = SYLLABLES[tag]
    while True:
        parts = [syll[int(i)] for i in rng.integers(0, len(syll), size=int(rng.integers(2, 4)))]
        name = "".join(parts).capitalize()
        if name not in used and len(name) <= 10:
            used.add(name)
            return name


def _terrain(design: Design, rng: np.random.Generator, valleys: tuple[int, ...]) -> list[str]:
    kinds = list(design.terrain_mix)
    weights = np.array([design.terrain_mix[k] for k in kinds])
    terrain = [kinds[int(i)] for i in rng.choice(len(kinds), size=N_SIDE, p=weights / weights.sum())]
    for pid in range(1, N_SIDE + 1):
        row, col = _cell(pid)
        if design.mountain_border and col >= 9:
            terrain[pid - 1] = ("plains" if col == 11 else "hills") if row in valleys else "mountain"
        elif design.mountain_border and col == 8 and row not in valleys:
            terrain[pid - 1] = "hills"
        if design.lake:
            if col >= 9 and 2 <= row <= 5:
                terrain[pid - 1] = "marsh"
            elif row in (0, 1, 6, 7) and rng.uniform() < 0.7:
                terrain[pid - 1] = "forest"
    return terrain


def _states(rng: np.random.Generator) -> list[int]:
    widths = [
        (3, 3, 3, 3),
        (2, 3, 3, 4),
        (4, 3, 3, 2),
        (3, 4, 2, 3),
        (3, 2, 4, 3),
        (2, 4, 3, 3),
        (3, 3, 4, 2),
    ]
    groups = widths[int(rng.integers(len(widths)))]
    splits = rng.integers(3, 6, size=4)
    state = [0] * N_SIDE
    for pid in range(1, N_SIDE + 1):
        row, col = _cell(pid)
        g = int(np.searchsorted(np.cumsum(groups), col, side="right"))
        state[pid - 1] = 1 + 2 * g + int(row >= splits[g])
    return state


def _cut(adjacency: dict[int, frozenset[int]], side_a: set[int], side_b: set[int]) -> set[frozenset[int]]:
    """Borders between two regions of BLU land: a river drawn along them is one continuous line."""
    return {frozenset((a, b)) for a in side_a for b in adjacency[a] if b in side_b}


def _cells(rows: range, cols: range) -> set[int]:
    return {_pid(r, c) for r in rows for c in cols}


def _small_river(rng: np.random.Generator, adjacency: dict[int, frozenset[int]]) -> set[frozenset[int]]:
    if rng.uniform() < 0.5:  # north-south, between columns k and k+1 over a few rows
        k = int(rng.integers(2, 9))
        r0 = int(rng.integers(0, 5))
        rows = range(r0, min(ROWS, r0 + int(rng.integers(2, 5))))
        return _cut(adjacency, _cells(rows, range(0, k + 1)), _cells(rows, range(k + 1, COLS)))
    r = int(rng.integers(1, ROWS - 1))  # west-east, between rows r and r+1 over a few columns
    c0 = int(rng.integers(0, 7))
    cols = range(c0, min(COLS - 1, c0 + int(rng.integers(2, 5))))
    return _cut(adjacency, _cells(range(0, r + 1), cols), _cells(range(r + 1, ROWS), cols))


def _railway(
    capital: int, terrain: list[str], rivers: dict[frozenset[int], int], adjacency: dict[int, frozenset[int]]
) -> tuple[int, ...]:
    """Cheapest path (terrain and river crossings) from the capital to the border, preferring the middle."""
    dist = {capital: 0.0}
    prev: dict[int, int] = {}
    heap = [(0.0, capital)]
    while heap:
        d, a = heapq.heappop(heap)
        if d > dist[a]:
            continue
        for b in sorted(adjacency[a]):
            if b > N_SIDE:
                continue
            nd = d + MOVE_COST[terrain[b - 1]] + 3.0 * rivers.get(frozenset((a, b)), 0)
            if nd < dist.get(b, float("inf")):
                dist[b], prev[b] = nd, a
                heapq.heappush(heap, (nd, b))
    border = [p for p in range(1, N_SIDE + 1) if any(n > N_SIDE for n in adjacency[p])]
    end = min(border, key=lambda p: (dist.get(p, 1e9) + 0.8 * abs(_cell(p)[0] - 3.5), p))
    path = [end]
    while path[-1] != capital:
        path.append(prev[path[-1]])
    return tuple(reversed(path))


def generate(preset: str, seed: int = 0) -> ArenaMap:
    """The arena map of `preset` drawn with `seed`: a pure function of the two.

    Drawing one takes about 0.7 s, and a run asks for the same few maps again and again (each game, each
    check of --arena, each new process), so the last `CACHED_MAPS` are kept in the process and every
    map drawn is kept on disk (`maps/cache.py`); every caller gets its own copy, free to change."""
    if preset not in DESIGNS:
        raise UserError(f"unknown arena preset {preset!r}; choose one of {', '.join(PRESETS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserError(f"a map seed is a whole number >= 0, not {seed!r}")
    return copy.deepcopy(_drawn(preset, int(seed)))


CACHED_MAPS = 16
"""Maps kept by `generate` in each process (about 4 MB each)."""


@functools.lru_cache(maxsize=CACHED_MAPS)
def _drawn(preset: str, seed: int) -> ArenaMap:
    """`generate`'s maps, kept on disk too (`maps/cache.py`); they are shared, so only `generate`'s
    copies leave this module."""
    arena = map_cache.load(preset, seed)
    if arena is None:
        arena = draw(preset, seed)
        map_cache.store(arena)
    return arena


def draw(preset: str, seed: int) -> ArenaMap:
    """The drawing itself, with no cache: what `generate` returns the first time (preset and seed as
    `generate` checks them)."""
    design = DESIGNS[preset]
    rng = np.random.default_rng([PRESETS.index(preset), seed])
    raster = _sound_raster(design, rng)
    geo = raster_geometry(raster, 2 * N_SIDE)
    adjacency = geo["adjacency"]

    valleys = ((1, 6), (2, 5))[int(rng.integers(2))]
    terrain = _terrain(design, rng, valleys)
    state = _states(rng)

    # Cities: the capital deep inside, one city in every other state.
    cap_row, cap_col = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    capital = _pid(cap_row, cap_col)
    vp = [0] * N_SIDE
    cities: list[str | None] = [None] * N_SIDE
    names_b: set[str] = set()
    names_r: set[str] = set()
    vp[capital - 1] = 30
    cities[capital - 1] = _name(rng, "BLU", names_b)
    for sid in range(1, 9):
        if sid == state[capital - 1]:
            continue
        members = [p for p in range(1, N_SIDE + 1) if state[p - 1] == sid]
        pid = members[int(rng.integers(len(members)))]
        vp[pid - 1] = int(rng.integers(3, 13))
        cities[pid - 1] = _name(rng, "BLU", names_b)
    for pid in sorted(range(1, N_SIDE + 1), key=lambda p: -vp[p - 1])[:2]:
        terrain[pid - 1] = "urban"

    # Rivers on BLU's side (RED's are their mirrors), then the border river of `ford`.
    rivers: dict[frozenset[int], int] = {}
    for _ in range(design.small_rivers):
        for pair in _small_river(rng, adjacency):
            rivers[pair] = 1
    if design.river_behind_border:
        k = int(rng.integers(7, 9))
        for pair in _cut(
            adjacency, _cells(range(ROWS), range(0, k + 1)), _cells(range(ROWS), range(k + 1, COLS))
        ):
            rivers[pair] = 2
    lut = _mirror_lut()
    all_rivers = dict(rivers)
    for pair, w in rivers.items():
        all_rivers[frozenset(int(lut[p]) for p in pair)] = w
    if design.ford:
        ford = frozenset((_pid(3, 11), int(lut[_pid(3, 11)])))
        for a in range(1, N_SIDE + 1):
            for b in adjacency[a]:
                if b > N_SIDE and frozenset((a, b)) != ford:
                    all_rivers[frozenset((a, b))] = 2

    blu_rail = _railway(capital, terrain, all_rivers, adjacency)
    red_rail = tuple(int(lut[p]) for p in blu_rail)

    owners = ["BLU"] * N_SIDE + ["RED"] * N_SIDE
    red_cities = [_name(rng, "RED", names_r) if c else None for c in cities]
    state_names = {}
    for sid in range(1, 9):
        state_names[sid] = _name(rng, "BLU", names_b)
        state_names[sid + 8] = _name(rng, "RED", names_r)
    return build_map(
        preset=preset,
        seed=seed,
        raster=raster,
        owners=owners,
        states=state + [s + 8 for s in state],
        terrains=terrain + terrain,
        victory_points=vp + vp,
        cities=cities + red_cities,
        state_names=state_names,
        state_owners={sid: "BLU" if sid <= 8 else "RED" for sid in range(1, 17)},
        rivers=all_rivers,
        railways={"BLU": blu_rail, "RED": red_rail},
        capitals={"BLU": capital, "RED": int(lut[capital])},
        geometry=geo,
    )


if __name__ == "__main__":
    import json

    arena = generate(
        sys.argv[1] if len(sys.argv) > 1 else ARENA, int(sys.argv[2]) if len(sys.argv) > 2 else 0
    )
    print(json.dumps(arena.summary(), indent=1))
