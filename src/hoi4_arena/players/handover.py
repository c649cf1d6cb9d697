"""Corrections: a policy opens the game, then the scripted player takes over from where it left things.

A policy trained by behaviour cloning drifts into screens its demonstrations never show: an army it
deselected or broke up with a stray move order, a tool left on, a front the enemy has dented. Those are
the screens where it needs to be told what to do. `HandoverPlayer` records exactly them (the idea of
DAgger, with the scripted player as the expert): a policy checkpoint plays the first `handover`
decisions of the game, then the scripted player plays the rest, starting from its first phase and
finding every step it needs from the screen (a formed army is seen as formed, a drawn front is drawn
again, a lost selection is clicked back).

Every event of the policy carries source `policy`, every event of the scripted player source `scripted`
with its skill. The session is a scripted demonstration whose opening is not: training leaves the
decisions holding the policy's inputs out of the loss (`data/decode.py`), so it learns the scripted
player's way back from the policy's mistakes, never the mistakes. At the handover anything the policy
still holds (a key, a button) is released, in the policy's name.

`record-ai --first CHECKPOINT --handover LOW-HIGH` records such games; the quickstart uses them for a
second round of training (docs/learning.md).

Try: hoi4-arena record-ai out --games 2 --first CHECKPOINT.pt --handover 30-60
"""

from __future__ import annotations

import random
from typing import Any

from hoi4_arena.players.scripted_record import ScriptedRecord
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.tokens import DECISION_NS, SLOT_NS, tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest

RELEASE_AT_NS = DECISION_NS - SLOT_NS // 2
"""Where in the handover decision the policy's held keys and buttons are let go (after its last slot)."""


def draw_handover(seed: int, side: str, low: int, high: int) -> int:
    """The decision at which the scripted player takes over game (seed, side): uniform in low..high."""
    return random.Random(f"handover-{seed}-{side}").randint(low, high)


class HandoverPlayer(ScriptedRecord):
    """A policy for the first `handover` decisions, then `scripted`; see the module docstring.

    `policy` is a `play.policy_player.PolicyPlayer` already `reset` for the game, `speed` the match's game
    speed (the policy reads it). The scripted player's interface (`request`, `decide`, `orders`, ...).
    """

    def __init__(self, policy: Any, scripted: Any, handover: int, speed: int) -> None:
        if handover < 0:
            raise ValueError(f"handover must be >= 0 decisions, not {handover}")
        if scripted.setup_keys:
            raise ValueError("a paused setup cannot follow a policy's opening: the match is already running")
        self.policy = policy
        self.scripted = scripted
        self.handover = handover
        self.speed = speed
        self.decisions = 0
        self.held: set[tuple[str, Any]] = set()
        """What the policy holds down: ("button", name) and ("key", code)."""
        self.setup_keys = False

    @property
    def policy_turn(self) -> bool:
        """Whether the next decision is the policy's."""
        return self.decisions < self.handover

    def request(self) -> CaptureRequest:
        if self.policy_turn:
            return CaptureRequest(views=True)
        return self.scripted.request()

    def decide(self, capture: Capture) -> list[InputEvent]:
        """The next decision's events: the policy's (and, in its last decision, the release of anything
        it holds), then the scripted player's."""
        if not self.policy_turn:
            self.decisions += 1
            return self.scripted.decide(capture)
        self.decisions += 1
        pointer = to_lattice(*capture.pointer, capture.size)
        tokens = self.policy.decide(capture.views, self.speed, pointer)
        events = tokens_to_events(
            tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy"
        )
        for event in events:
            self._track(event)
        if not self.policy_turn:  # the handover: let go of everything, as the policy's last input
            t = capture.t_ns + RELEASE_AT_NS
            x, y = (events[-1].x, events[-1].y) if events else capture.pointer
            for kind, what in sorted(self.held, key=str):
                if kind == "button":
                    events.append(InputEvent(t, "button_up", x, y, button=what, source="policy"))
                else:
                    events.append(InputEvent(t, "key_up", x, y, key=what, source="policy"))
            self.held.clear()
            self.scripted.notes.append(
                f"{capture.t_ns / 1e9:9.2f}s the policy hands over after {self.handover} decisions"
            )
        return events

    def _track(self, event: InputEvent) -> None:
        if event.kind in ("button_down", "button_up"):
            key = ("button", event.button)
        elif event.kind in ("key_down", "key_up"):
            key = ("key", event.key)
        else:
            return
        if event.kind.endswith("_down"):
            self.held.add(key)
        else:
            self.held.discard(key)

    def summary(self) -> dict[str, Any]:
        return {**self.scripted.summary(), "handover": self.handover, "first": self.policy.name}
