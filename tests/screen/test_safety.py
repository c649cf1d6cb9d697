"""The input guard's rules, on a clock the test turns by hand (the X11 tests watch them on a real server)."""

from __future__ import annotations

import threading
import time

import pytest

from hoi4_arena.screen.events import (
    MATCH_KEYS,
    SETUP_ONLY_KEYS,
    VK_ESCAPE,
    VK_F12,
    VK_OEM_PLUS,
    VK_SHIFT,
    VK_SPACE,
    InputEvent,
)
from hoi4_arena.screen.safety import InputGuard, SafetyConfig, Watchdog
from hoi4_arena.screen.worker import WorkerError

MS = 1_000_000
VK_A = ord("A")


class Clock:
    def __init__(self) -> None:
        self.ns = 1_000 * MS

    def __call__(self) -> int:
        return self.ns

    def advance(self, ms: float) -> None:
        self.ns += int(ms * MS)


class Released:
    """The release callback: records what the guard let go of, and can be told to fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], list[str]]] = []
        self.fail = False

    def __call__(self, keys: list[int], buttons: list[str]) -> None:
        if self.fail:
            raise OSError("display gone")
        self.calls.append((keys, buttons))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def released() -> Released:
    return Released()


@pytest.fixture
def guard(clock: Clock, released: Released) -> InputGuard:
    return InputGuard((360, 640), released, clock=clock)


def key(kind: str, vk: int, t_ns: int = 0) -> InputEvent:
    return InputEvent(t_ns, kind, key=vk)


def press(guard: InputGuard, *events: InputEvent) -> None:
    """What a worker does: check the batch, then admit and note each event."""
    for event in guard.check(events, focus=True):
        assert guard.admit(event, focus=True)
        guard.note(event)


def test_nothing_passes_until_armed(guard: InputGuard) -> None:
    with pytest.raises(WorkerError) as error:
        guard.check([key("key_down", VK_A)], focus=True)
    assert error.value.code == "not_armed"
    guard.arm("match")
    assert guard.check([key("key_down", VK_A)], focus=True)


@pytest.mark.parametrize("vk", SETUP_ONLY_KEYS + (VK_F12,))
def test_match_mode_refuses_every_non_token_key(guard: InputGuard, vk: int) -> None:
    guard.arm("match")
    with pytest.raises(WorkerError) as error:
        guard.check([key("key_down", vk)], focus=True)
    assert error.value.code == "forbidden_key"


def test_match_mode_allows_all_44_token_keys(guard: InputGuard) -> None:
    guard.arm("match")
    assert len(guard.check([key("key_down", vk) for vk in MATCH_KEYS], focus=True)) == 44


def test_setup_mode_allows_harness_keys_but_never_f12(guard: InputGuard) -> None:
    guard.arm("setup")
    guard.check([key("key_down", vk) for vk in (VK_SPACE, VK_ESCAPE, VK_OEM_PLUS)], focus=True)
    with pytest.raises(WorkerError, match="f12"):
        guard.check([key("key_down", VK_F12)], focus=True)


def test_bad_arm_mode_is_refused(guard: InputGuard) -> None:
    with pytest.raises(WorkerError) as error:
        guard.arm("turbo")
    assert error.value.code == "bad_mode"


def test_one_forbidden_event_refuses_the_whole_batch(guard: InputGuard) -> None:
    guard.arm("match")
    batch = [InputEvent(0, "move", 10, 10), key("key_down", VK_A), key("key_down", VK_SPACE)]
    with pytest.raises(WorkerError, match="event 2"):
        guard.check(batch, focus=True)
    assert guard.held_keys == []


@pytest.mark.parametrize(("x", "y"), [(-1, 0), (0, -1), (640, 0), (0, 360), (5000, 5000)])
def test_positions_outside_the_client_are_refused(guard: InputGuard, x: int, y: int) -> None:
    guard.arm("match")
    with pytest.raises(WorkerError) as error:
        guard.check(
            [InputEvent(0, "move", 1, 1), InputEvent(0, "button_down", x, y, button="left")], focus=True
        )
    assert error.value.code == "out_of_bounds"


def test_the_client_corners_are_inside(guard: InputGuard) -> None:
    guard.arm("match")
    guard.check([InputEvent(0, "move", 0, 0), InputEvent(0, "move", 639, 359)], focus=True)


def test_no_input_without_focus(guard: InputGuard) -> None:
    guard.arm("match")
    with pytest.raises(WorkerError) as error:
        guard.check([InputEvent(0, "move", 1, 1)], focus=False)
    assert error.value.code == "no_focus"


def test_too_many_events_and_huge_wheels_are_refused(guard: InputGuard) -> None:
    guard.arm("match")
    with pytest.raises(WorkerError) as error:
        guard.check([InputEvent(0, "move", 1, 1)] * 257, focus=True)
    assert error.value.code == "too_many"
    with pytest.raises(WorkerError) as error:
        guard.check([InputEvent(0, "wheel", 1, 1, delta=-11)], focus=True)
    assert error.value.code == "bad_wheel"


def test_timed_events_must_lie_within_the_watchdog_window(guard: InputGuard, clock: Clock) -> None:
    guard.arm("match")
    guard.check([InputEvent(clock.ns + 750 * MS, "move", 1, 1)], focus=True, timed=True)
    guard.check([InputEvent(clock.ns - 750 * MS, "move", 1, 1)], focus=True, timed=True)
    for offset in (751, -751, -clock.ns / MS):
        with pytest.raises(WorkerError) as error:
            guard.check([InputEvent(clock.ns + int(offset * MS), "move", 1, 1)], focus=True, timed=True)
        assert error.value.code == "bad_time"
    # Untimed batches ignore t_ns: they are applied now.
    guard.check([InputEvent(0, "move", 1, 1)], focus=True, timed=False)


def test_release_lets_go_of_buttons_then_keys_most_recent_first(
    guard: InputGuard, released: Released
) -> None:
    guard.arm("match")
    press(
        guard,
        key("key_down", VK_SHIFT),
        key("key_down", VK_A),
        InputEvent(0, "button_down", 5, 5, button="left"),
        InputEvent(0, "button_down", 5, 5, button="right"),
        InputEvent(0, "button_up", 5, 5, button="right"),
    )
    assert guard.status()["held"] == ["key:shift", "key:a", "button:left"]
    guard.release()
    assert released.calls == [([VK_A, VK_SHIFT], ["left"])]
    assert guard.held_keys == [] and guard.held_buttons == []
    guard.release()  # nothing held: the callback is not called again
    assert len(released.calls) == 1


def test_watchdog_fires_at_750_ms_without_a_request(
    guard: InputGuard, clock: Clock, released: Released
) -> None:
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    guard.touch()
    clock.advance(749.999)
    assert guard.tick() is None and guard.held_keys == [VK_A]
    clock.advance(0.001)
    assert guard.tick() == "watchdog"
    assert released.calls == [([VK_A], [])]
    assert guard.status()["last_release"] == {"reason": "watchdog", "t_ns": clock.ns}


def test_any_request_feeds_the_watchdog(guard: InputGuard, clock: Clock) -> None:
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    for _ in range(5):
        clock.advance(700)
        guard.touch()
        assert guard.tick() is None
    assert guard.held_keys == [VK_A]


def test_focus_loss_releases_what_is_held(guard: InputGuard, released: Released) -> None:
    guard.arm("match")
    assert guard.tick(focus=False) is None  # nothing held: nothing to do
    press(guard, InputEvent(0, "button_down", 3, 3, button="middle"))
    assert guard.tick(focus=True) is None
    assert guard.tick(focus=False) == "focus"
    assert released.calls == [([], ["middle"])]
    assert not guard.admit(InputEvent(0, "move", 1, 1), focus=False)


def test_f12_stop_releases_and_blocks_until_rearmed(guard: InputGuard, released: Released) -> None:
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    guard.stop("f12")
    assert released.calls == [([VK_A], [])]
    assert not guard.admit(key("key_down", VK_A), focus=True)
    with pytest.raises(WorkerError) as error:
        guard.check([key("key_down", VK_A)], focus=True)
    assert error.value.code == "stopped"
    guard.arm("match")
    press(guard, key("key_down", VK_A))


def test_disconnect_releases_but_keeps_the_mode(guard: InputGuard, released: Released) -> None:
    guard.arm("setup")
    press(guard, key("key_down", VK_SPACE))
    guard.disconnect()
    assert released.calls == [([VK_SPACE], [])]
    assert guard.status()["releases"] == {"disconnect": 1}
    assert guard.mode == "setup"


def test_switching_mode_releases_keys_held_under_the_old_one(guard: InputGuard, released: Released) -> None:
    guard.arm("setup")
    press(guard, key("key_down", VK_SPACE))
    guard.arm("match")
    assert released.calls == [([VK_SPACE], [])]
    guard.disarm()
    assert guard.mode is None


def test_a_failed_release_keeps_the_state_for_the_next_try(guard: InputGuard, released: Released) -> None:
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    released.fail = True
    with pytest.raises(OSError):
        guard.release()
    assert guard.held_keys == [VK_A]
    released.fail = False
    guard.release()
    assert released.calls == [([VK_A], [])]


def test_admit_rechecks_size_after_a_resize(guard: InputGuard) -> None:
    guard.arm("match")
    event = InputEvent(0, "move", 600, 300)
    guard.check([event], focus=True)
    guard.set_size((200, 400))
    assert not guard.admit(event, focus=True)
    with pytest.raises(ValueError):
        guard.set_size((0, 400))


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        SafetyConfig(watchdog_ms=0)
    with pytest.raises(ValueError):
        SafetyConfig(watchdog_ms=100, poll_ms=50)


def test_watchdog_thread_fires_on_the_guards_clock(clock: Clock, released: Released) -> None:
    guard = InputGuard((360, 640), released, clock=clock, config=SafetyConfig(poll_ms=5))
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    watchdog = Watchdog(guard, focus_probe=lambda: True).start()
    try:
        time.sleep(0.05)  # ten polls on a frozen clock: none may fire
        assert guard.held_keys == [VK_A]
        clock.advance(750)
        deadline = time.monotonic() + 5
        while guard.held_keys and time.monotonic() < deadline:
            time.sleep(0.005)
        assert released.calls == [([VK_A], [])]
        assert guard.status()["last_release"]["reason"] == "watchdog"
    finally:
        watchdog.stop()
    assert not watchdog.alive


def test_watchdog_thread_fails_closed_when_the_probe_breaks(clock: Clock, released: Released) -> None:
    guard = InputGuard((360, 640), released, clock=clock, config=SafetyConfig(poll_ms=5))
    guard.arm("match")
    press(guard, key("key_down", VK_A))
    broken = threading.Event()

    def probe() -> bool:
        broken.set()
        raise ConnectionError("X server went away")

    watchdog = Watchdog(guard, focus_probe=probe).start()
    try:
        assert broken.wait(5)
        deadline = time.monotonic() + 5
        while not released.calls and time.monotonic() < deadline:
            time.sleep(0.005)
        assert guard.stopped and "X server went away" in guard.stop_reason
        assert released.calls == [([VK_A], [])]
    finally:
        watchdog.stop()
