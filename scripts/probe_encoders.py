"""Linear probes of encoders for the game's facts: how much of the ARENA state each encoder's summary of a
frame holds, read out linearly on held-out sessions (docs/research.md, "Distillation and encoder probes").

For each ENCODER (a policy checkpoint or a distilled student: its encoder; `timm:NAME` or a `.safetensors`
file: a timm tower's own mean patch token; `cnn` or `cnn:KEY=VALUE,...`: an untrained CNN, the floor),
every `--every`th decision of each session is encoded from the views the data loader gives; the facts of
`training/probes.py` (day, army, front, offensive, own side, provinces) are read from the session's
ARENA log; a linear probe per fact is fitted on the training sessions and scored on the held-out ones
(whole maps: both sides of a game stay together) beside the trivial baseline. Name an encoder in the
table with NAME=SPEC. Prints a markdown table ("score (baseline)": accuracy for classes, R^2 for
regression); --out writes everything as JSON.

Try: .venv/bin/python scripts/probe_encoders.py runs/demo-b/demos random=cnn bc=runs/demo-b/bc/last.pt \
       --held-out 16 --every 4 --max-sessions 24
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.terminal import progress_bar
from hoi4_arena.training.distill import (
    EVAL_BATCH,
    FrozenEncoder,
    load_encoder,
    session_views,
    split_by_map,
    spread,
)
from hoi4_arena.training.distill_config import parse_student
from hoi4_arena.training.probes import facts_for_session, probe, probe_table

log = logging.getLogger("probe_encoders")
ALL_SOURCES = ("human", "scripted", "ai", "policy")


def named(spec: str) -> tuple[str, str]:
    """(name, spec) of NAME=SPEC; a spec such as cnn:width=8 or a path keeps itself as its name."""
    name, sep, rest = spec.partition("=")
    if sep and name and not any(c in name for c in ":/.\\"):
        return name, rest
    return spec, spec


def encode(encoder: FrozenEncoder, pixels: np.ndarray) -> np.ndarray:
    """(N, D) float32 summaries of N frames of the view the encoder reads."""
    parts = []
    for i in range(0, len(pixels), EVAL_BATCH):
        summary, _ = encoder(torch.from_numpy(pixels[i : i + EVAL_BATCH]))
        parts.append(summary.float().numpy())
    return np.concatenate(parts)


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    tower_args = parse_student(args.tower_args) if args.tower_args else {}
    encoders = {}
    for spec in args.encoders:
        name, what = named(spec)
        if name in encoders:
            raise UserError(f"encoder name {name!r} given twice; name them with NAME=SPEC")
        encoders[name] = load_encoder(
            what, layout=args.layout, tower=args.tower, tower_args=tower_args, seed=args.seed
        )
    layouts = sorted({e.layout for e in encoders.values()})

    # --- sessions: those with facts, split by map, the training ones thinned to --max-sessions ---
    found = find_sessions(args.data, tuple(args.sources.split(",")), layouts[0])
    sessions, facts, skipped = [], {}, []
    for session in found.train + found.val:
        try:
            facts[session.id] = facts_for_session(session.path)
        except UserError as error:
            log.warning("skipping session %s: %s", session.path, error)
            skipped.append({"path": session.path, "reason": str(error)})
            continue
        sessions.append(session)
    if not sessions:
        raise UserError(
            f"no session under {args.data} has an ARENA log and a recorded side to read facts from"
        )
    if args.held_out:
        train, held = split_by_map(sessions, count=args.held_out, seed=args.seed)
    elif any(s.split == "val" for s in sessions):
        train, held = [s for s in sessions if s.split != "val"], [s for s in sessions if s.split == "val"]
    else:
        train, held = split_by_map(sessions, share=0.25, seed=args.seed)
    if not train or not held:
        raise UserError(
            f"{len(sessions)} session(s) on one map: nothing to hold out; record more maps or seeds"
        )
    train = spread(train, args.max_sessions)

    # --- encode: each session's views read once per layout, each encoder's summaries of them ---
    rows: dict[str, dict[str, list[np.ndarray]]] = {n: {"train": [], "held": []} for n in encoders}
    targets: dict[str, list[dict[str, np.ndarray]]] = {"train": [], "held": []}
    seconds = dict.fromkeys(encoders, 0.0)
    with progress_bar() as bar:
        task = bar.add_task("encoding sessions", total=len(train) + len(held))
        for part, group in (("train", train), ("held", held)):
            for session in group:
                for layout in layouts:
                    users = {n: e for n, e in encoders.items() if e.layout == layout}
                    reads = tuple(sorted({e.reads for e in users.values()}))
                    indices, views = session_views(session.path, layout, reads, args.every)
                    for name, encoder in users.items():
                        tic = time.monotonic()
                        rows[name][part].append(encode(encoder, views[encoder.reads]))
                        seconds[name] += time.monotonic() - tic
                targets[part].append({k: v[indices] for k, v in facts[session.id].items()})
                bar.update(task, advance=1)
    facts_of = {
        part: {k: np.concatenate([t[k] for t in targets[part]]) for k in targets[part][0]} for part in targets
    }

    # --- probe ---
    results = {}
    for name in encoders:
        x_train, x_held = np.concatenate(rows[name]["train"]), np.concatenate(rows[name]["held"])
        results[name] = probe(x_train, facts_of["train"], x_held, facts_of["held"], l2=args.l2)
    return {
        "table": probe_table(results),
        "probes": results,
        "encoders": {
            name: {
                **e.describe(),
                "dims": int(rows[name]["train"][0].shape[1]),
                "encode_seconds": seconds[name],
            }
            for name, e in encoders.items()
        },
        "sessions": {"train": [s.id for s in train], "held_out": [s.id for s in held]},
        "decisions": {"train": len(facts_of["train"]["day"]), "held_out": len(facts_of["held"]["day"])},
        "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
        "skipped": skipped + found.skipped,
        "seconds": time.monotonic() - started,
    }


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder of recorded sessions with their ARENA logs")
    parser.add_argument(
        "encoders",
        nargs="+",
        metavar="ENCODER",
        help="[NAME=]checkpoint.pt | timm:NAME | tower.safetensors | cnn[:KEY=VALUE,...]",
    )
    parser.add_argument(
        "--held-out",
        type=int,
        default=0,
        help="hold out whole maps until N sessions are (0: the data's val split, else a quarter of the maps)",
    )
    parser.add_argument("--every", type=int, default=1, help="probe every Nth decision (1: all)")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=0,
        help="at most this many training sessions, spread evenly (0: all)",
    )
    parser.add_argument("--sources", default=",".join(ALL_SOURCES), help="manifest sources, comma-separated")
    parser.add_argument(
        "--layout", default="cpu", help="view layout of untrained encoders (cnn, timm towers)"
    )
    parser.add_argument(
        "--tower", default="qwen3_vit_88m_enc", help="the timm tower of a .safetensors encoder"
    )
    parser.add_argument(
        "--tower-args", default="", help="architecture overrides of timm towers, KEY=VALUE,..."
    )
    parser.add_argument(
        "--l2", type=float, default=1e-3, help="L2 weight of the probes (standardised features)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the held-out maps and of untrained encoders"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, help="write the whole result as JSON here")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    for name in ("held_out", "max_sessions"):
        if getattr(args, name) < 0:
            raise UserError(f"--{name.replace('_', '-')} must be >= 0")
    if args.every < 1:
        raise UserError("--every must be >= 1")
    torch.set_num_threads(args.threads)
    result = run(args)
    print(result["table"])
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        main()
    except UserError as error:
        sys.exit(f"error: {error}")
