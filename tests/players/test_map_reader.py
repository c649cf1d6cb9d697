"""Reading the map from pixels: cells against the province each shows and its controller (the test may
read the game's state; the reader never does), occupied land by its controller, cities, the front."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hoi4_arena.players.map_reader import ENEMY, OWN, UNKNOWN, MapReader, render_text
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.sim.headless import SimGame


def mid_game(preset: str, seed: int, size: tuple[int, int], days: int) -> SimGame:
    game = SimGame(
        preset,
        seed,
        size=size,
        ai={"BLU": 0.5, "RED": 0.5},
        declarer="coin",
        news=False,
        events=False,
        start_paused=False,
        speed=5,
    )
    for _ in range(days):
        game.advance(1000)
    return game


@pytest.mark.parametrize(
    ("preset", "seed", "size", "own"),
    [("plains", 2, (540, 960), "BLU"), ("salient", 1, (540, 960), "RED"), ("passes", 2, (1080, 1920), "BLU")],
)
def test_cells_read_as_the_controller_of_the_province_they_show(preset, seed, size, own) -> None:
    with mid_game(preset, seed, size, 60) as game:
        assert not game.over
        view = MapReader(sim_rules(size).map, own).read(game.frame())
        world, ui = game.world, game.ui
        right = wrong = occupied_right = occupied = sea = sea_as_land = 0
        for (i, j), side in np.ndenumerate(view.cells):
            x, y = view.center(i, j)
            pid = ui.province_at(x, y)
            if not pid:  # a coastal cell may still be mostly land
                sea += 1
                sea_as_land += side in (OWN, ENEMY)
                continue
            truth = OWN if world.control[pid] == own else ENEMY
            if side in (OWN, ENEMY):
                right += side == truth
                wrong += side != truth
                if world.control[pid] != world.owner[pid]:
                    occupied += 1
                    occupied_right += side == truth
        assert wrong <= 0.015 * (right + wrong), (right, wrong)
        # Occupied land is striped in both colours: it reads as its controller's all the same.
        assert occupied > 50 and occupied_right >= 0.9 * occupied, (occupied, occupied_right)
        assert view.count(UNKNOWN) < 0.03 * view.cells.size  # under counters, labels and markers
        assert sea_as_land < 0.05 * sea


def test_cities_are_found_with_their_capitals_and_holders() -> None:
    with SimGame("river", 4, size=(540, 960), news=False) as game:
        view = MapReader(sim_rules((540, 960)).map, "BLU").read(game.frame())
        capitals = [c for c in view.cities if c.capital]
        assert len(capitals) == 2
        for city in capitals:
            pid = game.ui.province_at(city.x, city.y)
            assert pid in game.arena.capitals.values()
            assert city.holder == (OWN if game.world.control[pid] == "BLU" else ENEMY)
        named = {p.id for p in game.arena.provinces if p.victory_points}
        seen = {game.ui.province_at(c.x, c.y) for c in view.cities}
        assert seen <= named and len(seen) >= len(named) - 4  # a few may sit under a counter


def test_the_front_lies_in_own_land_next_to_the_enemy_and_across_leads_into_it() -> None:
    with mid_game("ford", 5, (540, 960), 20) as game:
        view = MapReader(sim_rules((540, 960)).map, "RED").read(game.frame())
        front = view.front()
        assert len(front) > 50
        world, ui = game.world, game.ui
        front_provinces = set(world.front_provinces("RED", "BLU"))
        hits = sum(ui.province_at(*view.center(i, j)) in front_provinces for i, j in front)
        assert hits >= 0.9 * len(front)
        crossings = [view.across(i, j) for i, j in front[::7]]
        inside = [ui.province_at(*p) for p in crossings if p is not None]
        assert len(inside) > 5 and all(world.control[pid] == "BLU" for pid in inside)
        text = render_text(view)
        assert "o" in text and "x" in text and "C" in text


def test_a_reader_needs_a_country_the_rule_knows() -> None:
    with pytest.raises(ValueError, match="cannot read it for 'GRN'"):
        MapReader(sim_rules((540, 960)).map, "GRN")


def test_readers_of_one_rule_share_one_read_only_colour_table() -> None:
    rule = sim_rules((540, 960)).map
    blu, again, red = MapReader(rule, "BLU"), MapReader(rule, "BLU"), MapReader(rule, "RED")
    assert again.table is blu.table and not blu.table.flags.writeable
    assert red.table is not blu.table
    # The table is the reader's view of the colours: own and enemy swap with the side, water stays.
    swapped = np.where(blu.table == OWN, ENEMY, np.where(blu.table == ENEMY, OWN, blu.table))
    assert np.array_equal(red.table, swapped)
    other = replace(rule, tints={"BLU": rule.tints["RED"], "RED": rule.tints["BLU"]})
    assert np.array_equal(MapReader(other, "BLU").table, red.table)
