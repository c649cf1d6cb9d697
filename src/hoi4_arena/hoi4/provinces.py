"""The mod's province map: the arena's land provinces unchanged, its water cut into sea and lake provinces.

HOI4 needs every pixel of `provinces.bmp` to belong to a province, so the arena's water (id 0 in the
raster) is split here. The map is first padded with sea above and below (or at the sides) until every
land province's bounding box is within 1/8 of the map, HOI4's limit. Water that touches the map's
edge is sea, water enclosed by land is lake, and both are cut into tiles laid like bricks (128 x 64
pixels, alternate rows offset by half a tile, the last half tile before the horizontal wrap offset by
half a row, so four tiles never meet at a point, not even across the wrap). A tile's disconnected
bits become their own provinces; bits of 64 pixels or fewer join the water neighbour they share most
border with. A pocket of water with no water neighbour (a few pixels between land provinces) joins
the land province it borders most: the only land pixels that differ from the arena's raster. Then
every 2x2 block where four ids meet or ids touch only diagonally (HOI4's "X crossing", across the wrap
too) is repaired by moving one water pixel, never a land pixel. Land ids are kept (1..192), water ids
follow (193..).

Try: python -m hoi4_arena.hoi4.provinces bay 1
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from hoi4_arena.maps.model import ArenaMap
from hoi4_arena.maps.pieces import label_pieces

TILE_W, TILE_H = 128, 64
MIN_WATER = 64  # a water bit this small or smaller joins a neighbour (HOI4 warns at 8 or fewer)
SEA, LAKE, LAND = "sea", "lake", "land"


@dataclass(eq=False)
class ProvinceMap:
    """Every province of the mod: ids raster (H, W) int32 from 1, and per id its kind and colour."""

    ids: np.ndarray  # (H, W) int32, 1..n, no zeros
    kinds: tuple[str, ...]  # index id-1: land, sea or lake
    colours: np.ndarray  # (n + 1, 3) uint8; row 0 unused
    offset: tuple[int, int] = (0, 0)  # (x, y) of the arena's raster inside the mod's map

    @property
    def n(self) -> int:
        return len(self.kinds)

    def rgb(self) -> np.ndarray:
        """(H, W, 3) uint8: the picture `provinces.bmp` holds."""
        return self.colours[self.ids]


def ids_of_colours(
    rgb: np.ndarray, colours: dict[int, tuple[int, int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """(packed, ids) of a `provinces.bmp` picture (H, W, 3) uint8 and its provinces' colours (id ->
    (r, g, b)): each pixel's colour packed as R << 16 | G << 8 | B (int64) and its province id, 0 where
    no province has the pixel's colour.

    Through one table from every 24-bit colour to its id: only the pages of the colours used are ever
    touched. A colour with a channel outside 0..255 or an id below 1 matches no pixel; a colour two
    provinces share (the audit reports it) is the larger id's."""
    packed = (rgb[..., 0].astype(np.int64) << 16) | (rgb[..., 1].astype(np.int64) << 8) | rgb[..., 2]
    ids = np.fromiter(colours.keys(), dtype=np.int64, count=len(colours))
    channels = np.array(list(colours.values()), dtype=np.int64).reshape(len(colours), 3)
    usable = ((channels >= 0) & (channels <= 255)).all(axis=1) & (ids > 0)
    ids, channels = ids[usable], channels[usable]
    codes = (channels[:, 0] << 16) | (channels[:, 1] << 8) | channels[:, 2]
    order = np.argsort(-ids, kind="stable")  # largest id first: np.unique keeps each code's first
    codes, first = np.unique(codes[order], return_index=True)
    table = np.zeros(1 << 24, dtype=np.int32)
    table[codes] = ids[order][first]
    return packed, table[packed].astype(np.int64)


def crossings(ids: np.ndarray, wrap: bool = True) -> np.ndarray:
    """(N, 2) (x, y) of 2x2 blocks where four ids meet or ids touch only diagonally; x = W-1 is the wrap."""
    r = np.concatenate([ids, ids[:, :1]], axis=1) if wrap else ids
    a, b, c, d = r[:-1, :-1], r[:-1, 1:], r[1:, :-1], r[1:, 1:]
    four = (a != b) & (a != c) & (a != d) & (b != c) & (b != d) & (c != d)
    diagonal = (a == d) & (b == c) & (a != b)
    ys, xs = np.nonzero(four | diagonal)
    return np.stack([xs, ys], axis=1)


def _pairs(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique neighbouring id pairs (a < b) with their shared edge counts, horizontal wrap included."""
    keys = []
    for a, b in ((ids, np.roll(ids, -1, axis=1)), (ids[:-1, :], ids[1:, :])):
        m = a != b
        lo, hi = np.minimum(a[m], b[m]).astype(np.int64), np.maximum(a[m], b[m]).astype(np.int64)
        keys.append(lo * 1_000_003 + hi)
    uk, counts = np.unique(np.concatenate(keys), return_counts=True)
    return uk // 1_000_003, uk % 1_000_003, counts


def adjacency(ids: np.ndarray) -> dict[int, set[int]]:
    """Province id -> neighbouring ids (4-connected, across the horizontal wrap too)."""
    out: dict[int, set[int]] = {}
    a, b, _ = _pairs(ids)
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        out.setdefault(x, set()).add(y)
        out.setdefault(y, set()).add(x)
    return out


def _merge_small(water: np.ndarray) -> np.ndarray:
    """Relabel water pieces; pieces of MIN_WATER pixels or fewer join their longest-bordering water neighbour."""
    for _ in range(8):
        labels = label_pieces(water)
        labels = np.where(water > 0, labels + 1, 0)  # land stays 0 here
        sizes = np.bincount(labels.ravel())
        small = [i for i in range(1, len(sizes)) if 0 < sizes[i] <= MIN_WATER]
        if not small:
            return labels
        a, b, counts = _pairs(labels)
        target = np.arange(len(sizes))
        for s in small:
            # the neighbour with the longest shared border (ties: the larger piece)
            options = [
                (c, sizes[t], t)
                for x, y, c in zip(a.tolist(), b.tolist(), counts.tolist(), strict=True)
                for t in ((y,) if x == s else (x,) if y == s else ())
                if t != 0
            ]
            if options:
                target[s] = max(options)[2]
        water = target[labels]
        if np.array_equal(water, labels):
            return labels  # nothing could be merged (an isolated pocket): the audit will say so
    return label_pieces(water) * (water > 0) + (water > 0)


def split_water(arena: ArenaMap) -> ProvinceMap:
    """The arena's provinces plus its water cut into sea and lake provinces; land untouched."""
    n_land = len(arena.provinces)
    top, left = padding(arena.raster, n_land)
    raster = np.pad(arena.raster, ((top, top), (left, left)))
    h, w = raster.shape
    is_water = raster == 0
    pieces = label_pieces(is_water)
    # A pocket of water too small to be a province (the arena's raster has a few single pixels between
    # land provinces) goes to the land province it borders most: HOI4 has no province to give it.
    sizes = np.bincount(pieces.ravel())
    pocket_ids = [i for i in np.unique(pieces[is_water]).tolist() if sizes[i] <= MIN_WATER]
    if pocket_ids:
        raster = raster.copy()
        for i in pocket_ids:
            ys, xs = np.nonzero((pieces == i) & is_water)
            around = np.concatenate(
                [
                    raster[np.clip(ys + dy, 0, h - 1), np.clip(xs + dx, 0, w - 1)]
                    for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0))
                ]
            )
            around = around[around > 0]
            raster[ys, xs] = np.bincount(around).argmax() if len(around) else 0
        is_water = raster == 0
        pieces = label_pieces(is_water)
    # Sea: water pieces touching the map's edge; lake: enclosed water.
    edge = np.unique(np.concatenate([pieces[0], pieces[-1], pieces[:, 0], pieces[:, -1]]))
    sea_mask = is_water & np.isin(pieces, [p for p in edge.tolist() if is_water[pieces == p].any()])
    # Rows depend on y alone and the strip on x alone: worked out on the axes, broadcast once.
    ys, xs = np.arange(h)[:, None], np.arange(w)[None, :]
    row = ys // TILE_H
    col = (xs + (row % 2) * (TILE_W // 2)) // TILE_W
    # The last half tile before the wrap gets row lines half a row lower, so that at the wrap (where
    # every row's tiles end) row lines never meet from both sides: no four-way point there either.
    strip = xs >= w - TILE_W // 2
    row = np.where(strip, (ys + TILE_H // 2) // TILE_H, row)
    col = np.where(strip, w // TILE_W + 1, col)
    tile = 1 + row * (w // TILE_W + 2) + col
    # Lake tiles get ids of their own so a lake and the sea never share one.
    water = np.where(is_water, np.where(sea_mask, tile, tile + 100_000), 0)
    for _ in range(30):
        water = _merge_small(water)
        ids = np.where(is_water, water + n_land, raster).astype(np.int64)
        bad = crossings(ids)
        if not len(bad):
            break
        for x, y in bad.tolist():
            block = [(y, x), (y, (x + 1) % w), (y + 1, x), (y + 1, (x + 1) % w)]
            wet = [(yy, xx) for yy, xx in block if is_water[yy, xx]]
            values = sorted({int(water[yy, xx]) for yy, xx in wet})
            if len(values) < 2:
                continue
            # Move one water pixel to the id of another water pixel in the block, deterministically.
            yy, xx = next(p for p in wet if int(water[p]) == values[0])
            water[yy, xx] = values[1]
    else:
        raise RuntimeError(f"could not cut the water of {arena.preset}:{arena.seed} into sound provinces")
    # Compact water ids to n_land+1.. in raster order of first appearance.
    flat = water.ravel()
    present, first = np.unique(flat[flat > 0], return_index=True)
    order = present[np.argsort(first)]
    lut = np.zeros(int(flat.max()) + 1, dtype=np.int64)
    lut[order] = np.arange(n_land + 1, n_land + 1 + len(order))
    ids = np.where(is_water, lut[water], raster).astype(np.int32)
    first_pixel = np.flatnonzero(flat > 0)[np.sort(first)]  # one pixel of each water id, in id order
    kinds = [LAND] * n_land + [SEA if sea else LAKE for sea in sea_mask.ravel()[first_pixel].tolist()]
    return ProvinceMap(ids=ids, kinds=tuple(kinds), colours=province_colours(len(kinds)), offset=(left, top))


def padding(raster: np.ndarray, n_land: int) -> tuple[int, int]:
    """(rows, columns) of sea to add on each side so every land province's box fits HOI4's 1/8 limit.

    HOI4 calls a province whose bounding box is over 1/8 of the map's width or height too large; the
    arena's 2048 x 1024 raster has provinces up to ~170 pixels tall, so the mod's map is taller (sides
    stay multiples of 256, the padding is even on both sides so the half-turn mirror still holds).
    """
    ys, xs = np.nonzero(raster)
    ids = raster[ys, xs].astype(np.int64)
    lo_y, hi_y = np.full(n_land + 1, raster.shape[0]), np.zeros(n_land + 1, dtype=np.int64)
    lo_x, hi_x = np.full(n_land + 1, raster.shape[1]), np.zeros(n_land + 1, dtype=np.int64)
    np.minimum.at(lo_y, ids, ys)
    np.maximum.at(hi_y, ids, ys)
    np.minimum.at(lo_x, ids, xs)
    np.maximum.at(hi_x, ids, xs)
    box_h = int(np.max(hi_y - lo_y + 1, initial=0))
    box_w = int(np.max(hi_x - lo_x + 1, initial=0))
    h, w = raster.shape
    need_h = max(h, -(-8 * (box_h + 8) // 256) * 256)  # 8 pixels of margin
    need_w = max(w, -(-8 * (box_w + 8) // 256) * 256)
    return (need_h - h) // 2, (need_w - w) // 2


def province_colours(n: int) -> np.ndarray:
    """(n + 1, 3) distinct, fixed RGB colours (never black, which HOI4 reserves for id 0)."""
    rng = np.random.default_rng(1936)
    # Drawn as indices of 1..2^24-1 (the same draws as choosing from that array, without building it).
    values = rng.choice((1 << 24) - 1, size=n, replace=False) + 1
    colours = np.zeros((n + 1, 3), dtype=np.uint8)
    colours[1:, 0] = values >> 16
    colours[1:, 1] = (values >> 8) & 255
    colours[1:, 2] = values & 255
    return colours


if __name__ == "__main__":
    from hoi4_arena.maps import generate

    pm = split_water(
        generate(sys.argv[1] if len(sys.argv) > 1 else "bay", int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    )
    print({"provinces": pm.n, "sea": pm.kinds.count(SEA), "lake": pm.kinds.count(LAKE)})
