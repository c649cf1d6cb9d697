"""World rollouts (sim/rollout.py): a fork leaves the world as it was, a rollout is fixed by its seed, the
search picks the candidate whose outcome is better by construction, a save's world rolls out as the
running game's, and the plan's orders land when its timing says."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.rollout import (
    Choice,
    ScriptedPlan,
    Timing,
    fork,
    load_world,
    play_out,
    rollout,
    search,
    vp_share,
)


def empty_enemy(game: SimGame, enemy: str = "RED") -> None:
    """Every division of `enemy` gone: attacking walks in, holding changes nothing."""
    world = game.world
    for division in [d for d in world.divisions.values() if d.tag == enemy]:
        world.destroy(division)


@pytest.fixture
def game():
    with SimGame("river:3", seed=3, ai={"RED": 0.5}, declarer="BLU", news=False, events=False) as game:
        yield game


def test_a_rollout_is_fixed_by_its_seed_and_leaves_the_world_alone(game: SimGame) -> None:
    game.advance(4000)  # some days into the war
    before = game.world.snapshot()
    ai_before = (game.ais["RED"].next_hour, dict(game.ais["RED"]._progress))
    choice = Choice("city", 0, 96)
    first, again = (rollout(game.world, game.ais, "BLU", choice, 1, days=40) for _ in range(2))
    assert first == again
    assert game.world.snapshot() == before
    assert (game.ais["RED"].next_hour, dict(game.ais["RED"]._progress)) == ai_before


def test_a_fork_plays_on_exactly_as_the_world_itself(game: SimGame) -> None:
    game.advance(2000)
    copy, ais = fork(game.world, game.ais)
    for world, players in ((copy, ais), (game.world, game.ais)):
        play_out(world, players, [], world.hour + 24 * 30)
    assert copy.snapshot() == game.world.snapshot()


def test_the_search_picks_the_better_of_two_candidates(game: SimGame) -> None:
    empty_enemy(game)
    hold, attack = Choice("none", 0, None), Choice("city", 0, 48)
    # Listed worse first: a search that took the first candidate (or none at all) fails here.
    found = search(game.world, game.ais, "BLU", [hold, attack], k=2, seed=0, days=30)
    assert found.best == attack and found.rollouts == 4
    assert found.means[0] == pytest.approx(0.5) and found.means[1] > 0.5
    assert vp_share(game.world, "BLU") == pytest.approx(0.5)


def test_a_saved_world_rolls_out_as_the_running_game(game: SimGame, tmp_path: Path) -> None:
    from hoi4_arena.sim.save import write_save

    game.advance(3000)
    path = write_save(game, tmp_path / "mid.simsave")
    world, ais, side = load_world(path)
    assert side == "BLU" and world.hour == game.world.hour
    choice = Choice("near", 24, 72)
    assert rollout(world, ais, "BLU", choice, 5, days=20) == rollout(
        game.world, game.ais, "BLU", choice, 5, days=20
    )


def marks(game: SimGame, plan: ScriptedPlan, hours: int) -> dict[str, list[int]]:
    """The hours (from the start) at whose beginning BLU's army was first seen formed and holding its front,
    and each of its offensives drawn, executed, and done (the army no longer executing): an order the plan
    gives in hour h is seen at h + 1, and the plan's update of hour h sees what is seen at h."""
    world, ais = fork(game.world, game.ais)
    start, seen = world.hour, {"army": [], "front": [], "drawn": [], "executed": [], "done": []}
    plan_before, executing_before = (), False
    while world.hour < start + hours and not world.over:
        play_out(world, ais, [plan], world.hour + 1)
        army = next(iter(world.armies_of("BLU")), None)
        hour = world.hour - start
        if army is None:
            continue
        if not seen["army"]:
            seen["army"].append(hour)
        if army.front is not None and not seen["front"]:
            seen["front"].append(hour)
        if army.plan and tuple(army.plan) != plan_before:
            seen["drawn"].append(hour)
        if army.executing and not executing_before:
            seen["executed"].append(hour)
        if executing_before and not army.executing:
            seen["done"].append(hour)
        plan_before, executing_before = tuple(army.plan), army.executing
    return seen


def test_the_plans_orders_land_when_its_timing_says(game: SimGame) -> None:
    empty_enemy(game)  # every offensive walks in, so the plan is done and the replans come
    timing = Timing(front=(10,), draw_first=(20,), draw=(5,), execute=(7,))
    plan = ScriptedPlan("BLU", Choice("city", 3, 48), random.Random(0), timing)
    seen = marks(game, plan, 24 * 30)
    assert seen["army"] == seen["front"] == [10 + 1]  # formed and sent to the front in hour 10
    assert seen["drawn"][0] == 30 + 1 and seen["executed"][0] == 40 + 1  # + 20; + 7 and the choice's 3
    # The first replan is due 48 hours after the execution or when the plan is done, whichever is later;
    # its offensive is drawn 5 hours after that and executed 7 hours later, without the choice's delay.
    due = max(40 + 48, seen["done"][0])
    assert seen["drawn"][1] == due + 5 + 1 and seen["executed"][1] == due + 12 + 1


def test_a_timing_draws_each_wait_from_its_values(game: SimGame) -> None:
    timing = Timing(draw_first=(5, 50))
    waits = set()
    for seed in range(8):
        plan = ScriptedPlan("BLU", Choice("city", 0, None), random.Random(0), timing, random.Random(seed))
        seen = marks(game, plan, 60)
        waits.add(seen["drawn"][0] - seen["front"][0])
    assert waits == {5, 50}
    fixed = Timing.fixed(96, 72)
    assert (fixed.front, fixed.draw_first, fixed.draw, fixed.execute) == ((96,), (0,), (0,), (72,))
    with pytest.raises(ValueError, match="timing draw"):
        Timing(draw=())


def test_bad_choices_are_refused() -> None:
    with pytest.raises(ValueError, match="aim"):
        Choice("sideways")
    with pytest.raises(ValueError, match="replan_hours"):
        Choice("city", 0, 0)
