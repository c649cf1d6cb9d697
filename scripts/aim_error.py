"""Teacher-forced pointer error of a checkpoint, aim moves apart from the rest of a path.

An aim move is the last move before a mouse button token (`training.bc.aim_moves`): where a click or a
drag's end lands. Scores every window of DATA's held-out sessions (all its sessions when none is held
out) and prints, for aim moves and for the other moves, the count, the median distance in lattice units
between the policy's argmax point and the demonstrated one, and the share within 16 and 32 units.
With a second checkpoint OTHER, both score the same moves, and the aim moves within 32 units are
compared move by move: how many only CHECKPOINT / only OTHER lands within 32, with the exact McNemar p.
docs/learning.md, "Why it lost", and docs/dagger.md quote its output.

Usage: .venv/bin/python scripts/aim_error.py DATA CHECKPOINT [OTHER]
"""

from __future__ import annotations

import signal
import sys

import numpy as np
import torch

from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import sample_refs
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.evaluation.paired import mcnemar_exact
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.training.bc import aim_moves, to_device

NEAR = 32
"""Lattice units an aim move may be off and count as landing near (the paired comparison's cut)."""


def distances(data: str, checkpoint: str) -> dict[str, np.ndarray]:
    """Each move's distance (lattice units) from the policy's argmax point to the demonstrated one, in the
    sessions' order: "aim" moves and the other ("path") moves."""
    policy = load_checkpoint(checkpoint).policy.eval()
    found = find_sessions(data, ("scripted", "human"))
    sessions = found.val or found.train
    settings = DataSettings(window=8, batch=8)
    refs = sample_refs([len(settings.spans(s)) for s in sessions], 0, 0)
    errors: dict[str, list[np.ndarray]] = {"aim": [], "path": []}
    with WindowLoader(settings, 0) as loader, torch.no_grad():
        for batch in loader.ordered(sessions, refs):
            obs, tokens, mask, state, fed = to_device(batch, policy, torch.device("cpu"))
            scores = policy(obs, tokens, state, chunk=None, fed=fed).scores
            moves = scores.move & mask.bool()[..., None]
            aims = aim_moves(tokens)
            distance = (scores.pointer_pred - tokens[..., 1:]).double().norm(dim=-1)
            errors["aim"].append(distance[moves & aims].numpy())
            errors["path"].append(distance[moves & ~aims].numpy())
    return {name: np.concatenate(parts) for name, parts in errors.items()}


def report(errors: dict[str, np.ndarray]) -> list[str]:
    return [
        f"{name:4s} {len(d):5d} moves  median {np.median(d):6.1f}  "
        f"within 16 {(d <= 16).mean():.2f}  within {NEAR} {(d <= NEAR).mean():.2f}"
        for name, d in errors.items()
        if len(d)
    ]


def paired(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """Aim moves only A / only B lands within NEAR of, and the exact McNemar p."""
    near_a, near_b = a <= NEAR, b <= NEAR
    only_a, only_b = int((near_a & ~near_b).sum()), int((near_b & ~near_a).sum())
    return only_a, only_b, mcnemar_exact(only_a, only_b)


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    torch.set_num_threads(2)
    data, checkpoints = sys.argv[1], sys.argv[2:]
    scored = [distances(data, checkpoint) for checkpoint in checkpoints]
    for checkpoint, errors in zip(checkpoints, scored, strict=True):
        if len(checkpoints) > 1:
            print(checkpoint)
        print("\n".join(report(errors)))
    if len(scored) == 2:
        only_a, only_b, p = paired(scored[0]["aim"], scored[1]["aim"])
        print(
            f"aim moves within {NEAR}: only the first {only_a}, only the second {only_b}, McNemar p = {p:.3g}"
        )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
