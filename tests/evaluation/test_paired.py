"""The paired statistics of `evaluate` (evaluation/paired.py) against reference computations: the exact
McNemar test and Newcombe's paired interval on published tables, the sign-flip test against brute-force
enumeration, and the report's pairing, exclusions and completeness."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.evaluation.paired import (
    compare,
    format_report,
    mcnemar_exact,
    mcnemar_mid_p,
    newcombe_paired,
    pair_games,
    planned_keys,
    sign_flip_p,
)
from hoi4_arena.results import GameResult, wilson

# Cavo et al. 2012 (complete response before and after consolidation), the paired table of Fagerland,
# Lydersen and Laake, "Statistical Analysis of Contingency Tables" ch. 8: 59 both, 6 only the first,
# 16 only the second, 80 neither. The R package contingencytables (the book's code) reports for it
# Newcombe's square-and-add interval -0.0621 (-0.1186 to -0.0046).
CAVO = (59, 6, 16, 80)


def test_exact_mcnemar_on_hand_worked_tables() -> None:
    # 9 discordant pairs to 1: P(X <= 1), X ~ Bin(10, 1/2), is 11/1024; two-sided 22/1024.
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9) == 22 / 1024
    # Cavo: 6 to 16 of 22: 2 * sum_{k<=6} C(22, k) / 2^22 = 2 * 110056 / 4194304.
    assert (
        mcnemar_exact(6, 16) == pytest.approx(220112 / 4194304, abs=0)
        and round(mcnemar_exact(6, 16), 6) == 0.052479
    )
    # mid-p: less the probability of the observed table, C(22, 6) / 2^22.
    assert mcnemar_mid_p(6, 16) == (220112 - 74613) / 4194304 and round(mcnemar_mid_p(6, 16), 6) == 0.03469
    assert mcnemar_exact(0, 0) == mcnemar_mid_p(0, 0) == 1.0
    # 3 to 4 of 7: 2 * P(X <= 3) is exactly 1; mid-p less P(X = 3) = 35/128.
    assert mcnemar_exact(3, 4) == 1.0 and mcnemar_mid_p(3, 4) == (128 - 35) / 128
    assert mcnemar_exact(3, 3) == mcnemar_mid_p(3, 3) == 1.0  # 2 * P(X <= 3) of 6 is over 1: capped
    assert mcnemar_exact(0, 5) == 2 / 32
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_newcombe_interval_matches_the_reference_and_its_properties() -> None:
    low, high = newcombe_paired(*CAVO)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)
    # Swapping the players mirrors the interval.
    a, b, c, d = CAVO
    assert newcombe_paired(a, c, b, d) == pytest.approx((-high, -low))
    # With no correlation (ad == bc) it is the square-and-add of the two Wilson intervals.
    a, b, c, d = 4, 4, 4, 4
    p = (a + b) / 16
    w = wilson(a + b, 16)
    half = math.sqrt((p - w.low) ** 2 + (w.high - p) ** 2)
    assert newcombe_paired(a, b, c, d) == pytest.approx((-half, half))
    # Inside [-1, 1], containing the estimate, on every small table.
    for table in itertools.product(range(4), repeat=4):
        if sum(table) == 0:
            assert all(math.isnan(v) for v in newcombe_paired(*table))
            continue
        low, high = newcombe_paired(*table)
        estimate = (table[1] - table[2]) / sum(table)
        assert -1.0 <= low <= estimate <= high <= 1.0, table


def brute_force_sign_flip(differences: list[float]) -> float:
    nonzero = [d for d in differences if d]
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(nonzero)))
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed - 1e-9 for signs in patterns
    )
    return hits / len(patterns)


def test_sign_flip_p_equals_brute_force_enumeration() -> None:
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(0, 13))
        differences = [float(v) for v in rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n)]
        assert sign_flip_p(differences) == pytest.approx(brute_force_sign_flip(differences), abs=1e-12)
    # Without draws every difference is +-1: the exact McNemar test.
    assert sign_flip_p([1.0] * 9 + [-1.0] + [0.0] * 5) == mcnemar_exact(9, 1)
    assert sign_flip_p([]) == sign_flip_p([0.0, 0.0]) == 1.0
    with pytest.raises(ValueError, match="multiples"):
        sign_flip_p([0.25])


def row(player: str, seed: int, side: str, outcome: str, valid: bool = True) -> GameResult:
    other = "RED" if side == "BLU" else "BLU"
    winner = {"win": side, "loss": other, "draw": None}[outcome]
    return GameResult(
        player=player, side=side, winner=winner, valid=valid, seed=seed, reason="" if valid else "worker: x"
    )


def test_compare_pairs_games_by_seed_and_side() -> None:
    planned = planned_keys(3, 10)
    assert planned == [(10, "BLU"), (10, "RED"), (11, "BLU"), (11, "RED"), (12, "BLU"), (12, "RED")]
    a = [
        row("A", 10, "BLU", "win"),
        row("A", 10, "RED", "win"),
        row("A", 11, "BLU", "draw"),
        row("A", 11, "RED", "loss", valid=False),
        row("A", 12, "BLU", "win"),
        row("A", 99, "BLU", "win"),  # not planned: ignored
    ]
    b = [  # in another order: pairing is by key
        row("B", 12, "BLU", "loss"),
        row("B", 11, "RED", "win"),
        row("B", 11, "BLU", "loss"),
        row("B", 10, "RED", "win"),
        row("B", 10, "BLU", "loss"),
    ]
    report = compare(a, b, planned, ("A", "B"))
    assert report["planned_games"] == 6 and report["paired_games"] == 4
    assert report["excluded_invalid"] == 1 and report["invalid"] == {"a": 1, "b": 0}
    assert not report["complete"] and report["incomplete"] == [
        "A: 1 of 6 games not played",
        "B: 1 of 6 games not played",
    ]
    assert report["table"] == {"both_won": 1, "only_a_won": 2, "only_b_won": 0, "neither_won": 1}
    diff = report["win_rate_difference"]
    assert diff["estimate"] == 0.5 and diff["p_value"] == mcnemar_exact(2, 0) == 0.5
    assert (diff["low"], diff["high"]) == newcombe_paired(1, 2, 0, 1)
    score = report["score_difference"]
    # Pairs: win-loss (+1), win-win (0), draw-loss (+0.5), win-loss (+1).
    assert score["estimate"] == pytest.approx(2.5 / 4) and score["p_value"] == sign_flip_p([1, 0, 0.5, 1])
    assert report["records"]["a"]["valid"] == 4 and report["records"]["a"]["invalid"] == 1
    assert report["paired_win_rates"]["a"]["rate"] == 0.75 and report["paired_win_rates"]["b"]["rate"] == 0.25
    games = report["games"]
    assert games[3] == {
        "seed": 11,
        "side": "RED",
        "a": "invalid",
        "b": "win",
        "paired": False,
        "reason_a": "worker: x",
    }
    assert games[5] == {"seed": 12, "side": "RED", "a": None, "b": None, "paired": False}
    assert "INCOMPLETE" in format_report(report)


def test_identical_records_have_no_difference() -> None:
    planned = planned_keys(2, 0)
    rows = [
        row("A", s, side, o) for (s, side), o in zip(planned, ["win", "loss", "draw", "win"], strict=True)
    ]
    report = compare(rows, rows, planned)
    assert report["complete"] and report["paired_games"] == 4
    assert report["win_rate_difference"]["estimate"] == 0 and report["win_rate_difference"]["p_value"] == 1.0
    assert report["score_difference"]["p_value"] == 1.0


def test_a_key_played_twice_or_without_a_seed_is_refused() -> None:
    with pytest.raises(ValueError, match="two games of seed 1"):
        pair_games([row("A", 1, "BLU", "win"), row("A", 1, "BLU", "loss")], [], planned_keys(1, 1))
    with pytest.raises(ValueError, match="seed"):
        pair_games([], [GameResult(player="B", side="BLU", winner=None)], planned_keys(1, 0))
    empty = compare([], [], planned_keys(1, 0))
    assert empty["paired_games"] == 0 and math.isnan(empty["win_rate_difference"]["estimate"])


def test_held_out_pairs_counts_setups_of_two_runs_of_one_player(tmp_path: Path) -> None:
    """scripts/held_out_pairs.py pair on two folders of the same name (two runs' `learned`): the setup
    completions are each run's own, not the second run's twice."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "held_out_pairs.py"
    for run, complete in (("one", [True, True, False, False]), ("two", [True, False, True, True])):
        folder = tmp_path / run / "learned"
        folder.mkdir(parents=True)
        rows = [
            {
                "player": "learned",
                "side": side,
                "opponent": "ai",
                "winner": "RED",
                "outcome": "win" if side == "RED" else "loss",
                "valid": True,
                "arena": "plains:0",
                "seed": 1000 + i // 2,
                "game": i,
                "reason": "capitulation",
                "days": 50,
                "setup": {"army": 1, "front": 2, "offensive": 3, "executed": 4, "complete": done},
            }
            for i, (side, done) in enumerate(zip(("BLU", "RED") * 2, complete, strict=True))
        ]
        (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = subprocess.run(
        [
            sys.executable,
            str(script),
            "pair",
            str(tmp_path / "one" / "learned" / "results.jsonl"),
            str(tmp_path / "two" / "learned" / "results.jsonl"),
            "2",
            "1000",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(found.stdout)
    assert result["setup_complete"]["only_a"] == 1 and result["setup_complete"]["only_b"] == 2
    assert str(tmp_path / "one" / "learned") in found.stderr
