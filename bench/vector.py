"""Benchmark: a policy checkpoint playing N games at once in lockstep vs the same N games one after another.

Both sides play the same games (plains:0, 640x360, speed 5, the game's AI at 0.5, a `--max-days` limit)
with the same checkpoint (the default policy: encoder cnn, layout cpu, 2.47 M parameters, randomly
initialised with seed 0: its cost does not depend on its weights), sampling at temperature 1, one torch
thread, in this one process:

- runner (the baseline): `play-policy CKPT --no-record --games N` through the one runner
  (`play/runner.py`'s `run_games`: each game's worker opened, `PolicyPlayer` through `play_game`, one
  policy call of batch 1 a decision), games one after another;
- lockstep: the rollout layer (`rl/rollout.py`'s `Rollouts`, the one train-ppo collects with) on the
  runner's N games (their seeds and sides from its results rows), all N in lockstep, one batched policy
  call a decision for all of them, per game memory and sampling generator; `--workers 0` plays every
  game in this process (serial), `--workers W` in W worker processes (their start is not timed; the
  games' start is). It plays the longest runner game's number of decisions in every slot.

The lockstep games are checked to be the runner's: each slot's first game ends with the runner's
outcome after the runner's number of decisions (tests/rl/test_rollout.py holds the tokens equal). It
prints decisions per second of each and the ratio to the runner. The machine is shared: the load
average is printed.

Try: .venv/bin/python bench/vector.py --games 8 --max-days 20 --workers 0,2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings
from hoi4_arena.rl.rollout import Rollouts
from hoi4_arena.sim.headless import arena_of

ARENA, SPEC, AI = "plains", "plains:0", 0.5


class RunnerGames:
    """A rollout schedule whose slot i plays the runner's game i first (then games of later seeds)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    @property
    def games(self) -> int:
        return len(self.rows)

    def plan(self, slot: int, number: int) -> GamePlan:
        row = self.rows[slot]
        seed = row["seed"] + number * len(self.rows)  # number 0: the runner's game
        return GamePlan(slot, number, ARENA, SPEC, seed, row["side"], AI)


def runner(
    checkpoint: str, games: int, size: tuple[int, int], max_days: int, out: Path
) -> tuple[float, list]:
    """(decisions/s, the results rows) of `games` games one after another through play-policy's runner."""
    config = PlayConfig(
        checkpoint=checkpoint,
        out=out,
        games=games,
        arena=SPEC,
        size=size,
        max_days=max_days,
        ai_strength=AI,
        record=False,
        progress=False,
    )
    started = time.perf_counter()
    summary = run_play_policy(config)
    seconds = time.perf_counter() - started
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return summary["decisions"] / seconds, rows


def lockstep(policy: Policy, rows: list[dict], settings: RolloutSettings, workers: int) -> tuple[float, int]:
    """(decisions/s, slots whose first game matched the runner's) of the runner's games in lockstep."""
    steps = max(row["decisions"] for row in rows)
    with Rollouts(settings, RunnerGames(rows), workers=workers) as engine:
        started = time.perf_counter()
        engine.start(policy)
        rollout = engine.collect(policy, steps)
        seconds = time.perf_counter() - started
    first = {}
    for summary in rollout.finished:
        first.setdefault(summary["slot"], summary)
    same = sum(
        1
        for slot, row in enumerate(rows)
        if slot in first
        and first[slot]["decisions"] == row["decisions"]
        and first[slot]["outcome"] == row["outcome"]
    )
    return rollout.decisions / seconds, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="games: at once (lockstep) and one by one")
    parser.add_argument("--max-days", type=int, default=20, help="each game's time limit in days")
    parser.add_argument("--size", default="640x360", help="the games' screen, WIDTHxHEIGHT")
    parser.add_argument(
        "--workers", default="0", help="lockstep worker processes, comma-separated (0: serial)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    width, height = (int(v) for v in args.size.split("x"))
    size = (height, width)
    workers = [int(w) for w in args.workers.split(",")]
    settings = RolloutSettings(size=size, layout="cpu", speed=5, max_days=args.max_days)
    arena_of(SPEC)  # the map is generated once per process: in no timed loop
    torch.manual_seed(0)
    policy = Policy(PolicyConfig()).eval()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = str(save_checkpoint(Path(tmp) / "cnn.pt", policy))
        base, rows = runner(checkpoint, args.games, size, args.max_days, Path(tmp) / "runner")
        results = {w: lockstep(policy, rows, settings, w) for w in workers}
    decisions = sum(row["decisions"] for row in rows)
    print(
        f"{args.games} games of {args.max_days} days ({decisions} decisions in all) at {args.size}, "
        f"policy {sum(p.numel() for p in policy.parameters()) / 1e6:.2f} M parameters, 1 torch thread, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'loop':<28} {'decisions/s':>11} {'ratio':>6}  same games")
    print(f"{'runner, one after another':<28} {base:>11.1f} {1.0:>6.2f}")
    for w, (rate, same) in results.items():
        name = f"lockstep, {'serial' if w == 0 else f'{w} processes'}"
        print(f"{name:<28} {rate:>11.1f} {rate / base:>6.2f}  {same}/{args.games}")


if __name__ == "__main__":
    main()
