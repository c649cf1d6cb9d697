"""Play checkpoints on maps no training run here used, and pair their records game by game (docs/rl.md).

Two evaluation sets of 40 games each, 20 map seeds never trained on (1000-1019), each from both sides,
game seeds 3000-3019 (game 2k and 2k + 1 play seed 3000 + k, BLU first):

- `train-presets`: plains, passes, marsh, bay, salient and ford in turn (the presets train-ppo's
  measured run trained on, at map seeds 0-99);
- `river`: the river preset, held out of that training entirely.

    python scripts/held_out_pairs.py play OUT NAME CHECKPOINT SET   one player's 40 games (resumes)
    python scripts/held_out_pairs.py report OUT A B                 A against B on every set both played

`play` plays as the quickstart evaluates (on each move's likeliest spot, follow-through, the memory
reset every 8 decisions), 960x540, speed 5, 365 days, not recorded, into OUT/SET/NAME/. The scripted
player's games on the same set: `hoi4-arena record-ai OUT/SET/scripted --player scripted --arena
"$(python scripts/held_out_pairs.py maps SET)" --games 40 --seed 3000`. `report` prints each set's
paired comparison (evaluation/paired.compare: Newcombe's interval and the exact McNemar test of the win
rates, the sign-flip test of the scores) and the setup completions' discordant pairs with their exact
McNemar p, and writes OUT/report-A-B.json.
"""

from __future__ import annotations

import json
import sys
from math import comb
from pathlib import Path

TRAIN_PRESETS = ("plains", "passes", "marsh", "bay", "salient", "ford")
SETS = ("train-presets", "river")
SEED = 3000
MAP_SEEDS = range(1000, 1020)


def maps(which: str) -> str:
    """The set's 20 maps, comma-separated, in play order (pair k on the k-th)."""
    if which not in SETS:
        sys.exit(f"error: unknown set {which!r}: {', '.join(SETS)}")
    names = [TRAIN_PRESETS[k % 6] if which == "train-presets" else "river" for k in range(len(MAP_SEEDS))]
    return ",".join(f"{name}:{seed}" for name, seed in zip(names, MAP_SEEDS, strict=True))


def play(out: Path, name: str, checkpoint: str, which: str) -> None:
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.quickstart import PLAY_SETTINGS

    config = PlayConfig(
        checkpoint=checkpoint,
        out=out / which / name,
        name=name,
        games=2 * len(MAP_SEEDS),
        arena=maps(which),
        seed=SEED,
        size=(540, 960),
        speed=5,
        max_days=365,
        record=False,
        threads=1,
        **PLAY_SETTINGS,
    )
    print(json.dumps(run_play_policy(config), default=str))


def _exact_mcnemar(only_a: int, only_b: int) -> float:
    pairs = only_a + only_b
    return (
        min(1.0, 2 * sum(comb(pairs, i) for i in range(min(only_a, only_b) + 1)) / 2**pairs) if pairs else 1.0
    )


def report(out: Path, a: str, b: str) -> None:
    from hoi4_arena.evaluation.paired import compare, planned_keys
    from hoi4_arena.results import read_results

    found = {}
    for which in SETS:
        files = [out / which / name / "results.jsonl" for name in (a, b)]
        if not all(f.exists() for f in files):
            continue
        rows_a, rows_b = (read_results(f) for f in files)
        result = compare(rows_a, rows_b, planned_keys(len(MAP_SEEDS), SEED), names=(a, b))
        done = {name: {(r.seed, r.side): r for r in rows} for name, rows in ((a, rows_a), (b, rows_b))}
        keys = set(done[a]) & set(done[b])
        complete = {
            name: {k for k in keys if (done[name][k].extra.get("setup") or {}).get("complete")}
            for name in done
        }
        only_a, only_b = len(complete[a] - complete[b]), len(complete[b] - complete[a])
        result["setup_complete"] = {
            "only_a": only_a,
            "only_b": only_b,
            "p_value": _exact_mcnemar(only_a, only_b),
        }
        found[which] = result
        ra, rb = result["records"]["a"], result["records"]["b"]
        win, score = result["win_rate_difference"], result["score_difference"]
        print(
            f"{which}: {a} {ra['wins']}/{ra['draws']}/{ra['losses']} (setup {ra['setup']['complete']}), "
            f"{b} {rb['wins']}/{rb['draws']}/{rb['losses']} (setup {rb['setup']['complete']}); "
            f"{result['paired_games']} pairs{'' if result['complete'] else ' (incomplete)'}; "
            f"win rate {win['estimate']:+.3f} [{win['low']:+.3f}, {win['high']:+.3f}] p {win['p_value']:.3g}; "
            f"score {score['estimate']:+.3f} p {score['p_value']:.3g}; "
            f"setup only {a} {only_a}, only {b} {only_b}, p {result['setup_complete']['p_value']:.3g}"
        )
    if not found:
        sys.exit(f"error: no set under {out} has games of both {a} and {b}")
    (out / f"report-{a}-{b}.json").write_text(json.dumps(found, indent=1, default=str) + "\n")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["play"] and len(args) == 5:
        play(Path(args[1]), args[2], args[3], args[4])
    elif args[:1] == ["report"] and len(args) == 4:
        report(Path(args[1]), args[2], args[3])
    elif args[:1] == ["maps"] and len(args) == 2:
        print(maps(args[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
