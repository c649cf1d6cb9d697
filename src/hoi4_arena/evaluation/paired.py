"""Paired comparison of two players on the same games: the statistics behind `hoi4-arena evaluate`.

Two players A and B each play the game's AI on the same seeds from both sides. A game is known by
(seed, side): A's game and B's game of the same key are a pair (same map, same seed, so the same coin
and the same AI's randomness at the start; only the player differs). Pairs are compared, not two
independent samples: most of a game's outcome is the seed's (which side declares, how the map falls),
and pairing takes that out.

Two measures, both from the pairs only (a pair where either game is invalid is left out and counted):

- **win rate** (a draw counts as not won, as `win-rate` reports it). The pairs form a 2 x 2 table:
  both won (a), only A (b), only B (c), neither (d). The difference of the win rates is (b - c) / n,
  its 95% interval Newcombe's square-and-add interval for paired proportions (Newcombe 1998, Statistics
  in Medicine 17:2635, method 10: each rate's Wilson interval, `results.wilson`, combined with the
  continuity-corrected phi correlation of the pairs), and its p-value the exact McNemar test: under
  "no difference" each discordant pair is A's with probability 1/2, so b | b + c ~ Binomial(b + c, 1/2),
  two-sided p = min(1, 2 P(X <= min(b, c))). That test is conservative (its size is at most 5%, often
  less); the mid-p version (`p_mid`, Fagerland et al. 2013's recommendation) is reported beside it.
- **score** (win 1, draw 0.5, loss 0): the mean paired difference of scores and an exact permutation
  (sign-flip) test: under "no difference" A's and B's scores within a pair are exchangeable, so each
  non-zero difference is as likely positive as negative; p is the share of the 2^m sign patterns whose
  |sum| is at least the observed one, counted exactly (the differences are multiples of 1/2). With no
  draws it equals the exact McNemar p.

Everything is a pure function of result rows (`results.GameResult`); `compare` builds the report.

Try: python -c "from hoi4_arena.evaluation.paired import mcnemar_exact; print(mcnemar_exact(9, 1))"
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hoi4_arena.results import TAGS, Z95, GameResult, wilson, win_record

SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}
Key = tuple[int, str]
"""A game's (seed, side)."""


# --- the tests and intervals ---------------------------------------------------------------------------


def _check_counts(*counts: int) -> None:
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
        raise ValueError(f"counts must be whole numbers >= 0, got {counts}")


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs: min(1, 2 P(X <= min(b, c))),
    X ~ Binomial(b + c, 1/2); 1.0 when there are none."""
    _check_counts(b, c)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def mcnemar_mid_p(b: int, c: int) -> float:
    """The mid-p version of `mcnemar_exact`: the exact p less the probability of the observed table."""
    _check_counts(b, c)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    point = math.comb(n, min(b, c))
    return float(min(Fraction(1), Fraction(2 * tail - point, 2**n)))


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's (1998, method 10) interval for p1 - p2 of paired proportions from the 2 x 2 table:
    a both succeeded, b only the first, c only the second, d neither. NaN bounds when n = 0."""
    _check_counts(a, b, c, d)
    n = a + b + c + d
    if n == 0:
        return float("nan"), float("nan")
    p1, p2 = (a + b) / n, (a + c) / n
    one, two = wilson(a + b, n, z), wilson(a + c, n, z)
    l1, u1, l2, u2 = one.low, one.high, two.low, two.high
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins:
        cross = a * d - b * c
        # Newcombe's continuity correction of the correlation: positive values are shrunk by n/2.
        corrected = max(cross - n / 2, 0.0) if cross > 0 else float(cross)
        phi = corrected / math.sqrt(margins)
    estimate = p1 - p2
    low = estimate - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = estimate + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, low), min(1.0, high)


def sign_flip_p(differences: Sequence[float]) -> float:
    """Exact two-sided permutation p-value of paired differences that are multiples of 1/2: the share of
    all 2^m sign patterns of the m non-zero differences whose |sum| is at least the observed |sum|."""
    units = []
    for value in differences:
        twice = 2 * float(value)
        if not math.isfinite(twice) or twice != round(twice):
            raise ValueError(f"paired differences must be multiples of 1/2, got {value!r}")
        if twice:
            units.append(abs(int(round(twice))))
    if not units:
        return 1.0
    total = sum(units)
    observed = abs(round(2 * sum(float(v) for v in differences)))
    # ways[s]: sign patterns whose negated differences sum to s (a subset sum); the signed sum is total - 2s.
    ways = [0] * (total + 1)
    ways[0] = 1
    for unit in units:
        for s in range(total, unit - 1, -1):
            ways[s] += ways[s - unit]
    extreme = sum(count for s, count in enumerate(ways) if abs(total - 2 * s) >= observed)
    return float(Fraction(extreme, 2 ** len(units)))


# --- pairing -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """A's and B's game of one (seed, side); either may be missing (not played yet)."""

    seed: int
    side: str
    a: GameResult | None
    b: GameResult | None

    @property
    def valid(self) -> bool:
        return self.a is not None and self.b is not None and self.a.valid and self.b.valid


def _by_key(rows: Iterable[GameResult], who: str) -> dict[Key, GameResult]:
    found: dict[Key, GameResult] = {}
    for row in rows:
        if not isinstance(row.seed, int) or row.side not in TAGS:
            raise ValueError(f"{who}: a game without a whole-number seed and a side cannot be paired: {row}")
        key = (row.seed, row.side)
        if key in found:
            raise ValueError(f"{who}: two games of seed {row.seed} from {row.side}; pairs need one each")
        found[key] = row
    return found


def pair_games(
    rows_a: Iterable[GameResult], rows_b: Iterable[GameResult], planned: Sequence[Key]
) -> list[Pair]:
    """The planned games in order, each with A's and B's row of that (seed, side) or None.

    Rows of other keys are ignored (an OUT folder of a larger earlier --pairs); a key played twice by one
    player is a ValueError."""
    by_a, by_b = _by_key(rows_a, "A"), _by_key(rows_b, "B")
    return [Pair(seed, side, by_a.get((seed, side)), by_b.get((seed, side))) for seed, side in planned]


def planned_keys(pairs: int, seed: int) -> list[Key]:
    """The evaluation's games: seed + k from BLU, then from RED, for k < pairs (play-policy's alternate
    plan and record-ai's pairs)."""
    return [(seed + k, side) for k in range(pairs) for side in TAGS]


# --- the report ------------------------------------------------------------------------------------------


def _outcome(row: GameResult | None) -> str | None:
    if row is None:
        return None
    return row.outcome if row.valid else "invalid"


def compare(
    rows_a: Iterable[GameResult],
    rows_b: Iterable[GameResult],
    planned: Sequence[Key],
    names: tuple[str, str] = ("A", "B"),
) -> dict[str, Any]:
    """The paired report of A against B over the `planned` games (see the module docstring)."""
    pairs = pair_games(rows_a, rows_b, planned)
    played_a = [p.a for p in pairs if p.a is not None]
    played_b = [p.b for p in pairs if p.b is not None]
    valid = [p for p in pairs if p.valid]
    won = [(p.a.outcome == "win", p.b.outcome == "win") for p in valid]  # type: ignore[union-attr]
    table = {
        "both_won": sum(x and y for x, y in won),
        "only_a_won": sum(x and not y for x, y in won),
        "only_b_won": sum(y and not x for x, y in won),
        "neither_won": sum(not x and not y for x, y in won),
    }
    a, b, c, d = table.values()
    n = len(valid)
    low, high = newcombe_paired(a, b, c, d)
    differences = [SCORES[p.a.outcome] - SCORES[p.b.outcome] for p in valid]  # type: ignore[union-attr]
    missing_a, missing_b = len(pairs) - len(played_a), len(pairs) - len(played_b)
    invalid_a = sum(not r.valid for r in played_a)
    invalid_b = sum(not r.valid for r in played_b)
    incomplete = []
    for name, missing in ((names[0], missing_a), (names[1], missing_b)):
        if missing:
            incomplete.append(f"{name}: {missing} of {len(pairs)} games not played")
    excluded = sum(1 for p in pairs if p.a is not None and p.b is not None and not p.valid)
    return {
        "players": {"a": names[0], "b": names[1]},
        "planned_games": len(pairs),
        "complete": not incomplete,
        "incomplete": incomplete,
        "paired_games": n,
        "excluded_invalid": excluded,
        "invalid": {"a": invalid_a, "b": invalid_b},
        "records": {"a": win_record(played_a), "b": win_record(played_b)},
        "paired_win_rates": {"a": wilson(a + b, n).to_dict(), "b": wilson(a + c, n).to_dict()},
        "table": table,
        "win_rate_difference": {
            "estimate": (b - c) / n if n else float("nan"),
            "low": low,
            "high": high,
            "p_value": mcnemar_exact(b, c),
            "p_mid": mcnemar_mid_p(b, c),
            "method": "Newcombe's paired score interval (method 10); exact McNemar test on the discordant pairs",
        },
        "score_difference": {
            "a": sum(SCORES[p.a.outcome] for p in valid) / n if n else float("nan"),  # type: ignore[union-attr]
            "b": sum(SCORES[p.b.outcome] for p in valid) / n if n else float("nan"),  # type: ignore[union-attr]
            "estimate": sum(differences) / n if n else float("nan"),
            "p_value": sign_flip_p(differences),
            "method": "win 1, draw 0.5, loss 0; exact sign-flip permutation test on the paired differences",
        },
        "games": [
            {
                "seed": p.seed,
                "side": p.side,
                "a": _outcome(p.a),
                "b": _outcome(p.b),
                "paired": p.valid,
                **({"reason_a": p.a.reason} if p.a is not None and not p.a.valid else {}),
                **({"reason_b": p.b.reason} if p.b is not None and not p.b.valid else {}),
            }
            for p in pairs
        ],
    }


def format_report(report: dict[str, Any]) -> str:
    """The report as a few lines of text (the command prints JSON; this is for logs and docs)."""
    a, b = report["players"]["a"], report["players"]["b"]
    diff, score = report["win_rate_difference"], report["score_difference"]
    rates = report["paired_win_rates"]
    lines = [
        f"{a} vs {b}: {report['paired_games']} paired games of {report['planned_games']} "
        f"({report['excluded_invalid']} pairs left out for an invalid game)"
        + ("" if report["complete"] else f"; INCOMPLETE: {'; '.join(report['incomplete'])}"),
        f"  win rate {a} {rates['a']['rate']:.1%} [{rates['a']['low']:.1%}, {rates['a']['high']:.1%}], "
        f"{b} {rates['b']['rate']:.1%} [{rates['b']['low']:.1%}, {rates['b']['high']:.1%}]",
        f"  difference {diff['estimate']:+.1%} [{diff['low']:+.1%}, {diff['high']:+.1%}], "
        f"exact McNemar p = {diff['p_value']:.4g} (mid-p {diff['p_mid']:.4g})",
        f"  score {score['a']:.3f} vs {score['b']:.3f}, difference {score['estimate']:+.3f}, "
        f"sign-flip p = {score['p_value']:.4g}",
    ]
    return "\n".join(lines) + "\n"
