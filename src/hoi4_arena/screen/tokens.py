"""Action tokens: one decision's input events as eight (kind, x, y) slots, and back.

A decision lasts 200 ms and holds 8 slots of 25 ms; each slot holds one token `(kind, x, y)`. There are
98 kinds: none, move, the left/right/middle button down/up, wheel up/down (one notch each), and the 44
keys of `events.MATCH_KEYS` down/up. A move carries its target on the 1024 x 1024 pointer lattice
(`lattice.py`); every other kind carries (0, 0) and acts at the current pointer. The no-op is
`(NONE, 0, 0)` (`NOOP_TOKEN`), and a decision that does nothing is `Tokens.noop()`.

events -> tokens (`events_to_tokens`), in time order:
- an event goes to slot floor((t - t0) / 25 ms), or to the next free slot when that one is taken, so the
  order of events is kept;
- consecutive moves merge when the later one would land at or before the earlier one's slot (the last
  position wins);
- a button or wheel event at a lattice cell other than the pointer's gets a move token first (it acts
  at the pointer, so the pointer must be there); pass `pointer` (client pixels at t0) when known;
- a wheel event of delta d becomes |d| one-notch tokens;
- keys that are not token kinds (space, Esc, speed keys, the console key, F12: setup only) are dropped
  and counted in `Tokens.dropped`, never silently;
- a decision that needs a slot past the eighth is a burst: `Tokens.burst` is set and `needed` says how
  many tokens it needed. Training excludes bursts rather than relabelling them.

tokens -> events (`tokens_to_events`): each token at t0 + slot * 25 ms; button, wheel and key events
act at the pointer, tracked from the last move (pass the pointer at t0 for tokens before any move).

Round trips: tokens -> events -> tokens is exact on clients at least 1024 pixels on each side (smaller
ones map several lattice cells to one pixel, so moves come back as the canonical cell of their pixel);
events -> tokens -> events gives the events back quantized (slot start times, lattice pixels, one-notch
wheels, dropped setup keys).

Try: python -m hoi4_arena.screen.tokens
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hoi4_arena.screen.events import BUTTONS, KEY_NAMES, MATCH_KEYS, InputEvent
from hoi4_arena.screen.lattice import LATTICE, to_lattice, to_pixel

SLOTS = 8
SLOT_NS = 25_000_000
DECISION_NS = SLOTS * SLOT_NS

NONE = 0
MOVE = 1
BUTTON_KINDS: dict[tuple[str, str], int] = {
    (button, edge): 2 + 2 * i + j for i, button in enumerate(BUTTONS) for j, edge in enumerate(("down", "up"))
}
WHEEL_UP = 8
WHEEL_DOWN = 9
KEY_BASE = 10
KEY_KINDS: dict[tuple[int, str], int] = {
    (key, edge): KEY_BASE + 2 * i + j
    for i, key in enumerate(MATCH_KEYS)
    for j, edge in enumerate(("down", "up"))
}
KIND_NAMES: tuple[str, ...] = (
    "none",
    "move",
    *(f"mouse_{button}_{edge}" for button in BUTTONS for edge in ("down", "up")),
    "wheel_up",
    "wheel_down",
    *(f"key_{KEY_NAMES[key]}_{edge}" for key in MATCH_KEYS for edge in ("down", "up")),
)
NUM_KINDS = len(KIND_NAMES)
assert NUM_KINDS == 98 and len(set(KIND_NAMES)) == NUM_KINDS
KIND_IDS: dict[str, int] = {name: i for i, name in enumerate(KIND_NAMES)}

NOOP_TOKEN = (NONE, 0, 0)
PRESSES: tuple[int, ...] = (
    *(BUTTON_KINDS[button, "down"] for button in BUTTONS),
    *(KEY_KINDS[key, "down"] for key in MATCH_KEYS),
)
"""The kinds that press a button or key down (3 buttons, then the 44 keys): the entries of a held-inputs
vector (`held_after`), which a policy with `PolicyConfig.held_inputs` sees."""
RELEASES: tuple[int, ...] = (
    *(BUTTON_KINDS[button, "up"] for button in BUTTONS),
    *(KEY_KINDS[key, "up"] for key in MATCH_KEYS),
)
"""The release kind of each of `PRESSES`, in the same order."""
_PRESS_INDEX = {kind: i for i, kind in enumerate(PRESSES)}
_RELEASE_INDEX = {kind: i for i, kind in enumerate(RELEASES)}
_BUTTON_OF_KIND = {kind: pair for pair, kind in BUTTON_KINDS.items()}
_KEY_OF_KIND = {kind: pair for pair, kind in KEY_KINDS.items()}


def is_move_kind(kind: int) -> bool:
    return kind == MOVE


def is_button_kind(kind: int) -> bool:
    return kind in _BUTTON_OF_KIND


def is_wheel_kind(kind: int) -> bool:
    return kind in (WHEEL_UP, WHEEL_DOWN)


def is_key_kind(kind: int) -> bool:
    return KEY_BASE <= kind < NUM_KINDS


def is_pointer_kind(kind: int) -> bool:
    """Mouse kinds: move, buttons, wheel (the ones that act at a screen position)."""
    return kind == MOVE or is_button_kind(kind) or is_wheel_kind(kind)


def key_of_kind(kind: int) -> tuple[int, str]:
    """(virtual-key code, 'down' | 'up') of a key kind."""
    return _KEY_OF_KIND[kind]


def button_of_kind(kind: int) -> tuple[str, str]:
    """(button, 'down' | 'up') of a button kind."""
    return _BUTTON_OF_KIND[kind]


def kind_of(event: InputEvent) -> int | None:
    """The token kind of one event (one notch's worth for a wheel), or None for a key that is not a
    token kind (setup-only keys such as space or Esc, and F12)."""
    if event.kind == "move":
        return MOVE
    if event.kind in ("button_down", "button_up"):
        return BUTTON_KINDS[event.button, event.kind.removeprefix("button_")]
    if event.kind == "wheel":
        return WHEEL_UP if event.delta > 0 else WHEEL_DOWN
    return KEY_KINDS.get((event.key, event.kind.removeprefix("key_")))


def held_after(held: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """What is held down after one decision's (8, 3) `tokens` were sent, from `held` (bool,
    len(PRESSES)) before it: a press holds its button or key, a release lets it go, in slot order."""
    after = np.array(held, dtype=bool, copy=True)
    for kind in np.asarray(tokens)[:, 0].tolist():
        if kind in _PRESS_INDEX:
            after[_PRESS_INDEX[kind]] = True
        elif kind in _RELEASE_INDEX:
            after[_RELEASE_INDEX[kind]] = False
    return after


def held_vector(kinds: Iterable[int]) -> np.ndarray:
    """bool (len(PRESSES),): the held-inputs vector of the press kinds `kinds` held down."""
    vector = np.zeros(len(PRESSES), bool)
    vector[[_PRESS_INDEX[int(k)] for k in kinds]] = True
    return vector


def _check_slots(slots: np.ndarray) -> np.ndarray:
    slots = np.asarray(slots)
    if slots.shape != (SLOTS, 3) or not np.issubdtype(slots.dtype, np.integer):
        raise ValueError(
            f"tokens must be an ({SLOTS}, 3) integer array of (kind, x, y), got {slots.dtype} {slots.shape}"
        )
    kinds, xy = slots[:, 0], slots[:, 1:]
    if ((kinds < 0) | (kinds >= NUM_KINDS)).any():
        raise ValueError(f"token kinds must be in 0..{NUM_KINDS - 1}, got {kinds.tolist()}")
    moves = kinds == MOVE
    if ((xy[moves] < 0) | (xy[moves] >= LATTICE)).any():
        raise ValueError(
            f"move tokens must point inside the {LATTICE}x{LATTICE} lattice, got {xy[moves].tolist()}"
        )
    if (xy[~moves] != 0).any():
        raise ValueError("only move tokens carry (x, y); every other kind must carry (0, 0)")
    return slots.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Tokens:
    """One decision's tokens and how they were made."""

    slots: np.ndarray
    """(8, 3) int64: (kind, x, y) per 25 ms slot; moves carry lattice (x, y), other kinds (0, 0)."""
    burst: bool = False
    """More input than the eight slots hold: excluded from training, not relabelled."""
    needed: int = 0
    """How many tokens the events needed (more than 8, or a late event past slot 8, is a burst)."""
    dropped: int = 0
    """Key events left out because their key is not a token kind (setup-only keys, F12)."""
    pointer: tuple[int, int] | None = field(default=None)
    """The lattice pointer after the decision, when known (the next decision starts there)."""

    def __post_init__(self) -> None:
        slots = _check_slots(self.slots)
        slots.setflags(write=False)
        object.__setattr__(self, "slots", slots)

    @classmethod
    def noop(cls, pointer: tuple[int, int] | None = None) -> Tokens:
        """The decision that does nothing: eight NOOP tokens."""
        return cls(np.zeros((SLOTS, 3), dtype=np.int64), pointer=pointer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokens):
            return NotImplemented
        return np.array_equal(self.slots, other.slots) and (
            self.burst,
            self.needed,
            self.dropped,
            self.pointer,
        ) == (other.burst, other.needed, other.dropped, other.pointer)

    __hash__ = None  # type: ignore[assignment]

    @property
    def count(self) -> int:
        """Tokens in the slots that are not NOOP."""
        return int((self.slots[:, 0] != NONE).sum())

    def names(self) -> list[str]:
        """Human-readable tokens, e.g. ['move(512,300)', 'mouse_left_down', 'none', ...]."""
        return [f"move({x},{y})" if kind == MOVE else KIND_NAMES[kind] for kind, x, y in self.slots.tolist()]

    def to_dict(self) -> dict:
        return {
            "slots": self.slots.tolist(),
            "burst": self.burst,
            "needed": self.needed,
            "dropped": self.dropped,
            "pointer": list(self.pointer) if self.pointer is not None else None,
        }


def events_to_tokens(
    events: Iterable[InputEvent],
    t0_ns: int,
    size: Sequence[int],
    *,
    pointer: Sequence[int] | None = None,
) -> Tokens:
    """The tokens of the events of one decision [t0, t0 + 200 ms) on a client of `size` (height, width).

    `pointer` is the pointer (x, y) in client pixels at t0, when known. Events must be in time order
    and inside the decision; positions must be inside the client (ValueError otherwise).
    """
    slots = np.zeros((SLOTS, 3), dtype=np.int64)
    tracked = None if pointer is None else to_lattice(pointer[0], pointer[1], size)
    last_slot = -1
    last_kind = NONE
    needed = 0
    dropped = 0
    previous_t = t0_ns

    def place(kind: int, x: int, y: int, natural: int) -> None:
        nonlocal last_slot, last_kind, needed
        slot = max(natural, last_slot + 1)
        if slot < SLOTS:
            slots[slot] = (kind, x, y)
        needed += 1
        last_slot, last_kind = slot, kind

    def move_to(cell: tuple[int, int], natural: int) -> None:
        # A move right after a move that sits at or past this slot merges into it: the last wins.
        if last_kind == MOVE and last_slot >= natural:
            if last_slot < SLOTS:
                slots[last_slot, 1:] = cell
        else:
            place(MOVE, *cell, natural)

    for event in events:
        if not t0_ns <= event.t_ns < t0_ns + DECISION_NS:
            raise ValueError(
                f"event at {event.t_ns} ns is outside the decision [{t0_ns}, {t0_ns + DECISION_NS})"
            )
        if event.t_ns < previous_t:
            raise ValueError(f"events are not in time order ({event.t_ns} ns after {previous_t} ns)")
        previous_t = event.t_ns
        kind = kind_of(event)
        if kind is None:
            dropped += 1
            continue
        natural = (event.t_ns - t0_ns) // SLOT_NS
        if kind == MOVE:
            tracked = to_lattice(event.x, event.y, size)
            move_to(tracked, natural)
            continue
        if is_pointer_kind(kind):
            here = to_lattice(event.x, event.y, size)
            if here != tracked:  # it acts at the pointer, so the pointer must get there first
                tracked = here
                move_to(tracked, natural)
        for _ in range(abs(event.delta) if event.kind == "wheel" else 1):
            place(kind, 0, 0, natural)
    return Tokens(slots, burst=last_slot >= SLOTS, needed=needed, dropped=dropped, pointer=tracked)


def in_order(tokens: np.ndarray) -> np.ndarray:
    """Tokens (..., 8, 3) with each decision's events moved to its first slots, in their order.

    What a decision did and in what order, without the 25 ms slot each event fell in: frames 200 ms
    apart cannot show that slot, so the IDM learns and labels this form (docs/video.md). Played back,
    the events start at the decision's start, 25 ms apart."""
    tokens = np.asarray(tokens)
    order = np.argsort(tokens[..., 0] == NONE, axis=-1, kind="stable")
    return np.take_along_axis(tokens, order[..., None], axis=-2)


def tokens_to_events(
    tokens: Tokens | np.ndarray,
    t0_ns: int,
    size: Sequence[int],
    *,
    pointer: Sequence[int] | None = None,
    source: str = "policy",
) -> list[InputEvent]:
    """The input events of one decision's tokens, each at t0 + slot * 25 ms.

    `pointer` is the pointer (x, y) in client pixels at t0; button and wheel tokens before any move
    need it (ValueError otherwise). Key events carry the tracked pointer, or (0, 0) when unknown.
    """
    slots = tokens.slots if isinstance(tokens, Tokens) else _check_slots(tokens)
    h, w = (int(v) for v in size)
    tracked = None
    if pointer is not None:
        x, y = int(pointer[0]), int(pointer[1])
        if not (0 <= x < w and 0 <= y < h):
            raise ValueError(f"pointer ({x}, {y}) is outside the {w}x{h} client")
        tracked = (x, y)
    events = []
    for slot, (kind, lx, ly) in enumerate(slots.tolist()):
        if kind == NONE:
            continue
        t = t0_ns + slot * SLOT_NS
        if kind == MOVE:
            tracked = to_pixel(lx, ly, (h, w))
            events.append(InputEvent(t, "move", *tracked, source=source))
            continue
        if tracked is None and not is_key_kind(kind):
            raise ValueError(f"a {KIND_NAMES[kind]} token before any move needs the pointer at t0")
        x, y = tracked if tracked is not None else (0, 0)
        if is_button_kind(kind):
            button, edge = button_of_kind(kind)
            events.append(InputEvent(t, f"button_{edge}", x, y, button=button, source=source))
        elif is_wheel_kind(kind):
            events.append(InputEvent(t, "wheel", x, y, delta=1 if kind == WHEEL_UP else -1, source=source))
        else:
            key, edge = key_of_kind(kind)
            events.append(InputEvent(t, f"key_{edge}", x, y, key=key, source=source))
    return events


if __name__ == "__main__":
    from hoi4_arena.screen.events import VK_SPACE

    ms = 1_000_000
    demo = [
        InputEvent(0 * ms, "move", 100, 100),
        InputEvent(10 * ms, "move", 960, 540),
        InputEvent(30 * ms, "button_down", 960, 540, button="left"),
        InputEvent(35 * ms, "button_up", 960, 540, button="left"),
        InputEvent(60 * ms, "key_down", 960, 540, key=VK_SPACE),
        InputEvent(120 * ms, "wheel", 960, 540, delta=-2),
    ]
    made = events_to_tokens(demo, 0, (1080, 1920), pointer=(0, 0))
    print(made.names(), f"burst={made.burst} needed={made.needed} dropped={made.dropped}")
    for event in tokens_to_events(made, 0, (1080, 1920), pointer=(0, 0)):
        print(event.to_json())
