"""Benchmark: recorded game-minutes per wall-minute of headless scripted games, vs real time and vs the
bare game loop.

Per screen size (960x540 and 1920x1080 by default), the same games (seeds, presets, sides) three ways,
in one process, at speed 5:

- bare: the simulator's worker, the match harness, a full-frame capture every 200 ms and the virtual
  clock -- the game and its pictures alone, nobody playing the scripted side (the baseline);
- player: the scripted player playing (template crops every decision, the map read when it plans,
  its events applied), nothing recorded;
- record: `record-ai` itself: the player, and every game recorded as a session (x264, 5 Hz: one frame
  per decision), results row included.

It prints, per loop, play minutes (virtual) per wall minute -- the speed-up over real time, where
1x would be a live game -- the ratio to the bare loop, and for `record` the share of a decision each
part takes (the game's step and render, the player's capture and decision, the recorder's frame and
encoding). The games' lengths differ between bare (a passive side falls fast) and the others, so
compare the rates. The load average is printed: the machine is shared.

Try: .venv/bin/python bench/record_ai.py --games 3
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.presets import PRESETS
from hoi4_arena.play.record_ai import RecordAIConfig, make_player, run_record_ai
from hoi4_arena.screen import game
from hoi4_arena.screen.game import GameSettings, play_game
from hoi4_arena.screen.match import MatchConfig, MatchLog, finish_match, start_match
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest
from hoi4_arena.sim.window import parse_size

SPEED = 5
DECISION_NS = 200_000_000


def games(first_seed: int, count: int) -> list[tuple[str, int, str]]:
    """(map spec, seed, side) of game i, as record-ai's `--arena all` plans them."""
    out = []
    for index in range(count):
        seed = first_seed + index
        out.append((f"{PRESETS[index % len(PRESETS)]}:{seed}", seed, TAGS[index % 2]))
    return out


def worker_for(spec: str, seed: int, side: str, size: tuple[int, int]) -> SimWorker:
    return SimWorker(
        spec, seed, size=size, layout="cpu", player=side, ai={other_tag(side): 0.5}, player_kind="scripted"
    )


def bare_loop(plan, size) -> dict:
    play_ns = 0
    start = time.perf_counter()
    for spec, seed, side in plan:
        with worker_for(spec, seed, side, size) as worker:
            worker.attach()
            started = start_match(worker, MatchConfig(speed=SPEED))
            log = MatchLog(worker, started.log_offset, started.log_lines)
            first = tick = worker.now_ns()
            while not log.over:
                worker.capture(CaptureRequest(views=False, full=True))
                log.poll()
                tick += DECISION_NS
                worker.wait_until(tick)
            finish_match(worker)
            play_ns += worker.now_ns() - first
    return {"seconds": time.perf_counter() - start, "play_s": play_ns / 1e9}


def player_loop(plan, size) -> dict:
    config = RecordAIConfig(out=Path(tempfile.mkdtemp()), games=1, size=size, progress=False)
    play_ns = 0
    start = time.perf_counter()
    for spec, seed, side in plan:
        with worker_for(spec, seed, side, size) as worker:
            rgba, hotspot = worker.pointer_image()
            player = make_player(config, seed, (rgba.shape[1], rgba.shape[0], tuple(hotspot)))
            play_ns += play_game(
                worker, player, GameSettings(side=side, speed=SPEED, spec=spec, after_end_s=2.0)
            ).play_ns
    return {"seconds": time.perf_counter() - start, "play_s": play_ns / 1e9}


class Timers:
    """Wall time spent in a few functions, by name (wrapped for the record loop only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._undo = []

    def wrap(self, owner, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
                self.calls[name] += 1

        setattr(owner, attribute, timed)
        self._undo.append((owner, attribute, original))

    def restore(self) -> None:
        for owner, attribute, original in reversed(self._undo):
            setattr(owner, attribute, original)


def record_loop(first_seed: int, count: int, size, out: Path) -> tuple[dict, dict]:
    from hoi4_arena.players.scripted import ScriptedPlayer
    from hoi4_arena.sessions.recorder import Recorder

    timers = Timers()
    timers.wrap(SimWorker, "wait_until", "game: step + events (wait_until)")
    timers.wrap(SimWorker, "capture", "captures (render + copy)")
    timers.wrap(ScriptedPlayer, "decide", "player: decide (templates, map)")
    timers.wrap(Recorder, "step", "recorder: step (frame, log, encoder queue)")
    timers.wrap(game, "start_match", "harness start")
    # all:0-N: each pair on the map of its game seed, as record-ai played `all` when this was written.
    arena = f"all:0-{first_seed + count}"
    config = RecordAIConfig(out=out, games=count, arena=arena, seed=first_seed, size=size, progress=False)
    start = time.perf_counter()
    try:
        summary = run_record_ai(config)
    finally:
        timers.restore()
    seconds = time.perf_counter() - start
    breakdown = {
        name: round(1000 * s / max(1, timers.calls["player: decide (templates, map)"]), 3)
        for name, s in timers.seconds.items()
    }
    # captures are counted inside the recorder's step too; the rest is the loop and the writer's close
    return {"seconds": seconds, "play_s": summary["minutes"] * 60, "wins": summary["wins"]}, breakdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3, help="games per size and loop")
    parser.add_argument("--sizes", default="960x540,1920x1080")
    parser.add_argument("--seed", type=int, default=30000)
    args = parser.parse_args()
    plan = games(args.seed, args.games)
    print(
        f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores; "
        f"{args.games} games per loop, speed {SPEED}"
    )
    results = {}
    for text in args.sizes.split(","):
        size = parse_size(text)
        with tempfile.TemporaryDirectory() as tmp:
            bare = bare_loop(plan, size)
            player = player_loop(plan, size)
            recorded, breakdown = record_loop(args.seed, args.games, size, Path(tmp) / "run")
        rows = {}
        for name, loop in (("bare", bare), ("player", player), ("record", recorded)):
            speedup = loop["play_s"] / loop["seconds"]
            rows[name] = {
                "play_min": round(loop["play_s"] / 60, 2),
                "wall_s": round(loop["seconds"], 1),
                "game_min_per_wall_min": round(speedup, 1),
            }
        for name in rows:
            rows[name]["vs_bare"] = round(
                rows[name]["game_min_per_wall_min"] / rows["bare"]["game_min_per_wall_min"], 2
            )
        results[text] = {"loops": rows, "record_ms_per_decision": breakdown}
        print(f"\n{text}")
        print(f"  {'loop':8} {'play min':>9} {'wall s':>7} {'x real time':>12} {'vs bare':>8}")
        for name, row in rows.items():
            print(
                f"  {name:8} {row['play_min']:9.2f} {row['wall_s']:7.1f} {row['game_min_per_wall_min']:11.1f}x "
                f"{row['vs_bare']:8.2f}"
            )
        print("  record, ms per decision:")
        for name, ms in sorted(breakdown.items(), key=lambda item: -item[1]):
            print(f"    {name:44} {ms:7.3f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
