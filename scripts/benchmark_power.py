"""How often the benchmark's paired test shows a gain of a given true size: the power of an aim.

An aim such as "+15 points above the scripted player's win rate, paired p < 0.01" is met on one
suite when a player's paired win rate beats the other's by at least --min-gain and the exact McNemar
test on the pairs' discordant wins (the benchmark's own, `evaluation/paired.py`) gives p < --alpha.
Here each pair's two games are taken as independent draws, the baseline winning with probability
--base and the player with --base + gain: what the fidelity measurements found (docs/search.md,
"Fidelity": a game's outcome is mostly its luck, and two players' luck parts once their choices
differ). The chance of meeting the aim is then summed exactly over every split of the pairs, for each
true gain; "both suites" is the square (the suites' games are independent). Pairs whose games agree
more often than independent games would make the test stronger than this.

Try: .venv/bin/python scripts/benchmark_power.py --base 0.5 --pairs 80 --alpha 0.01 --min-gain 0.15
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from collections.abc import Sequence

from hoi4_arena.evaluation.paired import mcnemar_exact


def power(base: float, gain: float, pairs: int, alpha: float, min_gain: float) -> float:
    """The probability that `pairs` independent pairs show a paired gain >= `min_gain` with the exact
    McNemar p < `alpha`, the player winning with probability `base + gain`, the baseline with `base`."""
    player = base + gain
    if not (0 <= base <= 1 and 0 <= player <= 1):
        raise ValueError(f"win probabilities must lie in 0..1, not {base} and {player}")
    only_player, only_base = player * (1 - base), (1 - player) * base
    same = 1 - only_player - only_base
    total = 0.0
    for b in range(pairs + 1):
        for c in range(pairs - b + 1):
            if b - c < min_gain * pairs or mcnemar_exact(b, c) >= alpha:
                continue
            ways = math.comb(pairs, b) * math.comb(pairs - b, c)
            total += ways * only_player**b * only_base**c * same ** (pairs - b - c)
    return total


def parse_gains(text: str) -> list[float]:
    gains = [float(v) for v in text.split(",")]
    if not gains:
        raise ValueError("no gains")
    return gains


def table(base: float, gains: Sequence[float], pairs: int, alpha: float, min_gain: float) -> list[str]:
    lines = [
        f"the aim: a paired gain >= {min_gain:+.0%} with McNemar p < {alpha:g} on {pairs} pairs a suite, "
        f"the baseline winning {base:.0%}",
        "true gain | one suite | both suites",
    ]
    for gain in gains:
        one = power(base, gain, pairs, alpha, min_gain)
        lines.append(f"{gain:+9.0%} | {one:9.1%} | {one * one:11.1%}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=float, default=0.5, help="the baseline's win rate (default 0.5)")
    parser.add_argument(
        "--gains",
        default="0.05,0.1,0.15,0.2,0.25,0.3",
        help="true gains in win rate to try, comma-separated (default 0.05,...,0.3)",
    )
    parser.add_argument("--pairs", type=int, default=80, help="paired games a suite (default 80)")
    parser.add_argument("--alpha", type=float, default=0.01, help="the p-value to beat (default 0.01)")
    parser.add_argument(
        "--min-gain", type=float, default=0.15, help="the paired gain the aim asks for (default 0.15)"
    )
    args = parser.parse_args()
    try:
        gains = parse_gains(args.gains)
        if args.pairs < 1 or not 0 < args.alpha <= 1:
            raise ValueError("--pairs must be 1 or more and --alpha in (0, 1]")
        lines = table(args.base, gains, args.pairs, args.alpha, args.min_gain)
    except ValueError as error:
        sys.exit(f"benchmark_power: {error}")
    print("\n".join(lines))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
