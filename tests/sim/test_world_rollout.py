"""World rollouts (sim/rollout.py): a fork leaves the world as it was, a rollout is fixed by its seed, the
search picks the candidate whose outcome is better by construction, a save's world rolls out as the
running game's."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.rollout import Choice, fork, load_world, play_out, rollout, search, vp_share


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


def test_bad_choices_are_refused() -> None:
    with pytest.raises(ValueError, match="aim"):
        Choice("sideways")
    with pytest.raises(ValueError, match="replan_hours"):
        Choice("city", 0, 0)
