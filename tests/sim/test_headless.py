"""The headless game handle: construction, virtual time, frames, the log, determinism, and the whole
opening played with raw events only."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.sim.clock import GameClock
from hoi4_arena.sim.cursor import cursor_sprite
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click, press
from hoi4_arena.sim.opening import opening


def test_a_scripted_sequence_of_raw_events_captures_a_province(plains, tmp_path) -> None:
    # No world order: only the screen's events, as the scripted player will send them.
    with SimGame(plains, 0, ai={"RED": 0.5}, userdir=tmp_path) as game:
        labels = []
        for label, events in opening(game):
            assert game.feed(events) == len(events)
            labels.append(label)
        assert labels == [
            "close the news",
            "declare war",
            "form an army",
            "assign the front",
            "draw the offensive",
            "execute",
            "run at speed 5",
        ]
        army = game.world.armies[game.ui.army]
        target = army.plan[-1]
        assert army.executing and army.front == "RED" and game.world.at_war
        for _ in range(5 * 24 * 10):
            game.advance(200)
            if game.world.controller(target) == "BLU":
                break
        assert game.world.controller(target) == "BLU"
    text = (tmp_path / "logs" / "game.log").read_text()
    assert "ARENA control" in text and f"province={target} from=RED to=BLU" in text


def script(game: SimGame) -> list[str]:
    """Play the opening and a few days with the pointer wandering; hash every frame."""
    hashes = [hashlib.sha256(game.frame().tobytes()).hexdigest()]
    for _, events in opening(game):
        game.feed(events)
        hashes.append(hashlib.sha256(game.frame().tobytes()).hexdigest())
    for i in range(40):
        game.feed([SimEvent("move", 100 + 17 * i, 80 + 9 * i)])
        game.advance(200 + i)
        hashes.append(hashlib.sha256(game.frame().tobytes()).hexdigest())
    return hashes


def test_same_seed_and_events_give_the_same_frames_byte_for_byte(plains) -> None:
    with SimGame(plains, 3, ai={"RED": 0.8}) as first, SimGame(plains, 3, ai={"RED": 0.8}) as second:
        a, b = script(first), script(second)
        assert first.world.hour > 24  # the world really ran
        assert first.log(0) == second.log(0)
    assert a == b
    assert len(set(a)) > 20  # and the frames really changed along the way


def test_frame_is_rgb_with_the_pointer_drawn(plains) -> None:
    with SimGame(plains, 0, ai={}, news=False, events=False) as game:
        game.feed([SimEvent("move", 300, 200)])
        frame = game.frame()
        assert frame.shape == (540, 960, 3) and frame.dtype == np.uint8
        scene = game.renderer.rgb(game.ui)
        rgba, (hx, hy) = game.cursor
        h, w = rgba.shape[:2]
        region = frame[200 - hy : 200 - hy + h, 300 - hx : 300 - hx + w]
        opaque = rgba[:, :, 3] == 255
        assert (region[opaque] == rgba[:, :, :3][opaque]).all()
        assert (region[~opaque] == scene[200 - hy : 200 - hy + h, 300 - hx : 300 - hx + w][~opaque]).all()
        assert (frame[:190] == scene[:190]).all()  # nothing else differs from the pointer-free scene
        assert game.pointer == (300, 200) and game.focus is True
        game.feed([SimEvent("move", 959, 539)])  # at the corner the sprite is clipped, not an error
        assert game.frame().shape == (540, 960, 3)


def test_cursor_sprite_has_binary_alpha() -> None:
    rgba, hotspot = cursor_sprite()
    assert rgba.shape == (24, 16, 4) and rgba.dtype == np.uint8
    assert set(np.unique(rgba[:, :, 3]).tolist()) == {0, 255}
    assert rgba[hotspot[1], hotspot[0], 3] == 255  # the tip is drawn


def test_log_offsets_are_the_files_byte_offsets(plains, tmp_path) -> None:
    with SimGame(plains, 0, ai={"RED": 0.5}, declarer="BLU", userdir=tmp_path, start_paused=False) as game:
        first, offset = game.log(0)
        assert first[0].startswith("ARENA start") and any("ARENA declare" in line for line in first)
        game.advance(10_000)
        more, end = game.log(offset)
        assert more and game.log(end) == ([], end)
        raw = (tmp_path / "logs" / "game.log").read_bytes()
        assert len(raw) == end and raw[offset:].decode().splitlines() == more
        assert raw[:offset].decode().splitlines() == first
        for bad in (-1, offset + 1, end + 5, 1.5):
            with pytest.raises(ValueError):
                game.log(bad)


def test_a_new_game_starts_a_new_log(plains, tmp_path) -> None:
    with SimGame(plains, 0, userdir=tmp_path, start_paused=False, speed=5) as game:
        game.advance(3000)
    with SimGame(plains, 0, userdir=tmp_path) as game:
        text = (tmp_path / "logs" / "game.log").read_text()
        assert text.count("ARENA start") == 1 and game.log(0)[1] == len(text.encode())


def test_state_has_the_world_and_the_interface(plains) -> None:
    with SimGame(plains, 0, ai={"RED": 0.5}) as game:
        state = game.state()
        assert state["hour"] == 0 and len(state["divisions"]) == 48
        ui = state["ui"]
        assert ui["paused"] and ui["speed"] == 3 and ui["player"] == "BLU" and ui["ais"] == ["RED"]
        assert [p["kind"] for p in ui["popups"]] == ["news"] and ui["tool"] is None


def test_the_ai_plays_its_side(plains) -> None:
    with SimGame(plains, 0, ai={"RED": 1.0}, declarer="RED", start_paused=False, speed=5) as game:
        game.advance(3000)
        assert game.world.armies_of("RED") and not game.world.armies_of("BLU")
        assert any(a.front == "BLU" for a in game.world.armies_of("RED"))


def test_ai_versus_ai_while_the_player_watches(plains) -> None:
    with SimGame(
        plains, 0, ai={"BLU": 0.5, "RED": 0.5}, declarer="coin", start_paused=False, speed=5
    ) as game:
        game.advance(5000)
        assert game.world.armies_of("BLU") and game.world.armies_of("RED")


def test_clock_steps_whole_hours_whatever_the_split() -> None:
    whole, split = GameClock(speed=4, paused=False), GameClock(speed=4, paused=False)
    hours = whole.advance(1000)
    assert hours == 12
    assert sum(split.advance(1) for _ in range(1000)) == 12
    assert sum(split.advance(0.1) for _ in range(10)) == 0  # 12 ms-hours carried, not lost
    paused = GameClock(speed=5, paused=True)
    assert paused.advance(10_000) == 0 and paused.ui_ns == 10_000_000_000
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError):
            whole.advance(bad)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"size": (540, 1000)}, "16:9"),
        ({"size": (100, 160)}, "outside"),
        ({"size": "big"}, "height, width"),
        ({"player": "GRN"}, "player"),
        ({"ai": {"GRN": 0.5}}, "ai sides"),
        ({"ai": {"RED": 1.5}}, "0..1"),
        ({"declarer": "both"}, "declarer"),
        ({"speed": 6}, "speed"),
        ({"seed": -1}, "seed"),
        ({"arena": "nowhere"}, "neither a preset"),
    ],
)
def test_bad_arguments_are_user_errors(plains, kwargs, words) -> None:
    args = {"arena": plains} | kwargs
    with pytest.raises(UserError, match=words):
        SimGame(**args)


def test_sizes_scale_the_same_layout(plains) -> None:
    with SimGame(plains, 0, size=(360, 640), news=False) as small:
        small.feed(click(*small.ui.layout["alert_unassigned"].center, shift=True))
        assert small.world.armies
        assert small.frame().shape == (360, 640, 3)
    with SimGame(plains, 0, size=(720, 1280), news=False) as large:
        large.feed(press("space"))
        assert not large.clock.paused
