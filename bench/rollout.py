"""Benchmark: decisions per second of the rollout engine over N games vs the bare env vs play-policy's loop.

Three loops in this one process, one torch thread, the same screen (640x360 by default), speed 5, a 60-day
time limit, the default policy (encoder cnn, layout cpu, 2.47 M parameters, untrained: its cost does not
depend on its weights):

- env: the Gymnasium env `hoi4_arena/Sim-v0` (cpu layout) stepped with `action_space.sample()`: the
  screen layer alone (worker, harness, views, tokens -> events, virtual clock), no policy: the baseline;
- play: play-policy's one-game loop, `PolicyPlayer` through `screen.game.play_game`, batch 1;
- engine: `rl.rollout.Rollouts` in its serial mode (workers=0, every game in this process), N games in
  lockstep, one batched policy forward per decision for all of them.

Each loop plays about `--decisions` decisions (games restart as they end; the first game's map is made
before any loop). It prints decisions/s, the engine's ratio to each baseline, and the engine's share of
time in the policy. With --workers W it also times the engine with W worker processes (their start is
not timed). The load average is printed: the machine is shared.

Try: .venv/bin/python bench/rollout.py --games 8 --decisions 400
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium
import torch

from hoi4_arena.maps.model import other_tag
from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.play.policy_player import PolicyPlayer
from hoi4_arena.play.rollout_game import RolloutSettings
from hoi4_arena.rl.rollout import Rollouts, Schedule
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.sim.window import parse_size


def env_loop(decisions: int, settings: RolloutSettings, seed: int) -> float:
    env = gymnasium.make(
        "hoi4_arena.rl.env:hoi4_arena/Sim-v0",
        size=settings.size,
        layout=settings.layout,
        speed=settings.speed,
        max_days=settings.max_days,
        side="random",
    )
    env.action_space.seed(seed)
    env.reset(seed=seed)
    start = time.perf_counter()
    for k in range(decisions):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset(seed=seed + k + 1)
    seconds = time.perf_counter() - start
    env.close()
    return decisions / seconds


def play_loop(decisions: int, settings: RolloutSettings, checkpoint: str, schedule: Schedule) -> float:
    player = PolicyPlayer(checkpoint)
    played, seconds, number = 0, 0.0, 0
    while played < decisions:
        plan = schedule.plan(0, number)
        number += 1
        start = time.perf_counter()
        with SimWorker(
            plan.spec,
            plan.seed,
            size=settings.size,
            layout=settings.layout,
            player=plan.side,
            ai={other_tag(plan.side): plan.ai_strength},
            max_days=settings.max_days,
            player_kind="policy",
        ) as worker:
            record = play_game(
                worker,
                TokenPlayer(player, seed=plan.seed, side=plan.side, speed=settings.speed),
                GameSettings(side=plan.side, speed=settings.speed, max_decisions=decisions - played),
            )
        seconds += time.perf_counter() - start
        played += record.decisions
    return played / seconds


def engine_loop(
    decisions: int, settings: RolloutSettings, policy: Policy, schedule: Schedule, workers: int
) -> tuple[float, float]:
    """(decisions/s, the policy's share of the time)."""
    spent = [0.0]
    step = policy.step

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    policy.step = timed
    try:
        with Rollouts(settings, schedule, workers=workers) as engine:
            engine.start(policy)
            spent[0] = 0.0
            rollout = engine.collect(policy, max(1, decisions // schedule.games))
    finally:
        del policy.step
    return rollout.decisions / rollout.seconds, spent[0] / rollout.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="the engine's games at once")
    parser.add_argument("--decisions", type=int, default=400, help="decisions each loop plays")
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--workers", type=int, default=0, help="also time the engine with W processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    settings = RolloutSettings(size=parse_size(args.size), layout="cpu", speed=5, max_days=60)
    schedule = Schedule(games=args.games, seed=args.seed)

    from hoi4_arena.sim.headless import arena_of

    arena_of("plains:0")  # the map is generated once per process: not in any loop
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        policy = Policy(PolicyConfig()).eval()
        checkpoint = str(save_checkpoint(Path(tmp) / "cnn.pt", policy))
        rows = {
            "env": env_loop(args.decisions, settings, args.seed),
            "play": play_loop(args.decisions, settings, checkpoint, schedule),
        }
        rows["engine"], share = engine_loop(args.decisions, settings, policy, schedule, 0)
        if args.workers:
            rows[f"engine x{args.workers} proc"], _ = engine_loop(
                args.decisions, settings, policy, schedule, args.workers
            )
    print(
        f"{args.decisions} decisions a loop at {args.size}, speed 5, engine over {args.games} games, "
        f"{args.threads} torch thread(s), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'loop':<18} {'decisions/s':>11} {'vs env':>7} {'vs play':>8}")
    for name, rate in rows.items():
        print(f"{name:<18} {rate:>11.1f} {rate / rows['env']:>7.2f} {rate / rows['play']:>8.2f}")
    print(f"engine: {share:.0%} of its time in the batched policy")


if __name__ == "__main__":
    main()
