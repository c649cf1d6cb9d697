"""The two-player window mode (`sim/pair_window.py`) under a private Xvfb: two windows, one world, each driven
by its own X11 worker; a key pressed in one window reaches only that side's screen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.screen.events import VK_OEM_3, InputEvent
from hoi4_arena.screen.window_games import give_focus
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.sim.ui_layout import Layout

pytestmark = pytest.mark.x11

SIZE = (360, 640)


def _worker(display: str, title: str, log: Path, process: subprocess.Popen):
    from hoi4_arena.screen.x11_worker import X11Worker

    deadline = time.monotonic() + 60
    while True:
        try:
            return X11Worker(display, window=title, game_log_path=log, listen=False)
        except WorkerError:
            assert process.poll() is None, "the pair window exited"
            assert time.monotonic() < deadline, f"no window {title!r}"
            time.sleep(0.1)


def _focus(display: str, worker) -> None:
    give_focus(display, worker.window.id)
    deadline = time.monotonic() + 30
    while not worker.focus():
        assert time.monotonic() < deadline, "the window never got the focus"
        time.sleep(0.02)


def test_two_windows_show_one_world_and_keep_their_inputs_apart(xdisplay: str, tmp_path: Path) -> None:
    env = {**os.environ, "SDL_AUDIODRIVER": "dummy"}
    process = subprocess.Popen(
        [sys.executable, "-m", "hoi4_arena.sim.pair_window", "plains:1", "2", "640x360", str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    workers = {}
    try:
        log = tmp_path / "logs" / "game.log"
        for side in ("BLU", "RED"):
            workers[side] = _worker(xdisplay, f"hoi4-arena pair {side}", log, process)
        time.sleep(1.0)  # both windows drawn
        # SDL may replace a window while it starts (window_games.py retries too): attach again then.
        deadline = time.monotonic() + 60
        while True:
            try:
                frames = {
                    s: w.capture(CaptureRequest(views=False, full=True)).frame for s, w in workers.items()
                }
                break
            except WorkerError as error:
                assert error.code == "window_gone" and time.monotonic() < deadline, error
                for side in list(workers):
                    workers.pop(side).close()
                    workers[side] = _worker(xdisplay, f"hoi4-arena pair {side}", log, process)
                time.sleep(0.5)
        x, y, w, h = Layout(SIZE)["date_box"]
        assert frames["BLU"].shape == (360, 640, 3)
        assert np.array_equal(frames["BLU"][y : y + h, x : x + w], frames["RED"][y : y + h, x : x + w])
        assert not np.array_equal(frames["BLU"], frames["RED"])  # each side's own flag and tag
        # The console key in BLU's window opens BLU's console only.
        blu = workers["BLU"]
        _focus(xdisplay, blu)
        blu.arm("setup")
        t0 = blu.now_ns()
        blu.apply(
            [
                InputEvent(t0, "key_down", 320, 200, key=VK_OEM_3),
                InputEvent(t0 + 25_000_000, "key_up", 320, 200, key=VK_OEM_3),
            ],
            timed=True,
        )
        blu.wait_until(t0 + 400_000_000)
        blu.disarm()
    finally:
        for worker in workers.values():
            worker.close()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err[-2000:]
    report = json.loads(out)
    assert report["sides"] == ["BLU", "RED"]
    assert report["screens"]["BLU"]["console"]["open"] is True
    assert report["screens"]["RED"]["console"]["open"] is False
    assert report["screens"]["BLU"]["player"] == "BLU" and report["screens"]["RED"]["player"] == "RED"
