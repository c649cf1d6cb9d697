"""Benchmark: one optimizer step of a policy on the CPU, all tensors in one batched call vs torch's default loop.

Every training command builds its optimizer with `training.run_control.adam`: AdamW (Adam for PPO) with
`foreach=True`. Torch picks the batched (`foreach`) implementation only on CUDA; on the CPU its default
updates each of a policy's ~140 tensors in turn. In one process this builds the same policy twice
(train-bc's cnn on the cpu layout: the tiny widths the tests train, or the default widths), gives both
the same gradients, takes alternate steps with each optimizer, checks that the weights stay equal bit for
bit, and prints the median CPU time of a step each way and the ratio.

Try: python bench/optimizer_step.py --steps 30 --widths tiny
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time

import torch

from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.run_control import adam

TINY = dict(width=8, summary_dim=16, cell_dim=24, fovea_dim=16, hidden=48, head_dim=48, position_dim=16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps each way")
    parser.add_argument("--widths", choices=("tiny", "default"), default="tiny", help="the policy's widths")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ours_policy = Policy(PolicyConfig(layout="cpu", **(TINY if args.widths == "tiny" else {})))
    base_policy = copy.deepcopy(ours_policy)
    ours = adam(ours_policy.parameters(), 1e-3, 0.01)
    base = torch.optim.AdamW(base_policy.parameters(), lr=1e-3, weight_decay=0.01)  # torch's CPU default
    draws = torch.Generator().manual_seed(1)
    for a, b in zip(ours_policy.parameters(), base_policy.parameters(), strict=True):
        a.grad = torch.randn(a.shape, generator=draws)
        b.grad = a.grad.clone()
    times: dict[str, list[float]] = {"foreach": [], "loop": []}
    for _ in range(args.steps + 1):  # the first step of each (the optimizer's state made) is not timed
        for name, optimizer in (("foreach", ours), ("loop", base)):
            start = time.process_time()
            optimizer.step()
            times[name].append(time.process_time() - start)
    same = all(
        torch.equal(a, b) for a, b in zip(ours_policy.parameters(), base_policy.parameters(), strict=True)
    )
    assert same, "the two optimizers' weights differ"
    foreach_s, loop_s = statistics.median(times["foreach"][1:]), statistics.median(times["loop"][1:])
    print(
        json.dumps(
            {
                "widths": args.widths,
                "tensors": len(list(ours_policy.parameters())),
                "parameters": sum(p.numel() for p in ours_policy.parameters()),
                "steps": args.steps,
                "threads": args.threads,
                "foreach_ms": round(foreach_s * 1000, 2),
                "loop_ms": round(loop_s * 1000, 2),
                "ratio": round(loop_s / foreach_s, 2),
                "same_weights": same,
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
