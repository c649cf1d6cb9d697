"""scripts/aim_error.py: each move's teacher-forced pointer error, and two checkpoints compared move by move."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from project_scripts import load_script
from tiny import TINY

aim_error = load_script("aim_error")


def _checkpoint(path: Path, seed: int) -> str:
    torch.manual_seed(seed)
    policy = Policy(PolicyConfig(layout="cpu", **TINY))
    return str(save_checkpoint(path, policy, provenance=Provenance(data="none", seed=seed)))


def test_two_checkpoints_score_the_same_moves_and_are_paired(marker_data: Path, tmp_path: Path) -> None:
    # The marker game clicks its markers: its held-out session's moves are aim moves (each the last move
    # before a press), and two policies are scored on the same ones in the same order.
    a = aim_error.distances(str(marker_data), _checkpoint(tmp_path / "a.pt", 0))
    b = aim_error.distances(str(marker_data), _checkpoint(tmp_path / "b.pt", 1))
    assert len(a["aim"]) == len(b["aim"]) > 0 and len(a["path"]) == len(b["path"])
    assert all((d >= 0).all() for d in (*a.values(), *b.values()))
    lines = aim_error.report(a)  # one line a kind of move that has any
    assert lines[0].startswith(f"aim  {len(a['aim']):5d} moves") and f"within {aim_error.NEAR}" in lines[0]
    assert len(lines) == 1 + bool(len(a["path"]))
    # Paired: a policy against itself has no discordant moves; moves near for one only count for it.
    assert aim_error.paired(a["aim"], a["aim"]) == (0, 0, 1.0)
    near, far = np.array([1.0, 1.0, 1.0, 50.0]), np.array([50.0, 50.0, 1.0, 50.0])
    only_a, only_b, p = aim_error.paired(near, far)
    assert (only_a, only_b) == (2, 0) and p == 0.5
