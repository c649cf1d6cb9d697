"""Every input-safety rule of the X11 worker, observed from outside: the X server's own key and button
state (XQueryKeymap, the QueryPointer mask), the window's event log, and an independent XRecord."""

from __future__ import annotations

import time

import pytest
from Xlib import XK, X
from Xlib.display import Display
from Xlib.ext import xtest

from apps.target import PatternApp
from hoi4_arena.screen.events import VK_ESCAPE, VK_SHIFT, VK_SPACE, InputEvent
from hoi4_arena.screen.worker import WorkerError
from hoi4_arena.screen.x11_record import RecordListener
from hoi4_arena.screen.x11_worker import X11Worker

pytestmark = pytest.mark.x11

VK_A, VK_B = ord("A"), ord("B")


def keycode(conn: Display, name: str) -> int:
    return conn.keysym_to_keycode(XK.string_to_keysym(name))


def wait_until(condition, timeout: float = 10.0) -> float:
    """Poll `condition` (on the test's own connection only); return the monotonic time it held.

    The timeout is only how long a failure takes to report: a loaded machine may take seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(0.005)
    raise AssertionError("condition not met in time")


def test_focus_loss_releases_held_keys_and_buttons(worker, person) -> None:
    worker.arm("match")
    worker.apply(
        [
            InputEvent(0, "move", 50, 50),
            InputEvent(0, "key_down", key=VK_SHIFT),
            InputEvent(0, "key_down", key=VK_A),
            InputEvent(0, "button_down", 50, 50, button="left"),
        ]
    )
    assert {keycode(person.conn, "Shift_L"), keycode(person.conn, "a")} <= person.held_keys()
    assert person.held_buttons() == {1}
    person.focus(person.other_window())
    wait_until(lambda: not person.held_keys() and not person.held_buttons())
    assert worker.status()["last_release"]["reason"] == "focus"
    with pytest.raises(WorkerError) as error:
        worker.apply([InputEvent(0, "key_down", key=VK_A)])
    assert error.value.code == "no_focus"
    assert not person.held_keys()


def test_watchdog_releases_after_750_ms_without_a_request(worker, person) -> None:
    worker.arm("match")
    before = time.monotonic()
    worker.apply([InputEvent(0, "key_down", key=VK_A)])  # the last request
    time.sleep(0.3)
    checked = person.held_keys()
    if time.monotonic() - before < 0.7:  # a starved test machine may already be past the deadline
        assert keycode(person.conn, "a") in checked
    released_at = wait_until(lambda: not person.held_keys())
    # The request was made after `before`, so the release cannot come sooner than 750 ms after it.
    assert released_at - before >= 0.75
    assert worker.status()["last_release"]["reason"] == "watchdog"


def test_requests_keep_the_watchdog_quiet(worker, person) -> None:
    worker.arm("match")
    worker.apply([InputEvent(0, "key_down", key=VK_A)])
    for _ in range(6):
        time.sleep(0.25)
        worker.status()
    assert keycode(person.conn, "a") in person.held_keys()
    worker.release()
    assert not person.held_keys()


def test_f12_from_another_client_stops_input_until_rearmed(worker, app, person) -> None:
    worker.arm("match")
    since = app.mark()
    worker.apply([InputEvent(0, "key_down", key=VK_A)])
    f12 = keycode(person.conn, "F12")
    xtest.fake_input(person.conn, X.KeyPress, f12)
    xtest.fake_input(person.conn, X.KeyRelease, f12)
    person.conn.sync()
    wait_until(lambda: not person.held_keys())
    status = worker.status()
    assert status["stopped"] and status["stop_reason"] == "f12"
    # Let the window log the release of the held A and the F12 itself before marking where "after"
    # begins: the two come from two X clients, so either may reach the window's log first.
    app.wait_for(lambda e: e["type"] == "KeyUp" and e["key"] == "f12", since=since)
    app.wait_for(lambda e: e["type"] == "KeyUp" and e["key"] == "a", since=since)
    since = app.mark()
    with pytest.raises(WorkerError) as error:
        worker.apply([InputEvent(0, "move", 30, 30), InputEvent(0, "key_down", key=VK_B)])
    assert error.value.code == "stopped"
    time.sleep(0.2)
    assert app.inputs(since) == [] and not person.held_keys()
    worker.arm("match")
    worker.apply([InputEvent(0, "key_down", key=VK_B), InputEvent(0, "key_up", key=VK_B)])
    app.wait_for(lambda e: e["type"] == "KeyDown" and e["key"] == "b", since=since)


def test_f12_stops_a_timed_batch_in_flight(worker, app, person) -> None:
    worker.arm("match")
    since = app.mark()
    t0 = worker.now_ns()
    worker.apply(
        [
            InputEvent(t0 + 20_000_000, "key_down", key=VK_A),
            InputEvent(t0 + 40_000_000, "key_up", key=VK_A),
            InputEvent(t0 + 600_000_000, "key_down", key=VK_B),
            InputEvent(t0 + 620_000_000, "key_up", key=VK_B),
        ],
        timed=True,
    )
    app.wait_for(lambda e: e["type"] == "KeyUp" and e["key"] == "a", since=since)
    f12 = keycode(person.conn, "F12")
    xtest.fake_input(person.conn, X.KeyPress, f12)
    xtest.fake_input(person.conn, X.KeyRelease, f12)
    person.conn.sync()
    wait_until(lambda: worker.guard.stopped)
    time.sleep(0.8)  # past the batch's last event
    assert "b" not in [e.get("key") for e in app.inputs(since)]


def test_match_mode_refuses_space_and_setup_mode_allows_it(worker, app, person) -> None:
    worker.arm("match")
    since = app.settled_mark()
    for vk in (VK_SPACE, VK_ESCAPE):
        with pytest.raises(WorkerError) as error:
            worker.apply([InputEvent(0, "key_down", key=vk), InputEvent(0, "key_up", key=vk)])
        assert error.value.code == "forbidden_key"
    time.sleep(0.2)
    assert app.inputs(since) == []
    worker.arm("setup")
    worker.apply([InputEvent(0, "key_down", key=VK_SPACE), InputEvent(0, "key_up", key=VK_SPACE)])
    app.wait_for(lambda e: e["type"] == "KeyDown" and e["key"] == "space", since=since)


def move_and_wait(worker: X11Worker, app: PatternApp, x: int, y: int) -> int:
    """Move the pointer, wait until the window logged it, and return the mark after it."""
    since = app.mark()
    worker.apply([InputEvent(0, "move", x, y)])
    app.wait_for(lambda e: e["type"] == "MouseMotion" and e["pos"] == [x, y], since=since)
    return app.mark()


def test_out_of_range_positions_are_refused_and_the_pointer_stays(worker, app, person) -> None:
    worker.arm("match")
    move_and_wait(worker, app, 10, 12)
    before = person.conn.screen().root.query_pointer()
    for x, y in [(640, 10), (10, 360), (-1, 5)]:
        with pytest.raises(WorkerError) as error:
            worker.apply([InputEvent(0, "move", x, y)])
        assert error.value.code == "out_of_bounds"
    after = person.conn.screen().root.query_pointer()
    assert (after.root_x, after.root_y) == (before.root_x, before.root_y)


def test_one_forbidden_event_leaves_the_whole_batch_unapplied(worker, app, person) -> None:
    worker.arm("match")
    move_and_wait(worker, app, 11, 13)
    since = app.settled_mark()
    before = person.conn.screen().root.query_pointer()
    batch = [
        InputEvent(0, "move", 300, 300),
        InputEvent(0, "key_down", key=VK_A),
        InputEvent(0, "button_down", 300, 300, button="left"),
        InputEvent(0, "key_down", key=VK_SPACE),
    ]
    with pytest.raises(WorkerError) as error:
        worker.apply(batch)
    assert error.value.code == "forbidden_key"
    time.sleep(0.2)
    after = person.conn.screen().root.query_pointer()
    assert (after.root_x, after.root_y) == (before.root_x, before.root_y)
    assert not person.held_keys() and not person.held_buttons()
    assert app.inputs(since) == []


def test_nothing_is_applied_unarmed_or_after_disarm(worker, person) -> None:
    with pytest.raises(WorkerError) as error:
        worker.apply([InputEvent(0, "key_down", key=VK_A)])
    assert error.value.code == "not_armed"
    worker.arm("match")
    worker.apply([InputEvent(0, "key_down", key=VK_A)])
    worker.disarm()
    assert not person.held_keys()
    with pytest.raises(WorkerError):
        worker.apply([InputEvent(0, "key_down", key=VK_A)])


def test_focus_loss_drops_the_rest_of_a_timed_batch(worker, app, person, server) -> None:
    # An independent listener (its own, empty ledger) hears every key event the server processes.
    heard = RecordListener(
        server.display, client_rect=lambda: (0, 0, 1920, 1080), focus=lambda: True, on_stop=lambda: None
    ).start()
    try:
        worker.arm("match")
        since = app.mark()
        t0 = worker.now_ns()
        worker.apply(
            [
                InputEvent(t0 + 20_000_000, "key_down", key=VK_A),
                InputEvent(t0 + 40_000_000, "key_up", key=VK_A),
                InputEvent(t0 + 500_000_000, "key_down", key=VK_B),
                InputEvent(t0 + 520_000_000, "key_up", key=VK_B),
            ],
            timed=True,
        )
        app.wait_for(lambda e: e["type"] == "KeyUp" and e["key"] == "a", since=since)
        person.focus(person.other_window())
        time.sleep(0.7)
        keys = [event.key for event in heard.drain() if event.kind == "key_down"]
        assert keys == [VK_A]
        assert worker.telemetry()["apply_lateness_ms"]["count"] >= 2
    finally:
        heard.stop()


def test_close_releases_everything_held(server, app, person) -> None:
    person.focus(app.window)
    worker = X11Worker(server.display, window=app.pid)
    worker.arm("setup")
    worker.apply(
        [
            InputEvent(0, "move", 5, 5),
            InputEvent(0, "key_down", key=VK_SPACE),
            InputEvent(0, "button_down", 5, 5, button="right"),
        ]
    )
    assert keycode(person.conn, "space") in person.held_keys() and person.held_buttons() == {3}
    worker.close()
    assert not person.held_keys() and not person.held_buttons()
    worker.close()  # twice is fine
