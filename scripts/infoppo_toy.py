"""InfoPPO's options against plain PPO on a task a tiny policy can learn in minutes (a toy, not the game).

A random tiny policy cannot move the game's own reward terms in minutes (it would have to form an army
through the screen), so, as tests/rl/test_ppo.py does, the game's `setup` term is replaced by one it can
earn: the share of no-op tokens in each decision. Each variant trains the same tiny policy from the same
seeds for the same updates; the script prints the shaped return of the first and the last updates per
seed, and the mean over seeds.

Try: .venv/bin/python scripts/infoppo_toy.py --updates 12 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import signal
import tempfile
from pathlib import Path

import numpy as np

from hoi4_arena.play import rollout_game
from hoi4_arena.rl.ppo import train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.screen.tokens import NONE

TINY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
VARIANTS = {
    "ppo": {},
    "information clock": {"clock": "information"},
    "adaptive clip": {"clip_mode": "adaptive"},
    "infoppo (both)": {"clock": "information", "clip_mode": "adaptive"},
    "ppo gamma 0": {"gamma": 0.0},
}
"""The last: plain PPO that sees only each decision's own reward. With a reward paid at once, as here, a
random policy's decisions carry tens of nats each, so the information clock's (gamma * lam) ** h is
about 0 and it discounts as myopically as gamma 0 does."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=12)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, default=None, help="write the table as JSON here")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names of VARIANTS")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    earned: list[float] = []
    step = rollout_game.RolloutGame.step

    def shaped(self, tokens, next_plan, rival=None):
        answer = step(self, tokens, next_plan, rival)
        answer.rewards["setup"] = float(np.mean(tokens[:, 0] == NONE))
        earned.append(answer.rewards["setup"])
        return answer

    rollout_game.RolloutGame.step = shaped  # serial mode (workers 0): the engine's games run here
    table: dict[str, dict] = {}
    for name in args.variants.split(","):
        options = VARIANTS[name]
        runs = []
        for seed in seeds:
            earned.clear()
            with tempfile.TemporaryDirectory() as out:
                settings = dict(
                    out=str(Path(out) / "run"),
                    updates=args.updates,
                    games=2,
                    workers=0,
                    steps=16,
                    window=8,
                    batch=4,
                    max_days=4,
                    policy=TINY,
                    reward={"setup": 1.0},
                    gamma=0.9,
                    lr=1e-2,
                    epochs=3,
                    seed=seed,
                    progress=False,
                    save_every=0.0,
                )
                config = PPOConfig(**{**settings, **options})
                train_ppo(config)
            per_update = np.array(earned).reshape(args.updates, -1).mean(axis=1)
            runs.append(per_update)
        curves = np.stack(runs)
        table[name] = {
            "first": [round(float(v), 3) for v in curves[:, 0]],
            "last": [round(float(v), 3) for v in curves[:, -1]],
            "mean_curve": [round(float(v), 3) for v in curves.mean(axis=0)],
        }
        print(f"{name:20s} first {table[name]['first']}  last {table[name]['last']}", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps({"updates": args.updates, "seeds": seeds, "table": table}, indent=1))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
