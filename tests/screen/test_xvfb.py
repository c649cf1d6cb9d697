import os

import pytest
from Xlib import X, display

from hoi4_arena.screen.xvfb import Xvfb

pytestmark = pytest.mark.x11


def test_fixture_display_answers_and_shows_a_window(xdisplay: str) -> None:
    conn = display.Display(xdisplay)
    try:
        screen = conn.screen()
        assert (screen.width_in_pixels, screen.height_in_pixels) == (1920, 1080)
        window = screen.root.create_window(10, 20, 300, 200, 0, screen.root_depth, X.InputOutput)
        window.set_wm_name("hoi4-arena-test")
        window.map()
        conn.sync()
        children = screen.root.query_tree().children
        assert window.id in [child.id for child in children]
        geometry = window.get_geometry()
        assert (geometry.width, geometry.height) == (300, 200)
        assert conn.has_extension("XTEST") and conn.has_extension("XFIXES") and conn.has_extension("RECORD")
    finally:
        conn.close()


def test_two_servers_get_different_displays_and_stop_by_pid() -> None:
    with Xvfb(width=640, height=360) as first, Xvfb(width=640, height=360) as second:
        assert first.display != second.display
        pid = first.pid
    assert first.pid is None and second.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
