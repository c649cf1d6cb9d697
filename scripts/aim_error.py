"""Teacher-forced pointer error of a checkpoint, aim moves apart from the rest of a path.

An aim move is the last move before a mouse button token (`training.bc.aim_moves`): where a click or a
drag's end lands. Scores every window of DATA's held-out sessions (all its sessions when none is held
out) and prints, for aim moves and for the other moves, the count, the median distance in lattice units
between the policy's argmax point and the demonstrated one, and the share within 16 and 32 units.
docs/learning.md, "Why it lost", quotes its output.

Usage: .venv/bin/python scripts/aim_error.py DATA CHECKPOINT
"""

import sys

import numpy as np
import torch

from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import sample_refs
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.training.bc import aim_moves, to_device


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    torch.set_num_threads(2)
    policy = load_checkpoint(sys.argv[2]).policy.eval()
    data = find_sessions(sys.argv[1], ("scripted", "human"))
    sessions = data.val or data.train
    settings = DataSettings(window=8, batch=8)
    refs = sample_refs([len(settings.spans(s)) for s in sessions], 0, 0)
    errors: dict[str, list[np.ndarray]] = {"aim": [], "path": []}
    with WindowLoader(settings, 0) as loader, torch.no_grad():
        for batch in loader.ordered(sessions, refs):
            obs, tokens, mask, state = to_device(batch, policy, torch.device("cpu"))
            scores = policy(obs, tokens, state, chunk=None).scores
            moves = scores.move & mask.bool()[..., None]
            aims = aim_moves(tokens)
            distance = (scores.pointer_pred - tokens[..., 1:]).double().norm(dim=-1)
            errors["aim"].append(distance[moves & aims].numpy())
            errors["path"].append(distance[moves & ~aims].numpy())
    for name, parts in errors.items():
        d = np.concatenate(parts)
        if len(d):
            print(
                f"{name:4s} {len(d):5d} moves  median {np.median(d):6.1f}  "
                f"within 16 {(d <= 16).mean():.2f}  within 32 {(d <= 32).mean():.2f}"
            )


if __name__ == "__main__":
    main()
