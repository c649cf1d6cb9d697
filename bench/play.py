"""Benchmark: play-policy's decisions per second and games per minute on the simulator, vs the bare env loop.

Four loops over whole games against the game's AI (960x540 by default, speed 5, time limit 365 days,
games ending at a capitulation), in one process, one torch thread unless --threads says otherwise:

- env: the Gymnasium env `hoi4_arena/Sim-v0` (cpu layout) stepped with `action_space.sample()`: the
  screen layer alone (worker, harness, views, tokens -> events, virtual clock), the baseline;
- random: `play-policy random --no-record` (the random policy: it reads no views);
- cnn: `play-policy CKPT --no-record` with the default policy (encoder cnn, layout cpu, 2.47 M
  parameters, untrained: its cost does not depend on its weights), each `decide` timed;
- cnn+record: the same, every game recorded as a session (x264, one frame per decision).

It prints, per loop, decisions/s, the ratio to the env loop, games per minute, the mean game length in
decisions and days, and for the cnn the policy's share (views -> tokens) p50 / p99 in ms. The games
differ between loops (each player plays its own way; an untrained policy is about as passive as the
random one, and a passive side capitulates in 30-70 days on plains), so compare decisions/s; games per
minute is for a game of that loop's length. The load average is printed: the machine is shared.

Try: .venv/bin/python bench/play.py --games 4
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch

from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.policy_player import PolicyPlayer
from hoi4_arena.sim.window import parse_size


def env_loop(games: int, size: tuple[int, int], speed: int, seed: int) -> dict:
    env = gymnasium.make(
        "hoi4_arena.rl.env:hoi4_arena/Sim-v0", size=size, layout="cpu", speed=speed, side="random"
    )
    env.action_space.seed(seed)
    decisions, days = 0, []
    start = time.perf_counter()
    for game in range(games):
        env.reset(seed=seed + game)
        while True:
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            decisions += 1
            if terminated or truncated:
                days.append(info["arena"]["h"] / 24)
                break
    seconds = time.perf_counter() - start
    env.close()
    return {"games": games, "decisions": decisions, "seconds": seconds, "days": float(np.mean(days))}


def play_loop(
    checkpoint: str, out: Path, games: int, size: tuple[int, int], speed: int, seed: int, record: bool
) -> dict:
    config = PlayConfig(
        checkpoint=checkpoint,
        out=out,
        games=games,
        seed=seed,
        size=size,
        speed=speed,
        record=record,
        threads=0,  # set once by the bench
        progress=False,
    )
    start = time.perf_counter()
    summary = run_play_policy(config)
    seconds = time.perf_counter() - start  # loading the checkpoint included
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {
        "games": games,
        "decisions": summary["decisions"],
        "seconds": seconds,
        "days": float(np.mean([r["days"] for r in rows])),
        "record": f"{summary['wins']}-{summary['draws']}-{summary['losses']}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--size", default="960x540")
    parser.add_argument("--speed", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    size = parse_size(args.size)

    # Time every decision of the cnn policy (views -> tokens) inside play-policy's own loop.
    timings: list[float] = []
    decide = PolicyPlayer.decide

    def timed(self, *a, **k):
        start = time.perf_counter()
        try:
            return decide(self, *a, **k)
        finally:
            timings.append(time.perf_counter() - start)

    PolicyPlayer.decide = timed

    from hoi4_arena.sim.headless import arena_of

    arena_of("plains"), arena_of("plains:0")  # the map is generated once per process: not in any loop
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        checkpoint = save_checkpoint(tmp / "bench" / "cnn.pt", Policy(PolicyConfig()))
        rows["env"] = env_loop(args.games, size, args.speed, args.seed)
        rows["random"] = play_loop("random", tmp / "random", args.games, size, args.speed, args.seed, False)
        timings.clear()
        rows["cnn"] = play_loop(str(checkpoint), tmp / "cnn", args.games, size, args.speed, args.seed, False)
        policy_ms = np.sort(np.asarray(timings)) * 1e3
        rows["cnn+record"] = play_loop(
            str(checkpoint), tmp / "rec", args.games, size, args.speed, args.seed, True
        )

    base = rows["env"]["decisions"] / rows["env"]["seconds"]
    print(
        f"{args.games} games a loop at {args.size}, speed {args.speed}, {args.threads} torch thread(s), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'loop':<11} {'decisions/s':>11} {'vs env':>7} {'games/min':>9} {'decisions/game':>14} {'days/game':>9}"
    )
    for name, row in rows.items():
        rate = row["decisions"] / row["seconds"]
        print(
            f"{name:<11} {rate:>11.1f} {rate / base:>7.2f} {60 * row['games'] / row['seconds']:>9.2f} "
            f"{row['decisions'] / row['games']:>14.0f} {row['days']:>9.1f}"
        )
    p = lambda q: policy_ms[min(len(policy_ms) - 1, int(np.ceil(q * len(policy_ms))) - 1)]  # noqa: E731
    print(
        f"cnn policy per decision (views -> tokens): p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, n={len(policy_ms)}"
    )


if __name__ == "__main__":
    main()
