"""`hoi4-arena record` on a real X display: a private Xvfb, the test target window, and a "person" on a
second X connection whose XTest input the recorder's XRecord listener hears like a keyboard's and a
mouse's. Every test runs the real command in a subprocess and checks the session it leaves."""

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
from Xlib import X
from Xlib.display import Display
from Xlib.ext import xtest

from apps.pattern_window import cursor_sprite, pattern
from apps.target import PatternApp
from hoi4_arena.gamelog import SCHEMA_VERSION, format_line
from hoi4_arena.screen.events import VK_SHIFT, InputEvent
from hoi4_arena.screen.tokens import kind_of
from hoi4_arena.screen.worker import WorkerError
from hoi4_arena.screen.x11_worker import find_window
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.format import LOCK, JsonLines
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.salvage import salvage
from hoi4_arena.sessions.video import count_decodable

TITLE = "Recorder Target"
WIDTH, HEIGHT = 320, 180
VK_A, VK_B = ord("A"), ord("B")
MS = 1_000_000
pytestmark = [pytest.mark.x11, pytest.mark.pattern_app(width=WIDTH, height=HEIGHT, seed=5, title=TITLE)]


def start_record(
    folder: Path, display: str, *options: str, seconds: float = 3.0, window: str = TITLE
) -> subprocess.Popen:
    """`hoi4-arena record` in a subprocess, returned once its first frame is on disk."""
    command = [sys.executable, "-m", "hoi4_arena.cli", "record", str(folder), "--game-speed", "4"]
    command += ["--hz", "10", "--window", window, "--display", display, "--codec", "ffv1"]
    command += ["--seconds", str(seconds), *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_frames(folder, 1, process)
    return process


def frame_lines(folder: Path) -> int:
    path = folder / "frames.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_frames(folder: Path, count: int, process: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while frame_lines(folder) < count:
        if process.poll() is not None:
            raise AssertionError(f"record exited with {process.returncode}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"no {count} frames within {timeout} s")
        time.sleep(0.02)


def finish(process: subprocess.Popen, timeout: float = 30.0) -> tuple[int, dict, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    summary = json.loads(out) if out.strip() else {}
    return process.returncode, summary, err


def arena(kind: str, /, **fields) -> str:
    return format_line(kind, date="1936.01.01.00", h=0, **fields)


def stored_inputs(folder: Path) -> list[InputEvent]:
    return [InputEvent.from_dict(d) for d in JsonLines.read(folder / "inputs.jsonl").records()]


def test_a_persons_play_is_recorded_with_real_timestamps(server, app, person, tmp_path: Path) -> None:
    game_log = tmp_path / "game.log"
    game_log.write_text(
        "[game] loading\n"
        + arena("start", arena="river", seed=3, tags=["BLU", "RED"], version=SCHEMA_VERSION)
        + "\n"
        + arena("player", tag="BLU", kind="human")
        + "\n"
        + arena("player", tag="RED", kind="ai")
        + "\n"
    )
    folder = tmp_path / "s"
    process = start_record(folder, server.display, "--game-log", str(game_log))
    wait_for_frames(folder, 3, process)
    done = {"move": person.move(100, 60)}
    time.sleep(0.15)
    done["click"] = person.click(1)
    time.sleep(0.15)
    done["a"] = person.tap("a")
    time.sleep(0.15)
    shift_down = person.key("Shift_L", True)
    b = person.tap("b")
    shift_up = person.key("Shift_L", False)
    done["shift+b"] = (shift_down[0], shift_up[1])
    with game_log.open("a") as handle:
        handle.write(arena("declare", attacker="RED", defender="BLU") + "\n")
    rc, summary, err = finish(process)

    assert rc == 0, err
    assert summary["ended"]["reason"] == "seconds" and summary["failed"] is False
    assert summary["check"]["verdict"] == "ok"
    assert check_session(folder)["verdict"] == "ok"
    # 3 s at 10 Hz: every tick is a frame or a counted drop; a busy machine (parallel test workers) drops a
    # few, and a recorder that lost its pace entirely would keep far fewer.
    assert summary["frames"] + summary["dropped_total"] == 30 and summary["frames"] >= 20
    assert (summary["arena"], summary["declarer"], summary["side"]) == ("river", "RED", "BLU")
    assert summary["players"] == {"BLU": "human", "RED": "ai"} and summary["winner"] is None

    inputs = stored_inputs(folder)
    assert all(e.source == "human" for e in inputs)
    expected = {
        "move": [("move", 100, 60, "", 0)],
        "click": [("button_down", 100, 60, "left", 0), ("button_up", 100, 60, "left", 0)],
        "a": [("key_down", 100, 60, "", VK_A), ("key_up", 100, 60, "", VK_A)],
        "shift+b": [
            ("key_down", 100, 60, "", VK_SHIFT),
            ("key_down", 100, 60, "", VK_B),
            ("key_up", 100, 60, "", VK_B),
            ("key_up", 100, 60, "", VK_SHIFT),
        ],
    }
    assert [(e.kind, e.x, e.y, e.button, e.key) for e in inputs] == [
        a for acts in expected.values() for a in acts
    ]
    # Each event's timestamp is the server's (XRecord), on the frames' clock: inside the interval in
    # which the person sent it, to the millisecond (plus the clock calibration's rounding).
    position = 0
    for action, (before, after) in done.items():
        for event in inputs[position : position + len(expected[action])]:
            assert before - 2 * MS <= event.t_ns <= after + 2 * MS, (action, event)
        position += len(expected[action])
    assert b[0] - 2 * MS <= inputs[-3].t_ns and inputs[-2].t_ns <= b[1] + 2 * MS

    reader = SessionReader(folder)
    manifest = reader.manifest
    assert (manifest.game, manifest.game_speed, manifest.screen, manifest.source) == (
        "sim",
        4,
        (320, 180),
        "human",
    )
    assert manifest.extra["worker"]["window"]["name"] == TITLE
    decisions = list(reader.decisions())
    if summary["dropped_total"] == 0:
        assert len(decisions) == 15  # 3 s of 200 ms decisions, anchored on every second frame
    for event in inputs:  # an input at t lands in the decision that covers t
        covering = [
            d
            for d, after in zip(decisions, decisions[1:] + [None], strict=True)
            if d.t_ns <= event.t_ns and (after is None or event.t_ns < after.t_ns)
        ]
        assert len(covering) == 1 and event in covering[0].events, event
        if event.kind == "button_down":
            assert kind_of(event) in covering[0].tokens[:, 0]
    # The frames are the window's pixels with the cursor drawn where frames.jsonl says it was.
    screen = pattern(WIDTH, HEIGHT, 5)
    sprite, (hx, hy) = cursor_sprite()
    opaque = sprite[..., 3] == 255
    for record, image in reader.frames():
        expected_image = screen.copy()
        x, y = record.pointer_px
        canvas = np.zeros((HEIGHT + 32, WIDTH + 32, 3), np.uint8)
        canvas[16 : 16 + HEIGHT, 16 : 16 + WIDTH] = expected_image
        patch = canvas[16 + y - hy : 32 + y - hy, 16 + x - hx : 32 + x - hx]
        patch[opaque] = sprite[..., :3][opaque]
        np.testing.assert_array_equal(image, canvas[16 : 16 + HEIGHT, 16 : 16 + WIDTH])
    # The declaration was read during the recording, at a frame after the first.
    log_records = JsonLines.read(folder / "arena-log.jsonl").records()
    assert [r["frame"] for r in log_records[:3]] == [0, 0, 0] and log_records[3]["frame"] > 0


def test_focus_loss_pauses_the_recording_and_focus_back_resumes_it(
    server, app, person, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    other = person.other_window(WIDTH + 100, 100)
    process = start_record(folder, server.display, seconds=4.0)
    wait_for_frames(folder, 5, process)
    person.move(20, 20)
    time.sleep(0.2)
    person.focus(other)
    paused_at = frame_lines(folder)
    time.sleep(0.6)
    during = person.move(77, 33)  # inside the window, but the game has no focus: not kept
    person.tap("a")  # not even heard: keys count only while the game has focus
    time.sleep(0.3)
    assert frame_lines(folder) <= paused_at + 1  # nothing recorded while paused
    person.focus(app.window)
    wait_for_frames(folder, frame_lines(folder) + 2, process)  # recording again
    after = person.move(150, 90)
    rc, summary, err = finish(process)

    assert rc == 0, err
    assert summary["check"]["verdict"] == "ok" and summary["focus_pauses"] == 1 and summary["paused_s"] > 0.5
    manifest = SessionReader(folder).manifest
    (pause,) = manifest.focus_pauses
    assert pause["start_ns"] < during[0] and during[1] < pause["end_ns"] < after[0]
    times = [r["t_ns"] for r in JsonLines.read(folder / "frames.jsonl").records()]
    assert not [t for t in times if pause["start_ns"] <= t < pause["end_ns"]]
    assert any(t < pause["start_ns"] for t in times) and any(t >= pause["end_ns"] for t in times)
    moves = [(e.x, e.y) for e in stored_inputs(folder)]
    assert moves == [(20, 20), (150, 90)]


def test_f12_from_the_person_stops_the_recording(server, app, person, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    process = start_record(folder, server.display, seconds=60.0)
    wait_for_frames(folder, 3, process)
    person.tap("F12")
    rc, summary, err = finish(process)
    assert rc == 0, err
    assert summary["ended"]["reason"] == "f12" and summary["check"]["verdict"] == "ok"
    assert summary["frames"] < 100  # far from the 600 of --seconds 60
    assert stored_inputs(folder) == []  # F12 is the worker's stop key, never an input


def test_the_winner_line_ends_the_recording_after_the_grace(server, app, person, tmp_path: Path) -> None:
    game_log = tmp_path / "game.log"
    game_log.write_text(
        arena("start", arena="plains", seed=0, tags=["BLU", "RED"], version=SCHEMA_VERSION) + "\n"
    )
    folder = tmp_path / "s"
    process = start_record(
        folder,
        server.display,
        "--game-log",
        str(game_log),
        "--side",
        "RED",
        "--after-winner",
        "0.5",
        seconds=60.0,
    )
    wait_for_frames(folder, 3, process)
    with game_log.open("a") as handle:
        handle.write(arena("declare", attacker="BLU", defender="RED") + "\n")
        handle.write(arena("capitulated", loser="BLU", winner="RED", surrender=1.0) + "\n")
    rc, summary, err = finish(process)
    assert rc == 0, err
    assert summary["ended"]["reason"] == "winner" and summary["check"]["verdict"] == "ok"
    assert (summary["winner"], summary["declarer"], summary["side"]) == ("RED", "BLU", "RED")
    assert summary["players"] == {"RED": "human"}
    read_at = JsonLines.read(folder / "arena-log.jsonl").records()[-1]["frame"]
    times = [r["t_ns"] for r in JsonLines.read(folder / "frames.jsonl").records()]
    # The recording ends on the first tick half a second after the line was read, and the frame
    # before the one the line is stored with was captured before it was read.
    assert times[-1] - times[read_at - 1] >= 500 * MS


@pytest.mark.parametrize(("signum", "reason"), [(signal.SIGINT, "interrupt"), (signal.SIGTERM, "terminated")])
def test_a_signal_ends_the_recording_with_a_complete_session(
    server, app, person, tmp_path: Path, signum: int, reason: str
) -> None:
    folder = tmp_path / "s"
    process = start_record(folder, server.display, seconds=60.0)
    wait_for_frames(folder, 5, process)
    person.move(30, 40)
    time.sleep(0.2)
    process.send_signal(signum)
    rc, summary, err = finish(process)
    assert rc == 0, err
    assert summary["ended"]["reason"] == reason and summary["failed"] is False
    assert "Traceback" not in err
    manifest = SessionReader(folder).manifest
    assert manifest.complete and manifest.ended["reason"] == reason and manifest.frames == summary["frames"]
    assert not (folder / LOCK).exists()
    assert check_session(folder)["verdict"] == "ok"
    assert [(e.kind, e.x, e.y) for e in stored_inputs(folder)] == [("move", 30, 40)]


def test_a_killed_recorder_leaves_a_session_that_salvage_completes(
    server, app, person, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    process = start_record(folder, server.display, seconds=60.0)
    wait_for_frames(folder, 8, process)
    person.move(60, 70)
    person.click(1)
    acted_at = frame_lines(folder)
    deadline = time.monotonic() + 20
    while count_decodable(folder / "screen.mkv") < acted_at + 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the video itself holds frames captured after the click
    process.send_signal(signal.SIGKILL)
    finish(process)
    assert (folder / LOCK).exists()
    assert check_session(folder)["verdict"] == "incomplete"

    result = salvage(folder)
    assert result["changed"] is True
    report = check_session(folder)
    assert report["verdict"] == "ok", report
    reader = SessionReader(folder)
    assert reader.manifest.ended["reason"] == "salvaged" and reader.manifest.frames >= 8
    assert [(e.kind, e.x, e.y) for e in stored_inputs(folder)] == [
        ("move", 60, 70),
        ("button_down", 60, 70),
        ("button_up", 60, 70),
    ]
    assert sum(1 for _ in reader.frames()) == reader.manifest.frames


def test_a_window_that_is_not_there_is_a_clear_error(server, app, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    command = [sys.executable, "-m", "hoi4_arena.cli", "record", str(folder), "--game-speed", "4"]
    command += ["--window", "No Such Game", "--display", server.display, "--seconds", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no viewable window" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == "" and not folder.exists()


def test_the_game_closing_ends_the_recording_and_keeps_it(server, tmp_path: Path) -> None:
    title = "Recorder Closing Target"
    with PatternApp(
        server.display, tmp_path / "events.jsonl", width=WIDTH, height=HEIGHT, title=title
    ) as game:
        conn = Display(server.display)
        conn.create_resource_object("window", game.window).set_input_focus(X.RevertToParent, X.CurrentTime)
        conn.sync()
        conn.close()
        folder = tmp_path / "s"
        process = start_record(folder, server.display, seconds=60.0, window=title)
        wait_for_frames(folder, 5, process)
        game.stop()
        rc, summary, err = finish(process)
    assert rc == 0, err
    assert summary["ended"]["reason"] == "window_gone" and summary["check"]["verdict"] == "ok"
    assert summary["frames"] >= 5


def test_a_session_of_the_simulators_window(server, tmp_path: Path) -> None:
    """The real target: `hoi4-arena sim` in a window, its ARENA log tailed, a person's clicks heard."""
    userdir = tmp_path / "user"
    env = {**os.environ, "DISPLAY": server.display, "SDL_VIDEODRIVER": "x11", "SDL_AUDIODRIVER": "dummy"}
    command = [sys.executable, "-m", "hoi4_arena.cli", "sim", "--size", "640x360", "--preset", "river:3"]
    command += ["--declarer", "RED", "--no-news", "--speed", "5", "--userdir", str(userdir)]
    game = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    conn = Display(server.display)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                window = find_window(conn, "hoi4-arena sim")
                break
            except WorkerError:
                assert game.poll() is None and time.monotonic() < deadline, "the sim window never appeared"
                time.sleep(0.1)
        conn.create_resource_object("window", window.id).set_input_focus(X.RevertToParent, X.CurrentTime)
        conn.sync()
        folder = tmp_path / "s"
        game_log = userdir / "logs" / "game.log"
        process = start_record(
            folder, server.display, "--game-log", str(game_log), seconds=3.0, window="hoi4-arena sim"
        )
        wait_for_frames(folder, 5, process)
        origin = conn.screen().root.translate_coords(conn.create_resource_object("window", window.id), 0, 0)
        xtest.fake_input(conn, X.MotionNotify, x=origin.x + 320, y=origin.y + 200)
        xtest.fake_input(conn, X.ButtonPress, 3)
        xtest.fake_input(conn, X.ButtonRelease, 3)
        conn.sync()
        rc, summary, err = finish(process)
    finally:
        conn.close()
        game.terminate()
        game.wait(timeout=10)
    assert rc == 0, err
    assert summary["check"]["verdict"] == "ok" and summary["screen"] == [640, 360]
    assert (summary["arena"], summary["declarer"], summary["side"]) == ("river", "RED", "BLU")
    assert summary["players"] == {"BLU": "human", "RED": "ai"} and summary["log_lines"] > 4
    assert [(e.kind, e.x, e.y, e.button) for e in stored_inputs(folder)] == [
        ("move", 320, 200, ""),
        ("button_down", 320, 200, "right"),
        ("button_up", 320, 200, "right"),
    ]
    decisions = list(SessionReader(folder).decisions())
    assert decisions[-1].arena.attacker == "RED" and decisions[-1].arena.arena == "river"
