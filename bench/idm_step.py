"""Benchmark: IDM training decisions per second, `--sequence N` against one decision per window.

One train-idm step (forward, backward, AdamW) of --decisions decisions, timed two ways in one process,
interleaved, with the same widths, layout and window (behind 1, ahead 4: 0.2 s and 0.8 s):

- one decision per window (`--sequence 0`, the default): every decision reads its own behind + 1 +
  ahead frames, each encoded for it;
- `--sequence N`: chunks of N consecutive decisions, each chunk's behind + N + ahead frames encoded
  once and every decision reading its own frames of them (the same function of the same frames).

Views, speeds, pointers and tokens are random (no layer's cost depends on what the pixels show). It
prints N, each way's median step time, decisions/s, the ratio sequence / single, the thread count and the
load average.

Try: .venv/bin/python bench/idm_step.py --steps 3 --sequence 8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.idm import IDMConfig, InverseDynamics
from hoi4_arena.models.policy import Observation


def random_batch(config: IDMConfig, windows: int, seed: int) -> tuple[Observation, torch.Tensor]:
    """`windows` windows of the IDM's frames and the tokens of every decision they label."""
    g = torch.Generator().manual_seed(seed)
    sizes, space = config.policy.sizes, ActionSpace.default()
    frames = config.behind + max(config.sequence, 1) + config.ahead
    lead = (windows, frames)

    def pixels(*shape: int) -> torch.Tensor:
        return torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)

    obs = Observation(
        global_view=pixels(*sizes.global_hw, 3),
        quadrants=pixels(4, *sizes.quadrant_hw, 3),
        fovea=pixels(sizes.fovea, sizes.fovea, 3),
        speed=torch.randint(1, config.policy.speeds + 1, lead, generator=g),
        pointer=torch.randint(0, space.lattice, (*lead, 2), generator=g),
    )
    shape = (windows * max(config.sequence, 1), space.slots)
    move = torch.rand(shape, generator=g) < 0.3
    kind = torch.where(move, space.move_kinds[0], torch.randint(2, space.kinds, shape, generator=g))
    xy = torch.where(move[..., None], torch.randint(0, space.lattice, (*shape, 2), generator=g), 0)
    return obs, torch.cat([kind[..., None], xy], dim=-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=64, help="decisions per step (train-idm's --batch)")
    parser.add_argument("--sequence", type=int, default=8, help="N of the sequence way")
    parser.add_argument("--steps", type=int, default=3, help="timed steps of each way (after one warm-up)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--policy", default="", help="PolicyConfig widths, e.g. width=8,summary_dim=32")
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    widths = dict(item.split("=") for item in args.policy.split(",") if item)
    policy = PolicyConfig.from_dict({k: int(v) for k, v in widths.items()})
    ways = {}
    for name, sequence in (("single", 0), ("sequence", args.sequence)):
        config = IDMConfig(policy=policy, dim=args.dim, sequence=sequence)
        model = InverseDynamics(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        windows = args.decisions // max(sequence, 1)
        ways[name] = (model, optimizer, random_batch(config, windows, seed=1))
    times: dict[str, list[float]] = {name: [] for name in ways}
    for step in range(args.steps + 1):
        for name, (model, optimizer, (obs, tokens)) in ways.items():
            started = time.perf_counter()
            loss = -model(obs, tokens).logp.mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if step:  # the first step of each way warms up
                times[name].append(time.perf_counter() - started)
    result: dict = {"decisions": args.decisions, "N": args.sequence, "threads": args.threads}
    for name, measured in times.items():
        median = statistics.median(measured)
        result[name] = {"step_s": round(median, 3), "decisions_per_s": round(args.decisions / median, 1)}
    result["ratio_sequence_over_single"] = round(
        result["sequence"]["decisions_per_s"] / result["single"]["decisions_per_s"], 2
    )
    result["load_average"] = round(os.getloadavg()[0], 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
