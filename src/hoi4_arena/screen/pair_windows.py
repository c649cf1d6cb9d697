"""Two-player games through real windows, one private Xvfb per side: `collect-pair --game x11`.

The pair counterpart of `window_games.py`. `PairWindows(size)` starts two private Xvfb servers, BLU's
display and RED's (stopped by their PIDs); `open(...)` then runs one game on them:

1. `python -m hoi4_arena.sim.pair_host` in a subprocess with `--displays BLU RED`: one world, each side's
   window on its own display (the same arena, seed, time limit and player kinds as the headless
   `PairHub` game), paused, its ARENA log in a fresh userdir;
2. one `X11Worker` per side on its window (found by title on its display), with the side's view layout
   and the world's game.log; XRecord is not started (nobody sits at a private Xvfb);
3. each window given its display's keyboard focus, as a person's click would (Xvfb has no window
   manager) -- two displays, two focuses: neither worker takes the focus from the other;
4. at the end: the workers closed (every key and button released), the world terminated (SIGTERM: it
   stops both windows), the userdir removed.

What it yields, a `WindowPair`, is the part of `screen.pair_worker.PairHub` collect-pair uses: `worker(side)`,
`leave(side, reason)`, `left`, `barrier_timeout_s`. There is no barrier to hold: the world steps on the
wall clock after every input that has arrived (pair_host's loop), as two people's machines would. A side
that leaves for any reason but its game's end makes the other side's next `wait_until` a disconnect, as
PairHub's barrier does; a world or window that dies is a `WorkerError` of the worker that sees it.

Try: hoi4-arena collect-pair pair.json runs/pair-x11 --game x11
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from hoi4_arena.maps.model import TAGS
from hoi4_arena.processes import ending_with_parent
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.pair_worker import NORMAL
from hoi4_arena.screen.window_games import WINDOW_TIMEOUT_S, give_focus, stop_window, tail_text
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.xvfb import Xvfb

TITLE = "hoi4-arena pair"


class WindowPair:
    """One running two-display game: each side's X11 worker, and who has left (see the module docstring)."""

    def __init__(self, process: subprocess.Popen, host_log: Path, barrier_timeout_s: float) -> None:
        self.process = process
        self.host_log = host_log
        self.barrier_timeout_s = barrier_timeout_s
        """How long collect-pair waits for a side's thread after an interrupt."""
        self.workers: dict = {}
        self.left: dict[str, str] = {}
        """Sides that stopped playing, and why."""
        self._lock = threading.Lock()

    def worker(self, side: str):
        return self.workers[side]

    def leave(self, side: str, reason: str) -> None:
        with self._lock:
            self.left.setdefault(side, reason)

    def check(self, side: str) -> None:
        """Raise the disconnect side `side` would see: the other side left early, or the world is gone."""
        with self._lock:
            lost = {s: why for s, why in self.left.items() if s != side and why not in NORMAL}
        if lost:
            raise WorkerError("disconnect", "; ".join(f"{s} left the game: {why}" for s, why in lost.items()))
        if self.process.poll() is not None:
            raise WorkerError(
                "disconnect",
                f"the pair's world exited ({self.process.returncode}): {tail_text(self.host_log)}",
            )


def _side_worker(pair: WindowPair, side: str, display: str, layout: ViewLayout, log: Path):
    """An X11Worker on side's window whose waits end in a disconnect when the pair is broken."""
    from hoi4_arena.screen.x11_worker import X11Worker

    class SideWorker(X11Worker):
        def wait_until(self, t_ns: int) -> None:
            pair.check(side)
            super().wait_until(t_ns)

    return SideWorker(display, window=f"{TITLE} {side}", layout=layout, game_log_path=log, listen=False)


class PairWindows:
    """Two private Xvfb servers for the pair's windows; a context manager. See the module docstring."""

    def __init__(self, size: tuple[int, int]) -> None:
        height, width = size
        self.size = (int(height), int(width))
        self.servers = {side: Xvfb(width=max(1920, width), height=max(1080, height)) for side in TAGS}

    def __enter__(self) -> PairWindows:
        try:
            for server in self.servers.values():
                server.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers.values():
            if server.process is not None:
                server.stop()

    @property
    def displays(self) -> dict[str, str]:
        return {side: server.display for side, server in self.servers.items()}

    @contextlib.contextmanager
    def open(
        self,
        *,
        arena: str,
        seed: int,
        layouts: dict[str, ViewLayout | str],
        max_days: int,
        kinds: dict[str, str],
        barrier_timeout_s: float = 60.0,
    ) -> Iterator[WindowPair]:
        """One game's world and windows and an X11 worker per side, closed and stopped on the way out."""
        height, width = self.size
        displays = self.displays
        with scratch_folder("pair-windows") as userdir:
            host_log = Path(userdir) / "host.log"
            command = [
                sys.executable,
                "-m",
                "hoi4_arena.sim.pair_host",
                arena,
                str(seed),
                f"{width}x{height}",
                userdir,
                "--displays",
                displays["BLU"],
                displays["RED"],
                "--max-days",
                str(max_days),
                "--kinds",
                kinds["BLU"],
                kinds["RED"],
            ]
            env = {**os.environ, "SDL_AUDIODRIVER": "dummy"}
            with host_log.open("wb") as stderr:
                process = subprocess.Popen(  # a killed run leaves no pair host (and so no window) behind
                    ending_with_parent(command),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
            pair = WindowPair(process, host_log, barrier_timeout_s)
            try:
                log = Path(userdir) / "logs" / "game.log"
                for side in TAGS:
                    layout = layouts[side]
                    layout = ViewLayout.named(layout) if isinstance(layout, str) else layout
                    pair.workers[side] = self._attach(pair, side, displays[side], layout, log)
                for side in TAGS:
                    self._focus(pair, side)
                yield pair
            finally:
                for worker in pair.workers.values():
                    worker.close()
                stop_window(process)

    def _attach(self, pair: WindowPair, side: str, display: str, layout: ViewLayout, log: Path):
        """The side's worker once its window is up and shows the world's first frame (black before)."""
        deadline = time.monotonic() + WINDOW_TIMEOUT_S
        worker, why = None, "no window yet"
        try:
            while True:
                if pair.process.poll() is not None:
                    raise WorkerError(
                        "window",
                        f"the pair's world exited ({pair.process.returncode}): {tail_text(pair.host_log)}",
                    )
                if time.monotonic() > deadline:
                    raise WorkerError(
                        "window", f"{side}'s window did not come within {WINDOW_TIMEOUT_S:g} s: {why}"
                    )
                try:
                    worker = worker or _side_worker(pair, side, display, layout, log)
                    capture = worker.capture(CaptureRequest(views=False, full=True))
                except WorkerError as error:  # not there yet, or gone while we attached: again
                    if worker is not None:
                        worker.close()
                    worker, why = None, str(error)
                    time.sleep(0.1)
                    continue
                if tuple(capture.size) != self.size:
                    h, w = capture.size
                    raise WorkerError(
                        "window", f"{side}'s window is {w}x{h}, not {self.size[1]}x{self.size[0]}"
                    )
                if capture.frame.any():
                    return worker
                why = "it showed no frame"
                time.sleep(0.1)
        except BaseException:
            if worker is not None:
                worker.close()
            raise

    def _focus(self, pair: WindowPair, side: str) -> None:
        worker = pair.workers[side]
        give_focus(worker.display_name, worker.window.id)
        deadline = time.monotonic() + WINDOW_TIMEOUT_S
        while not worker.focus():
            pair.check(side)
            if time.monotonic() > deadline:
                raise WorkerError("window", f"{side}'s window never got the keyboard focus")
            time.sleep(0.02)
