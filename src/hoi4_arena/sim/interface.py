"""The simulator's interface: what a click or a key does, as in HOI4. Pure state, no drawing.

`Interface.handle(event)` takes one `SimEvent` and turns it into UI state (camera, selection, tools,
console, popups) and world orders through the world's order API; `tick(ns)` lets interface time pass
(held pan keys, the screen edge, messages that fade). `render.py` draws whatever state this holds, so
every step of a sequence is visible in pixels: the selection, the active tool's banner, the plan, the
execute arrow's state, the pause, the open console and popups.

What the player can do (the left button acts when pressed on buttons, on release on the map):

    alert "Unassigned divisions"  click: select them; shift+click: select them and form an army
    green + (army bar)            an army from the selected divisions
    army card                     select the army (and its divisions)
    execute arrow (above a card)  execute the army's plan; again: halt
    map, left click / box drag    select own divisions in the province / in the box (shift adds)
    map, right click              move the selected divisions there
    Z, then click enemy land      the selected army's front against that country
    X, then right-drag            an offensive from the front province under the drag's start to the
                                  enemy province under its end
    enemy flag (top bar)          diplomacy: declare war
    W A S D / arrows, middle-drag, screen edge: pan; wheel: zoom
    space: pause; = and -: speed; `: console; Esc: close the console, cancel the tool, deselect

Orders the world refuses are answered by a message on the screen, never an exception.

Try: python -m pytest -q tests/sim/test_interface.py
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.sim import popups
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.camera import Camera
from hoi4_arena.sim.clock import GameClock
from hoi4_arena.sim.console import HELP, Command, Console, parse
from hoi4_arena.sim.input import SimEvent, problem
from hoi4_arena.sim.render_map import MapGeometry
from hoi4_arena.sim.ui_layout import MAX_CARDS, Layout
from hoi4_arena.sim.world import OrderRefused, World

PAN_KEYS = {
    "w": (0, -1),
    "up": (0, -1),
    "s": (0, 1),
    "down": (0, 1),
    "a": (-1, 0),
    "left": (-1, 0),
    "d": (1, 0),
    "right": (1, 0),
}
PAN_SPEED_REF = 900.0  # screen pixels per second at 1080p, for held keys and the screen edge
PAN_TAP_REF = 48.0  # a key press pans this much at once, so a short tap is never lost
EDGE_PX = 2  # the pointer this close to the screen's edge pans, like HOI4 full screen
DRAG_REF = 6  # the pointer must move this far (1080p pixels) before a press becomes a drag
TOAST_NS = 4_000_000_000
BANNERS = {
    "front": "Front line: click an enemy country",
    "offensive": "Offensive: right-drag from the front into enemy land",
}


@dataclass
class Press:
    """A mouse button held down: where it went down and whether the interface already used it."""

    button: str
    start: tuple[int, int]
    start_pid: int
    used: bool = False
    dragged: bool = False


class Interface:
    """The UI state machine of one game, played as `player`; `ais` are the sides the game's AI plays
    (the console's `tag` swaps them)."""

    def __init__(
        self,
        world: World,
        geo: MapGeometry,
        size: tuple[int, int],
        player: str,
        clock: GameClock,
        ais: dict[str, GameAI],
        seed: int,
    ) -> None:
        self.world = world
        self.geo = geo
        self.size = (int(size[0]), int(size[1]))
        self.layout = Layout(self.size)
        self.camera = Camera(geo.arena.size, self.size, self.layout["map_fit"])
        self.player = player
        self.clock = clock
        self.ais = ais
        self.coin = random.Random(f"coin-{seed}")
        self.pointer = (self.size[1] // 2, self.size[0] // 2)
        self.inside = True  # the window clears this while the pointer is outside it
        self.keys: set[str] = set()
        self.pan_keys: set[str] = set()
        self.presses: dict[str, Press] = {}
        self.selected: tuple[int, ...] = ()
        self.army: int | None = None
        self.tool: str | None = None
        self.console = Console()
        self.popups: list[popups.Popup] = []
        self.toast: tuple[str, int] | None = None
        self.ignored = 0  # events dropped as bad input

    # --- reading ----------------------------------------------------------------------------------

    @property
    def enemy(self) -> str:
        return other_tag(self.player)

    def province_at(self, x: int, y: int) -> int:
        """The province drawn at screen pixel (x, y), 0 for water or off the map."""
        rx, ry = self.camera.to_raster(x, y)
        if not (0 <= rx < self.geo.width and 0 <= ry < self.geo.height):
            return 0
        return int(self.geo.arena.raster[ry, rx])

    def province_screen(self, pid: int) -> tuple[int, int]:
        """A screen pixel at the province's anchor (where its counter sits) that shows the province
        itself: a click there lands on it (the nearest such pixel when zoomed far out)."""
        sx, sy = self.camera.to_screen(*self.geo.anchors[pid])
        x, y = math.floor(sx), math.floor(sy)
        for r in range(4):
            for dy in range(-r, r + 1):
                for dx in range(-r, r + 1):
                    if max(abs(dx), abs(dy)) == r and self.province_at(x + dx, y + dy) == pid:
                        return x + dx, y + dy
        return x, y

    def player_armies(self) -> list[int]:
        """The player's armies in card order (by id)."""
        return sorted(a.id for a in self.world.armies.values() if a.tag == self.player)

    def execute_state(self, army_id: int) -> str:
        """The execute arrow of an army: inactive (no plan left to take), ready, or running."""
        army = self.world.armies[army_id]
        if army.executing:
            return "running"
        if any(self.world.control[p] != army.tag for p in army.plan[1:]):
            return "ready"
        return "inactive"

    def message(self) -> str | None:
        if self.toast is None or self.clock.ui_ns >= self.toast[1]:
            return None
        return self.toast[0]

    def state(self) -> dict:
        """The UI state (for tests and training only)."""
        return {
            "player": self.player,
            "ais": sorted(self.ais),
            "pointer": list(self.pointer),
            "camera": self.camera.state(),
            "selected": list(self.selected),
            "army": self.army,
            "armies": [{"id": a, "execute": self.execute_state(a)} for a in self.player_armies()],
            "tool": self.tool,
            "banner": BANNERS.get(self.tool or ""),
            "message": self.message(),
            "paused": self.clock.paused,
            "speed": self.clock.speed,
            "console": {
                "open": self.console.open,
                "text": self.console.text,
                "lines": list(self.console.lines),
            },
            "popups": [p.to_dict() for p in self.popups],
            "ignored": self.ignored,
        }

    # --- events -----------------------------------------------------------------------------------

    def handle(self, event: SimEvent) -> bool:
        """Apply one event; False (and nothing changes) when it is bad input."""
        if problem(event, self.size) is not None:
            self.ignored += 1
            return False
        kind = event.kind
        if kind == "move":
            self._move(int(event.x), int(event.y))
        elif kind == "button_down":
            self._press(event.button)
        elif kind == "button_up":
            self._release(event.button)
        elif kind == "wheel":
            if self._over_map(*self.pointer):
                self.camera.zoom_at(int(event.delta), *self.pointer)
        elif kind == "key_down":
            self._key_down(event.key)
        else:
            self.keys.discard(event.key)
            self.pan_keys.discard(event.key)
        return True

    def release_all(self) -> None:
        """Forget held keys and buttons (the window lost focus): nothing stays pressed."""
        self.keys.clear()
        self.pan_keys.clear()
        self.presses.clear()

    def tick(self, ns: int) -> None:
        """Interface time passes: held pan keys and the screen edge move the camera."""
        dx = sum(PAN_KEYS[k][0] for k in self.pan_keys)
        dy = sum(PAN_KEYS[k][1] for k in self.pan_keys)
        if self.inside:
            x, y = self.pointer
            dx += (x >= self.size[1] - EDGE_PX) - (x < EDGE_PX)
            dy += (y >= self.size[0] - EDGE_PX) - (y < EDGE_PX)
        dx, dy = max(-1, min(1, dx)), max(-1, min(1, dy))
        if dx or dy:
            step = PAN_SPEED_REF * self.layout.fy * ns / 1e9
            self.camera.pan(dx * step, dy * step)

    # --- pointer ----------------------------------------------------------------------------------

    def _move(self, x: int, y: int) -> None:
        old = self.pointer
        self.pointer = (x, y)
        middle = self.presses.get("middle")
        if middle is not None:
            self.camera.pan(old[0] - x, old[1] - y)
        limit = DRAG_REF * self.layout.fy
        for press in self.presses.values():
            if abs(x - press.start[0]) > limit or abs(y - press.start[1]) > limit:
                press.dragged = True

    def _over_map(self, x: int, y: int) -> bool:
        """Whether (x, y) is map, not an interface element or a window covering the map."""
        return self._hit_ui(x, y) is None

    def _hit_ui(self, x: int, y: int) -> tuple[str, int] | None:
        """The interface element at (x, y), topmost first: (name, index) or None for the bare map."""
        layout = self.layout
        for i in range(len(self.popups) - 1, -1, -1):
            hit = self._hit_popup(i, x, y)
            if hit is not None:
                return hit
        if self.console.open and layout["console"].contains(x, y):
            return ("console", 0)
        if layout["top_bar"].contains(x, y):
            if layout["flag_enemy"].contains(x, y) or layout["tag_enemy"].contains(x, y):
                return ("enemy_flag", 0)
            return ("top_bar", 0)
        if self.world.unassigned(self.player) and layout["alert_unassigned"].contains(x, y):
            return ("alert", 0)
        armies = self.player_armies()
        for i in range(min(len(armies), MAX_CARDS)):
            if layout.execute(i).contains(x, y):
                return ("execute", i)
        if layout["army_bar"].contains(x, y):
            if layout["new_army"].contains(x, y):
                return ("new_army", 0)
            for i in range(min(len(armies), MAX_CARDS)):
                if layout.card(i).contains(x, y):
                    return ("card", i)
            return ("army_bar", 0)
        return None

    def popup_rects(self, index: int) -> tuple:
        """The window and its buttons [(label, rect), ...] of the `index`-th open popup."""
        popup, layout = self.popups[index], self.layout
        if popup.kind == "news":
            return layout["news"], [("OK", layout["news_ok"])]
        if popup.kind == "diplomacy":
            declare = [] if self.world.at_war else [("Declare war", layout["diplomacy_declare"])]
            return layout["diplomacy"], [*declare, ("Close", layout["diplomacy_close"])]
        if popup.kind == "victory":
            return layout["victory"], [("Close", layout["victory_close"])]
        events = sum(1 for p in self.popups[:index] if p.kind == "event")
        window, ok = layout.event(events % 6)
        return window, [("OK", ok)]

    def _hit_popup(self, index: int, x: int, y: int) -> tuple[str, int] | None:
        window, buttons = self.popup_rects(index)
        for label, rect in buttons:
            if rect.contains(x, y):
                return (f"popup:{label}", index)
        if window.contains(x, y):
            return ("popup", index)
        return None

    def _press(self, button: str) -> None:
        x, y = self.pointer
        hit = self._hit_ui(x, y)
        press = Press(button, (x, y), self.province_at(x, y) if hit is None else 0, used=hit is not None)
        self.presses[button] = press
        if hit is None:
            if button == "left" and self.tool == "front":
                press.used = True
                self._assign_front(press.start_pid)
            elif button == "left" and self.tool == "offensive":
                press.used = True
                self._say("Right-drag from the front into enemy land (Esc cancels)")
            return
        if button == "left":
            self._click_ui(*hit)

    def _release(self, button: str) -> None:
        press = self.presses.pop(button, None)
        if press is None or press.used:
            return
        x, y = self.pointer
        if button == "left":
            self._select(press)
        elif button == "right":
            target = self.province_at(x, y) if self._over_map(x, y) else 0
            if self.tool == "offensive":
                self._draw_offensive(press.start_pid, target, press.dragged)
            elif target and self.selected:
                self._move_selected(target)

    # --- buttons ----------------------------------------------------------------------------------

    def _click_ui(self, name: str, index: int) -> None:
        if name.startswith("popup:"):
            self._popup_button(name.removeprefix("popup:"), index)
        elif name == "enemy_flag":
            if not any(p.kind == "diplomacy" for p in self.popups):
                self.popups.append(popups.diplomacy(self.enemy, self.world.at_war))
        elif name == "alert":
            self._unassigned(form="shift" in self.keys)
        elif name == "new_army":
            self._new_army()
        elif name == "card":
            self._select_army(self.player_armies()[index])
        elif name == "execute":
            self._execute(self.player_armies()[index])

    def _popup_button(self, label: str, index: int) -> None:
        if label == "Declare war":
            self._order(
                lambda: self.world.declare_war(self.player), f"{self.player} declares war on {self.enemy}"
            )
        del self.popups[index]

    def _unassigned(self, form: bool) -> None:
        ids = self.world.unassigned(self.player)
        if not form:
            self._set_selection(ids, None)
            return
        ids = ids[: self.world.rules.max_army_size]
        ok, army = self._order(lambda: self.world.form_army(self.player, ids), None)
        if ok:
            self._select_army(army)
            self._say(f"{self.world.armies[army].name}'s army formed ({len(ids)} divisions)")

    def _new_army(self) -> None:
        if not self.selected:
            self._say("Select divisions first: click or drag on the map, or click the alert")
            return
        ids = list(self.selected)
        ok, army = self._order(lambda: self.world.form_army(self.player, ids), None)
        if ok:
            self._select_army(army)
            self._say(f"{self.world.armies[army].name}'s army formed ({len(ids)} divisions)")

    def _select_army(self, army_id: int) -> None:
        self._set_selection(self.world.armies[army_id].divisions, army_id)

    def _execute(self, army_id: int) -> None:
        army = self.world.armies[army_id]
        if army.executing:
            self._order(lambda: self.world.halt(army_id), f"{army.name}'s army halts")
        else:
            self._order(lambda: self.world.execute(army_id), f"{army.name}'s army attacks")

    # --- map --------------------------------------------------------------------------------------

    def _select(self, press: Press) -> None:
        add = "shift" in self.keys
        if press.dragged:
            (x0, y0), (x1, y1) = press.start, self.pointer
            left, right, top, bottom = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
            ids = []
            for d in self.world.divisions.values():
                if d.tag == self.player:
                    x, y = self.province_screen(d.province)
                    if left <= x <= right and top <= y <= bottom:
                        ids.append(d.id)
        else:
            pid = press.start_pid
            ids = [d.id for d in self.world.divisions.values() if d.tag == self.player and d.province == pid]
        if add:
            ids = [*self.selected, *ids]
        self._set_selection(ids, None)

    def _set_selection(self, ids, army: int | None) -> None:
        self.selected = tuple(sorted(set(ids)))
        if army != self.army:
            self.tool = None  # a tool belongs to the army it was picked for
        self.army = army

    def _move_selected(self, target: int) -> None:
        moved, refusal = 0, ""
        for did in self.selected:
            try:
                self.world.move(did, target)
                moved += 1
            except OrderRefused as error:
                refusal = str(error)
        if moved:
            self._say(f"{moved} division{'s' * (moved != 1)} moving to province {target}")
            if self.army is not None and self.army not in self.world.armies:
                self.army = None
        else:
            self._say(refusal)
        self.prune()

    def _assign_front(self, pid: int) -> None:
        if self.army is None or self.army not in self.world.armies:
            self.tool = None
            return
        holder = self.world.controller(pid) if pid else None
        if holder is None or holder == self.player:
            self._say("Click an enemy country's land to assign the front")
            return
        army = self.army
        name = self.world.armies[army].name
        ok, _ = self._order(
            lambda: self.world.assign_front(army, holder), f"{name}'s army holds the front against {holder}"
        )
        if ok:
            self.tool = None

    def _draw_offensive(self, start: int, target: int, dragged: bool) -> None:
        if self.army is None or self.army not in self.world.armies:
            self.tool = None
            return
        if not dragged or not start or not target:
            self._say("Right-drag from the front into enemy land")
            return
        army = self.army
        ok, path = self._order(lambda: self.world.draw_offensive(army, target, start=start), None)
        if ok:
            self.tool = None
            steps = len(path) - 1
            self._say(f"Offensive planned: {steps} province{'s' * (steps != 1)} to {target}")

    # --- keys -------------------------------------------------------------------------------------

    def _key_down(self, key: str) -> None:
        self.keys.add(key)
        if self.console.open:
            if key in ("`", "escape"):
                self.console.open = False
            elif key not in ("shift", "ctrl", "f12"):
                line = self.console.type_key(key, "shift" in self.keys)
                if line is not None:
                    self._run(line)
            return
        if key in PAN_KEYS:
            self.pan_keys.add(key)
            tap = PAN_TAP_REF * self.layout.fy
            self.camera.pan(PAN_KEYS[key][0] * tap, PAN_KEYS[key][1] * tap)
        elif key == "`":
            self.console.open = True
        elif key == "space":
            self.clock.paused = not self.clock.paused
        elif key == "=":
            self.clock.set_speed(self.clock.speed + 1)
        elif key == "-":
            self.clock.set_speed(self.clock.speed - 1)
        elif key == "escape":
            if self.tool is not None:
                self.tool = None
            else:
                self._set_selection((), None)
        elif key == "z":
            self._pick_tool("front")
        elif key == "x":
            self._pick_tool("offensive")

    def _pick_tool(self, tool: str) -> None:
        army = self.world.armies.get(self.army) if self.army is not None else None
        if army is None:
            self._say("Select an army first: click its card in the army bar")
        elif tool == "offensive" and army.front is None:
            self._say(f"{army.name}'s army has no front: press Z and click the enemy first")
        else:
            self.tool = tool

    # --- console ----------------------------------------------------------------------------------

    def _run(self, line: str) -> None:
        command = parse(line)
        if isinstance(command, str):
            self.console.print(command)
            return
        self.console.print(self.command(command))

    def command(self, command: Command) -> str:
        """Carry out a console command; returns the console's answer."""
        world = self.world
        if command.name == "help":
            for text in HELP[:-1]:
                self.console.print(text)
            return HELP[-1]
        if command.name == "speed":
            return f"speed {self.clock.set_speed(int(command.arg))}"
        if command.name == "declare":
            tag = str(command.arg)
            return self._attempt(lambda: world.declare_war(tag), f"{tag} declares war on {other_tag(tag)}")
        if command.name == "coin":
            if world.at_war:
                return f"already at war (declared by {world.declarer})"
            tag = TAGS[self.coin.random() < 0.5]
            return self._attempt(
                lambda: world.declare_war(tag), f"coin: {tag} declares war on {other_tag(tag)}"
            )
        tag = str(command.arg)
        if tag == self.player:
            return f"already playing {tag}"
        ai = self.ais.pop(tag, None)
        if ai is not None:  # as HOI4's tag: the AI takes over the country you leave
            self.ais[self.player] = GameAI(self.player, AIConfig(strength=ai.config.strength))
        self.player = tag
        self._set_selection((), None)
        return f"now playing {tag}"

    @staticmethod
    def _attempt(order: Callable[[], Any], done: str) -> str:
        try:
            order()
        except OrderRefused as error:
            return f"refused: {error}"
        return done

    # --- helpers ----------------------------------------------------------------------------------

    def _order(self, order: Callable[[], Any], done: str | None) -> tuple[bool, Any]:
        """Run a world order: (True, its result), or (False, None) with the refusal on the screen."""
        try:
            result = order()
        except OrderRefused as error:
            self._say(str(error))
            return False, None
        if done:
            self._say(done)
        return True, result

    def _say(self, text: str) -> None:
        self.toast = (text, self.clock.ui_ns + TOAST_NS)

    def prune(self) -> None:
        """Drop destroyed divisions and dissolved armies from the selection (after the world moved)."""
        world = self.world
        if self.army is not None and (
            self.army not in world.armies or world.armies[self.army].tag != self.player
        ):
            self.army, self.tool = None, None
        if any(d not in world.divisions for d in self.selected):
            self.selected = tuple(d for d in self.selected if d in world.divisions)
