"""The simulator's input: plain events (pointer, buttons, wheel, keys) fed to the interface.

The headless game takes them from its caller, the window from SDL; both hand the same `SimEvent`s to
the same interface code. The simulator never imports `hoi4_arena.screen`, so the key vocabulary is
copied here from `screen.events.KEY_NAMES` (tests/sim/test_input.py checks the two agree).

Semantics follow a real mouse: only `move` carries a position; buttons, wheel and keys act at the
pointer's current position (their x, y are ignored, as X11's XTest does). `delta` is wheel notches,
+1 up (zoom in), -1 down.

Try: python -c "from hoi4_arena.sim.input import SimEvent; print(SimEvent('key_down', key='z'))"
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

EVENT_KINDS = ("move", "button_down", "button_up", "wheel", "key_down", "key_up")
BUTTONS = ("left", "right", "middle")

# The names of every key any worker mode can send: the values of screen.events.KEY_NAMES.
KEYS: frozenset[str] = frozenset(
    (
        *"abcdefghijklmnopqrstuvwxyz",
        *"0123456789",
        "shift",
        "ctrl",
        "left",
        "right",
        "up",
        "down",
        "tab",
        "enter",
        "space",
        "escape",
        "backspace",
        "=",
        "-",
        ".",
        "`",
        "f12",
    )
)


@dataclass(frozen=True, slots=True)
class SimEvent:
    """One input event: `kind` in EVENT_KINDS; `x`, `y` client pixels (moves only); `button` in
    BUTTONS; `key` a name in KEYS; `delta` wheel notches (+1 up)."""

    kind: str
    x: int = 0
    y: int = 0
    button: str = ""
    key: str = ""
    delta: int = 0


def _whole(value: object) -> bool:
    """An integer of any kind (Python or numpy), but not a bool."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def problem(event: object, size: tuple[int, int]) -> str | None:
    """Why the interface ignores `event` on a screen of `size` (height, width), or None if it is usable.

    Never raises: bad input from a policy or a person is dropped, not a crash.
    """
    if not isinstance(event, SimEvent):
        return f"not a SimEvent: {type(event).__name__}"
    kind = event.kind
    if kind not in EVENT_KINDS:
        return f"unknown kind {kind!r}"
    if kind == "move":
        if not (_whole(event.x) and _whole(event.y)):
            return "a move needs whole-pixel x and y"
        h, w = size
        if not (0 <= int(event.x) < w and 0 <= int(event.y) < h):
            return f"({event.x}, {event.y}) is outside the {w}x{h} screen"
    elif kind in ("button_down", "button_up"):
        if event.button not in BUTTONS:
            return f"unknown button {event.button!r}"
    elif kind == "wheel":
        if not _whole(event.delta) or int(event.delta) == 0:
            return "a wheel event needs a whole, non-zero delta"
    elif not isinstance(event.key, str) or event.key not in KEYS:
        return f"unknown key {event.key!r}"
    return None


# --- spelling actions as events (tests, screenshots, harnesses) ---------------------------------------


def press(key: str) -> list[SimEvent]:
    """A key pressed and released."""
    return [SimEvent("key_down", key=key), SimEvent("key_up", key=key)]


def click(x: int, y: int, button: str = "left", shift: bool = False) -> list[SimEvent]:
    """Move to (x, y) and click `button`, holding shift around the click if asked."""
    events = [SimEvent("move", x, y)]
    if shift:
        events.append(SimEvent("key_down", key="shift"))
    events += [SimEvent("button_down", button=button), SimEvent("button_up", button=button)]
    if shift:
        events.append(SimEvent("key_up", key="shift"))
    return events


def drag(
    start: tuple[int, int], end: tuple[int, int], button: str = "left", steps: int = 4
) -> list[SimEvent]:
    """Press `button` at `start`, move to `end` in `steps` moves, release."""
    (x0, y0), (x1, y1) = start, end
    events = [SimEvent("move", x0, y0), SimEvent("button_down", button=button)]
    for i in range(1, steps + 1):
        events.append(SimEvent("move", x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps))
    events.append(SimEvent("button_up", button=button))
    return events


def type_text(text: str) -> list[SimEvent]:
    """Key presses that type `text` (lower-case letters, digits, space, '.', '-', '=') and Enter."""
    names = {" ": "space"}
    events: list[SimEvent] = []
    for char in text.lower():
        events += press(names.get(char, char))
    return events + press("enter")
