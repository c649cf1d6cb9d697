"""The spectator of an AI-vs-AI game: it only keeps the view clear, and its clicks are the session's labels.

When the game's AI plays both sides, nobody needs to give orders, but the news and the event windows
still cover the map until someone clicks OK. The spectator does that through the screen as a person
would (template matches, a `Hand` with the same timing as the scripted player) and nothing else: the
camera stays on the home view, which shows the whole arena. Its events carry source `ai` and skill
`close_popup`: a recording of an AI game has its own inputs, as the recorder of such a game would.

Try: hoi4-arena record-ai runs/ai --player ai --arena river --games 1 --minutes 10
"""

from __future__ import annotations

import random

from hoi4_arena.players.hand import Hand, HandConfig
from hoi4_arena.players.templates import Calibration
from hoi4_arena.screen.tokens import DECISION_NS
from hoi4_arena.screen.worker import Capture, CaptureRequest

SEEN = ("ready", "news_ok", "event_ok", "win", "loss", "draw")


class Spectator:
    """Closes popups on a game the AI plays on both sides; see the module docstring."""

    def __init__(
        self,
        rules: Calibration,
        seed: int,
        cursor: tuple[int, int, tuple[int, int]] = (16, 24, (0, 0)),
        hand: HandConfig | None = None,
    ) -> None:
        rules.require(*SEEN)
        self.rules = rules
        self.rng = random.Random(f"spectator-{seed}")
        self.cursor = cursor
        self.hand_config = hand or HandConfig()
        self.hand: Hand | None = None
        self.outcome: str | None = None
        self.orders: list[dict] = []  # a spectator gives none; kept for the recorder's manifest
        self.setup_keys = False
        self._regions = rules.regions(SEEN)
        self._look_at = 0

    def request(self) -> CaptureRequest:
        return CaptureRequest(views=False, regions=self._regions)

    @property
    def over(self) -> bool:
        return self.outcome is not None

    def decide(self, capture: Capture) -> list:
        now = capture.t_ns
        if self.hand is None:
            self.hand = Hand(self.rules.size, self.rng, now, capture.pointer, self.hand_config, source="ai")
        hand = self.hand
        hand.sync(now)
        until = now + DECISION_NS
        if hand.busy() or self.over or now < self._look_at:
            return hand.due(until)
        w, h, (hx, hy) = self.cursor
        hide = (capture.pointer[0] - hx, capture.pointer[1] - hy, w, h)
        crops = capture.regions
        for name in ("win", "loss", "draw"):
            if self.rules.match(name, crops, hide):
                self.outcome = name
                return hand.due(until)
        target = self.rules.find("event_ok", crops, hide)
        if target is None and self.rules.match("news_ok", crops, hide):
            target = self.rules.center("news_ok")
        if target is not None:
            hand.wait_range((0.3, 1.0))
            hand.click(*target, "close_popup")
            self._look_at = hand.free_at + DECISION_NS // 2
        return hand.due(until)

    def summary(self) -> dict:
        return {"outcome": self.outcome}
