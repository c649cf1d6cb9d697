"""Reading the map from pixels: whose land is where, where the front runs, where the enemy's cities are.

The scripted player decides where to draw its front and offensives the way a person does, by looking:
land tinted in its own country's colour is its own, land in the enemy's tint is the enemy's, occupied
land is striped (the controller's colour on the even diagonal bands, the owner's on the odd ones, as
the calibration's `map` section says), and cities are the round white markers (capitals: gold
squares). Nothing here knows provinces or reads the game's state; it sees a frame and a `MapRule`.

The map is read in square cells (`MapRule.cell` pixels): each cell's holder is the majority of its
land pixels' sides, counting only the even bands when the cell has enough of them, so an occupied
province reads as its controller's. A frame at 960x540 is read in about 5 ms (sampled every
`cell // 4` pixels; markers at full resolution).

Try: python -m hoi4_arena.players.map_reader plains 3 BLU   # prints a map of cells as text
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.players.templates import MapRule

UNKNOWN, OWN, ENEMY, WATER = 0, 1, 2, 3
_MIN_VOTES = 2
_MIN_BRIGHTNESS = 150  # r + g + b: darker pixels are borders and shadows, not land
_MIN_SATURATION = 20  # max - min channel: greys and whites are text, rails, markers


@dataclass(frozen=True)
class City:
    """A city marker seen on the map."""

    x: int
    y: int
    capital: bool
    size: int
    """Marker pixels: bigger markers are cities worth more victory points."""
    holder: int
    """OWN, ENEMY or UNKNOWN: who holds the land around it."""


@dataclass
class MapView:
    """One frame's map in cells: `cells[i, j]` is UNKNOWN, OWN, ENEMY or WATER for the cell whose
    top-left pixel is (x0 + j * cell, y0 + i * cell)."""

    cells: np.ndarray
    x0: int
    y0: int
    cell: int
    cities: list[City]

    def center(self, i: int, j: int) -> tuple[int, int]:
        return self.x0 + j * self.cell + self.cell // 2, self.y0 + i * self.cell + self.cell // 2

    def index(self, x: float, y: float) -> tuple[int, int] | None:
        i, j = int((y - self.y0) // self.cell), int((x - self.x0) // self.cell)
        if 0 <= i < self.cells.shape[0] and 0 <= j < self.cells.shape[1]:
            return i, j
        return None

    def at(self, x: float, y: float) -> int:
        found = self.index(x, y)
        return UNKNOWN if found is None else int(self.cells[found])

    def count(self, side: int) -> int:
        return int((self.cells == side).sum())

    def front(self, depth: int = 2) -> list[tuple[int, int]]:
        """Cells of own land within `depth` cells of enemy land (4-neighbour steps), each as (i, j),
        and no nearer than one cell: a drag that starts there starts in a province on the front."""
        near = _within(self.cells == ENEMY, depth)
        touching = _within(self.cells == ENEMY, 1)
        own = (self.cells == OWN) & near & ~touching
        return [tuple(ij) for ij in np.argwhere(own)]

    def holder_near(self, x: int, y: int, size: int) -> int:
        """Who holds the land just around a marker of `size` pixels at (x, y): a ring of cells outside
        it (the marker, or a counter standing on it, does not vote)."""
        radius = max(2, int(np.ceil(np.sqrt(size) / self.cell)) + 1)
        found = self.index(x, y)
        if found is None:
            return UNKNOWN
        i, j = found
        votes = {OWN: 0, ENEMY: 0}
        for di in range(-radius, radius + 1):
            for dj in range(-radius, radius + 1):
                ii, jj = i + di, j + dj
                if (
                    max(abs(di), abs(dj)) == radius
                    and 0 <= ii < self.cells.shape[0]
                    and 0 <= jj < self.cells.shape[1]
                ):
                    side = int(self.cells[ii, jj])
                    if side in votes:
                        votes[side] += 1
        if votes[OWN] == votes[ENEMY]:
            return UNKNOWN
        return OWN if votes[OWN] > votes[ENEMY] else ENEMY

    def solid(self, side: int, radius: int = 1) -> np.ndarray:
        """Cells of `side` whose whole (2 radius + 1)^2 neighbourhood is `side` too."""
        mask = self.cells == side
        out = mask.copy()
        for di in range(-radius, radius + 1):
            for dj in range(-radius, radius + 1):
                out &= _shifted(mask, di, dj)
        return out

    def toward(self, i: int, j: int, side: int, radius: int = 6) -> tuple[float, float] | None:
        """Unit vector (dx, dy) from cell (i, j) toward the mass of `side` cells within `radius`."""
        i0, i1 = max(0, i - radius), min(self.cells.shape[0], i + radius + 1)
        j0, j1 = max(0, j - radius), min(self.cells.shape[1], j + radius + 1)
        found = np.argwhere(self.cells[i0:i1, j0:j1] == side)
        if not len(found):
            return None
        di, dj = found[:, 0].mean() + i0 - i, found[:, 1].mean() + j0 - j
        norm = float(np.hypot(di, dj))
        if norm < 1e-6:
            return None
        return dj / norm, di / norm

    def across(
        self, i: int, j: int, side: int = ENEMY, beyond: int = 3, limit: int = 40
    ) -> tuple[int, int] | None:
        """The pixel `beyond` cells past where a walk from cell (i, j) toward `side`'s land enters it
        and stays in it (a point inside the first province across the border), or None."""
        direction = self.toward(i, j, side)
        if direction is None:
            return None
        dx, dy = direction
        x, y = self.center(i, j)
        inside = 0
        for step in range(1, limit):
            px, py = x + dx * step * self.cell, y + dy * step * self.cell
            here = self.at(px, py)
            if here == side:
                inside += 1
                if inside > beyond:
                    return round(px), round(py)
            elif here in (OWN, WATER) and inside:
                return None  # crossed a sliver of enemy land only
        return None


def _shifted(mask: np.ndarray, di: int, dj: int) -> np.ndarray:
    """mask shifted so that out[i, j] = mask[i + di, j + dj] (False outside)."""
    out = np.zeros_like(mask)
    h, w = mask.shape
    src = mask[max(0, di) : h + min(0, di), max(0, dj) : w + min(0, dj)]
    out[max(0, -di) : h + min(0, -di), max(0, -dj) : w + min(0, -dj)] = src
    return out


def _within(mask: np.ndarray, steps: int) -> np.ndarray:
    """Cells within `steps` 4-neighbour steps of a True cell."""
    out = mask.copy()
    for _ in range(steps):
        grown = out.copy()
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            grown |= _shifted(out, di, dj)
        out = grown
    return out


@functools.lru_cache(maxsize=8)
def _colour_table(
    own: tuple[int, int, int],
    enemy: tuple[int, int, int],
    ignore: tuple[tuple[int, int, int], ...],
    ignore_tol: int,
) -> np.ndarray:
    """`MapReader._table`'s work for one rule's colours: (bins,) int8, read-only."""
    levels = (np.arange(256 >> _Q) << _Q) + (1 << _Q) // 2  # the centre of each bin
    rgb = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    rgb = rgb.astype(np.int16)

    def near(colour, tol) -> np.ndarray:
        return np.abs(rgb - np.array(colour, dtype=np.int16)).max(axis=1) <= tol + (1 << _Q) // 2

    ignored = np.zeros(len(rgb), dtype=bool)
    for colour in ignore:
        ignored |= near(colour, ignore_tol)
    land = ~ignored & (rgb.sum(axis=1) >= _MIN_BRIGHTNESS)
    land &= (rgb.max(axis=1) - rgb.min(axis=1)) >= _MIN_SATURATION
    chroma = _chroma(rgb)
    d_own = ((chroma - _chroma(np.array(own))) ** 2).sum(axis=1)
    d_enemy = ((chroma - _chroma(np.array(enemy))) ** 2).sum(axis=1)
    table = np.full(len(rgb), _OTHER, dtype=np.int8)
    table[land & (d_own < d_enemy)] = OWN
    table[land & (d_enemy <= d_own)] = ENEMY
    table[near(ignore[0], ignore_tol)] = _WATER
    table.setflags(write=False)
    return table


def _chroma(rgb: np.ndarray) -> np.ndarray:
    rgb = rgb.astype(np.float32)
    return rgb / np.maximum(rgb.sum(axis=-1, keepdims=True), 1.0)


_Q = 2  # colours are looked up with their two low bits dropped: a 64^3 table
_OTHER, _WATER = UNKNOWN, WATER  # classes of the colour table, beside OWN and ENEMY


class MapReader:
    """Reads frames for the player of country `own` under `rule`; builds its colour table once."""

    def __init__(self, rule: MapRule, own: str) -> None:
        enemies = [tag for tag in rule.tints if tag != own]
        if own not in rule.tints or len(enemies) != 1:
            raise ValueError(f"the map rule knows {sorted(rule.tints)}; cannot read it for {own!r}")
        self.rule, self.own, self.enemy = rule, own, enemies[0]
        self.table = self._table(rule, own, enemies[0])

    @staticmethod
    def _table(rule: MapRule, own: str, enemy: str) -> np.ndarray:
        """Class of every colour bin: other, water, own land or enemy land (by nearest tint chroma).

        Shared, read-only: every game's player reads with the same few rules (0.2 s to build one)."""
        ignore = tuple(tuple(int(v) for v in colour) for colour in rule.ignore)
        tints = (tuple(int(v) for v in rule.tints[tag]) for tag in (own, enemy))
        return _colour_table(*tints, ignore, int(rule.ignore_tol))

    def classify(self, pixels: np.ndarray) -> np.ndarray:
        """Per pixel: UNKNOWN (not land), OWN, ENEMY or WATER."""
        q = (pixels >> _Q).astype(np.int32)
        bits = 8 - _Q
        return self.table[(q[..., 0] << (2 * bits)) | (q[..., 1] << bits) | q[..., 2]]

    def read(self, frame: np.ndarray) -> MapView:
        """Read the map area of `frame` ((H, W, 3) uint8)."""
        rule = self.rule
        x, y, w, h = rule.rect
        cell = rule.cell
        gh, gw = h // cell, w // cell
        stride = max(1, cell // 4)
        offsets = np.arange(stride // 2, cell, stride)
        ys = (y + np.arange(gh)[:, None] * cell + offsets[None, :]).ravel()
        xs = (x + np.arange(gw)[:, None] * cell + offsets[None, :]).ravel()
        k = len(offsets)
        sampled = frame[ys[:, None], xs[None, :]]  # (gh * k, gw * k, 3)
        kind = self.classify(sampled)
        even = (((xs[None, :] + ys[:, None]) // rule.stripe) % 2) == 0

        def per_cell(mask: np.ndarray) -> np.ndarray:
            return mask.reshape(gh, k, gw, k).sum(axis=(1, 3))

        is_own, is_enemy = kind == OWN, kind == ENEMY
        own_even, enemy_even = per_cell(is_own & even), per_cell(is_enemy & even)
        own_all, enemy_all = per_cell(is_own), per_cell(is_enemy)
        use_even = (own_even + enemy_even) >= _MIN_VOTES
        own_votes = np.where(use_even, own_even, own_all)
        enemy_votes = np.where(use_even, enemy_even, enemy_all)
        cells = np.full((gh, gw), UNKNOWN, dtype=np.int8)
        # A cell is land when its land pixels outnumber its water: anti-aliased text over the sea
        # (a city's label at the coast) has a few bluish pixels that are nobody's land.
        water = per_cell(kind == _WATER)
        voted = ((own_votes + enemy_votes) >= _MIN_VOTES) & (own_all + enemy_all > water)
        cells[voted & (own_votes > enemy_votes)] = OWN
        cells[voted & (enemy_votes > own_votes)] = ENEMY
        cells[(water * 2 > k * k) & ~voted] = WATER
        for mx, my, mw, mh in rule.masks:
            i0, i1 = max(0, (my - y) // cell), max(0, -(-(my + mh - y) // cell))
            j0, j1 = max(0, (mx - x) // cell), max(0, -(-(mx + mw - x) // cell))
            cells[i0:i1, j0:j1] = UNKNOWN
        view = MapView(cells, x, y, cell, [])
        view.cities = _cities(frame, rule, view)
        return view


def read_map(frame: np.ndarray, rule: MapRule, own: str) -> MapView:
    """Read the map area of `frame` as seen by the player of country `own` (one-off: a player that
    reads many frames keeps a `MapReader`)."""
    return MapReader(rule, own).read(frame)


def _blobs(mask: np.ndarray) -> list[np.ndarray]:
    """Connected groups (8-neighbour) of True pixels, each as an (n, 2) array of (row, col)."""
    points = np.argwhere(mask)
    if not len(points):
        return []
    index = {(int(r), int(c)): n for n, (r, c) in enumerate(points)}
    parent = list(range(len(points)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n, (r, c) in enumerate(points):
        for dr, dc in ((0, 1), (1, -1), (1, 0), (1, 1)):
            other = index.get((int(r) + dr, int(c) + dc))
            if other is not None:
                a, b = root(n), root(other)
                if a != b:
                    parent[b] = a
    groups: dict[int, list[int]] = {}
    for n in range(len(points)):
        groups.setdefault(root(n), []).append(n)
    return [points[members] for members in groups.values()]


def _cities(frame: np.ndarray, rule: MapRule, view: MapView) -> list[City]:
    """Markers of the calibrated colours with a solid core (text of a similar colour has none)."""
    x, y, w, h = rule.rect
    area = frame[y : y + h, x : x + w]
    core = max(2, rule.cell // 2)
    # Markers are bright: test the colours only where the red channel could be theirs (a few percent
    # of the map), not on every pixel.
    tol = rule.marker_tol
    candidates = np.flatnonzero(area[..., 0] >= min(rule.capital[0], rule.city[0]) - tol)
    values = area.reshape(-1, 3)[candidates].astype(np.int16)
    found = []
    for colour, capital in ((rule.capital, True), (rule.city, False)):
        hit = np.abs(values - np.array(colour, dtype=np.int16)).max(axis=1) <= tol
        mask = np.zeros(h * w, dtype=bool)
        mask[candidates[hit]] = True
        mask = mask.reshape(h, w)
        if not mask.any():
            continue
        # A pixel is core when the core x core square below-right of it is all marker colour.
        sums = np.pad(mask.astype(np.int32), ((1, 0), (1, 0))).cumsum(0).cumsum(1)
        full = sums[core:, core:] - sums[:-core, core:] - sums[core:, :-core] + sums[:-core, :-core]
        solid = np.zeros_like(mask)
        solid[: full.shape[0], : full.shape[1]] = full == core * core
        for blob in _blobs(solid):
            r, c = blob.mean(axis=0) + (core - 1) / 2
            cx, cy = int(round(c)) + x, int(round(r)) + y
            size = int(
                mask[
                    max(0, int(r) - 3 * core) : int(r) + 3 * core,
                    max(0, int(c) - 3 * core) : int(c) + 3 * core,
                ].sum()
            )
            found.append(City(cx, cy, capital, size, view.holder_near(cx, cy, size)))
    return sorted(found, key=lambda city: (city.y, city.x))


def render_text(view: MapView) -> str:
    """The cells as characters (o own, x enemy, ~ water, . unknown), cities as C (capital) and c."""
    chars = np.array([".", "o", "x", "~"])[view.cells]
    for city in view.cities:
        found = view.index(city.x, city.y)
        if found is not None:
            chars[found] = "C" if city.capital else "c"
    return "\n".join("".join(row) for row in chars)


if __name__ == "__main__":
    from hoi4_arena.players.templates import sim_rules
    from hoi4_arena.sim.headless import SimGame

    preset = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    side = sys.argv[3] if len(sys.argv) > 3 else "BLU"
    with SimGame(preset, seed, player=side, news=False) as game:
        view = read_map(game.frame(), sim_rules(game.size).map, side)
        print(render_text(view))
        print(f"{view.count(OWN)} own, {view.count(ENEMY)} enemy cells; cities: {view.cities}")
