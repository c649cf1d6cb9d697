"""XTest input through the X11 worker: keys, clicks, wheel and timed batches arrive in the window."""

from __future__ import annotations

import time

import pytest

from hoi4_arena.screen.events import KEY_NAMES, SETUP_KEYS, VK_F12, InputEvent
from hoi4_arena.screen.worker import CaptureRequest
from hoi4_arena.screen.x11_input import KEYSYM_VKS, VK_KEYSYMS, keycode_to_vk, vk_keycodes

pytestmark = [pytest.mark.x11, pytest.mark.x11_worker(listen=False)]

# SDL's names for the keys whose KEY_NAMES differ.
SDL_NAMES = {"shift": "left shift", "ctrl": "left ctrl", "enter": "return"}


def test_every_key_has_a_keysym_and_maps_back(person) -> None:
    assert set(VK_KEYSYMS) == set(KEY_NAMES)
    keycodes = vk_keycodes(person.conn)
    assert len(set(keycodes.values())) == len(keycodes), "two keys share a keycode"
    for vk, keycode in keycodes.items():
        assert keycode_to_vk(person.conn, keycode) == vk, KEY_NAMES[vk]
    assert all(vk in KEY_NAMES for vk in KEYSYM_VKS.values())


def test_every_setup_key_arrives_with_its_name(worker, app) -> None:
    worker.arm("setup")
    since = app.mark()
    events = []
    for vk in SETUP_KEYS:
        events += [InputEvent(0, "key_down", key=vk), InputEvent(0, "key_up", key=vk)]
    assert worker.apply(events) == {"applied": len(events), "dropped": 0}
    last = SDL_NAMES.get(KEY_NAMES[SETUP_KEYS[-1]], KEY_NAMES[SETUP_KEYS[-1]])
    app.wait_for(lambda e: e["type"] == "KeyUp" and e["key"] == last, since=since)
    downs = [e["key"] for e in app.inputs(since) if e["type"] == "KeyDown"]
    assert downs == [SDL_NAMES.get(KEY_NAMES[vk], KEY_NAMES[vk]) for vk in SETUP_KEYS]
    assert KEY_NAMES[VK_F12] not in downs


@pytest.mark.parametrize(("button", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_clicks_arrive_where_they_were_aimed(worker, app, button, number) -> None:
    worker.arm("match")
    since = app.mark()
    worker.apply(
        [
            InputEvent(0, "move", 17, 333),
            InputEvent(0, "button_down", 17, 333, button=button),
            InputEvent(0, "move", 600, 20),
            InputEvent(0, "button_up", 600, 20, button=button),
        ]
    )
    up = app.wait_for(lambda e: e["type"] == "MouseButtonUp", since=since)
    down = next(e for e in app.inputs(since) if e["type"] == "MouseButtonDown")
    assert (down["pos"], down["button"]) == ([17, 333], number)
    assert (up["pos"], up["button"]) == ([600, 20], number)
    assert worker.status()["held"] == []


def test_the_wheel_turns_one_notch_per_delta(worker, app) -> None:
    worker.arm("match")
    worker.apply([InputEvent(0, "move", 300, 200)])
    since = app.mark()
    worker.apply([InputEvent(0, "wheel", 300, 200, delta=2), InputEvent(0, "wheel", 300, 200, delta=-1)])
    app.wait_for(lambda e: e["type"] == "MouseWheel" and e["y"] < 0, since=since)
    wheels = [e["y"] for e in app.inputs(since) if e["type"] == "MouseWheel"]
    assert wheels == [1, 1, -1]


def test_timed_events_arrive_in_order_at_their_times(worker, app) -> None:
    worker.arm("match")
    since = app.mark()
    t0 = worker.now_ns() + 50_000_000
    slots = [InputEvent(t0 + slot * 25_000_000, "move", 10 + 20 * slot, 100) for slot in range(8)]
    assert worker.apply(slots, timed=True) == {"queued": 8}
    app.wait_for(lambda e: e["type"] == "MouseMotion" and e["pos"] == [150, 100], since=since)
    positions = [e["pos"] for e in app.inputs(since) if e["type"] == "MouseMotion"]
    assert positions == [[10 + 20 * slot, 100] for slot in range(8)]
    sent = [(d.planned_ns, d.sent_ns) for d in list(worker.dispatch_log)[-8:]]
    assert all(d.timed for d in list(worker.dispatch_log)[-8:])
    assert [planned for planned, _ in sent] == [event.t_ns for event in slots]
    assert all(at >= planned for planned, at in sent), "no event may go before its time"


def test_a_timed_apply_runs_while_captures_are_in_progress(worker, app) -> None:
    worker.arm("match")
    t0 = worker.now_ns() + 30_000_000
    slots = [InputEvent(t0 + slot * 25_000_000, "move", 5 + slot, 5) for slot in range(8)]
    worker.apply(slots, timed=True)
    busy = []  # (start, end) of every capture, back to back until the batch is over
    end_by = t0 + 8 * 25_000_000 + 50_000_000
    while time.monotonic_ns() < end_by:
        start = time.monotonic_ns()
        worker.capture(CaptureRequest(views=False, full=True, regions={"all": (0, 0, 640, 360)}))
        busy.append((start, time.monotonic_ns()))
    sent = [d.sent_ns for d in list(worker.dispatch_log)[-8:]]
    assert len(sent) == 8
    # Were apply serialised behind capture, every event would go out between two captures.
    inside = [at for at in sent if any(start < at < end for start, end in busy)]
    assert inside, "no event was applied while a capture was running"
