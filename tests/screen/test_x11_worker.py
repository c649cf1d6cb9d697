"""The X11 worker around capture and input: finding the window, attach, game_log, telemetry, a window
that goes away and comes back, and bad displays."""

from __future__ import annotations

import time

import numpy as np
import pytest
from Xlib import X

from apps.pattern_window import pattern
from apps.target import PatternApp
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.x11_worker import WindowInfo, X11Worker, find_window

pytestmark = [pytest.mark.x11, pytest.mark.pattern_app(title="Arena Pattern Window")]


def test_find_window_by_pid_title_class_and_part_of_the_title(person, app) -> None:
    for target in (
        app.pid,
        "Arena Pattern Window",
        "arena pattern window",
        "pattern_window.py",
        "Pattern Win",
    ):
        found = find_window(person.conn, target)
        assert found.id == app.window, target
    found = find_window(person.conn, app.pid)
    assert (found.name, found.pid) == ("Arena Pattern Window", app.pid)


def test_exact_names_win_over_partial_ones(person, app, server, tmp_path) -> None:
    with PatternApp(server.display, tmp_path / "second.jsonl", title="Arena Pattern Window 2") as second:
        assert find_window(person.conn, "Arena Pattern Window").id == app.window
        assert find_window(person.conn, "Arena Pattern Window 2").id == second.window
        assert find_window(person.conn, second.pid).id == second.window


def test_unmapped_and_missing_windows_are_not_found(person, app) -> None:
    screen = person.conn.screen()
    hidden = screen.root.create_window(0, 0, 10, 10, 0, screen.root_depth, X.InputOutput)
    hidden.set_wm_name("hidden one")
    person.conn.sync()
    with pytest.raises(WorkerError) as error:
        find_window(person.conn, "hidden one")
    assert error.value.code == "no_window"
    assert "'Arena Pattern Window'" in error.value.message  # it lists what is there
    with pytest.raises(WorkerError):
        find_window(person.conn, 999_999)


def test_attach_reports_the_window_and_layout(server, app) -> None:
    with X11Worker(server.display, window=app.pid, listen=False) as worker:
        info = worker.attach()
    assert info["game"] == "x11" and info["pid"] == app.pid
    assert info["size"] == [640, 360] and info["window"]["id"] == app.window
    assert info["layout"].startswith("views1-g256x448")
    assert info["origin"] == [640, 360]  # SDL centres it on the 1920x1080 screen


def test_bad_display_and_missing_window_are_clear_errors(server, app) -> None:
    with pytest.raises(WorkerError) as error:
        X11Worker(":987", window=app.pid)
    assert error.value.code == "no_display"
    with pytest.raises(WorkerError) as error:
        X11Worker(server.display, window="no such game")
    assert error.value.code == "no_window"


def test_a_window_destroyed_while_attaching_is_a_worker_error(server, app, person, monkeypatch) -> None:
    # A game may replace its window while it starts: the window found is gone before its geometry is read.
    screen = person.conn.screen()
    doomed = screen.root.create_window(0, 0, 10, 10, 0, screen.root_depth, X.InputOutput)
    person.conn.sync()
    stale = WindowInfo(id=doomed.id, name="the game", wm_class=(), pid=None)
    doomed.destroy()
    person.conn.sync()
    monkeypatch.setattr("hoi4_arena.screen.x11_worker.find_window", lambda conn, target: stale)
    with pytest.raises(WorkerError) as error:
        X11Worker(server.display, window="the game", listen=False)
    assert error.value.code == "window" and "went away while attaching" in error.value.message


def test_game_log_tails_complete_lines_and_follows_a_restart(server, app, tmp_path) -> None:
    path = tmp_path / "game.log"
    with X11Worker(server.display, window=app.pid, game_log_path=path, listen=False) as worker:
        assert worker.game_log(0) == ([], 0)  # no file yet
        path.write_bytes(b"ARENA start day=0\nARENA player tag=BLU\nARENA dai")
        lines, offset = worker.game_log(0)
        assert lines == ["ARENA start day=0", "ARENA player tag=BLU"] and offset == 39
        with open(path, "ab") as handle:
            handle.write(b"ly day=1\n")
        assert worker.game_log(offset) == (["ARENA daily day=1"], 57)
        assert worker.game_log(57) == ([], 57)
        path.write_bytes(b"new game\n")  # the game started again and rewrote its log
        assert worker.game_log(57) == (["new game"], 9)
        with pytest.raises(WorkerError):
            worker.game_log(-1)


def test_telemetry_measures_the_game_process(server, app) -> None:
    with X11Worker(server.display, window=app.pid, listen=False) as worker:
        telemetry = worker.telemetry()
    assert telemetry["game"]["pid"] == app.pid and telemetry["game"]["rss_mb"] > 0
    assert telemetry["apply_lateness_ms"]["count"] == 0


def test_a_window_that_goes_away_stops_capture_and_input(server, person, tmp_path) -> None:
    with PatternApp(server.display, tmp_path / "short.jsonl", title="short lived") as short:
        short_window = person.conn.create_resource_object("window", short.window)
        short_window.set_input_focus(X.RevertToParent, X.CurrentTime)
        person.conn.sync()
        worker = X11Worker(server.display, window="short lived")
        try:
            worker.arm("match")
            worker.apply([InputEvent(0, "move", 3, 3), InputEvent(0, "key_down", key=ord("Q"))])
            short.stop()
            with pytest.raises(WorkerError) as error:
                worker.capture(CaptureRequest(views=False))
            assert error.value.code == "window_gone"
            deadline = time.monotonic() + 3
            while not worker.guard.stopped and time.monotonic() < deadline:
                time.sleep(0.01)
            with pytest.raises(WorkerError) as error:
                worker.apply([InputEvent(0, "key_down", key=ord("Q"))])
            assert error.value.code == "stopped"
            assert "window is gone" in worker.status()["stop_reason"]
            assert worker.status()["held"] == []
            keymap = person.conn.query_keymap()
            assert not any(keymap), "the held key was released"
            with pytest.raises(WorkerError) as error:
                worker.attach()  # nothing of that name is there any more
            assert error.value.code == "no_window"
            # The game comes back: attach follows it to its new window, disarmed.
            with PatternApp(server.display, tmp_path / "again.jsonl", title="short lived", seed=5) as again:
                info = worker.attach()
                assert info["window"]["id"] == again.window and info["pid"] == again.pid
                assert worker.status()["armed"] is None
                capture = worker.capture(CaptureRequest(views=False, full=True))
                assert capture.size == (360, 640)
                np.testing.assert_array_equal(capture.frame[200:, 200:], pattern(640, 360, 5)[200:, 200:])
        finally:
            worker.close()
