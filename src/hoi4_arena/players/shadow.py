"""The scripted player as a shadow expert: from each screen of a game someone else plays, the input it would
give now.

The scripted player (`players/scripted.py`) plans a step over several decisions: it thinks, its hand
travels to the target in a few moves, rests, presses, and then it looks for the step's effect. Run in
the shadow of a learner whose input is what the game gets (DAgger: `players/dagger_player.py`), a
plain scripted player would go on with a plan nobody carried out: its hand's pointer somewhere the
real pointer is not, a click scheduled at the end of a path that was never travelled, tries counted
for steps it never made. Its labels would be what it would do had its own earlier inputs been applied.

`ShadowExpert` keeps it honest, decision by decision:

1. `label(capture)`: the events the expert would send in the 200 ms after this capture. When the input
   applied in the decision before was not its own label (`follows`), the expert first takes its state
   from the screen: the hand's queued plan is dropped and its pointer put where the capture shows it,
   a step cut short counts as not tried and is started again at once (it had already seen what to do),
   and anything the other player left held down (a button, a key: tracked from the events applied) is
   let go first, one a slot, before the expert plans its next step. Where the other's input may have
   moved the map's view (a wheel notch, a pan key, a middle-button drag, the pointer at the screen's
   edge), the expert then zooms all the way out from a point low on the map's left, where no window
   opens (one notch in, then `ZOOM_OUT` out: the whole map in view, as the scripted player reads it).
   The phase it is in (formed the army, drawn the front, ...) it reads from the screen as it always
   does: every step looks for its effect, so a step the other player carried out is seen done, and
   one it undid is done again.
2. `applied(events, capture)`: what the game got in that decision (the label itself, or another's).

When the label is what is applied every decision (beta = 1), nothing is ever dropped and the shadow plays
exactly the scripted player's game (tests/players/test_shadow.py: its labels are the inputs played in
every decision).

The search player (`players/search.py`, dagger's `--expert search`) is a scripted player whose strategic
choices are searched: it inherits the interrupt, the hand and the reading of the screen, so it shadows
the same way, and a choice it has searched stays made across a resync (the opening is searched once,
when the flag is first seen; a replan's aim when its phase begins).

"Followed" compares tokens, as training sees them: the same kind in every slot and every move within
`tolerance` lattice cells of the label's. A learner a few pixels off its label does not make the expert
start its step over (the next label corrects the pointer: a press where the pointer is not becomes a
move and the press).

Try: .venv/bin/python -m pytest -q tests/players/test_shadow.py
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hoi4_arena.screen.events import KEY_CODES, InputEvent
from hoi4_arena.screen.tokens import MOVE, events_to_tokens
from hoi4_arena.screen.worker import Capture, CaptureRequest

TOLERANCE = 8
"""Lattice cells a move may be off its label and still count as followed."""
ZOOM_OUT = 10
"""Wheel notches down that bring the view back to the whole map (the simulator zooms in 8 at most, and
zooming all the way out centres the map again; one notch in first, so a view panned at the widest
zoom is centred too)."""
PAN_KEYS = frozenset(KEY_CODES[name] for name in ("w", "a", "s", "d", "up", "down", "left", "right"))
EDGE_PX = 2
"""The pointer this close to the screen's edge pans the view."""


def moves_view(events: list[InputEvent], size: tuple[int, int]) -> bool:
    """Whether `events` may have moved the map's view: a wheel notch, a pan key, the middle button, or
    the pointer at the screen's edge (`size` (height, width))."""
    height, width = size
    for event in events:
        if event.kind == "wheel" or (event.kind == "key_down" and event.key in PAN_KEYS):
            return True
        if event.kind == "button_down" and event.button == "middle":
            return True
        if event.kind == "move" and not (
            EDGE_PX <= event.x < width - EDGE_PX and EDGE_PX <= event.y < height - EDGE_PX
        ):
            return True
    return False


def follows(label: np.ndarray, played: np.ndarray, tolerance: int = TOLERANCE) -> bool:
    """Whether tokens `played` (8, 3) carry out `label` (8, 3): the same kinds slot by slot, every move
    within `tolerance` lattice cells (Chebyshev) of the label's."""
    if not np.array_equal(label[:, 0], played[:, 0]):
        return False
    moves = label[:, 0] == MOVE
    return bool(np.all(np.abs(label[moves, 1:] - played[moves, 1:]) <= tolerance))


def decision_tokens(events: list[InputEvent], capture: Capture) -> np.ndarray:
    """One decision's events as the (8, 3) tokens a recording of it holds."""
    return events_to_tokens(events, capture.t_ns, capture.size, pointer=capture.pointer).slots


class ShadowExpert:
    """The scripted player `scripted` labelling another player's game; see the module docstring."""

    def __init__(self, scripted: Any, tolerance: int = TOLERANCE) -> None:
        if scripted.setup_keys:
            raise ValueError("a paused setup needs the scripted player's own hand: the shadow cannot unpause")
        self.scripted = scripted
        self.tolerance = tolerance
        self.held: set[tuple[str, Any]] = set()
        """What the game holds down after the events applied so far: ("button", name), ("key", code)."""
        self.label_tokens: np.ndarray | None = None
        """The last label's tokens."""
        self.followed = True
        """Whether the last decision's applied input carried out the label."""
        self.resyncs = 0
        """Decisions at which the expert took its state from the screen (its label was not followed)."""
        self.view_moved = False
        """Whether another's input may have moved the map's view since the expert last zoomed out."""
        self._zooming = False  # the zoom-out is queued in the expert's hand

    def request(self) -> CaptureRequest:
        return self.scripted.request()

    def label(self, capture: Capture) -> list[InputEvent]:
        """The expert's input for the 200 ms after `capture`, from where the game stands now."""
        if not self.followed:
            self.resyncs += 1
            self.scripted.interrupt(capture.t_ns, capture.pointer)
            hand = self.scripted.hand
            # Let go of what the other left held, one a slot: the hand is busy with it, so the expert
            # plans its next step once everything is up (a random player may hold down dozens of keys).
            for kind, what in sorted(self.held, key=str):
                hand.release(kind, what, "release")
            if self.view_moved:
                x, y, w, h = self.scripted.rules.map.rect
                # Low on the map's left: event windows and banners open in the middle, over the map.
                hand.move_to(x + w // 16, y + h * 3 // 4, "view")
                hand.wheel(1, "view")
                hand.wheel(-ZOOM_OUT, "view")
                self._zooming = True
        events = self.scripted.decide(capture)
        self.label_tokens = decision_tokens(events, capture)
        return events

    def applied(self, events: list[InputEvent], capture: Capture) -> np.ndarray:
        """What the game got after `capture` (the label or another's input); returns its tokens."""
        played = decision_tokens(events, capture)
        self.followed = self.label_tokens is not None and follows(self.label_tokens, played, self.tolerance)
        if not self.followed and moves_view(events, capture.size):
            self.view_moved = True
        hand = self.scripted.hand
        if self.followed and self._zooming and not any(e.skill == "view" for e in hand.queue):
            self.view_moved = self._zooming = False  # the zoom-out was played to its last notch
        for event in events:
            if event.kind in ("button_down", "button_up"):
                item: tuple[str, Any] = ("button", event.button)
            elif event.kind in ("key_down", "key_up"):
                item = ("key", event.key)
            else:
                continue
            if event.kind.endswith("_down"):
                self.held.add(item)
            else:
                self.held.discard(item)
        return played
