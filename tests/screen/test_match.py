"""The match harness: it starts a match with raw input only (console coin or declaration, speed, unpause)
on the simulator's worker and, under Xvfb, on the X11 worker driving the simulator's window; it fails
closed; and the ARENA log helpers read the end of a game."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.screen.events import VK_OEM_3, VK_SPACE, InputEvent
from hoi4_arena.screen.match import (
    MatchConfig,
    MatchLog,
    finish_match,
    speed_keys,
    start_match,
)
from hoi4_arena.screen.sim_worker import SimWorker, to_sim_event
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.sim.headless import SimGame

SIZE = (270, 480)


def coin(seed: int) -> str:
    """The console's fair coin for a game of `seed`, computed independently of the game."""
    return TAGS[random.Random(f"coin-{seed}").random() < 0.5]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_coin_declares_and_the_match_runs_at_the_requested_speed(seed: int) -> None:
    with SimWorker("plains", seed, size=SIZE, layout="cpu", speed=3) as worker:
        started = start_match(worker, MatchConfig(speed=5))
        state = worker.state()
        assert started.declarer == coin(seed) == state["declarer"]
        ui = state["ui"]
        assert ui["speed"] == 5 and ui["paused"] is False and ui["console"]["open"] is False
        assert [p["kind"] for p in ui["popups"]] == ["news"]  # the player's to close
        assert (
            ui["console"]["lines"][-1]
            == f"coin: {started.declarer} declares war on {other_tag(started.declarer)}"
        )
        assert worker.status()["armed"] is None and worker.status()["held"] == []
        assert {e.source for e in started.events} == {"harness"}
        assert any(line.startswith("ARENA declare") for line in started.log_lines)
        # The game runs from the unpause on, at speed 5: 24 game hours a second.
        hour = worker.game.world.hour
        worker.wait_until(worker.now_ns() + 1_000_000_000)
        assert worker.game.world.hour == hour + 24


def test_harness_events_go_out_25_ms_apart_in_batches_of_eight() -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu") as worker:
        started = start_match(worker, MatchConfig(speed=2, declarer="RED"))
        times = [e.t_ns for e in started.events]
        assert all(b - a >= 25_000_000 for a, b in zip(times, times[1:], strict=False))
        assert [fed.fed_ns for fed in worker.fed_log] == times
        space_down = [e for e in started.events if e.key == VK_SPACE and e.kind == "key_down"]
        assert space_down[-1].t_ns == started.t_ns  # the first typed "declare red"
        assert worker.state()["ui"]["console"]["lines"][-2] == "> declare red"
        assert started.declarer == "RED" and worker.state()["declarer"] == "RED"


@pytest.mark.parametrize(("start", "wanted"), [(5, 1), (1, 5), (3, 3), (4, 2)])
def test_the_speed_is_reached_from_any_starting_speed(start: int, wanted: int) -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu", speed=start) as worker:
        start_match(worker, MatchConfig(speed=wanted, declarer="BLU"))
        assert worker.state()["ui"]["speed"] == wanted


def test_the_declarer_is_read_from_the_log_not_assumed() -> None:
    # War was declared before the harness came: `declare RED` is refused, and the log says BLU declared.
    with SimWorker("plains", 0, size=SIZE, layout="cpu", declarer="BLU") as worker:
        started = start_match(worker, MatchConfig(declarer="RED"))
        assert started.declarer == "BLU"
        assert worker.state()["ui"]["console"]["lines"][-1].startswith("refused")


def test_no_declaration_fails_closed_and_the_game_stays_paused() -> None:
    # The console is already open, so the harness's keys close it and type nothing: no declaration.
    with SimWorker("plains", 0, size=SIZE, layout="cpu") as worker:
        worker.arm("setup")
        worker.apply(
            [
                InputEvent(0, "key_down", 240, 135, key=VK_OEM_3),
                InputEvent(0, "key_up", 240, 135, key=VK_OEM_3),
            ]
        )
        with pytest.raises(WorkerError) as failed:
            start_match(worker, MatchConfig(timeout_s=2.0))
        assert failed.value.code == "no_declaration"
        state = worker.state()
        assert state["at_war"] is False and state["ui"]["paused"] is True
        assert worker.status()["armed"] is None


def test_match_log_reads_a_game_to_its_end() -> None:
    ai = {"BLU": 0.5, "RED": 1.0}
    with SimWorker("plains", 0, size=SIZE, layout="cpu", ai=ai, news=False, events=False) as worker:
        started = start_match(worker, MatchConfig(speed=5))
        log = MatchLog(worker, started.log_offset, started.log_lines)
        assert log.declarer == started.declarer and not log.over
        while not log.over:
            worker.wait_until(worker.now_ns() + 20_000_000_000)
            log.poll()
        world = worker.game.world
        assert log.winner == world.winner and world.winner in TAGS
        loser = other_tag(world.winner)
        assert log.result_for(world.winner) == 1.0 and log.result_for(loser) == -1.0
        assert log.state.sides[world.winner].controlled > 96
        finish_match(worker)
        assert worker.status()["armed"] is None


def test_a_draw_at_the_time_limit_is_over_without_a_winner() -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu", max_days=2, news=False) as worker:
        started = start_match(worker, MatchConfig(speed=5))
        log = MatchLog(worker, started.log_offset, started.log_lines)
        worker.wait_until(worker.now_ns() + 3_000_000_000)
        log.poll()
        assert log.over and log.winner is None and log.state.draw and log.result_for("BLU") == 0.0


def test_speed_keys_press_minus_down_to_one_then_plus_then_space() -> None:
    names = [vk for kind, vk in speed_keys(3) if kind == "key_down"]
    assert names == [0xBD] * 4 + [0xBB] * 2 + [VK_SPACE]


def test_bad_match_configs_are_refused() -> None:
    for bad in ({"speed": 0}, {"speed": 6}, {"declarer": "GRN"}, {"timeout_s": 0}):
        with pytest.raises(ValueError):
            MatchConfig(**bad)


# --- the X11 worker driving the simulator's window -------------------------------------------------

ARGS = ["--preset", "plains", "--seed", "0", "--size", "960x540", "--paused", "--ai", "none", "--no-events"]


@pytest.mark.x11
def test_the_harness_starts_a_match_in_the_simulators_window_through_x11(sim_window) -> None:
    window = sim_window(*ARGS, "--speed", "2")
    worker, log_path = window.worker, window.log
    window.focus()
    started = start_match(worker, MatchConfig(speed=4))

    # The headless twin, fed the same harness events, is where the window must be.
    with SimGame("plains:0", 0, size=(540, 960), ai={}, events=False, speed=2) as game:
        game.feed([to_sim_event(e) for e in started.events])
        assert game.world.declarer == started.declarer == coin(0)
        assert game.clock.speed == 4 and not game.clock.paused
        box = game.ui.layout["speed_box"]
        expected = game.frame()[box.y : box.bottom, box.x : box.right]
    region = {"speed": (box.x, box.y, box.w, box.h)}
    # A bound on the wait, not a timing claim: on a loaded machine the window draws late.
    deadline = time.monotonic() + 60
    while True:
        shot = worker.capture(CaptureRequest(views=False, regions=region)).regions["speed"]
        if np.array_equal(shot, expected):
            break
        assert time.monotonic() < deadline, "the window's speed box never showed speed 4, running"
        time.sleep(0.05)
    text = log_path.read_text()
    assert "ARENA declare" in text and f"attacker={started.declarer}" in text
    assert worker.status()["armed"] is None and worker.status()["held"] == []
    # It runs: at speed 4 (12 game hours a second) the next day's line comes within seconds.
    deadline = time.monotonic() + 60
    while "ARENA day date=1936.01.02" not in log_path.read_text():
        assert time.monotonic() < deadline, "the window's game did not run"
        time.sleep(0.1)
