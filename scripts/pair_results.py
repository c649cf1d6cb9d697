"""Two results files compared game by game: the benchmark's paired report for games played outside it.

    python scripts/pair_results.py A/results.jsonl B/results.jsonl --pairs 40 --seed 3000 [--names a,b]

Each file is a record-ai or play-policy results file whose games were played on the same plan: game
seeds seed .. seed + pairs - 1, each from both sides (`evaluation.paired.planned_keys`, as the
benchmark's suites and record-ai's pairs play them). Printed: the benchmark's paired report
(`evaluation.paired.format_report`: both win rates with Wilson intervals, the difference with
Newcombe's interval and the exact McNemar p, the scores with the sign-flip p). E.g. the scripted player
at another game speed on the benchmark's maps (record-ai with the settings of the benchmark's
record-ai.json and `--speeds 3`) against its benchmark games (docs/search.md, "The pace").

Try: .venv/bin/python scripts/pair_results.py runs/speed3-presets/results.jsonl \
         runs/bench/presets/scripted/results.jsonl --pairs 40 --seed 3000 --names scripted@3,scripted
"""

from __future__ import annotations

import argparse
import signal
import sys

from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.paired import compare, format_report, planned_keys
from hoi4_arena.results import read_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="player A's results.jsonl")
    parser.add_argument("b", help="player B's results.jsonl")
    parser.add_argument("--pairs", type=int, required=True, help="game seeds, each played from both sides")
    parser.add_argument("--seed", type=int, required=True, help="the first game seed")
    parser.add_argument("--names", default="A,B", help="the two players' names, comma-separated")
    args = parser.parse_args()
    names = tuple(args.names.split(","))
    if len(names) != 2 or not all(names) or args.pairs < 1:
        sys.exit("pair_results: --names takes two names, --pairs 1 or more")
    try:
        report = compare(
            read_results(args.a), read_results(args.b), planned_keys(args.pairs, args.seed), names
        )
    except (UserError, ValueError) as error:
        sys.exit(f"pair_results: {error}")
    print(format_report(report))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
