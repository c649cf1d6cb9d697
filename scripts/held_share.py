"""What the learner leaves held down in a DAgger run's games, iteration by iteration (docs/dagger.md).

For every game of each iteration (`OUT/iter-NNN/games/dagger-*`), over the decisions the learner played
(the expert's labels beside the session say which: `labels-expert.jsonl`'s `expert` false): the share
that began with a mouse button or key held down (followed from the session's first decision through the
inputs it sent, `screen.tokens.held_after`, as training and play follow them), the longest run of such
decisions, and the share of those decisions whose label releases something held. A learner that sees
what it holds (`dagger --held-inputs`) should leave less held down than one that does not. Also, of the
labels that press a button or key, the share that leave it pressed at the decision's end, on the
learner's decisions and on the expert's (a step begun whose continuation the next label asks for).

Try: .venv/bin/python scripts/held_share.py runs/dag-held/run runs/dag-m0/fixed
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import numpy as np

from hoi4_arena.screen.tokens import PRESSES, held_after
from hoi4_arena.screen.tokens import RELEASES as RELEASE_KINDS
from hoi4_arena.sessions.labels import has_labels, read_labels
from hoi4_arena.sessions.reader import SessionReader

RELEASES = np.array(RELEASE_KINDS)  # the release kind of each of PRESSES


def game_counts(folder: Path) -> dict[str, int]:
    """One game's learner-played decisions, those that began holding something, the longest such run,
    the held ones whose label releases what is held; and over the labels that press something, on the
    learner's decisions and on the expert's, how many leave it pressed at the decision's end."""
    labelled = read_labels(folder, "expert")
    labels, by_expert = labelled.tokens, labelled.played
    held = np.zeros(len(PRESSES), bool)
    learner = holding = releases = run = longest = 0
    presses = {"learner": [0, 0], "expert": [0, 0]}  # labels that press; of them, left pressed
    for decision in SessionReader(folder).decisions(images=False, arena=False):
        label = labels[decision.index]
        if np.isin(label[:, 0], PRESSES).any():
            count = presses["expert" if by_expert[decision.index] else "learner"]
            count[0] += 1
            count[1] += bool(held_after(np.zeros(len(PRESSES), bool), label).any())
        if not by_expert[decision.index]:
            learner += 1
            if held.any():
                holding += 1
                run += 1
                longest = max(longest, run)
                released = {int(k) for k in labels[decision.index][:, 0]} & set(RELEASES[held].tolist())
                releases += bool(released)
            else:
                run = 0
        held = held_after(held, decision.tokens)
    return {
        "learner": learner,
        "holding": holding,
        "longest": longest,
        "releases": releases,
        "learner_presses": presses["learner"][0],
        "learner_left": presses["learner"][1],
        "expert_presses": presses["expert"][0],
        "expert_left": presses["expert"][1],
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def iteration_rows(run: Path) -> list[dict[str, float | int | str]]:
    rows = []
    for games in sorted(run.glob("iter-*/games")):
        folders = [f for f in sorted(games.glob("dagger-*")) if f.is_dir()]
        # A game still being played (or cut short) has no labels yet: left out, and counted.
        counts = [game_counts(folder) for folder in folders if has_labels(folder, "expert")]
        if not counts:
            continue
        learner = sum(c["learner"] for c in counts)
        holding = sum(c["holding"] for c in counts)
        rows.append(
            {
                "iteration": games.parent.name,
                "games": len(counts),
                "unlabelled": len(folders) - len(counts),
                "learner_decisions": learner,
                "holding": round(holding / learner, 4) if learner else 0.0,
                "longest": max(c["longest"] for c in counts),
                "labels_release": _share(sum(c["releases"] for c in counts), holding),
                "learner_press_left": _share(
                    sum(c["learner_left"] for c in counts), sum(c["learner_presses"] for c in counts)
                ),
                "expert_press_left": _share(
                    sum(c["expert_left"] for c in counts), sum(c["expert_presses"] for c in counts)
                ),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="hoi4-arena dagger run folders")
    args = parser.parse_args(argv)
    for run in args.runs:
        if not run.is_dir():
            print(f"error: {run}: no such folder", file=sys.stderr)
            return 2
        print(f"{run}:")
        for row in iteration_rows(run):
            print(
                f"  {row['iteration']}: {row['games']} games"
                + (f" ({row['unlabelled']} not labelled yet, left out)" if row["unlabelled"] else "")
                + f", {row['learner_decisions']} learner decisions, "
                f"{row['holding']:.1%} began holding something (longest {row['longest']} in a row), "
                f"{row['labels_release']:.1%} of those labelled with a release; labels that press leave it "
                f"pressed on {row['learner_press_left']:.0%} of the learner's decisions, "
                f"{row['expert_press_left']:.0%} of the expert's"
            )
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
