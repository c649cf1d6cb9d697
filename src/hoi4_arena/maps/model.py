"""The arena map model: provinces, states, rivers, railways, capitals, and what the raster implies.

An `ArenaMap` is the one description of an arena that both games use: the simulator plays on it and the
HOI4 mod export turns it into `provinces.bmp` and state files. The raster (province id per pixel, 0 is
water) is the source of truth for geometry: adjacency, border lengths, centroids, areas and coastal
flags are derived from it here, never stored by hand. A map is saved as a small folder (`raster.png`
with 16-bit ids + `map.json`); `maps/folder.py` reads one back and checks every invariant
(`maps/invariants.py`).

Try: python -c "from hoi4_arena.maps import generate; m = generate('river', 3); print(m.summary())"
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

TAGS = ("BLU", "RED")
TERRAINS = ("plains", "forest", "hills", "mountain", "marsh", "urban")
FORMAT_VERSION = 1
RASTER_FILE = "raster.png"
JSON_FILE = "map.json"


def other_tag(tag: str) -> str:
    """The enemy of `tag` (the arena has exactly two countries)."""
    return TAGS[1] if tag == TAGS[0] else TAGS[0]


@dataclass(frozen=True)
class Province:
    """One land province; geometry fields (`centroid`, `area`, `coastal`) come from the raster."""

    id: int
    owner: str
    state: int
    terrain: str
    centroid: tuple[float, float]
    victory_points: int = 0
    city: str | None = None
    coastal: bool = False
    area: int = 0


@dataclass(frozen=True)
class State:
    """A group of provinces of one owner; its victory points are the sum of its provinces'."""

    id: int
    owner: str
    name: str
    provinces: tuple[int, ...]
    victory_points: int


@dataclass(eq=False)
class ArenaMap:
    """A two-country arena, an exact half-turn mirror: `mirror(pid)` is a province's partner."""

    preset: str
    seed: int
    raster: np.ndarray  # (H, W) uint16 province ids, 0 = water
    provinces: tuple[Province, ...]
    states: tuple[State, ...]
    rivers: dict[frozenset[int], int]  # border {a, b} -> 1 (river) or 2 (large river)
    railways: dict[str, tuple[int, ...]]  # tag -> path of provinces from the capital to the border
    capitals: dict[str, int]
    adjacency: dict[int, frozenset[int]] = field(default_factory=dict)
    border_lengths: dict[frozenset[int], int] = field(default_factory=dict)

    # --- identity and symmetry ------------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) of the raster in pixels."""
        return int(self.raster.shape[0]), int(self.raster.shape[1])

    @property
    def half(self) -> int:
        return len(self.provinces) // 2

    def mirror(self, pid: int) -> int:
        """The half-turn partner of a province id (0, water, maps to itself)."""
        if pid == 0:
            return 0
        return pid + self.half if pid <= self.half else pid - self.half

    def mirror_state(self, sid: int) -> int:
        n = len(self.states) // 2
        return sid + n if sid <= n else sid - n

    def province(self, pid: int) -> Province:
        if not 1 <= pid <= len(self.provinces):
            raise KeyError(f"no province {pid}")
        return self.provinces[pid - 1]

    def state(self, sid: int) -> State:
        return self.states[sid - 1]

    def provinces_of(self, tag: str) -> tuple[int, ...]:
        return tuple(p.id for p in self.provinces if p.owner == tag)

    @property
    def railway(self) -> tuple[int, ...]:
        """Every railway province: BLU's trunk then RED's."""
        return tuple(pid for tag in TAGS for pid in self.railways.get(tag, ()))

    @cached_property
    def border_provinces(self) -> dict[str, tuple[int, ...]]:
        """Per tag, its provinces that touch the other country."""
        out: dict[str, tuple[int, ...]] = {}
        for tag in TAGS:
            out[tag] = tuple(
                p.id
                for p in self.provinces
                if p.owner == tag and any(self.province(n).owner != tag for n in self.adjacency[p.id])
            )
        return out

    @cached_property
    def distances(self) -> np.ndarray:
        """(N+1, N+1) int16 hop counts between provinces over land adjacency (-1 = unreachable)."""
        n = len(self.provinces)
        inf = 10_000
        d = np.full((n + 1, n + 1), inf, dtype=np.int32)
        np.fill_diagonal(d, 0)
        for a, ns in self.adjacency.items():
            for b in ns:
                d[a, b] = 1
        for k in range(1, n + 1):  # Floyd-Warshall, vectorised per pivot: 192 small numpy steps
            np.minimum(d, d[:, k : k + 1] + d[k : k + 1, :], out=d)
        d[d >= inf] = -1
        return d.astype(np.int16)

    def summary(self) -> dict[str, Any]:
        vp = {tag: sum(p.victory_points for p in self.provinces if p.owner == tag) for tag in TAGS}
        return {
            "preset": self.preset,
            "seed": self.seed,
            "size": [self.size[1], self.size[0]],
            "provinces": len(self.provinces),
            "states": len(self.states),
            "rivers": len(self.rivers),
            "large_rivers": sum(1 for w in self.rivers.values() if w == 2),
            "railway": {tag: list(path) for tag, path in self.railways.items()},
            "capitals": dict(self.capitals),
            "victory_points": vp,
            "terrain": {t: sum(1 for p in self.provinces if p.terrain == t) for t in TERRAINS},
        }

    # --- borders for drawing -----------------------------------------------------------------------

    @cached_property
    def _border_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """All pixel edges between two different land provinces, sorted by pair key.

        Returns (keys, points): key = min*65536 + max, point = the edge's midpoint in raster coordinates
        (x, y), so a border between provinces a and b is one contiguous slice.
        """
        r = self.raster.astype(np.int64)
        keys, pts = [], []
        a, b = r[:, :-1], r[:, 1:]
        m = (a != b) & (a > 0) & (b > 0)
        ys, xs = np.nonzero(m)
        keys.append(np.minimum(a[m], b[m]) * 65536 + np.maximum(a[m], b[m]))
        pts.append(np.stack([xs + 1.0, ys + 0.5], axis=1))
        a, b = r[:-1, :], r[1:, :]
        m = (a != b) & (a > 0) & (b > 0)
        ys, xs = np.nonzero(m)
        keys.append(np.minimum(a[m], b[m]) * 65536 + np.maximum(a[m], b[m]))
        pts.append(np.stack([xs + 0.5, ys + 1.0], axis=1))
        k = np.concatenate(keys)
        p = np.concatenate(pts)
        order = np.argsort(k, kind="stable")
        return k[order], p[order]

    def border_points(self, a: int, b: int, ordered: bool = True) -> np.ndarray:
        """The shared border of provinces a and b as (N, 2) float (x, y) raster points.

        `ordered=True` chains them greedily from one end, so a renderer can draw a river as a polyline;
        a border that is empty (not adjacent) gives a (0, 2) array.
        """
        keys, pts = self._border_edges
        key = min(a, b) * 65536 + max(a, b)
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        seg = pts[lo:hi]
        if not ordered or len(seg) < 3:
            return seg.copy()
        # Start from the point with the fewest close neighbours (an end of the chain), then walk.
        d2 = ((seg[:, None, :] - seg[None, :, :]) ** 2).sum(-1)
        close = (d2 <= 1.01).sum(1)
        current = int(np.argmin(close))
        seen = np.zeros(len(seg), dtype=bool)
        order = [current]
        seen[current] = True
        for _ in range(len(seg) - 1):
            row = np.where(seen, np.inf, d2[current])
            current = int(np.argmin(row))
            seen[current] = True
            order.append(current)
        return seg[order]

    # --- saving and loading ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "hoi4-arena-map",
            "version": FORMAT_VERSION,
            "preset": self.preset,
            "seed": self.seed,
            "size": [self.size[1], self.size[0]],
            "provinces": [
                {
                    "id": p.id,
                    "owner": p.owner,
                    "state": p.state,
                    "terrain": p.terrain,
                    "victory_points": p.victory_points,
                    "city": p.city,
                }
                for p in self.provinces
            ],
            "states": [{"id": s.id, "owner": s.owner, "name": s.name} for s in self.states],
            "rivers": [
                [*sorted(pair), w] for pair, w in sorted(self.rivers.items(), key=lambda i: sorted(i[0]))
            ],
            "railways": {tag: list(path) for tag, path in self.railways.items()},
            "capitals": dict(self.capitals),
        }

    def save(self, folder: str | Path) -> Path:
        """Write `raster.png` (16-bit ids) and `map.json` into `folder` (created if needed)."""
        from PIL import Image

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(self.raster.astype(np.uint16)).save(folder / RASTER_FILE, optimize=True)
        (folder / JSON_FILE).write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return folder


def from_json(raster: np.ndarray, data: dict[str, Any]) -> ArenaMap:
    """Rebuild a map from its raster and `map.json` contents (invariants are checked by the caller)."""
    if data.get("format") != "hoi4-arena-map":
        raise ValueError("not a hoi4-arena map (format field)")
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"map format version {data.get('version')} is not {FORMAT_VERSION}")
    if raster.dtype != np.uint16 or raster.ndim != 2:
        raster = np.asarray(raster)
        if raster.ndim != 2 or not np.issubdtype(raster.dtype, np.integer):
            raise ValueError("raster.png must be a single-channel 16-bit image")
        raster = raster.astype(np.uint16)
    rows = data["provinces"]
    rivers = {frozenset((int(a), int(b))): int(w) for a, b, w in data["rivers"]}
    return build_map(
        preset=str(data["preset"]),
        seed=int(data["seed"]),
        raster=raster,
        owners=[str(r["owner"]) for r in rows],
        states=[int(r["state"]) for r in rows],
        terrains=[str(r["terrain"]) for r in rows],
        victory_points=[int(r["victory_points"]) for r in rows],
        cities=[r["city"] if r["city"] is None else str(r["city"]) for r in rows],
        state_names={int(s["id"]): str(s["name"]) for s in data["states"]},
        state_owners={int(s["id"]): str(s["owner"]) for s in data["states"]},
        rivers=rivers,
        railways={str(t): tuple(int(p) for p in path) for t, path in data["railways"].items()},
        capitals={str(t): int(p) for t, p in data["capitals"].items()},
        ids=[int(r["id"]) for r in rows],
    )


def raster_geometry(raster: np.ndarray, n: int) -> dict[str, Any]:
    """Adjacency, border lengths, areas, centroids and coastal flags of ids 1..n, from the raster."""
    h, w = raster.shape
    pairs: dict[int, int] = {}
    coastal = np.zeros(n + 1, dtype=bool)
    for a, b in ((raster[:, :-1], raster[:, 1:]), (raster[:-1, :], raster[1:, :])):
        m = a != b  # compared in the raster's own dtype; only the border pixels are widened
        aa, bb = a[m].astype(np.int64), b[m].astype(np.int64)
        land = (aa > 0) & (bb > 0)
        key = np.minimum(aa[land], bb[land]) * 65536 + np.maximum(aa[land], bb[land])
        uk, counts = np.unique(key, return_counts=True)
        for k, c in zip(uk.tolist(), counts.tolist(), strict=True):
            pairs[k] = pairs.get(k, 0) + c
        shore = np.maximum(aa[~land], bb[~land])
        coastal[np.unique(shore[shore <= n])] = True
    coastal[0] = False
    stride = max(n, int(raster.max(initial=0))) + 1
    by_row, by_column = _counts_along(raster, stride, 0), _counts_along(raster, stride, 1)
    area = by_row.sum(axis=0)[: n + 1]
    # Each coordinate is a whole number plus 0.5 and no sum comes near 2**53: the sums are exact, the
    # same in any order.
    sy = ((np.arange(h) + 0.5) @ by_row)[: n + 1]
    sx = ((np.arange(w) + 0.5) @ by_column)[: n + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        cx, cy = sx / np.maximum(area, 1), sy / np.maximum(area, 1)
    adjacency: dict[int, set[int]] = {i: set() for i in range(1, n + 1)}
    lengths: dict[frozenset[int], int] = {}
    for k, c in pairs.items():
        a, b = divmod(k, 65536)
        if a <= n and b <= n:
            adjacency[a].add(b)
            adjacency[b].add(a)
            lengths[frozenset((a, b))] = c
    return {
        "adjacency": {k: frozenset(v) for k, v in adjacency.items()},
        "lengths": lengths,
        "area": area,
        "centroid": (cx, cy),
        "coastal": coastal,
    }


def _counts_along(raster: np.ndarray, stride: int, axis: int) -> np.ndarray:
    """(rows, stride) or (columns, stride): how many pixels of each id (< stride) each row or column of
    the raster holds. One count over the whole raster, with no per-pixel coordinate arrays (the
    centroids' sums come from these, twice as fast as weighting every pixel by its x and y:
    bench/map_geometry.py)."""
    offsets = np.arange(raster.shape[axis], dtype=np.int64) * stride
    keys = raster + (offsets[:, None] if axis == 0 else offsets[None, :])
    return np.bincount(keys.ravel(), minlength=raster.shape[axis] * stride).reshape(-1, stride)


def build_map(
    *,
    preset: str,
    seed: int,
    raster: np.ndarray,
    owners: list[str],
    states: list[int],
    terrains: list[str],
    victory_points: list[int],
    cities: list[str | None],
    state_names: dict[int, str],
    state_owners: dict[int, str],
    rivers: dict[frozenset[int], int],
    railways: dict[str, tuple[int, ...]],
    capitals: dict[str, int],
    ids: list[int] | None = None,
    geometry: dict[str, Any] | None = None,
) -> ArenaMap:
    """Assemble an `ArenaMap` from per-province attributes, deriving geometry from the raster."""
    n = len(owners)
    if ids is not None and ids != list(range(1, n + 1)):
        raise ValueError("province ids must be 1..N in order")
    geo = geometry if geometry is not None else raster_geometry(raster, n)
    cx, cy = geo["centroid"]
    provinces = tuple(
        Province(
            id=i + 1,
            owner=owners[i],
            state=states[i],
            terrain=terrains[i],
            centroid=(round(float(cx[i + 1]), 2), round(float(cy[i + 1]), 2)),
            victory_points=victory_points[i],
            city=cities[i],
            coastal=bool(geo["coastal"][i + 1]),
            area=int(geo["area"][i + 1]),
        )
        for i in range(n)
    )
    members: dict[int, list[int]] = {sid: [] for sid in state_names}
    for p in provinces:
        members.setdefault(p.state, []).append(p.id)
    state_list = tuple(
        State(
            id=sid,
            owner=state_owners.get(sid, ""),
            name=state_names.get(sid, f"State {sid}"),
            provinces=tuple(members[sid]),
            victory_points=sum(provinces[pid - 1].victory_points for pid in members[sid]),
        )
        for sid in sorted(members)
    )
    return ArenaMap(
        preset=preset,
        seed=seed,
        raster=raster,
        provinces=provinces,
        states=state_list,
        rivers=dict(rivers),
        railways=dict(railways),
        capitals=dict(capitals),
        adjacency=geo["adjacency"],
        border_lengths=geo["lengths"],
    )
