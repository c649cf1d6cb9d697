"""The held-out games as they were fixed before `hoi4-arena benchmark` existed, and any two runs paired.

`hoi4-arena benchmark PLAYER... OUT` (docs/play.md) now plays and reports these games: its suites
`presets` and `river` are this script's sets `train-presets` and `river` (40 map seeds never trained on,
1000-1039, each from both sides; pair k plays game seed 3000 + k on the k-th map, BLU first), and its
leaderboard replaces this script's former `play` and `report` (their folders OUT/SET/NAME and
OUT/SET/NAME-part1 held parts 0 and 1: maps 1000-1019 and 1020-1039). What stays:

    python scripts/held_out_pairs.py maps SET [PART]        the part's 20 maps, comma-separated, in play order
    python scripts/held_out_pairs.py pair A/results.jsonl B/results.jsonl PAIRS SEED   any two runs of
                                             the same PAIRS seeds from SEED, each from both sides

`pair` prints the paired comparison (evaluation/paired.compare: Newcombe's interval and the exact
McNemar test of the win rates, the sign-flip test of the scores) and the setup completions' discordant
pairs with their exact McNemar p. `maps` is kept as the old definition of the sets, which
tests/evaluation/test_benchmark.py holds the benchmark's suites equal to.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

TRAIN_PRESETS = ("plains", "passes", "marsh", "bay", "salient", "ford")
SETS = ("train-presets", "river")
SEED = 3000
FIRST_MAP = 1000
PART_PAIRS = 20
PARTS = 2


def maps(which: str, part: int = 0) -> str:
    """The part's 20 maps, comma-separated, in play order (its pair k on the k-th)."""
    if which not in SETS:
        sys.exit(f"error: unknown set {which!r}: {', '.join(SETS)}")
    ks = range(part * PART_PAIRS, (part + 1) * PART_PAIRS)
    names = [TRAIN_PRESETS[k % 6] if which == "train-presets" else "river" for k in ks]
    return ",".join(f"{name}:{FIRST_MAP + k}" for name, k in zip(names, ks, strict=True))


def paired(rows_a: list, rows_b: list, planned: list, a: str, b: str) -> dict:
    """The benchmark's comparison of two players' rows (with the setup completions' discordant pairs)."""
    from hoi4_arena.evaluation.benchmark import compare_pair

    return compare_pair(rows_a, rows_b, planned, (a, b))


def summary_line(result: dict, a: str, b: str) -> str:
    ra, rb = result["records"]["a"], result["records"]["b"]
    win, score, setup = result["win_rate_difference"], result["score_difference"], result["setup_complete"]
    return (
        f"{a} {ra['wins']}/{ra['draws']}/{ra['losses']} (setup {ra['setup']['complete']}), "
        f"{b} {rb['wins']}/{rb['draws']}/{rb['losses']} (setup {rb['setup']['complete']}); "
        f"{result['paired_games']} pairs{'' if result['complete'] else ' (incomplete)'}; "
        f"win rate {win['estimate']:+.3f} [{win['low']:+.3f}, {win['high']:+.3f}] p {win['p_value']:.3g}; "
        f"score {score['estimate']:+.3f} p {score['p_value']:.3g}; "
        f"setup only {a} {setup['only_a']}, only {b} {setup['only_b']}, p {setup['p_value']:.3g}"
    )


def pair(results_a: Path, results_b: Path, pairs: int, seed: int) -> None:
    """Any two results.jsonl of the same seeds and sides (play-policy --side alternate, record-ai)."""
    from hoi4_arena.evaluation.paired import planned_keys
    from hoi4_arena.results import read_results

    a, b = results_a.parent.name, results_b.parent.name
    if a == b:  # two runs of one player: name them by their folders' paths
        a, b = str(results_a.parent), str(results_b.parent)
    result = paired(read_results(results_a), read_results(results_b), planned_keys(pairs, seed), a, b)
    print(summary_line(result, a, b), file=sys.stderr)
    print(json.dumps(result, indent=1, default=str))


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["pair"] and len(args) == 5:
        pair(Path(args[1]), Path(args[2]), int(args[3]), int(args[4]))
    elif args[:1] == ["maps"] and len(args) in (2, 3):
        print(maps(args[1], int(args[2]) if len(args) == 3 else 0))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
