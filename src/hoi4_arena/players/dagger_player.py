"""DAgger's player: a learner plays, the scripted player (or the search player, its subclass: expert iteration)
labels every decision from the screen in the shadow, and with probability beta the expert's input is what
the game gets instead of the learner's.

`DaggerPlayer(policy, shadow, beta, seed, speed)` each decision:

1. the shadow expert (`players/shadow.py`) gives its label: the input it would give from this screen;
2. the learner (a `play.policy_player.PolicyPlayer` or any token policy, already reset for the game)
   gives its tokens from the same capture;
3. a coin of the game's own stream (seeded by the game's seed and side) falls with probability `beta`:
   the label is applied (events of source `scripted`, with their skills), else the learner's tokens
   (source `policy`). With `segment` N > 1 a coin is drawn every N decisions and holds for them all: the
   expert's steps (a think, a path of moves, a press) span several decisions, and a coin each decision
   cuts most of them off halfway. The policy is told what was played (`played`, where it has it), so its memory's
   previous action is the game's, as training's is;
4. with `takeover` P > 0, a decision the learner drives whose label acts and whose learner's tokens do
   not carry it out (`shadow.follows`) goes to the expert instead with probability P (a coin of its own
   stream, so the beta coins fall as without it), and every stretch the expert plays runs on until its
   step is done: nothing queued in its hand and nothing held down. The learner still drives the game
   into its own states, and a label given there is the first decision of a step the expert then plays
   to its end, not a fragment whose continuation is never asked (docs/dagger.md, "Which part of
   DAgger's data hurts");
5. the shadow is told what was applied, so its next label starts from where the game now stands.

`decisions` keeps per decision the capture time, the label's tokens, the learner's tokens and whether
the label was played; `write_expert_labels` stores them beside the session (labels-expert.json, source
`expert`, `sessions/labels.py`): decision k of the session gets the label of the capture it anchors on.
`agreement` says how often the learner's tokens carried out the label (`shadow.follows`).

`hoi4-arena dagger` plays these games (`play/dagger.py`).

Try: .venv/bin/python -m pytest -q tests/players/test_shadow.py
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.players.scripted_record import ScriptedRecord
from hoi4_arena.players.shadow import ShadowExpert, follows
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.tokens import NONE, tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest
from hoi4_arena.sessions.labels import write_labels
from hoi4_arena.sessions.reader import SessionReader


@dataclass(frozen=True)
class LabelledDecision:
    """One decision of a DAgger game."""

    t_ns: int
    """The capture's time: the session's decision anchored on it gets this label."""
    label: np.ndarray
    """(8, 3) the expert's tokens from this screen."""
    learner: np.ndarray
    """(8, 3) the learner's tokens from this screen."""
    expert: bool
    """Whether the label was applied (else the learner's tokens were)."""


class DaggerPlayer(ScriptedRecord):
    """A learner's game with the expert's labels; see the module docstring. `beta` is the chance per
    decision that the expert's input is applied; `seed` and `side` seed that coin."""

    setup_keys = False

    def __init__(
        self,
        policy: Any,
        shadow: ShadowExpert,
        beta: float,
        seed: int,
        side: str,
        speed: int,
        segment: int = 1,
        takeover: float = 0.0,
    ) -> None:
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must lie in 0..1, not {beta!r}")
        if segment < 1:
            raise ValueError(f"segment must be >= 1 decisions, not {segment!r}")
        if not 0.0 <= takeover <= 1.0:
            raise ValueError(f"takeover must lie in 0..1, not {takeover!r}")
        self.policy = policy
        self.shadow = shadow
        self.scripted = shadow.scripted
        self.beta = float(beta)
        self.speed = speed
        self.layout = policy.layout
        self.segment = segment
        self.rng = random.Random(f"dagger-{seed}-{side}")
        self.expert_now = False
        self.takeover = float(takeover)
        self.takeover_rng = random.Random(f"dagger-takeover-{seed}-{side}")
        self.finishing = False
        """With `takeover`: the expert played the last decision and its step is not done."""
        self.takeovers = 0
        """Learner's decisions handed to the expert (a step begun where the learner stood)."""
        self.decisions: list[LabelledDecision] = []

    def request(self) -> CaptureRequest:
        wanted = self.shadow.request()  # its template crops, and the whole frame when it reads the map
        return CaptureRequest(views=self.layout is not None, full=wanted.full, regions=wanted.regions)

    def decide(self, capture: Capture) -> list[InputEvent]:
        label = self.shadow.label(capture)
        label_tokens = self.shadow.label_tokens
        pointer = to_lattice(*capture.pointer, capture.size)
        learner_tokens = self.policy.decide(capture.views or None, self.speed, pointer)
        if len(self.decisions) % self.segment == 0:  # a new segment: a new coin (each decision when 1)
            self.expert_now = self.rng.random() < self.beta
        expert = self.expert_now or self.finishing
        if not expert and self.takeover > 0.0 and self.missed(label_tokens, learner_tokens):
            expert = self.takeover_rng.random() < self.takeover
            self.takeovers += expert
        if expert:
            events = label
        else:
            events = tokens_to_events(
                learner_tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy"
            )
        played = self.shadow.applied(events, capture)
        self.finishing = self.takeover > 0.0 and expert and self.step_open()
        if expert and hasattr(self.policy, "played"):
            self.policy.played(played)
        self.decisions.append(LabelledDecision(capture.t_ns, label_tokens, learner_tokens, expert))
        return events

    @staticmethod
    def acts(tokens: np.ndarray) -> bool:
        """Whether (8, 3) tokens make any input."""
        return bool((tokens[:, 0] != NONE).any())

    def missed(self, label: np.ndarray, learner: np.ndarray) -> bool:
        """Whether the label acts and the learner's tokens do not carry it out."""
        return self.acts(label) and not follows(label, learner, self.shadow.tolerance)

    def step_open(self) -> bool:
        """Whether the expert is amid a step: events queued in its hand, or a button or key held down."""
        return self.scripted.hand is not None and (self.scripted.hand.busy() or bool(self.shadow.held))

    def agreement(self) -> dict[str, Any]:
        """How often the learner's tokens carried out the label: over all decisions, and over those whose
        label acts (holds any input), with the counts."""
        agree = [follows(d.label, d.learner, self.shadow.tolerance) for d in self.decisions]
        acting = [a for a, d in zip(agree, self.decisions, strict=True) if self.acts(d.label)]
        return {
            "decisions": len(agree),
            "agree": round(float(np.mean(agree)), 4) if agree else None,
            "acting": len(acting),
            "agree_acting": round(float(np.mean(acting)), 4) if acting else None,
            "expert_decisions": sum(d.expert for d in self.decisions),
            **({"takeovers": self.takeovers} if self.takeover > 0.0 else {}),
        }

    def summary(self) -> dict[str, Any]:
        return {
            **self.scripted.summary(),
            "learner": self.policy.name,
            "beta": self.beta,
            "resyncs": self.shadow.resyncs,
            **self.agreement(),
        }


def write_expert_labels(folder: str | Path, decisions: list[LabelledDecision], about: dict[str, Any]) -> dict:
    """Store a DAgger game's labels beside its session (labels-expert.json/.jsonl): the session's decision
    k gets the label of the capture its anchor frame is; a decision without one (none was made from its
    frame) is dropped. Each line says whether the label was played (`expert`). Returns the index."""
    reader = SessionReader(folder)
    windows = reader.windows().windows
    by_time = {d.t_ns: d for d in decisions}
    n = len(windows)
    tokens = np.zeros((n, 8, 3), np.int64)
    dropped = np.ones(n, bool)
    extra: list[dict[str, Any]] = []
    for k, window in enumerate(windows):
        found = by_time.get(window.t0_ns)
        if found is not None:
            tokens[k] = found.label
            dropped[k] = False
        extra.append({"expert": bool(found.expert) if found is not None else None})
    frames = [window.frame for window in windows]
    about = {**about, "labelled": int((~dropped).sum())}
    return write_labels(
        folder,
        frames,
        tokens,
        np.zeros((n, 8), np.float32),
        None,
        about,
        source="expert",
        dropped=dropped,
        extra=extra,
    )
