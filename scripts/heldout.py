"""Score checkpoints on held-out recordings with training's own held-out pass (docs/learning.md).

Every window of every session under DATA (windows of 16, a fresh memory each) is scored: the loss per
token kind, the kind accuracy and the median pointer error in lattice units. One JSON line per checkpoint.

Try: .venv/bin/python scripts/heldout.py runs/val8 runs/bc/last.pt
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

import torch

from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import sample_refs
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.training.bc import evaluate
from hoi4_arena.training.bc_config import BCConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "data", help="a folder of recorded sessions (every one is scored, whatever its split)"
    )
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--sources", default="scripted", help="manifest sources, comma-separated")
    args = parser.parse_args()
    torch.set_num_threads(1)
    found = find_sessions(args.data, tuple(args.sources.split(",")))
    sessions = found.train + found.val
    settings = DataSettings(window=16, batch=8)
    refs = sample_refs([len(settings.spans(s)) for s in sessions], 0, 0)
    for path in args.checkpoints:
        checkpoint = load_checkpoint(path)
        config = BCConfig.from_dict(checkpoint.extra["train_config"])
        with WindowLoader(settings, 0) as loader:
            scores = evaluate(checkpoint.policy, loader, sessions, refs, config, torch.device("cpu"))
        print(
            json.dumps(
                {
                    "checkpoint": path,
                    "step": checkpoint.extra.get("step"),
                    "loss": scores["loss"],
                    "loss_by_kind": scores["loss_by_kind"],
                    "kind_accuracy": scores.get("kind_accuracy"),
                    "pointer_median": scores.get("pointer_distance_median"),
                }
            )
        )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    try:
        main()
    except UserError as error:
        sys.exit(f"error: {error}")
