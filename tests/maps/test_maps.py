import json

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.maps import PRESETS, ArenaMap, generate, load_arena, load_map
from hoi4_arena.maps.invariants import check_invariants, four_way_corners
from hoi4_arena.maps.model import raster_geometry
from hoi4_arena.maps.pieces import count_pieces


@pytest.fixture(
    scope="module", params=[(p, s) for p in PRESETS for s in (0, 7)], ids=lambda ps: f"{ps[0]}:{ps[1]}"
)
def arena(request) -> ArenaMap:
    return generate(*request.param)


def test_every_invariant_holds(arena: ArenaMap) -> None:
    assert check_invariants(arena) == []


def test_raster_is_an_exact_half_turn_mirror(arena: ArenaMap) -> None:
    h, w = arena.raster.shape
    assert h % 256 == 0 and w % 256 == 0
    for x, y in ((10, 10), (w // 3, h // 2), (w // 2 - 1, h // 2 - 1), (700, 300)):
        assert arena.mirror(int(arena.raster[y, x])) == int(arena.raster[h - 1 - y, w - 1 - x])
    for p in arena.provinces:
        q = arena.province(arena.mirror(p.id))
        assert q.owner != p.owner and q.terrain == p.terrain and q.victory_points == p.victory_points
        assert q.centroid == pytest.approx((w - p.centroid[0], h - p.centroid[1]), abs=0.02)
        assert {arena.mirror(n) for n in arena.adjacency[p.id]} == set(arena.adjacency[q.id])


def test_shape_of_the_arena(arena: ArenaMap) -> None:
    assert len(arena.provinces) == 192 and len(arena.states) == 16
    assert sum(p.owner == "BLU" for p in arena.provinces) == 96
    assert all(len(s.provinces) >= 4 for s in arena.states)
    # Irregular, not a rectangular grid: provinces have between 2 and 8 neighbours, and vary in size.
    degrees = [len(arena.adjacency[p.id]) for p in arena.provinces]
    assert max(degrees) >= 6 and min(degrees) >= 2
    areas = [p.area for p in arena.provinces]
    assert max(areas) > 1.5 * min(areas)
    # BLU is the western country.
    blu_x = np.mean([p.centroid[0] for p in arena.provinces if p.owner == "BLU"])
    assert blu_x < arena.size[1] / 2
    assert arena.border_provinces["BLU"] and all(
        arena.province(p).owner == "BLU" for p in arena.border_provinces["BLU"]
    )
    for tag, path in arena.railways.items():
        assert path[0] == arena.capitals[tag] and path[-1] in arena.border_provinces[tag]


def test_preset_designs_show_in_the_map() -> None:
    river = generate("river", 1)
    assert sum(w == 2 for w in river.rivers.values()) >= 16  # a large river across each country
    ford = generate("ford", 1)
    crossings = [
        frozenset((a, b))
        for a in ford.border_provinces["BLU"]
        for b in ford.adjacency[a]
        if ford.province(b).owner == "RED"
    ]
    dry = [c for c in crossings if c not in ford.rivers]
    assert len(dry) == 1 and all(ford.rivers[c] == 2 for c in crossings if c != dry[0])
    passes = generate("passes", 1)
    mountains = [p for p in passes.border_provinces["BLU"] if passes.province(p).terrain == "mountain"]
    assert 4 <= len(mountains) < len(passes.border_provinces["BLU"])
    bay, plains = generate("bay", 1), generate("plains", 1)
    h, w = bay.size
    assert (bay.raster[150 : h - 150, w // 2] == 0).sum() > 100  # the bays reach deep along the border
    assert (plains.raster[150 : h - 150, w // 2] == 0).sum() == 0
    assert bay.raster[h // 2, w // 2] != 0  # the isthmus
    marsh = generate("marsh", 1)
    lake_centre = marsh.raster[marsh.size[0] // 2, marsh.size[1] // 2]
    assert lake_centre == 0 and sum(p.terrain == "marsh" for p in marsh.provinces) >= 16
    salient = generate("salient", 1)
    # the bulge: some BLU province lies well east of the middle
    east = lambda m: max(p.centroid[0] for p in m.provinces if p.owner == "BLU")  # noqa: E731
    assert east(salient) > east(plains) + 100


def test_generation_is_a_pure_function_of_preset_and_seed() -> None:
    a, b, c = generate("salient", 4), generate("salient", 4), generate("salient", 5)
    assert np.array_equal(a.raster, b.raster) and a.to_json() == b.to_json()
    assert not np.array_equal(a.raster, c.raster)
    # The same map twice is kept once (drawn once), but each caller's copy is its own to change.
    from hoi4_arena.maps.generate import _drawn

    _drawn.cache_clear()
    first = generate("salient", 4)
    fresh = first.to_json()
    first.raster[:] = 0
    first.rivers.clear()
    first.capitals["BLU"] = -1
    again = generate("salient", 4)
    assert _drawn.cache_info().hits == 1 and _drawn.cache_info().misses == 1
    assert again.to_json() == fresh and np.array_equal(again.raster, a.raster)
    with pytest.raises(UserError, match="whole number"):
        generate("salient", True)


def test_save_load_round_trip(tmp_path) -> None:
    a = generate("bay", 2)
    a.save(tmp_path / "m")
    b = load_map(tmp_path / "m")
    assert np.array_equal(a.raster, b.raster) and b.raster.dtype == np.uint16
    assert a.to_json() == b.to_json() and a.provinces == b.provinces and a.adjacency == b.adjacency
    assert load_arena(str(tmp_path / "m")).to_json() == a.to_json()


@pytest.mark.parametrize(
    "corrupt, words",
    [
        (lambda r, d: r.__setitem__((slice(300, 340), slice(300, 340)), 5), "mirror"),
        (lambda r, d: d["provinces"][4].__setitem__("terrain", "lava"), "terrain"),
        (lambda r, d: d["provinces"][4].__setitem__("victory_points", 40), "differ"),
        (lambda r, d: d["rivers"].append([1, 150, 1]), "river"),
        (lambda r, d: d.__setitem__("version", 99), "version"),
        (lambda r, d: d["provinces"].pop(), "192 provinces"),
        (lambda r, d: d["provinces"][0].pop("owner"), "malformed"),
    ],
)
def test_a_corrupted_folder_is_refused_with_the_reason(tmp_path, corrupt, words) -> None:
    from PIL import Image

    generate("plains", 0).save(tmp_path / "m")
    raster = np.asarray(Image.open(tmp_path / "m" / "raster.png")).copy()
    data = json.loads((tmp_path / "m" / "map.json").read_text())
    corrupt(raster, data)
    Image.fromarray(raster).save(tmp_path / "m" / "raster.png")
    (tmp_path / "m" / "map.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match=words):
        load_map(tmp_path / "m")


def test_missing_or_garbage_files_are_refused(tmp_path) -> None:
    with pytest.raises(UserError, match="missing"):
        load_map(tmp_path)
    (tmp_path / "raster.png").write_bytes(b"not a png")
    (tmp_path / "map.json").write_text("{}")
    with pytest.raises(UserError):
        load_map(tmp_path)


def test_load_arena_specs() -> None:
    assert load_arena("ford:3").seed == 3 and load_arena("ford").seed == 0
    for bad in ("nowhere", "ford:x", "ford:-1"):
        with pytest.raises(UserError):
            load_arena(bad)
    with pytest.raises(UserError, match="unknown arena preset"):
        generate("volcano", 1)


def test_pixel_checks_find_defects() -> None:
    r = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]], dtype=np.uint16)
    assert [tuple(c) for c in four_way_corners(r)] == [(1, 1)]
    checker = np.array([[1, 2], [2, 1]], dtype=np.uint16)
    assert len(four_way_corners(checker)) == 1
    split = np.array([[1, 1, 2, 1], [2, 2, 2, 1], [1, 2, 2, 2]], dtype=np.uint16)
    assert count_pieces(split).tolist() == [0, 3, 1]


def test_border_points_follow_the_shared_border() -> None:
    arena = generate("river", 0)
    pair = next(iter(sorted(arena.rivers, key=sorted)))
    a, b = sorted(pair)
    pts = arena.border_points(a, b)
    assert len(pts) == arena.border_lengths[pair]
    steps = np.hypot(*np.diff(pts, axis=0).T)
    assert np.median(steps) <= 1.0  # a chain, not a scatter
    x, y = pts[len(pts) // 2]
    window = arena.raster[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2]
    assert {a, b} <= set(window.ravel().tolist())
    far = next(p for p in range(1, 193) if p not in arena.adjacency[a] and p != a)
    assert arena.border_points(a, far).shape == (0, 2)


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_raster_geometry_is_what_counting_pixel_by_pixel_gives(dtype) -> None:
    # Ids 0 (water) to 9 on a small raster, with ids past n (8) that must be ignored, not folded in.
    raster = np.random.default_rng(3).integers(0, 10, size=(23, 37)).astype(dtype)
    raster[:, :5] = 1  # one big province, so that an id's sums run over many pixels
    n = 8
    geo = raster_geometry(raster, n)
    h, w = raster.shape
    area, sx, sy = np.zeros(n + 1, int), np.zeros(n + 1), np.zeros(n + 1)
    lengths, coastal = {}, set()
    for y in range(h):
        for x in range(w):
            i = int(raster[y, x])
            if i <= n:
                area[i] += 1
                sx[i] += x + 0.5
                sy[i] += y + 0.5
            for j in [int(raster[y, x + 1])] if x + 1 < w else []:
                if i != j and i and j and i <= n and j <= n:
                    lengths[frozenset((i, j))] = lengths.get(frozenset((i, j)), 0) + 1
                elif i != j and 0 in (i, j) and max(i, j) <= n:
                    coastal.add(max(i, j))
            for j in [int(raster[y + 1, x])] if y + 1 < h else []:
                if i != j and i and j and i <= n and j <= n:
                    lengths[frozenset((i, j))] = lengths.get(frozenset((i, j)), 0) + 1
                elif i != j and 0 in (i, j) and max(i, j) <= n:
                    coastal.add(max(i, j))
    assert geo["area"].tolist() == area.tolist()
    present = area > 0
    assert np.array_equal(geo["centroid"][0][present], sx[present] / area[present])
    assert np.array_equal(geo["centroid"][1][present], sy[present] / area[present])
    assert geo["lengths"] == lengths
    assert {i for i in range(1, n + 1) if geo["coastal"][i]} == coastal
    assert geo["adjacency"][1] == frozenset(j for pair in lengths if 1 in pair for j in pair if j != 1)
