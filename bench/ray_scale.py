"""Benchmark: record-ai's games per wall-minute as Ray tasks (`--ray`, 1 and 2 games at a time) against
the plain local loop, the same games (seeds, map, sides) each way, in one process.

One local Ray instance (this machine's CPUs, at least 2) serves both Ray runs; a warm-up run of two
games first starts its workers and their imports, as they would be over a long run (the start-up is
printed apart). Each way records its own OUT; the rows of the three are checked equal. It prints the
games per minute of each way, the ratios to the local loop and the load average (the machine is shared).

Try: .venv/bin/python bench/ray_scale.py --games 8 --max-days 10
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import ray

from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai


def record(out: Path, args: argparse.Namespace, **changes) -> float:
    """Wall seconds of one record-ai run of the benchmark's games into `out`."""
    settings = dict(
        out=out,
        games=args.games,
        arena=args.arena,
        seed=args.seed,
        max_days=args.max_days,
        size=(args.height, args.width),
        after_end_s=1.0,
        progress=False,
    )
    config = RecordAIConfig(**{**settings, **changes})
    start = time.perf_counter()
    run_record_ai(config)
    return time.perf_counter() - start


def rows(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text().splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--max-days", type=int, default=10)
    parser.add_argument("--arena", default="all")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=540)
    args = parser.parse_args()

    cpus = max(2, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="ray-scale-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        started_s = time.perf_counter() - start
        address = ray.get_runtime_context().gcs_address
        warm_s = record(root / "warm", args, games=2, seed=args.seed + 1000, ray=address, ray_games=2)
        seconds = {
            "local": record(root / "local", args),
            "ray-1": record(root / "ray-1", args, ray=address, ray_games=1),
            "ray-2": record(root / "ray-2", args, ray=address, ray_games=2),
        }
        same = rows(root / "local") == rows(root / "ray-1") == rows(root / "ray-2")
        ray.shutdown()
    per_minute = {way: round(60 * args.games / s, 2) for way, s in seconds.items()}
    print(
        json.dumps(
            {
                "games": args.games,
                "max_days": args.max_days,
                "size": f"{args.width}x{args.height}",
                "ray_cpus": cpus,
                "ray_start_s": round(started_s, 2),
                "warm_up_s": round(warm_s, 2),
                "seconds": {way: round(s, 2) for way, s in seconds.items()},
                "games_per_minute": per_minute,
                "ratio_to_local": {way: round(v / per_minute["local"], 2) for way, v in per_minute.items()},
                "same_rows": same,
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
