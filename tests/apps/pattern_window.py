"""A test-only X11 target: a pygame-ce window that draws a known pattern and logs every SDL event.

The X11 worker's tests and `bench/capture.py` drive this window until the simulator's own window
exists. It draws `pattern(width, height, seed)` (seeded noise, so an offset, a flipped channel or a
resampled pixel cannot pass for the real thing), sets `cursor_sprite()` as its pointer (binary alpha,
so the X server's cursor and a composite of the sprite agree exactly), and appends every event it
receives to a JSON-lines file, starting with a `ready` line that carries its X window id.

Try: DISPLAY=:N python tests/apps/pattern_window.py --log /tmp/events.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time

import numpy as np

CURSOR_HOTSPOT = (3, 2)


def pattern(width: int, height: int, seed: int = 0) -> np.ndarray:
    """The picture the window shows: (height, width, 3) uint8 noise, a pure function of its arguments."""
    return np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)


def cursor_sprite() -> tuple[np.ndarray, tuple[int, int]]:
    """A 16x16 RGBA arrow-ish sprite with binary alpha, and its hotspot (x, y)."""
    rgba = np.zeros((16, 16, 4), dtype=np.uint8)
    for row in range(16):
        width = min(row + 1, 11)
        rgba[row, :width] = (255, 40, 200, 255)  # magenta wedge
        rgba[row, 0] = (10, 250, 60, 255)  # green edge: a flipped channel would show
    rgba[12:, 6:] = 0  # a notch, so the sprite is not symmetric
    return rgba, CURSOR_HOTSPOT


def _event_record(event, pygame) -> dict:
    record = {"type": pygame.event.event_name(event.type), "mono_ns": time.monotonic_ns()}
    for name in ("pos", "button", "x", "y", "precise_x", "precise_y"):
        if name in event.dict:
            value = event.dict[name]
            record[name] = list(value) if isinstance(value, tuple) else value
    if "key" in event.dict:
        record["key"] = pygame.key.name(event.key)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--title", default="hoi4-arena pattern window")
    parser.add_argument("--log", required=True, help="JSON-lines file that receives every event")
    args = parser.parse_args()

    os.environ.setdefault("SDL_VIDEODRIVER", "x11")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)

    pygame.display.init()
    screen = pygame.display.set_mode((args.width, args.height))
    pygame.display.set_caption(args.title)
    rgba, hotspot = cursor_sprite()
    cursor_surface = pygame.image.frombuffer(rgba.tobytes(), (rgba.shape[1], rgba.shape[0]), "RGBA")
    pygame.mouse.set_cursor(pygame.cursors.Cursor(hotspot, cursor_surface))
    # surfarray wants (width, height, 3).
    pygame.surfarray.blit_array(screen, pattern(args.width, args.height, args.seed).transpose(1, 0, 2))
    pygame.display.flip()

    with open(args.log, "a", encoding="utf-8") as log:
        window = pygame.display.get_wm_info().get("window", 0)
        ready = {
            "type": "ready",
            "pid": os.getpid(),
            "window": int(window),
            "size": [args.width, args.height],
        }
        log.write(json.dumps(ready) + "\n")
        log.flush()
        while not stopping:
            # wait() blocks in SDL for at most 50 ms, so SIGTERM is noticed and no core is spun.
            first = pygame.event.wait(50)
            pending = [first] if first.type != pygame.NOEVENT else []
            for event in pending + pygame.event.get():
                if event.type == pygame.QUIT:
                    stopping = True
                if event.type in (pygame.WINDOWEXPOSED, pygame.VIDEOEXPOSE):
                    pygame.display.flip()
                log.write(json.dumps(_event_record(event, pygame)) + "\n")
            log.flush()
    pygame.quit()


if __name__ == "__main__":
    main()
