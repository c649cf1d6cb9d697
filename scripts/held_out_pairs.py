"""Play checkpoints on maps no training run here used, and pair their records game by game (docs/rl.md).

Two evaluation sets of 80 games each: 40 map seeds never trained on (1000-1039), each from both sides,
game seeds 3000-3039 (games 2k and 2k + 1 play seed 3000 + k on the k-th map, BLU first), played in
two parts of 40 games (part 0: maps 1000-1019, part 1: maps 1020-1039):

- `train-presets`: plains, passes, marsh, bay, salient and ford in turn (the presets train-ppo's
  measured run trained on, at map seeds 0-99);
- `river`: the river preset, held out of that training entirely.

    python scripts/held_out_pairs.py play OUT NAME CHECKPOINT SET [PART]   one part's 40 games (resumes)
    python scripts/held_out_pairs.py report OUT A B        A against B on every set and part both played
    python scripts/held_out_pairs.py pair A/results.jsonl B/results.jsonl PAIRS SEED   any two runs of
                                             the same PAIRS seeds from SEED, each from both sides

`play` plays as the quickstart evaluates (`PLAY_SETTINGS`: on each move's likeliest spot, the kinds at
temperature 0.7, follow-through, the memory reset every 8 decisions; the measurements in docs/ made
before 0.7 was chosen sampled the kinds at 1.0), 960x540, speed 5, 365 days, not recorded, into
OUT/SET/NAME/ (part 1: OUT/SET/NAME-part1/). The scripted player's games on part 0 of a set:
`hoi4-arena record-ai OUT/SET/scripted --player scripted --arena "$(python scripts/held_out_pairs.py
maps SET)" --games 40 --seed 3000`. `report` prints each set's paired comparison
(evaluation/paired.compare: Newcombe's interval and the exact McNemar test of the win rates, the
sign-flip test of the scores) and the setup completions' discordant pairs with their exact
McNemar p, and writes OUT/report-A-B.json.
"""

from __future__ import annotations

import json
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


def folder(out: Path, which: str, name: str, part: int) -> Path:
    return out / which / (name if part == 0 else f"{name}-part{part}")


def play(out: Path, name: str, checkpoint: str, which: str, part: int = 0) -> None:
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.quickstart import PLAY_SETTINGS

    config = PlayConfig(
        checkpoint=checkpoint,
        out=folder(out, which, name, part),
        name=name,
        games=2 * PART_PAIRS,
        arena=maps(which, part),
        seed=SEED + part * PART_PAIRS,
        size=(540, 960),
        speed=5,
        max_days=365,
        record=False,
        threads=1,
        **PLAY_SETTINGS,
    )
    print(json.dumps(run_play_policy(config), default=str))


def report(out: Path, a: str, b: str) -> None:
    from hoi4_arena.evaluation.paired import planned_keys
    from hoi4_arena.results import read_results

    found = {}
    for which in SETS:
        parts = [
            part
            for part in range(PARTS)
            if all((folder(out, which, name, part) / "results.jsonl").exists() for name in (a, b))
        ]
        if not parts:
            continue
        rows_a, rows_b = (
            [row for part in parts for row in read_results(folder(out, which, name, part) / "results.jsonl")]
            for name in (a, b)
        )
        planned = [key for part in parts for key in planned_keys(PART_PAIRS, SEED + part * PART_PAIRS)]
        found[which] = paired(rows_a, rows_b, planned, a, b)
        found[which]["parts"] = parts
        print(f"{which} (parts {parts}): {summary_line(found[which], a, b)}")
    if not found:
        sys.exit(f"error: no set under {out} has games of both {a} and {b}")
    (out / f"report-{a}-{b}.json").write_text(json.dumps(found, indent=1, default=str) + "\n")


def paired(rows_a: list, rows_b: list, planned: list, a: str, b: str) -> dict:
    """evaluation/paired.compare of two players' rows, with the setup completions' discordant pairs."""
    from hoi4_arena.evaluation.paired import compare, mcnemar_exact

    result = compare(rows_a, rows_b, planned, names=(a, b))
    # By position, not by name: two runs of one player (both folders named `learned`) share a name.
    done = [{(r.seed, r.side): r for r in rows} for rows in (rows_a, rows_b)]
    keys = set(done[0]) & set(done[1])
    complete = [{k for k in keys if (games[k].extra.get("setup") or {}).get("complete")} for games in done]
    only_a, only_b = len(complete[0] - complete[1]), len(complete[1] - complete[0])
    result["setup_complete"] = {"only_a": only_a, "only_b": only_b, "p_value": mcnemar_exact(only_a, only_b)}
    return result


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
    if args[:1] == ["play"] and len(args) in (5, 6):
        play(Path(args[1]), args[2], args[3], args[4], int(args[5]) if len(args) == 6 else 0)
    elif args[:1] == ["report"] and len(args) == 4:
        report(Path(args[1]), args[2], args[3])
    elif args[:1] == ["pair"] and len(args) == 5:
        pair(Path(args[1]), Path(args[2]), int(args[3]), int(args[4]))
    elif args[:1] == ["maps"] and len(args) in (2, 3):
        print(maps(args[1], int(args[2]) if len(args) == 3 else 0))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
