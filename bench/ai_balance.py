"""AI-vs-AI balance on every preset, and the rush plan against the AI: seeded games, side splits.

For each preset it plays `--games` seeded AI-vs-AI games (map seed = world seed = 0..N-1, the declarer
a fair coin per seed) and prints BLU / RED / draw wins, how often the declarer won, and game lengths.
With `--rush N` it also plays N games of the scripted concentrated offensive (`sim/rush.py`) against
the default AI, across presets, the rush side alternating, and prints the rush's win rate.

Try: python bench/ai_balance.py --games 100 --rush 140 --json balance.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from hoi4_arena.maps import PRESETS
from hoi4_arena.sim.run import GameConfig, run_game


def _play(job: tuple[str, int, str, str, int, float]) -> dict:
    preset, seed, blu, red, days, strength = job
    return run_game(
        GameConfig(arena=f"{preset}:{seed}", seed=seed, blu=blu, red=red, days=days, ai_strength=strength)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="AI-vs-AI games per preset")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds run from here (map seed = world seed)"
    )
    parser.add_argument("--rush", type=int, default=0, help="rush-vs-AI games in all (spread over presets)")
    parser.add_argument("--days", type=int, default=365, help="time limit per game")
    parser.add_argument("--strength", type=float, default=0.5, help="AI strength")
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", default=None, help="write every game's outcome here")
    args = parser.parse_args()
    presets = args.presets.split(",")
    seeds = range(args.first_seed, args.first_seed + args.games)
    jobs = [(p, s, "ai", "ai", args.days, args.strength) for p in presets for s in seeds]
    rush_jobs = []
    for i in range(args.rush):
        preset = presets[i % len(presets)]
        seed = 1000 + 10 * args.first_seed + i  # rush games never share a seed with AI-vs-AI ones
        rush_jobs.append(
            (preset, seed, "rush", "ai", args.days, args.strength)
            if i % 2 == 0
            else (preset, seed, "ai", "rush", args.days, args.strength)
        )
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(_play, jobs, chunksize=4))
        rush_results = list(pool.map(_play, rush_jobs, chunksize=4))
    wall = time.perf_counter() - t0

    print(
        f"AI vs AI, strength {args.strength}, {args.games} games per preset (seeds {seeds.start}..{seeds.stop - 1}),"
        f" time limit {args.days} days"
    )
    print(
        f"{'preset':9} {'BLU':>5} {'RED':>5} {'draw':>5} {'declarer won':>13} {'median days':>12} {'days 10-90%':>12}"
    )
    total = {"BLU": 0, "RED": 0, None: 0, "declarer": 0, "decided": 0}
    for preset in presets:
        rows = [r for r in results if r["arena"] == preset]
        wins = {k: sum(r["winner"] == k for r in rows) for k in ("BLU", "RED", None)}
        decided = [r for r in rows if r["winner"]]
        declarer = sum(r["winner"] == r["declarer"] for r in decided)
        days = sorted(r["days"] for r in decided) or [0.0]
        lo, hi = days[len(days) // 10], days[min(len(days) - 1, len(days) * 9 // 10)]
        share = f"{declarer}/{len(decided)}"
        print(
            f"{preset:9} {wins['BLU']:>5} {wins['RED']:>5} {wins[None]:>5} {share:>13} {statistics.median(days):>12.0f} {f'{lo:.0f}-{hi:.0f}':>12}"
        )
        for k in ("BLU", "RED", None):
            total[k] += wins[k]
        total["declarer"] += declarer
        total["decided"] += len(decided)
    print(
        f"{'all':9} {total['BLU']:>5} {total['RED']:>5} {total[None]:>5} {total['declarer']:>8}/{total['decided']}"
    )
    if rush_results:
        won = sum(r["winner"] == ("BLU" if r["players"]["BLU"] == "rush" else "RED") for r in rush_results)
        lost = sum(r["winner"] is not None for r in rush_results) - won
        print(
            f"rush plan vs AI: {len(rush_results)} games, rush won {won}, AI won {lost}, draws {len(rush_results) - won - lost}"
        )
    print(
        f"{len(results) + len(rush_results)} games in {wall:.0f} s wall ({args.jobs} processes)",
        file=sys.stderr,
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ai_vs_ai": results, "rush_vs_ai": rush_results}, f)


if __name__ == "__main__":
    main()
