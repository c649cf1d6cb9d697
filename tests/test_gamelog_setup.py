"""`setup_milestones`: how far a side got with its setup (army, front, offensive, executed), from the log."""

from __future__ import annotations

import pytest

from hoi4_arena.gamelog import GameLogError, format_line, parse_line, setup_milestones
from hoi4_arena.maps import load_arena
from hoi4_arena.sim.world import World


def army(h: int, tag: str = "BLU", front: str | None = None, plan=(), executing: int = 0, id: int = 1) -> str:
    return format_line(
        "army",
        date=f"1936.01.{1 + h // 24:02d}.00",
        h=h,
        tag=tag,
        id=id,
        name="Harlan",
        divisions=[1, 2],
        front=front,
        plan=list(plan),
        progress=0.0,
        executing=executing,
    )


START = format_line(
    "start", date="1936.01.01.00", h=0, arena="plains", seed=0, tags=["BLU", "RED"], version=1
)
NOTHING = {"army": None, "front": None, "offensive": None, "executed": None, "complete": False}


def test_each_step_gets_the_first_day_it_was_seen() -> None:
    lines = [
        START,
        "some other log line the game printed",
        army(24),
        army(48, front="RED"),
        army(72, front="RED"),
        army(96, front="RED", plan=[60, 132]),
        army(120, front="RED", plan=[60, 132], executing=1),
        army(144, front="RED", plan=[60, 132], executing=1),
    ]
    assert setup_milestones(lines, "BLU") == {
        "army": 1,
        "front": 2,
        "offensive": 4,
        "executed": 5,
        "complete": True,
    }


def test_only_the_sides_own_armies_count_and_a_front_must_face_the_enemy() -> None:
    lines = [START, army(24, tag="RED", front="BLU", plan=[1], executing=1), army(48, tag="BLU")]
    assert setup_milestones(lines, "BLU") == {**NOTHING, "army": 2}
    assert setup_milestones(lines, "RED") == {
        "army": 1,
        "front": 1,
        "offensive": 1,
        "executed": 1,
        "complete": True,
    }
    # A front the line names as the side's own tag is no front against the enemy.
    assert setup_milestones([army(24, front="BLU")], "BLU") == {**NOTHING, "army": 1}


def test_a_step_undone_later_keeps_its_first_day_and_parsed_lines_are_accepted() -> None:
    lines = [army(24, front="RED", plan=[5], executing=1), army(48), army(72, front="RED")]
    parsed = [parse_line(line) for line in lines]
    expected = {"army": 1, "front": 1, "offensive": 1, "executed": 1, "complete": True}
    assert setup_milestones(lines, "BLU") == setup_milestones(parsed, "BLU") == expected


def test_only_the_last_game_of_a_log_counts() -> None:
    earlier = [START, army(24, front="RED", plan=[5], executing=1)]
    later = [START, army(48)]
    assert setup_milestones(earlier + later, "BLU") == {**NOTHING, "army": 2}
    assert setup_milestones([], "RED") == NOTHING


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="BLU or RED"):
        setup_milestones([], "GRN")
    with pytest.raises(GameLogError):
        setup_milestones(["ARENA army date=1936.01.02.00 h=24 tag=BLU"], "BLU")


def test_a_world_played_by_orders_gives_the_days_the_orders_were_given() -> None:
    world = World(load_arena("plains"), 0, max_days=30)
    world.declare_war("BLU")
    world.step(24 * 2)  # days 1 and 2: no army yet
    army_id = world.form_army("BLU", [1, 2, 3, 4])
    world.step(24)  # day 3: the army's first daily line
    world.assign_front(army_id, "RED")
    world.step(24 * 2)  # days 4 (the front's first line) and 5
    target = world.front_provinces("RED", "BLU")[0]  # an enemy province on the border
    world.draw_offensive(army_id, target)
    world.step(24)  # day 6
    world.execute(army_id)
    world.step(24)  # day 7
    assert setup_milestones(world.log_lines, "BLU") == {
        "army": 3,
        "front": 4,
        "offensive": 6,
        "executed": 7,
        "complete": True,
    }
    assert setup_milestones(world.log_lines, "RED") == NOTHING
