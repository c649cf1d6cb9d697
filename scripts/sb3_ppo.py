"""Train Stable-Baselines3's PPO on the simulator through the project's wrappers (docs/rl-libraries.md).

The env is `hoi4_arena/SimFlat-v0`: Sim-v0 with flat actions (`--slots` tokens a decision, `--kinds`,
a `--grid` x `--grid` pointer) and channels-first image views (`--views`), made by SB3's
`make_vec_env` (which adds its Monitor) and learned by `PPO("MultiInputPolicy")`. The run is fixed by
`--steps` and `--seed`: the same command gives the same model on the same machine. OUT gets the
model (ppo.zip) and sb3_ppo.json (the settings and the summary printed on stdout).

Try: .venv/bin/python scripts/sb3_ppo.py runs/sb3 --steps 16384
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from hoi4_arena.errors import UserError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out", nargs="?", type=Path, help="folder for ppo.zip and sb3_ppo.json (none: not saved)"
    )
    parser.add_argument(
        "--steps", type=int, default=16384, help="environment steps (decisions) to learn from"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of PPO, the envs' games and their sides")
    parser.add_argument("--envs", type=int, default=1, help="envs stepped together (DummyVecEnv)")
    parser.add_argument("--size", default="320x180", help="the game's screen, WIDTHxHEIGHT (16:9)")
    parser.add_argument("--arena", default="plains", help="preset, preset:seed or a map folder")
    parser.add_argument("--side", default="random", help="BLU, RED or random (drawn per game)")
    parser.add_argument("--max-days", type=int, default=120, help="each game's time limit in days (a draw)")
    parser.add_argument("--ai-strength", type=float, default=0.5, help="the game's AI, 0..1")
    parser.add_argument(
        "--reward",
        default="",
        help="shaping terms' weights, TERM=W,... (setup, victory_points, provinces; as train-ppo's "
        "--reward); none: the outcome alone (win 1, draw 0.5, loss 0)",
    )
    parser.add_argument("--slots", type=int, default=2, help="tokens the policy chooses a decision (1..8)")
    parser.add_argument("--grid", type=int, default=32, help="pointer cells per axis (1..1024)")
    parser.add_argument("--kinds", default="mouse", help="token kinds: mouse, all, or names comma-separated")
    parser.add_argument("--views", default="global,fovea", help="views seen: some of global,quadrants,fovea")
    parser.add_argument("--n-steps", type=int, default=128, help="PPO: steps per env between updates")
    parser.add_argument("--batch-size", type=int, default=64, help="PPO: minibatch size")
    parser.add_argument("--epochs", type=int, default=4, help="PPO: epochs over each rollout")
    parser.add_argument("--lr", type=float, default=3e-4, help="PPO: learning rate")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--device", default="cpu", help="torch device of the policy (cpu, cuda)")
    return parser.parse_args(argv)


def reward_weights(text: str) -> dict[str, str]:
    """`--reward setup=0.1,provinces=2` as {term: weight}; the env checks the terms and numbers."""
    weights = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--reward takes TERM=WEIGHT,..., not {item!r}")
        weights[name.strip()] = value.strip()
    return weights


def env_settings(args: argparse.Namespace) -> dict:
    from hoi4_arena.sim.window import parse_size

    return {
        "size": parse_size(args.size),
        "arena": args.arena,
        "side": args.side,
        "max_days": args.max_days,
        "ai_strength": args.ai_strength,
        "reward": reward_weights(args.reward),
        "slots": args.slots,
        "grid": args.grid,
        "kinds": args.kinds,
        "views": tuple(v for v in args.views.split(",") if v),
    }


def train(args: argparse.Namespace) -> dict:
    """Learn for `args.steps` steps; the summary (and, with OUT, ppo.zip and sb3_ppo.json)."""
    for what, value, low in (
        ("--steps", args.steps, 1),
        ("--envs", args.envs, 1),
        ("--n-steps", args.n_steps, 2),
        ("--batch-size", args.batch_size, 2),
        ("--epochs", args.epochs, 1),
        ("--threads", args.threads, 1),
        ("--seed", args.seed, 0),
    ):
        if value < low:
            raise UserError(f"{what} must be at least {low}, not {value}")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UserError(f"{args.out} exists and is not a folder")
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    from hoi4_arena.rl.env_wrappers import FLAT_ENV_ID

    torch.set_num_threads(args.threads)
    settings = env_settings(args)
    gymnasium.make(FLAT_ENV_ID, **settings).close()  # bad settings fail here, with their message
    # Monitor keeps the ARENA summary and the side of each finished game: the script counts wins from them.
    envs = make_vec_env(
        FLAT_ENV_ID,
        n_envs=args.envs,
        seed=args.seed,
        env_kwargs=settings,
        monitor_kwargs={"info_keywords": ("arena", "side")},
    )
    model = PPO(
        "MultiInputPolicy",
        envs,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.epochs,
        learning_rate=args.lr,
        seed=args.seed,
        device=args.device,
        stats_window_size=10**9,  # every finished game, not SB3's last 100
        verbose=0,
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's own would leave /tmp/SB3-* behind
    started = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    seconds = time.perf_counter() - started
    episodes = [
        {
            "return": round(float(e["r"]), 4),
            "decisions": int(e["l"]),
            "outcome": "draw"
            if not e["arena"]["winner"]
            else "win"
            if e["arena"]["winner"] == e["side"]
            else "loss",
        }
        for e in model.ep_info_buffer
    ]
    envs.close()
    returns = [e["return"] for e in episodes]
    outcomes = [e["outcome"] for e in episodes]
    summary = {
        "steps": int(model.num_timesteps),
        "updates": int(model._n_updates // max(1, args.epochs)),
        "episodes": len(episodes),
        "record": {k: outcomes.count(k) for k in ("win", "draw", "loss")},
        "mean_return": round(sum(returns) / len(returns), 4) if returns else None,
        "last_episodes": episodes[-10:],
        "parameters": sum(p.numel() for p in model.policy.parameters()),
        "seconds": round(seconds, 1),
        "steps_per_s": round(model.num_timesteps / seconds, 1) if seconds > 0 else None,
        "settings": {**{k: v for k, v in vars(args).items() if k != "out"}, "env": FLAT_ENV_ID},
    }
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        model.save(args.out / "ppo.zip")
        (args.out / "sb3_ppo.json").write_text(json.dumps(summary, indent=1) + "\n")
        summary["model"] = str(args.out / "ppo.zip")
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = train(args)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
