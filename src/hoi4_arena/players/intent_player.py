"""The scripted player chooses the intents, a policy trained with train-bc --skills carries them out.

`IntentPlayer(policy, scripted, speed)` runs the scripted player (`players/scripted.py`) in the shadow:
every decision it sees the capture and decides as it always does, but its events are never applied.
What it would have served is the decision's intent (`players/intents.py`'s `live_intent`: the skill
of its events, else the step its phase is on), given to the policy, whose tokens are the decision's
input (source `policy`, each event's skill the intent it served). The shadow follows the game from the
screen alone, as it does after a policy's opening (`players/handover.py`): a step the policy carries
out shows its effect and the shadow moves on; a step the policy fails is tried again by the shadow (in
vain, it has no hand) a bounded number of times and then given up, so the intents still move on.
The orders in the manifest are the shadow's: the steps whose effect the screen showed.

`record-ai OUT --intent-policy CKPT` records such games (sessions of source `policy`).

Try: hoi4-arena record-ai out --games 2 --intent-policy runs/skills/last.pt
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from hoi4_arena.players.intents import INTENTS, live_intent
from hoi4_arena.players.scripted_record import ScriptedRecord
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.tokens import tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest


class IntentPlayer(ScriptedRecord):
    """The scripted player's intents, the policy's inputs; see the module docstring.

    `policy` is a `play.policy_player.PolicyPlayer` of a checkpoint conditioned on intents, already
    `reset` for the game; `speed` the match's game speed. The scripted player's interface (`request`,
    `decide`, `orders`, ...).
    """

    def __init__(self, policy: Any, scripted: Any, speed: int) -> None:
        if scripted.setup_keys:
            raise ValueError("a paused setup needs the scripted player's own hand: the policy cannot unpause")
        if not policy.config.intents:
            raise ValueError("the policy takes no intent (train it with train-bc --skills)")
        self.policy = policy
        self.scripted = scripted
        self.speed = speed
        self.setup_keys = False
        self.intents: list[str] = []
        """The intent of each decision so far."""

    def request(self) -> CaptureRequest:
        wanted = self.scripted.request()  # its template crops, and the whole frame when it plans
        return CaptureRequest(views=True, full=wanted.full, regions=wanted.regions)

    def decide(self, capture: Capture) -> list[InputEvent]:
        shadow = self.scripted.decide(capture)  # what it would do: never applied
        intent = live_intent(self.scripted, shadow)
        self.intents.append(intent)
        if self.scripted.over:
            return []
        self.policy.intent = INTENTS.index(intent)
        pointer = to_lattice(*capture.pointer, capture.size)
        tokens = self.policy.decide(capture.views, self.speed, pointer)
        events = tokens_to_events(
            tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy"
        )
        return [replace(event, skill=intent) for event in events]

    def summary(self) -> dict[str, Any]:
        counts = Counter(self.intents)
        return {
            **self.scripted.summary(),
            "intent_policy": self.policy.name,
            "intents": {name: counts.get(name, 0) for name in INTENTS},
        }
