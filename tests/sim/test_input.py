"""The simulator's input events: the key vocabulary agrees with the screen layer's, bad events are
named, and the event spellers produce what a mouse and keyboard would."""

from __future__ import annotations

import numpy as np
import pytest

from hoi4_arena.screen.events import KEY_NAMES
from hoi4_arena.sim.input import KEYS, SimEvent, click, drag, press, problem, type_text

SIZE = (540, 960)


def test_key_vocabulary_is_the_screen_layers() -> None:
    # sim/ may not import screen/, so it keeps a copy; the two must never drift apart.
    assert set(KEY_NAMES.values()) == KEYS


@pytest.mark.parametrize(
    "event",
    [
        SimEvent("move", 0, 0),
        SimEvent("move", 959, 539),
        SimEvent("move", np.int64(5), np.int32(7)),
        SimEvent("button_down", button="middle"),
        SimEvent("wheel", delta=-3),
        SimEvent("key_down", key="`"),
        SimEvent("key_up", key="f12"),
    ],
)
def test_good_events_have_no_problem(event) -> None:
    assert problem(event, SIZE) is None


@pytest.mark.parametrize(
    ("event", "words"),
    [
        (SimEvent("move", 960, 10), "outside"),
        (SimEvent("move", -1, 10), "outside"),
        (SimEvent("move", 1.5, 10), "whole-pixel"),
        (SimEvent("move", True, 10), "whole-pixel"),
        (SimEvent("teleport", 1, 1), "unknown kind"),
        (SimEvent("button_down", button="back"), "unknown button"),
        (SimEvent("wheel", delta=0), "non-zero"),
        (SimEvent("key_down", key="f1"), "unknown key"),
        (SimEvent("key_down", key=["a"]), "unknown key"),
        (SimEvent("key_up", key="A"), "unknown key"),
        ("move", "not a SimEvent"),
    ],
)
def test_bad_events_are_named_not_raised(event, words) -> None:
    assert words in problem(event, SIZE)


def test_spellers() -> None:
    assert press("z") == [SimEvent("key_down", key="z"), SimEvent("key_up", key="z")]
    shift = click(10, 20, shift=True)
    assert [e.kind for e in shift] == ["move", "key_down", "button_down", "button_up", "key_up"]
    assert shift[0] == SimEvent("move", 10, 20) and shift[1].key == "shift"
    moves = [e for e in drag((0, 0), (40, 20), "right", steps=4) if e.kind == "move"]
    assert [(e.x, e.y) for e in moves] == [(0, 0), (10, 5), (20, 10), (30, 15), (40, 20)]
    typed = type_text("Speed 5")
    downs = [e.key for e in typed if e.kind == "key_down"]
    assert downs == ["s", "p", "e", "e", "d", "space", "5", "enter"]
