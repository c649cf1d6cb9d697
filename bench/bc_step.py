"""Benchmark: behaviour-cloning training decisions per second on this CPU, chunked path vs naive path.

One training step of train-bc's default config -- encoder cnn, layout cpu, windows of 16 decisions,
batches of 8 windows, AdamW, gradient clipping -- timed two ways in one process, interleaved:

- chunked: `Policy.forward(..., chunk=4)` (train-bc's default): perception of all 128 frames at once,
  the trained blocks and readers recomputed 4 frames at a time in the backward pass, then the memory
  over the window and the head over every decision at once;
- naive: `Policy.forward_naive(...)`: every decision on its own, everything recomputed (the reference
  the tests hold the chunked path to).

Views, speeds, pointers and tokens are random (no layer's cost depends on what the pixels show; about
30% of the slots are moves, as in busy play). It prints the median step time of each path, decisions/s
(B x T / step time), the ratio chunked / naive in decisions/s, the thread count and the load average.
Torch's CPU threads spin: on a loaded 2-core machine 2 threads can be many times slower than 1, so the
thread count is pinned (--threads, default 1) and reported.

Try: .venv/bin/python bench/bc_step.py --steps 5
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Observation, Policy


def random_window(
    config: PolicyConfig, batch: int, window: int, seed: int
) -> tuple[Observation, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sizes, space = config.sizes, ActionSpace.default()
    lead = (batch, window)

    def pixels(*shape: int) -> torch.Tensor:
        return torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)

    clip = (sizes.clip,) if config.reads_clip else ()
    obs = Observation(
        global_view=pixels(*clip, *sizes.global_hw, 3),
        quadrants=pixels(4, *sizes.quadrant_hw, 3),
        fovea=pixels(sizes.fovea, sizes.fovea, 3),
        speed=torch.randint(1, config.speeds + 1, lead, generator=g),
        pointer=torch.randint(0, space.lattice, (*lead, 2), generator=g),
    )
    shape = (*lead, space.slots)
    move = torch.rand(shape, generator=g) < 0.3
    kind = torch.where(move, space.move_kinds[0], torch.randint(2, space.kinds, shape, generator=g))
    xy = torch.where(move[..., None], torch.randint(0, space.lattice, (*shape, 2), generator=g), 0)
    return obs, torch.cat([kind[..., None], xy], dim=-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps of each path (after one warm-up)")
    parser.add_argument("--batch", type=int, default=8, help="windows per step")
    parser.add_argument("--window", type=int, default=16, help="decisions per window")
    parser.add_argument(
        "--chunk", type=int, default=4, help="frames per recomputed chunk (train-bc's --chunk)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (pinned; reported)")
    parser.add_argument("--encoder", default="cnn", help="encoder of the timed policy")
    parser.add_argument("--layout", default="cpu", help="view layout of the timed policy")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = PolicyConfig(layout=args.layout, encoder=args.encoder)
    policy = Policy(config).train()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-4)
    obs, tokens = random_window(config, args.batch, args.window, seed=0)
    decisions = args.batch * args.window

    def step(path: str) -> float:
        start = time.perf_counter()
        if path == "chunked":
            out = policy(obs, tokens, chunk=args.chunk)
        else:
            out = policy.forward_naive(obs, tokens)
        loss = -out.logp.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        return time.perf_counter() - start

    paths = ("chunked", "naive")
    times: dict[str, list[float]] = {path: [] for path in paths}
    for path in paths:
        step(path)  # warm-up: allocations, first-call dispatch
    for _ in range(args.steps):
        for path in paths:  # interleaved, so a change of machine load hits both
            times[path].append(step(path))
    result = {
        "config": {
            "encoder": config.encoder,
            "layout": config.layout,
            "batch": args.batch,
            "window": args.window,
            "chunk": args.chunk,
            "parameters": policy.parameter_count()["total"],
        },
        "threads": torch.get_num_threads(),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "steps": args.steps,
    }
    for path in paths:
        median = float(np.median(times[path]))
        result[path] = {"step_s": round(median, 3), "decisions_per_s": round(decisions / median, 1)}
    result["ratio_chunked_over_naive"] = round(
        result["chunked"]["decisions_per_s"] / result["naive"]["decisions_per_s"], 2
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
