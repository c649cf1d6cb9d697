"""Raw input events: what a person, the scripted player or a policy does with the mouse and keyboard.

An `InputEvent` is the one representation of input everywhere above the worker: the worker applies
them, the recorder stores them (inputs.jsonl), `tokens.py` turns them into a decision's eight tokens and
back. Positions are client pixels of the game's window; keys are Windows virtual-key codes, the wire
convention, which each worker maps to its platform (`KEY_NAMES` gives the names the simulator uses).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

EVENT_KINDS = ("move", "button_down", "button_up", "wheel", "key_down", "key_up")
BUTTONS = ("left", "right", "middle")
SOURCES = ("human", "scripted", "ai", "policy", "harness")

# Windows virtual-key codes of every key any mode allows.
VK_BACK = 0x08
VK_TAB = 0x09
VK_RETURN = 0x0D
VK_SHIFT = 0x10
VK_CONTROL = 0x11
VK_ESCAPE = 0x1B
VK_SPACE = 0x20
VK_LEFT = 0x25
VK_UP = 0x26
VK_RIGHT = 0x27
VK_DOWN = 0x28
VK_F12 = 0x7B
VK_OEM_PLUS = 0xBB  # '=' / '+'
VK_OEM_MINUS = 0xBD  # '-'
VK_OEM_PERIOD = 0xBE  # '.'
VK_OEM_3 = 0xC0  # '`', HOI4's console key on a US layout
VK_DIGITS = tuple(range(0x30, 0x3A))  # '0'..'9'
VK_LETTERS = tuple(range(0x41, 0x5B))  # 'A'..'Z'

# The 44 keys a policy may press in match mode, in token order.
MATCH_KEYS: tuple[int, ...] = (
    VK_SHIFT,
    VK_CONTROL,
    VK_LEFT,
    VK_UP,
    VK_RIGHT,
    VK_DOWN,
    *VK_LETTERS,
    VK_TAB,
    VK_RETURN,
    *VK_DIGITS,
)
# Setup mode (harnesses only, never a policy) adds these.
SETUP_ONLY_KEYS: tuple[int, ...] = (
    VK_BACK,
    VK_ESCAPE,
    VK_SPACE,
    VK_OEM_PLUS,
    VK_OEM_MINUS,
    VK_OEM_PERIOD,
    VK_OEM_3,
)
SETUP_KEYS: tuple[int, ...] = MATCH_KEYS + SETUP_ONLY_KEYS

# Platform-neutral key names (the simulator's and SDL's vocabulary) for each virtual-key code.
KEY_NAMES: dict[int, str] = {
    VK_SHIFT: "shift",
    VK_CONTROL: "ctrl",
    VK_LEFT: "left",
    VK_UP: "up",
    VK_RIGHT: "right",
    VK_DOWN: "down",
    VK_TAB: "tab",
    VK_RETURN: "enter",
    VK_BACK: "backspace",
    VK_ESCAPE: "escape",
    VK_SPACE: "space",
    VK_OEM_PLUS: "=",
    VK_OEM_MINUS: "-",
    VK_OEM_PERIOD: ".",
    VK_OEM_3: "`",
    VK_F12: "f12",
    **{code: chr(code).lower() for code in VK_LETTERS},
    **{code: chr(code) for code in VK_DIGITS},
}
KEY_CODES: dict[str, int] = {name: code for code, name in KEY_NAMES.items()}


@dataclass(frozen=True, slots=True)
class InputEvent:
    """One input event at a time on the worker's clock.

    `x`, `y` are client pixels (for every kind: the pointer position when it happened; for `move`, where
    the pointer went). `key` is a virtual-key code for key events, `button` one of BUTTONS for button
    events, `delta` the wheel notches (+1 up, -1 down). `source` says who made it and `skill`, for the
    scripted player, which of its skills it served.
    """

    t_ns: int
    kind: str
    x: int = 0
    y: int = 0
    button: str = ""
    key: int = 0
    delta: int = 0
    source: str = ""
    skill: str = ""

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}; expected one of {', '.join(EVENT_KINDS)}")
        if self.kind in ("button_down", "button_up") and self.button not in BUTTONS:
            raise ValueError(f"a {self.kind} event needs button in {BUTTONS}, got {self.button!r}")
        if self.kind in ("key_down", "key_up") and self.key not in KEY_NAMES:
            raise ValueError(f"a {self.kind} event needs a known virtual-key code, got {self.key!r}")
        if self.kind == "wheel" and self.delta == 0:
            raise ValueError("a wheel event needs a non-zero delta")

    def to_dict(self) -> dict:
        """The compact JSON form: defaults left out."""
        data = asdict(self)
        return {k: v for k, v in data.items() if k in ("t_ns", "kind") or v not in (0, "")}

    @classmethod
    def from_dict(cls, data: dict) -> InputEvent:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown event fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))
