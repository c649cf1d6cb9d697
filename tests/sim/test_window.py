"""Window mode under a private Xvfb: the window's pixels, captured from the X server with its cursor,
equal the headless frame; input injected through XTest reaches the game; the whole opening played as
raw events in the window captures a province; the window closes cleanly."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from Xlib import X, protocol

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click
from hoi4_arena.sim.opening import opening

pytestmark = pytest.mark.x11

SIZE = (540, 960)
ARGS = ["--preset", "plains", "--seed", "0", "--size", "960x540", "--paused", "--ai", "none", "--no-events"]


@pytest.fixture
def window(sim_window):
    return sim_window(*ARGS)


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
