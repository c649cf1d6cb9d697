"""`setup_milestones`: how far a side got with its setup (army, front, offensive, executed), from the log;
`war_summary`: the offensives it drew and the days it executed them."""

from __future__ import annotations

import pytest

from hoi4_arena.gamelog import GameLogError, format_line, parse_line, setup_milestones, war_summary
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


def test_the_war_counts_each_new_plan_once_and_the_days_executing() -> None:
    lines = [
        START,
        army(24, front="RED"),
        army(48, front="RED", plan=[60, 132]),  # the opening's plan: one offensive
        army(72, front="RED", plan=[60, 132], executing=1),  # the same plan carried on: not another
        army(96, front="RED", plan=[60, 132], executing=1, tag="RED"),  # the enemy's: not counted
        army(96, front="RED", plan=[], executing=0),  # the plan ran out
        army(120, front="RED", plan=[61]),  # a replan
        army(144, front="RED", plan=[62], executing=1),  # another, at once
        army(144, front="RED", plan=[62], executing=1, id=2),  # a second army's own plan
    ]
    assert war_summary(lines, "BLU") == {"offensives": 4, "executing_days": 2}
    assert war_summary(lines, "RED") == {"offensives": 1, "executing_days": 1}
    parsed = [parse_line(line) for line in lines]
    assert war_summary(parsed, "BLU") == war_summary(lines, "BLU")
    # Only the last game of a log counts; bad input is refused as setup_milestones refuses it.
    assert war_summary([*lines, START, army(24)], "BLU") == {"offensives": 0, "executing_days": 0}
    with pytest.raises(ValueError, match="BLU or RED"):
        war_summary([], "GRN")
    with pytest.raises(GameLogError):
        war_summary(["ARENA army date=1936.01.02.00 h=24 tag=BLU"], "BLU")


def test_a_world_that_replans_shows_each_offensive() -> None:
    world = World(load_arena("plains"), 0, max_days=60)
    world.declare_war("BLU")
    army_id = world.form_army("BLU", [1, 2, 3, 4])
    world.assign_front(army_id, "RED")
    targets = world.front_provinces("RED", "BLU")[:2]
    world.draw_offensive(army_id, targets[0])
    world.execute(army_id)
    world.step(24 * 3)
    assert war_summary(world.log_lines, "BLU") == {"offensives": 1, "executing_days": 3}
    world.draw_offensive(army_id, targets[1])  # a replan toward another province
    world.execute(army_id)
    world.step(24 * 2)
    war = war_summary(world.log_lines, "BLU")
    assert war["offensives"] == 2 and war["executing_days"] == 5
