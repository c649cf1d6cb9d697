"""Benchmark: the loader's first pass from the views stored at capture time vs from decoding the videos.

Records short scripted games (record-ai, which stores the cpu layout's views beside each video), then,
in one process, alternates the two ways through the same sessions with the quickstart's data settings
(windows of 8, batches of 8):

- decoded (the baseline, what every pass did before): each session's video is decoded front to back
  and each anchor frame becomes views (`DecodeSettings(stored_views=False)`);
- stored: the views are read from views-cpu.bin (no video decoding).

Each round times `WindowLoader.hold` (the first pass train-bc makes when the data fit in --hold-gb:
every window of every session, with `--workers` processes, their start included) and a streamed epoch
with the workers already running, both ways, in alternating order. It prints decisions per second of each, the ratio, the disk cost of the stored
views per recorded minute beside the video's, and what storing them costs record-ai (`--record-games`
games recorded with and without them). With x264 the two ways give other bytes (stored views are
the live frames', decoded ones carry the codec's error); the keys of the windows are the same.

Try: .venv/bin/python bench/stored_views.py --games 8 --rounds 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.stored_views import views_files


def first_pass(settings: DataSettings, sessions: list, workers: int) -> float:
    """Seconds to hold every window (the first pass), the workers' start included."""
    with WindowLoader(settings, workers) as loader:
        start = time.perf_counter()
        assert loader.hold(sessions), "the data did not fit in memory"
        seconds = time.perf_counter() - start
        return seconds


def streamed_epoch(settings: DataSettings, sessions: list, workers: int) -> tuple[float, int, list]:
    """Seconds of a streamed epoch with the workers already running (the second epoch of one loader),
    the decisions it scored, and its window keys."""
    with WindowLoader(settings, workers) as loader:
        for _ in loader.epoch(sessions, 0):  # starts the workers
            pass
        start = time.perf_counter()
        decisions, keys = 0, []
        for batch, _ in loader.epoch(sessions, 1):
            decisions += int(batch.arrays["region"].sum())
            keys += batch.keys
        return time.perf_counter() - start, decisions, sorted(keys)


def disk_cost(sessions: list) -> dict:
    """MB per recorded minute of the stored views and of the video."""
    views = video = minutes = 0.0
    for session in sessions:
        manifest = SessionReader(session.path).manifest
        minutes += manifest.frames / manifest.hz / 60
        views += sum(path.stat().st_size for path in views_files(session.path))
        video += (Path(session.path) / "screen.mkv").stat().st_size
    return {
        "recorded_minutes": round(minutes, 2),
        "views_mb_per_min": round(views / 1e6 / minutes, 2),
        "video_mb_per_min": round(video / 1e6 / minutes, 2),
    }


def recording_cost(games: int, codec: str) -> dict:
    """Seconds record-ai takes for `games` games with the views stored and without (interleaved)."""
    from unittest import mock

    from hoi4_arena.sessions import stored_views

    seconds = {"with_views": 0.0, "without_views": 0.0}
    for game in range(games):
        for way in ("with_views", "without_views") if game % 2 == 0 else ("without_views", "with_views"):
            out = Path(tempfile.mkdtemp(prefix="bench-stored-views-rec-"))
            config = RecordAIConfig(
                out=out,
                player="scripted",
                games=1,
                seed=game,
                arena="plains:0",
                max_days=30,
                codec=codec,
                progress=False,
            )
            store = stored_views.layouts_to_store if way == "with_views" else (lambda names, size: [])
            with mock.patch.object(stored_views, "layouts_to_store", store):
                start = time.perf_counter()
                run_record_ai(config)
                seconds[way] += time.perf_counter() - start
    return {k: round(v, 2) for k, v in seconds.items()} | {
        "ratio": round(seconds["with_views"] / seconds["without_views"], 3)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="scripted games recorded (30 days each)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both ways, alternating")
    parser.add_argument("--workers", type=int, default=2, help="loader processes (0: on this thread)")
    parser.add_argument("--codec", default="x264", help="the recordings' codec: x264 (default) or ffv1")
    parser.add_argument("--keep", help="record into this folder (reused when it holds results already)")
    parser.add_argument(
        "--record-games", type=int, default=2, help="games recorded with and without views for their cost"
    )
    args = parser.parse_args()

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-stored-views-"))
    if not (folder / "results.jsonl").exists():
        run_record_ai(
            RecordAIConfig(
                out=folder,
                player="scripted",
                games=args.games,
                arena="plains:0",
                max_days=30,
                codec=args.codec,
                progress=False,
            )
        )
    sessions = find_sessions(folder, ("scripted",)).train
    stored = DataSettings(DecodeSettings("cpu"), window=8, batch=8, hold_gb=16.0)
    ways = {
        "decoded": dataclasses.replace(stored, decode=dataclasses.replace(stored.decode, stored_views=False)),
        "stored": stored,
    }
    decisions = sum(s.decisions for s in sessions)
    print(f"{len(sessions)} sessions, {decisions} decisions; load {os.getloadavg()[0]:.1f}")

    times: dict[str, dict[str, list[float]]] = {way: {"first_pass": [], "epoch": []} for way in ways}
    keys = {}
    for round_ in range(args.rounds):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for way in order:
            seconds = first_pass(ways[way], sessions, args.workers)
            times[way]["first_pass"].append(decisions / seconds)
            seconds, scored, keys[way] = streamed_epoch(ways[way], sessions, args.workers)
            assert scored == decisions
            times[way]["epoch"].append(decisions / seconds)
    assert keys["decoded"] == keys["stored"], "the two ways gave other windows"

    result: dict = {"sessions": len(sessions), "decisions": decisions, "workers": args.workers}
    for way, rates in times.items():
        result[way] = {
            name: {"decisions_per_s": round(sum(r) / len(r), 1), "rounds": [round(v, 1) for v in r]}
            for name, r in rates.items()
        }
    for name in ("first_pass", "epoch"):
        ratio = result["stored"][name]["decisions_per_s"] / result["decoded"][name]["decisions_per_s"]
        result[f"{name}_ratio"] = round(ratio, 2)
    result["disk"] = disk_cost(sessions)
    if args.record_games:
        result["recording_seconds"] = recording_cost(args.record_games, args.codec)
    result["load"] = round(os.getloadavg()[0], 2)
    print(
        f"first pass: decoded {result['decoded']['first_pass']['decisions_per_s']} decisions/s, stored "
        f"{result['stored']['first_pass']['decisions_per_s']} decisions/s: {result['first_pass_ratio']}x; "
        f"streamed epoch: {result['epoch_ratio']}x; stored views {result['disk']['views_mb_per_min']} MB "
        f"per recorded minute (video {result['disk']['video_mb_per_min']})"
    )
    if args.record_games:
        print(f"recording with views / without: {result['recording_seconds']['ratio']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
