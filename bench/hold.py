"""Benchmark: a training epoch's batches from data held in memory (raw or compressed) vs streamed from the
sessions, the loader alone and inside a short train-bc.

Records short scripted games (record-ai, the quickstart's demonstrations in miniature, with their views
stored at capture time), then, in one process, on the same sessions with the quickstart's data settings
(windows of 8, 10% of the idle windows, batches of 8):

1. The loader alone, whole epochs (`--epochs` each way):
   - streamed (the baseline): every epoch reads each session's stored views again, with `--workers`
     background processes (what train-bc does when the data do not fit in `--hold-gb`);
   - held raw: `WindowLoader.hold` reads everything once (timed on its own), then every epoch is put
     together from memory;
   - held compressed (`DataSettings(hold_compressed=True)`): the same, each window one zstd frame,
     decompressed batch by batch on the loader's thread.
2. train-bc for `--steps` optimizer steps with the quickstart's settings (its policy, `--threads 2`,
   `--workers`), its decisions per second (the summary's: wall time between batches, data waits
   included, the fill not): held raw (`--hold-gb 16`), held compressed (a `--hold-gb` of a third of the
   raw size, so train-bc itself chooses to compress) and streamed (`--hold-gb 0`), `--rounds` times,
   the ways in reversed order every other round. All three train the same weights (their sha256 is
   compared).

Every way gives the same batches (tests/data/test_data_loader.py holds them to it); this measures how fast
they come and the memory a held decision takes. It prints decisions per second of each, the ratios, and
the load average: the machine may be shared.

Try: .venv/bin/python bench/hold.py --games 8 --epochs 2 --steps 6
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.quickstart import BC_SETTINGS
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.bc_config import BCConfig


def epoch_rate(loader: WindowLoader, sessions: list, epoch: int) -> tuple[float, int]:
    """Decisions per second of one whole epoch, and the decisions it gave."""
    start = time.perf_counter()
    decisions = 0
    for batch, _ in loader.epoch(sessions, epoch):
        decisions += int(batch.arrays["region"].sum())
    return decisions / (time.perf_counter() - start), decisions


def loader_rows(settings: DataSettings, sessions: list, epochs: int, workers: int) -> dict:
    """Part 1: each way's epochs; for the held ways the fill's seconds and the bytes held."""
    decisions = sum(s.decisions for s in sessions)
    ways = {
        "streamed": (dataclasses.replace(settings, hold_gb=0.0), workers),
        "held_raw": (dataclasses.replace(settings, hold_compressed=False), workers),
        "held_compressed": (dataclasses.replace(settings, hold_compressed=True), workers),
    }
    rows = {}
    for name, (way, count) in ways.items():
        with WindowLoader(way, count) as loader:
            row: dict = {"workers": count}
            if way.hold_gb:
                start = time.perf_counter()
                assert loader.hold(sessions), "the data did not fit in memory"
                row["fill_seconds"] = round(time.perf_counter() - start, 2)
                row["bytes_per_decision"] = round(loader.held_bytes / decisions)
            rates = [epoch_rate(loader, sessions, e)[0] for e in range(epochs)]
            row["decisions_per_s"] = round(sum(rates) / len(rates), 1)
            row["epochs"] = [round(r, 1) for r in rates]
        rows[name] = row
    return rows


def train_rows(data: Path, out: Path, steps: int, workers: int, raw_gib: float, rounds: int) -> dict:
    """Part 2: train-bc's decisions per second each way (their mean over `rounds` runs, the ways in
    reversed order every other round), and its weights' hash."""
    ways = {
        "held_raw": (16.0, workers),
        "held_compressed": (raw_gib / 3, workers),
        "streamed": (0.0, workers),
    }
    runs: dict[str, list] = {name: [] for name in ways}
    for round_ in range(rounds):
        for name in list(ways)[:: -1 if round_ % 2 else 1]:
            runs[name].append(train_once(data, out / f"{name}-{round_}", steps, *ways[name]))
    rows = {}
    for name, (hold_gb, count) in ways.items():
        rates = [rate for rate, _ in runs[name]]
        rows[name] = {
            "workers": count,
            "hold_gb": round(hold_gb, 3),
            "decisions_per_s": round(sum(rates) / len(rates), 2),
            "runs": [round(rate, 2) for rate in rates],
            "weights_sha256": sorted({sha for _, sha in runs[name]}),
        }
    return rows


def train_once(data: Path, out: Path, steps: int, hold_gb: float, workers: int) -> tuple[float, str]:
    """One short train-bc: its decisions per second and its weights' hash."""
    config = BCConfig(
        data=str(data),
        out=str(out),
        **{**BC_SETTINGS, "hold_gb": hold_gb},
        workers=workers,
        threads=2,
        max_steps=steps,
        epochs=1000,
        sources=("scripted",),
        save_every=3600.0,
    )
    summary = train_bc(config)
    return summary["decisions_per_s"], summary["weights_sha256"][:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="scripted games recorded (30 days each)")
    parser.add_argument("--epochs", type=int, default=2, help="loader epochs timed each way")
    parser.add_argument("--steps", type=int, default=6, help="train-bc steps each way (0: no train-bc)")
    parser.add_argument("--rounds", type=int, default=1, help="train-bc runs each way")
    parser.add_argument("--workers", type=int, default=2, help="the loader's processes")
    parser.add_argument("--keep", help="record into this folder (reused when it holds results already)")
    args = parser.parse_args()

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-hold-"))
    if not (folder / "results.jsonl").exists():
        run_record_ai(
            RecordAIConfig(out=folder, player="scripted", games=args.games, arena="plains:0", max_days=30)
        )
    found = find_sessions(folder, ("scripted",))
    sessions = found.train
    decisions = sum(s.decisions for s in sessions)
    settings = DataSettings(DecodeSettings("cpu"), window=8, batch=8, idle_windows=0.1, hold_gb=16.0)
    print(f"{len(sessions)} sessions, {decisions} decisions; load {os.getloadavg()[0]:.1f}", flush=True)

    result: dict = {"sessions": len(sessions), "decisions": decisions, "load_before": os.getloadavg()[0]}
    loader = result["loader"] = loader_rows(settings, sessions, args.epochs, args.workers)
    rate = {name: row["decisions_per_s"] for name, row in loader.items()}
    result["loader_ratios"] = {
        "held_raw / streamed": round(rate["held_raw"] / rate["streamed"], 1),
        "held_compressed / streamed": round(rate["held_compressed"] / rate["streamed"], 1),
        "held_compressed / held_raw": round(rate["held_compressed"] / rate["held_raw"], 2),
        "memory held_compressed / held_raw": round(
            loader["held_compressed"]["bytes_per_decision"] / loader["held_raw"]["bytes_per_decision"], 4
        ),
    }
    print(json.dumps({"loader": loader, "ratios": result["loader_ratios"]}), flush=True)
    if args.steps:
        everything = found.train + found.val
        raw_gib = sum(s.decisions for s in everything) * loader["held_raw"]["bytes_per_decision"] / 2**30
        out = Path(tempfile.mkdtemp(prefix="bench-hold-train-"))
        try:
            train = result["train_bc"] = train_rows(
                folder, out, args.steps, args.workers, raw_gib, args.rounds
            )
        finally:
            shutil.rmtree(out)
        rate = {name: row["decisions_per_s"] for name, row in train.items()}
        same = {sha for row in train.values() for sha in row["weights_sha256"]}
        result["train_bc_ratios"] = {
            "held_compressed / held_raw": round(rate["held_compressed"] / rate["held_raw"], 2),
            "streamed / held_raw": round(rate["streamed"] / rate["held_raw"], 2),
            "same_weights": len(same) == 1,
        }
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
