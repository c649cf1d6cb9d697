"""A hand for a non-learned player: intents (click this, press that, drag from here to there) become
input events timed the way a person makes them.

The pointer travels to a target in a few moves (an eased path with a slight bow, not a jump), rests
0.25 to 0.45 s on it, then presses; buttons and keys are held for 50 to 100 ms. Every event sits in
the middle of its own 25 ms slot on the decision grid, one event a slot, so a 200 ms decision never
holds more than the eight inputs a policy can make (no bursts), and each event lands in the slot the
data pipeline will put it in. The pointer never comes within `margin` pixels of the screen's edge,
where the game would pan.

`Hand` queues events on its own timeline; a decision loop takes what falls due with `due(until_ns)`
and applies it through the worker. Each event carries the skill it served (`InputEvent.skill`), which
the recorder stores as the label.

Try: python -m hoi4_arena.players.hand
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass

from hoi4_arena.screen.events import KEY_CODES, InputEvent
from hoi4_arena.screen.tokens import SLOT_NS


@dataclass(frozen=True)
class HandConfig:
    """How a hand moves and presses."""

    press_delay_s: tuple[float, float] = (0.25, 0.45)
    """Seconds between arriving on a target and pressing it."""
    hold_slots: tuple[int, int] = (2, 4)
    """How long a button or key is held, in 25 ms slots."""
    move_steps: tuple[int, int] = (2, 4)
    """Pointer moves on the way to a target (the last lands on it)."""
    drag_steps: tuple[int, int] = (4, 6)
    """Pointer moves during a drag."""
    bow: float = 0.08
    """How far a path bows sideways, as a share of its length."""
    margin: int = 4
    """Keep the pointer this many pixels from the screen's edge (edge panning)."""

    def __post_init__(self) -> None:
        low, high = self.press_delay_s
        if not 0 <= low <= high:
            raise ValueError(
                f"press_delay_s must be (low, high) with 0 <= low <= high, not {self.press_delay_s}"
            )
        for name in ("hold_slots", "move_steps", "drag_steps"):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise ValueError(f"{name} must be (low, high) with 1 <= low <= high")


class Hand:
    """Timed input for a screen of `size` (height, width), starting at `t_ns` with the pointer at
    `pointer`; `rng` makes every timing and path choice (seed it for a deterministic player)."""

    def __init__(
        self,
        size: tuple[int, int],
        rng: random.Random,
        t_ns: int,
        pointer: tuple[int, int],
        config: HandConfig | None = None,
        source: str = "scripted",
    ) -> None:
        self.size = (int(size[0]), int(size[1]))
        self.rng = rng
        self.config = config or HandConfig()
        self.source = source
        self.origin = int(t_ns)  # slot 0 of the decision grid
        self._slot = 0  # the next free slot
        self.pointer = self._inside(pointer)
        self.queue: deque[InputEvent] = deque()

    # --- time -------------------------------------------------------------------------------------

    def _slot_of(self, t_ns: int) -> int:
        return -(-(int(t_ns) - self.origin) // SLOT_NS)  # the first slot starting at or after t_ns

    def sync(self, t_ns: int) -> None:
        """Nothing may be scheduled before `t_ns` (the decision being made now)."""
        self._slot = max(self._slot, self._slot_of(t_ns))

    @property
    def free_at(self) -> int:
        """When the last scheduled event has gone out (the start of the next free slot)."""
        return self.origin + self._slot * SLOT_NS

    def busy(self) -> bool:
        return bool(self.queue)

    def wait(self, seconds: float) -> None:
        self._slot += max(0, round(seconds * 1e9 / SLOT_NS))

    def wait_range(self, bounds: tuple[float, float]) -> None:
        self.wait(self.rng.uniform(*bounds))

    def drop(self, t_ns: int, pointer: tuple[int, int]) -> None:
        """Someone else's input came instead of the queued events: forget them, and go on from `t_ns` with
        the pointer where that input left it (`players/shadow.py`)."""
        self.queue.clear()
        self._slot = self._slot_of(t_ns)
        self.pointer = self._inside(pointer)

    def release(self, kind: str, what: str | int, skill: str) -> None:
        """Let go of a button (`kind` "button", `what` its name) or a key ("key", its code) held down,
        where the pointer is."""
        if kind == "button":
            self._emit("button_up", skill, button=what)
        else:
            self._emit("key_up", skill, key=what)

    def wheel(self, delta: int, skill: str) -> None:
        """Turn the wheel `delta` notches (+ up) where the pointer is, one notch a slot."""
        for _ in range(abs(int(delta))):
            self._emit("wheel", skill, delta=1 if delta > 0 else -1)

    def due(self, until_ns: int) -> list[InputEvent]:
        """The queued events before `until_ns`, taken off the queue."""
        out = []
        while self.queue and self.queue[0].t_ns < until_ns:
            out.append(self.queue.popleft())
        return out

    # --- events -----------------------------------------------------------------------------------

    def _emit(self, kind: str, skill: str, **fields) -> None:
        t = self.origin + self._slot * SLOT_NS + SLOT_NS // 2  # mid-slot: robust to anchor jitter
        x, y = fields.pop("at", self.pointer)
        self.queue.append(InputEvent(t, kind, int(x), int(y), source=self.source, skill=skill, **fields))
        self._slot += 1

    def _inside(self, point: tuple[float, float]) -> tuple[int, int]:
        m = self.config.margin
        h, w = self.size
        return min(max(round(point[0]), m), w - 1 - m), min(max(round(point[1]), m), h - 1 - m)

    def _path(self, target: tuple[int, int], steps: int) -> list[tuple[int, int]]:
        """Points from the pointer to `target`: eased (fast, then slowing down) with a slight bow."""
        (x0, y0), (x1, y1) = self.pointer, target
        dx, dy = x1 - x0, y1 - y0
        length = math.hypot(dx, dy)
        bow = self.rng.uniform(-1, 1) * self.config.bow * length
        nx, ny = (-dy / length, dx / length) if length else (0.0, 0.0)
        points = []
        for i in range(1, steps + 1):
            f = i / steps
            eased = 1 - (1 - f) ** 2
            side = math.sin(math.pi * f) * bow
            points.append(self._inside((x0 + dx * eased + nx * side, y0 + dy * eased + ny * side)))
        points[-1] = target
        return points

    def move_to(self, x: int, y: int, skill: str) -> None:
        """Travel to (x, y) in a few moves, one slot apart."""
        target = self._inside((x, y))
        if target == self.pointer:
            return
        for point in self._path(target, self.rng.randint(*self.config.move_steps)):
            if point != self.pointer:
                self.pointer = point
                self._emit("move", skill, at=point)

    def _hold(self) -> None:
        self._slot += self.rng.randint(*self.config.hold_slots) - 1

    def click(self, x: int, y: int, skill: str, button: str = "left", shift: bool = False) -> None:
        """Travel to (x, y), rest, click `button` (holding shift around it if asked)."""
        self.move_to(x, y, skill)
        self.wait_range(self.config.press_delay_s)
        if shift:
            self._emit("key_down", skill, key=KEY_CODES["shift"])
            self._slot += 1
        self._emit("button_down", skill, button=button)
        self._hold()
        self._emit("button_up", skill, button=button)
        if shift:
            self._slot += 1
            self._emit("key_up", skill, key=KEY_CODES["shift"])

    def key(self, name: str, skill: str) -> None:
        """Press and release the key `name` (screen.events.KEY_NAMES' vocabulary) where the pointer is."""
        code = KEY_CODES[name]
        self._emit("key_down", skill, key=code)
        self._hold()
        self._emit("key_up", skill, key=code)

    def drag(self, start: tuple[int, int], end: tuple[int, int], skill: str, button: str = "right") -> None:
        """Travel to `start`, rest, press `button`, move to `end` in a few moves, release."""
        self.move_to(*start, skill)
        self.wait_range(self.config.press_delay_s)
        self._emit("button_down", skill, button=button)
        self._slot += 1
        for point in self._path(self._inside(end), self.rng.randint(*self.config.drag_steps)):
            if point != self.pointer:
                self.pointer = point
                self._emit("move", skill, at=point)
        self._slot += self.rng.randint(*self.config.hold_slots)
        self._emit("button_up", skill, button=button)


if __name__ == "__main__":
    hand = Hand((540, 960), random.Random(0), 0, (480, 270))
    hand.click(100, 500, "demo")
    hand.drag((300, 200), (400, 220), "demo")
    for event in hand.due(10**12):
        print(
            f"{event.t_ns / 1e6:8.1f} ms  {event.kind:11} ({event.x}, {event.y}) {event.button or event.key or ''}"
        )
