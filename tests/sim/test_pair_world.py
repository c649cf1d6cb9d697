"""Two screens on one world (`sim/pair.py`): one world for both, each side's input only on its screen, the
shared clock, and the one-screen case equal to `SimGame` byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.sim.console import Command
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import click, drag, press
from hoi4_arena.sim.pair import PairGame
from hoi4_arena.sim.ui_layout import Layout

SIZE = (360, 640)


def date_box(frame: np.ndarray) -> np.ndarray:
    x, y, w, h = Layout(SIZE)["date_box"]
    return frame[y : y + h, x : x + w]


def test_one_screen_and_the_ai_is_simgame_byte_for_byte() -> None:
    # The same events into SimGame and into a PairGame whose other side is the game's AI.
    steps = [
        click(*Layout(SIZE)["news_ok"].center) + press("space") + press("=") * 2,
        press("`") + [e for ch in "coin" for e in press(ch)] + press("enter") + press("`"),
        click(320, 200) + drag((100, 150), (400, 300)),
        press("d") + [],
        click(*Layout(SIZE)["alert_unassigned"].center),
    ]
    solo = SimGame("plains:1", 4, size=SIZE, player="RED", ai={"BLU": 0.5}, max_days=20, player_kind="policy")
    pair = PairGame(
        "plains:1", 4, size=SIZE, sides=("RED",), ai={"BLU": 0.5}, max_days=20, player_kinds={"RED": "policy"}
    )
    try:
        side = pair.side("RED")
        for k in range(120):
            events = steps[k] if k < len(steps) else []
            assert solo.feed(events) == side.feed(events)
            assert solo.advance(200) == pair.advance(200)
            if k % 10 == 0 or k == 119:
                assert np.array_equal(solo.frame(), side.frame()), k
        assert solo.log(0) == side.log(0)
        assert solo.log_path.read_text() == side.log_path.read_text() != ""
        assert solo.state() == side.state()
    finally:
        solo.close()
        pair.close()


def test_both_screens_show_the_same_world_each_tick() -> None:
    with PairGame("plains:1", 2, size=SIZE, declarer="coin", news=False, speed=5, max_days=30) as pair:
        for tag in pair.sides:
            pair.feed(tag, press("space"))
        dates = set()
        for _ in range(40):
            pair.advance(200)
            blu, red = pair.frame("BLU"), pair.frame("RED")
            assert np.array_equal(date_box(blu), date_box(red))  # the pointers sit in the map's middle
            dates.add(date_box(blu).tobytes())
            assert pair.state("BLU")["date"] == pair.state("RED")["date"]
        assert len(dates) > 30  # the date moved on every tick (speed 5: 4.8 game hours a tick)
        assert pair.state("BLU")["ui"]["player"] == "BLU" and pair.state("RED")["ui"]["player"] == "RED"
        assert not np.array_equal(blu, red)  # each side's own flag, tag and units


def test_an_input_on_one_screen_never_reaches_the_other() -> None:
    with PairGame("plains:1", 2, size=SIZE, declarer="coin", speed=5, max_days=30) as pair:
        red_before = pair.state("RED")["ui"]
        red_frame = pair.frame("RED")
        layout = Layout(SIZE)
        pair.feed("BLU", click(*layout["news_ok"].center))  # BLU closes its news
        pair.feed("BLU", click(*layout["alert_unassigned"].center, shift=True))  # and forms an army
        pair.feed("BLU", press("z") + [])
        pair.feed("BLU", press("w") + press("`"))  # pans its camera, opens its console
        pair.feed("BLU", [click(500, 300)[0]])  # moves its pointer
        blu = pair.state("BLU")["ui"]
        assert blu != red_before
        assert pair.state("RED")["ui"] == red_before
        assert np.array_equal(pair.frame("RED"), red_frame)
        assert pair.state("BLU")["armies"] and all(a["tag"] == "BLU" for a in pair.state("BLU")["armies"])


def test_the_shared_clock_runs_while_nobody_holds_it_at_the_least_speed_asked() -> None:
    with PairGame("plains:1", 2, size=SIZE, declarer="coin", news=False, speed=3) as pair:
        assert pair.advance(1000) == 0  # both hold it paused from the start
        pair.feed("BLU", press("space"))
        assert pair.advance(1000) == 0  # RED still holds it
        pair.feed("RED", press("space"))
        assert pair.advance(1000) == 6  # speed 3: 6 game hours a second
        pair.feed("BLU", press("=") * 2)  # each = from the shared 3: BLU asks for 4, RED still for 3
        assert pair.advance(1000) == 6
        pair.feed("RED", press("=") + press("="))  # RED 4, then 5 (from the shared 4): the least is 4
        assert pair.advance(1000) == 12
        assert pair.state("BLU")["ui"]["speed"] == pair.state("RED")["ui"]["speed"] == 4
        pair.feed("RED", press("space"))
        assert pair.state("BLU")["ui"]["paused"] is True  # BLU's screen shows RED's pause
        assert pair.advance(1000) == 0


def test_both_harnesses_typing_one_start_make_one_start() -> None:
    # The match harness types coin, speed and space on both screens at the same instants.
    with PairGame("plains:1", 5, size=SIZE, speed=3) as pair:
        keys = press("`") + [e for ch in "coin" for e in press(ch)] + press("enter") + press("`")
        keys += press("-") * 4 + press("=") * 2 + press("space")
        for event in keys:
            for tag in pair.sides:
                pair.feed(tag, [event])
        declares = [line for line in pair.log(0)[0] if " declare " in line]
        assert len(declares) == 1
        assert pair.state("RED")["ui"]["speed"] == 3 and pair.state("RED")["ui"]["paused"] is False
        assert pair.advance(1000) == 6


def test_tag_is_refused_and_bad_sides_are_refused() -> None:
    with PairGame("plains:1", 2, size=SIZE) as pair:
        ui = pair.side("BLU").ui
        assert "not available" in ui.command(Command("tag", "RED"))
        assert ui.player == "BLU"
    with pytest.raises(UserError, match="each once"):
        PairGame("plains:1", 2, size=SIZE, sides=("BLU", "BLU"))
    with pytest.raises(UserError, match="not both"):
        PairGame("plains:1", 2, size=SIZE, sides=("BLU",), ai={"BLU": 0.5})
    with (
        PairGame("plains:1", 2, size=SIZE, sides=("BLU",), ai={"RED": 0.5}) as pair,
        pytest.raises(UserError, match="not played through a screen"),
    ):
        pair.side("RED")
