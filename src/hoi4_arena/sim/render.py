"""Drawing the simulator's screen with pygame-ce: the map, units, fronts, plans and HOI4's interface.

`Renderer.scene(ui)` returns the whole screen without the pointer (the window shows it as is and lets
SDL draw the cursor); `Renderer.rgb(ui)` the same as an (H, W, 3) uint8 array (the headless game copies
it and draws the pointer last, so the cached pictures never hold a pointer).

Rendering must not dominate a decision, so every layer is cached by exactly what it shows:

    static map      per camera            terrain, borders, rivers, railway, cities (render_map.py)
    coloured map    + control             country colours by controller, one palette lookup
    map overlay     + units, armies, drag counters, battles, fronts, offensive arrows, selection box
    scene           + interface state     top bar, alerts, banner, army bar, console, popups

Equal keys mean equal pixels: the key is built from the very values the drawing reads. A scene whose
key did not change is not drawn again; when only the date changed, only the top bar is redrawn.
`cache=False` is the naive baseline of bench/sim_screen.py: every layer and every text from scratch
on every frame.

All surfaces are 32-bit with fixed masks, so the window and the headless game run the same blits on
the same formats and get the same bytes.

Try: python -m hoi4_arena.sim.screenshots /tmp/shots
"""

from __future__ import annotations

import math
import os
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hoi4_arena.maps.model import other_tag
from hoi4_arena.sim.render_map import (
    OPAQUE_MASKS,
    TINT,
    MapGeometry,
    MapLayers,
    base_surface,
    load_font,
    palette,
)
from hoi4_arena.sim.ui_layout import MAX_CARDS, Layout, Rect

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # before pygame's import: no banner on stdout
import pygame  # noqa: E402  # isort: skip

if TYPE_CHECKING:
    from hoi4_arena.sim.interface import Interface

PANEL = (38, 36, 32)
PANEL_LIGHT = (66, 62, 54)
PANEL_EDGE = (118, 104, 70)
GOLD = (222, 186, 96)
TEXT = (236, 230, 212)
DIM = (150, 144, 130)
GREEN = (66, 170, 64)
GREEN_DARK = (34, 96, 34)
ALARM = (196, 52, 40)
ORANGE = (236, 142, 40)
COUNTER = {"BLU": (34, 62, 156), "RED": (158, 34, 26)}
SELECTED = (252, 226, 74)
FRONT = (92, 196, 84)
PLAN = (214, 58, 40)
RUNNING = (255, 140, 30)
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
TEXT_CACHE = 1024


class Marks(NamedTuple):
    """What the map overlay shows (see `Renderer._marks`)."""

    fronts: tuple  # (selected, ((province, enemy neighbour), ...)) per army with a front
    plans: tuple  # (plan provinces, executing, selected) per army with a plan
    paths: tuple  # (province, *path) per selected division on the move
    counters: tuple  # (province, tag, divisions, selected, organisation in tenths, displaced)
    battles: tuple  # (attacker's province, attacked province)
    drag: tuple  # ("box" | "arrow", start, pointer) while a drag is drawn, else ()


def date_label(date_text: str) -> str:
    """HOI4's top-bar date, "13:00, 2 January 1936", from the world's YYYY.MM.DD.HH."""
    year, month, day, hour = (int(v) for v in date_text.split("."))
    return f"{hour:02d}:00, {day} {MONTHS[month - 1]} {year}"


def surface_rgb(surface: pygame.Surface) -> np.ndarray:
    """A 32-bit surface's pixels as a new read-only (H, W, 3) uint8 RGB array.

    Three strided channel copies out of the surface's own memory: half the time of
    `pygame.image.tobytes(surface, "RGB")` for the same array (bench/frame_rgb.py)."""
    if surface.get_bytesize() != 4:
        raise ValueError(f"surface_rgb reads 32-bit surfaces, not {surface.get_bitsize()}-bit ones")
    w, h = surface.get_size()
    shifts = surface.get_shifts()[:3]
    offsets = [s // 8 if sys.byteorder == "little" else 3 - s // 8 for s in shifts]
    rgb = np.empty((h, w, 3), dtype=np.uint8)
    pixels = np.frombuffer(surface.get_buffer(), dtype=np.uint8).reshape(h, surface.get_pitch())
    for channel, offset in enumerate(offsets):
        rgb[..., channel] = pixels[:, offset : offset + 4 * w : 4]
    del pixels  # the surface stays locked while its buffer is held
    rgb.flags.writeable = False
    return rgb


class Renderer:
    """Draws one game's screen of `size` (height, width); `cache=False` redraws everything each frame."""

    def __init__(self, geo: MapGeometry, size: tuple[int, int], cache: bool = True) -> None:
        if not pygame.font.get_init():
            pygame.font.init()
        self.geo = geo
        self.size = (int(size[0]), int(size[1]))
        self.layout = Layout(self.size)
        self.cache = cache
        self._fonts: dict[int, pygame.font.Font] = {}
        self._texts: OrderedDict[tuple, pygame.Surface] = OrderedDict()
        self._layers: MapLayers | None = None
        self._coloured: tuple[tuple, pygame.Surface] | None = None
        self._overlay: tuple[tuple, pygame.Surface] | None = None
        self._scene: tuple[tuple, pygame.Surface] | None = None
        self._rgb: tuple[tuple, np.ndarray] | None = None
        self.stats = {"static": 0, "coloured": 0, "overlay": 0, "scene": 0, "top_bar": 0}

    @property
    def scene_key(self) -> tuple | None:
        """Changes whenever the scene's pixels may have changed."""
        return None if self._scene is None else self._scene[0]

    # --- the frame --------------------------------------------------------------------------------

    def rgb(self, ui: Interface) -> np.ndarray:
        """The scene as (H, W, 3) uint8 RGB; read-only and shared until the scene changes."""
        surface = self.scene(ui)
        key = self._scene[0]
        if self._rgb is None or self._rgb[0] != key or not self.cache:
            self._rgb = (key, surface_rgb(surface))
        return self._rgb[1]

    def scene(self, ui: Interface) -> pygame.Surface:
        """The whole screen without the pointer."""
        if not self.cache:
            self._texts.clear()
            self._layers = self._coloured = self._overlay = self._scene = None
        overlay_key = self._overlay_key(ui)
        ui_key = self._ui_key(ui)
        top_key = self._top_key(ui)
        key = (overlay_key, ui_key, top_key)
        if self._scene is not None and self._scene[0] == key:
            return self._scene[1]
        if self._scene is not None and self._scene[0][:2] == key[:2]:
            surface = self._scene[1]  # only the date or the speed changed: redraw just the top bar
        else:
            surface = self._scene[1] if self._scene is not None else None
            if surface is None:
                surface = pygame.Surface((self.size[1], self.size[0]), 0, 32, masks=OPAQUE_MASKS)
            surface.blit(self._map_overlay(ui, overlay_key), (0, 0))
            self._draw_interface(surface, ui)
            self.stats["scene"] += 1
        self._draw_top_bar(surface, ui)
        self.stats["top_bar"] += 1
        self._scene = (key, surface)
        return surface

    # --- cache keys: exactly what each layer reads -----------------------------------------------

    def _overlay_key(self, ui: Interface) -> tuple:
        return (ui.camera.key, tuple(ui.world.control), self._marks(ui))

    def _marks(self, ui: Interface) -> Marks:
        """Everything drawn on the map above the country colours, as plain values: the overlay is drawn
        from these alone, so equal marks are equal pixels."""
        world = ui.world
        armies = [world.armies[i] for i in ui.player_armies()]
        fronts = tuple(
            (
                army.id == ui.army,
                tuple(
                    (p, n)
                    for p in world.army_front(army.id)
                    for n in world.adj[p]
                    if world.control[n] == army.front
                ),
            )
            for army in armies
            if army.front is not None
        )
        plans = tuple((tuple(a.plan), a.executing, a.id == ui.army) for a in armies if len(a.plan) >= 2)
        chosen = set(ui.selected)
        paths = tuple(
            (d.province, *d.path)
            for d in (world.divisions.get(i) for i in ui.selected)
            if d is not None and d.path
        )
        groups: dict[tuple[int, str], list] = {}
        fights = set()
        for d in world.divisions.values():
            groups.setdefault((d.province, d.tag), []).append(d)
            if d.path and not d.resting:
                nxt = d.path[0]
                if world.control[nxt] != d.tag and world.occupants[nxt] and nxt in world.adj[d.province]:
                    fights.add((d.province, nxt))
        counters = tuple(
            (
                pid,
                tag,
                len(divs),
                any(d.id in chosen for d in divs),
                round(10 * sum(d.org for d in divs) / len(divs)),  # the organisation bar, in tenths
                tag != world.control[pid],
            )
            for (pid, tag), divs in sorted(groups.items())
        )
        return Marks(fronts, plans, paths, counters, tuple(sorted(fights)), self._drag(ui))

    def _ui_key(self, ui: Interface) -> tuple:
        world = ui.world
        return (
            ui.player,
            len(world.unassigned(ui.player)),
            self._cards(ui),
            ui.tool,
            ui.message(),
            (ui.console.open, ui.console.text, tuple(ui.console.lines)),
            tuple((p.kind, p.title, p.body) for p in ui.popups),
            world.at_war,
        )

    def _top_key(self, ui: Interface) -> tuple:
        return (
            date_label(ui.world.date_text()),
            ui.clock.paused,
            ui.clock.speed,
            ui.player,
            self._status(ui),
        )

    @staticmethod
    def _cards(ui: Interface) -> tuple:
        """Per army card, in bar order: (id, general, divisions, front, plan, execute state, selected)."""
        world, cards = ui.world, []
        for aid in ui.player_armies():
            army, state = world.armies[aid], ui.execute_state(aid)
            if state == "running":
                plan = f"Attacking {round(100 * world.plan_progress(aid))}%"
            else:
                plan = "Plan ready" if state == "ready" else "Plan done" if army.plan else "No plan"
            front = f"Front: {army.front}" if army.front else "No front"
            cards.append(
                (aid, army.name, f"{len(army.divisions)} divisions", front, plan, state, aid == ui.army)
            )
        return tuple(cards)

    @staticmethod
    def _status(ui: Interface) -> str:
        world, enemy = ui.world, other_tag(ui.player)
        if not world.at_war:
            return "PEACE"
        ours, theirs = (round(100 * world.surrender[t]) for t in (ui.player, enemy))
        return f"AT WAR   surrender {ui.player} {ours}%  {enemy} {theirs}%"

    @staticmethod
    def _drag(ui: Interface) -> tuple:
        left = ui.presses.get("left")
        if left is not None and left.dragged and not left.used:
            return ("box", left.start, ui.pointer)
        right = ui.presses.get("right")
        if right is not None and right.dragged and not right.used and ui.tool == "offensive":
            return ("arrow", right.start, ui.pointer)
        return ()

    # --- the map ----------------------------------------------------------------------------------

    def _coloured_map(self, ui: Interface) -> pygame.Surface:
        camera = ui.camera
        if self._layers is None or self._layers.key != camera.key:
            self._layers = MapLayers(self.geo, camera, self.layout.px, keep=self.cache)
            self.stats["static"] += 1
        key = (camera.key, tuple(ui.world.control))
        if self._coloured is None or self._coloured[0] != key:
            self._coloured = (key, base_surface(self._layers, palette(self.geo, ui.world.control)))
            self.stats["coloured"] += 1
        return self._coloured[1]

    def _map_overlay(self, ui: Interface, key: tuple) -> pygame.Surface:
        if self._overlay is not None and self._overlay[0] == key:
            return self._overlay[1]
        marks: Marks = key[2]
        surface = self._coloured_map(ui).copy()
        self._draw_fronts(surface, ui, marks.fronts)
        for route in marks.paths:  # where the selected divisions are walking to
            points = [self._screen(ui, p) for p in route]
            pygame.draw.lines(surface, (246, 244, 236), False, points, self.layout.px(2))
        self._draw_counters(surface, ui, marks.counters)
        self._draw_battles(surface, ui, marks.battles)
        for plan, executing, chosen in marks.plans:  # over the counters: never hidden under its own army
            points = [self._screen(ui, p) for p in plan]
            self._arrow(surface, points, RUNNING if executing else PLAN, self.layout.px(9 if chosen else 6))
        if marks.drag:
            kind, (x0, y0), (x1, y1) = marks.drag
            if kind == "box":
                box = pygame.Rect(min(x0, x1), min(y0, y1), abs(x1 - x0) + 1, abs(y1 - y0) + 1)
                pygame.draw.rect(surface, (130, 236, 120), box, self.layout.px(2))
            elif (x0, y0) != (x1, y1):
                self._arrow(surface, [(x0, y0), (x1, y1)], PLAN, self.layout.px(6))
        self._overlay = (key, surface)
        self.stats["overlay"] += 1
        return surface

    def _screen(self, ui: Interface, pid: int) -> tuple[float, float]:
        return ui.camera.to_screen(*self.geo.anchors[pid])

    def _screen_points(self, ui: Interface, points: np.ndarray) -> list[tuple[float, float]]:
        camera = ui.camera
        scale, (ax, ay) = camera.scale, camera.anchor
        xs = ax + (points[:, 0] - camera.cx) * scale
        ys = ay + (points[:, 1] - camera.cy) * scale
        return list(zip(xs.tolist(), ys.tolist(), strict=True))

    def _draw_fronts(self, surface: pygame.Surface, ui: Interface, fronts: tuple) -> None:
        """Each army's front line along its provinces' borders with the enemy (the selected one gold)."""
        px = self.layout.px
        for chosen, pairs in fronts:
            colour, width = (SELECTED, px(7)) if chosen else (FRONT, px(5))
            for p, n in pairs:
                chain = self.geo.chain(p, n)
                if len(chain) >= 2:
                    pygame.draw.lines(surface, colour, False, self._screen_points(ui, chain), width)

    def _arrow(self, surface: pygame.Surface, points: list, colour: tuple, width: int) -> None:
        """A thick polyline with an arrowhead at its end, outlined so it reads on any terrain."""
        (x0, y0), (x1, y1) = points[-2], points[-1]
        angle = math.atan2(y1 - y0, x1 - x0)
        head = width * 2.6
        tip = (x1 + math.cos(angle) * head * 0.4, y1 + math.sin(angle) * head * 0.4)
        left = (tip[0] - head * math.cos(angle - 0.5), tip[1] - head * math.sin(angle - 0.5))
        right = (tip[0] - head * math.cos(angle + 0.5), tip[1] - head * math.sin(angle + 0.5))
        pygame.draw.lines(surface, (30, 20, 16), False, points, width + 2 * self.layout.px(1.5))
        pygame.draw.lines(surface, colour, False, points, width)
        pygame.draw.polygon(surface, (30, 20, 16), [tip, left, right])
        inset = self.layout.px(2)
        pygame.draw.polygon(
            surface,
            colour,
            [
                (tip[0] - inset * math.cos(angle), tip[1] - inset * math.sin(angle)),
                (left[0] + inset * math.cos(angle), left[1] + inset * math.sin(angle)),
                (right[0] + inset * math.cos(angle), right[1] + inset * math.sin(angle)),
            ],
        )

    def _draw_counters(self, surface: pygame.Surface, ui: Interface, counters: tuple) -> None:
        """One counter per province and side: the number of divisions, the mean organisation below."""
        px = self.layout.px
        w, h = px(40), px(24)
        for pid, tag, count, selected, org_tenths, displaced in counters:
            x, y = self._screen(ui, pid)
            if displaced:  # an attacker standing in a province it just took: beside the defender's
                x += w * 0.6
            rect = pygame.Rect(round(x) - w // 2, round(y) - h // 2, w, h)
            if not rect.colliderect(surface.get_rect()):
                continue
            fill = COUNTER[tag]
            if selected:
                fill = tuple(min(255, c + 60) for c in fill)
            pygame.draw.rect(surface, fill, rect)
            edge, width = (SELECTED, px(3)) if selected else ((14, 12, 10), px(1.5))
            pygame.draw.rect(surface, edge, rect, width)
            self._blit_text(surface, str(count), 22, (250, 250, 250), rect, "center")
            bar = pygame.Rect(rect.x, rect.bottom, rect.w, px(5))
            pygame.draw.rect(surface, (20, 18, 16), bar)
            pygame.draw.rect(surface, (80, 200, 70), (bar.x, bar.y, round(bar.w * org_tenths / 10), bar.h))

    def _draw_battles(self, surface: pygame.Surface, ui: Interface, battles: tuple) -> None:
        """Crossed swords on every border where a division attacks this hour."""
        px = self.layout.px
        r = px(11)
        for a, b in battles:
            (xa, ya), (xb, yb) = self._screen(ui, a), self._screen(ui, b)
            x, y = round(xa + (xb - xa) * 0.6), round(ya + (yb - ya) * 0.6)
            pygame.draw.circle(surface, (24, 18, 14), (x, y), r + px(3))
            pygame.draw.line(surface, (250, 226, 120), (x - r, y - r), (x + r, y + r), px(3))
            pygame.draw.line(surface, (250, 226, 120), (x - r, y + r), (x + r, y - r), px(3))

    # --- the interface ----------------------------------------------------------------------------

    def _font(self, ref: float) -> pygame.font.Font:
        size = self.layout.px(ref)
        font = self._fonts.get(size)
        if font is None:
            font = self._fonts[size] = load_font(size)
        return font

    def _text(self, text: str, ref: float, colour: tuple) -> pygame.Surface:
        key = (text, ref, colour)
        found = self._texts.get(key)
        if found is not None:
            self._texts.move_to_end(key)
            return found
        surface = self._font(ref).render(text, True, colour)
        self._texts[key] = surface
        if len(self._texts) > TEXT_CACHE:
            self._texts.popitem(last=False)
        return surface

    def _blit_text(
        self,
        surface: pygame.Surface,
        text: str,
        ref: float,
        colour: tuple,
        rect: Rect | pygame.Rect,
        align: str,
    ) -> None:
        """Text vertically centred in `rect`, aligned left (with a margin), centre or right."""
        rendered = self._text(text, ref, colour)
        x, y, w, h = rect
        ty = y + (h - rendered.get_height()) // 2
        margin = self.layout.px(10)
        if align == "center":
            tx = x + (w - rendered.get_width()) // 2
        elif align == "right":
            tx = x + w - margin - rendered.get_width()
        else:
            tx = x + margin
        surface.blit(rendered, (tx, ty))

    def _wrap(self, text: str, ref: float, width: int) -> list[str]:
        """`text` broken into lines no wider than `width` pixels at font size `ref`."""
        font = self._font(ref)
        lines: list[str] = []
        for word in text.split():
            if lines and font.size(f"{lines[-1]} {word}")[0] <= width:
                lines[-1] = f"{lines[-1]} {word}"
            else:
                lines.append(word)
        return lines

    def _panel(
        self, surface: pygame.Surface, rect: Rect, fill=PANEL, edge=PANEL_EDGE, width: float = 2
    ) -> None:
        pygame.draw.rect(surface, fill, rect)
        pygame.draw.rect(surface, edge, rect, self.layout.px(width))

    def _button(self, surface: pygame.Surface, rect: Rect, label: str, fill=PANEL_LIGHT) -> None:
        self._panel(surface, rect, fill, GOLD, 2)
        self._blit_text(surface, label, 26, TEXT, rect, "center")

    def _draw_interface(self, surface: pygame.Surface, ui: Interface) -> None:
        self._draw_alerts(surface, ui)
        self._draw_banner(surface, ui)
        self._draw_army_bar(surface, ui)
        if ui.console.open:
            self._draw_console(surface, ui)
        for index in range(len(ui.popups)):
            self._draw_popup(surface, ui, index)

    def _flag(self, surface: pygame.Surface, rect: Rect, tag: str) -> None:
        """A simple flag per country: BLU a cross, RED a disc, on the country's colour."""
        px = self.layout.px
        pygame.draw.rect(surface, TINT[tag], rect)
        x, y, w, h = rect
        if tag == "BLU":
            pygame.draw.rect(surface, (240, 236, 220), (x + w * 5 // 16, y, max(1, w // 8), h))
            pygame.draw.rect(surface, (240, 236, 220), (x, y + h * 7 // 16, w, max(1, h // 8)))
        else:
            pygame.draw.circle(surface, (240, 236, 220), (x + w // 2, y + h // 2), max(2, h // 4))
        pygame.draw.rect(surface, (16, 14, 12), rect, px(2))

    def _draw_top_bar(self, surface: pygame.Surface, ui: Interface) -> None:
        layout, px = self.layout, self.layout.px
        bar = layout["top_bar"]
        pygame.draw.rect(surface, PANEL, bar)
        pygame.draw.line(surface, GOLD, (bar.x, bar.bottom - 1), (bar.right, bar.bottom - 1), px(2))
        enemy = other_tag(ui.player)
        self._flag(surface, layout["flag_player"], ui.player)
        self._blit_text(surface, ui.player, 30, TEXT, layout["tag_player"], "left")
        self._flag(surface, layout["flag_enemy"], enemy)
        self._blit_text(surface, enemy, 30, TEXT, layout["tag_enemy"], "right")
        status = self._status(ui)
        colour = DIM if status == "PEACE" else (240, 120, 100)
        self._blit_text(surface, status, 24, colour, layout["war_status"], "left")
        date_box = layout["date_box"]
        paused = ui.clock.paused
        self._panel(surface, date_box, (110, 30, 24) if paused else PANEL_LIGHT, GOLD, 2)
        self._blit_text(surface, date_label(ui.world.date_text()), 28, TEXT, date_box, "center")
        speed_box = layout["speed_box"]
        self._panel(surface, speed_box, PANEL_LIGHT, ALARM if paused else GOLD, 2)
        pip = px(18)
        gap = px(7)
        x0 = speed_box.x + px(10)
        for i in range(5):
            on = i < ui.clock.speed
            colour = (DIM if paused else GREEN) if on else (30, 28, 26)
            rect = pygame.Rect(x0 + i * (pip + gap), speed_box.y + (speed_box.h - pip) // 2, pip, pip)
            pygame.draw.rect(surface, colour, rect)
            pygame.draw.rect(surface, (14, 12, 10), rect, px(1.5))
        label_rect = Rect(
            x0 + 5 * (pip + gap), speed_box.y, speed_box.right - x0 - 5 * (pip + gap), speed_box.h
        )
        if paused:
            self._blit_text(surface, "PAUSED", 22, (255, 110, 90), label_rect, "left")
        else:
            self._blit_text(surface, f"SPEED {ui.clock.speed}", 22, TEXT, label_rect, "left")

    def _draw_alerts(self, surface: pygame.Surface, ui: Interface) -> None:
        count = len(ui.world.unassigned(ui.player))
        if not count:
            return
        rect, px = self.layout["alert_unassigned"], self.layout.px
        self._panel(surface, rect, (120, 36, 28), GOLD, 2)
        icon = pygame.Rect(rect.x + px(8), rect.y + px(10), px(40), rect.h - px(20))
        pygame.draw.rect(surface, (236, 226, 200), icon)
        pygame.draw.rect(surface, (20, 16, 12), icon, px(2))
        pygame.draw.line(surface, (20, 16, 12), (icon.x, icon.y), (icon.right - 1, icon.bottom - 1), px(2))
        pygame.draw.line(surface, (20, 16, 12), (icon.x, icon.bottom - 1), (icon.right - 1, icon.y), px(2))
        text_rect = Rect(icon.right, rect.y, rect.right - icon.right, rect.h)
        self._blit_text(surface, f"Unassigned divisions ({count})", 24, TEXT, text_rect, "left")

    def _draw_banner(self, surface: pygame.Surface, ui: Interface) -> None:
        from hoi4_arena.sim.interface import BANNERS

        if ui.tool is not None:
            rect = self.layout["banner"]
            self._panel(surface, rect, (24, 22, 18), SELECTED, 3)
            self._blit_text(surface, BANNERS[ui.tool], 28, SELECTED, rect, "center")
        message = ui.message()
        if message:
            rect = self.layout["toast"]
            self._panel(surface, rect, (24, 22, 18), PANEL_EDGE, 1.5)
            self._blit_text(surface, message[:90], 22, TEXT, rect, "center")

    def _draw_army_bar(self, surface: pygame.Surface, ui: Interface) -> None:
        layout, px = self.layout, self.layout.px
        bar = layout["army_bar"]
        pygame.draw.rect(surface, PANEL, bar)
        pygame.draw.line(surface, GOLD, (bar.x, bar.y), (bar.right, bar.y), px(2))
        plus = layout["new_army"]
        self._panel(surface, plus, GREEN, (20, 60, 20), 2)
        cx, cy = plus.center
        arm, thick = plus.w * 3 // 10, max(2, plus.w // 8)
        pygame.draw.rect(surface, (245, 245, 235), (cx - arm, cy - thick // 2, 2 * arm, thick))
        pygame.draw.rect(surface, (245, 245, 235), (cx - thick // 2, cy - arm, thick, 2 * arm))
        cards = self._cards(ui)
        for i, (_, name, divisions, front, plan, state, chosen) in enumerate(cards[:MAX_CARDS]):
            card = layout.card(i)
            fill, edge = ((88, 80, 58), SELECTED) if chosen else (PANEL_LIGHT, PANEL_EDGE)
            self._panel(surface, card, fill, edge, 4 if chosen else 2)
            row = card.h // 4
            rows = [
                (name, 26, SELECTED if chosen else TEXT),
                (divisions, 22, TEXT),
                (front, 18, DIM),
                (plan, 18, DIM),
            ]
            for r, (text, size, colour) in enumerate(rows):
                top = card.y + (px(4) if r == 0 else r * row - (px(4) if r == 3 else 0))
                self._blit_text(surface, text, size, colour, Rect(card.x, top, card.w, row), "left")
            self._execute_arrow(surface, layout.execute(i), state)
        if len(cards) > MAX_CARDS:
            self._blit_text(surface, f"+{len(cards) - MAX_CARDS}", 24, TEXT, layout["cards_more"], "center")

    def _execute_arrow(self, surface: pygame.Surface, rect: Rect, state: str) -> None:
        """HOI4's execute button: grey without a plan, green when ready, orange (with a halt bar) while
        the plan runs."""
        px = self.layout.px
        fill = {"inactive": (70, 66, 60), "ready": GREEN, "running": ORANGE}[state]
        self._panel(surface, rect, (28, 26, 22), GOLD if state != "inactive" else PANEL_EDGE, 2)
        x, y, w, h = rect
        m = px(8)
        body = [(x + m, y + h // 2 - h // 6), (x + w // 2, y + h // 2 - h // 6), (x + w // 2, y + m // 2 + 1)]
        body += [(x + w - m, y + h // 2), (x + w // 2, y + h - m // 2 - 1), (x + w // 2, y + h // 2 + h // 6)]
        body += [(x + m, y + h // 2 + h // 6)]
        pygame.draw.polygon(surface, fill, body)
        pygame.draw.polygon(surface, (16, 14, 12), body, px(1.5))
        if state == "running":
            pygame.draw.rect(surface, (16, 14, 12), (x + m, y + m // 2, px(5), h - m))

    def _draw_console(self, surface: pygame.Surface, ui: Interface) -> None:
        rect, px = self.layout["console"], self.layout.px
        shade = pygame.Surface((rect.w, rect.h), pygame.SRCALPHA, 32)
        shade.fill((10, 10, 12, 226))
        surface.blit(shade, (rect.x, rect.y))
        pygame.draw.rect(surface, GOLD, rect, px(2))
        line_h = px(26)
        lines = ui.console.lines
        room = (rect.h - px(16)) // line_h - 1
        for i, line in enumerate(lines[-room:]):
            self._blit_text(
                surface,
                line[:80],
                22,
                (200, 220, 200),
                Rect(rect.x, rect.y + px(6) + i * line_h, rect.w, line_h),
                "left",
            )
        prompt = Rect(rect.x, rect.bottom - line_h - px(8), rect.w, line_h)
        pygame.draw.line(
            surface, PANEL_EDGE, (rect.x, prompt.y - px(3)), (rect.right - 1, prompt.y - px(3)), 1
        )
        self._blit_text(surface, f"> {ui.console.text}_", 24, (250, 250, 240), prompt, "left")

    def _draw_popup(self, surface: pygame.Surface, ui: Interface, index: int) -> None:
        popup, px = ui.popups[index], self.layout.px
        window, buttons = ui.popup_rects(index)
        self._panel(surface, window, (46, 42, 36), GOLD, 3)
        title_h = px(56 if popup.kind == "news" else 48)
        title = Rect(window.x, window.y, window.w, title_h)
        pygame.draw.rect(surface, (70, 58, 38), title)
        pygame.draw.line(surface, GOLD, (title.x, title.bottom), (title.right - 1, title.bottom), px(2))
        if popup.kind == "victory":
            self._blit_text(surface, "THE WAR IS OVER", 20, GOLD, title, "left")
            colour = {"VICTORY": GOLD, "DEFEAT": (240, 90, 70)}.get(popup.title, TEXT)
            self._blit_text(
                surface,
                popup.title,
                88,
                colour,
                Rect(window.x, window.y + px(40), window.w, px(120)),
                "center",
            )
            body_y = window.y + px(190)
        else:
            label = "NEWS" if popup.kind == "news" else "EVENT" if popup.kind == "event" else "DIPLOMACY"
            self._blit_text(surface, label, 20, GOLD, title, "left")
            self._blit_text(surface, popup.title, 30, TEXT, title, "center")
            body_y = title.bottom + px(24)
            if popup.kind == "news":
                picture = Rect(window.x + px(30), body_y, window.w - px(60), px(150))
                self._newspaper(surface, picture, ui)
                body_y = picture.bottom + px(20)
        width = window.w - px(40)
        lines = [part for line in popup.body for part in self._wrap(line, 24, width - px(20))]
        for i, line in enumerate(lines):
            row = Rect(window.x + px(20), body_y + i * px(32), width, px(32))
            self._blit_text(surface, line, 24, TEXT, row, "left")
        for label, rect in buttons:
            self._button(surface, rect, label)

    def _newspaper(self, surface: pygame.Surface, rect: Rect, ui: Interface) -> None:
        """The news window's picture: the two flags facing each other over a headline."""
        px = self.layout.px
        pygame.draw.rect(surface, (214, 204, 180), rect)
        pygame.draw.rect(surface, (40, 34, 26), rect, px(2))
        fw, fh = px(120), px(76)
        self._flag(surface, Rect(rect.x + px(40), rect.y + (rect.h - fh) // 2, fw, fh), ui.player)
        self._flag(
            surface, Rect(rect.right - px(40) - fw, rect.y + (rect.h - fh) // 2, fw, fh), other_tag(ui.player)
        )
        self._blit_text(surface, "WAR CLOUDS GATHER", 30, (30, 24, 18), rect, "center")
