"""What each change to the training recipe did, paired game by game on one benchmark folder: one picture.

    python scripts/recipe_effects.py BENCH OUT.png "LABEL=A1[,A2]:B1[,B2]" ["LABEL=..." ...]

Each comparison is a changed recipe A against the recipe it changed, B, their policies matched by
training seed as in `scripts/recipe_pairs.py` (same maps, game seeds and sides; both suites pooled).
For each it prints and draws the mean paired difference A - B of three things a game: the score (a win
1, a draw 1/2, a loss 0), the setup completed (0 or 1) and the offensives drawn, with a 95% interval
from 2,000 bootstrap resamples of the paired games (seed 0 for each comparison) and the exact paired p
(sign-flip for the score and the offensives, McNemar for the setups). A comparison whose interval leaves 0 moved that
number; the picture puts every change the docs measured side by side.

Try: .venv/bin/python scripts/recipe_effects.py runs/bench-steps docs/screenshots/recipe-effects.png \
         "windows of 32=runs/mem/w32-12k/last.pt:runs/scale/q384-12k/last.pt"
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import recipe_pairs as pairs_script

from hoi4_arena.evaluation.paired import SCORES, mcnemar_exact, sign_flip_p
from hoi4_arena.maps.held_out import SUITES

MEASURES = ("score", "setup", "offensives")
TITLES = {
    "score": "score a game, A - B",
    "setup": "setups completed, A - B (share of games)",
    "offensives": "offensives drawn a game, A - B",
}
RESAMPLES = 2000


def parse_comparison(text: str) -> tuple[str, list[str], list[str]]:
    """'LABEL=A1,A2:B1,B2' as (label, [A1, A2], [B1, B2]); a SystemExit saying what is wrong."""
    label, eq, recipes = text.partition("=")
    a, colon, b = recipes.rpartition(":")
    if not eq or not colon or not label.strip() or not a or not b:
        raise SystemExit(f"error: {text!r}: a comparison is LABEL=A1[,A2]:B1[,B2]")
    recipe_a, recipe_b = a.split(","), b.split(",")
    if len(recipe_a) != len(recipe_b):
        raise SystemExit(f"error: {text!r}: A and B must list the same number of policies (one per seed)")
    return label.strip(), recipe_a, recipe_b


def differences(matched: list[tuple]) -> dict[str, list[float]]:
    """Per measure, the paired differences A - B (offensives: the pairs whose rows both carry `war`)."""
    war = [(a, b) for a, b in matched if a.extra.get("war") and b.extra.get("war")]
    return {
        "score": [SCORES[a.outcome] - SCORES[b.outcome] for a, b in matched],
        "setup": [float(pairs_script.setup_complete(a)) - pairs_script.setup_complete(b) for a, b in matched],
        "offensives": [float(a.extra["war"]["offensives"] - b.extra["war"]["offensives"]) for a, b in war],
    }


def effect(values: list[float], measure: str, rng: np.random.Generator) -> dict[str, Any]:
    """The mean difference, its 95% bootstrap interval and the exact paired p."""
    if not values:
        return {"games": 0, "mean": float("nan"), "low": float("nan"), "high": float("nan"), "p_value": 1.0}
    data = np.asarray(values, dtype=float)
    means = data[rng.integers(0, len(data), size=(RESAMPLES, len(data)))].mean(axis=1)
    if measure == "setup":
        p_value = mcnemar_exact(int((data > 0).sum()), int((data < 0).sum()))
    else:
        p_value = sign_flip_p(values)
    return {
        "games": len(values),
        "mean": float(data.mean()),
        "low": float(np.quantile(means, 0.025)),
        "high": float(np.quantile(means, 0.975)),
        "p_value": p_value,
    }


def effects(bench: Path, comparisons: list[tuple[str, list[str], list[str]]], pairs: int | None) -> dict:
    """{label: {measure: effect}} over both suites' pooled paired games."""
    if pairs is None:
        pairs = pairs_script.board_pairs(bench)
    out = {}
    for label, recipe_a, recipe_b in comparisons:
        matched = [
            pair
            for suite in SUITES
            if (bench / suite).is_dir()
            for pair in pairs_script.pooled(bench, suite, pairs, recipe_a, recipe_b)
        ]
        found = differences(matched)
        rng = np.random.default_rng(0)  # each comparison's intervals its own, wherever it stands in the list
        out[label] = {measure: effect(found[measure], measure, rng) for measure in MEASURES}
    return out


def format_table(result: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| change (A against B) | paired games | score A - B [95%], p | setups A - B [95%], p | "
        "offensives a game A - B [95%], p |",
        "|---|---:|---|---|---|",
    ]
    for label, entry in result.items():
        cells = [
            f"{e['mean']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}], p = {e['p_value']:.2g}"
            for e in (entry[m] for m in MEASURES)
        ]
        lines.append(f"| {label} | {entry['score']['games']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(result: dict[str, dict[str, Any]], out: Path) -> None:
    from matplotlib.figure import Figure

    labels = list(result)
    figure = Figure(figsize=(13, 1.2 + 0.55 * len(labels)), layout="constrained")
    axes = figure.subplots(1, len(MEASURES), sharey=True)
    y = np.arange(len(labels))[::-1]
    for ax, measure in zip(axes, MEASURES, strict=True):
        entries = [result[label][measure] for label in labels]
        means = np.array([e["mean"] for e in entries])
        low = means - np.array([e["low"] for e in entries])
        high = np.array([e["high"] for e in entries]) - means
        colours = [
            "tab:green" if e["low"] > 0 else "tab:red" if e["high"] < 0 else "tab:gray" for e in entries
        ]
        ax.axvline(0, color="black", linewidth=0.8)
        for row, mean, lo, hi, colour in zip(y, means, low, high, colours, strict=True):
            ax.errorbar(mean, row, xerr=[[lo], [hi]], fmt="o", color=colour, capsize=3)
        ax.set_title(TITLES[measure], fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, labels)
    figure.suptitle(
        "Each change to the recipe, paired game by game on the benchmark (both suites; 95% bootstrap "
        "intervals; green: above 0, red: below)",
        fontsize=10,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bench", type=Path, help="the benchmark's folder")
    parser.add_argument("out", type=Path, help="the picture to write (.png)")
    parser.add_argument("comparisons", nargs="+", help="LABEL=A1[,A2]:B1[,B2], one per change")
    parser.add_argument("--pairs", type=int, default=None, help="the first N pairs of maps of each suite")
    args = parser.parse_args(argv)
    comparisons = [parse_comparison(text) for text in args.comparisons]
    result = effects(args.bench, comparisons, args.pairs)
    draw(result, args.out)
    print(format_table(result), end="")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
