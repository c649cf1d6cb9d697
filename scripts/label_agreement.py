"""How the learner answered the expert's acting labels on its own decisions, iteration by iteration (docs/dagger.md).

For every game of each iteration of a DAgger run (`OUT/iter-NNN/games/dagger-i*`), over the decisions
the learner played (`labels-expert.jsonl`'s `expert` false) whose label makes an input: the share where
the learner made no input at all, the share it carried out slot for slot (`players.shadow.follows`, the
summary's `agree_acting`), and the share it carried out with the timing set aside: the same presses,
releases and keys in any slots, and its last move within 8 lattice units of the label's (or neither
moves). The expert's hand times its events at random within a decision, so the slot-exact share
understates how often the learner does what the expert would.

Try: .venv/bin/python scripts/label_agreement.py runs/dag-held/played
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from hoi4_arena.players.shadow import TOLERANCE, follows
from hoi4_arena.screen.tokens import MOVE, NONE
from hoi4_arena.sessions.labels import labelled_sessions, read_labels
from hoi4_arena.sessions.reader import SessionReader


def _inputs(tokens: np.ndarray) -> Counter:
    """The presses, releases and keys of (8, 3) tokens, slots aside."""
    return Counter(int(k) for k in tokens[:, 0] if k not in (NONE, MOVE))


def _last_move(tokens: np.ndarray) -> np.ndarray | None:
    moves = tokens[tokens[:, 0] == MOVE]
    return moves[-1, 1:] if len(moves) else None


def timing_free(label: np.ndarray, played: np.ndarray, tolerance: int = TOLERANCE) -> bool:
    """Whether `played` makes the label's presses, releases and keys in any slots and ends its moves
    within `tolerance` lattice units of the label's last move (or neither moves)."""
    if _inputs(label) != _inputs(played):
        return False
    a, b = _last_move(label), _last_move(played)
    if a is None or b is None:
        return a is None and b is None
    return bool(np.abs(a - b).max() <= tolerance)


def game_counts(folder: Path) -> dict[str, int]:
    """One game's learner decisions whose label acts: how many, those the learner made no input on, those
    it carried out slot for slot, those it carried out with the timing set aside."""
    labels = read_labels(folder, "expert")
    counts = {"acting": 0, "idle": 0, "slot_exact": 0, "timing_free": 0}
    for decision in SessionReader(folder).decisions(images=False, arena=False):
        label, played = labels.tokens[decision.index], decision.tokens
        if labels.played[decision.index] or not (label[:, 0] != NONE).any():
            continue
        counts["acting"] += 1
        counts["idle"] += not (played[:, 0] != NONE).any()
        counts["slot_exact"] += follows(label, played)
        counts["timing_free"] += timing_free(label, played)
    return counts


def iteration_rows(run: Path) -> list[dict[str, object]]:
    """Per iteration of `run`: its labelled games and the shares of `game_counts` over them."""
    rows = []
    for iteration in sorted(run.glob("iter-*")):
        games = labelled_sessions(iteration / "games", "expert", "dagger-i*")
        total = Counter()
        for game in games:
            total.update(game_counts(game))
        acting = total["acting"]
        rows.append(
            {
                "iteration": iteration.name,
                "games": len(games),
                "acting_labels": acting,
                **{
                    k: round(total[k] / acting, 4) if acting else None
                    for k in ("idle", "slot_exact", "timing_free")
                },
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
                f"  {row['iteration']}: {row['games']} games, {row['acting_labels']} acting labels on the "
                f"learner's decisions: no input {row['idle']}, carried out slot for slot {row['slot_exact']}, "
                f"timing aside {row['timing_free']}"
            )
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
