"""Benchmark: learner decisions per second of a PPO update (train-ppo), by critic schedule.

Three one-update train-ppo runs in this process, on the same rollout settings (the default policy:
encoder cnn, layout cpu, 2.47 M parameters, saved untrained and given as --init; 640x360, speed 5;
`--games` x `--steps` decisions a rollout, windows of 16, batches of 8, 2 epochs, one torch thread):

- joint: one loss (actor + value) per minibatch, one forward and backward: the baseline, the cost of a
  plain teacher-forced training step over the windows (what a behaviour-cloning step does);
- pact: the actor's step, then the windows replayed through the updated policy (a forward without a
  graph) and the value head's step on them;
- pact+bc_kl: the same, plus the frozen start policy scoring every window (a forward without a graph).

Learner decisions/s = epochs x rollout decisions / the learning's seconds; collection's decisions/s is
printed beside it (the same rollout each time: the runs share their seeds). Ratios are to joint. The
load average is printed: the machine is shared.

Try: .venv/bin/python bench/ppo_update.py --games 4 --steps 32
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import torch

from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.rl.ppo import train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        init = str(save_checkpoint(Path(tmp) / "init.pt", Policy(PolicyConfig())))
        for name, changes in (
            ("joint", {"critic": "joint"}),
            ("pact", {"critic": "pact"}),
            ("pact+bc_kl", {"critic": "pact", "bc_kl": 0.01}),
        ):
            config = PPOConfig(
                out=str(Path(tmp) / name),
                init=init,
                updates=1,
                games=args.games,
                steps=args.steps,
                workers=args.workers,
                threads=args.threads,
                progress=False,
                **changes,
            )
            rows[name] = train_ppo(config)["last"]
    torch.set_num_threads(args.threads)
    print(
        f"one update of {args.games} games x {args.steps} decisions, {args.threads} torch thread(s), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'critic':<12} {'learn decisions/s':>17} {'vs joint':>8} {'collect decisions/s':>19}")
    base = rows["joint"]["learn_decisions_per_s"]
    for name, row in rows.items():
        rate = row["learn_decisions_per_s"]
        print(f"{name:<12} {rate:>17.1f} {rate / base:>8.2f} {row['collect_decisions_per_s']:>19.1f}")


if __name__ == "__main__":
    main()
