"""The league of `train-ppo --opponent league`: frozen snapshots of the learner to play against.

The run's start policy is snapshot 0; after every `every`-th update the learner is frozen again. Each
snapshot is a policy checkpoint OUT/league/snapshot-NNNN.pt (NNNN: the update it was taken after),
loaded back from that file (so a resumed run plays the very bytes the first one did), and listed with
its file's sha256 and its weights' sha256 (`state()`, kept in progress.pt and in OUT/league/league.json).
`League.restore` refuses a snapshot file that is missing or whose bytes changed.

Who a game's other side is comes from the run's `Schedule` (`Schedule.opponent`, seeded by the run's
seed, the slot and the game's number). For a snapshot member, `choose(plan)` says which: `recent` is the
newest snapshot, `old` one of the others drawn uniformly with a generator seeded the same way (the
newest too while it is the only one). Both are decided when the game begins, from the snapshots there
are then.

Try: .venv/bin/python -m pytest -q tests/rl/test_league.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.policy import Policy
from hoi4_arena.play.pair import file_sha256
from hoi4_arena.play.rollout_game import GamePlan

LISTING = "league.json"


class League:
    """The snapshots of one run, in OUT/league/ (`folder`); see the module docstring."""

    def __init__(self, folder: Path, every: int, seed: int) -> None:
        self.folder = Path(folder)
        self.every = int(every)
        self.seed = int(seed)
        self.snapshots: list[dict[str, Any]] = []
        """Per snapshot: update, file (in `folder`), sha256 (the file's), weights_sha256."""
        self.policies: list[Policy] = []
        """The frozen snapshots, in eval mode, as loaded from their files."""

    def due(self, update: int) -> bool:
        """Whether the learner is frozen after `update` (counted from 1)."""
        return update % self.every == 0

    def add(self, policy: Policy, update: int, provenance: Provenance | None = None) -> None:
        """Freeze `policy` as the snapshot taken after `update` (0: the start)."""
        path = save_checkpoint(
            self.folder / f"snapshot-{update:04d}.pt",
            policy,
            provenance=provenance,
            extra={"league": {"update": update}},
        )
        frozen = self._load(path)
        self.snapshots.append(
            {
                "update": int(update),
                "file": path.name,
                "sha256": file_sha256(path),
                "weights_sha256": weights_sha256(frozen.state_dict()),
            }
        )
        self.policies.append(frozen)
        (self.folder / LISTING).write_text(json.dumps(self.state(), indent=2) + "\n")

    def choose(self, plan: GamePlan) -> int:
        """The snapshot (its index) that plays the other side of `plan`'s game."""
        newest = len(self.snapshots) - 1
        if newest < 0:
            raise ValueError("the league has no snapshot yet")
        if plan.opponent == "recent" or newest == 0:
            return newest
        if plan.opponent == "old":
            rng = np.random.default_rng([self.seed, plan.slot, plan.number, 0x6F6C64])
            return int(rng.integers(newest))
        raise ValueError(f"{plan.opponent!r} is not a league snapshot member (recent, old)")

    def state(self) -> dict[str, Any]:
        return {"every": self.every, "snapshots": [dict(s) for s in self.snapshots]}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a saved league: each snapshot loaded from its file, whose bytes must be the ones
        saved (UserError naming the file otherwise)."""
        self.snapshots, self.policies = [], []
        for entry in state["snapshots"]:
            path = self.folder / entry["file"]
            if not path.is_file():
                raise UserError(f"league snapshot {path} is missing; the run cannot resume its league")
            digest = file_sha256(path)
            if digest != entry["sha256"]:
                raise UserError(
                    f"league snapshot {path} has changed (sha256 {digest}, the run saved {entry['sha256']}); "
                    "put back the file it wrote, or start a new run"
                )
            frozen = self._load(path)
            if weights_sha256(frozen.state_dict()) != entry["weights_sha256"]:
                raise UserError(f"league snapshot {path} does not hold the weights the run saved")
            self.snapshots.append(dict(entry))
            self.policies.append(frozen)

    @staticmethod
    def _load(path: Path) -> Policy:
        policy = load_checkpoint(path).policy.eval()
        policy.requires_grad_(False)
        return policy
