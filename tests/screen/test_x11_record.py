"""A person's input heard through XRecord: what counts, where it lands, when it happened, and that the
worker's own injected input is told apart from it."""

from __future__ import annotations

import time

import pytest
from Xlib import X
from Xlib.display import Display
from Xlib.ext import xtest

from hoi4_arena.screen.events import VK_SHIFT, InputEvent
from hoi4_arena.screen.x11_record import InjectionLedger, ServerClock
from hoi4_arena.screen.x11_worker import X11Worker

pytestmark = pytest.mark.x11

VK_A, VK_Z = ord("A"), ord("Z")


def drain_until(worker: X11Worker, count: int, timeout: float = 3.0) -> list[InputEvent]:
    got: list[InputEvent] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += worker.events()
        time.sleep(0.01)
    time.sleep(0.1)
    return got + worker.events()


def focus_seen(worker: X11Worker, focused: bool, timeout: float = 5.0) -> None:
    """Wait until the worker's watchdog has seen the game's focus as `focused`: the recorder reads its
    latest look (every 25 ms; far later on a loaded machine, so a fixed sleep is a race)."""
    deadline = time.monotonic() + timeout
    while worker.guard.focus != focused:
        assert time.monotonic() < deadline, f"the watchdog never saw focus {focused}"
        time.sleep(0.01)


def test_a_persons_keys_and_clicks_come_back_relative_to_the_window(worker, person) -> None:
    left, top = worker.client_rect[:2]
    before = time.monotonic_ns()
    xtest.fake_input(person.conn, X.MotionNotify, x=left + 40, y=top + 30)
    xtest.fake_input(person.conn, X.ButtonPress, 1)
    xtest.fake_input(person.conn, X.ButtonRelease, 1)
    xtest.fake_input(person.conn, X.ButtonPress, 4)
    xtest.fake_input(person.conn, X.ButtonRelease, 4)
    person.conn.sync()
    person.tap("a")
    person.tap("Shift_R")
    after = time.monotonic_ns()
    got = drain_until(worker, 7)
    assert [(e.kind, e.x, e.y, e.button, e.key, e.delta) for e in got] == [
        ("move", 40, 30, "", 0, 0),
        ("button_down", 40, 30, "left", 0, 0),
        ("button_up", 40, 30, "left", 0, 0),
        ("wheel", 40, 30, "", 0, 1),
        ("key_down", 40, 30, "", VK_A, 0),
        ("key_up", 40, 30, "", VK_A, 0),
        ("key_down", 40, 30, "", VK_SHIFT, 0),
        ("key_up", 40, 30, "", VK_SHIFT, 0),
    ]
    assert all(e.source == "human" for e in got)
    # Server milliseconds mapped onto our clock: within a millisecond (plus rounding) of the window.
    assert all(before - 2_000_000 <= e.t_ns <= after + 2_000_000 for e in got)
    assert [e.t_ns for e in got] == sorted(e.t_ns for e in got)


def test_the_workers_own_input_is_not_reported_as_a_persons(worker, person, app) -> None:
    worker.arm("match")
    since = app.mark()
    worker.apply(
        [
            InputEvent(0, "move", 77, 66),
            InputEvent(0, "button_down", 77, 66, button="right"),
            InputEvent(0, "button_up", 77, 66, button="right"),
            InputEvent(0, "key_down", key=VK_A),
            InputEvent(0, "key_up", key=VK_A),
            InputEvent(0, "wheel", 77, 66, delta=-1),
        ]
    )
    app.wait_for(lambda e: e["type"] == "MouseWheel", since=since)
    person.tap("z")  # and a person's key in between keeps its place
    worker.apply([InputEvent(0, "key_down", key=VK_A), InputEvent(0, "key_up", key=VK_A)])
    got = drain_until(worker, 2)
    assert [(e.kind, e.key) for e in got] == [("key_down", VK_Z), ("key_up", VK_Z)]
    assert len(worker.ledger) == 0, "every injected event was matched"


def test_keys_count_only_while_the_game_has_focus(worker, person, app) -> None:
    screen = person.conn.screen()
    other = screen.root.create_window(0, 0, 10, 10, 0, screen.root_depth, X.InputOutput)
    other.map()
    person.conn.sync()
    person.focus(other.id)
    focus_seen(worker, False)
    person.tap("a")
    person.focus(app.window)
    focus_seen(worker, True)
    person.tap("z")
    got = drain_until(worker, 2)
    assert [(e.kind, e.key) for e in got] == [("key_down", VK_Z), ("key_up", VK_Z)]


def test_a_keystroke_is_recorded_whole_or_not_at_all_across_a_focus_change(worker, person, app) -> None:
    """A key pressed elsewhere and released in the game is not half a keystroke in the session; one pressed
    in the game and released after the focus left keeps its release (no key held forever)."""
    screen = person.conn.screen()
    other = screen.root.create_window(0, 0, 10, 10, 0, screen.root_depth, X.InputOutput)
    other.map()
    person.conn.sync()
    person.focus(other.id)
    focus_seen(worker, False)
    person.key("a", True)
    time.sleep(0.1)
    person.focus(app.window)
    focus_seen(worker, True)
    person.key("a", False)
    person.key("z", True)
    time.sleep(0.1)
    person.focus(other.id)
    focus_seen(worker, False)
    person.key("z", False)
    got = drain_until(worker, 2)
    assert [(e.kind, e.key) for e in got] == [("key_down", VK_Z), ("key_up", VK_Z)]
    person.focus(app.window)
    focus_seen(worker, True)


def test_pointer_outside_the_window_is_not_recorded_but_a_drag_out_ends(worker, person) -> None:
    left, top, width, height = worker.client_rect
    xtest.fake_input(person.conn, X.MotionNotify, x=left - 5, y=top - 5)
    xtest.fake_input(person.conn, X.ButtonPress, 3)  # outside: not the game's
    xtest.fake_input(person.conn, X.ButtonRelease, 3)
    xtest.fake_input(person.conn, X.MotionNotify, x=left + 10, y=top + 20)
    xtest.fake_input(person.conn, X.ButtonPress, 1)
    xtest.fake_input(person.conn, X.MotionNotify, x=left + width + 50, y=top + 20)
    xtest.fake_input(person.conn, X.ButtonRelease, 1)  # the drag's end, outside: clamped to the edge
    person.conn.sync()
    got = drain_until(worker, 3)
    assert [(e.kind, e.x, e.y, e.button) for e in got] == [
        ("move", 10, 20, ""),
        ("button_down", 10, 20, "left"),
        ("button_up", width - 1, 20, "left"),
    ]


def test_server_clock_unwraps_32_bit_milliseconds() -> None:
    clock = ServerClock(server_ms=2**32 - 10, mono_ns=5_000_000_000)
    assert clock.to_ns(2**32 - 10) == 5_000_000_000
    assert clock.to_ns(5) == 5_000_000_000 + 15_000_000  # wrapped past zero
    assert clock.to_ns(2**32 - 1010) == 5_000_000_000 - 1_000_000_000
    assert ServerClock(server_ms=100, mono_ns=0).to_ns(2**32 - 100) == -200_000_000


def test_server_clock_calibration_tracks_the_monotonic_clock(server) -> None:
    conn = Display(server.display)
    try:
        first = ServerClock.calibrate(conn)
        time.sleep(0.2)
        second = ServerClock.calibrate(conn)
    finally:
        conn.close()
    # The second reading, mapped through the first calibration, lands on its own within what the two
    # round trips leave open plus the server's 1 ms resolution (2 ms on a quiet machine).
    slack = first.uncertainty_ns + second.uncertainty_ns + 1_000_000
    assert abs(first.to_ns(second.server_ms) - second.mono_ns) <= max(2_000_000, slack)


def test_a_reading_stretched_by_the_scheduler_is_not_the_one_kept(server, monkeypatch) -> None:
    """The first round trip is made 40 ms long (as a preempted process sees it): the clock keeps a
    shorter one, and maps the server's time as a single clean reading does."""
    import hoi4_arena.screen.x11_record as x11_record

    real = time.monotonic_ns
    calls = {"n": 0}

    def stalled() -> int:
        calls["n"] += 1
        return real() + (40_000_000 if calls["n"] == 2 else 0)  # the first reading's `after`

    conn = Display(server.display)
    try:
        monkeypatch.setattr(x11_record.time, "monotonic_ns", stalled)
        clock = ServerClock.calibrate(conn)
        monkeypatch.setattr(x11_record.time, "monotonic_ns", real)
        clean = ServerClock.calibrate(conn, readings=1)
    finally:
        conn.close()
    assert calls["n"] == 2 * x11_record.CLOCK_READINGS
    assert clock.uncertainty_ns < 10_000_000
    slack = clock.uncertainty_ns + clean.uncertainty_ns + 1_000_000
    assert abs(clock.to_ns(clean.server_ms) - clean.mono_ns) <= max(2_000_000, slack)


def test_ledger_matches_in_order_by_type_detail_and_motion_position() -> None:
    ledger = InjectionLedger()
    ledger.add((X.KeyPress, 38, 0, 0))
    ledger.add((X.MotionNotify, 0, 10, 20))
    assert not ledger.claim(X.KeyPress, 39, 0, 0)
    assert not ledger.claim(X.MotionNotify, 0, 10, 21)
    assert ledger.claim(X.MotionNotify, 0, 10, 20)
    assert ledger.claim(X.KeyPress, 38, 5, 5)  # a key's position is wherever the pointer is
    assert not ledger.claim(X.KeyPress, 38, 0, 0)
    assert len(ledger) == 0
