"""The quickstart's optional PPO stage: fine-tune the behaviour-cloned checkpoint against the game's AI.

`fine_tune(out, init, updates, ...)` runs (or resumes) `train-ppo` into OUT/ppo from `init` (the
quickstart's OUT/bc/last.pt) for `updates` updates with `PPO_SETTINGS`, on the quickstart's training
maps, screen, speed and seed, and returns train-ppo's summary. The fine-tuned checkpoint is
OUT/ppo/last.pt; the quickstart evaluates it as it evaluates the learned one (play-policy on the same
seeds and sides), and the report puts it beside its BC start.

The run is defined by `updates` and the seed (fixed by work, like the rest of the quickstart).

Try: .venv/bin/python -c "from hoi4_arena.rl.fine_tune import PPO_SETTINGS; print(PPO_SETTINGS)"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PPO_SETTINGS: dict[str, Any] = {
    "games": 8,
    "steps": 32,
    "window": 8,
    "reset_memory": 8,  # the memory as BC trained it: a fresh one every window of 8
    "epochs": 2,
    "batch": 8,
    "lr": 3e-5,
    "bc_kl": 0.01,
    "critic": "pact",
    "reward": {"setup": 0.5, "provinces": 1.0},
    "max_days": 60,
}
"""The stage's train-ppo settings (docs/rl.md: what was measured with them)."""


def fine_tune(
    out: Path,
    init: Path,
    updates: int,
    *,
    arena: tuple[str, ...],
    size: tuple[int, int],
    speed: int,
    seed: int,
    threads: int = 1,
    workers: int = 2,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) train-ppo into `out` from checkpoint `init` for `updates` updates; its summary."""
    from hoi4_arena.rl.ppo import PROGRESS, train_ppo
    from hoi4_arena.rl.ppo_config import PPOConfig

    config = PPOConfig(
        out=str(out),
        init=str(init),
        updates=updates,
        arena=arena,
        size=size,
        speed=speed,
        seed=seed,
        threads=threads,
        workers=workers,
        progress=progress,
        **PPO_SETTINGS,
    )
    if (Path(out) / PROGRESS).exists():
        return train_ppo(config, resume=True, changes={"updates": updates})
    return train_ppo(config)
