"""A two-player game on two X displays: one world process, one thin window process per side.

`pair_window.py` puts both sides' windows on one display, where XTest input goes to the display's one
keyboard focus: two X11 workers driving the two windows at once take the focus from each other (and the
focus watchdog then lets go of a drag). Here each side's window is its own process on its own display
(`pair_view.py`, e.g. on two Xvfb servers), as a person at each of two machines would have it, so each
side's X11 worker has a display, a focus and a keyboard of its own.

The world process holds the one `PairGame` and steps it on the wall clock exactly as `pair_window` does:
it waits up to one frame (16 ms) for either window's messages, feeds every input that arrived, BLU's
first, then advances the world by the time that passed (the cadence barrier of one process), then sends
each side whose scene changed its new frame (at most one frame in flight per window: the next goes once
the window says it is `shown`). The windows talk to it over one Unix socket pair each, length-prefixed
JSON + raw RGB messages (`pair_wire.py`).

A window whose close button is pressed, or that dies, ends the game: the world stops the other window
and prints the game's state as JSON (with `ended`: which window, and how). SIGTERM to the world ends
all; SIGTERM to a window ends the game as its close button does. A window that does not open (no such
display) is an error (exit 2) naming the display.

Try: python -m hoi4_arena.sim.pair_host plains:1 2 960x540 --displays :1 :2
     (with two X servers, e.g. `Xvfb :1 &` and `Xvfb :2 &`; each window is titled `hoi4-arena pair BLU`
     or `... RED` on its display; the ARENA log is USERDIR/logs/game.log for the X11 workers)
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.sim.pair_window import PairWindowConfig, pair_game, pair_report
from hoi4_arena.sim.pair_wire import Link, WireError, events_from_wire
from hoi4_arena.sim.window import IDLE_WAIT_MS, MAX_STEP_MS

STOP_TIMEOUT_S = 10.0
"""How long a window may take to close after the world has gone before it is terminated."""


@dataclass(frozen=True)
class PairHostConfig:
    """One two-player game, each side's window on its own X display."""

    game: PairWindowConfig
    """The game and the windows' size and title (as the one-display mode's)."""
    displays: tuple[str, str]
    """BLU's X display and RED's (e.g. ':1', ':2'); the same one twice works, with one focus for both."""
    window_timeout_s: float = 60.0
    """How long the windows may take to open (pygame and the map load first)."""

    def __post_init__(self) -> None:
        if len(self.displays) != 2 or not all(isinstance(d, str) and d for d in self.displays):
            raise UserError(f"--displays needs two X displays (BLU's, RED's), not {list(self.displays)!r}")


@dataclass
class _View:
    """The world's side of one window process."""

    display: str
    link: Link
    process: subprocess.Popen
    ready: bool = False
    acked: bool = True  # no frame in flight
    said_closed: bool = False
    shown: object = None  # the scene key on screen
    inputs: int = 0  # events the side's screen used
    messages: dict[str, int] = field(default_factory=dict)


def _start_view(display: str, size: tuple[int, int], title: str) -> _View:
    ours, theirs = socket.socketpair()
    h, w = size
    # X11 only: without it SDL falls back to another driver (Wayland, offscreen) when the display is gone.
    env = {**os.environ, "DISPLAY": display, "SDL_VIDEODRIVER": "x11"}
    env.setdefault("SDL_AUDIODRIVER", "dummy")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "hoi4_arena.sim.pair_view", str(theirs.fileno()), f"{w}x{h}", title],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return _View(display, Link(ours), process)


def _stop_view(view: _View) -> None:
    """The world has gone (its socket closed): the window ends by itself, else SIGTERM, then SIGKILL."""
    view.link.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and view.process.poll() is None:
            view.process.send_signal(sig)
        try:
            view.process.wait(timeout=STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue


def run_pair_host(config: PairHostConfig) -> dict:
    """Open both windows, each on its display, and play until one ends; how the game stood."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # stdout is the report's
    import pygame

    pair = pair_game(config.game)
    views: dict[str, _View] = {}
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        for side, display in zip(pair.sides, config.displays, strict=True):
            views[side] = _start_view(display, pair.size, f"{config.game.title} {side}")
        ended: str | None = None

        def take(side: str) -> None:
            """Apply every message side's window has sent; note the end if it has gone."""
            nonlocal ended
            view = views[side]
            view.link.flush()
            try:
                messages = view.link.read()
            except WireError as error:
                messages = []
                view.link.close()
                ended = ended or f"the {side} window broke the link: {error}"
            for header, _body in messages:
                kind = header["kind"]
                view.messages[kind] = view.messages.get(kind, 0) + 1
                if kind == "input":
                    view.inputs += pair.feed(side, events_from_wire(header.get("events", [])))
                elif kind == "inside":
                    pair.screens[side].ui.inside = bool(header.get("value"))
                elif kind == "focus_lost":
                    pair.screens[side].ui.release_all()  # keys released elsewhere never reach us
                elif kind == "shown":
                    view.acked = True
                elif kind == "ready":
                    view.ready = True
                elif kind == "closed":
                    view.said_closed = True
            if view.link.closed and ended is None:
                how = "was closed" if view.said_closed else f"was lost (exit {view.process.poll()})"
                ended = f"the {side} window on {view.display} {how}"

        # Both windows up before the clock starts (the game starts paused, but its toasts run on).
        deadline = time.monotonic() + config.window_timeout_s
        while not stopping and not all(view.ready for view in views.values()):
            select.select([view.link for view in views.values()], [], [], 0.1)
            for side in pair.sides:
                take(side)
            if ended is not None:
                raise UserError(f"{ended} before both windows opened (see its error above)")
            if time.monotonic() > deadline:
                late = [side for side, view in views.items() if not view.ready]
                raise UserError(
                    f"the {', '.join(late)} window did not open within {config.window_timeout_s:g} s"
                )
        last = time.monotonic_ns()
        while not stopping and ended is None:
            links = [view.link for view in views.values()]
            select.select(links, [link for link in links if link.pending], [], IDLE_WAIT_MS / 1000)
            for side in pair.sides:  # every input of this instant in, BLU's first, then the world steps
                take(side)
            now = time.monotonic_ns()
            pair.advance(min((now - last) / 1e6, MAX_STEP_MS))
            last = now
            for side, view in views.items():
                scene = pair.scene(side)
                key = pair.screens[side].renderer.scene_key
                if key != view.shown and view.acked:
                    view.link.send(
                        {"kind": "frame", "size": list(pair.size)}, pygame.image.tobytes(scene, "RGB")
                    )
                    view.acked = False
                    view.shown = key
        return pair_report(pair) | {
            "displays": {side: view.display for side, view in views.items()},
            "ended": ended or "stopped (SIGTERM)",
            "inputs": {side: view.inputs for side, view in views.items()},
            "messages": {side: view.messages for side, view in views.items()},
        }
    finally:
        signal.signal(signal.SIGTERM, previous)
        for view in views.values():
            _stop_view(view)
        pair.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    from hoi4_arena.sim.window import parse_size

    parser = argparse.ArgumentParser(
        prog="python -m hoi4_arena.sim.pair_host", description=__doc__.split("\n")[0]
    )
    parser.add_argument("arena", nargs="?", default=ARENA, help="preset:seed or a map folder")
    parser.add_argument("seed", nargs="?", type=int, default=0, help="world seed")
    parser.add_argument("size", nargs="?", default="960x540", help="each window's size, WIDTHxHEIGHT")
    parser.add_argument(
        "userdir", nargs="?", type=Path, default=None, help="the ARENA log goes to USERDIR/logs"
    )
    parser.add_argument("--displays", nargs=2, required=True, metavar=("BLU", "RED"), help="two X displays")
    parser.add_argument("--max-days", type=int, default=365, help="time limit in game days")
    parser.add_argument(
        "--kinds", nargs=2, default=("human", "human"), metavar=("BLU", "RED"), help="who plays"
    )
    args = parser.parse_args(argv)
    try:
        config = PairHostConfig(
            PairWindowConfig(
                arena=args.arena,
                seed=args.seed,
                size=parse_size(args.size),
                userdir=args.userdir,
                max_days=args.max_days,
                kinds=tuple(args.kinds),
            ),
            tuple(args.displays),
        )
        print(json.dumps(run_pair_host(config), default=str), flush=True)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
