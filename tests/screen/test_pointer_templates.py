"""Pointer templates cut from a recording (`cut_pointer`, `pointer --from-session`) and found again: the
marker game's cursor, a 5-pixel cross of 1-pixel lines, wherever it sits on the pixel grid, and the
simulator's arrow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.screen.pointer_templates import PointerFinder, cut_pointer, load_templates
from hoi4_arena.sessions.session_pointer import save_session_pointer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from marker_game import _background, _draw, write_marker_session  # noqa: E402

CROSS = np.zeros((5, 5), bool)
CROSS[2, :] = CROSS[:, 2] = True


def test_pointer_from_session_cuts_the_cross_the_recording_draws(tmp_path) -> None:
    write_marker_session(tmp_path / "s", seed=3, frames=60)
    result = CliRunner().invoke(app, ["pointer", str(tmp_path / "p"), "--from-session", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == "pointer-0.png"
    (template,) = load_templates(tmp_path / "p")
    assert template.hotspot == (2, 2) and np.array_equal(template.opaque, CROSS)
    assert tuple(template.rgba[2, 2, :3]) == (10, 10, 10) and tuple(template.rgba[0, 2, :3]) == (250,) * 3
    again = CliRunner().invoke(app, ["pointer", str(tmp_path / "p"), "--from-session", str(tmp_path / "s")])
    assert json.loads(again.stdout)["added"] is None  # the same sprite is not added twice


def test_a_cross_is_found_at_every_parity_of_the_pixel_grid(tmp_path) -> None:
    write_marker_session(tmp_path / "s", seed=3, frames=60)
    save_session_pointer(tmp_path / "s", tmp_path / "p")
    templates = load_templates(tmp_path / "p")
    background = _background()
    for place in ((100, 60), (101, 60), (100, 61), (101, 61), (317, 177)):
        found = PointerFinder(templates).find(_draw(background, (40, 40), place))  # a fresh search
        assert found is not None and (found.x, found.y) == place and found.confidence == 1.0


def test_a_recording_without_a_cursor_is_refused() -> None:
    rng = np.random.default_rng(0)
    frames = [(rng.integers(0, 255, (180, 320, 3), dtype=np.uint8), (40 + 30 * i, 90)) for i in range(8)]
    with pytest.raises(UserError, match="does not seem to draw the cursor"):
        cut_pointer(frames)
    with pytest.raises(UserError, match="only 1 distinct places"):
        cut_pointer([(frames[0][0], (80, 90))] * 5)


def test_from_session_refuses_worker_options(tmp_path) -> None:
    result = CliRunner().invoke(app, ["pointer", str(tmp_path / "p"), "--from-session", "s", "--window", "x"])
    assert isinstance(result.exception, UserError) and "--window: not with --from-session" in str(
        result.exception
    )


def test_the_simulators_arrow_cut_from_its_frames_is_its_sprite() -> None:
    """Outline and fill over a map, the hotspot at the tip: the sprite `pointer --game sim` saves, less
    its see-through margin."""
    from hoi4_arena.screen.sim_worker import SimWorker
    from hoi4_arena.sim.cursor import draw_pointer

    worker = SimWorker(arena="plains", seed=0, size=(360, 640))
    base = worker.game.renderer.rgb(worker.game.ui)
    rng = np.random.default_rng(0)
    samples = []
    for _ in range(24):
        place = (int(rng.integers(0, 640)), int(rng.integers(0, 360)))
        frame = base.copy()
        draw_pointer(frame, place)
        samples.append((frame, place))
    rgba, hotspot = cut_pointer(samples)
    sprite, sprite_hotspot = worker.pointer_image()
    ys, xs = np.nonzero(sprite[..., 3] >= 128)
    sprite = sprite[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    assert hotspot == (sprite_hotspot[0] - xs.min(), sprite_hotspot[1] - ys.min())
    assert np.array_equal(rgba[..., 3] >= 128, sprite[..., 3] >= 128)
    opaque = sprite[..., 3] >= 128
    assert np.array_equal(rgba[opaque, :3], sprite[opaque, :3])


def test_the_arrow_is_found_over_a_gradient_that_holds_its_fill_colour_everywhere() -> None:
    """A scrolling gradient holds every colour somewhere: boxes are proposed where both the fill's and the
    outline's colours are (the fill alone proposed gradient bands and the arrow went unfound)."""
    from hoi4_arena.screen.pointer_templates import PointerTemplate
    from hoi4_arena.sim.cursor import cursor_sprite, draw_pointer

    rgba, hotspot = cursor_sprite()
    finder = PointerFinder([PointerTemplate(np.ascontiguousarray(rgba), tuple(hotspot), "sim", "arrow")])
    height, width = 1080, 1920  # a full screen: more of the gradient's bands than candidate boxes
    y, x = np.arange(height)[:, None], np.arange(width)[None, :]
    for i, place in enumerate([(200, 150), (1517, 41), (33, 900), (1330, 590)]):
        frame = np.empty((height, width, 3), np.uint8)
        frame[..., 0], frame[..., 1] = (x + 4 * i) % 256, (y + 2 * i) % 256
        frame[..., 2] = ((x + y) // 8 + i) % 256
        draw_pointer(frame, place)
        found = finder.find(frame)
        assert found is not None and (found.x, found.y) == place and found.confidence > 0.95, (place, found)


def _loop_scores(frame, template, x0, y0, x1, y1):
    """The scores written the plain way: every position, every opaque pixel inside the frame."""
    th, tw = template.rgba.shape[:2]
    height, width = frame.shape[:2]
    x0, y0, x1, y1 = max(x0, 1 - tw), max(y0, 1 - th), min(x1, width), min(y1, height)
    ys, xs = np.nonzero(template.opaque)
    scores = np.full((y1 - y0, x1 - x0), np.inf)
    for y in range(y0, y1):
        for x in range(x0, x1):
            fy, fx = ys + y, xs + x
            keep = (fy >= 0) & (fy < height) & (fx >= 0) & (fx < width)
            if keep.sum() * 6 < len(ys):
                continue
            diff = np.abs(
                frame[fy[keep], fx[keep]].astype(int) - template.rgba[ys[keep], xs[keep], :3].astype(int)
            )
            scores[y - y0, x - x0] = diff.sum() / (keep.sum() * 3)
    return scores, x0, y0


def test_box_scores_equal_the_plain_sum_over_the_sprites_pixels_at_the_frames_edges_too() -> None:
    from hoi4_arena.screen.pointer_templates import PointerTemplate, _box_scores

    rng = np.random.default_rng(3)
    frame = rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)
    for colours in (2, 40):  # a drawn sprite of two colours, and one cut from lossy video
        rgba = np.zeros((9, 7, 4), np.uint8)
        rgba[..., :3] = rng.integers(0, colours, (9, 7, 1)) * (255 // colours)
        rgba[..., 3] = np.where(rng.random((9, 7)) < 0.6, 255, 0)
        template = PointerTemplate(rgba, (1, 1))
        for box in ((-10, -12, 14, 9), (20, 15, 60, 45), (0, 0, 56, 40)):
            fast, fx, fy = _box_scores(frame, template, *box)
            slow, sx, sy = _loop_scores(frame, template, *box)
            assert (fx, fy) == (sx, sy)
            assert fast.shape == slow.shape
            assert np.array_equal(np.isinf(fast), np.isinf(slow))
            finite = np.isfinite(slow)
            assert np.allclose(fast[finite], slow[finite], rtol=0, atol=1e-9)
