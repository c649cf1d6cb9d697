"""Reward terms from the ARENA log (screen/rewards.py)."""

from __future__ import annotations

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, format_line
from hoi4_arena.screen.rewards import RewardTracker, parse_weights, total


class _Log:
    """A MatchLog's fields the tracker reads: the lines and their fold."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.state = ArenaState()

    def add(self, kind: str, **fields) -> None:
        line = format_line(kind, date="1936.01.01.00", **fields)
        self.lines.append(line)
        self.state.update(line)


class _Province:
    def __init__(self, pid: int, owner: str, points: int) -> None:
        self.id, self.owner, self.victory_points = pid, owner, points


class _Map:
    provinces = (
        _Province(1, "BLU", 3),
        _Province(2, "BLU", 1),
        _Province(3, "RED", 3),
        _Province(4, "RED", 1),
    )


def _army(log: _Log, h: int, front: str | None, plan: list[int], executing: int) -> None:
    log.add(
        "army",
        h=h,
        tag="BLU",
        id=1,
        name="A",
        divisions=[1],
        front=front,
        plan=plan,
        progress=0.0,
        executing=executing,
    )


def test_terms_are_potential_differences_of_the_log() -> None:
    log = _Log()
    tracker = RewardTracker("BLU", _Map())
    tracker.start(log)  # the map's owners: half the provinces, half the points
    assert tracker.potential == {"setup": 0.0, "victory_points": 0.5, "provinces": 0.5}
    _army(log, 24, None, [], 0)
    step = tracker.update(log)
    assert step == {"setup": 0.25, "victory_points": 0.0, "provinces": 0.0, "outcome": 0.0}
    _army(log, 48, "RED", [3], 1)  # front, offensive and execution in one day
    log.add("control", h=50, province=3, **{"from": "RED", "to": "BLU"})
    step = tracker.update(log)
    assert step["setup"] == pytest.approx(0.75)
    assert step["victory_points"] == pytest.approx(3 / 8)
    assert step["provinces"] == pytest.approx(0.25)
    step = tracker.update(log, "win")
    assert step == {"setup": 0.0, "victory_points": 0.0, "provinces": 0.0, "outcome": 1.0}
    assert tracker.sums == pytest.approx(
        {"outcome": 1.0, "setup": 1.0, "victory_points": 3 / 8, "provinces": 0.25}
    )
    assert total(step, {"provinces": 2.0}) == 1.0
    assert total({"outcome": 0.5, "setup": 0.5}, {"setup": 0.1}) == pytest.approx(0.55)


def test_a_draw_is_half_and_a_loss_nothing() -> None:
    log = _Log()
    tracker = RewardTracker("RED", _Map())
    tracker.start(log)
    assert tracker.update(log, "draw")["outcome"] == 0.5
    assert tracker.update(log, "loss")["outcome"] == 0.0


def test_weights_refuse_unknown_terms_and_bad_numbers() -> None:
    assert parse_weights({"setup": "0.1", "provinces": 0.05}) == {"setup": 0.1, "provinces": 0.05}
    with pytest.raises(UserError, match="unknown reward term 'gold'"):
        parse_weights({"gold": 1})
    with pytest.raises(UserError, match="must be a number"):
        parse_weights({"setup": "lots"})
