"""`hoi4-arena capture` and `hoi4-arena probe` on the X11 game (a pattern window under Xvfb)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner
from Xlib import X
from Xlib.display import Display
from Xlib.ext import xtest

from apps.pattern_window import cursor_sprite, pattern
from apps.target import PatternApp
from hoi4_arena.cli import app as cli_app
from hoi4_arena.errors import UserError
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.probe import open_worker, parse_window, percentiles
from hoi4_arena.screen.views import QUADRANT_NAMES, compute_views

runner = CliRunner()
TITLE = "Probe Pattern"
pytestmark = [pytest.mark.x11, pytest.mark.pattern_app(title=TITLE, width=800, height=450, seed=3)]


def pointer_to(conn: Display, app: PatternApp, x: int, y: int) -> None:
    origin = conn.screen().root.translate_coords(conn.create_resource_object("window", app.window), 0, 0)
    since = app.mark()
    xtest.fake_input(conn, X.MotionNotify, x=origin.x + x, y=origin.y + y)
    conn.sync()
    app.wait_for(lambda e: e["type"] == "MouseMotion" and e["pos"] == [x, y], since=since)


def invoke(args: list[str], display: str) -> dict:
    result = runner.invoke(cli_app, args, env={"DISPLAY": display})
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    return json.loads(result.stdout)


def test_capture_writes_the_frame_and_its_views(server, app, person, tmp_path) -> None:
    pointer_to(person.conn, app, 400, 200)
    out = invoke(
        ["capture", str(tmp_path / "frame.png"), "--views", str(tmp_path / "views"), "--window", TITLE],
        server.display,
    )
    assert out["size"] == [800, 450] and out["pointer"] == [400, 200] and out["focus"] is True
    expected = pattern(800, 450, 3)
    sprite, (hx, hy) = cursor_sprite()
    opaque = sprite[..., 3] == 255
    expected[200 - hy : 200 - hy + 16, 400 - hx : 400 - hx + 16][opaque] = sprite[..., :3][opaque]
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "frame.png")), expected)
    views = compute_views(expected, (400, 200), ViewLayout.named("full"))
    np.testing.assert_array_equal(np.asarray(Image.open(out["views"]["global"])), views["global"])
    np.testing.assert_array_equal(np.asarray(Image.open(out["views"]["fovea"])), views["fovea"])
    for index, name in enumerate(QUADRANT_NAMES):
        saved = np.asarray(Image.open(out["views"][f"quadrant_{name}"]))
        np.testing.assert_array_equal(saved, views["quadrants"][index])


def test_probe_reports_window_focus_and_timings(server, app, person) -> None:
    pointer_to(person.conn, app, 300, 100)
    out = invoke(["probe", "--window", str(app.pid), "--captures", "3", "--layout", "cpu"], server.display)
    assert out["attach"]["size"] == [800, 450] and out["attach"]["pid"] == app.pid
    assert out["attach"]["layout"] == ViewLayout.named("cpu").version
    assert out["status"]["focus"] is True and out["status"]["held"] == []
    assert out["capture_ms"]["views"]["count"] == 3 and out["capture_ms"]["full_frame"]["count"] == 3
    assert out["pointer"] == [300, 100]
    assert out["apply"]["untimed_ms"]["count"] == 20
    assert out["telemetry"]["apply_lateness_ms"]["count"] == 8


def test_probe_applies_nothing_without_focus_or_with_no_apply(server, app, person) -> None:
    pointer_to(person.conn, app, 10, 10)
    out = invoke(["probe", "--window", TITLE, "--captures", "1", "--no-apply"], server.display)
    assert out["apply"] == {"skipped": "--no-apply"}
    person.conn.set_input_focus(X.NONE, X.RevertToParent, X.CurrentTime)
    person.conn.sync()
    out = invoke(["probe", "--window", TITLE, "--captures", "1"], server.display)
    assert out["status"]["focus"] is False
    assert out["apply"] == {"skipped": "the game does not have focus"}
    assert out["telemetry"]["apply_lateness_ms"]["count"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["probe", "--window", "no such game"], "no viewable window"),
        (["probe", "--game", "hoi5"], "unknown game"),
        (["probe", "--captures", "0"], "--captures"),
        (["probe", "--layout", "huge"], "unknown view layout"),
        (["capture", "frame.jpg"], "PNG"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(server, app, args, message) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", *args, "--display", server.display],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_parse_window_and_open_worker_refuse_nonsense(server) -> None:
    assert parse_window("1234") == 1234
    assert parse_window(" Hearts of Iron IV ") == "Hearts of Iron IV"
    assert parse_window(None) == "Hearts of Iron IV"
    with pytest.raises(UserError):
        parse_window("  ")
    with pytest.raises(UserError, match="cannot open X display"):
        open_worker("x11", window="x", display=":9876")


def test_percentiles_use_the_nearest_rank() -> None:
    assert percentiles([]) == {"count": 0, "p50": None, "p99": None, "max": None}
    values = [float(v) for v in range(1, 101)]
    assert percentiles(values) == {"count": 100, "p50": 50.0, "p99": 99.0, "max": 100.0}
    assert percentiles([3.0]) == {"count": 1, "p50": 3.0, "p99": 3.0, "max": 3.0}
