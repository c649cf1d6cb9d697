"""The simulator's shipped calibration: what the generator makes, and that every template is found on
fresh frames (other presets, seeds, sides and sizes than it was cut from) where the game's state says
the element shows, and refused where it does not -- also after the frames went through the session
video's x264 encoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.players.sim_calibration import Shot, main, tour, truth
from hoi4_arena.players.templates import Calibration, mean_abs_diff, sim_rules
from hoi4_arena.sim.cursor import cursor_sprite
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.rush import Rush


def crops_of(rules: Calibration, frame: np.ndarray) -> dict[str, np.ndarray]:
    names = list(rules.templates)
    regions = rules.regions(names, clock=True, speed=True)
    return {name: frame[y : y + h, x : x + w] for name, (x, y, w, h) in regions.items()}


def pointer_box(pointer: tuple[int, int]) -> tuple[int, int, int, int]:
    sprite, (hx, hy) = cursor_sprite()
    return pointer[0] - hx, pointer[1] - hy, sprite.shape[1], sprite.shape[0]


def check_frame(rules: Calibration, frame: np.ndarray, shown: dict[str, bool], hide, label: str) -> int:
    """Assert every template's match equals what the game shows; returns how many were checked."""
    crops = crops_of(rules, frame)
    checked = 0
    for template in rules.templates.values():
        for region, (x, y, w, h) in template.places():
            hidden = _hidden(hide, (x, y, w, h))
            if hidden * 2 > w * h:
                continue  # the pointer covers most of it: no one can tell
            local = (hide[0] - x, hide[1] - y, hide[2], hide[3])
            distance = mean_abs_diff(crops[region], template.image, local)
            expected = shown.get(region, False)
            assert (distance <= template.threshold) == expected, (
                f"{label}: {region} at distance {distance:.2f} (threshold {template.threshold}), "
                f"shown={expected}"
            )
            checked += 1
    return checked


def _hidden(box, rect) -> int:
    x0, y0 = max(box[0], rect[0]), max(box[1], rect[1])
    x1, y1 = min(box[0] + box[2], rect[0] + rect[2]), min(box[1] + box[3], rect[1] + rect[3])
    return max(0, x1 - x0) * max(0, y1 - y0)


@pytest.mark.parametrize("size", [(540, 960), (1080, 1920)])
def test_the_shipped_calibration_is_what_the_generator_makes(size: tuple[int, int]) -> None:
    assert main(["--size", f"{size[1]}x{size[0]}", "--check"]) == 0


@pytest.mark.parametrize(
    ("preset", "seed", "player", "size"),
    [("river", 7, "RED", (540, 960)), ("ford", 6, "BLU", (540, 960)), ("salient", 5, "RED", (1080, 1920))],
)
def test_every_element_is_found_on_fresh_frames_and_refused_without_it(preset, seed, player, size) -> None:
    rules = sim_rules(size)
    shots: list[Shot] = list(tour(preset, seed, size, player))
    checked = sum(check_frame(rules, s.frame, s.truth, s.pointer_box, s.label) for s in shots)
    assert checked >= len(shots) * len(rules.templates)
    shown = {name for s in shots for name, on in s.truth.items() if on}
    other_flag = "flag_red" if player == "BLU" else "flag_blu"
    assert set(rules.templates) - {other_flag} <= shown  # each element was seen present at least once
    for s in shots:
        assert rules.speed_level(crops_of(rules, s.frame)) == s.speed, s.label


def test_the_clock_moves_while_the_game_runs_and_not_while_it_is_paused() -> None:
    rules = sim_rules((540, 960))
    with SimGame("bay:2", 2, size=(540, 960), news=False, declarer="coin", speed=4) as game:

        def clock() -> np.ndarray:
            return crops_of(rules, game.frame())["clock"].copy()

        before = clock()
        game.advance(200)
        assert not rules.clock.changed(before, clock())  # paused: the date stands still
        game.clock.paused = False
        game.advance(500)  # 6 game hours at speed 4
        assert rules.clock.changed(before, clock())


@pytest.mark.parametrize(("seed", "title"), [(7, "win"), (1, "loss")])
def test_a_real_end_and_stacked_event_windows_are_read(seed: int, title: str) -> None:
    """Games played to their end by the rush plan (not an end panel put up by hand, as the generator
    does), with the event windows left open as they pile up."""
    rules = sim_rules((540, 960))
    with SimGame(
        f"river:{seed}",
        seed,
        size=(540, 960),
        player="RED",
        ai={"BLU": 0.5},
        declarer="coin",
        news=False,
        start_paused=False,
        speed=5,
    ) as game:
        rush, events = Rush("RED"), 0
        while not game.over:
            rush.update(game.world)
            game.advance(1000)
            opened = sum(p.kind == "event" for p in game.ui.popups)
            if opened != events and not game.over:
                events = opened
                check_frame(rules, game.frame(), truth(game), pointer_box(game.pointer), f"{opened} events")
        shown = truth(game)
        assert shown[title] and sum(shown[n] for n in ("win", "loss", "draw")) == 1
        check_frame(rules, game.frame(), shown, pointer_box(game.pointer), "end")
    with SimGame(
        "river:1", 1, size=(540, 960), news=False, declarer="coin", start_paused=False, speed=5, max_days=2
    ) as game:
        while not game.over:
            game.advance(1000)
        assert truth(game)["draw"]
        check_frame(rules, game.frame(), truth(game), pointer_box(game.pointer), "draw")


def test_templates_survive_the_session_video(tmp_path: Path) -> None:
    from hoi4_arena.sessions.video import VideoConfig, VideoEncoder, decode

    rules = sim_rules((540, 960))
    shots = list(tour("marsh", 4, (540, 960), "BLU"))
    encoder = VideoEncoder(tmp_path / "screen.mkv", (540, 960), 5.0, VideoConfig(codec="x264"))
    for index, shot in enumerate(shots):
        encoder.submit(shot.frame, index, wait=True)
    encoder.close()
    decoded = list(decode(tmp_path / "screen.mkv"))
    assert len(decoded) == len(shots)
    for shot, frame in zip(shots, decoded, strict=True):
        assert not np.array_equal(frame, shot.frame) or shot is shots[0]  # lossy, yet:
        check_frame(rules, frame, shot.truth, shot.pointer_box, f"x264: {shot.label}")


def test_a_frame_of_something_else_matches_nothing() -> None:
    rules = sim_rules((540, 960))
    for frame in (
        np.zeros((540, 960, 3), np.uint8),
        np.random.default_rng(0).integers(0, 256, (540, 960, 3), np.uint8),
    ):
        crops = crops_of(rules, frame.astype(np.uint8))
        assert not any(rules.match(name, crops) for name in rules.templates)
        assert rules.speed_level(crops) is None
