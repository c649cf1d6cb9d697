"""The X11 worker served over the worker protocol from a subprocess's stdio, as a remote client sees it."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np
import pytest
from Xlib import X
from Xlib.display import Display

from apps.pattern_window import cursor_sprite, pattern
from apps.target import PatternApp
from hoi4_arena.screen.events import VK_SHIFT, InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.protocol import spawn_stdio_worker
from hoi4_arena.screen.views import compute_views
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.xvfb import Xvfb

pytestmark = [pytest.mark.x11, pytest.mark.pattern_app(seed=11)]


def spawn(server: Xvfb, app: PatternApp, **kwargs):
    factory_kwargs = {"display": server.display, "window": app.pid, "layout": None, **kwargs}
    argv = [sys.executable, "-m", "hoi4_arena.screen.protocol", "hoi4_arena.screen.x11_worker:X11Worker"]
    argv += ["--kwargs", json.dumps(factory_kwargs)]
    return spawn_stdio_worker(argv, env={**os.environ, "DISPLAY": server.display})


def held(conn: Display) -> bool:
    return any(conn.query_keymap()) or bool(conn.screen().root.query_pointer().mask & X.Button1Mask)


def test_a_client_captures_and_applies_through_a_subprocess(server, app, person) -> None:
    client = spawn(server, app)
    try:
        info = client.attach()
        assert info["game"] == "x11" and info["pid"] == app.pid and info["protocol"] == 1
        client.arm("match")
        since = app.mark()
        client.apply([InputEvent(0, "move", 222, 111), InputEvent(0, "button_down", 222, 111, button="left")])
        client.apply([InputEvent(0, "button_up", 222, 111, button="left")])
        app.wait_for(lambda e: e["type"] == "MouseButtonUp" and e["pos"] == [222, 111], since=since)
        capture = client.capture(CaptureRequest(views=True, full=True))
        assert capture.pointer == (222, 111) and capture.focus
        expected = pattern(640, 360, 11)
        sprite, (hx, hy) = cursor_sprite()
        opaque = sprite[..., 3] == 255
        expected[111 - hy : 111 - hy + 16, 222 - hx : 222 - hx + 16][opaque] = sprite[..., :3][opaque]
        np.testing.assert_array_equal(capture.frame, expected)
        views = compute_views(expected, (222, 111), ViewLayout.named("full"))
        for name, view in views.items():
            np.testing.assert_array_equal(capture.views[name], view, err_msg=name)
        with pytest.raises(WorkerError) as error:  # refusals cross the wire with their code
            client.apply([InputEvent(0, "key_down", key=0x20)])
        assert error.value.code == "forbidden_key"
    finally:
        client.close()
    assert client.process.returncode == 0


def test_a_client_that_disconnects_leaves_nothing_held(server, app, person) -> None:
    client = spawn(server, app)
    client.attach()
    client.arm("match")
    client.apply(
        [
            InputEvent(0, "move", 30, 40),
            InputEvent(0, "key_down", key=VK_SHIFT),
            InputEvent(0, "button_down", 30, 40, button="left"),
        ]
    )
    assert held(person.conn)
    # The client dies without a word: its end of the pipes closes.
    client.process.stdin.close()
    deadline = time.monotonic() + 5
    while held(person.conn) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not held(person.conn)
    assert client.process.wait(timeout=10) == 0
    client.process.stdout.close()


def test_a_timed_apply_over_the_wire_keeps_its_slots(server, app, person) -> None:
    client = spawn(server, app)
    try:
        client.attach()
        client.arm("match")
        since = app.mark()
        t0 = client.now_ns() + 40_000_000
        slots = [InputEvent(t0 + slot * 25_000_000, "move", 100 + slot, 50) for slot in range(8)]
        assert client.apply(slots, timed=True) == {"queued": 8}
        client.capture(CaptureRequest(views=True))  # a capture while the batch is under way
        client.wait_until(t0 + 8 * 25_000_000)
        app.wait_for(lambda e: e["type"] == "MouseMotion" and e["pos"] == [107, 50], since=since)
        lateness = client.telemetry()["apply_lateness_ms"]
        assert lateness["count"] == 8 and lateness["p50"] >= 0
    finally:
        client.close()


def test_a_killed_worker_leaves_nothing_held(server, app, person) -> None:
    # SIGKILL gives the worker no chance to release; its guardian process does it.
    client = spawn(server, app)
    client.attach()
    client.arm("setup")
    client.apply(
        [
            InputEvent(0, "move", 60, 70),
            InputEvent(0, "key_down", key=VK_SHIFT),
            InputEvent(0, "key_down", key=0x20),
            InputEvent(0, "button_down", 60, 70, button="left"),
        ]
    )
    assert held(person.conn)
    client.process.send_signal(signal.SIGKILL)
    client.process.wait(timeout=10)
    deadline = time.monotonic() + 5
    while held(person.conn) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not held(person.conn)
    for stream in (client.process.stdin, client.process.stdout):
        stream.close()


def test_the_guardian_releases_its_last_report(server, person) -> None:
    from Xlib import XK
    from Xlib.ext import xtest

    from hoi4_arena.screen.x11_input import guard_until_eof

    a = person.conn.keysym_to_keycode(XK.XK_a)
    b = person.conn.keysym_to_keycode(XK.XK_b)
    xtest.fake_input(person.conn, X.KeyPress, a)
    xtest.fake_input(person.conn, X.KeyPress, b)
    person.conn.sync()
    reports = [
        json.dumps({"keys": [a, b], "buttons": []}).encode(),
        json.dumps({"keys": [b], "buttons": []}).encode(),
    ]
    assert guard_until_eof(server.display, reports) == {"keys": [b], "buttons": []}
    keymap = person.conn.query_keymap()
    assert keymap[b // 8] >> (b % 8) & 1 == 0, "the last report's key was released"
    assert keymap[a // 8] >> (a % 8) & 1 == 1, "a key no longer reported is left to its owner"
    xtest.fake_input(person.conn, X.KeyRelease, a)
    person.conn.sync()


def test_the_guardian_process_imports_no_numpy() -> None:
    """The guardian starts beside every X11 worker: its module stays light (Xlib and the event tables)."""
    import subprocess

    code = "import sys, hoi4_arena.screen.x11_input; print(sorted({'numpy', 'torch'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
