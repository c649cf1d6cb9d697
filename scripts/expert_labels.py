"""How two experts label the same learner's screens: two DAgger runs compared (docs/dagger.md, "Expert
iteration").

Give two `hoi4-arena dagger` runs of the same learner, maps and seeds, with `--beta0 0` and another
`--expert` each: the learner plays every decision, so both runs play the same games (checked: the inputs
played must be the same) and only the labels differ. Printed per game: each expert's opening, the
search's choice points, how many decisions' labels differ; then over all games: the share of decisions
whose labels are the same tokens, the share where one label carries out the other (`shadow.follows`: the
same kinds slot by slot, moves within 8 lattice cells), the same over the decisions where either label
acts, and how often each expert's label acts.

Try: .venv/bin/python scripts/expert_labels.py runs/dagger-scripted runs/dagger-search
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from hoi4_arena.players.shadow import TOLERANCE, follows
from hoi4_arena.screen.tokens import NONE
from hoi4_arena.sessions.labels import read_labels
from hoi4_arena.sessions.reader import SessionReader


def played(folder: Path) -> np.ndarray:
    """(n, 8, 3) the tokens the session's decisions played."""
    return np.stack([d.tokens for d in SessionReader(folder).decisions(images=False, arena=False)])


def searches(folder: Path) -> list[str]:
    """The search's choice points of a session (its player summary), as 'point: best'."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    found = manifest.get("extra", {}).get("player", {}).get("searches", [])
    return [f"day {s['day']} {s['point']}: {s['best']}" for s in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path, help="a dagger run's OUT (e.g. --expert scripted)")
    parser.add_argument(
        "second", type=Path, help="a dagger run's OUT of the same games (e.g. --expert search)"
    )
    args = parser.parse_args()
    sessions = sorted(
        p for p in args.first.glob("iter-*/games/dagger-i*") if (p / "labels-expert.json").is_file()
    )
    if not sessions:
        sys.exit(f"{args.first}: no labelled DAgger sessions")
    totals: Counter = Counter()
    openings: dict[str, Counter] = {"first": Counter(), "second": Counter()}
    for a_folder in sessions:
        b_folder = args.second / a_folder.relative_to(args.first)
        if not (b_folder / "labels-expert.json").is_file():
            sys.exit(f"{b_folder}: missing: the runs must play the same games")
        if not np.array_equal(played(a_folder), played(b_folder)):
            sys.exit(
                f"{a_folder.name}: the runs played other inputs (give both --beta0 0 and the same learner)"
            )
        a, b = read_labels(a_folder, "expert"), read_labels(b_folder, "expert")
        keep = a.keep() & b.keep()
        la, lb = a.tokens[keep], b.tokens[keep]
        same = np.array([np.array_equal(x, y) for x, y in zip(la, lb, strict=True)])
        carried = np.array(
            [follows(x, y, TOLERANCE) or follows(y, x, TOLERANCE) for x, y in zip(la, lb, strict=True)]
        )
        acts_a, acts_b = (la[:, :, 0] != NONE).any(1), (lb[:, :, 0] != NONE).any(1)
        acting = acts_a | acts_b
        totals.update(
            decisions=len(la),
            same=int(same.sum()),
            carried=int(carried.sum()),
            acting=int(acting.sum()),
            same_acting=int(same[acting].sum()),
            carried_acting=int(carried[acting].sum()),
            first_acts=int(acts_a.sum()),
            second_acts=int(acts_b.sum()),
        )
        ka, kb = a.index.get("expert_strategy", "?"), b.index.get("expert_strategy", "?")
        openings["first"][ka.split("+")[0]] += 1
        openings["second"][kb.split("+")[0]] += 1
        print(
            f"{a_folder.name}: {a.index.get('expert')} {ka} | {b.index.get('expert')} {kb} | "
            f"labels differ in {len(la) - int(same.sum())} of {len(la)} | searches: {'; '.join(searches(b_folder))}"
        )
    n, m = totals["decisions"], max(totals["acting"], 1)
    print(
        json.dumps(
            {
                "games": len(sessions),
                "decisions": n,
                "same": round(totals["same"] / n, 4),
                "carried_out": round(totals["carried"] / n, 4),
                "acting": totals["acting"],
                "same_acting": round(totals["same_acting"] / m, 4),
                "carried_out_acting": round(totals["carried_acting"] / m, 4),
                "first_acts": round(totals["first_acts"] / n, 4),
                "second_acts": round(totals["second_acts"] / n, 4),
                "openings": {k: dict(v) for k, v in openings.items()},
            }
        )
    )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
