"""Action tokens: the kind table, slotting, merging, bursts, dropped keys, and both round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoi4_arena.screen.events import (
    MATCH_KEYS,
    SETUP_ONLY_KEYS,
    VK_ESCAPE,
    VK_F12,
    VK_LEFT,
    VK_SPACE,
    InputEvent,
)
from hoi4_arena.screen.lattice import to_lattice, to_pixel
from hoi4_arena.screen.tokens import (
    BUTTON_KINDS,
    KEY_BASE,
    KIND_IDS,
    KIND_NAMES,
    MOVE,
    NOOP_TOKEN,
    NUM_KINDS,
    SLOT_NS,
    SLOTS,
    WHEEL_DOWN,
    WHEEL_UP,
    Tokens,
    events_to_tokens,
    in_order,
    is_button_kind,
    is_key_kind,
    is_pointer_kind,
    key_of_kind,
    kind_of,
    tokens_to_events,
)

MS = 1_000_000
HD = (1080, 1920)
T0 = 5_000_000_000


def ev(ms: float, kind: str, x: int = 960, y: int = 540, **kw) -> InputEvent:
    return InputEvent(T0 + int(ms * MS), kind, x, y, **kw)


def test_kind_table() -> None:
    assert NUM_KINDS == 98 == len(KIND_NAMES)
    assert KIND_NAMES[0] == "none" and NOOP_TOKEN == (0, 0, 0)
    assert KIND_IDS["mouse_left_down"] == 2 and KIND_IDS["wheel_down"] == WHEEL_DOWN
    assert KIND_IDS["key_left_down"] != KIND_IDS["mouse_left_down"]  # the arrow key is not the button
    keys = [key_of_kind(kind)[0] for kind in range(KEY_BASE, NUM_KINDS, 2)]
    assert tuple(keys) == MATCH_KEYS
    assert all(is_pointer_kind(k) for k in range(1, KEY_BASE)) and not is_pointer_kind(0)
    assert all(is_key_kind(k) and not is_button_kind(k) for k in range(KEY_BASE, NUM_KINDS))
    assert kind_of(ev(0, "key_up", key=VK_LEFT)) == KIND_IDS["key_left_up"]
    assert kind_of(ev(0, "wheel", delta=-3)) == WHEEL_DOWN
    assert kind_of(ev(0, "key_down", key=VK_SPACE)) is None
    assert kind_of(ev(0, "key_down", key=VK_F12)) is None


def test_slots_merges_and_pushes() -> None:
    events = [
        ev(1, "move", 100, 100),
        ev(20, "move", 960, 540),  # same slot 0: merges, last position wins
        ev(26, "button_down", button="left"),  # slot 1
        ev(30, "button_up", button="left"),  # slot 1 is taken: pushed to 2
        ev(49, "move", 0, 0),  # natural slot 1, after the click: its own token, pushed to 3
        ev(80, "move", 1919, 1079),  # natural 3, previous move sits at 3: merges
        ev(199, "wheel", 1919, 1079, delta=1),  # last slot
    ]
    tokens = events_to_tokens(events, T0, HD, pointer=(5, 5))
    assert tokens.names() == [
        "move(512,512)",
        "mouse_left_down",
        "mouse_left_up",
        "move(1023,1023)",
        "none",
        "none",
        "none",
        "wheel_up",
    ]
    assert not tokens.burst and tokens.needed == 5 and tokens.dropped == 0
    assert tokens.pointer == (1023, 1023)


def test_click_away_from_the_pointer_gets_a_move_first() -> None:
    tokens = events_to_tokens([ev(0, "button_down", 10, 10, button="right")], T0, HD, pointer=(960, 540))
    assert tokens.names()[:2] == ["move(5,9)", "mouse_right_down"]
    # At the pointer: no move needed.
    tokens = events_to_tokens([ev(0, "button_down", 960, 540, button="right")], T0, HD, pointer=(960, 540))
    assert tokens.names()[:2] == ["mouse_right_down", "none"]
    # Pointer unknown: the click's position is the only evidence, so a move is made.
    assert events_to_tokens([ev(0, "wheel", delta=-1)], T0, HD).names()[:2] == ["move(512,512)", "wheel_down"]


def test_setup_keys_are_dropped_and_counted() -> None:
    events = [
        ev(0, "key_down", key=VK_SPACE),
        ev(5, "key_up", key=VK_SPACE),
        ev(30, "key_down", key=VK_ESCAPE),
    ]
    events.append(ev(60, "key_down", key=MATCH_KEYS[10]))
    tokens = events_to_tokens(events, T0, HD)
    assert tokens.dropped == 3 and tokens.count == 1 and tokens.names()[2] == "key_e_down"
    for key in SETUP_ONLY_KEYS:
        assert kind_of(ev(0, "key_down", key=key)) is None


def test_wheel_notches_each_take_a_slot() -> None:
    tokens = events_to_tokens([ev(0, "wheel", delta=3)], T0, HD, pointer=(960, 540))
    assert tokens.names()[:4] == ["wheel_up", "wheel_up", "wheel_up", "none"]


def test_bursts_are_flagged_not_relabelled() -> None:
    events = [ev(i * 10, "key_down" if i % 2 == 0 else "key_up", key=MATCH_KEYS[i // 2]) for i in range(9)]
    tokens = events_to_tokens(events, T0, HD)
    assert tokens.burst and tokens.needed == 9 and tokens.count == 8
    # Three events in the last slot overflow too, though only three tokens are needed.
    late = [ev(190, "key_down", key=MATCH_KEYS[0]), ev(191, "key_up", key=MATCH_KEYS[0])]
    tokens = events_to_tokens(late + [ev(192, "key_down", key=MATCH_KEYS[1])], T0, HD)
    assert tokens.burst and tokens.needed == 3
    assert events_to_tokens(late, T0, HD).burst  # the key_up has no slot after slot 7
    assert not events_to_tokens(late[:1], T0, HD).burst


def test_exactly_eight_is_not_a_burst() -> None:
    events = [ev(i * 25, "key_down" if i % 2 == 0 else "key_up", key=MATCH_KEYS[0]) for i in range(8)]
    tokens = events_to_tokens(events, T0, HD)
    assert not tokens.burst and tokens.needed == 8 and tokens.count == 8


def test_bad_events_are_refused() -> None:
    with pytest.raises(ValueError, match="outside the decision"):
        events_to_tokens([ev(200, "move")], T0, HD)
    with pytest.raises(ValueError, match="outside the decision"):
        events_to_tokens([ev(-1, "move")], T0, HD)
    with pytest.raises(ValueError, match="time order"):
        events_to_tokens([ev(50, "move"), ev(10, "move")], T0, HD)
    with pytest.raises(ValueError, match="outside the 1920x1080"):
        events_to_tokens([ev(0, "move", 1920, 0)], T0, HD)


def test_bad_tokens_are_refused() -> None:
    with pytest.raises(ValueError, match="8, 3"):
        Tokens(np.zeros((7, 3), np.int64))
    with pytest.raises(ValueError, match="kinds"):
        Tokens(np.full((8, 3), 0, np.int64) + [[98, 0, 0]])
    with pytest.raises(ValueError, match="lattice"):
        Tokens(np.array([[MOVE, 1024, 0]] + [[0, 0, 0]] * 7))
    with pytest.raises(ValueError, match="carry"):
        Tokens(np.array([[2, 5, 0]] + [[0, 0, 0]] * 7))
    with pytest.raises(ValueError, match="pointer at t0"):
        tokens_to_events(np.array([[2, 0, 0]] + [[0, 0, 0]] * 7), T0, HD)


def test_noop() -> None:
    assert Tokens.noop().count == 0 and tokens_to_events(Tokens.noop(), T0, HD) == []
    assert events_to_tokens([], T0, HD) == Tokens.noop()


def test_tokens_to_events_times_and_positions() -> None:
    slots = np.zeros((8, 3), np.int64)
    slots[1] = (KIND_IDS["key_a_down"], 0, 0)
    slots[3] = (MOVE, 100, 200)
    slots[4] = (KIND_IDS["mouse_middle_down"], 0, 0)
    slots[7] = (WHEEL_UP, 0, 0)
    events = tokens_to_events(slots, T0, HD, pointer=(7, 8), source="scripted")
    assert [(e.t_ns - T0) // SLOT_NS for e in events] == [1, 3, 4, 7]
    assert (events[0].kind, events[0].key, events[0].x, events[0].y) == ("key_down", 0x41, 7, 8)
    assert (events[1].x, events[1].y) == to_pixel(100, 200, HD)
    assert (events[2].button, events[2].x, events[2].y) == ("middle", *to_pixel(100, 200, HD))
    assert events[3].delta == 1 and all(e.source == "scripted" for e in events)


# --- round trips ------------------------------------------------------------------------------------

token_kinds = st.integers(0, NUM_KINDS - 1)
lattice_points = st.tuples(st.integers(0, 1023), st.integers(0, 1023))


@st.composite
def token_arrays(draw) -> np.ndarray:
    slots = np.zeros((SLOTS, 3), np.int64)
    for slot in range(SLOTS):
        kind = draw(token_kinds)
        slots[slot, 0] = kind
        if kind == MOVE:
            slots[slot, 1:] = draw(lattice_points)
    return slots


@settings(max_examples=300)
@given(slots=token_arrays(), pointer=st.tuples(st.integers(0, 1919), st.integers(0, 1079)))
def test_tokens_events_tokens_is_exact(slots: np.ndarray, pointer: tuple[int, int]) -> None:
    events = tokens_to_events(slots, T0, HD, pointer=pointer)
    back = events_to_tokens(events, T0, HD, pointer=pointer)
    assert np.array_equal(back.slots, slots)
    assert not back.burst and back.dropped == 0 and back.needed == int((slots[:, 0] != 0).sum())


@settings(max_examples=200)
@given(
    slots=token_arrays(),
    w=st.integers(64, 1023),
    h=st.integers(64, 1023),
)
def test_tokens_events_tokens_on_small_screens_gives_canonical_cells(
    slots: np.ndarray, w: int, h: int
) -> None:
    size = (h, w)
    pointer = (w // 2, h // 2)
    back = events_to_tokens(tokens_to_events(slots, T0, size, pointer=pointer), T0, size, pointer=pointer)
    expected = slots.copy()
    for slot in range(SLOTS):
        if expected[slot, 0] == MOVE:
            expected[slot, 1:] = to_lattice(*to_pixel(*expected[slot, 1:], size), size)
    assert np.array_equal(back.slots, expected)


@st.composite
def decision_events(draw) -> list[InputEvent]:
    """Representable events: at most one per slot, pointer events at the current pointer."""
    events = []
    pointer = to_pixel(512, 512, HD)
    for slot in range(SLOTS):
        choice = draw(st.sampled_from(["none", "move", "button", "wheel", "key"]))
        t = T0 + slot * SLOT_NS + draw(st.integers(0, SLOT_NS - 1))
        if choice == "move":
            pointer = to_pixel(*draw(lattice_points), HD)
            events.append(InputEvent(t, "move", *pointer))
        elif choice == "button":
            kind = draw(st.sampled_from(["button_down", "button_up"]))
            events.append(
                InputEvent(t, kind, *pointer, button=draw(st.sampled_from(["left", "right", "middle"])))
            )
        elif choice == "wheel":
            events.append(InputEvent(t, "wheel", *pointer, delta=draw(st.sampled_from([-1, 1]))))
        elif choice == "key":
            kind = draw(st.sampled_from(["key_down", "key_up"]))
            events.append(InputEvent(t, kind, *pointer, key=draw(st.sampled_from(MATCH_KEYS))))
    return events


def quantize(event: InputEvent) -> InputEvent:
    slot_start = T0 + (event.t_ns - T0) // SLOT_NS * SLOT_NS
    return InputEvent(
        slot_start, event.kind, event.x, event.y, event.button, event.key, event.delta, "policy"
    )


@settings(max_examples=300)
@given(events=decision_events())
def test_events_tokens_events_equal_after_quantization(events: list[InputEvent]) -> None:
    start = to_pixel(512, 512, HD)
    tokens = events_to_tokens(events, T0, HD, pointer=start)
    assert not tokens.burst and tokens.needed == len(events)
    assert tokens_to_events(tokens, T0, HD, pointer=start) == [quantize(e) for e in events]


@settings(max_examples=200)
@given(
    times=st.lists(st.integers(0, 199), min_size=0, max_size=20),
    kinds=st.lists(st.sampled_from(["move", "key", "click", "space"]), min_size=20, max_size=20),
)
def test_any_stream_keeps_order_and_flags_overflow(times: list[int], kinds: list[str]) -> None:
    events = []
    for i, ms in enumerate(sorted(times)):
        if kinds[i] == "move":
            events.append(ev(ms, "move", i * 50, i * 20))
        elif kinds[i] == "key":
            events.append(ev(ms, "key_down", key=MATCH_KEYS[i]))
        elif kinds[i] == "click":
            events.append(ev(ms, "button_down", i * 50, i * 20, button="left"))
        else:
            events.append(ev(ms, "key_down", key=VK_SPACE))
    tokens = events_to_tokens(events, T0, HD)
    assert tokens.dropped == sum(1 for i in range(len(times)) if kinds[i] == "space")
    assert tokens.burst == (tokens.needed > tokens.count)
    if not tokens.burst:
        # Nothing lost: replaying the tokens reproduces every key and click in the same order.
        replay = [e for e in tokens_to_events(tokens, T0, HD) if e.kind != "move"]
        original = [e for e in events if e.kind != "move" and kind_of(e) is not None]
        assert [(e.kind, e.key, e.button) for e in replay] == [(e.kind, e.key, e.button) for e in original]


def test_in_order_moves_each_decisions_events_to_its_first_slots_keeping_their_order() -> None:
    decision = np.zeros((8, 3), np.int64)
    decision[2] = (MOVE, 5, 7)
    decision[5] = (BUTTON_KINDS["left", "down"], 0, 0)
    decision[6] = (BUTTON_KINDS["left", "up"], 0, 0)
    ordered = in_order(np.stack([decision, np.zeros((8, 3), np.int64)]))
    assert ordered[0, :3].tolist() == [
        [MOVE, 5, 7],
        [BUTTON_KINDS["left", "down"], 0, 0],
        [BUTTON_KINDS["left", "up"], 0, 0],
    ]
    assert (ordered[0, 3:] == 0).all() and (ordered[1] == 0).all()
    assert (in_order(ordered) == ordered).all()
