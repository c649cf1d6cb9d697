"""The hand: events one per 25 ms slot (no bursts), a rest of 0.25-0.45 s before each press, moves in
steps, the pointer kept off the panning edge, the same events for the same seed."""

from __future__ import annotations

import random

import pytest

from hoi4_arena.players.hand import Hand, HandConfig
from hoi4_arena.screen.events import KEY_CODES
from hoi4_arena.screen.tokens import SLOT_NS, events_to_tokens

DECISION_NS = 8 * SLOT_NS


def busy_hand(seed: int) -> Hand:
    hand = Hand((540, 960), random.Random(seed), 1_000_000_000, (480, 270))
    hand.click(100, 500, "a")
    hand.key("z", "b")
    hand.click(700, 200, "b")
    hand.drag((300, 200), (420, 260), "c")
    hand.click(50, 30, "d", shift=True)
    return hand


def test_one_event_per_slot_in_the_middle_of_it_and_no_decision_bursts() -> None:
    hand = busy_hand(0)
    events = hand.due(10**15)
    slots = [(e.t_ns - hand.origin) // SLOT_NS for e in events]
    assert len(set(slots)) == len(slots) and slots == sorted(slots)
    assert all((e.t_ns - hand.origin) % SLOT_NS == SLOT_NS // 2 for e in events)
    start = hand.origin
    while start < events[-1].t_ns:
        inside = [e for e in events if start <= e.t_ns < start + DECISION_NS]
        tokens = events_to_tokens(inside, start, (540, 960), pointer=(480, 270))
        assert not tokens.burst and tokens.dropped == 0
        start += DECISION_NS


def test_a_press_comes_after_a_rest_on_the_target_reached_in_steps() -> None:
    config = HandConfig()
    hand = Hand((540, 960), random.Random(3), 0, (480, 270), config)
    hand.click(100, 500, "close_popup")
    events = hand.due(10**15)
    moves = [e for e in events if e.kind == "move"]
    down = next(e for e in events if e.kind == "button_down")
    up = next(e for e in events if e.kind == "button_up")
    assert config.move_steps[0] <= len(moves) <= config.move_steps[1]
    assert (moves[-1].x, moves[-1].y) == (100, 500) == (down.x, down.y)
    rest = (down.t_ns - moves[-1].t_ns) / 1e9
    assert 0.25 - 0.025 <= rest <= 0.45 + 0.025
    assert 2 * SLOT_NS <= up.t_ns - down.t_ns <= 4 * SLOT_NS
    assert {e.skill for e in events} == {"close_popup"} and {e.source for e in events} == {"scripted"}


def test_shift_click_holds_shift_around_the_click_and_a_drag_moves_while_pressed() -> None:
    hand = Hand((540, 960), random.Random(1), 0, (480, 270))
    hand.click(20, 40, "form_army", shift=True)
    hand.drag((300, 200), (420, 260), "offensive")
    kinds = [(e.kind, e.key or e.button) for e in hand.due(10**15)]
    shift = KEY_CODES["shift"]
    i = kinds.index(("key_down", shift))
    assert kinds[i + 1 : i + 4] == [("button_down", "left"), ("button_up", "left"), ("key_up", shift)]
    j = kinds.index(("button_down", "right"))
    k = kinds.index(("button_up", "right"))
    assert k - j >= 4 and all(kind == "move" for kind, _ in kinds[j + 1 : k])


def test_the_pointer_never_reaches_the_panning_edge() -> None:
    hand = Hand((540, 960), random.Random(2), 0, (480, 270), HandConfig(margin=4))
    for x, y in ((0, 0), (959, 539), (0, 539), (959, 0)):
        hand.click(x, y, "edge")
    for event in hand.due(10**15):
        assert 4 <= event.x <= 955 and 4 <= event.y <= 535


def test_the_same_seed_gives_the_same_events_and_another_seed_others() -> None:
    assert busy_hand(5).due(10**15) == busy_hand(5).due(10**15)
    assert busy_hand(5).due(10**15) != busy_hand(6).due(10**15)


def test_due_hands_out_only_what_falls_before_the_time_and_sync_never_goes_back() -> None:
    hand = Hand((540, 960), random.Random(0), 0, (480, 270))
    hand.click(100, 100, "x")
    first = hand.due(DECISION_NS)
    assert first and all(e.t_ns < DECISION_NS for e in first) and hand.busy()
    rest = hand.due(10**15)
    assert all(e.t_ns >= DECISION_NS for e in rest) and not hand.busy()
    hand.sync(10 * DECISION_NS)
    hand.key("x", "y")
    assert hand.due(10**15)[0].t_ns >= 10 * DECISION_NS


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="press_delay_s"):
        HandConfig(press_delay_s=(0.5, 0.2))
    with pytest.raises(ValueError, match="move_steps"):
        HandConfig(move_steps=(0, 2))
