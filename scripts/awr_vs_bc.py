"""Advantage-weighted cloning against plain BC in play, at the same steps (docs/training.md, "AWR against
plain BC in play").

From a finished quickstart run RUN (its demonstrations in RUN/demos, its BC policy RUN/bc/last.pt, its
evaluation games in RUN/eval) and a critic (`hoi4-arena train-critic`), into OUT:

1. OUT/demos: a copy of the demonstrations with the critic's advantages written beside each session
   (`hoi4-arena advantage`);
2. OUT/bc: the quickstart's behaviour cloning (`BC_SETTINGS`, its seed and step count) with
   `--advantage --beta B --max-weight W`: the one difference from RUN/bc is the weighting;
3. OUT/eval: the AWR policy played as the quickstart plays its learned one (`PLAY_SETTINGS`) on the
   quickstart's evaluation seeds, sides and maps, each map's games paired with RUN's learned policy's
   (`evaluation/paired.compare`), written to OUT/report.json and printed.

Each stage is kept once done: a stopped run goes on where it stopped (training resumes from its save).
The run is fixed by work (the steps and seeds of RUN), so it reproduces on any machine of this kind.

Try: .venv/bin/python scripts/awr_vs_bc.py runs/demo-b runs/critic-b/critic.pt runs/awr-b
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from hoi4_arena.errors import UserError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished quickstart folder")
    parser.add_argument("critic", type=Path, help="a train-critic checkpoint (critic.pt)")
    parser.add_argument(
        "out", type=Path, help="folder for the weighted demonstrations, the policy, the games"
    )
    parser.add_argument("--beta", type=float, default=0.1, help="AWR's temperature: weights exp(A / beta)")
    parser.add_argument("--max-weight", type=float, default=20.0, help="weights clipped to this")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    try:
        report = run(args)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, default=str))
    return 0


def run(args: argparse.Namespace) -> dict:
    from hoi4_arena.quickstart import BC_SETTINGS, HELD_OUT, PLAY_SETTINGS

    settings_path = args.run / "quickstart.json"
    if not settings_path.is_file() or not (args.run / "bc" / "last.pt").is_file():
        raise UserError(f"{args.run} is not a finished quickstart run (quickstart.json, bc/last.pt)")
    if not args.critic.is_file():
        raise UserError(f"no critic checkpoint at {args.critic}")
    quick = json.loads(settings_path.read_text())["settings"]
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    demos = out / "demos"
    if not (out / "advantage.done").exists():
        if demos.exists():
            shutil.rmtree(demos)
        shutil.copytree(args.run / "demos", demos)
        command = [str(Path(sys.executable).with_name("hoi4-arena")), "advantage", str(demos)]
        command += ["--critic", str(args.critic), "--sources", "scripted", "--threads", str(args.threads)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        (out / "advantage.done").write_text("ok\n")

    from hoi4_arena.training.bc import train_bc
    from hoi4_arena.training.bc_config import BCConfig

    bc_out, steps = out / "bc", int(quick["train_steps"])
    if not (out / "train.json").exists():
        resume = (bc_out / "progress.pt").exists()
        if bc_out.exists() and not resume:
            shutil.rmtree(bc_out)  # stopped before its first save: nothing kept
        config = BCConfig(
            data=str(demos),
            out=str(bc_out),
            epochs=1000,
            seed=quick["seed"],
            threads=args.threads,
            workers=1,
            save_every=60.0,
            sources=("scripted",),
            max_steps=steps,
            lr_decay_steps=steps,
            advantage=True,
            beta=args.beta,
            max_weight=args.max_weight,
            **BC_SETTINGS,
        )
        changes = {"max_steps": steps, "epochs": 1000} if resume else None
        summary = train_bc(config, resume=resume, changes=changes)
        (out / "train.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")

    from hoi4_arena.evaluation.paired import compare, planned_keys
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.results import read_results

    width, height = quick["size"]
    maps = [("eval", quick["arena"])]
    if quick.get("held_out"):
        maps.append((f"eval/{HELD_OUT}", quick["held_out"]))
    seed, games = int(quick["seed"]) + 1000, int(quick["games"])
    report = {}
    for folder, arena in maps:
        played = out / folder / "awr"
        run_play_policy(
            PlayConfig(
                checkpoint=str(bc_out / "last.pt"),
                out=played,
                name="awr",
                threads=args.threads,
                speed=quick["speed"],
                games=games,
                arena=arena,
                seed=seed,
                size=(height, width),
                max_days=quick["max_days"],
                **PLAY_SETTINGS,
            )
        )
        report[arena] = compare(
            read_results(played / "results.jsonl"),
            read_results(args.run / folder / "learned" / "results.jsonl"),
            planned_keys(games // 2, seed),
            names=("awr", "learned"),
        )
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    return report


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
