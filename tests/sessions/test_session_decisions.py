from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern
from session_files import T0, frame_times, write_session

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import format_line
from hoi4_arena.screen.events import MATCH_KEYS, VK_SPACE, InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.tokens import KEY_KINDS, MOVE, SLOT_NS
from hoi4_arena.sessions.format import FrameRecord
from hoi4_arena.sessions.reader import SessionReader, decision_windows

MS = 1_000_000


def records(times: list[int]) -> list[FrameRecord]:
    return [FrameRecord(i, t, (0, 0), (0, 0), True) for i, t in enumerate(times)]


@pytest.mark.parametrize(("hz", "every"), [(5, 1), (10, 2), (20, 4), (30, 6)])
def test_anchors_are_every_200_ms_of_real_time(hz: float, every: int) -> None:
    frames = records(frame_times(61, hz))
    windows = decision_windows(frames, [], hz).windows
    assert [w.frame for w in windows] == list(range(0, 61, every))
    for a, b in zip(windows, windows[1:], strict=False):
        assert a.end_ns == b.t0_ns
        assert abs(b.t0_ns - a.t0_ns - 200 * MS) < 100  # 1e9 / 30 Hz is not a whole number of ns


def test_anchors_follow_capture_times_not_the_frame_count() -> None:
    # A 10 Hz recording that captured at 10 Hz, then (the machine was busy) at 5 Hz: the anchors stay
    # 200 ms apart, every second frame first and then every frame.
    times = [T0 + i * 100 * MS for i in range(10)] + [T0 + 900 * MS + i * 200 * MS for i in range(1, 6)]
    windows = decision_windows(records(times), [], 10.0).windows
    assert [w.frame for w in windows] == [0, 2, 4, 6, 8, 10, 11, 12, 13, 14]


def every_event_lands_where_it_is_covered(frames, events, windows) -> int:
    """Each event in at most one window, inside its [t0, end); returns how many landed."""
    landed = {}
    for window in windows.windows:
        for event in window.events:
            assert window.t0_ns <= event.t_ns < window.end_ns
            assert id(event) not in landed
            landed[id(event)] = window.index
    for a, b in zip(windows.windows, windows.windows[1:], strict=False):
        assert a.end_ns <= b.t0_ns  # windows never overlap
    assert windows.uncovered == len(events) - len(landed)
    return len(landed)


@pytest.mark.parametrize("seed", range(6))
def test_with_jitter_drops_and_a_pause_every_input_lands_in_the_decision_covering_it(seed: int) -> None:
    rng = np.random.default_rng(seed)
    times = frame_times(80, 10.0, jitter_ns=15 * MS, seed=seed)
    dropped = set(rng.choice(np.arange(1, 40), size=3, replace=False).tolist())
    pause_from, pause_to = 50, 65  # 1.5 s without frames: focus lost
    kept = [t for i, t in enumerate(times) if i not in dropped and not pause_from <= i < pause_to]
    frames = records(kept)
    events = [
        InputEvent(int(t), "move", 1, 1)
        for t in np.sort(rng.integers(kept[0], kept[-1] + 300 * MS, size=400))
    ]
    windows = decision_windows(frames, events, 10.0)
    every_event_lands_where_it_is_covered(frames, events, windows)
    # An input falls in no decision only after the last one or inside the pause (frames more than
    # 200 ms plus a frame period apart); dropped frames and jitter lose nothing.
    resumed = kept[pause_from - len(dropped)]
    before = max(w.t0_ns for w in windows.windows if w.t0_ns < resumed)  # the last anchor before it
    last_end = windows.windows[-1].end_ns
    for event in events:
        if not any(w.t0_ns <= event.t_ns < w.end_ns for w in windows.windows):
            assert before + 200 * MS <= event.t_ns < resumed or event.t_ns >= last_end
    # Anchors stay about 200 ms apart (a frame more or less around a dropped one), apart from the pause.
    steps = np.diff([w.t0_ns for w in windows.windows]) / MS
    assert ((steps >= 100) & (steps <= 350)).sum() == len(steps) - 1
    assert steps.max() > 1400


def test_reader_decisions_line_up_with_input_timestamps(tmp_path: Path) -> None:
    times = frame_times(40, 10.0, jitter_ns=6 * MS, seed=1)
    rng = np.random.default_rng(1)
    # One key press per decision at a known offset from its anchor frame (frame 2k): it must land in
    # decision k, in slot offset // 25 ms.
    offsets = rng.integers(0, 200 * MS - 12 * MS, size=20)
    keys = [MATCH_KEYS[i % len(MATCH_KEYS)] for i in range(20)]
    events = [
        InputEvent(times[2 * k] + int(offsets[k]), "key_down", 5, 5, key=keys[k], source="human")
        for k in range(20)
    ]
    # Boundaries: exactly at an anchor, and the last nanosecond before the next one.
    events += [
        InputEvent(times[10], "key_down", 5, 5, key=VK_SPACE, source="human"),
        InputEvent(times[12] - 1, "move", 300, 100, source="human"),
    ]
    logs = {
        0: [
            format_line(
                "start", date="1936.01.01.00", h=0, arena="plains", seed=0, tags=["BLU", "RED"], version=1
            )
        ],
        5: [format_line("declare", date="1936.01.02.00", h=24, attacker="BLU", defender="RED")],
    }
    folder = write_session(tmp_path / "s", times=times, events=events, logs=logs, game_speed=2)
    decisions = list(SessionReader(folder).decisions())
    assert [d.frame_index for d in decisions] == list(range(0, 40, 2))
    for k, decision in enumerate(decisions):
        assert decision.index == k and decision.t_ns == times[2 * k]
        assert np.array_equal(decision.image, pattern(2 * k, (180, 320)))
        slot = int(offsets[k]) // SLOT_NS
        kind = KEY_KINDS[keys[k], "down"]
        assert kind in decision.tokens[:, 0].tolist()
        assert decision.tokens[slot:, 0].tolist().index(kind) + slot <= 7
        assert all(e.t_ns >= times[2 * k] for e in decision.events)
        assert decision.game_speed == 2 and decision.focus
        assert decision.arena.arena == "plains"
        assert decision.arena.at_war == (2 * k >= 5)
    assert decisions[5].dropped_keys == 1  # space is a setup-only key: dropped and counted
    assert decisions[5].events[0].key == VK_SPACE and decisions[5].events[-1].kind == "move"
    assert decisions[5].tokens[7].tolist() == [MOVE, *to_lattice(300, 100, (180, 320))]
    assert all(e.kind == "key_down" for e in decisions[6].events)
    assert not any(d.burst for d in decisions)


def test_a_crowded_decision_is_a_burst(tmp_path: Path) -> None:
    times = frame_times(6, 10.0)
    events = [
        InputEvent(
            times[2] + i * 10 * MS, "key_down" if i % 2 == 0 else "key_up", 1, 1, key=0x41, source="human"
        )
        for i in range(12)
    ]
    reader = SessionReader(write_session(tmp_path / "s", times=times, events=events))
    bursts = [d.burst for d in reader.decisions()]
    assert bursts == [False, True, False]
    assert reader.token_summary() == {"decisions": 3, "bursts": 1, "dropped_keys": 0, "uncovered_inputs": 0}


def test_a_recording_slower_than_the_decisions_is_refused() -> None:
    frames = [FrameRecord(k, k * 250_000_000, (0, 0), (0, 0), True) for k in range(4)]  # 4 Hz
    with pytest.raises(UserError, match="a 4.0 Hz recording cannot be cut into 5 Hz decisions"):
        decision_windows(frames, [], 4.0)
