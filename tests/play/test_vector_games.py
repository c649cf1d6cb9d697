"""The vector layer (play/vector_games.py): N games in lockstep with no policy; serial and processes give the
same steps, games follow the schedule slot by slot, a killed worker's games end invalid and a fresh worker
takes them."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from hoi4_arena.play.rollout_game import RolloutSettings
from hoi4_arena.play.vector_games import VectorGames
from hoi4_arena.rl.rollout import Schedule
from hoi4_arena.screen.tokens import MOVE

SETTINGS = RolloutSettings(size=(180, 320), max_days=2)
"""Two-day games: about ten decisions each."""


def _tokens(rng: np.random.Generator, games: int) -> np.ndarray:
    tokens = np.zeros((games, 8, 3), dtype=np.int64)
    tokens[:, 0, 0] = MOVE
    tokens[:, 0, 1:] = rng.integers(1024, size=(games, 2))
    return tokens


def _play(games: VectorGames, decisions: int) -> list[list]:
    rng = np.random.default_rng(0)
    steps = [games.begin()]
    for _ in range(decisions):
        steps.append(games.step(_tokens(rng, games.games)))
    return steps


def test_serial_and_processes_play_the_same_games_and_follow_the_schedule() -> None:
    schedule = Schedule(games=3, seed=4)
    with VectorGames(SETTINGS, schedule) as serial:
        expected = _play(serial, 14)
        assert [plan.number for plan in serial.plans] == [1, 1, 1]  # each slot's second game is under way
        assert serial.plans == [schedule.plan(s, 1) for s in range(3)]
    with VectorGames(SETTINGS, schedule, workers=2) as processes:
        got = _play(processes, 14)
    for t, (a, b) in enumerate(zip(expected, got, strict=True)):
        for s, (x, y) in enumerate(zip(a, b, strict=True)):
            assert x.rewards == y.rewards and x.done == y.done and x.pointer == y.pointer, (t, s)
            assert all(np.array_equal(x.views[k], y.views[k]) for k in x.views), (t, s)
    ended = [(t, s) for t, row in enumerate(expected) for s, step in enumerate(row) if step.done]
    assert {s for _, s in ended} == {0, 1, 2}
    for t, s in ended:
        summary = expected[t][s].summary
        assert summary["valid"] and summary["outcome"] == "draw" and summary["number"] == 0
        assert expected[t][s].rewards["outcome"] == 0.5  # the draw, paid on the game's last decision
    with pytest.raises(ValueError, match="2 decisions for 3 games"):
        VectorGames(SETTINGS, schedule).step(np.zeros((2, 8, 3), dtype=np.int64))


@pytest.mark.slow
def test_a_killed_worker_ends_its_games_invalid_and_is_replaced() -> None:
    schedule = Schedule(games=3, seed=4)
    rng = np.random.default_rng(1)
    with VectorGames(SETTINGS, schedule, workers=2) as games:
        games.begin()
        games.step(_tokens(rng, 3))
        victim = games.workers[0]  # slots 0 and 2
        os.kill(victim.pid, signal.SIGKILL)
        victim.process.join(timeout=30)
        steps = games.step(_tokens(rng, 3))
        assert games.replaced == 1 and games.workers[0] is not victim and games.workers[0].alive()
        for s in (0, 2):
            assert steps[s].done and not steps[s].valid and steps[s].rewards == {}
            assert steps[s].summary["reason"] == "worker process died" and steps[s].summary["decisions"] == 2
            assert games.plans[s] == schedule.plan(s, 1) and games.decisions[s] == 0
        assert not steps[1].done and games.decisions[1] == 2
        after = games.step(_tokens(rng, 3))  # the fresh worker plays the slots' next games
        assert not any(step.done for step in after)


class _FirstGames:
    """A schedule that runs out: each slot's first game, then nothing."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.games = schedule.games

    def plan(self, slot: int, number: int):
        return self.schedule.plan(slot, number) if number == 0 else None


def test_a_slot_whose_schedule_runs_out_is_idle_until_a_game_begins_there() -> None:
    schedule = Schedule(games=2, seed=4)
    rng = np.random.default_rng(2)
    with VectorGames(SETTINGS, _FirstGames(schedule)) as games:
        games.begin()
        while games.plans != [None, None]:
            steps = games.step(_tokens(rng, 2))
        assert all(step.done and step.valid and step.summary["number"] == 0 for step in steps)
        assert games.step(_tokens(rng, 2)) == [None, None]  # nothing under way: nothing asked
        later = schedule.plan(1, 1)
        steps = games.step(_tokens(rng, 2), begin={1: later})
        assert steps[0] is None and not steps[1].done and steps[1].rewards == {} and steps[1].views
        assert games.plans == [None, later] and games.decisions == [0, 0]
        steps = games.step(_tokens(rng, 2))
        assert steps[0] is None and not steps[1].done and games.decisions == [0, 1]
        with pytest.raises(ValueError, match=r"slots \[1\] have a game under way"):
            games.step(_tokens(rng, 2), begin={1: later})


@pytest.mark.slow
def test_a_game_to_begin_on_a_killed_worker_begins_on_the_fresh_one() -> None:
    schedule = Schedule(games=2, seed=4)
    rng = np.random.default_rng(3)
    with VectorGames(SETTINGS, _FirstGames(schedule), workers=2) as games:
        games.begin()
        while games.plans != [None, None]:
            games.step(_tokens(rng, 2))
        victim = games.workers[0]
        os.kill(victim.pid, signal.SIGKILL)
        victim.process.join(timeout=30)
        later = schedule.plan(0, 1)
        steps = games.step(_tokens(rng, 2), begin={0: later})
        assert games.replaced == 1 and games.workers[0] is not victim
        assert not steps[0].done and steps[0].views and steps[1] is None and games.plans == [later, None]
        assert not games.step(_tokens(rng, 2))[0].done  # the fresh worker plays it
