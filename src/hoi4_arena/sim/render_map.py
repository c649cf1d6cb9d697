"""Drawing the arena map: geometry once per arena, static layers once per camera, colours per control.

Three levels, each cached by what it depends on:

- `MapGeometry` (per arena): province anchors (the province pixel nearest its centroid, where counters
  and arrows attach), per-province terrain/state/owner tables, rivers and state borders as polylines,
  the railway, cities, and border chains between neighbours (front lines), computed on first use.
- `MapLayers` (per camera): the raster sampled at every screen pixel, each pixel's border class
  (province, state, country or coast) and stripe bit, folded into one palette index; plus an overlay
  surface with rivers, the railway and cities. Built when the camera moves; the map keeps the last
  views' layers (`KEPT_VIEW_BYTES`), so every game on a map starts from its first view without drawing it.
- `base_surface` (per camera and control): one palette lookup gives country colours by controller
  (occupied land striped in the owner's colour, as in HOI4), then the overlay is blitted on top.

Units, fronts and arrows change more often and are drawn per frame by `render.py` on a copy of this.

Try: python -m hoi4_arena.sim.render_map river /tmp/map.png
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.maps.model import TAGS, ArenaMap
from hoi4_arena.maps.preview import TERRAIN_RGB
from hoi4_arena.sim.camera import Camera

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # before pygame's import: no banner on stdout
import pygame  # noqa: E402  # isort: skip

WATER = (46, 78, 120)
TINT = {"BLU": (64, 104, 206), "RED": (206, 62, 52)}
TERRAIN_SHARE = 0.5  # political map: half terrain, half country colour
EDGE_FACTORS = (1.0, 0.8, 0.55, 0.22)  # interior, province, state, country border or coast
RIVER = (66, 130, 226)
RAIL_DARK, RAIL_LIGHT = (44, 38, 34), (226, 218, 200)
STRIPE_REF = 7  # width of the occupation stripes at 1080p
KEPT_VIEW_BYTES = 64 << 20
"""Memory each map keeps for the static layers of its last camera views (about 8 MB a view at 540x960,
32 MB at 1080p; the latest view is always kept)."""


FONT_FILE = Path(pygame.__file__).with_name("freesansbold.ttf")  # ships with pygame: same on every machine


def load_font(size: int) -> pygame.font.Font:
    """The interface's font at `size` pixels (the file itself, not `Font(None)`, which shrinks it)."""
    if not pygame.font.get_init():
        pygame.font.init()
    return pygame.font.Font(FONT_FILE, max(6, size))


class MapGeometry:
    """What the renderer and the interface need from an arena, computed once (see `geometry`)."""

    def __init__(self, arena: ArenaMap) -> None:
        self.arena = arena
        n = len(arena.provinces)
        self.n = n
        raster = arena.raster
        self.height, self.width = raster.shape
        self.owner_code = np.zeros(n + 1, dtype=np.int64)  # 0 water, 1 BLU, 2 RED
        self.state_of = np.zeros(n + 1, dtype=np.int64)
        self.terrain_rgb = np.zeros((n + 1, 3), dtype=np.float64)
        for p in arena.provinces:
            self.owner_code[p.id] = TAGS.index(p.owner) + 1
            self.state_of[p.id] = p.state
            self.terrain_rgb[p.id] = TERRAIN_RGB[p.terrain]
        self.anchors = self._anchors(raster, n)
        self._chains: dict[tuple[int, int], np.ndarray] = {}
        self.rivers = [
            (width, self.chain(*sorted(pair))) for pair, width in sorted(arena.rivers.items(), key=_pair_key)
        ]
        self.railways = [np.array([self.anchors[p] for p in path]) for path in arena.railways.values()]
        capitals = set(arena.capitals.values())
        self.cities = [
            (p.id, p.city or "", p.victory_points, p.id in capitals)
            for p in arena.provinces
            if p.victory_points
        ]
        # `MapLayers`' drawn views by camera view, oldest first; games on this map may run in threads.
        self.views: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, bytes]] = OrderedDict()
        self.views_lock = threading.Lock()

    @staticmethod
    def _anchors(raster: np.ndarray, n: int) -> np.ndarray:
        """(n + 1, 2) float (x, y): the centre of each province's pixel nearest its centroid (always
        inside the province, unlike the centroid of a bent one)."""
        flat = raster.ravel().astype(np.int64)
        land = np.flatnonzero(flat)
        pid = flat[land]
        ys, xs = np.divmod(land, raster.shape[1])
        count = np.bincount(pid, minlength=n + 1).astype(np.float64)
        cx = np.bincount(pid, weights=xs + 0.5, minlength=n + 1) / np.maximum(count, 1)
        cy = np.bincount(pid, weights=ys + 0.5, minlength=n + 1) / np.maximum(count, 1)
        d2 = (xs + 0.5 - cx[pid]) ** 2 + (ys + 0.5 - cy[pid]) ** 2
        # Per province its nearest pixel (ties: the lowest pixel index): the first pixel, in raster
        # order, at the province's least distance.
        nearest = np.full(n + 1, np.inf)
        np.minimum.at(nearest, pid, d2)
        candidates = np.flatnonzero(d2 == nearest[pid])
        _, first_of = np.unique(pid[candidates], return_index=True)
        first = candidates[first_of]
        anchors = np.zeros((n + 1, 2), dtype=np.float64)
        anchors[pid[first], 0] = xs[first] + 0.5
        anchors[pid[first], 1] = ys[first] + 0.5
        return anchors

    def chain(self, a: int, b: int) -> np.ndarray:
        """The border of provinces a and b as an ordered (N, 2) raster polyline, thinned to a point every
        few pixels (cached: borders never move)."""
        key = (a, b) if a < b else (b, a)
        found = self._chains.get(key)
        if found is None:
            points = self.arena.border_points(*key)
            if len(points) > 2:
                keep = np.r_[np.arange(0, len(points) - 1, 3), len(points) - 1]
                points = points[keep]
            found = self._chains[key] = points
        return found


def _pair_key(item: tuple[frozenset[int], int]) -> tuple[int, ...]:
    return tuple(sorted(item[0]))


_GEOMETRY: weakref.WeakKeyDictionary[ArenaMap, MapGeometry] = weakref.WeakKeyDictionary()


def geometry(arena: ArenaMap) -> MapGeometry:
    """The arena's `MapGeometry`, built once per map object and shared by every game on it."""
    found = _GEOMETRY.get(arena)
    if found is None:
        found = _GEOMETRY[arena] = MapGeometry(arena)
    return found


class MapLayers:
    """The static map as seen through one camera: per-pixel palette indices and an overlay surface.

    A view the map has drawn before is not drawn again (`MapGeometry.views`): its arrays are shared
    (read-only) and the overlay's pixels are copied into a surface of this object's own, since pygame
    surfaces are not shared between games, which may run in threads. `keep=False` draws the view and
    leaves the map's views alone (the renderer's naive mode)."""

    def __init__(self, geo: MapGeometry, camera: Camera, px, keep: bool = True) -> None:
        self.key = camera.key
        view = (camera.key, camera.screen_h, camera.screen_w, camera.fit_scale, camera.anchor, px(1000))
        with geo.views_lock:
            kept = geo.views.get(view) if keep else None
            if kept is not None:
                geo.views.move_to_end(view)
        if kept is None:
            kept = self._draw(geo, camera, px)
            if keep:
                size = kept[0].nbytes + kept[1].nbytes + len(kept[2])
                with geo.views_lock:
                    geo.views[view] = kept
                    while len(geo.views) > 1 and size * len(geo.views) > KEPT_VIEW_BYTES:
                        geo.views.popitem(last=False)
        self.pid, self.index, pixels = kept
        self.overlay = pygame.Surface((camera.screen_w, camera.screen_h), pygame.SRCALPHA, 32)
        self.overlay.get_buffer().write(pixels)

    @staticmethod
    def _draw(geo: MapGeometry, camera: Camera, px) -> tuple[np.ndarray, np.ndarray, bytes]:
        """(pid, palette index, the overlay's raw pixels) of one view."""
        h, w = camera.screen_h, camera.screen_w
        xs, ys = camera.sample_axes()
        pid = geo.arena.raster[np.maximum(ys, 0)[:, None], np.maximum(xs, 0)[None, :]].astype(np.int32)
        pid[(ys < 0)[:, None] | (xs < 0)[None, :]] = 0
        kind = np.zeros((h, w), dtype=np.int32)
        land = pid > 0
        for lut, level, wide in (
            (None, 1, False),
            (geo.state_of, 2, False),
            (geo.owner_code, 3, True),
        ):
            k = pid if lut is None else lut[pid]
            edge = np.zeros((h, w), dtype=bool)
            right = (k[:, :-1] != k[:, 1:]) & land[:, :-1] & land[:, 1:]
            down = (k[:-1, :] != k[1:, :]) & land[:-1, :] & land[1:, :]
            edge[:, :-1] |= right
            edge[:-1, :] |= down
            if wide:  # the country border is two pixels wide: both sides of the line
                edge[:, 1:] |= right
                edge[1:, :] |= down
            kind[edge] = level
        coast = np.zeros((h, w), dtype=bool)
        coast[:, :-1] |= land[:, :-1] & ~land[:, 1:]
        coast[:, 1:] |= land[:, 1:] & ~land[:, :-1]
        coast[:-1, :] |= land[:-1, :] & ~land[1:, :]
        coast[1:, :] |= land[1:, :] & ~land[:-1, :]
        kind[coast] = 3
        stripe_w = max(2, px(STRIPE_REF))
        stripe = ((np.arange(w)[None, :] + np.arange(h)[:, None]) // stripe_w) % 2
        index = (pid + (geo.n + 1) * (kind + 4 * stripe)).astype(np.intp)
        pid.flags.writeable = index.flags.writeable = False
        return pid, index, MapLayers._overlay(geo, camera, px).get_buffer().raw

    @staticmethod
    def _overlay(geo: MapGeometry, camera: Camera, px) -> pygame.Surface:
        surface = pygame.Surface((camera.screen_w, camera.screen_h), pygame.SRCALPHA, 32)
        scale = camera.scale

        def screen(points: np.ndarray) -> list[tuple[float, float]]:
            ax, ay = camera.anchor
            return list(
                zip(
                    (ax + (points[:, 0] - camera.cx) * scale).tolist(),
                    (ay + (points[:, 1] - camera.cy) * scale).tolist(),
                    strict=True,
                )
            )

        zoom = scale / camera.fit_scale  # rivers, rail and cities grow a little as one zooms in
        grow = min(zoom, 2.5)
        for width, chain in geo.rivers:
            if len(chain) >= 2:
                pygame.draw.lines(surface, RIVER, False, screen(chain), px((2.5 if width == 1 else 5) * grow))
        for path in geo.railways:
            if len(path) >= 2:
                points = screen(path)
                pygame.draw.lines(surface, RAIL_DARK, False, points, px(5 * grow))
                pygame.draw.lines(surface, RAIL_LIGHT, False, points, px(2 * grow))
        font = load_font(px(17 * min(grow, 1.6)))
        for pid, name, vp, capital in geo.cities:
            x, y = screen(geo.anchors[pid : pid + 1])[0]
            r = px((4 + vp / 6) * grow)
            box = pygame.Rect(round(x) - r, round(y) - r, 2 * r + 1, 2 * r + 1)
            if capital:
                pygame.draw.rect(surface, (244, 212, 66), box)
                pygame.draw.rect(surface, (24, 20, 16), box, px(2))
            else:
                pygame.draw.ellipse(surface, (244, 242, 234), box)
                pygame.draw.ellipse(surface, (24, 20, 16), box, px(2))
            label = f"{name} {vp}"
            shadow = font.render(label, True, (16, 14, 12))
            text = font.render(label, True, (250, 246, 232))
            tx, ty = box.right + px(3), round(y) - text.get_height() // 2
            surface.blit(shadow, (tx + 1, ty + 1))
            surface.blit(text, (tx, ty))
        return surface


def palette(geo: MapGeometry, control: list[str]) -> np.ndarray:
    """Colours (uint32, R | G << 8 | B << 16, the byte order of pygame's "RGBX") for every palette index
    of `MapLayers.index` under `control` (index 0 unused, then one tag per province)."""
    n = geo.n
    tint = np.zeros((n + 1, 3))
    owner_tint = np.zeros((n + 1, 3))
    for pid in range(1, n + 1):
        tint[pid] = TINT[control[pid]]
        owner_tint[pid] = TINT[geo.arena.provinces[pid - 1].owner]
    base = TERRAIN_SHARE * geo.terrain_rgb + (1 - TERRAIN_SHARE) * tint
    striped = TERRAIN_SHARE * geo.terrain_rgb + (1 - TERRAIN_SHARE) * owner_tint
    rows = []
    for stripe in (base, striped):
        for factor in EDGE_FACTORS:
            rgb = np.clip(np.rint(stripe * factor), 0, 255).astype(np.uint32)
            rgb[0] = WATER
            rows.append(rgb[:, 0] | (rgb[:, 1] << 8) | (rgb[:, 2] << 16))
    return np.concatenate(rows)


def base_surface(layers: MapLayers, colours: np.ndarray) -> pygame.Surface:
    """The map with country colours, borders, rivers, railway and cities: one lookup and one blit."""
    h, w = layers.index.shape
    pixels = colours[layers.index]  # (H, W) uint32
    surface = pygame.Surface((w, h), 0, 32, masks=OPAQUE_MASKS)
    surface.blit(pygame.image.frombuffer(pixels.tobytes(), (w, h), "RGBX"), (0, 0))
    surface.blit(layers.overlay, (0, 0))
    return surface


OPAQUE_MASKS = (0xFF0000, 0xFF00, 0xFF, 0)


if __name__ == "__main__":
    from hoi4_arena.maps import load_arena
    from hoi4_arena.sim.ui_layout import Layout

    spec, out = (sys.argv[1:3] + [ARENA, "map.png"][len(sys.argv[1:3]) :])[:2]
    arena = load_arena(spec)
    layout = Layout((1080, 1920))
    camera = Camera(arena.size, (1080, 1920), layout["map_fit"])
    geo = geometry(arena)
    layers = MapLayers(geo, camera, layout.px)
    world_control = [""] + [p.owner for p in arena.provinces]
    pygame.image.save(base_surface(layers, palette(geo, world_control)), out)
    print(out)
