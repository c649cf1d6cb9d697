"""Two training recipes compared game by game over their training seeds, on one benchmark folder.

    python scripts/recipe_pairs.py BENCH A1,A2[,...] B1,B2[,...] [--pairs N]

A recipe is the policies its training seeds trained; A and B are lists of the same length matched by
position (seed k of A plays against seed k of B: each game of the benchmark's suites is a pair, A's
policy k and B's policy k on the same map, game seed and side), and the pairs of all seeds are pooled.
Each item is a checkpoint path as the benchmark was given it, or a player folder's name under
BENCH/SUITE/. Only the first N pairs of maps of each suite count (`--pairs`; default: the folder's
leaderboard.json's). Prints, per suite and for both together: the pooled paired games, A's and B's wins
and setups, the games only one won (or set up in) with the exact McNemar p, the mean scores' difference
with the exact sign-flip p, and each recipe's offensives a game (the rows' `war`, `gamelog.war_summary`).
A single policy pair answers one seed; pooling tells a recipe from a lucky seed (the games of one map are
then counted once a seed, so the p-values take the seeds' games as independent: read them so).

Try: .venv/bin/python scripts/recipe_pairs.py runs/bench-full runs/full/bc/last.pt,runs/full/bc-2/last.pt \
         runs/scale/q384/bc/last.pt,runs/scale/q384/bc-2/last.pt
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from pathlib import Path
from typing import Any

from hoi4_arena.evaluation.benchmark import war_means
from hoi4_arena.evaluation.paired import SCORES, mcnemar_exact, sign_flip_p
from hoi4_arena.maps.held_out import SUITES, suite_games
from hoi4_arena.results import GameResult, read_results

RESULTS = "results.jsonl"


def player_folder(bench: Path, suite: str, who: str) -> Path:
    """BENCH/SUITE/<folder> of `who`: a folder name there, or the folder whose player.json names the
    checkpoint `who` (the path as given to the benchmark, or the same file)."""
    base = bench / suite
    if (base / who / RESULTS).is_file():
        return base / who
    wanted = Path(who).resolve()
    if base.is_dir():
        for child in sorted(base.iterdir()):
            info = child / "player.json"
            if info.is_file():
                checkpoint = json.loads(info.read_text()).get("checkpoint")
                if checkpoint and (checkpoint == who or Path(checkpoint).resolve() == wanted):
                    return child
    raise SystemExit(f"error: {who}: no player of that name or checkpoint under {base}")


def pooled(bench: Path, suite: str, pairs: int, recipe_a: list[str], recipe_b: list[str]) -> list[tuple]:
    """[(A's row, B's row)] of every planned game both policies of a seed played validly, seed by seed."""
    planned = [(game.seed, game.side) for game in suite_games(suite, pairs)]
    matched = []
    for a, b in zip(recipe_a, recipe_b, strict=True):
        rows = []
        for who in (a, b):
            found: dict[tuple[int, str], GameResult] = {}
            for row in read_results(player_folder(bench, suite, who) / RESULTS):
                found[(row.seed, row.side)] = row
            rows.append(found)
        for key in planned:
            row_a, row_b = rows[0].get(key), rows[1].get(key)
            if row_a is not None and row_b is not None and row_a.valid and row_b.valid:
                matched.append((row_a, row_b))
    return matched


def setup_complete(row: GameResult) -> bool:
    """Whether the row's side completed its setup."""
    return bool((row.extra.get("setup") or {}).get("complete"))


def _offensives(rows: list[GameResult]) -> float | None:
    """The benchmark table's offensives a game (`war_means`), None without rows that say."""
    value = war_means(rows)["offensives"]
    return None if math.isnan(value) else value


def summary(matched: list[tuple]) -> dict[str, Any]:
    """The pooled comparison of the (A, B) row pairs."""
    n = len(matched)
    won = [(a.outcome == "win", b.outcome == "win") for a, b in matched]
    setup = [(setup_complete(a), setup_complete(b)) for a, b in matched]
    only = {
        what: (sum(x and not y for x, y in pairs), sum(y and not x for x, y in pairs))
        for what, pairs in (("wins", won), ("setups", setup))
    }
    differences = [SCORES[a.outcome] - SCORES[b.outcome] for a, b in matched]
    return {
        "games": n,
        "a": {
            "wins": sum(x for x, _ in won),
            "setups": sum(x for x, _ in setup),
            "offensives": _offensives([a for a, _ in matched]),
        },
        "b": {
            "wins": sum(y for _, y in won),
            "setups": sum(y for _, y in setup),
            "offensives": _offensives([b for _, b in matched]),
        },
        **{
            what: {"only_a": a_only, "only_b": b_only, "p_value": mcnemar_exact(a_only, b_only)}
            for what, (a_only, b_only) in only.items()
        },
        "score_difference": {
            "estimate": sum(differences) / n if n else float("nan"),
            "p_value": sign_flip_p(differences),
        },
    }


def _line(name: str, result: dict[str, Any]) -> str:
    n = result["games"]
    if not n:
        return f"| {name} | 0 | - | - | - | - | - | - |"
    wins, setups, score = result["wins"], result["setups"], result["score_difference"]
    offensives = "/".join(
        "-" if x is None else f"{x:.1f}" for x in (result["a"]["offensives"], result["b"]["offensives"])
    )
    return (
        f"| {name} | {n} | {result['a']['wins']} / {result['b']['wins']} | {wins['only_a']} / {wins['only_b']}, "
        f"p = {wins['p_value']:.3g} | {result['a']['setups']} / {result['b']['setups']} | "
        f"{setups['only_a']} / {setups['only_b']}, p = {setups['p_value']:.3g} | "
        f"{score['estimate']:+.3f}, p = {score['p_value']:.3g} | {offensives} |"
    )


def board_pairs(bench: Path) -> int:
    """The pairs of maps a suite the benchmark folder's leaderboard.json counts (its smallest suite's)."""
    try:
        board = json.loads((bench / "leaderboard.json").read_text())
        return min(int(entry["pairs"]) for entry in board["suites"].values())
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"error: {bench}: no leaderboard.json to read --pairs from ({error})") from None


def report(bench: Path, recipe_a: list[str], recipe_b: list[str], pairs: int | None = None) -> dict[str, Any]:
    """Per suite found under BENCH and for all of them together."""
    if len(recipe_a) != len(recipe_b) or not recipe_a:
        raise SystemExit("error: A and B must list the same number of policies (one per training seed)")
    if pairs is None:
        pairs = board_pairs(bench)
    suites = [suite for suite in SUITES if (bench / suite).is_dir()]
    per_suite = {suite: pooled(bench, suite, pairs, recipe_a, recipe_b) for suite in suites}
    out = {suite: summary(matched) for suite, matched in per_suite.items()}
    out["all"] = summary([pair for matched in per_suite.values() for pair in matched])
    return {"pairs": pairs, "seeds": len(recipe_a), "suites": out}


def format_report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['seeds']} training seed(s) a recipe, the first {result['pairs']} pairs of maps of each suite; "
        "A / B; only A / only B won (set up), exact McNemar p; score A - B, sign-flip p",
        "",
        "| suite | paired games | wins A / B | only A / only B won | setups A / B | only A / only B set up | "
        "score A - B | offensives a game A / B |",
        "|---|---:|---|---|---|---|---|---|",
    ]
    lines += [_line(suite, entry) for suite, entry in result["suites"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bench", type=Path, help="the benchmark's folder")
    parser.add_argument("a", help="recipe A: its policies, comma-separated, training seed by seed")
    parser.add_argument("b", help="recipe B: as many policies, matched by position")
    parser.add_argument("--pairs", type=int, default=None, help="the first N pairs of maps of each suite")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    result = report(args.bench, args.a.split(","), args.b.split(","), args.pairs)
    print(
        json.dumps(result, indent=1) if args.json else format_report(result),
        end="" if not args.json else "\n",
    )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
