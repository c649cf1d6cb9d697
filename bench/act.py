"""Benchmark: one decision's latency, views -> tokens, for the default policy and for the Qwen tower.

Both policies run `Policy.act` (batch 1, the recurrent state carried from call to call, sampling at
temperature 1) on the views of one 1920x1080 frame, computed once beforehand with the exact
`compute_views` (this times the model, not the capture):

- cnn:  the default config (encoder "cnn", layout "cpu"), the policy this machine trains and plays;
- qwen: encoder "timm:qwen3_vit_88m_enc" on the "full" layout, the 88M-parameter Qwen3.5 vision tower
  reading the four 320x576 quadrants tiled as one 640x1152 screen (2880 patch tokens). Untrained
  weights: the latency of a tower does not depend on its weights.

It prints p50 and p99 of each, the ratio qwen / cnn, whether each decides inside the 200 ms a decision
lasts, and the machine's load average (on a shared machine, torch's spinning worker threads make a
busy CPU far slower with 2 threads than with 1: pass --threads 1 there). Views are random pixels; no
layer's cost depends on what the pixels show.

Try: python bench/act.py --runs 200 --qwen-runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.views import compute_views

DECISION_MS = 200.0


def stats(samples_s: list[float]) -> dict:
    ordered = np.sort(np.asarray(samples_s, dtype=np.float64)) * 1e3
    rank = lambda q: float(ordered[min(len(ordered) - 1, int(np.ceil(q * len(ordered))) - 1)])  # noqa: E731
    return {"runs": len(ordered), "p50_ms": round(rank(0.5), 2), "p99_ms": round(rank(0.99), 2)}


def time_policy(config: PolicyConfig, frame: np.ndarray, runs: int, warmup: int) -> dict:
    policy = Policy(config).eval()
    views = compute_views(frame, (960, 540), ViewLayout.named(config.layout))
    if config.reads_clip:
        views = {**views, "global": np.stack([views["global"]] * config.sizes.clip)}
    generator = torch.Generator().manual_seed(0)
    state = None
    samples = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        obs = Observation.from_views(views, speed=3, pointer=(512, 512))
        _, state = policy.act(obs, state, generator=generator)
        elapsed = time.perf_counter() - start
        if i >= warmup:
            samples.append(elapsed)
    counts = policy.parameter_count()
    return {
        "encoder": config.encoder,
        "layout": config.layout,
        "parameters": counts["total"],
        **stats(samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed decisions of the default policy")
    parser.add_argument("--qwen-runs", type=int, default=5, help="timed decisions of the Qwen tower")
    parser.add_argument("--warmup", type=int, default=2, help="untimed decisions first, for each")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    frame = np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)

    cnn = time_policy(PolicyConfig(), frame, args.runs, args.warmup)
    print(json.dumps({"cnn": cnn}), flush=True)
    qwen = time_policy(
        PolicyConfig(layout="full", encoder="timm:qwen3_vit_88m_enc"),
        frame,
        args.qwen_runs,
        min(args.warmup, 1),
    )
    print(json.dumps({"qwen": qwen}), flush=True)

    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, load average {load}")
    print(f"{'policy':<34}{'params':>12}{'p50 ms':>10}{'p99 ms':>10}  inside {DECISION_MS:.0f} ms (p99)")
    for name, row in (("cnn on cpu layout (default)", cnn), ("qwen3_vit_88m_enc on full layout", qwen)):
        inside = "yes" if row["p99_ms"] < DECISION_MS else "no"
        print(f"{name:<34}{row['parameters']:>12,}{row['p50_ms']:>10.2f}{row['p99_ms']:>10.2f}  {inside}")
    print(
        f"ratio qwen / cnn: p50 {qwen['p50_ms'] / cnn['p50_ms']:.1f}x, p99 {qwen['p99_ms'] / cnn['p99_ms']:.1f}x"
    )


if __name__ == "__main__":
    main()
