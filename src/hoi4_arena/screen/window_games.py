"""The simulator's window under a private Xvfb, as an X11 worker: `--game x11` of play-policy and record-ai.

`WindowGames(size)` starts one private Xvfb (stopped by its PID); `open(...)` then runs one game in it:

1. `hoi4-arena sim --paused ...` in a subprocess on that display (the same arena, seed, side, AI and
   time limit as the headless game would get, so the two are one game), its ARENA log in a fresh
   userdir;
2. an `X11Worker` on the window (found by the process id), the checkpoint's view layout, the window's
   game.log tailed; XRecord is not started, since nobody sits at a private Xvfb to press F12;
3. the keyboard focus given to the window, as a person's click would (Xvfb has no window manager);
4. at the end: the worker closed (every key and button released), the window terminated (SIGTERM, then
   SIGKILL), the userdir removed.

Everything here runs on the wall clock: a decision takes 200 ms of real time, as with HOI4.
A window that does not come up, or dies, is a `WorkerError`: that game is invalid, the run goes on.

Try: hoi4-arena play-policy random runs/x11 --games 1 --game x11 --max-days 2
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hoi4_arena.processes import ending_with_parent
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.xvfb import Xvfb

WINDOW_TIMEOUT_S = 60.0
"""How long a window may take to appear and take the focus (pygame and the map load first)."""


class WindowGames:
    """A private Xvfb for the simulator's windows; a context manager. See the module docstring."""

    def __init__(self, size: tuple[int, int]) -> None:
        height, width = size
        self.size = (int(height), int(width))
        self.xvfb = Xvfb(width=max(1920, width), height=max(1080, height))

    def __enter__(self) -> WindowGames:
        self.xvfb.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.xvfb.stop()

    @contextlib.contextmanager
    def open(
        self,
        *,
        arena: str,
        seed: int,
        side: str,
        layout: ViewLayout,
        max_days: int,
        ai_strength: float,
    ) -> Iterator:
        """One game's window and its `X11Worker`, closed and stopped on the way out."""
        from hoi4_arena.screen.x11_worker import X11Worker

        height, width = self.size
        with scratch_folder("window") as userdir:
            window_log = Path(userdir) / "window.log"
            command = [
                sys.executable,
                "-m",
                "hoi4_arena.cli",
                "sim",
                "--preset",
                arena,
                "--seed",
                str(seed),
                "--size",
                f"{width}x{height}",
                "--player",
                side,
                "--ai-strength",
                str(ai_strength),
                "--days",
                str(max_days),
                "--paused",
                "--userdir",
                userdir,
            ]
            env = {**os.environ, "DISPLAY": self.xvfb.display, "SDL_AUDIODRIVER": "dummy"}
            with window_log.open("wb") as stderr:
                process = subprocess.Popen(  # a killed run leaves no window behind
                    ending_with_parent(command),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
            worker = None
            try:
                worker = self._worker(X11Worker, process, layout, Path(userdir), window_log)
                self._focus(worker, process, window_log)
                size = worker.capture(CaptureRequest(views=False)).size
                if tuple(size) != self.size:
                    raise WorkerError("window", f"the window is {size[1]}x{size[0]}, not {width}x{height}")
                yield worker
            finally:
                if worker is not None:
                    worker.close()
                stop_window(process)

    def _worker(
        self, factory, process: subprocess.Popen, layout: ViewLayout, userdir: Path, window_log: Path
    ):
        deadline = time.monotonic() + WINDOW_TIMEOUT_S
        while True:
            try:
                return factory(
                    self.xvfb.display,
                    window=process.pid,
                    layout=layout,
                    game_log_path=userdir / "logs" / "game.log",
                    listen=False,
                )
            except WorkerError:
                if process.poll() is not None:
                    raise WorkerError(
                        "window",
                        f"the simulator's window exited ({process.returncode}): {tail_text(window_log)}",
                    ) from None
                if time.monotonic() > deadline:
                    raise WorkerError(
                        "window", f"the simulator's window did not appear within {WINDOW_TIMEOUT_S:g} s"
                    ) from None
                time.sleep(0.1)

    def _focus(self, worker, process: subprocess.Popen, window_log: Path) -> None:
        give_focus(self.xvfb.display, worker.window.id)
        deadline = time.monotonic() + WINDOW_TIMEOUT_S
        while not worker.focus():
            if process.poll() is not None:
                raise WorkerError("window", f"the simulator's window exited: {tail_text(window_log)}")
            if time.monotonic() > deadline:
                raise WorkerError("window", "the simulator's window never got the keyboard focus")
            time.sleep(0.02)


def give_focus(display: str, window: int) -> None:
    """Give `window` of X display `display` the keyboard focus, as a person's click would (Xvfb runs no
    window manager to do it); the caller waits for the worker to see it."""
    from Xlib import X
    from Xlib.display import Display

    conn = Display(display)
    try:
        conn.create_resource_object("window", window).set_input_focus(X.RevertToParent, X.CurrentTime)
        conn.sync()
    finally:
        conn.close()


def stop_window(process: subprocess.Popen) -> None:
    """End the window by its PID: SIGTERM (it closes cleanly), then SIGKILL."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def tail_text(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no output)"
    return " | ".join(text[-lines:]) or "(no output)"
