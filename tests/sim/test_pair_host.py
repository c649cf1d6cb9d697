"""The two-display pair game (`sim/pair_host.py` + `sim/pair_view.py`) under two private Xvfb servers: one
world, each side's window on its own display, each driven by its own X11 worker at the same time; each
input reaches only its side, nothing stays held, and a window that dies ends the game with its state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.screen.events import VK_OEM_3, InputEvent
from hoi4_arena.screen.window_games import give_focus
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.xvfb import Xvfb
from hoi4_arena.sim.pair import PairGame
from hoi4_arena.sim.ui_layout import Layout

pytestmark = pytest.mark.x11

SIZE = (360, 640)
MS = 1_000_000


def _worker(display: str, title: str, log: Path, process: subprocess.Popen):
    from hoi4_arena.screen.x11_worker import X11Worker

    deadline = time.monotonic() + 60
    while True:
        try:
            return X11Worker(display, window=title, game_log_path=log, listen=False)
        except WorkerError:
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, f"no window {title!r} on {display}"
            time.sleep(0.1)


def _focus(worker) -> None:
    # There is no window manager on Xvfb: give the window the keyboard as one would have it.
    give_focus(worker.display_name, worker.window.id)
    deadline = time.monotonic() + 30
    while not worker.focus():
        assert time.monotonic() < deadline, "the window never got the focus"
        time.sleep(0.02)


def _frames(workers: dict) -> dict[str, np.ndarray]:
    """Each window's frame once the world's first frame is on it (a window shows black until then)."""
    deadline = time.monotonic() + 60
    while True:
        frames = {s: w.capture(CaptureRequest(views=False, full=True)).frame for s, w in workers.items()}
        if all(frame.any() for frame in frames.values()):
            return frames
        assert time.monotonic() < deadline, "a window never showed the world's frame"
        time.sleep(0.1)


def _play(worker, events: list[tuple[int, str, dict]]) -> None:
    """Send `events` (ms after now, kind, fields) through the X11 worker, timed, and wait them out."""
    worker.arm("setup")
    t0 = worker.now_ns()
    worker.apply([InputEvent(t0 + ms * MS, kind, **fields) for ms, kind, fields in events], timed=True)
    worker.wait_until(t0 + (events[-1][0] + 300) * MS)
    worker.disarm()


def _host(tmp_path: Path, displays: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hoi4_arena.sim.pair_host", "plains:1", "2", "640x360", str(tmp_path)]
        + ["--displays", *displays],
        env={**os.environ, "SDL_AUDIODRIVER": "dummy"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def test_two_displays_each_window_driven_by_its_own_worker(tmp_path: Path) -> None:
    with Xvfb() as blu_x, Xvfb() as red_x:
        displays = {"BLU": blu_x.display, "RED": red_x.display}
        process = _host(tmp_path, [displays["BLU"], displays["RED"]])
        log = tmp_path / "logs" / "game.log"
        workers = {
            side: _worker(displays[side], f"hoi4-arena pair {side}", log, process) for side in displays
        }
        try:
            frames = _frames(workers)
            x, y, w, h = Layout(SIZE)["date_box"]
            assert frames["BLU"].shape == (*SIZE, 3)
            assert np.array_equal(frames["BLU"][y : y + h, x : x + w], frames["RED"][y : y + h, x : x + w])
            assert not np.array_equal(frames["BLU"], frames["RED"])  # each side's own flag and tag
            for worker in workers.values():
                _focus(worker)  # each display has its own focus: neither takes it from the other
            # At the same time: BLU types the console key, RED middle-drags the map (a pan).
            key = [
                (0, "key_down", {"x": 320, "y": 200, "key": VK_OEM_3}),
                (40, "key_up", {"x": 320, "y": 200, "key": VK_OEM_3}),
            ]
            drag = [
                (0, "move", {"x": 400, "y": 250}),
                (20, "button_down", {"x": 400, "y": 250, "button": "middle"}),
            ]
            drag += [(40 + 20 * k, "move", {"x": 400 - 25 * k, "y": 250 - 12 * k}) for k in range(1, 5)]
            drag += [(160, "button_up", {"x": 300, "y": 202, "button": "middle"})]
            threads = [
                threading.Thread(target=_play, args=(workers["BLU"], key)),
                threading.Thread(target=_play, args=(workers["RED"], drag)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            held = {side: worker.status()["held"] for side, worker in workers.items()}
            releases = {side: worker.status()["releases"] for side, worker in workers.items()}
            red_pid = workers["RED"].window.pid
        finally:
            for worker in workers.values():
                worker.close()
        assert held == {"BLU": [], "RED": []}
        assert all(r.get("focus", 0) == 0 for r in releases.values()), releases  # nobody lost the focus
        # RED's window dies: the game ends, the world stops BLU's window and prints the state.
        os.kill(red_pid, signal.SIGKILL)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()[-2000:]
    report = json.loads(out)
    assert report["ended"].startswith(f"the RED window on {displays['RED']} was lost"), report["ended"]
    assert report["displays"] == displays
    blu, red = report["screens"]["BLU"], report["screens"]["RED"]
    assert blu["player"] == "BLU" and red["player"] == "RED"
    assert blu["console"]["open"] is True and red["console"]["open"] is False
    with PairGame("plains:1", 2, size=SIZE) as start:
        camera = start.state("RED")["ui"]["camera"]
    assert blu["camera"] == camera  # the drag did not pan BLU's map
    assert red["camera"]["cx"] > camera["cx"] and red["camera"]["cy"] > camera["cy"]  # dragged left and up
    assert blu["ignored"] == red["ignored"] == 0


def test_sigterm_to_the_world_ends_both_windows_and_prints_the_state(tmp_path: Path) -> None:
    with Xvfb() as blu_x, Xvfb() as red_x:
        process = _host(tmp_path, [blu_x.display, red_x.display])
        log = tmp_path / "logs" / "game.log"
        workers = {
            s: _worker(d.display, f"hoi4-arena pair {s}", log, process)
            for s, d in (("BLU", blu_x), ("RED", red_x))
        }
        pids = [worker.window.pid for worker in workers.values()]
        for worker in workers.values():
            worker.close()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()[-2000:]
    assert json.loads(out)["ended"] == "stopped (SIGTERM)"
    for pid in pids:  # the world waited for its windows
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_window_without_its_display_is_an_error_naming_it(tmp_path: Path) -> None:
    process = _host(tmp_path, [":4241", ":4242"])
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and out == b""
    assert b"window on :424" in err and b"before both windows opened" in err
