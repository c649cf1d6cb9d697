"""A recorder that only stops when killed: the subject of the SIGKILL tests, and their synthetic data.

It drives `SessionWriter` the way a recorder drives it from a worker: a frame (a moving pattern), then
the input events that happened since the previous frame, then any ARENA log lines, at a steady rate.
It prints "recording" once the first frame is written and then runs until it is killed (or, so that a
crashed test leaves no orphan behind, gives up after a minute without closing the session). With
`--offline` it writes as fast as it can with `realtime=False` (a driver on a virtual clock, such as
record-ai) and prints "frame N" after each `add_frame` returns, so a test knows what it had written.

Try: python tests/sessions/killable_recorder.py /tmp/s1 --codec ffv1 --hz 30   (Ctrl+C ends it)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hoi4_arena.screen.events import MATCH_KEYS, InputEvent
from hoi4_arena.sessions.format import SessionManifest
from hoi4_arena.sessions.writer import SessionWriter


def pattern(index: int, size: tuple[int, int]) -> np.ndarray:
    """Frame `index` of a smooth moving pattern (gradients and a sliding square), (h, w, 3) uint8."""
    height, width = size
    y = np.arange(height, dtype=np.int32)[:, None]
    x = np.arange(width, dtype=np.int32)[None, :]
    frame = np.empty((height, width, 3), np.uint8)
    frame[..., 0] = (x * 200 // width + index * 3) % 200 + 20
    frame[..., 1] = y * 200 // height + 30
    frame[..., 2] = (x + y) * 100 // (width + height) + (index * 7) % 100
    side = height // 6
    x0 = (index * width // 40) % (width - side)
    y0 = (index * height // 30) % (height - side)
    frame[y0 : y0 + side, x0 : x0 + side] = (240, 240, 40)
    return frame


def pointer_at(index: int, size: tuple[int, int]) -> tuple[int, int]:
    height, width = size
    return (index * 37) % width, (index * 23) % height


def events_between(rng: np.random.Generator, t0: int, t1: int, size: tuple[int, int]) -> list[InputEvent]:
    """Zero or one random input event at a time in (t0, t1]."""
    height, width = size
    count = int(rng.integers(0, 2))
    times = np.sort(rng.integers(t0 + 1, t1 + 1, size=count))
    out = []
    for t in times:
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        choice = int(rng.integers(0, 3))
        if choice == 0:
            out.append(InputEvent(int(t), "move", x, y, source="human"))
        elif choice == 1:
            out.append(InputEvent(int(t), "button_down", x, y, button="left", source="human"))
        else:
            key = int(MATCH_KEYS[int(rng.integers(0, len(MATCH_KEYS)))])
            out.append(InputEvent(int(t), "key_down", x, y, key=key, source="human"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--codec", default="x264")
    parser.add_argument("--hz", type=float, default=30.0)
    parser.add_argument("--size", default="320x180")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--offline", action="store_true", help="realtime=False, no pacing, 'frame N' lines")
    parser.add_argument("--views", default="", help="view layouts whose views are stored, e.g. cpu")
    parser.add_argument(
        "--give-up",
        type=float,
        default=60.0,
        help="Exit (unclosed) after this many seconds: no orphan runs forever.",
    )
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    size = (height, width)
    rng = np.random.default_rng(args.seed)
    manifest = SessionManifest(
        source="human",
        game_speed=3,
        screen=(width, height),
        hz=args.hz,
        codec=args.codec,
        id=f"kill-{args.seed}",
    )
    views = tuple(filter(None, args.views.split(",")))
    writer = SessionWriter(args.folder, manifest, views=views, realtime=not args.offline)
    period = round(1e9 / args.hz)
    start = time.monotonic_ns()
    previous = start - period
    index = 0
    while time.monotonic_ns() - start < args.give_up * 1e9:
        target = start + index * period
        delay = (target - time.monotonic_ns()) / 1e9
        if delay > 0 and not args.offline:
            time.sleep(delay)
        now = max(time.monotonic_ns(), previous + 1)
        # Frame i of the video is always pattern(i), even if a frame is dropped.
        written = writer.add_frame(pattern(writer.frames, size), now, pointer_at(writer.frames, size), True)
        if index > 0:  # a recorder drains and discards input from before its first frame
            writer.add_inputs(events_between(rng, previous, now, size))
        if written is not None and written % 10 == 0:
            writer.add_log_lines([f"ARENA draw date=1936.01.01.00 h={written} reason=test"], written)
        if index == 0:
            print("recording", flush=True)
        if args.offline:
            print(f"frame {written}", flush=True)
        previous = now
        index += 1


if __name__ == "__main__":
    main()
