"""Replay of imitation data beside PPO (train-ppo --replay DATA): an endless, seeded stream of train-bc's
batches from labelled session folders, so that RL keeps the interface skills the start was cloned from
(VPT 2022; Wolczyk et al. 2024 on forgetting in fine-tuning).

`Replay(data, sources, layout, window, batch, seed, timing=)` finds DATA's sessions as `train-bc DATA --sources`
does (`data.sources.find_sessions`: demonstrations, a DAgger run's sessions with the scripted player's
labels, IDM-labelled video), and `next()` gives one batch of `batch` windows of `window` decisions in
train-bc's seeded order (`data.loader.WindowLoader`, in this process), epoch after epoch. `position()` /
the `position` argument make a resumed run read the batches the uninterrupted one would have.
`bc_loss(policy, batch)` is train-bc's loss on it: the mean over the counted decisions of the demonstrated
tokens' negative log-likelihood, each window from a fresh memory with the previous action kept. `timing`
is the start policy's own (`train-bc --timing`): a policy cloned from in-order tokens replays them so.

Try: .venv/bin/python -m pytest -q tests/rl/test_replay.py
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import Batch, DataPosition, DataSettings, WindowLoader
from hoi4_arena.data.sources import EXPERT_SOURCE, IDM_SOURCE, find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.bc import slot_nll, to_device


class Replay:
    """The endless batch stream of the module docstring."""

    def __init__(
        self,
        data: str,
        sources: tuple[str, ...],
        layout: str,
        window: int,
        batch: int,
        seed: int,
        position: dict[str, Any] | None = None,
        timing: str = "recorded",
    ) -> None:
        try:
            found = find_sessions(data, sources, layout)
        except UserError as error:  # no such folder, an unknown source, nothing usable: train-bc's words
            raise UserError(
                f"--replay {data}: {str(error).replace('--sources', '--replay-sources')}"
            ) from None
        self.sessions = found.train + found.val  # all of it replays: nothing here is scored on it
        if not self.sessions:
            raise UserError(
                f"--replay {data}: no usable session of sources {', '.join(sources)} there "
                f"({len(found.skipped)} skipped); give labelled sessions (train-bc DATA), or --replay-sources"
            )
        self.data = data
        self.loader = WindowLoader(
            DataSettings(
                decode=DecodeSettings(
                    layout,
                    idm_sessions=tuple(s.id for s in self.sessions if s.source == IDM_SOURCE),
                    expert_sessions=tuple(s.id for s in self.sessions if s.source == EXPERT_SOURCE),
                    timing=timing,
                ),
                window=window,
                batch=batch,
                seed=seed,
            ),
            workers=0,
        )
        self._position = DataPosition.from_dict(position) if position else DataPosition(0, (0,))
        self._batches: Iterator[tuple[Batch, DataPosition]] | None = None

    def next(self) -> Batch:
        """The next batch; a new epoch (a new seeded order) when one ends."""
        for _ in range(2):  # the epoch under way, else the next one from its start
            if self._batches is None:
                self._batches = self.loader.epoch(self.sessions, self._position.epoch, self._position)
            for batch, where in self._batches:
                self._position = where
                return batch
            self._batches = None
            self._position = DataPosition(self._position.epoch + 1, (0,))
        raise UserError(f"--replay {self.data}: a whole epoch gave no window to learn from")

    def position(self) -> dict[str, Any]:
        """Where the stream stands (progress.pt keeps it)."""
        return self._position.to_dict()

    def close(self) -> None:
        self.loader.close()


def bc_loss(policy: Policy, batch: Batch, chunk: int | None = None) -> torch.Tensor:
    """train-bc's loss on `batch`: the demonstrated tokens' NLL, mean over the counted decisions."""
    obs, tokens, mask, state, fed = to_device(batch, policy, torch.device("cpu"))
    out = policy(obs, tokens, state, chunk=chunk, fed=fed)
    return (slot_nll(out).sum(-1) * mask).sum() / mask.sum().clamp(min=1)
