"""Write an arena map as a HOI4 total-conversion map mod: every file the game reads for a map.

The mod comes from the same `ArenaMap` the simulator plays (`maps/`): land province i of the arena is
province i of `provinces.bmp`, state s is state s, the capitals, victory points, terrain, rivers and
railway are the arena's, and the divisions stand where the simulator deploys them. Only the water is
added (`hoi4/provinces.py`: HOI4 needs every pixel in a province). `descriptor.mod` replaces the
vanilla folders that would otherwise leak vanilla provinces, states and countries into the arena.

What is written (paths inside the mod folder):

    map/        provinces.bmp definition.csv terrain.bmp heightmap.bmp rivers.bmp trees.bmp cities.bmp
                world_normal.bmp default.map adjacencies.csv adjacency_rules.txt buildings.txt
                unitstacks.txt railways.txt supply_nodes.txt weatherpositions.txt airports.txt
                rocketsites.txt continent.txt positions.txt ambient_object.txt strategicregions/
    history/    states/ countries/ units/ (the two OOBs)
    common/     countries/ country_tags/ bookmarks/ + the state channel (on_actions, scripted effects
                and localisation; `hoi4/channel.py`)
    localisation/english/*.yml (UTF-8 with BOM), descriptor.mod, arena.json (what made the mod)

None of it has been loaded by HOI4 here; `hoi4-arena audit-map` checks what the files allow.

Try: hoi4-arena generate-map river:3 /tmp/arena-river --mod && hoi4-arena audit-map /tmp/arena-river
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.hoi4 import channel
from hoi4_arena.hoi4.provinces import LAKE, LAND, SEA, ProvinceMap, adjacency, split_water
from hoi4_arena.hoi4.rivers import draw_rivers
from hoi4_arena.hoi4.rivers import palette as river_palette
from hoi4_arena.hoi4.text import BOM, yml
from hoi4_arena.maps.model import TAGS, ArenaMap

MOD_FORMAT = 1
SUPPORTED_VERSION = "1.14.*"
NAMES = {"BLU": "Blue", "RED": "Red"}
COLOURS = {"BLU": (52, 92, 190), "RED": (186, 48, 48)}
DIVISIONS_PER_SIDE = 24  # as the simulator's Rules.divisions_per_side
STACK_TYPES = 39  # unitstacks.txt types 0..38, every one for every province
WEATHER_PERIODS = 12
REPLACE_PATHS = (
    "map/strategicregions",
    "map/supplyareas",
    "history/states",
    "history/countries",
    "history/units",
    "history/general",
    "common/countries",
    "common/country_tags",
    "common/bookmarks",
)
# terrain.bmp palette indices vanilla's common/terrain reads (graphical terrain), per arena terrain.
TERRAIN_INDEX = {
    "plains": 0,
    "forest": 1,
    "hills": 2,
    "mountain": 6,
    "marsh": 9,
    "urban": 13,
    SEA: 15,
    LAKE: 15,
}
TERRAIN_RGB = {
    0: (86, 124, 27),
    1: (0, 86, 6),
    2: (112, 74, 31),
    6: (100, 100, 100),
    9: (75, 147, 174),
    13: (120, 120, 120),
    15: (8, 31, 130),
}
HEIGHT = {
    "plains": 100,
    "urban": 100,
    "forest": 103,
    "marsh": 97,
    "hills": 115,
    "mountain": 145,
    SEA: 88,
    LAKE: 90,
}
TREE_INDEX = 3  # one of default.map's `tree = { 3 4 7 10 }`
STATE_MANPOWER = 250_000
MONTH_DAYS = channel.MONTH_DAYS


# --- the geometry every file shares -------------------------------------------------------------


class ModGeometry:
    """The mod's provinces and, per province, its pixels' anchor (a pixel nearest its centroid)."""

    def __init__(self, arena: ArenaMap) -> None:
        self.arena = arena
        self.pm: ProvinceMap = split_water(arena)
        self.h, self.w = self.pm.ids.shape
        self.n_land = len(arena.provinces)
        self.adjacency = adjacency(self.pm.ids)
        flat = self.pm.ids.ravel()
        order = np.argsort(flat, kind="stable")
        counts = np.bincount(flat, minlength=self.pm.n + 1)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        self.anchor: dict[int, tuple[int, int]] = {}
        for pid in range(1, self.pm.n + 1):
            pix = order[bounds[pid] : bounds[pid + 1]]
            ys, xs = np.divmod(pix, self.w)
            cx, cy = xs.mean(), ys.mean()
            i = int(np.argmin((xs - cx) ** 2 + (ys - cy) ** 2))
            self.anchor[pid] = (int(xs[i]), int(ys[i]))

    def kind(self, pid: int) -> str:
        return self.pm.kinds[pid - 1]

    def terrain(self, pid: int) -> str:
        return self.arena.province(pid).terrain if pid <= self.n_land else self.kind(pid)

    def sea_neighbours(self, pid: int) -> list[int]:
        return sorted(n for n in self.adjacency.get(pid, ()) if self.kind(n) == SEA)

    def coastal(self, pid: int) -> bool:
        """HOI4's coastal flag: a land province touching sea, or a sea province touching land."""
        if self.kind(pid) == LAND:
            return bool(self.sea_neighbours(pid))
        if self.kind(pid) == SEA:
            return any(self.kind(n) == LAND for n in self.adjacency.get(pid, ()))
        return False

    def position(self, pid: int, dx: float = 0.0, dz: float = 0.0) -> tuple[float, float, float]:
        """(x, y, z) in HOI4 map coordinates (z grows northwards from the bottom row)."""
        x, y = self.anchor[pid]
        height = HEIGHT[self.terrain(pid)] / 10.0
        return x + 0.5 + dx, height, self.h - (y + 0.5) + dz

    def port(self, tag: str) -> tuple[int, int] | None:
        """(land province, sea province) of a side's naval base: its coastal province nearest the capital."""
        capital = self.arena.capitals[tag]
        d = self.arena.distances
        coastal = [p for p in self.arena.provinces_of(tag) if self.sea_neighbours(p)]
        if not coastal:
            return None
        best = min(coastal, key=lambda p: (int(d[capital, p]), p))
        return best, self.sea_neighbours(best)[0]


def deployment(arena: ArenaMap, per_side: int = DIVISIONS_PER_SIDE) -> dict[str, list[int]]:
    """Where each side's divisions stand at the start: the simulator's rule (World._deploy), mirrored."""
    red = arena.provinces_of("RED")
    blu = arena.provinces_of("BLU")
    d = arena.distances
    hops = {p: min(int(d[p, r]) for r in red) - 1 for p in blu}
    y = {p.id: p.centroid[1] for p in arena.provinces}
    candidates = sorted((p for p in blu if hops[p] <= 2), key=lambda p: (hops[p], y[p], p))
    places = [candidates[i % len(candidates)] for i in range(per_side)]
    return {"BLU": places, "RED": [arena.mirror(p) for p in places]}


# --- bitmaps -------------------------------------------------------------------------------------


def _palette(
    colours: dict[int, tuple[int, int, int]], default: tuple[int, int, int] = (0, 0, 0)
) -> list[int]:
    flat = []
    for i in range(256):
        flat.extend(colours.get(i, default))
    return flat


def _box_blur(a: np.ndarray, r: int) -> np.ndarray:
    """Mean over a (2r+1)^2 box, edges clamped: smooth hills without scipy."""
    out = a.astype(np.float64)
    for axis in (0, 1):
        pad = [(0, 0), (0, 0)]
        pad[axis] = (r + 1, r)
        c = np.cumsum(np.pad(out, pad, mode="edge"), axis=axis)
        hi = np.take(c, np.arange(2 * r + 1, c.shape[axis]), axis=axis)
        lo = np.take(c, np.arange(0, c.shape[axis] - 2 * r - 1), axis=axis)
        out = (hi - lo) / (2 * r + 1)
    return out


def _save(image: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="BMP")


def write_bitmaps(geo: ModGeometry, map_dir: Path) -> None:
    from PIL import Image

    ids = geo.pm.ids
    _save(Image.fromarray(geo.pm.rgb(), "RGB"), map_dir / "provinces.bmp")
    terrain_of = np.array(
        [0] + [TERRAIN_INDEX[geo.terrain(p)] for p in range(1, geo.pm.n + 1)], dtype=np.uint8
    )
    terrain = Image.fromarray(terrain_of[ids], "P")
    terrain.putpalette(_palette(TERRAIN_RGB))
    _save(terrain, map_dir / "terrain.bmp")
    height_of = np.array([0] + [HEIGHT[geo.terrain(p)] for p in range(1, geo.pm.n + 1)], dtype=np.float64)
    height = np.clip(np.rint(_box_blur(height_of[ids], 6)), 0, 255).astype(np.uint8)
    _save(Image.fromarray(height, "L"), map_dir / "heightmap.bmp")
    rivers = Image.fromarray(draw_rivers(ids, geo.n_land, geo.arena.rivers), "P")
    rivers.putpalette(_palette(river_palette()))
    _save(rivers, map_dir / "rivers.bmp")
    # trees.bmp at vanilla's ratio (1650 x 640 for a 5632 x 2048 map): forests get tree index 3.
    tw, th = geo.w * 75 // 256, geo.h * 5 // 16
    small = ids[(np.arange(th) * geo.h) // th][:, (np.arange(tw) * geo.w) // tw]
    forest = np.array([False] + [geo.terrain(p) == "forest" for p in range(1, geo.pm.n + 1)])
    trees = Image.fromarray(np.where(forest[small], TREE_INDEX, 0).astype(np.uint8), "P")
    trees.putpalette(_palette({0: (0, 0, 0), TREE_INDEX: (30, 90, 30)}))
    _save(trees, map_dir / "trees.bmp")
    # cities.bmp: where towns are drawn close up (urban provinces and every victory point's province).
    city = np.array(
        [False]
        + [
            p <= geo.n_land and (geo.terrain(p) == "urban" or geo.arena.province(p).victory_points > 0)
            for p in range(1, geo.pm.n + 1)
        ]
    )
    cities = Image.fromarray(np.where(city[ids], 1, 0).astype(np.uint8), "P")
    cities.putpalette(_palette({0: (0, 0, 0), 1: (255, 255, 255)}))
    _save(cities, map_dir / "cities.bmp")
    # world_normal.bmp: half size, 24-bit, normals of the heightmap (y up in the green channel).
    half = height[::2, ::2].astype(np.float64) / 10.0
    gz, gx = np.gradient(half)
    n = np.stack([-gx, np.full_like(half, 2.0), gz], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    _save(
        Image.fromarray(np.clip(np.rint(n * 127 + 128), 0, 255).astype(np.uint8), "RGB"),
        map_dir / "world_normal.bmp",
    )


# --- map text files ------------------------------------------------------------------------------


def _fmt(v: float) -> str:
    return f"{v:.2f}"


def definition_csv(geo: ModGeometry) -> str:
    lines = ["0;0;0;0;land;false;unknown;0"]
    for pid in range(1, geo.pm.n + 1):
        r, g, b = (int(c) for c in geo.pm.colours[pid])
        kind = geo.kind(pid)
        terrain = {SEA: "ocean", LAKE: "lakes"}.get(kind, geo.terrain(pid))
        continent = 1 if kind == LAND else 0
        coastal = "true" if geo.coastal(pid) else "false"
        lines.append(f"{pid};{r};{g};{b};{kind};{coastal};{terrain};{continent}")
    return "\r\n".join(lines) + "\r\n"


def default_map() -> str:
    return (
        'definitions = "definition.csv"\nprovinces = "provinces.bmp"\npositions = "positions.txt"\n'
        'terrain = "terrain.bmp"\nrivers = "rivers.bmp"\nheightmap = "heightmap.bmp"\n'
        'tree_definition = "trees.bmp"\ncontinent = "continent.txt"\nadjacency_rules = "adjacency_rules.txt"\n'
        'adjacencies = "adjacencies.csv"\nambient_object = "ambient_object.txt"\n\n'
        "# trees.bmp palette indices that count as trees\ntree = { 3 4 7 10 }\n"
    )


ADJACENCY_HEADER = "From;To;Type;Through;start_x;start_y;stop_x;stop_y;adjacency_rule_name;Comment"
ADJACENCY_END = "-1;-1;;-1;-1;-1;-1;-1;-1"


def adjacencies_csv() -> str:
    """No straits or impassable borders on an arena: the header and HOI4's terminating line."""
    return f"{ADJACENCY_HEADER}\r\n{ADJACENCY_END}\r\n"


def buildings_txt(geo: ModGeometry) -> str:
    """Model positions per state building (state-level) and per province building (bunkers, ports)."""
    lines = []
    state_level = (
        ("arms_factory", 6),
        ("industrial_complex", 6),
        ("air_base", 1),
        ("anti_air_building", 3),
        ("synthetic_refinery", 1),
        ("fuel_silo", 1),
        ("radar_station", 1),
        ("rocket_site", 1),
        ("nuclear_reactor", 1),
    )
    ports = {tag: geo.port(tag) for tag in TAGS}
    for state in geo.arena.states:
        anchor = state.provinces[len(state.provinces) // 2]
        for name, count in state_level:
            for i in range(count):
                x, y, z = geo.position(anchor, dx=3.0 * i, dz=-3.0 * i)
                lines.append(f"{state.id};{name};{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0")
        for pid in state.provinces:
            x, y, z = geo.position(pid, dx=2.0)
            lines.append(f"{state.id};bunker;{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0")
            x, y, z = geo.position(pid, dz=2.0)
            lines.append(f"{state.id};supply_node;{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0")
            if geo.sea_neighbours(pid):
                sea = geo.sea_neighbours(pid)[0]
                x, y, z = geo.position(pid, dx=-2.0)
                lines.append(f"{state.id};coastal_bunker;{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0")
                lines.append(f"{state.id};naval_base;{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;{sea}")
        if any(port and geo.arena.province(port[0]).state == state.id for port in ports.values()):
            x, y, z = geo.position(anchor, dz=4.0)
            lines.append(f"{state.id};dockyard;{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0")
    return "\n".join(lines) + "\n"


def unitstacks_txt(geo: ModGeometry) -> str:
    lines = []
    for pid in range(1, geo.pm.n + 1):
        for t in range(STACK_TYPES):
            x, y, z = geo.position(pid, dx=(t % 5 - 2) * 1.5, dz=(t // 5 % 5 - 2) * 1.5)
            lines.append(f"{pid};{t};{_fmt(x)};{_fmt(y)};{_fmt(z)};0.00;0.00")
    return "\n".join(lines) + "\n"


def railways_txt(arena: ArenaMap) -> str:
    return "".join(
        f"1 {len(path)} {' '.join(map(str, path))}\n" for tag, path in arena.railways.items() if len(path) > 1
    )


def supply_nodes_txt(arena: ArenaMap) -> str:
    """A supply hub at each railway's far end (the capital is one by itself)."""
    return "".join(f"1 {path[-1]}\n" for path in arena.railways.values() if len(path) > 1)


def strategic_regions(geo: ModGeometry) -> list[dict[str, Any]]:
    """Land: one region per pair of states (north and south of one column group); sea: one per map quarter."""
    regions: list[dict[str, Any]] = []
    for first in range(1, len(geo.arena.states) + 1, 2):
        provinces = [p for sid in (first, first + 1) for p in geo.arena.state(sid).provinces]
        regions.append({"provinces": sorted(provinces), "naval": False})
    water = [p for p in range(geo.n_land + 1, geo.pm.n + 1)]
    for qy in (0, 1):
        for qx in (0, 1):
            members = [
                p
                for p in water
                if (geo.anchor[p][0] >= geo.w // 2) == qx and (geo.anchor[p][1] >= geo.h // 2) == qy
            ]
            if members:
                regions.append({"provinces": members, "naval": True})
    for i, region in enumerate(regions, start=1):
        region["id"] = i
    return regions


def _weather_period(month: int) -> str:
    cold = month in (0, 1, 11)
    temp = (-8.0, 2.0) if cold else (8.0, 24.0) if 4 <= month <= 8 else (0.0, 12.0)
    snow = 0.15 if cold else 0.0
    return (
        "\t\tperiod = {\n"
        f"\t\t\tbetween = {{ 0.{month} {MONTH_DAYS[month] - 1}.{month} }}\n"
        f"\t\t\ttemperature = {{ {temp[0]:.1f} {temp[1]:.1f} }}\n"
        f"\t\t\tno_phenomenon = {0.8 - snow:.2f}\n\t\t\train_light = 0.12\n\t\t\train_heavy = 0.05\n"
        f"\t\t\tsnow = {snow:.2f}\n\t\t\tblizzard = 0.0\n\t\t\tarctic_water = 0.0\n\t\t\tmud = 0.03\n"
        "\t\t\tsandstorm = 0.0\n\t\t\tmin_snow_level = 0.0\n\t\t}\n"
    )


def strategic_region_txt(region: dict[str, Any]) -> str:
    periods = "".join(_weather_period(m) for m in range(WEATHER_PERIODS))
    naval = "\tnaval_terrain = water_shallow_sea\n" if region["naval"] else ""
    return (
        "strategic_region = {\n"
        f'\tid = {region["id"]}\n\tname = "STRATEGICREGION_{region["id"]}"\n'
        f"\tprovinces = {{\n\t\t{' '.join(map(str, region['provinces']))}\n\t}}\n{naval}"
        f"\tweather = {{\n{periods}\t}}\n}}\n"
    )


def weatherpositions_txt(geo: ModGeometry, regions: list[dict[str, Any]]) -> str:
    lines = []
    for region in regions:
        pid = region["provinces"][len(region["provinces"]) // 2]
        x, y, z = geo.position(pid)
        lines.append(f"{region['id']};{_fmt(x)};{_fmt(y)};{_fmt(z)};small")
    return "\n".join(lines) + "\n"


def per_state_province(arena: ArenaMap, pick: str) -> str:
    """airports.txt / rocketsites.txt: `state = { province }`, the state's victory-point province or middle."""
    lines = []
    for s in arena.states:
        best = max(
            s.provinces,
            key=lambda p: (
                arena.province(p).victory_points,
                -abs(s.provinces.index(p) - len(s.provinces) // 2),
            ),
        )
        lines.append(f"{s.id} = {{ {best} }}")
    return f"# {pick}\n" + "\n".join(lines) + "\n"


# --- history, countries, localisation ---------------------------------------------------------


def state_txt(geo: ModGeometry, sid: int) -> str:
    arena = geo.arena
    state = arena.state(sid)
    vps = "".join(
        f"\t\tvictory_points = {{ {p} {arena.province(p).victory_points} }}\n"
        for p in state.provinces
        if arena.province(p).victory_points > 0
    )
    port = geo.port(state.owner)
    naval = (
        f"\t\t\t{port[0]} = {{ naval_base = 1 }}\n" if port and arena.province(port[0]).state == sid else ""
    )
    category = "city" if any(arena.province(p).victory_points >= 10 for p in state.provinces) else "town"
    return (
        "state = {\n"
        f'\tid = {sid}\n\tname = "STATE_{sid}"\n\tmanpower = {STATE_MANPOWER}\n\tstate_category = {category}\n'
        "\thistory = {\n"
        f"\t\towner = {state.owner}\n\t\tadd_core_of = {state.owner}\n{vps}"
        f"\t\tbuildings = {{\n\t\t\tinfrastructure = 3\n{naval}\t\t}}\n"
        "\t}\n"
        f"\tprovinces = {{\n\t\t{' '.join(map(str, state.provinces))}\n\t}}\n"
        "\tlocal_supplies = 0.0\n}\n"
    )


def country_history_txt(arena: ArenaMap, tag: str) -> str:
    capital_state = arena.province(arena.capitals[tag]).state
    return (
        f"capital = {capital_state}\n"
        f'oob = "{tag}_1936"\n'
        "set_research_slots = 3\n"
        "set_technology = {\n\tinfantry_weapons = 1\n}\n"
        'set_politics = {\n\truling_party = neutrality\n\tlast_election = "1932.1.1"\n'
        "\telection_frequency = 48\n\telections_allowed = no\n}\n"
        "set_popularities = {\n\tdemocratic = 0\n\tfascism = 0\n\tcommunism = 0\n\tneutrality = 100\n}\n"
    )


def oob_txt(tag: str, places: list[int], first_number: int) -> str:
    units = "".join(
        "\tdivision = {\n"
        f'\t\tname = "{first_number + i}. {NAMES[tag]} Infantry Division"\n'
        f'\t\tlocation = {pid}\n\t\tdivision_template = "Arena Infantry"\n\t\tstart_experience_factor = 0.3\n'
        "\t}\n"
        for i, pid in enumerate(places)
    )
    regiments = "".join(f"\t\tinfantry = {{ x = {x} y = {y} }}\n" for x in range(3) for y in range(3))
    return (
        'division_template = {\n\tname = "Arena Infantry"\n\tregiments = {\n'
        f"{regiments}\t}}\n}}\n\nunits = {{\n{units}}}\n"
    )


def bookmark_txt(arena: ArenaMap) -> str:
    sides = "".join(f"\t\t{tag} = {{\n\t\t\tideology = neutrality\n\t\t}}\n" for tag in TAGS)
    return (
        "bookmarks = {\n\tbookmark = {\n"
        '\t\tname = "ARENA_BOOKMARK"\n\t\tdesc = "ARENA_BOOKMARK_DESC"\n\t\tdate = 1936.1.1.12\n'
        '\t\tpicture = "GFX_select_date_1936"\n\t\tdefault_country = "BLU"\n\t\tdefault = yes\n'
        f"{sides}\t}}\n}}\n"
    )


def localisation(arena: ArenaMap, regions: list[dict[str, Any]]) -> dict[str, str]:
    entries: dict[str, str] = {
        "ARENA_BOOKMARK": f"Arena: {arena.preset} (seed {arena.seed})",
        "ARENA_BOOKMARK_DESC": "Two mirrored countries; the first to hold 60% of the other's victory points wins.",
    }
    for tag in TAGS:
        for suffix in ("", "_DEF", "_ADJ"):
            entries[f"{tag}{suffix}"] = NAMES[tag]
        for ideology in ("neutrality", "democratic", "fascism", "communism"):
            entries[f"{tag}_{ideology}"] = NAMES[tag]
            entries[f"{tag}_{ideology}_DEF"] = NAMES[tag]
    for s in arena.states:
        entries[f"STATE_{s.id}"] = s.name
    for p in arena.provinces:
        if p.city:
            entries[f"VICTORY_POINTS_{p.id}"] = p.city
    for region in regions:
        entries[f"STRATEGICREGION_{region['id']}"] = (
            f"{'Sea' if region['naval'] else 'Land'} region {region['id']}"
        )
    return entries


def descriptor_mod(arena: ArenaMap) -> str:
    replaces = "".join(f'replace_path="{p}"\n' for p in REPLACE_PATHS)
    return (
        'version="1.0"\ntags={\n\t"Map"\n\t"Total Conversion"\n}\n'
        f'name="HOI4 Arena {arena.preset}:{arena.seed}"\nsupported_version="{SUPPORTED_VERSION}"\n{replaces}'
    )


# --- the whole mod -------------------------------------------------------------------------------


def mod_files(arena: ArenaMap) -> tuple[ModGeometry, dict[str, str]]:
    """Every text file of the mod (path -> text; .yml without its BOM) and the geometry for the bitmaps."""
    geo = ModGeometry(arena)
    regions = strategic_regions(geo)
    files: dict[str, str] = {
        "map/definition.csv": definition_csv(geo),
        "map/default.map": default_map(),
        "map/adjacencies.csv": adjacencies_csv(),
        "map/adjacency_rules.txt": "# no adjacency rules on an arena (no straits, canals or passes)\n",
        "map/buildings.txt": buildings_txt(geo),
        "map/unitstacks.txt": unitstacks_txt(geo),
        "map/railways.txt": railways_txt(arena),
        "map/supply_nodes.txt": supply_nodes_txt(arena),
        "map/weatherpositions.txt": weatherpositions_txt(geo, regions),
        "map/airports.txt": per_state_province(arena, "airports: state = { province }"),
        "map/rocketsites.txt": per_state_province(arena, "rocket sites: state = { province }"),
        "map/continent.txt": "continents = {\n\tarena\n}\n",
        "map/positions.txt": "# HOI4 1.5 and later read buildings.txt and unitstacks.txt instead\n",
        "map/ambient_object.txt": "# no ambient objects on an arena\n",
        "common/country_tags/00_countries.txt": "".join(f'{t} = "countries/{NAMES[t]}.txt"\n' for t in TAGS),
        "common/countries/colors.txt": "".join(
            f"{t} = {{\n\tcolor = rgb {{ {' '.join(map(str, COLOURS[t]))} }}\n\tcolor_ui = rgb {{ {' '.join(map(str, COLOURS[t]))} }}\n}}\n"
            for t in TAGS
        ),
        "common/bookmarks/arena.txt": bookmark_txt(arena),
        "localisation/english/arena_l_english.yml": yml(localisation(arena, regions)),
        "descriptor.mod": descriptor_mod(arena),
    }
    for region in regions:
        files[f"map/strategicregions/{region['id']}-region.txt"] = strategic_region_txt(region)
    for s in arena.states:
        files[f"history/states/{s.id}-{s.name}.txt"] = state_txt(geo, s.id)
    places = deployment(arena)
    for i, tag in enumerate(TAGS):
        files[f"common/countries/{NAMES[tag]}.txt"] = (
            "graphical_culture = western_european_gfx\ngraphical_culture_2d = western_european_2d\n"
            f"color = {{ {' '.join(map(str, COLOURS[tag]))} }}\n"
        )
        files[f"history/countries/{tag} - {NAMES[tag]}.txt"] = country_history_txt(arena, tag)
        files[f"history/units/{tag}_1936.txt"] = oob_txt(tag, places[tag], 1 + i * DIVISIONS_PER_SIDE)
    files.update(channel.render_files(arena.preset, arena.seed, len(arena.provinces), len(arena.states)))
    files["arena.json"] = (
        json.dumps(
            {
                "format": "hoi4-arena-mod",
                "version": MOD_FORMAT,
                "preset": arena.preset,
                "seed": arena.seed,
                "land_provinces": len(arena.provinces),
                "provinces": geo.pm.n,
                "states": len(arena.states),
                "arena_offset": list(geo.pm.offset),
                "channel_version": channel.CHANNEL_VERSION,
                "schema_version": channel.SCHEMA_VERSION,
            },
            indent=1,
        )
        + "\n"
    )
    return geo, files


def write_text_file(path: Path, text: str) -> None:
    """Write `text` as UTF-8; localisation (.yml) gets the BOM HOI4 requires."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (BOM + text) if path.suffix == ".yml" else text
    path.write_bytes(data.encode("utf-8"))


def _is_our_mod(folder: Path) -> bool:
    try:
        return (
            json.loads((folder / "arena.json").read_text(encoding="utf-8")).get("format") == "hoi4-arena-mod"
        )
    except (OSError, ValueError, AttributeError):
        return False


def write_mod(arena: ArenaMap, out: Path, force: bool = False) -> dict[str, Any]:
    """Write the mod folder `out` (refused if it exists, unless `force`); returns a summary."""
    out = Path(out)
    if out.exists() and not force:
        raise UserError(f"{out} exists; choose a new folder or pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not _is_our_mod(out):
        # --force replaces a mod generate-map wrote, never some other folder that happens to be there
        raise UserError(
            f"{out} is not empty and is not a mod generate-map wrote (no arena.json); not replacing it"
        )
    geo, files = mod_files(arena)
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    for rel, text in files.items():
        write_text_file(tmp / rel, text)
    write_bitmaps(geo, tmp / "map")
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)  # a half-written mod never takes the folder's name
    return {
        "out": str(out),
        "preset": arena.preset,
        "seed": arena.seed,
        "provinces": geo.pm.n,
        "land": geo.n_land,
        "sea": geo.pm.kinds.count(SEA),
        "lake": geo.pm.kinds.count(LAKE),
        "states": len(arena.states),
        "files": sum(1 for path in out.rglob("*") if path.is_file()),
    }


@dataclass(frozen=True)
class GenerateMapConfig:
    """Settings of `hoi4-arena generate-map`."""

    arena: str
    """Preset name, preset:seed (e.g. river:3), or an arena map folder."""
    out: Path
    """The folder to write (must not exist unless force)."""
    mod: bool = False
    """Write a HOI4 mod; without it, the simulator's map folder (raster.png + map.json)."""
    force: bool = False
    """Replace `out` if it exists."""


def generate_map(config: GenerateMapConfig) -> dict[str, Any]:
    """The generate-map command: a HOI4 mod (or a map folder) of one arena."""
    from hoi4_arena.maps import load_arena

    out = Path(config.out)
    if out.exists() and not config.force:
        raise UserError(f"{out} exists; choose a new folder or pass --force to replace it")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not _replaceable(out, config.mod))):
        what = "a mod generate-map wrote (no arena.json)" if config.mod else "an arena map folder"
        raise UserError(f"{out} is not empty and is not {what}; not replacing it")
    arena = load_arena(config.arena)
    if config.mod:
        return write_mod(arena, out, force=config.force)
    if out.exists():
        shutil.rmtree(out)
    arena.save(out)
    return {"out": str(out), **arena.summary()}


def _replaceable(folder: Path, mod: bool) -> bool:
    """--force replaces only what generate-map itself writes, never some other folder."""
    if mod:
        return _is_our_mod(folder)
    return {p.name for p in folder.iterdir()} <= {"raster.png", "map.json"}
