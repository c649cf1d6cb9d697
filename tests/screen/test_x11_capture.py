"""X11 capture against a window whose pixels the test knows: pixel-exact, cursor included."""

from __future__ import annotations

import time
from fractions import Fraction

import mss
import numpy as np
import pytest
from Xlib import X
from Xlib.ext import xtest

from apps.pattern_window import cursor_sprite, pattern
from apps.target import PatternApp
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.x11_worker import CursorImage, X11Worker, composite_cursor

pytestmark = [pytest.mark.x11, pytest.mark.pattern_app(seed=7), pytest.mark.x11_worker(listen=False)]


def point_at(person, app: PatternApp, worker: X11Worker, x: int, y: int) -> None:
    """Move the real pointer to client (x, y) and wait until the app has seen it arrive."""
    since = app.mark()
    left, top = worker.client_rect[:2]
    xtest.fake_input(person.conn, X.MotionNotify, x=left + x, y=top + y)
    person.conn.sync()
    if 0 <= x < app.size[1] and 0 <= y < app.size[0]:
        app.wait_for(lambda e: e["type"] == "MouseMotion" and e["pos"] == [x, y], since=since)
    else:
        time.sleep(0.1)


def expected_frame(app: PatternApp, pointer: tuple[int, int] | None) -> np.ndarray:
    """The pattern with the app's cursor sprite copied in where its alpha is 255."""
    frame = pattern(app.size[1], app.size[0], app.seed)
    if pointer is None:
        return frame
    rgba, (hx, hy) = cursor_sprite()
    for row in range(rgba.shape[0]):
        for col in range(rgba.shape[1]):
            y, x = pointer[1] - hy + row, pointer[0] - hx + col
            if rgba[row, col, 3] == 255 and 0 <= y < frame.shape[0] and 0 <= x < frame.shape[1]:
                frame[y, x] = rgba[row, col, :3]
    return frame


@pytest.mark.parametrize("pointer", [(100, 50), (0, 0), (637, 358), (320, 2)])
def test_capture_is_the_drawn_pattern_with_the_cursor(worker, app, person, pointer) -> None:
    point_at(person, app, worker, *pointer)
    capture = worker.capture(CaptureRequest(views=False, full=True))
    assert capture.size == app.size
    assert capture.pointer == pointer
    assert capture.focus is True
    assert capture.frame.dtype == np.uint8 and capture.frame.shape == (*app.size, 3)
    expected = expected_frame(app, pointer)
    assert (expected != pattern(app.size[1], app.size[0], app.seed)).any(), "the cursor must show"
    np.testing.assert_array_equal(capture.frame, expected)


def test_pointer_outside_the_window_leaves_the_pattern_alone(worker, app, person) -> None:
    left, top = worker.client_rect[:2]
    xtest.fake_input(person.conn, X.MotionNotify, x=left - 40, y=top - 30)
    person.conn.sync()
    capture = worker.capture(CaptureRequest(views=False, full=True))
    assert capture.pointer == (0, 0)  # clamped into the client
    np.testing.assert_array_equal(capture.frame, expected_frame(app, None))


def test_the_composite_matches_mss_own_cursor_composite(worker, app, person, server) -> None:
    # mss (with_cursor=True) blends XFixes' image itself; for a binary-alpha cursor the bytes agree.
    point_at(person, app, worker, 200, 100)
    left, top = worker.client_rect[:2]
    ours = worker.capture(CaptureRequest(views=False, full=True)).frame
    with mss.MSS(display=server.display, with_cursor=True) as sct:
        shot = sct.grab({"left": left, "top": top, "width": app.size[1], "height": app.size[0]})
    theirs = np.frombuffer(shot.raw, dtype=np.uint8).reshape(*app.size, 4)[..., 2::-1]
    np.testing.assert_array_equal(ours, theirs)


def test_pointer_image_is_the_apps_sprite(worker, app, person) -> None:
    point_at(person, app, worker, 50, 60)
    rgba, hotspot = worker.pointer_image()
    sprite, sprite_hotspot = cursor_sprite()
    assert hotspot == sprite_hotspot
    np.testing.assert_array_equal(rgba, sprite)


def test_regions_are_native_crops(worker, app, person) -> None:
    point_at(person, app, worker, 600, 300)
    request = CaptureRequest(views=False, regions={"corner": (0, 0, 32, 16), "edge": (630, 350, 10, 10)})
    capture = worker.capture(request)
    expected = expected_frame(app, (600, 300))
    np.testing.assert_array_equal(capture.regions["corner"], expected[0:16, 0:32])
    np.testing.assert_array_equal(capture.regions["edge"], expected[350:360, 630:640])
    assert capture.frame is None and capture.views == {}


@pytest.mark.parametrize("region", [(-1, 0, 4, 4), (0, 0, 641, 4), (636, 356, 5, 5), (0, 0, 0, 3)])
def test_regions_outside_the_client_are_refused(worker, region) -> None:
    with pytest.raises(WorkerError) as error:
        worker.capture(CaptureRequest(views=False, regions={"bad": region}))
    assert error.value.code == "bad_region"


def test_views_are_computed_from_the_exact_frame(worker, app, person) -> None:
    from hoi4_arena.screen.views import compute_views

    point_at(person, app, worker, 123, 234)
    capture = worker.capture(CaptureRequest(views=True, full=True))
    expected = compute_views(expected_frame(app, (123, 234)), (123, 234), worker.layout)
    assert set(capture.views) == set(expected)
    for name, view in expected.items():
        np.testing.assert_array_equal(capture.views[name], view, err_msg=name)


def test_composite_blends_premultiplied_alpha_rounding_half_up() -> None:
    frame = np.full((4, 4, 3), 200, dtype=np.uint8)
    # One pixel each: opaque, transparent, half (premultiplied colour 60 at alpha 128).
    argb = np.zeros((1, 3), dtype=np.uint32)
    argb[0, 0] = 0xFF_0A_14_1E
    argb[0, 1] = 0x00_00_00_00
    argb[0, 2] = (128 << 24) | (60 << 16) | (60 << 8) | 60
    composite_cursor(frame, CursorImage(root_x=11, root_y=21, hotspot=(0, 0), argb=argb), origin=(10, 20))
    assert frame[1, 1].tolist() == [10, 20, 30]
    assert frame[1, 2].tolist() == [200, 200, 200]
    exact = 60 + Fraction(200 * (255 - 128), 255)
    assert frame[1, 3].tolist() == [int(exact + Fraction(1, 2))] * 3
    assert frame[0].tolist() == [[200] * 3] * 4 and frame[2:].tolist() == [[[200] * 3] * 4] * 2


def test_composite_into_the_bgra_grab_equals_the_rgb_composite() -> None:
    # The worker composites into the grab itself (no RGB copy); its RGB bytes are the same and the
    # fourth byte is untouched.
    rng = np.random.default_rng(4)
    rgb = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    bgra = np.concatenate([rgb[..., ::-1], np.full((12, 16, 1), 9, np.uint8)], axis=-1)
    alpha = rng.choice([0, 128, 255], (6, 7)).astype(np.uint32)
    colour = rng.integers(0, 256, (6, 7, 3)).astype(np.uint32) * alpha[..., None] // 255
    argb = (alpha << 24) | (colour[..., 0] << 16) | (colour[..., 1] << 8) | colour[..., 2]
    for root in [(3, 4), (-2, 9), (14, 1)]:
        cursor = CursorImage(*root, hotspot=(1, 2), argb=argb)
        want, got = rgb.copy(), bgra.copy()
        composite_cursor(want, cursor, origin=(0, 0))
        composite_cursor(got, cursor, origin=(0, 0))
        np.testing.assert_array_equal(got[..., 2::-1], want, err_msg=str(root))
        assert (got[..., 3] == 9).all()


def test_composite_clips_at_every_edge() -> None:
    argb = np.full((5, 5), 0xFF_FF_00_00, dtype=np.uint32)
    for root in [(-3, -3), (2, -4), (6, 6), (-10, 2), (100, 100)]:
        frame = np.zeros((8, 8, 3), dtype=np.uint8)
        composite_cursor(frame, CursorImage(*root, hotspot=(1, 1), argb=argb), origin=(0, 0))
        left, top = root[0] - 1, root[1] - 1
        expected = np.zeros((8, 8, 3), dtype=np.uint8)
        expected[max(top, 0) : max(top + 5, 0), max(left, 0) : max(left + 5, 0)] = (255, 0, 0)
        np.testing.assert_array_equal(frame, expected, err_msg=str(root))


def test_cursor_rgba_undoes_premultiplication() -> None:
    argb = np.array([[0xFF_0A_14_1E, 0x00_00_00_00, (128 << 24) | (64 << 16) | (32 << 8) | 0]], np.uint32)
    rgba = CursorImage(0, 0, (0, 0), argb).rgba()
    assert rgba[0, 0].tolist() == [10, 20, 30, 255]
    assert rgba[0, 1].tolist() == [0, 0, 0, 0]
    assert rgba[0, 2].tolist() == [128, 64, 0, 128]
