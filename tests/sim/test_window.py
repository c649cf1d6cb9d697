"""Window mode under a private Xvfb: the window's pixels, captured from the X server with its cursor,
equal the headless frame; input injected through XTest reaches the game; the whole opening played as
raw events in the window captures a province; the window closes cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from Xlib import X, protocol
from Xlib.display import Display
from Xlib.ext import xtest

from hoi4_arena.screen.events import KEY_CODES, InputEvent
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.x11_worker import X11Worker
from hoi4_arena.screen.xvfb import Xvfb
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click
from hoi4_arena.sim.opening import opening

pytestmark = pytest.mark.x11

SIZE = (540, 960)
SPACING_NS = 4_000_000
ARGS = ["--preset", "plains", "--seed", "0", "--size", "960x540", "--paused", "--ai", "none", "--no-events"]


@pytest.fixture(scope="module")
def server():
    with Xvfb() as running:
        yield running


class Window:
    """`hoi4-arena sim` running on the private display, and an X11 worker attached to it."""

    def __init__(self, display: str, userdir: Path) -> None:
        env = {**os.environ, "DISPLAY": display, "SDL_AUDIODRIVER": "dummy"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hoi4_arena.cli", "sim", *ARGS, "--userdir", str(userdir)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.log = userdir / "logs" / "game.log"
        self.result: tuple[int, str] | None = None
        deadline = time.monotonic() + 60
        while True:
            try:
                self.worker = X11Worker(display, window=self.process.pid, listen=False)
                break
            except WorkerError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.terminate()
                    _, err = self.process.communicate(timeout=20)
                    raise RuntimeError(f"the window did not appear: {err.decode()}") from None
                time.sleep(0.1)
        self.conn = Display(display)
        self.window = self.conn.create_resource_object("window", self.worker.window.id)

    def focus(self) -> None:
        # There is no window manager on Xvfb: give the window the keyboard as one would have it.
        self.window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.conn.sync()
        deadline = time.monotonic() + 5
        while not self.worker.focus():
            assert time.monotonic() < deadline, "the window never got the focus"
            time.sleep(0.02)

    def point(self, x: int, y: int) -> None:
        left, top = self.worker.client_rect[:2]
        xtest.fake_input(self.conn, X.MotionNotify, x=left + x, y=top + y)
        self.conn.sync()

    def send(self, events: list[SimEvent]) -> None:
        """The events as real X input (XTest through the X11 worker, armed for a harness), 4 ms apart.

        The spacing matters: SDL takes a key release followed within 2 ms (X server time) by a press of
        the same key anywhere in its queue for auto-repeat and drops both, so a burst that types "ee"
        would type one "e". A person, or a policy's 25 ms slots, never come that close.
        """
        start = time.monotonic_ns() + 20_000_000
        converted = [
            InputEvent(
                start + i * SPACING_NS,
                e.kind,
                e.x,
                e.y,
                button=e.button,
                key=KEY_CODES[e.key] if e.key else 0,
                delta=e.delta,
            )
            for i, e in enumerate(events)
        ]
        self.worker.apply(converted, timed=True)
        time.sleep((converted[-1].t_ns - time.monotonic_ns()) / 1e9 + 0.02)

    def capture(self) -> np.ndarray:
        return self.worker.capture(CaptureRequest(views=False, full=True)).frame

    def wait_for(self, *expected: np.ndarray, timeout: float = 15.0, what: str = "") -> np.ndarray:
        """Capture until the window shows one of `expected`; fail with the difference if it never does."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.capture()
            if any(np.array_equal(frame, e) for e in expected):
                return frame
            if time.monotonic() > deadline:
                diff = np.argwhere((frame != expected[0]).any(axis=2))
                pytest.fail(
                    f"{what}: the window differs from the headless frame at {len(diff)} pixels: {diff[:5].tolist()}"
                )
            time.sleep(0.05)

    def stop(self) -> tuple[int, str]:
        """Close the worker (and its guardian) and end the window; returns its exit status and stdout."""
        if hasattr(self, "worker"):
            self.worker.close()
            self.conn.close()
            del self.worker
        if self.result is None:
            if self.process.poll() is None:
                self.process.terminate()
            out, _ = self.process.communicate(timeout=20)
            self.result = (self.process.returncode, out.decode())
        return self.result


@pytest.fixture
def window(server, tmp_path):
    running = Window(server.display, tmp_path)
    yield running
    running.stop()


def twin() -> SimGame:
    """The headless game the window runs (same arena, seed, size and options)."""
    return SimGame("plains:0", 0, size=SIZE, ai={}, events=False, player_kind="human")


def test_window_pixels_equal_the_headless_frame(window) -> None:
    with twin() as game:
        for x, y in ((300, 200), (25, 500), (700, 101), (480, 270)):
            window.point(x, y)
            game.feed([SimEvent("move", x, y)])
            window.wait_for(game.frame())


def test_shift_click_on_the_alert_through_xtest_forms_an_army(window) -> None:
    window.focus()
    window.worker.arm("setup")
    with twin() as game:
        events = click(*game.ui.layout["news_ok"].center) + click(
            *game.ui.layout["alert_unassigned"].center, shift=True
        )
        game.feed([SimEvent("move", 480, 270)])
        window.point(480, 270)
        before = window.wait_for(game.frame())
        window.send(events)
        game.feed(events)
        assert game.world.armies and game.ui.message().endswith("army formed (24 divisions)")
        with_message = game.frame()
        game.advance(5000)  # the message fades after four seconds: either picture is right
        after = window.wait_for(with_message, game.frame())
    card = game.ui.layout.card(0)
    x, y, w, h = card
    assert not np.array_equal(before[y : y + h, x : x + w], after[y : y + h, x : x + w])


def test_a_scripted_sequence_of_raw_events_captures_a_province_in_the_window(window) -> None:
    window.focus()
    window.worker.arm("setup")
    with twin() as game:
        # The twin, fed the same events while the window is paused, says where things are on screen,
        # and the window must show what the twin shows after every step but the last (which unpauses).
        for label, events in opening(game):
            window.send(events)
            game.feed(events)
            if label != "run at speed 5":
                shown = game.frame()
                game.advance(5000)  # its message fades: the window may show either picture
                window.wait_for(shown, game.frame(), what=label)
        target = game.world.armies[game.ui.army].plan[-1]
    deadline = time.monotonic() + 90
    wanted = f"province={target} from=RED to=BLU"
    while wanted not in (window.log.read_text() if window.log.exists() else ""):
        assert window.process.poll() is None, window.process.stderr.read().decode()
        assert time.monotonic() < deadline, "the offensive took no province in time"
        time.sleep(0.2)
    text = window.log.read_text()
    assert "ARENA declare" in text and "attacker=BLU" in text and "kind=human" in text
    code, out = window.stop()
    assert code == 0 and json.loads(out)["at_war"] is True


def test_window_closes_cleanly_on_its_close_button(window) -> None:
    conn = window.conn
    protocols, delete = conn.intern_atom("WM_PROTOCOLS"), conn.intern_atom("WM_DELETE_WINDOW")
    message = protocol.event.ClientMessage(
        window=window.window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
    )
    window.window.send_event(message)
    conn.sync()
    assert window.process.wait(timeout=20) == 0
    code, out = window.stop()
    assert code == 0 and json.loads(out)["date"] == "1936.01.01.00"
