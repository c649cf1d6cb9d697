"""Benchmark: play-policy playing N games at once in lockstep vs the same N games one after another.

Both sides are `play-policy CKPT --no-record --games N` in this one process, on the same games
(plains:0, 640x360, speed 5, the game's AI at 0.5, a `--max-days` limit, each seed from both sides) with
the same checkpoint (the default policy: encoder cnn, layout cpu, 2.47 M parameters, randomly
initialised with seed 0: its cost does not depend on its weights), one torch thread:

- runner (the baseline): `--lockstep 1`, the one runner's local loop (`play/runner.py`: each game's
  worker opened, `PolicyPlayer` through `play_game`, one policy call of batch 1 a decision);
- lockstep: `--lockstep N` (`play/lockstep.py`: the N games in lockstep over the vector layer, one
  batched policy call a decision for all of them, a memory and sampling generator per game); `--workers
  0` plays every game in this process (serial), `--workers W` in W worker processes (started inside
  the timed run).

Each run is timed whole (checkpoint load, games, rows). The lockstep games are checked to be the
runner's: every row equal field for field, and in serial mode every input applied to every game (the
events, time stamps included). A batch's convolutions round differently from a batch of one's (about
1e-7), so a sampled token at a boundary or a pointer argmax at a near tie could differ: the check would
show it. It prints decisions per second of each and the ratio to the runner. The machine is shared:
the load average is printed.

Try: .venv/bin/python bench/vector.py --games 8 --max-days 20 --workers 0,2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.sim.headless import arena_of

SPEC, AI = "plains:0", 0.5
INPUTS: dict = defaultdict(list)
"""Every event applied to a game's worker in this process, by the game (seed, side)."""


def _log_inputs() -> None:
    apply = SimWorker.apply

    def logged(self, events, timed=False):
        INPUTS[(self.game.seed, self.game.ui.player)].extend(
            (e.kind, e.x, e.y, e.key, e.t_ns) for e in events
        )
        return apply(self, events, timed)

    SimWorker.apply = logged


def play(checkpoint: str, out: Path, args: argparse.Namespace, **changes) -> tuple[float, dict, dict]:
    """(decisions/s, rows by game, inputs by game) of one play-policy run."""
    config = PlayConfig(
        checkpoint=checkpoint,
        out=out,
        games=args.games,
        arena=SPEC,
        size=args.size,
        max_days=args.max_days,
        ai_strength=AI,
        record=False,
        progress=False,
        point=args.mode == "point",
        follow_through=args.mode == "point",
        temperature=args.temperature,
        **changes,
    )
    INPUTS.clear()
    started = time.perf_counter()
    summary = run_play_policy(config)
    seconds = time.perf_counter() - started
    rows = {r["game"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    return summary["decisions"] / seconds, rows, dict(INPUTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="games: at once (lockstep) and one by one")
    parser.add_argument("--max-days", type=int, default=20, help="each game's time limit in days")
    parser.add_argument("--size", default="640x360", help="the games' screen, WIDTHxHEIGHT")
    parser.add_argument(
        "--workers", default="0", help="lockstep worker processes, comma-separated (0: serial)"
    )
    parser.add_argument(
        "--mode", default="sample", choices=("sample", "point"), help="decoding (point: + follow-through)"
    )
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="the checkpoint's sampling temperature"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    width, height = (int(v) for v in args.size.split("x"))
    args.size = (height, width)
    workers = [int(w) for w in args.workers.split(",")]
    _log_inputs()
    arena_of(SPEC)  # the map is generated once per process: in no timed loop
    torch.manual_seed(0)
    policy = Policy(PolicyConfig()).eval()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = str(save_checkpoint(Path(tmp) / "cnn.pt", policy))
        base, rows, inputs = play(checkpoint, Path(tmp) / "runner", args, lockstep=1)
        results = {
            w: play(checkpoint, Path(tmp) / f"lockstep-{w}", args, lockstep=args.games, workers=w)
            for w in workers
        }
    decisions = sum(row["decisions"] for row in rows.values())
    print(
        f"{args.games} games of {args.max_days} days ({decisions} decisions in all) at {width}x{height}, "
        f"{args.mode} at temperature {args.temperature:g}, policy {sum(p.numel() for p in policy.parameters()) / 1e6:.2f} M "
        f"parameters, 1 torch thread, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'play-policy':<30} {'decisions/s':>11} {'ratio':>6}  same rows  same inputs")
    print(f"{'--lockstep 1 (the runner)':<30} {base:>11.1f} {1.0:>6.2f}")
    for w, (rate, got, played) in results.items():
        name = f"--lockstep {args.games}, {'serial' if w == 0 else f'{w} processes'}"
        same_rows = sum(got.get(i) == row for i, row in rows.items())
        same_inputs = f"{sum(played.get(k) == v for k, v in inputs.items())}/{len(inputs)}" if w == 0 else "-"
        print(f"{name:<30} {rate:>11.1f} {rate / base:>6.2f}  {same_rows}/{len(rows)}{'':>6} {same_inputs}")


if __name__ == "__main__":
    main()
