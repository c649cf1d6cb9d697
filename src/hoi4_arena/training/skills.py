"""train-bc --skills: each decision's intent, from the relabeller, as the policy's intent input.

`SessionIntents(sessions, settings)` relabels every training and held-out session once
(`players/intents.py`: the skill its inputs carry, the step in progress between them) and `for_batch`
looks up the (B, L) intents of a batch's windows by their (session, span) keys, as
`training/advantage.py` looks up weights; decisions past a session's end (padding) get `none`.
Only scripted sessions name their skills: any other source, or a scripted session whose inputs carry
none, is refused with a message that names it.

Try: hoi4-arena train-bc runs/demos out/skills --skills --sources scripted
"""

from __future__ import annotations

import numpy as np

from hoi4_arena.data.loader import Batch, DataSettings
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.errors import UserError
from hoi4_arena.players.intents import INTENTS, NONE, relabel, vocabulary


class SessionIntents:
    """The intents of the sessions' decisions, looked up per batch (see the module docstring)."""

    def __init__(self, sessions: list[SessionSource], settings: DataSettings) -> None:
        others = [s for s in sessions if s.source != "scripted"]
        if others:
            listed = ", ".join(f"{s.id} ({s.source})" for s in others[:3])
            raise UserError(
                f"--skills learns from scripted sessions, whose inputs name the skill they served; "
                f"{len(others)} session(s) are not: {listed}. Give --sources scripted"
            )
        self._labels: dict[str, np.ndarray] = {}
        self._starts: dict[str, list[int]] = {}
        counts = np.zeros(len(INTENTS), np.int64)
        for source in sessions:
            labels = relabel(source.path).labels  # UserError for a session without skills
            if len(labels) != source.decisions:
                raise UserError(
                    f"{source.path}: {len(labels)} labelled decisions, but training counts {source.decisions}"
                )
            self._labels[source.id] = labels
            self._starts[source.id] = [span.start for span in settings.spans(source)]
            counts += np.bincount(labels, minlength=len(INTENTS))
        self.stats = {**vocabulary(), "decisions": dict(zip(INTENTS, counts.tolist(), strict=True))}

    def for_batch(self, batch: Batch) -> np.ndarray:
        """(B, L) int64: each row's decisions' intents (`none` past the session's end: padding)."""
        rows = batch.arrays["region"].shape
        out = np.full(rows, NONE, np.int64)
        for row, (sid, span) in enumerate(batch.keys):
            labels, start = self._labels[sid], self._starts[sid][span]
            part = labels[start : start + rows[1]]
            out[row, : len(part)] = part
        return out
