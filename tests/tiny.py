"""The tiny policy widths the tests build, train and play with, written once: a whole policy runs in a few
milliseconds a decision on a CPU, so a training smoke test costs seconds.

`TINY` is the tests' policy, `tiny_ppo` a train-ppo run of it that takes seconds; `TINY_BC` the one the behaviour-cloning tests learn the marker game with
(a wider cell map and head: the marker BC needs them to learn its pointing in 100 steps). A test imports
them as `from tiny import TINY` (tests/ is on the path: pytest puts the root conftest's folder there; a
script such as tests/golden/runner_golden.py adds it itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
TINY_BC = dict(width=8, summary_dim=16, cell_dim=24, fovea_dim=16, hidden=48, head_dim=48, position_dim=16)


def as_option(widths: dict) -> str:
    """The widths as a command line's `--policy` value (`width=8,summary_dim=16,...`)."""
    return ",".join(f"{k}={v}" for k, v in widths.items())


def tiny_ppo(out: Path, **changes: Any) -> Any:
    """A train-ppo config of two tiny games a slot, 2 updates of 8 steps, with `changes` over it."""
    from hoi4_arena.rl.ppo_config import PPOConfig

    settings = dict(
        out=str(out),
        updates=2,
        games=2,
        workers=0,
        steps=8,
        window=4,
        batch=4,
        max_days=2,  # about 9 decisions a game: each slot's first ends in update 2, its second begins
        policy=TINY,
        reward={"provinces": 1.0},
        progress=False,
        save_every=0.0,
    )
    return PPOConfig(**{**settings, **changes})
