"""Benchmark: what pinning torch's CPU kernels to AVX2 costs the quickstart (numerics.py).

The quickstart's behaviour-cloning step -- its small policy (`SMALL_POLICY`), windows of 8 decisions,
batches of 8 windows, chunks of 16, AdamW with gradient clipping -- and its play step (one decision of
the same policy, no gradient) are timed in fresh processes, pinned (`pin_numerics()` before torch loads:
ATen avx2, oneDNN AVX2, MKL's COMPATIBLE branch) and as the CPU picks them by itself, the two kinds of
process alternating round by round so that both see the same load. The libraries read their settings
once, when they start, so each measurement is a process of its own. Views and tokens are random (no
layer's cost depends on what the pixels show).

It prints the median step time of each, in wall time and in the process's CPU time, training steps/s
and play decisions/s, the ratios pinned / unpinned (1.0: free; 0.8: pinned runs at 80% of the speed),
each process's ATen capability, whether the two kinds trained the same weights (they should not on a CPU
with AVX-512), the CPU and the load. On a shared machine the CPU-time ratio is the steadier one: with
one torch thread (the default here) a step's CPU time barely moves with the load, while its wall time
does, and with two threads on two busy cores torch's spinning threads make wall times meaningless.

Try: .venv/bin/python bench/pinned_numerics.py --rounds 3 --steps 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from hoi4_arena.numerics import PINNED, cpu


def child(mode: str, steps: int, threads: int, plays: int) -> dict:
    """One process's measurement: `steps` training steps and `plays` play decisions, after one of each."""
    from hoi4_arena.numerics import numerics, pin_numerics

    if mode == "pinned":
        pin_numerics()
    # torch loads only now, after the pinning (a measured process's libraries read it when they start).
    import torch

    from hoi4_arena.models.checkpoint import weights_sha256
    from hoi4_arena.models.config import ActionSpace, PolicyConfig
    from hoi4_arena.models.policy import Observation, Policy
    from hoi4_arena.quickstart import BC_SETTINGS, SMALL_POLICY
    from hoi4_arena.training.run_control import adam

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = PolicyConfig(**SMALL_POLICY)
    policy = Policy(config).train()
    optimizer = adam(policy.parameters(), lr=BC_SETTINGS["lr"], weight_decay=0.0)
    g = torch.Generator().manual_seed(1)
    space = ActionSpace.default()

    def window(batch: int, length: int) -> tuple[Observation, torch.Tensor]:
        sizes, lead = config.sizes, (batch, length)

        def pixels(*shape: int) -> torch.Tensor:
            return torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)

        obs = Observation(
            global_view=pixels(*sizes.global_hw, 3),
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

    obs, tokens = window(8, BC_SETTINGS["window"])
    train_times, train_cpu = [], []
    for _ in range(steps + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = policy(obs, tokens, chunk=BC_SETTINGS["chunk"])
        loss = -out.logp.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        train_times.append(time.perf_counter() - start)
        train_cpu.append(time.process_time() - start_cpu)
    policy.eval()
    one, one_tokens = window(1, 1)
    play_times, play_cpu = [], []
    with torch.no_grad():
        for _ in range(plays + 1):
            start, start_cpu = time.perf_counter(), time.process_time()
            policy(one, one_tokens)
            play_times.append(time.perf_counter() - start)
            play_cpu.append(time.process_time() - start_cpu)
    return {
        "train_s": statistics.median(train_times[1:]),
        "play_s": statistics.median(play_times[1:]),
        "train_cpu_s": statistics.median(train_cpu[1:]),
        "play_cpu_s": statistics.median(play_cpu[1:]),
        "sha256": weights_sha256(policy.state_dict()),
        "aten_capability": numerics()["aten_capability"],
    }


def measure(mode: str, args: argparse.Namespace) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in PINNED}
    command = [sys.executable, __file__, "--child", mode, "--steps", str(args.steps)]
    command += ["--threads", str(args.threads), "--plays", str(args.plays)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="processes of each kind, alternating")
    parser.add_argument("--steps", type=int, default=4, help="timed training steps in each process")
    parser.add_argument("--plays", type=int, default=20, help="timed play decisions in each process")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (the quickstart trains with 2; 1 measures steadily)",
    )
    parser.add_argument("--child", choices=("pinned", "unpinned"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.threads, args.plays)))
        return
    kinds = ("pinned", "unpinned")
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for _ in range(args.rounds):
        for kind in kinds:
            runs[kind].append(measure(kind, args))
    result: dict = {}
    for kind in kinds:
        median = {
            key: statistics.median(r[key] for r in runs[kind]) for key in runs[kind][0] if key.endswith("_s")
        }
        result[kind] = {
            "train_step_s": round(median["train_s"], 4),
            "train_step_cpu_s": round(median["train_cpu_s"], 4),
            "train_steps_per_s": round(1 / median["train_s"], 3),
            "play_decision_s": round(median["play_s"], 5),
            "play_decision_cpu_s": round(median["play_cpu_s"], 5),
            "play_decisions_per_s": round(1 / median["play_s"], 2),
            "aten_capability": sorted({r["aten_capability"] for r in runs[kind]}),
            "weights": sorted({r["sha256"][:16] for r in runs[kind]}),
        }
    pinned, unpinned = result["pinned"], result["unpinned"]
    result["ratio"] = {
        "train_wall": round(unpinned["train_step_s"] / pinned["train_step_s"], 3),
        "train_cpu": round(unpinned["train_step_cpu_s"] / pinned["train_step_cpu_s"], 3),
        "play_wall": round(unpinned["play_decision_s"] / pinned["play_decision_s"], 3),
        "play_cpu": round(unpinned["play_decision_cpu_s"] / pinned["play_decision_cpu_s"], 3),
    }
    result["same_weights"] = pinned["weights"] == unpinned["weights"]
    result.update(cpu(), threads=args.threads, rounds=args.rounds, steps=args.steps, load=os.getloadavg())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
