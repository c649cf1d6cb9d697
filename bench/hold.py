"""Benchmark: a training epoch's batches from data held in memory vs decoded from the videos.

Records short scripted games (record-ai, the quickstart's demonstrations in miniature), then, in one
process, times whole loader epochs with the quickstart's data settings (windows of 8, 10% of the idle
windows, batches of 8):

- streamed (the baseline): every epoch decodes the videos and computes the views, with `--workers`
  background processes (what train-bc did before `--hold-gb`);
- held: `WindowLoader.hold` decodes everything once (timed on its own), then every epoch is put together
  from memory.

Both give the same batches (tests/data/test_data_loader.py holds them to it); this measures only how
fast they come. It prints decisions per second of each and the ratio, and how many epochs the one-off
fill pays for. The load average is printed: the machine may be shared.

Try: .venv/bin/python bench/hold.py --games 8 --epochs 3
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai


def epoch_rate(loader: WindowLoader, sessions: list, epoch: int) -> tuple[float, int]:
    """Decisions per second of one whole epoch, and the decisions it gave."""
    start = time.perf_counter()
    decisions = 0
    for batch, _ in loader.epoch(sessions, epoch):
        decisions += int(batch.arrays["region"].sum())
    return decisions / (time.perf_counter() - start), decisions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="scripted games recorded (30 days each)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs timed each way")
    parser.add_argument("--workers", type=int, default=2, help="decoding processes of both loaders")
    parser.add_argument("--keep", help="record into this folder (reused when it holds results already)")
    args = parser.parse_args()

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-hold-"))
    if not (folder / "results.jsonl").exists():
        run_record_ai(
            RecordAIConfig(out=folder, player="scripted", games=args.games, arena="plains:0", max_days=30)
        )
    sessions = find_sessions(folder, ("scripted",)).train
    settings = DataSettings(DecodeSettings("cpu"), window=8, batch=8, idle_windows=0.1, hold_gb=16.0)
    print(
        f"{len(sessions)} sessions, {sum(s.decisions for s in sessions)} decisions; load {os.getloadavg()[0]:.1f}"
    )

    rows = {}
    with WindowLoader(settings, args.workers) as streamed:
        rows["streamed"] = [epoch_rate(streamed, sessions, e) for e in range(args.epochs)]
    with WindowLoader(settings, args.workers) as held:
        start = time.perf_counter()
        assert held.hold(sessions), "the data did not fit in memory"
        fill = time.perf_counter() - start
        rows["held"] = [epoch_rate(held, sessions, e) for e in range(args.epochs)]
    result = {
        "sessions": len(sessions),
        "workers": args.workers,
        "fill_seconds": round(fill, 2),
        "held_gib": round(held.held_bytes / 2**30, 3),
        "load": round(os.getloadavg()[0], 2),
    }
    for name, epochs in rows.items():
        rates = [rate for rate, _ in epochs]
        result[name] = {
            "decisions_per_s": round(sum(rates) / len(rates), 1),
            "epochs": [round(r, 1) for r in rates],
        }
    ratio = result["held"]["decisions_per_s"] / result["streamed"]["decisions_per_s"]
    result["ratio"] = round(ratio, 1)
    decisions = rows["streamed"][0][1]
    streamed_epoch = decisions / result["streamed"]["decisions_per_s"]
    result["fill_in_streamed_epochs"] = round(fill / streamed_epoch, 2)
    print(
        f"streamed {result['streamed']['decisions_per_s']} decisions/s, held {result['held']['decisions_per_s']} "
        f"decisions/s: {ratio:.1f}x; the fill ({fill:.1f} s, {result['held_gib']} GiB) costs "
        f"{result['fill_in_streamed_epochs']} streamed epochs"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
